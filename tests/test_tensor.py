"""Tensor basics: metadata, conversions to Python and NumPy, DLPack, the Python protocols,
``.to()`` and the dtype-conversion methods, ``new_*``, pickling and deepcopy.
"""
from __future__ import annotations

import copy
import math
import pickle
import warnings

import numpy as np
import pytest

import npusim
from conftest import host

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def _outcome(fn, L):
    try:
        return ("ok", _describe(fn(L)))
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return ("err", type(e).__name__, str(e).split("\n")[0].replace("torch.", "npusim."))


def _describe(r):
    if isinstance(r, (list, tuple)):
        return type(r).__name__, tuple(_describe(x) for x in r)
    if hasattr(r, "shape") and hasattr(r, "dtype") and not isinstance(r, np.ndarray):
        v = r.detach().cpu()
        name = str(v.dtype).split(".")[-1]
        v = v.float() if name == "bfloat16" else v
        return ("tensor", name, tuple(v.shape), v.numpy().tolist())
    if isinstance(r, np.ndarray):
        return ("ndarray", str(r.dtype), r.tolist())
    if type(r).__module__.startswith(("torch", "npusim")):
        return str(r).replace("torch.", "npusim.")
    if isinstance(r, str):
        r = r.replace("torch.", "npusim.")
    return (type(r).__name__, r)


def _sweep(torch, cases):
    bad = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for label, fn in cases:
            a, b = _outcome(fn, torch), _outcome(fn, npusim)
            if a != b:
                bad.append(f"{label}: torch {a!r} / npusim {b!r}")
    return bad


def _x(L, dt="float32"):
    return L.arange(6, dtype=getattr(L, dt)).reshape(2, 3)


@pytest.mark.oracle
def test_conversions_match_torch_for_every_dtype(torch):
    cases = []
    for dt in DTYPES:
        cases += [
            (f"item {dt}", lambda L, dt=dt: _x(L, dt)[1, 2].item()),
            (f"tolist {dt}", lambda L, dt=dt: _x(L, dt).tolist()),
            (f"0-dim tolist {dt}", lambda L, dt=dt: _x(L, dt)[0, 1].tolist()),
            (f"numpy {dt}", lambda L, dt=dt: _x(L, dt).numpy()),
            (f"np.asarray {dt}", lambda L, dt=dt: np.asarray(_x(L, dt))),
            (f"np.asarray float64 {dt}", lambda L, dt=dt: np.asarray(_x(L, dt), dtype=np.float64)),
            (f"int {dt}", lambda L, dt=dt: int(_x(L, dt)[1, 1])),
            (f"float {dt}", lambda L, dt=dt: float(_x(L, dt)[1, 1])),
            (f"complex {dt}", lambda L, dt=dt: complex(_x(L, dt)[0, 1])),
            (f"bool {dt}", lambda L, dt=dt: (bool(_x(L, dt)[1, 1]), bool(_x(L, dt)[0, 0]))),
            (f"index {dt}", lambda L, dt=dt: [10, 20, 30][_x(L, dt)[0, 1]]),
            (f"sizes {dt}", lambda L, dt=dt: (_x(L, dt).element_size(), _x(L, dt).itemsize, _x(L, dt).nbytes)),
            (f"predicates {dt}", lambda L, dt=dt: (_x(L, dt).is_floating_point(), _x(L, dt).is_signed(),
                                                   _x(L, dt).is_complex())),
            (f"type() {dt}", lambda L, dt=dt: _x(L, dt).type()),
            (f"pickle {dt}", lambda L, dt=dt: pickle.loads(pickle.dumps(_x(L, dt)))),
            (f"deepcopy {dt}", lambda L, dt=dt: copy.deepcopy(_x(L, dt))),
        ]
        for m in ("float", "double", "half", "bfloat16", "int", "long", "short", "char", "byte", "bool"):
            cases.append((f"{m}() of {dt}", lambda L, dt=dt, m=m: getattr(_x(L, dt) - 2 * (dt != "bool" and
                                                                                             dt != "uint8"), m)()))
        for dt2 in DTYPES:
            cases.append((f"to {dt}->{dt2}", lambda L, dt=dt, dt2=dt2: (_x(L, dt) * 50).to(getattr(L, dt2))
                          if dt != "bool" else _x(L, dt).to(getattr(L, dt2))))
            cases.append((f"type_as {dt}->{dt2}", lambda L, dt=dt, dt2=dt2: _x(L, dt).type_as(_x(L, dt2))))
    assert _sweep(torch, cases) == []


@pytest.mark.oracle
def test_protocols_and_metadata_match_torch(torch):
    cases = [
        ("item of many", lambda L: _x(L).item()), ("item of none", lambda L: L.ones(0).item()),
        ("int of many", lambda L: int(_x(L))), ("float of many", lambda L: float(_x(L))),
        ("bool of many", lambda L: bool(_x(L))), ("bool of none", lambda L: bool(L.ones(0))),
        ("bool of 1x1", lambda L: bool(L.ones(1, 1))),
        ("index float", lambda L: [1, 2][L.tensor(1.)]), ("index many", lambda L: [1, 2][L.tensor([1, 0])]),
        ("index 1-element", lambda L: [1, 2][L.tensor([1])]),
        ("len", lambda L: len(_x(L))), ("len 0-dim", lambda L: len(L.tensor(1.))),
        ("iter", lambda L: list(_x(L))), ("iter 0-dim", lambda L: list(L.tensor(1.))),
        ("iter 1-d", lambda L: [type(v).__name__ for v in L.arange(3)]),
        ("Size repr", lambda L: (repr(_x(L).shape), repr(L.tensor(1.).shape), str(L.ones(3).size()))),
        ("Size slice and add", lambda L: (repr(L.ones(2, 3, 4).shape[1:]), repr(L.ones(2, 3).shape + (4,)))),
        ("Size numel eq ctor", lambda L: (L.ones(2, 3, 4).shape.numel(), L.ones(2, 3).shape == (2, 3),
                                          repr(L.Size([1, 2])), type(L.ones(2).shape[0]).__name__)),
        ("size(dim)", lambda L: (_x(L).size(1), _x(L).size(-1))), ("size(bad dim)", lambda L: _x(L).size(2)),
        ("stride(dim)", lambda L: (_x(L).stride(0), _x(L).stride(-1))), ("stride(bad)", lambda L: _x(L).stride(5)),
        ("dims", lambda L: (_x(L).dim(), _x(L).ndim, _x(L).ndimension(), _x(L).numel(), _x(L).nelement())),
        ("device", lambda L: (str(_x(L).device), _x(L).device.type, _x(L).device.index, _x(L).is_cpu,
                              _x(L).get_device())),
        ("offsets", lambda L: (_x(L)[1].storage_offset(), _x(L)[1, 1:].storage_offset(), _x(L).t().storage_offset())),
        ("contiguity", lambda L: (_x(L).is_contiguous(), _x(L).t().is_contiguous(), _x(L)[:, ::2].is_contiguous(),
                                  L.ones(3, 1).t().is_contiguous(), L.ones(0, 3).t().is_contiguous())),
        ("storage", lambda L: (_x(L).untyped_storage().nbytes(), _x(L)[1].untyped_storage().nbytes(),
                               len(_x(L).untyped_storage()))),
        ("storage copies", lambda L: (lambda s: [(c.data_ptr() == s.data_ptr(), c.tolist() == s.tolist(), type(c).__name__)
                                                 for c in (copy.copy(s), copy.deepcopy(s))])(L.UntypedStorage([1, 2, 3]))),
        ("numpy shares", lambda L: (lambda x: (x.numpy().__setitem__((0, 0), 7.0), x[0, 0].item())[1])(_x(L))),
        ("numpy requires_grad", lambda L: L.ones(2, requires_grad=True).numpy()),
        ("numpy force", lambda L: L.ones(2, requires_grad=True).numpy(force=True)),
        ("numpy bfloat16", lambda L: L.ones(2, dtype=L.bfloat16).numpy()),
        ("numpy transposed", lambda L: (lambda a: (a.strides, a.tolist()))(_x(L).t().numpy())),
        ("__array__ bfloat16", lambda L: np.asarray(L.ones(2, dtype=L.bfloat16))),
        ("__array__ requires_grad", lambda L: np.asarray(L.ones(2, requires_grad=True))),
        ("dlpack to numpy", lambda L: (lambda x: (lambda y: (y.tolist(), np.shares_memory(y, x.numpy())))(
            np.from_dlpack(x)))(_x(L))),
        ("from_dlpack numpy", lambda L: (lambda a: (lambda t: (t.tolist(), t.data_ptr() == a.ctypes.data))(
            L.from_dlpack(a)))(np.arange(4.0))),
        ("dlpack device", lambda L: tuple(int(v) for v in _x(L).__dlpack_device__())),
        ("dlpack requires_grad", lambda L: L.ones(2, requires_grad=True).__dlpack__()),
        ("from_dlpack tensor", lambda L: (lambda x: (lambda y: (y is x, y._base is None, y.data_ptr() == x.data_ptr(),
                                                                y.stride()))(L.from_dlpack(x)))(_x(L).t())),
        ("from_dlpack requires_grad", lambda L: L.from_dlpack(L.ones(2, requires_grad=True))),
        ("from_dlpack list", lambda L: L.from_dlpack([1, 2])),
        ("to same", lambda L: (lambda x: (x.to(L.float32) is x, x.to("cpu") is x, x.to(L.device("cpu")) is x,
                                          x.to(L.float32, copy=True) is x, x.cpu() is x))(_x(L))),
        ("to device and dtype", lambda L: _x(L).to("cpu", L.int32)),
        ("to other tensor", lambda L: _x(L).to(L.ones(1, dtype=L.float64))),
        ("to keywords", lambda L: _x(L).to(dtype=L.int8, device="cpu")),
        ("to non_blocking", lambda L: _x(L).to(L.float64, True)),
        ("to bad keyword", lambda L: _x(L).to(foo=1)),
        ("to two dtypes", lambda L: _x(L).to(L.float32, L.float64)),
        ("to bad dtype", lambda L: _x(L).to(dtype="x")),
        ("type(str)", lambda L: _x(L).type(L.__name__ + ".DoubleTensor")),
        ("type(dtype)", lambda L: _x(L).type(L.int16)),
        ("casts return self", lambda L: (lambda x: (x.float() is x, x.double() is x))(_x(L))),
        ("new_zeros", lambda L: _x(L, "int16").new_zeros(2, 3)),
        ("new_ones tuple", lambda L: _x(L, "int16").new_ones((2, 3))),
        ("new_empty", lambda L: (lambda r: (r.shape, r.dtype, r.requires_grad))(_x(L, "int16").new_empty(2))),
        ("new_zeros dtype", lambda L: _x(L, "int16").new_zeros(2, dtype=L.float64)),
        ("new_ones requires_grad", lambda L: _x(L).new_ones(2, requires_grad=True).requires_grad),
        ("new_zeros requires_grad int", lambda L: _x(L, "int16").new_zeros(2, requires_grad=True)),
        ("new_zeros float size", lambda L: _x(L).new_zeros(2.5)),
        ("new_full", lambda L: _x(L, "int16").new_full((2,), 7)),
        ("new_full float", lambda L: _x(L, "int16").new_full((2,), 7.5)),
        ("new_full dtype", lambda L: _x(L, "int16").new_full((2,), 7.5, dtype=L.float32)),
        ("new_tensor", lambda L: _x(L, "int16").new_tensor([1.5, 2])),
        ("new_tensor dtype", lambda L: _x(L, "int16").new_tensor([1.5, 2], dtype=L.float64)),
        ("pickle requires_grad", lambda L: pickle.loads(pickle.dumps(L.ones(2, requires_grad=True))).requires_grad),
        ("pickle view", lambda L: (lambda y: (y.shape, y.stride(), y.tolist()))(pickle.loads(pickle.dumps(_x(L).t())))),
        ("deepcopy keeps sharing", lambda L: (lambda d: d[0].data_ptr() == d[1].data_ptr() + 12)(
            copy.deepcopy([_x(L).clone()[1], None]) if False else (lambda x: copy.deepcopy([x[1], x]))(_x(L).clone()))),
        ("deepcopy requires_grad", lambda L: (lambda y: (y.requires_grad, y.is_leaf))(
            copy.deepcopy(L.ones(2, requires_grad=True)))),
        ("deepcopy non-leaf", lambda L: copy.deepcopy(L.ones(2, requires_grad=True) * 2)),
        ("copy.copy shares", lambda L: (lambda x: copy.copy(x).data_ptr() == x.data_ptr())(_x(L))),
        ("hash is id", lambda L: (lambda x: hash(x) == id(x))(_x(L))),
        ("format", lambda L: (f"{L.tensor(1.5):.2f}", f"{_x(L)}")),
        ("format spec on many", lambda L: f"{_x(L):.2f}"),
        ("autograd facts", lambda L: (_x(L).is_leaf, _x(L).requires_grad, _x(L).grad, _x(L).grad_fn)),
        ("T 0-dim", lambda L: L.tensor(1.).T), ("mT 1-d", lambda L: L.ones(3).mT),
        ("data", lambda L: (lambda x: (x.data.data_ptr() == x.data_ptr(), x.data is x, x.data.requires_grad))(
            L.ones(2, requires_grad=True))),
        ("layout", lambda L: str(_x(L).layout)),
        ("versions", lambda L: (lambda x: (x._version, x.add_(1)._version, x[0]._version, x.t().add_(1) is None,
                                           x._version))(_x(L))),
        ("eq None", lambda L: _x(L) == None),  # noqa: E711
        ("contains", lambda L: (3 in _x(L), L.tensor(3.) in _x(L), 7 in _x(L))),
        ("contains str", lambda L: "a" in _x(L)),
        ("legacy Tensor", lambda L: (L.Tensor(2, 3).shape, L.Tensor([1, 2]))), ("legacy Tensor float", lambda L: L.Tensor(2.5)),
        ("is_tensor numel", lambda L: (L.is_tensor(_x(L)), L.is_tensor([1]), L.numel(_x(L)))),
        ("abs neg rpow", lambda L: (abs(L.tensor([-1.5])), -L.tensor([1.5]), 2 ** L.tensor([1, 2]))),
        ("divmod", lambda L: divmod(L.tensor([7]), 2)),
        ("round builtin", lambda L: (round(L.tensor(2.567), 2), round(L.tensor(2.567)))),
        ("math.floor", lambda L: math.floor(L.tensor(2.5))),
    ]
    assert _sweep(torch, cases) == []


# --- without torch ----------------------------------------------------------------------------------

def test_metadata(device):
    x = npusim.arange(24.0, device=device).reshape(2, 3, 4)
    assert x.shape == (2, 3, 4) and isinstance(x.shape, npusim.Size) and x.size() == x.shape
    assert x.size(-1) == 4 and x.dim() == 3 and x.ndim == 3 and x.numel() == 24 and len(x) == 2
    assert x.dtype is npusim.float32 and x.device.type == device and x.element_size() == 4 and x.nbytes == 96
    assert x.stride() == (12, 4, 1) and x.storage_offset() == 0 and x.is_contiguous()
    v = x[1, :, 1:]
    assert v.storage_offset() == 13 and v.stride() == (4, 1) and not v.is_contiguous()
    assert v.data_ptr() == x.data_ptr() + 13 * 4 and v.untyped_storage().data_ptr() == x.data_ptr()
    assert x.untyped_storage().nbytes() == 96 and len(x.untyped_storage()) == 96
    assert repr(x.shape) == "npusim.Size([2, 3, 4])" and repr(npusim.tensor(1.0).shape) == "npusim.Size([])"
    assert x.shape[1:] == (3, 4) and isinstance(x.shape[1:], npusim.Size) and x.shape.numel() == 24
    with pytest.raises(IndexError, match=r"^Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)$"):
        x.size(3)


def test_python_number_conversions(device):
    i = npusim.tensor([7], device=device)
    f = npusim.tensor(2.5, device=device)
    b = npusim.tensor(True, device=device)
    assert i.item() == 7 and type(i.item()) is int and f.item() == 2.5 and type(f.item()) is float
    assert b.item() is True and npusim.tensor(1.5, dtype=npusim.bfloat16).item() == 1.5
    assert int(f) == 2 and float(i) == 7.0 and bool(f) and not bool(npusim.tensor(0.0)) and complex(f) == 2.5
    assert [10, 20, 30][npusim.tensor(2)] == 30 and i.tolist() == [7] and f.tolist() == 2.5
    assert npusim.arange(4, device=device).reshape(2, 2).tolist() == [[0, 1], [2, 3]]
    assert npusim.tensor([1.5], dtype=npusim.bfloat16).tolist() == [1.5]
    with pytest.raises(RuntimeError, match="^a Tensor with 2 elements cannot be converted to Scalar$"):
        npusim.ones(2).item()
    with pytest.raises(RuntimeError, match="^Boolean value of Tensor with more than one value is ambiguous$"):
        bool(npusim.ones(2))
    with pytest.raises(RuntimeError, match="^Boolean value of Tensor with no values is ambiguous$"):
        bool(npusim.ones(0))
    with pytest.raises(ValueError, match="^only one element tensors can be converted to Python scalars$"):
        int(npusim.ones(2))
    with pytest.raises(TypeError, match="^only integer tensors of a single element can be converted to an index$"):
        [1, 2][npusim.tensor(1.0)]
    with pytest.raises(TypeError, match="^len\\(\\) of a 0-d tensor$"):
        len(npusim.tensor(1.0))
    with pytest.raises(TypeError, match="^iteration over a 0-d tensor$"):
        iter(npusim.tensor(1.0))


def test_iteration_gives_views(device):
    x = npusim.arange(6.0, device=device).reshape(2, 3)
    rows = list(x)
    assert len(rows) == 2 and rows[1]._base is x._base and host(rows[1]).tolist() == [3.0, 4.0, 5.0]
    rows[0].add_(10)
    assert host(x)[0].tolist() == [10.0, 11.0, 12.0]


def test_numpy_conversion_rules():
    x = npusim.arange(6.0).reshape(2, 3)
    a = x.numpy()
    assert a.ctypes.data == x.data_ptr() and a.tolist() == x.tolist()
    assert np.asarray(x).ctypes.data == x.data_ptr() and np.asarray(x, dtype=np.int64).dtype == np.int64
    with pytest.raises(TypeError, match="^Got unsupported ScalarType BFloat16$"):
        npusim.ones(2, dtype=npusim.bfloat16).numpy()
    with pytest.raises(TypeError, match="^Got unsupported ScalarType BFloat16$"):
        np.asarray(npusim.ones(2, dtype=npusim.bfloat16))
    with pytest.raises(RuntimeError, match=r"^Can't call numpy\(\) on Tensor that requires grad. Use "
                                           r"tensor.detach\(\).numpy\(\) instead.$"):
        npusim.ones(2, requires_grad=True).numpy()
    assert npusim.ones(2, requires_grad=True).numpy(force=True).tolist() == [1.0, 1.0]


def test_dlpack_round_trip_with_numpy():
    x = npusim.arange(6.0).reshape(2, 3)[:, 1:]
    a = np.from_dlpack(x)
    assert np.shares_memory(a, x.numpy()) and a.tolist() == x.tolist() and x.__dlpack_device__() == (1, 0)
    back = npusim.from_dlpack(a)
    assert back.data_ptr() == x.data_ptr() and back.stride() == x.stride() and back.tolist() == x.tolist()
    n = np.arange(4, dtype=np.int16)
    t = npusim.from_dlpack(n)
    t.add_(1)
    assert n.tolist() == [1, 2, 3, 4] and t.dtype is npusim.int16
    with pytest.raises(BufferError, match=r"^Can't export tensors that require gradient, use tensor.detach\(\)$"):
        npusim.ones(2, requires_grad=True).__dlpack__()


def test_to_an_int_means_an_accelerator_index():
    # torch reads an int device as an index of the current accelerator: here the npu
    x = npusim.ones(2)
    assert x.to(0).device == npusim.device("npu", 0) == npusim.device(0)
    assert npusim.ones(2, device=0).device == npusim.device("npu:0")
    n = npusim.npu.device_count()
    with pytest.raises(RuntimeError, match=f"^Invalid device npu:{n}"):
        x.to(n)


def test_to_and_casts(device):
    x = npusim.arange(6, device=device).reshape(2, 3)
    assert x.to(npusim.int64) is x and x.to(device) is x and x.to(x) is x
    for name, dt in [("float", npusim.float32), ("double", npusim.float64), ("half", npusim.float16),
                     ("bfloat16", npusim.bfloat16), ("int", npusim.int32), ("long", npusim.int64),
                     ("short", npusim.int16), ("char", npusim.int8), ("byte", npusim.uint8), ("bool", npusim.bool)]:
        y = getattr(x, name)()
        assert y.dtype is dt and y.shape == x.shape and y.device == x.device
    assert host(x.float()).tolist() == host(x).tolist()
    c = x.to(npusim.int64, copy=True)
    assert c is not x and c.data_ptr() != x.data_ptr()
    assert x.to(dtype=npusim.float64, device=device).dtype is npusim.float64
    assert x.type() == ("npusim.LongTensor" if device == "cpu" else f"npusim.{device}.LongTensor")
    assert x.type(npusim.float16).dtype is npusim.float16
    assert host(npusim.tensor([1.7, -1.7, 300.0], device=device).to(npusim.int16)).tolist() == [1, -1, 300]
    with pytest.raises(TypeError, match=r"^to\(\) received an invalid combination of arguments - got \(foo=int, \), "
                                        r"but expected one of:"):
        x.to(foo=1)
    with pytest.raises(ValueError, match="^invalid type: 'foo'$"):
        x.type("foo")


def test_new_methods(device):
    x = npusim.ones(2, dtype=npusim.int16, device=device)
    for r in (x.new_zeros(2, 3), x.new_ones((2, 3)), x.new_empty(2, 3), x.new_full((2, 3), 7)):
        assert r.shape == (2, 3) and r.dtype is npusim.int16 and r.device == x.device
    assert host(x.new_full((2,), 7)).tolist() == [7, 7] and x.new_zeros(2, dtype=npusim.float64).dtype is npusim.float64
    t = x.new_tensor([1.5, 2.5])
    assert t.dtype is npusim.int16 and host(t).tolist() == [1, 2]
    assert npusim.ones(1, device=device).new_ones(2, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype can require gradients$"):
        x.new_zeros(2, requires_grad=True)
    with pytest.raises(TypeError, match=r"^new_zeros\(\): argument 'size' \(position 1\) must be tuple of ints, not "
                                        r"float$"):
        x.new_zeros(2.5)


def test_pickle_and_deepcopy(device):
    x = npusim.arange(6.0, device=device).reshape(2, 3)
    y = pickle.loads(pickle.dumps(x))
    assert y.device == x.device and y.dtype is x.dtype and host(y).tolist() == host(x).tolist()
    assert y.data_ptr() != x.data_ptr()
    b = pickle.loads(pickle.dumps(npusim.ones(2, dtype=npusim.bfloat16)))
    assert b.dtype is npusim.bfloat16 and b.tolist() == [1.0, 1.0]
    p = npusim.ones(2, requires_grad=True, device=device)
    q = copy.deepcopy(p)
    assert q.requires_grad and q.is_leaf and q.data_ptr() != p.data_ptr()
    row, full = copy.deepcopy([x[1], x])
    assert full.data_ptr() != x.data_ptr() and host(full).tolist() == host(x).tolist()
    if device == "cpu":  # memory shared before the copy stays shared after it
        assert row.data_ptr() == full.data_ptr() + 12
    with pytest.raises(RuntimeError, match="^Only Tensors created explicitly by the user"):
        copy.deepcopy(p * 2)
    s = copy.copy(x)
    assert s is not x and s.data_ptr() == x.data_ptr()


def test_hash_contains_and_identity():
    x = npusim.arange(4)
    assert hash(x) == id(x) and len({x, x.view(4)}) == 2
    assert 3 in x and npusim.tensor(2) in x and 9 not in x
    with pytest.raises(RuntimeError, match=r"^Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                                           r"<class 'str'>.$"):
        "a" in x
    with pytest.warns(UserWarning, match="Tensor.T is deprecated on 0-D tensors"):
        npusim.tensor(1.0).T
