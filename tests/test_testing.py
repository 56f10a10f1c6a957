"""``npusim.testing`` (torch.testing): ``assert_close``'s verdicts, tolerances and messages, and ``make_tensor``'s
ranges, shapes, strides and errors, as torch's."""
from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import host

import npusim
import npusim.testing


def _outcome(lib, actual, expected, **kw):
    try:
        lib.testing.assert_close(actual, expected, **kw)
    except Exception as e:  # noqa: BLE001 - the type is part of what is compared
        # dtype reprs name the library (npusim.float32 / torch.float32)
        return type(e).__name__, str(e).replace("npusim.", "torch.")
    return None


def _t(lib, x, **kw):
    return lib.tensor(x, **kw)


PAIRS = {
    "float_one_off": lambda L: (_t(L, [1.0, 2.0, 3.0]), _t(L, [1.0, 2.5, 3.0])),
    "int_matrix": lambda L: (_t(L, [[1, 2], [3, 4]]), _t(L, [[1, 2], [3, 7]])),
    "uint8": lambda L: (_t(L, [1, 2], dtype=L.uint8), _t(L, [1, 200], dtype=L.uint8)),
    "bool": lambda L: (_t(L, [True, False]), _t(L, [True, True])),
    "zero_dim": lambda L: (_t(L, 1.5), _t(L, 2.0)),
    "nan_both": lambda L: (_t(L, [1.0, math.nan]), _t(L, [1.0, math.nan])),
    "nan_actual": lambda L: (_t(L, [1.0, math.nan]), _t(L, [1.0, 2.0])),
    "inf": lambda L: (_t(L, [math.inf, 1.0]), _t(L, [math.inf, 1.0])),
    "near_zero": lambda L: (_t(L, [0.0, 1.0]), _t(L, [1e-3, 1.0])),
    "within_float32_tol": lambda L: (_t(L, [100.0]), _t(L, [100.0001])),
    "dtypes_differ": lambda L: (_t(L, [1.0, 2.0], dtype=L.float64), _t(L, [1.0, 2.0])),
    "shapes_differ": lambda L: (_t(L, [1.0, 2.0]), _t(L, [1.0, 2.0, 3.0])),
    "strides_differ": lambda L: (_t(L, [[1.0, 2.0], [3.0, 4.0]]).t(), _t(L, [[1.0, 3.0], [2.0, 4.0]])),
    "float16": lambda L: (_t(L, [1.0, 2.0], dtype=L.float16), _t(L, [1.0, 2.001], dtype=L.float16)),
    "bfloat16": lambda L: (_t(L, [1.0, 2.0], dtype=L.bfloat16), _t(L, [1.0, 2.03], dtype=L.bfloat16)),
    "empty": lambda L: (_t(L, []), _t(L, [])),
    "floats": lambda L: (1.0, 1.1),
    "ints": lambda L: (1, 2),
    "int_and_float": lambda L: (1, 1.0),
    "numpy_scalars": lambda L: (np.float32(1.0), 1.0),
    "booleans": lambda L: (True, False),
    "numpy_bool": lambda L: (np.bool_(True), True),
    "none": lambda L: (None, 1),
    "nan_scalars": lambda L: (math.nan, math.nan),
    "strings": lambda L: ("a", "b"),
    "sequence": lambda L: ([_t(L, [1.0]), 2], [_t(L, [1.0]), 3]),
    "sequence_lengths": lambda L: ([1, 2], (1, 2, 3)),
    "mapping": lambda L: ({"a": _t(L, [1.0]), "b": 2}, {"a": _t(L, [1.5]), "b": 2}),
    "mapping_keys": lambda L: ({"a": 1, "c": 2}, {"b": 1, "c": 2}),
    "numpy_arrays": lambda L: (np.array([1.0, 2.0]), np.array([1.0, 2.1])),
    "numpy_arrays_close": lambda L: (np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-9])),
}
OPTIONS = {
    "defaults": {},
    "exact": {"rtol": 0, "atol": 0},
    "loose": {"rtol": 0.3, "atol": 0.0},
    "equal_nan": {"equal_nan": True},
    "no_dtype_check": {"check_dtype": False},
    "only_rtol": {"rtol": 1e-3},
    "check_stride": {"check_stride": True},
    "msg": {"msg": "custom message"},
    "msg_callable": {"msg": lambda m: "prefix: " + m},
}


@pytest.mark.oracle
@pytest.mark.parametrize("pair", list(PAIRS))
def test_assert_close_verdicts_and_messages_match_torch(torch, pair):
    for options in OPTIONS.values():
        assert _outcome(npusim, *PAIRS[pair](npusim), **options) == _outcome(torch, *PAIRS[pair](torch), **options)


@pytest.mark.oracle
@pytest.mark.parametrize("pair", ["float_one_off", "int_matrix", "bool", "zero_dim", "nan_actual", "mapping",
                                  "strides_differ", "float16"])
def test_assert_close_on_the_device_says_what_torch_says(torch, device, pair):
    def on(x):
        if isinstance(x, dict):
            return {k: on(v) for k, v in x.items()}
        return x.to(device) if isinstance(x, npusim.Tensor) else x

    for options in OPTIONS.values():
        actual, expected = PAIRS[pair](npusim)
        assert _outcome(npusim, on(actual), on(expected), **options) == _outcome(torch, *PAIRS[pair](torch),
                                                                                  **options)


def test_devices_are_checked_unless_told_not_to(device):
    if device == "cpu":
        pytest.skip("needs a second device")
    a, b = npusim.ones(2), npusim.ones(2, device=device)
    with pytest.raises(AssertionError, match="^The values for attribute 'device' do not match: cpu != npu:0.$"):
        npusim.testing.assert_close(a, b)
    npusim.testing.assert_close(a, b, check_device=False)
    with pytest.raises(AssertionError, match="Mismatched elements: 1 / 2"):
        npusim.testing.assert_close(a, npusim.tensor([1.0, 2.0], device=device), check_device=False)


def test_subclasses_are_compared_unless_disallowed():
    p = npusim.nn.Parameter(npusim.ones(2))
    npusim.testing.assert_close(p, npusim.ones(2))
    with pytest.raises(TypeError, match="No comparison pair was able to handle inputs of type"):
        npusim.testing.assert_close(p, npusim.ones(2), allow_subclasses=False)


@pytest.mark.oracle
def test_assert_allclose_is_deprecated_and_looser_as_torch(torch):
    for lib in (torch, npusim):
        with pytest.warns(FutureWarning, match="assert_allclose"):
            lib.testing.assert_allclose(lib.tensor([1.0]), [1.00005])
        with pytest.warns(FutureWarning), pytest.raises(AssertionError, match="Tensor-likes are not close"):
            lib.testing.assert_allclose(lib.tensor([1.0]), [1.001])


def test_import_and_attribute():
    import importlib
    assert importlib.import_module("npusim.testing") is npusim.testing
    assert npusim.testing.make_tensor is npusim.testing._creation.make_tensor
    from npusim.missing_names import explain
    assert explain("testing") == ""


# --- make_tensor ----------------------------------------------------------------------------------------------

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def _range(t):
    v = host(t.float() if t.dtype == npusim.bfloat16 else t)
    return v.min().item(), v.max().item()


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", DTYPES)
def test_make_tensor_default_ranges_match_torch(torch, device, dtype):
    t = torch.testing.make_tensor(4000, dtype=getattr(torch, dtype), device="cpu")
    n = npusim.testing.make_tensor(4000, dtype=getattr(npusim, dtype), device=device)
    assert n.dtype == getattr(npusim, dtype) and n.device.type == device and tuple(n.shape) == (4000,)
    t_lo, t_hi = t.float().min().item(), t.float().max().item()
    n_lo, n_hi = _range(n)
    if dtype in ("bool", "uint8", "int8", "int16", "int32", "int64"):
        # 4000 draws hit every value of [low, high) in both
        assert (n_lo, n_hi) == (t_lo, t_hi)
    else:
        assert -9 <= n_lo < -8.9 and 8.9 < n_hi <= 9 and -9 <= t_lo < -8.9 and 8.9 < t_hi <= 9


@pytest.mark.oracle
@pytest.mark.parametrize("dtype,low,high", [("float32", -1, 1), ("float64", 2.5, 3), ("int64", -3, 4),
                                            ("uint8", -5, 3.5), ("int8", 100, 1000), ("float16", 0.5, 0.75),
                                            ("bool", 1, None), ("float32", -1e39, 1e39)])
def test_make_tensor_explicit_ranges_match_torch(torch, device, dtype, low, high):
    t = torch.testing.make_tensor(3000, dtype=getattr(torch, dtype), device="cpu", low=low, high=high)
    n = npusim.testing.make_tensor(3000, dtype=getattr(npusim, dtype), device=device, low=low, high=high)
    t_lo, t_hi = t.double().min().item(), t.double().max().item()
    n_lo, n_hi = _range(n)
    if dtype.startswith("float"):
        span = t_hi - t_lo
        assert abs(n_lo - t_lo) <= 0.01 * span and abs(n_hi - t_hi) <= 0.01 * span
        assert n_lo >= max(low, -npusim.finfo(getattr(npusim, dtype)).max)
    else:
        assert (n_lo, n_hi) == (t_lo, t_hi)


@pytest.mark.oracle
@pytest.mark.parametrize("shape", [(2, 3), ((2, 3),), ([4],), (), (0, 3), (1,), (3, 1)])
@pytest.mark.parametrize("noncontiguous", [False, True])
def test_make_tensor_shapes_and_strides_match_torch(torch, device, shape, noncontiguous):
    t = torch.testing.make_tensor(*shape, dtype=torch.float32, device="cpu", noncontiguous=noncontiguous)
    n = npusim.testing.make_tensor(*shape, dtype=npusim.float32, device=device, noncontiguous=noncontiguous)
    assert tuple(n.shape) == tuple(t.shape)
    assert n.stride() == t.stride() and n.is_contiguous() == t.is_contiguous()
    assert n.storage_offset() == t.storage_offset()


@pytest.mark.oracle
def test_make_tensor_options_match_torch(torch, device):
    for lib, dev in ((torch, "cpu"), (npusim, device)):
        t = lib.testing.make_tensor(2, 3, 4, 5, dtype=lib.float32, device=dev, memory_format=lib.channels_last,
                                    requires_grad=True)
        assert t.stride() == (60, 1, 15, 3) and t.requires_grad and t.is_leaf
        z = lib.testing.make_tensor(5000, dtype=lib.int8, device=dev, low=-1, high=2, exclude_zero=True)
        assert sorted(set(z.tolist())) == [-1, 1]
        f = lib.testing.make_tensor(5000, dtype=lib.float16, device=dev, low=0, high=1e-3, exclude_zero=True)
        assert bool((f != 0).all())
        assert not lib.testing.make_tensor(3, dtype=lib.int32, device=dev).requires_grad


@pytest.mark.oracle
def test_make_tensor_errors_match_torch(torch):
    calls = [
        ({"dtype": "float32", "low": math.nan}, ValueError),
        ({"dtype": "float32", "low": 2, "high": 1}, ValueError),
        ({"dtype": "int64", "low": 3, "high": 3}, ValueError),
        ({"dtype": "uint8", "low": -10, "high": -1}, ValueError),
        ({"dtype": "int8", "low": 200, "high": 300}, ValueError),
        ({"dtype": "int32", "requires_grad": True}, ValueError),
        ({"dtype": "float32", "noncontiguous": True, "memory_format": "contiguous_format"}, ValueError),
    ]
    for kw, err in calls:
        msgs = []
        for lib in (torch, npusim):
            kw_lib = {k: getattr(lib, v) if k in ("dtype", "memory_format") else v for k, v in kw.items()}
            with pytest.raises(err) as info:
                lib.testing.make_tensor(2, 2, device="cpu", **kw_lib)
            msgs.append(str(info.value).replace("npusim.", "torch."))
        assert msgs[0] == msgs[1]
    for lib in (torch, npusim):
        with pytest.warns(FutureWarning, match="low==high"):
            t = lib.testing.make_tensor(3, dtype=lib.float32, device="cpu", low=2, high=2)
        assert t.tolist() == [2.0, 2.0, 2.0]


@pytest.mark.oracle
def test_make_tensor_rejects_what_is_not_a_dtype_as_torch(torch):
    msgs = []
    for lib in (torch, npusim):
        with pytest.raises(TypeError) as info:
            lib.testing.make_tensor(2, dtype=float, device="cpu")
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1] and msgs[0].startswith("The requested dtype '<class 'float'>' is not supported")
