"""The npu's capacity checks compute broadcast sizes in plain Python: the same counts as NumPy's rules."""
import itertools
import math

import numpy as np
import pytest

capacity = pytest.importorskip("npusim.backend.capacity")

SHAPES = [(), (1,), (3,), (0,), (2, 3), (1, 3), (2, 1), (4, 2, 3), (4, 1, 1), (0, 3), (1, 0), (5, 0, 3)]


def test_broadcast_elements_match_numpy():
    for combo in itertools.product(SHAPES, repeat=3):
        try:
            expect = math.prod(np.broadcast_shapes(*combo))
        except ValueError:
            with pytest.raises(ValueError):
                capacity._broadcast_elements(list(combo))
            continue
        assert capacity._broadcast_elements(list(combo)) == expect, combo
