"""``from npusim import *`` brings what ``from torch import *`` brings: npusim's ``__all__`` lists every name of
torch's ``__all__`` that npusim has (factories, grad modes, dtypes, seeding...), then npusim's own."""
import pytest

import npusim
from npusim._torch_all import TORCH_ALL


def test_star_import_brings_factories_modes_and_dtypes():
    namespace = {}
    exec("from npusim import *", namespace)
    for name in ("zeros", "ones_like", "randn", "randint", "manual_seed", "no_grad", "float32", "Tensor", "cat",
                 "get_default_dtype", "save", "load", "BoolTensor", "hash_tensor"):
        assert namespace[name] is getattr(npusim, name), name
    x = namespace["zeros"](2, dtype=namespace["float32"])
    with namespace["no_grad"]():
        assert namespace["cat"]([x, x]).shape == (4,)


def test_every_listed_name_exists_once_and_torchs_come_first_in_torchs_order():
    assert len(npusim.__all__) == len(set(npusim.__all__))
    assert all(hasattr(npusim, n) for n in npusim.__all__)
    shared = [n for n in dict.fromkeys(TORCH_ALL) if hasattr(npusim, n)]
    assert npusim.__all__[:len(shared)] == shared
    assert not any(n.startswith("_") for n in npusim.__all__)


@pytest.mark.oracle
def test_the_table_is_torchs_all():
    torch = pytest.importorskip("torch")
    assert TORCH_ALL == tuple(torch.__all__)
    assert [n for n in torch.__all__ if hasattr(npusim, n) and n not in npusim.__all__] == []
