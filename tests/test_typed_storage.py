"""Typed and legacy storages, and the Tensor methods about storage and host memory, as torch 2.13's:
``Tensor.storage()``, ``TypedStorage``, ``npusim.FloatStorage`` & co. (and ``npusim.npu``'s), ``from_file``,
``from_buffer``, shared and pinned memory, ``record_stream`` and ``is_set_to``."""
from __future__ import annotations

import copy
import gc
import os
import pickle
import warnings

import pytest

import npusim
import npusim.storage as nstorage

CUDA_MODE = os.environ.get("NPUSIM_BACKEND") == "cuda" or npusim.npu.runtime_mode() == "cuda"


@pytest.fixture(autouse=True)
def no_deprecation_noise():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


def _module(device):
    return npusim if device == "cpu" else npusim.npu


# --- the deprecation warning ---------------------------------------------------------------------------------------

def test_storage_warns_once_that_typed_storage_is_deprecated():
    nstorage._reset_warn_typed_storage_removal()
    t = npusim.arange(3.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t.storage()
        t.storage().tolist()
    assert len(caught) == 1 and caught[0].category is UserWarning
    assert str(caught[0].message).startswith("TypedStorage is deprecated. It will be removed in the future and "
                                             "UntypedStorage will be the only storage class.")
    assert caught[0].filename == __file__       # it points at the caller
    nstorage._set_always_warn_typed_storage_removal(True)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t.storage().size()
        assert len(caught) == 2
    finally:
        nstorage._set_always_warn_typed_storage_removal(False)


# --- TypedStorage ----------------------------------------------------------------------------------------------------

def test_tensor_storage_is_a_typed_storage_over_its_untyped_storage(device):
    t = npusim.arange(4.0, device=device)
    s = t.storage()
    assert type(s) is npusim.TypedStorage and isinstance(s, _module(device).FloatStorage)
    assert not isinstance(s, _module(device).DoubleStorage)
    assert not isinstance(s, (npusim.npu.FloatStorage if device == "cpu" else npusim.FloatStorage))
    assert s.untyped() is t.untyped_storage() and s._untyped_storage is t.untyped_storage()
    assert s.dtype is npusim.float32 and s.device == t.device and s.element_size() == 4
    assert len(s) == s.size() == 4 and s.nbytes() == 16 and s.data_ptr() == t.data_ptr()
    assert s.tolist() == [0.0, 1.0, 2.0, 3.0] and list(s) == s.tolist()
    assert s[1] == 1.0 and s[-1] == 3.0
    assert t[1:].storage().size() == 4      # the whole storage, from its first byte
    assert t.storage() is not t.storage()
    assert s.get_device() == t.get_device()
    assert t.storage_type() is _module(device).FloatStorage
    assert npusim.arange(3, device=device).storage_type() is _module(device).LongStorage
    assert s.type() == ("npusim.FloatStorage" if device == "cpu" else "npusim.npu.FloatStorage")
    assert s.pickle_storage_type() == "FloatStorage"


def test_typed_storage_indexing_errors_are_torchs(device):
    s = npusim.arange(4.0, device=device).storage()
    with pytest.raises(IndexError, match="^index 4 out of range for storage of size 4$"):
        s[4]
    with pytest.raises(IndexError, match="^index -5 out of range for storage of size 4$"):
        s[-5]
    with pytest.raises(RuntimeError, match="^slices are only supported in UntypedStorage.__getitem__$"):
        s[1:2]
    with pytest.raises(TypeError, match="can't index a .* with <class 'bool'>"):
        s[True]
    with pytest.raises(RuntimeError, match="can't index a .* with <class 'float'>"):
        s[1.0]
    with pytest.raises(RuntimeError, match="can't index a .* with <class 'str'>"):
        s["a"] = 1
    with pytest.raises(RuntimeError, match="cannot set item with value type"):
        s[0] = s


def test_typed_storage_writes_reach_the_tensor(device):
    t = npusim.zeros(5, device=device)
    s = t.storage()
    s[0] = 9
    s[1:3] = 4
    assert t.tolist() == [9.0, 4.0, 4.0, 0.0, 0.0]
    s.fill_(7)
    assert t.tolist() == [7.0] * 5
    s.copy_(_module(device).FloatStorage([1, 2, 3, 4, 5]))
    assert t.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    c = s.clone()
    c[0] = 100
    assert t[0].item() == 1.0 and c.tolist()[0] == 100.0 and type(c) is npusim.TypedStorage


def test_typed_storage_copies_and_moves(device):
    s = npusim.tensor([1.0, 2.0], device=device).storage()
    cpu = s.cpu()
    assert cpu.device.type == "cpu" and cpu.tolist() == [1.0, 2.0] and type(cpu) is npusim.TypedStorage
    moved = s.to(device="npu")
    assert moved.device.type == "npu" and moved.tolist() == [1.0, 2.0]
    assert copy.deepcopy(s).tolist() == [1.0, 2.0] and copy.copy(s).tolist() == [1.0, 2.0]
    back = pickle.loads(pickle.dumps(s))
    assert type(back) is npusim.TypedStorage and back.dtype is npusim.float32 and back.tolist() == [1.0, 2.0]
    assert back.device == s.device


def test_typed_storage_casts(device):
    s = npusim.tensor([1.5, -2.0, 0.0], device=device).storage()
    assert s.double().dtype is npusim.float64 and s.double().tolist() == [1.5, -2.0, 0.0]
    assert s.int().tolist() == [1, -2, 0] and s.int().type().endswith("IntStorage")
    assert s.bool().tolist() == [True, True, False] and s.half().tolist() == [1.5, -2.0, 0.0]
    same = s.float()
    assert same.tolist() == s.tolist() and same.data_ptr() != s.data_ptr()     # always a copy
    u = npusim.UntypedStorage([1, 2, 3], device=device)
    assert u.float().tolist() == [1.0, 2.0, 3.0] and u.long().dtype is npusim.int64


def test_typed_storage_constructor():
    s = npusim.TypedStorage(3, dtype=npusim.int32)
    assert s.size() == 3 and s.dtype is npusim.int32 and s.device.type == "cpu"
    assert npusim.TypedStorage(2).dtype is npusim.float32
    assert npusim.TypedStorage([1, 2], dtype=npusim.int16).tolist() == [1, 2]
    assert npusim.TypedStorage().size() == 0
    w = npusim.TypedStorage(wrap_storage=npusim.UntypedStorage(6), dtype=npusim.float32)
    assert w.size() == 1        # whole elements only
    with pytest.raises(RuntimeError, match="Too many positional arguments"):
        npusim.TypedStorage(2, 3)
    with pytest.raises(RuntimeError, match="Argument 'dtype' must be specified"):
        npusim.TypedStorage(wrap_storage=npusim.UntypedStorage(8))
    with pytest.raises(RuntimeError, match="from_file can only be called on derived classes"):
        npusim.TypedStorage.from_file("x", False, 2)
    assert npusim.TypedStorage(2, dtype=npusim.float32, device="npu").device.type == "npu"


# --- the legacy classes ----------------------------------------------------------------------------------------------

def test_legacy_constructors(device):
    mod = _module(device)
    s = mod.FloatStorage(3)
    assert type(s) is npusim.TypedStorage and s.dtype is npusim.float32 and s.device.type == device and s.size() == 3
    assert mod.LongStorage([1, 2]).tolist() == [1, 2] and mod.BoolStorage([True, False]).tolist() == [True, False]
    assert mod.ByteStorage().size() == 0
    wrapped = mod.FloatStorage(wrap_storage=npusim.UntypedStorage(8, device=device))
    assert wrapped.size() == 2 and isinstance(wrapped, mod.FloatStorage)
    with pytest.raises(RuntimeError, match="Keyword argument 'device' cannot be specified"):
        mod.FloatStorage(2, device=device)
    with pytest.raises(RuntimeError, match="Too many positional arguments"):
        mod.FloatStorage(2, 3)
    with pytest.raises(TypeError, match="Argument type not recognized: <class 'float'>"):
        mod.FloatStorage(2.5)
    other = "npu" if device == "cpu" else "cpu"
    with pytest.raises(RuntimeError, match=f"Device of 'wrap_storage' must be {device}, but got {other}"):
        mod.FloatStorage(wrap_storage=npusim.UntypedStorage(8, device=other))
    names = ["BFloat16Storage", "BoolStorage", "ByteStorage", "CharStorage", "DoubleStorage", "FloatStorage",
             "HalfStorage", "IntStorage", "LongStorage", "ShortStorage"]
    for name in names:
        cls = getattr(mod, name)
        assert isinstance(cls(1), cls)
        assert repr(cls) == f"<class 'npusim.{'' if device == 'cpu' else 'npu.'}{name}'>"


def test_storage_base_and_storage():
    assert isinstance(npusim.UntypedStorage(2), npusim.StorageBase)
    with pytest.raises(RuntimeError, match="Cannot directly construct StorageBase"):
        npusim.StorageBase(2)
    assert npusim.Storage is npusim.FloatStorage
    npusim.set_default_dtype(npusim.float64)
    try:
        assert npusim.Storage is npusim.DoubleStorage
    finally:
        npusim.set_default_dtype(npusim.float32)
    assert npusim.storage.TypedStorage is npusim.TypedStorage and npusim.storage.UntypedStorage is npusim.UntypedStorage
    assert pickle.loads(pickle.dumps(npusim.FloatStorage)) is npusim.FloatStorage
    assert pickle.loads(pickle.dumps(npusim.npu.FloatStorage)) is npusim.npu.FloatStorage


# --- storages from host bytes ----------------------------------------------------------------------------------------

def test_from_buffer():
    data = b"\x00\x00\x80\x3f"
    assert npusim.UntypedStorage.from_buffer(data, "little", dtype=npusim.float32).tolist() == [0, 0, 128, 63]
    assert npusim.FloatStorage.from_buffer(data, "little").tolist() == [1.0]
    assert npusim.TypedStorage.from_buffer(data, "little", dtype=npusim.float32).tolist() == [1.0]
    big = npusim.TypedStorage.from_buffer(b"\x3f\x80\x00\x00", "big", dtype=npusim.float32)
    assert big.tolist() == [1.0]
    assert npusim.ShortStorage.from_buffer(data, "little", count=1, offset=2).tolist() == [16256]
    with pytest.raises(RuntimeError, match="argument 'dtype' cannot be None"):
        npusim.UntypedStorage.from_buffer(data)
    with pytest.raises(ValueError, match=r"buffer size \(3\) must be a multiple of element size \(2\)"):
        npusim.UntypedStorage.from_buffer(b"abc", "big", dtype=npusim.int16)
    with pytest.raises(ValueError, match="buffer has only 4 elements after offset 0, but specified a size of 3"):
        npusim.UntypedStorage.from_buffer(data, "little", dtype=npusim.int16, count=3)
    with pytest.raises(ValueError, match="invalid byte_order 'middle'"):
        npusim.UntypedStorage.from_buffer(data, "middle", dtype=npusim.int16)
    with pytest.raises(RuntimeError, match="'dtype' can only be specified"):
        npusim.FloatStorage.from_buffer(data, "little", dtype=npusim.float32)


def test_from_file_maps_a_file(tmp_path):
    path = str(tmp_path / "data.bin")
    with open(path, "wb") as f:
        f.write(bytes(range(16)))
    t = npusim.from_file(path, size=4, dtype=npusim.int32)
    assert t.tolist() == [50462976, 117835012, 185207048, 252579084] and t.is_shared()
    assert t.untyped_storage().filename is None and not t.untyped_storage().resizable()
    t[1] = 7                                   # private mapping: the file keeps its bytes
    assert open(path, "rb").read() == bytes(range(16))
    shared = npusim.from_file(path, True, 4, dtype=npusim.int32)
    shared[0] = 7                              # shared mapping: the write reaches the file
    assert open(path, "rb").read()[:4] == b"\x07\x00\x00\x00" and shared.untyped_storage().filename == path
    grown = npusim.from_file(path, True, 5, dtype=npusim.int32)
    assert grown.numel() == 5 and os.path.getsize(path) == 20 and grown[4].item() == 0
    assert npusim.from_file(path).numel() == 0 and npusim.from_file(path, False, 2).dtype is npusim.float32
    assert npusim.from_file(path, False, 2, requires_grad=True).requires_grad
    s = npusim.IntStorage.from_file(path, False, 2)
    assert s.tolist() == [7, 117835012] and isinstance(s, npusim.IntStorage)
    assert npusim.UntypedStorage.from_file(path, False, 3).tolist() == [7, 0, 0]


def test_from_file_refuses_hostile_files_and_leaves_them_alone(tmp_path):
    path = str(tmp_path / "short.bin")
    with open(path, "wb") as f:
        f.write(bytes(16))
    with pytest.raises(RuntimeError, match=rf"^file <{path}> size <16> is smaller than the required mapping "
                                           r"size <20>$"):
        npusim.from_file(path, False, 5, dtype=npusim.int32)
    assert os.path.getsize(path) == 16
    missing = str(tmp_path / "missing.bin")
    with pytest.raises(RuntimeError, match=rf"^unable to open file <{missing}> in read-only mode: No such file or "
                                           r"directory \(2\)$"):
        npusim.from_file(missing, False, 2)
    assert not os.path.exists(missing)
    with pytest.raises(RuntimeError, match="unable to mmap 8 bytes from file"):
        npusim.from_file(str(tmp_path), False, 2)
    with pytest.raises(RuntimeError, match="Cannot allocate memory"):
        npusim.from_file(path, False, -1)
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype can require gradients"):
        npusim.from_file(path, False, 2, dtype=npusim.int64, requires_grad=True)
    with pytest.raises(TypeError, match=r"argument 'filename' \(position 1\) must be str, not int"):
        npusim.from_file(123, False, 2)
    with pytest.raises(TypeError, match=r"argument 'shared' \(position 2\) must be bool, not str"):
        npusim.from_file(path, "x", 2)
    with pytest.raises(TypeError, match=r"argument 'size' \(position 3\) must be int, not float"):
        npusim.from_file(path, False, 2.0)
    with pytest.raises(RuntimeError, match="Trying to resize storage that is not resizable"):
        npusim.UntypedStorage.from_file(path, False, 4).resize_(8)


# --- shared, pinned and resized memory ------------------------------------------------------------------------------

def test_share_memory_moves_cpu_memory_into_shared_memory():
    t = npusim.arange(4.0)
    assert not t.is_shared() and not t.storage().is_shared()
    assert t.share_memory_() is t and t.is_shared() and t.untyped_storage().is_shared()
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
    pid = os.fork()
    if pid == 0:     # the child writes; the parent sees it
        try:
            t[0] = 42.0
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert t[0].item() == 42.0
    v = npusim.arange(6.0)[2:]
    v.share_memory_()
    assert v.tolist() == [2.0, 3.0, 4.0, 5.0] and v._base.is_shared()
    v[0] = -1.0
    assert v._base[2].item() == -1.0         # the tensor it views follows it into shared memory


def test_npu_memory_counts_as_shared_and_share_memory_is_a_no_op():
    t = npusim.arange(3.0, device="npu")
    p = t.data_ptr()
    assert t.is_shared() and t.share_memory_() is t and t.data_ptr() == p


def test_pin_memory(device):
    t = npusim.arange(3.0, device=device)
    if device != "cpu":
        assert not t.is_pinned()
        with pytest.raises(RuntimeError, match=r"^cannot pin 'npusim.npu.FloatTensor' only dense CPU tensors can be "
                                               r"pinned$"):
            t.pin_memory()
        with pytest.raises(TypeError, match="only CPU memory can be pinned"):
            t.untyped_storage().pin_memory()
        return
    assert not t.is_pinned() and not t.storage().is_pinned()
    p = t.pin_memory()
    assert p.is_pinned() and p.tolist() == [0.0, 1.0, 2.0] and p.data_ptr() != t.data_ptr()
    assert p.pin_memory() is p
    assert p.storage().is_pinned() and t.storage().pin_memory().is_pinned()
    assert npusim.arange(6.0).view(2, 3).t().pin_memory().stride() == (1, 3)
    with pytest.raises(RuntimeError, match="^CPU device type not an accelerator.$"):
        t.pin_memory("cpu")
    assert p.to("npu", non_blocking=True).tolist() == [0.0, 1.0, 2.0]


def test_untyped_storage_resize(device):
    u = npusim.UntypedStorage([1, 2, 3], device=device)
    assert u.resizable() and u.resize_(5) is u and u.tolist() == [1, 2, 3, 0, 0]
    u.resize_(1)
    assert u.tolist() == [1] and u.nbytes() == 1
    with pytest.raises(RuntimeError, match="resize_ expects an int, but got float"):
        u.resize_(2.0)
    with pytest.raises(RuntimeError, match="alloc_cpu"):
        u.resize_(-1)
    s = npusim.FloatStorage(2) if device == "cpu" else npusim.npu.FloatStorage(2)
    s.resize_(3)
    assert s.size() == 3
    new = npusim.UntypedStorage(0, device=device)
    assert new.new().nbytes() == 0 and new.untyped() is new


def test_npu_storage_resize_keeps_the_allocator_exact():
    npusim.npu.init()
    gc.collect()
    before = npusim.npu.memory_allocated()
    u = npusim.UntypedStorage(1000, device="npu")
    u.resize_(3000)
    assert npusim.npu.memory_allocated() - before == 3072
    del u
    gc.collect()
    assert npusim.npu.memory_allocated() == before


def test_byteswap():
    u = npusim.UntypedStorage([1, 2, 3, 4, 5])
    u.byteswap(npusim.int16)
    assert u.tolist() == [2, 1, 4, 3, 5]


# --- record_stream and is_set_to ------------------------------------------------------------------------------------

def test_record_stream():
    s = npusim.npu.Stream()
    t = npusim.ones(4, device="npu")
    assert t.record_stream(s) is None
    with pytest.raises(NotImplementedError, match="^Could not run 'aten::record_stream' with arguments from the "
                                                  "'CPU' backend"):
        npusim.ones(2).record_stream(s)
    with pytest.raises(RuntimeError, match="unknown parameter type"):
        t.record_stream(1)
    with pytest.raises(RuntimeError, match="expected a stream on npu"):
        t.record_stream(npusim.Stream("cpu"))


@pytest.mark.skipif(not CUDA_MODE, reason="the allocator holds blocks back only in cuda mode")
def test_record_stream_holds_the_freed_block_until_the_stream_is_done():
    from npusim.backend.memory import memory
    alloc = memory.allocator(0)
    t = npusim.ones(3000, device="npu")
    t.record_stream(npusim.npu.Stream())
    del t
    gc.collect()
    assert len(alloc._pending) == 1
    npusim.npu.synchronize()
    npusim.ones(10, device="npu")
    assert alloc._pending == []


def test_is_set_to(device):
    t = npusim.arange(4.0, device=device)
    assert t.is_set_to(t) and t.view(npusim.int32).is_set_to(t)
    assert not t[1:].is_set_to(t) and not t.is_set_to(t.clone()) and not t.view(2, 2).is_set_to(t)
    assert npusim.empty(0, device=device).set_(t.untyped_storage()).is_set_to(t)
    with pytest.raises(TypeError, match=r"^is_set_to\(\): argument 'tensor' \(position 1\) must be Tensor, not int$"):
        t.is_set_to(1)


# --- torch as the oracle --------------------------------------------------------------------------------------------

@pytest.mark.oracle
def test_against_torch(torch, tmp_path):
    warnings.simplefilter("ignore")
    for lib in (torch, npusim):
        t = lib.tensor([1.5, -2.0, 3.0])
        s = t.storage()
        got = (s.tolist(), s.size(), s.nbytes(), s.element_size(), s[-1], s.int().tolist(), s.bool().tolist(),
               s.type().split(".")[-1], t.storage_type().__name__, t.is_shared(), t.is_pinned(),
               t.is_set_to(t), t.view(lib.int32).is_set_to(t), t[1:].is_set_to(t),
               isinstance(s, lib.FloatStorage), isinstance(s, lib.DoubleStorage), lib.Storage.__name__,
               lib.ShortStorage.from_buffer(b"\x00\x00\x80\x3f", "little").tolist(),
               lib.UntypedStorage.from_buffer(b"\x00\x01\x02\x03", "big", dtype=lib.int16).tolist(),
               lib.IntStorage([1, 2]).tolist(), lib.TypedStorage(wrap_storage=lib.UntypedStorage(6),
                                                                  dtype=lib.float32).size())
        t.share_memory_()
        got += (t.is_shared(), t.tolist())
        u = lib.UntypedStorage([1, 2, 3])
        u.resize_(5)
        got += (u.tolist()[:3], u.nbytes(), u.resizable())
        path = str(tmp_path / f"{lib.__name__}.bin")
        with open(path, "wb") as f:
            f.write(bytes(range(16)))
        m = lib.from_file(path, True, 5, dtype=lib.int32)
        got += (m.tolist(), os.path.getsize(path), m.is_shared(), m.untyped_storage().filename == path)
        errors = []
        for call in (lambda: s[4], lambda: s[1:2], lambda: s[True], lambda: lib.from_file(path, False, 6,
                                                                                          dtype=lib.int32),
                     lambda: lib.FloatStorage(2, 3), lambda: lib.FloatStorage(2.5), lambda: t.is_set_to(1),
                     lambda: t.record_stream(lib.Stream("cpu")) if lib is torch else t.record_stream(lib.npu.Stream()),
                     lambda: lib.UntypedStorage.from_file(path, False).resize_(4)):
            try:
                call()
                errors.append(None)
            except Exception as e:
                errors.append((type(e).__name__, str(e).split("\n")[-1].split(".")[0].replace("torch", "npusim")))
        if lib is torch:
            expected = (got, errors)
    assert got == expected[0]
    assert [e and e[0] for e in errors] == [e and e[0] for e in expected[1]]
    assert errors[0] == expected[1][0] and errors[1] == expected[1][1] and errors[3] == expected[1][3]


def test_save_and_load_a_typed_storage(tmp_path, device):
    path = str(tmp_path / "s.pt")
    s = npusim.arange(3.0, device=device).storage()
    npusim.save({"s": s}, path)
    back = npusim.load(path)["s"]
    assert type(back) is npusim.TypedStorage and isinstance(back, _module(device).FloatStorage)
    assert back.tolist() == [0.0, 1.0, 2.0]


@pytest.mark.oracle
def test_typed_storages_load_in_torch_and_back(torch, tmp_path):
    warnings.simplefilter("ignore")
    path = str(tmp_path / "s.pt")
    npusim.save(npusim.tensor([1, 2], dtype=npusim.int16).storage(), path)
    loaded = torch.load(path)
    assert type(loaded) is torch.TypedStorage and loaded.dtype is torch.int16 and loaded.tolist() == [1, 2]
    torch.save(torch.tensor([1.5]).storage(), path)
    back = npusim.load(path)
    assert isinstance(back, npusim.FloatStorage) and back.tolist() == [1.5]


def test_the_backend_generated_methods_of_typed_storages():
    s = npusim.arange(3.0).storage()
    moved = s.npu()
    assert type(moved) is npusim.TypedStorage and moved.is_npu and not s.is_npu
    assert moved.device == npusim.device("npu:0") and moved.tolist() == [0.0, 1.0, 2.0]
    assert moved.npu()._untyped_storage is moved._untyped_storage
    legacy = npusim.FloatStorage([1, 2]).npu(1)
    assert isinstance(legacy, npusim.npu.FloatStorage) and legacy.get_device() == 1


def test_pin_memory_is_differentiable():
    t = npusim.ones(3, requires_grad=True)
    p = t.pin_memory()
    assert p.is_pinned() and p.requires_grad and p.grad_fn is not None
    (p * 2).sum().backward()
    assert t.grad.tolist() == [2.0, 2.0, 2.0]
    with npusim.no_grad():
        assert not t.pin_memory().requires_grad


def test_module_share_memory_shares_its_parameters_and_buffers():
    m = npusim.nn.BatchNorm1d(3)
    m.weight.grad = npusim.ones(3)
    w = m.weight
    assert m.share_memory() is m and m.weight is w
    assert m.weight.is_shared() and m.weight.grad.is_shared() and m.running_mean.is_shared()
    pid = os.fork()
    if pid == 0:
        try:
            with npusim.no_grad():
                m.weight.fill_(5.0)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert m.weight.tolist() == [5.0, 5.0, 5.0]
