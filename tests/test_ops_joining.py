"""Joining tensors: cat (concat, concatenate) and stack, with their out= forms.

Values are checked against NumPy on every device; dtypes, shapes, warnings and
error messages against PyTorch (the ``oracle`` tests).
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import npusim
from conftest import host

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"]
OVERLAP = ("unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
           "memory location. Please clone() the tensor before performing the operation.")


def make(shape, dtype, device, seed=0):
    g = np.random.default_rng(seed)
    v = g.integers(0, 2, shape).astype(bool) if dtype == "bool" else g.integers(0, 100, shape)
    return npusim.tensor(v, dtype=getattr(npusim, dtype), device=device)


def expected_dtype(*dtypes):
    r = getattr(npusim, dtypes[0])
    for d in dtypes[1:]:
        r = npusim.promote_types(r, getattr(npusim, d))
    return r


def as_np(t, dtype):
    """``t``'s values as NumPy holds them after a cast to ``dtype`` (bfloat16 read as float32)."""
    return host(t.to(dtype))


# --- cat ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_cat_matches_numpy(device, dtype, dim):
    ts = [make((2, 3, 4), dtype, device, 1), make((2, 3, 4), dtype, device, 2)]
    ts[1] = ts[1].narrow(dim, 0, 1)
    r = npusim.cat(ts, dim)
    assert r.dtype is getattr(npusim, dtype) and r.device == ts[0].device
    np.testing.assert_array_equal(host(r), np.concatenate([host(t) for t in ts], axis=dim))
    assert r.is_contiguous()


def test_cat_of_one_tensor_is_a_copy(device):
    t = make((2, 3), "int64", device)
    r = npusim.cat([t])
    r[0, 0] = -1
    assert host(t)[0, 0] != -1


def test_cat_of_strided_views(device):
    base = make((4, 6), "float32", device)
    parts = [base.t(), base[1:3].t(), base[::2].t()]
    r = npusim.cat(parts, 1)
    np.testing.assert_array_equal(host(r), np.concatenate([host(p) for p in parts], axis=1))
    assert r.is_contiguous()


@pytest.mark.parametrize("dtypes", [("int32", "float16"), ("bool", "uint8", "int8"), ("bfloat16", "float16"),
                                    ("int64", "float32"), ("bool", "bool"), ("uint8", "int64")])
def test_cat_and_stack_promote_across_inputs(device, dtypes):
    ts = [make((2, 2), d, device, i) for i, d in enumerate(dtypes)]
    want = expected_dtype(*dtypes)
    for r, axis_fn in ((npusim.cat(ts), np.concatenate), (npusim.stack(ts), np.stack)):
        assert r.dtype is want
        np.testing.assert_array_equal(host(r), axis_fn([as_np(t, want) for t in ts]))


def test_cat_skips_one_dimensional_empty_tensors(device):
    a = make((2, 3), "float32", device)
    empty = npusim.empty(0, dtype=npusim.float64, device=device)
    r = npusim.cat([empty, a, empty], 1)
    assert r.shape == (2, 3) and r.dtype is npusim.float64  # still part of the type promotion
    np.testing.assert_array_equal(host(r), host(a))
    assert npusim.cat([empty, empty], 5).shape == (0,)  # the dim is not checked when every tensor is skipped
    with pytest.raises(IndexError, match=re.escape("Dimension out of range (expected to be in range of [-2, 1], "
                                                   "but got 2)")):
        npusim.cat([empty, a], 2)


def test_cat_of_empty_tensors_with_other_shapes(device):
    a = npusim.ones(0, 3, device=device)
    b = npusim.ones(2, 3, device=device)
    np.testing.assert_array_equal(host(npusim.cat([a, b])), np.ones((2, 3)))
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0. Expected size 2 but "
                                           "got size 3 for tensor number 1 in the list."):
        npusim.cat([npusim.ones(0, 2, device=device), b])


def test_axis_is_accepted_for_dim(device):
    ts = [make((2, 3), "int64", device, 1), make((2, 3), "int64", device, 2)]
    assert npusim.cat(ts, axis=1).shape == (2, 6)
    assert npusim.stack(ts, axis=-1).shape == (2, 3, 2)


def test_concat_and_concatenate_are_cat(device):
    ts = [make((2,), "int64", device, 1), make((3,), "int64", device, 2)]
    for fn in (npusim.concat, npusim.concatenate):
        np.testing.assert_array_equal(host(fn(ts)), np.concatenate([host(t) for t in ts]))


def test_cat_out_writes_into_out(device):
    ts = [make((2, 3), "int64", device, 1), make((1, 3), "int64", device, 2)]
    want = np.concatenate([host(t) for t in ts])
    out = npusim.empty(3, 3, dtype=npusim.int64, device=device)
    version = out._version
    assert npusim.cat(ts, out=out) is out and out._version > version
    np.testing.assert_array_equal(host(out), want)
    wider = npusim.empty(3, 3, dtype=npusim.float64, device=device)
    npusim.cat(ts, out=wider)  # int64 -> float64 is a permitted cast
    np.testing.assert_array_equal(host(wider), want.astype(np.float64))
    strided = npusim.zeros(3, 6, dtype=npusim.int64, device=device)[:, ::2]
    npusim.cat(ts, out=strided)
    np.testing.assert_array_equal(host(strided), want)


def test_cat_out_is_resized_with_torch_warning(device):
    ts = [make((2,), "float32", device, 1), make((3,), "float32", device, 2)]
    out = npusim.empty(2, 2, device=device)
    with pytest.warns(UserWarning, match=re.escape("An output with one or more elements was resized since it had "
                                                   "shape [2, 2], which does not match the required output shape "
                                                   "[5]")):
        npusim.cat(ts, out=out)
    assert out.shape == (5,)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        npusim.cat(ts, out=npusim.empty(0, device=device))


def test_out_refuses_inputs_that_share_its_memory(device):
    x = npusim.arange(12.0, device=device)
    with pytest.raises(RuntimeError, match=re.escape(OVERLAP)):
        npusim.cat([x[:3], x[3:6]], out=x[5:11])
    with pytest.raises(RuntimeError, match=re.escape(OVERLAP)):
        npusim.stack([x[:3], x[3:6]], out=x[:6].view(2, 3))
    npusim.cat([x[:3], x[3:6]], out=x[6:])  # disjoint views of one buffer are fine
    np.testing.assert_array_equal(host(x), [0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5])


def test_empty_tensors_take_in_place_writes_and_outs(device):
    # an empty tensor shares no element with itself (CuPy gives empty arrays zero strides), as torch says
    x = npusim.zeros(0, 3, device=device)
    x.add_(1).lerp_(npusim.ones(0, 3, device=device), 0.5).mul_(2)
    npusim.cat([x, x], out=npusim.empty(0, 3, device=device))
    assert x.shape == (0, 3) and x._version == 3


def test_out_overlapping_a_strided_input_still_gets_the_right_values(device):
    x = npusim.arange(12.0, device=device)
    want = np.concatenate([host(x)[:3], host(x)[::2]])
    npusim.cat([x[:3], x[::2]], out=x[3:12])  # torch cannot tell, so it does not refuse; the result is exact
    np.testing.assert_array_equal(host(x)[3:], want)


def test_cat_out_refuses_a_narrowing_cast(device):
    ts = [make((2,), "float32", device)]
    with pytest.raises(TypeError, match="torch.cat\\(\\): input types can't be cast to the desired output type Long"):
        npusim.cat(ts, out=npusim.empty(2, dtype=npusim.int64, device=device))
    with pytest.raises(TypeError, match="can't be cast to the desired output type Bool"):
        npusim.stack([make((2,), "int64", device)], out=npusim.empty(0, dtype=npusim.bool, device=device))


# --- stack -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_stack_matches_numpy(device, dtype, dim):
    ts = [make((2, 3), dtype, device, i) for i in range(3)]
    r = npusim.stack(ts, dim)
    assert r.dtype is getattr(npusim, dtype)
    np.testing.assert_array_equal(host(r), np.stack([host(t) for t in ts], axis=dim))
    assert r.is_contiguous()


def test_stack_of_scalars_and_views(device):
    scalars = [npusim.tensor(v, device=device) for v in (1.0, 2.0, 3.0)]
    np.testing.assert_array_equal(host(npusim.stack(scalars)), [1.0, 2.0, 3.0])
    base = make((3, 4), "int32", device)
    r = npusim.stack([base.t(), base.t().contiguous()], 1)
    np.testing.assert_array_equal(host(r), np.stack([host(base).T, host(base).T], 1))


def test_stack_out_writes_into_out(device):
    ts = [make((2,), "int16", device, i) for i in range(3)]
    out = npusim.empty(0, dtype=npusim.int32, device=device)
    assert npusim.stack(ts, 1, out=out) is out
    assert out.shape == (2, 3) and out.dtype is npusim.int32
    np.testing.assert_array_equal(host(out), np.stack([host(t) for t in ts], 1))


# --- errors ----------------------------------------------------------------------------------------------------

def _o(T, *shape, d="cpu", dtype="float32"):
    """Ones from library ``T`` (npusim, or torch for the oracle)."""
    return T.ones(*shape, device=d, dtype=getattr(T, dtype))


ERRORS = [
    (lambda T, d: T.cat([]), ValueError, r"torch.cat\(\): expected a non-empty list of Tensors"),
    (lambda T, d: T.cat([T.tensor(1.0, device=d), _o(T, 2, d=d)]), RuntimeError,
     r"zero-dimensional tensor \(at position 0\) cannot be concatenated"),
    (lambda T, d: T.cat([_o(T, 2, d=d), T.tensor(1.0, device=d)]), RuntimeError,
     r"zero-dimensional tensor \(at position 1\) cannot be concatenated"),
    (lambda T, d: T.cat([_o(T, 2, 3, d=d), _o(T, 3, 3, d=d)], 1), RuntimeError,
     re.escape("Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number "
               "1 in the list.")),
    (lambda T, d: T.cat([_o(T, 2, 2, d=d), _o(T, 0, 2, d=d), _o(T, 2, 3, d=d)]), RuntimeError,
     "Expected size 2 but got size 3 for tensor number 2 in the list"),
    (lambda T, d: T.cat([_o(T, 2, 3, d=d), _o(T, 2, 3, 1, d=d)]), RuntimeError,
     "Tensors must have same number of dimensions: got 2 and 3"),
    (lambda T, d: T.cat([_o(T, 2, d=d), _o(T, 3, d=d), _o(T, 2, 2, d=d)]), RuntimeError,
     "Tensors must have same number of dimensions: got 1 and 2"),
    (lambda T, d: T.cat([_o(T, 2, 3, d=d)], 2), IndexError,
     re.escape("Dimension out of range (expected to be in range of [-2, 1], but got 2)")),
    (lambda T, d: T.cat([_o(T, 2, 3, d=d)], -3), IndexError,
     re.escape("Dimension out of range (expected to be in range of [-2, 1], but got -3)")),
    (lambda T, d: T.cat([_o(T, 2, 3, d=d)], 1.5), TypeError, r"cat\(\): argument 'dim' .*must be int, not float"),
    (lambda T, d: T.cat(_o(T, 2, 3, d=d)), TypeError,
     r"cat\(\): argument 'tensors' \(position 1\) must be tuple of Tensors, not Tensor"),
    (lambda T, d: T.cat([_o(T, 2, 2, d=d), _o(T, 2, 3, d=d)], out=T.empty(4, 2, dtype=T.int64, device=d)),
     TypeError, "torch.cat\\(\\): input types can't be cast to the desired output type Long"),
    (lambda T, d: T.stack([]), RuntimeError, "stack expects a non-empty TensorList"),
    (lambda T, d: T.stack([_o(T, 2, d=d), _o(T, 3, d=d)]), RuntimeError,
     re.escape("stack expects each tensor to be equal size, but got [2] at entry 0 and [3] at entry 1")),
    (lambda T, d: T.stack([_o(T, 2, d=d), _o(T, 2, d=d), _o(T, 2, 1, d=d)]), RuntimeError,
     re.escape("stack expects each tensor to be equal size, but got [2] at entry 0 and [2, 1] at entry 2")),
    (lambda T, d: T.stack([T.tensor(1.0, device=d), _o(T, 1, d=d)]), RuntimeError,
     re.escape("stack expects each tensor to be equal size, but got [] at entry 0 and [1] at entry 1")),
    (lambda T, d: T.stack([_o(T, 2, d=d), _o(T, 2, d=d)], 2), IndexError,
     re.escape("Dimension out of range (expected to be in range of [-2, 1], but got 2)")),
    (lambda T, d: T.stack([_o(T, 2, 2, d=d), _o(T, 2, 3, d=d)], out=T.empty(0, dtype=T.int64, device=d)),
     RuntimeError, "stack expects each tensor to be equal size"),
    (lambda T, d: T.stack(_o(T, 2, d=d)), TypeError,
     r"stack\(\): argument 'tensors' \(position 1\) must be tuple of Tensors, not Tensor"),
]


@pytest.mark.parametrize("build, exc, message", ERRORS, ids=[e[2][:50] for e in ERRORS])
def test_bad_inputs_raise_torch_errors(device, build, exc, message):
    with pytest.raises(exc, match=message):
        build(npusim, device)


def test_devices_must_match():
    if not (hasattr(npusim, "npu") and npusim.npu.is_available()):
        pytest.skip("no npu device to mix with the cpu")
    msg = "Expected all tensors to be on the same device, but found at least two devices, npu:0 and cpu!"
    a, b = npusim.ones(2, device="npu"), npusim.ones(2)
    for fn in (npusim.cat, npusim.stack):
        with pytest.raises(RuntimeError, match=msg):
            fn([a, b])
        with pytest.raises(RuntimeError, match="Expected out tensor to have device npu:0, but got cpu instead"):
            fn([a, a], out=npusim.empty(0))


# --- against PyTorch ---------------------------------------------------------------------------------------------

def _both(torch, build):
    results = []
    for lib in (torch, npusim):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                results.append(("ok", build(lib)))
            except Exception as e:  # noqa: BLE001 - the oracle compares whatever was raised
                results.append(("err", type(e).__name__, str(e).split("\n")[0]))
        results[-1] += (sum("resized" in str(w.message) for w in caught),)
    return results


def _assert_same(torch, build):
    want, got = _both(torch, build)
    assert want[0] == got[0], (want, got)
    if want[0] == "err":
        assert want[1:3] == got[1:3]
        return
    assert want[-1] == got[-1], "resize warnings differ"
    t, n = want[1], got[1]
    assert str(n.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    assert tuple(n.shape) == tuple(t.shape) and n.stride() == t.stride()
    tv = t.numpy() if t.dtype is torch.bool else t.double().numpy()
    np.testing.assert_array_equal(host(n).astype(tv.dtype), tv)


def _t(T, shape, dtype="float32", seed=0):
    g = np.random.default_rng(seed)
    return T.tensor(g.integers(0, 5, shape).astype(np.float64), dtype=getattr(T, dtype))


ORACLE_CASES = [
    lambda T: T.cat([_t(T, (2, 3), "int32"), _t(T, (1, 3), "float16"), _t(T, (0,), "float64")]),
    lambda T: T.cat([_t(T, (0,), "int64"), _t(T, (0,), "int32")]),
    lambda T: T.cat([_t(T, (0,), "int64"), _t(T, (2, 3), "uint8")], -1),
    lambda T: T.cat([_t(T, (2, 3)).t(), _t(T, (3, 2))], 1),
    lambda T: T.cat([_t(T, (2, 2)), _t(T, (2, 2))], 0, out=T.empty(3, 2)),
    lambda T: T.cat([_t(T, (2, 2), "int64"), _t(T, (2, 2), "int64")], 0, out=T.empty(4, 2, dtype=T.uint8)),
    lambda T: T.cat([_t(T, (2, 2), "bool"), _t(T, (2, 2), "int8")], 1, out=T.empty(0, dtype=T.bfloat16)),
    lambda T: T.cat([_t(T, (2,)), _t(T, (0,))], out=T.empty(4, 2)),
    lambda T: T.stack([_t(T, (2, 3), "int32"), _t(T, (2, 3), "bool")], -1),
    lambda T: T.stack([_t(T, ()), _t(T, (), "float64")]),
    lambda T: T.stack([_t(T, (0,)), _t(T, (0,))], 1),
    lambda T: T.stack([_t(T, (2, 2)), _t(T, (2, 2))], 0, out=T.empty(2, 2)),
    lambda T: T.stack([_t(T, (2,), "int64")], out=T.empty(0, dtype=T.float16)),
    lambda T: T.hstack([_t(T, (2,)), _t(T, (3,))]),
    lambda T: T.vstack([_t(T, (3,)), _t(T, (2, 3))]),
]


@pytest.mark.oracle
@pytest.mark.parametrize("case", range(len(ORACLE_CASES)))
def test_results_match_torch(torch, case):
    _assert_same(torch, ORACLE_CASES[case])


@pytest.mark.oracle
@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_error_table_matches_torch(torch, case):
    build = ERRORS[case][0]
    _assert_same(torch, lambda T: build(T, "cpu"))


@pytest.mark.oracle
def test_overlapping_out_is_refused_like_torch(torch):
    def build(T):
        x = T.arange(12.0)
        return T.cat([x[:3], x[3:6]], out=x[5:11])
    _assert_same(torch, build)
