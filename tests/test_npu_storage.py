"""Storage of npu tensors: the bytes behind them, shared by views, moved between devices, and
accounted in the device's allocator for exactly as long as something holds them.
"""
from __future__ import annotations

import gc

import numpy as np
import pytest

import npusim
from npusim.backend.storage import NpuStorage

npu = npusim.npu


@pytest.fixture
def quiet():
    npu.init()
    gc.collect()
    yield


def test_an_npu_tensor_has_an_npu_storage():
    x = npusim.arange(6.0).npu(1)
    s = x.untyped_storage()
    assert isinstance(s, npusim.UntypedStorage) and isinstance(s, NpuStorage)
    assert s.is_npu and not s.is_cpu and s.device == npusim.device("npu:1") and s.get_device() == 1
    assert s.nbytes() == len(s) == 24


def test_views_share_the_storage():
    x = npusim.arange(6.0).npu()
    s = x.untyped_storage()
    for view in (x[2:], x.view(2, 3), x.view(2, 3).t(), x.detach()):
        assert view.untyped_storage().data_ptr() == s.data_ptr()
    assert x[2:].storage_offset() == 2
    assert x.clone().untyped_storage().data_ptr() != s.data_ptr()


def test_storage_bytes_round_trip_through_the_cpu():
    x = npusim.tensor([1.0, -2.0], dtype=npusim.float32)
    s = x.npu().untyped_storage()
    assert s.cpu().tolist() == x.untyped_storage().tolist() == list(np.array([1.0, -2.0], np.float32).view(np.uint8))
    assert s.tolist() == s.cpu().tolist()
    assert s[4] == x.untyped_storage()[4] and isinstance(s[4], int)
    assert s[0:4].device == s.device


def test_storages_move_between_devices():
    c = npusim.UntypedStorage([1, 2, 3])
    for target, index in ((c.npu(), 0), (c.npu(1), 1), (c.to(device="npu:1"), 1)):
        assert isinstance(target, NpuStorage) and target.device.index == index and target.tolist() == [1, 2, 3]
    n = c.npu()
    assert n.npu() is n and n.cpu().device == npusim.device("cpu")
    assert n.to(device="npu:0") is n


def test_writing_through_the_storage_changes_the_tensor():
    x = npusim.ones(3).npu()
    x.untyped_storage().fill_(0)
    assert x.cpu().tolist() == [0.0, 0.0, 0.0]
    y = npusim.tensor([2.0]).npu()
    y.untyped_storage().copy_(npusim.tensor([5.0]).untyped_storage())    # from a cpu storage
    assert y.item() == 5.0
    with pytest.raises(RuntimeError, match="^size mismatch: copying a storage of 8 bytes into one of 4 bytes$"):
        y.untyped_storage().copy_(npusim.tensor([1.0, 2.0]).untyped_storage())


def test_storage_memory_is_accounted_while_anything_holds_it(quiet):
    base = npu.memory_allocated()
    x = npusim.empty(1024, device="npu")              # 4096 bytes
    s = x.untyped_storage()
    view = x[10:]
    del x
    assert npu.memory_allocated() - base == 4096
    del view
    assert npu.memory_allocated() - base == 4096     # the storage alone keeps it
    del s
    assert npu.memory_allocated() == base


def test_new_npu_storages_are_accounted(quiet):
    base = npu.memory_allocated()
    u = npusim.UntypedStorage(8, device="npu")
    assert u.device == npusim.device("npu:0") and u.tolist() == [0] * 8
    assert npu.memory_allocated() - base == 512
    v = u.clone()
    assert v.device == u.device and npu.memory_allocated() - base == 1024
    del u, v
    assert npu.memory_allocated() == base


def test_an_empty_tensor_has_an_empty_storage(quiet):
    base = npu.memory_allocated()
    e = npusim.empty(0, device="npu")
    assert e.untyped_storage().nbytes() == 0 and npu.memory_allocated() == base


def test_storage_of_a_new_tensor_is_made_when_the_tensor_is(quiet):
    # the accounting happens at creation, not on first use of untyped_storage()
    base = npu.memory_allocated()
    x = npusim.zeros(100, device="npu")
    assert npu.memory_allocated() - base == 512
    assert isinstance(x._st, NpuStorage)


def test_copies_and_pickles_are_new_accounted_memory(quiet):
    import copy
    import pickle
    s = npusim.tensor([1.0, 2.0]).npu(1).untyped_storage()
    base = npu.memory_allocated(1)
    copies = [copy.copy(s), copy.deepcopy(s), pickle.loads(pickle.dumps(s))]
    for c in copies:
        assert isinstance(c, NpuStorage) and c.device == s.device and c.tolist() == s.tolist()
        assert c.data_ptr() != s.data_ptr()
    assert npu.memory_allocated(1) - base == 3 * 512
    del copies, c
    assert npu.memory_allocated(1) == base
