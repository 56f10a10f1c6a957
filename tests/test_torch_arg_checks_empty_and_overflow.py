"""Empty tensors and numbers at the edge of int64, handled as torch 2.13 handles them.

Each expected value below was read from torch 2.13 (CPU); the tests need no torch. ``..._match_torch`` compares
with torch at runtime (``oracle``).
"""
from __future__ import annotations

import pytest

import npusim
from conftest import host


def _like(t, shape, dtype, values):
    assert tuple(t.shape) == shape and t.dtype is dtype, (tuple(t.shape), t.dtype)
    assert host(t).tolist() == values


# --- random draws and factories of empty tensors ------------------------------------------------------------

def test_bernoulli_of_an_empty_integer_tensor_is_empty(device):
    # torch checks bernoulli's floating dtype only when there is an element to draw
    _like(npusim.bernoulli(npusim.ones(0, dtype=npusim.int64, device=device)), (0,), npusim.int64, [])
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        npusim.bernoulli(npusim.ones(2, dtype=npusim.int64, device=device))
