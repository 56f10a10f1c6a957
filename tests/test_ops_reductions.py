"""Reductions and scans: sum, mean, prod, max/min, arg-max/min, var/std, norm,
all/any, logsumexp, cumsum/cumprod, softmax/log_softmax.

Values are checked against NumPy on every device; dtypes, shapes, warnings and
error messages against PyTorch (the ``oracle`` tests).
"""
from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest

import npusim
from conftest import host

# The kernels silence NumPy's floating-point RuntimeWarnings (inf/nan are values, as in torch) with a filter
# set at import; pytest's per-test warning capture does not keep filters added while it collected.
pytestmark = pytest.mark.filterwarnings(r"ignore::RuntimeWarning:npusim\.(kernels|native)")

RNG = np.random.default_rng(0)
X3 = RNG.standard_normal((3, 4, 5))
I3 = RNG.integers(-4, 5, size=(3, 4, 5))
NAN, INF = math.nan, math.inf

FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTEGRALS = ["int64", "int32", "uint8", "bool"]
RTOL = {"float64": 1e-12, "float32": 1e-5, "float16": 1e-3, "bfloat16": 8e-3}
DIMS = [None, 0, -1, (0, 2), ()]


def rtol_of(dtype_name):
    return RTOL.get(dtype_name, 0)


def make(values, dtype, device):
    """An npusim tensor of ``dtype`` (a name) holding ``values``."""
    return npusim.tensor(np.asarray(values), dtype=getattr(npusim, dtype), device=device)


def integral_values(dtype):
    if dtype == "bool":
        return I3 > 0
    if dtype == "uint8":
        return np.abs(I3)
    return I3


def np_axes(dim):
    """The NumPy axis for a torch dim argument (torch: None and () mean every dim)."""
    if dim is None or dim == ():
        return None
    return dim


def check(result, expected, dtype_name, *, rtol=None, atol=None):
    """``result`` has ``expected``'s shape, the torch ``dtype_name`` and its values."""
    assert result.dtype is getattr(npusim, dtype_name)
    expected = np.asarray(expected)
    assert tuple(result.shape) == expected.shape
    got = host(result)
    if dtype_name in RTOL:
        r = rtol_of(dtype_name) if rtol is None else rtol
        a = r if atol is None else atol
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=r, atol=a,
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)


# --- values against NumPy, on every device ------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum_mean_prod_of_floats_match_numpy(device, dtype, dim, keepdim):
    x = make(X3, dtype, device)
    ref = host(x).astype(np.float64)
    ax = np_axes(dim)
    dims = list(dim) if isinstance(dim, tuple) else dim
    check(npusim.sum(x, dims, keepdim), np.sum(ref, ax, keepdims=keepdim), dtype)
    check(npusim.mean(x, dims, keepdim), np.mean(ref, ax, keepdims=keepdim), dtype)
    if isinstance(dim, int):
        check(npusim.prod(x, dim, keepdim), np.prod(ref, ax, keepdims=keepdim), dtype)


@pytest.mark.parametrize("dtype", INTEGRALS)
@pytest.mark.parametrize("dim", [None, 1, -1, (0, 2)])
def test_sum_prod_of_integral_inputs_give_int64(device, dtype, dim):
    vals = integral_values(dtype)
    x = make(vals, dtype, device)
    ref = vals.astype(np.int64)
    check(npusim.sum(x, dim), np.sum(ref, np_axes(dim)), "int64")
    if dim is None:   # torch's prod takes no dim=None
        check(npusim.prod(x), np.prod(ref), "int64")
    elif not isinstance(dim, tuple):
        check(npusim.prod(x, dim), np.prod(ref, dim), "int64")


@pytest.mark.parametrize("dtype", FLOATS + ["int32"])
@pytest.mark.parametrize("dim", [None, 0, 2, -2])
def test_max_min_family_matches_numpy(device, dtype, dim):
    vals = X3 if dtype in RTOL else I3
    x = make(vals, dtype, device)
    ref = host(x)
    if dim is None:
        check(npusim.max(x), ref.max(), dtype)
        check(npusim.min(x), ref.min(), dtype)
        check(npusim.argmax(x), ref.argmax(), "int64")
        check(npusim.argmin(x), ref.argmin(), "int64")
        return
    values, indices = npusim.max(x, dim)
    check(values, ref.max(dim), dtype)
    check(indices, ref.argmax(dim), "int64")
    values, indices = npusim.min(x, dim, keepdim=True)
    check(values, ref.min(dim, keepdims=True), dtype)
    check(indices, np.expand_dims(ref.argmin(dim), dim), "int64")
    check(npusim.amax(x, dim), ref.max(dim), dtype)
    other = 0 if dim % 3 else 1
    check(npusim.amin(x, [dim, other], keepdim=True), ref.min((dim, other), keepdims=True), dtype)
    check(npusim.argmax(x, dim, keepdim=True), np.expand_dims(ref.argmax(dim), dim), "int64")
    check(npusim.argmin(x, dim), ref.argmin(dim), "int64")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("dim", [None, 1, (0, 2)])
@pytest.mark.parametrize("correction", [None, 0, 2, 0.5])
def test_var_std_match_numpy(device, dtype, dim, correction):
    x = make(X3, dtype, device)
    ref = host(x).astype(np.float64)
    ax = np_axes(dim)
    ddof = 1 if correction is None else correction
    expected = np.var(ref, ax, ddof=ddof)
    check(npusim.var(x, dim, correction=correction), expected, dtype)
    check(npusim.std(x, dim, correction=correction, keepdim=True), np.sqrt(np.var(ref, ax, ddof=ddof, keepdims=True)),
          dtype)
    s, m = npusim.std_mean(x, dim, correction=correction)
    check(s, np.sqrt(expected), dtype)
    check(m, np.mean(ref, ax), dtype)
    v, m = npusim.var_mean(x, dim, correction=correction, keepdim=True)
    check(v, np.var(ref, ax, ddof=ddof, keepdims=True), dtype)
    check(m, np.mean(ref, ax, keepdims=True), dtype)


def np_vector_norm(a, p, axis=None, keepdims=False):
    a = np.abs(a)
    if p == INF:
        return a.max(axis, keepdims=keepdims)
    if p == -INF:
        return a.min(axis, keepdims=keepdims)
    if p == 0:
        return (a != 0).sum(axis, keepdims=keepdims).astype(np.float64)
    with np.errstate(divide="ignore"):  # 0 ** negative p is inf
        return (a ** p).sum(axis, keepdims=keepdims) ** (1.0 / p)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("p", [2, 1, 0, INF, -INF, 0.5, 3, -1.5, "fro"])
def test_norm_matches_numpy(device, dtype, p):
    vals = X3.copy()
    vals[0, 0, :2] = 0.0
    x = make(vals, dtype, device)
    ref = host(x).astype(np.float64)
    q = 2 if p == "fro" else p
    check(npusim.norm(x, p), np_vector_norm(ref, q), dtype)
    check(npusim.norm(x, p, dim=1, keepdim=True), np_vector_norm(ref, q, 1, True), dtype)
    check(npusim.norm(x, p, dim=(0, 2)), np_vector_norm(ref, q, (0, 2)), dtype)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "float32", "bfloat16"])
def test_all_any_match_numpy(device, dtype):
    vals = (I3 > -3) if dtype == "bool" else np.abs(I3) * (I3 > -3)
    x = make(vals, dtype, device)
    ref = host(x) != 0
    result = "uint8" if dtype == "uint8" else "bool"
    check(npusim.all(x), ref.all(), result)
    check(npusim.any(x), ref.any(), result)
    check(npusim.all(x, 1), ref.all(1), result)
    check(npusim.any(x, -1, keepdim=True), ref.any(-1, keepdims=True), result)
    check(npusim.all(x, (0, 2)), ref.all((0, 2)), result)
    check(npusim.any(x, [0, 1], keepdim=True), ref.any((0, 1), keepdims=True), result)


def np_logsumexp(a, axis, keepdims=False):
    m = a.max(axis, keepdims=True)
    r = np.log(np.exp(a - m).sum(axis, keepdims=True)) + m
    return r if keepdims else np.squeeze(r, axis)


def np_softmax(a, axis):
    e = np.exp(a - a.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("dim", [0, -1, (0, 2)])
def test_logsumexp_matches_numpy(device, dtype, dim):
    x = make(X3 * 30, dtype, device)  # large values: a naive exp would overflow in 16-bit types
    ref = host(x).astype(np.float64)
    check(npusim.logsumexp(x, dim), np_logsumexp(ref, dim), dtype)
    check(npusim.logsumexp(x, dim, keepdim=True), np_logsumexp(ref, dim, True), dtype)


def test_logsumexp_of_integral_input_is_default_float(device):
    x = make(I3, "int32", device)
    check(npusim.logsumexp(x, 1), np_logsumexp(I3.astype(np.float64), 1), "float32")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_and_log_softmax_match_numpy(device, dtype, dim):
    x = make(X3 * 30, dtype, device)
    ref = host(x).astype(np.float64)
    expected = np_softmax(ref, dim)
    check(npusim.softmax(x, dim), expected, dtype, atol=rtol_of(dtype) * 0.1)
    check(x.log_softmax(dim), np.log(expected), dtype, rtol=rtol_of(dtype) * 4)
    check(npusim.softmax(x, dim, dtype=npusim.float64), np_softmax(host(x).astype(np.float64), dim), "float64")


@pytest.mark.parametrize("dtype", FLOATS + INTEGRALS)
@pytest.mark.parametrize("dim", [0, 2, -2])
def test_cumsum_cumprod_match_numpy(device, dtype, dim):
    vals = X3 if dtype in RTOL else integral_values(dtype)
    x = make(vals, dtype, device)
    ref = host(x).astype(np.float64 if dtype in RTOL else np.int64)
    result = dtype if dtype in RTOL else "int64"
    check(npusim.cumsum(x, dim), np.cumsum(ref, dim), result)
    check(x.cumprod(dim), np.cumprod(ref, dim), result)


# --- torch semantics, on every device -----------------------------------------------------------

def test_16_bit_floats_accumulate_in_float32(device):
    # 5000 x 0.1 summed in float16 would stall near 256; torch's CPU gives 500
    for dtype in ("float16", "bfloat16"):
        x = make(np.full(5000, 0.1), dtype, device)
        assert host(npusim.sum(x)).item() == 500.0
        assert abs(host(npusim.mean(x)).item() - 0.1) < 1e-3
        assert host(npusim.cumsum(x, 0))[-1] == 500.0


def test_dtype_argument_casts_the_input_first(device):
    x = make([0.5, 1.5, 2.5], "float32", device)
    check(npusim.sum(x, dtype=npusim.int64), 3, "int64")  # 0 + 1 + 2, not trunc(4.5)
    check(npusim.cumsum(x, 0, dtype=npusim.int32), [0, 1, 3], "int32")
    check(npusim.prod(make([1, 2, 3], "int32", device), dtype=npusim.float64), 6.0, "float64")
    check(npusim.mean(make([1, 2], "int64", device), dtype=npusim.float32), 1.5, "float32")
    check(npusim.sum(make([1.0, 2.0], "float32", device), dtype=npusim.bool), True, "bool")


def test_reductions_over_empty_tensors(device):
    e = make(np.empty((0, 3)), "float32", device)
    check(npusim.sum(e), 0.0, "float32")
    check(npusim.prod(e), 1.0, "float32")
    check(npusim.mean(e), NAN, "float32")
    check(npusim.sum(e, 0), [0.0] * 3, "float32")
    check(npusim.sum(e, 1), np.empty(0), "float32")
    check(npusim.amax(e, 1), np.empty(0), "float32")
    values, indices = npusim.max(e, 1)
    assert values.shape == (0,) and indices.dtype is npusim.int64
    check(npusim.all(e), True, "bool")
    check(npusim.any(e, 0), [False] * 3, "bool")
    check(npusim.logsumexp(e, 0), [-INF] * 3, "float32")
    check(npusim.norm(e), 0.0, "float32")
    check(npusim.softmax(e, 0), np.empty((0, 3)), "float32")
    check(npusim.cumsum(e, 0), np.empty((0, 3)), "float32")


def test_nan_propagates_and_the_first_nan_is_the_extreme(device):
    x = make([[1.0, NAN, 3.0, NAN], [2.0, 0.0, 2.0, -1.0]], "float32", device)
    check(npusim.max(x), NAN, "float32")
    check(npusim.amin(x, 1), [NAN, -1.0], "float32")
    values, indices = npusim.max(x, 1)
    check(values, [NAN, 2.0], "float32")
    check(indices, [1, 0], "int64")  # first NaN; first of the tied maxima
    check(npusim.min(x, 1).indices, [1, 3], "int64")
    check(npusim.argmax(x, 1), [1, 0], "int64")
    check(npusim.argmin(x), 1, "int64")


def test_zero_dim_inputs_reduce_over_nothing(device):
    s = make(2.5, "float32", device)
    for dim in (0, -1):
        check(npusim.sum(s, dim, keepdim=True), 2.5, "float32")
        check(npusim.max(s, dim).values, 2.5, "float32")
        check(npusim.argmax(s, dim, keepdim=True), 0, "int64")
        check(npusim.cumsum(s, dim), 2.5, "float32")
        check(npusim.softmax(s, dim), 1.0, "float32")
        check(npusim.logsumexp(s, dim), 2.5, "float32")
    check(npusim.amax(s, []), 2.5, "float32")
    check(npusim.all(s, 0), True, "bool")
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        check(npusim.var(s), NAN, "float32")


def test_dim_none_and_empty_list_reduce_everything_with_keepdim(device):
    x = make(X3, "float32", device)
    assert npusim.sum(x, [], keepdim=True).shape == (1, 1, 1)
    assert npusim.sum(x, None, keepdim=True).shape == (1, 1, 1)
    assert npusim.amax(x, keepdim=True).shape == (1, 1, 1)
    assert npusim.argmax(x, keepdim=True).shape == (1, 1, 1)
    assert npusim.norm(x, keepdim=True).shape == (1, 1, 1)
    assert npusim.all(x, None, keepdim=True).shape == (1, 1, 1)
    # all.dims with an empty list reduces no dim at all
    check(npusim.ops.aten.all.dims(x, []), host(x) != 0, "bool")


def test_var_correction_at_or_above_the_count_gives_inf_or_nan(device):
    x = make([[0.0, 1.0, 2.0], [4.0, 4.0, 4.0]], "float32", device)
    with pytest.warns(UserWarning, match=re.escape("var(): degrees of freedom is <= 0. Correction should be "
                                                   "strictly less than the reduction factor")):
        check(npusim.var(x, 1, correction=3), [INF, NAN], "float32")
    with pytest.warns(UserWarning, match=r"^std_mean\(\): degrees of freedom"):
        s, m = npusim.std_mean(x, 1, correction=4)
    check(s, [INF, NAN], "float32")
    check(m, [1.0, 4.0], "float32")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check(npusim.var(x, 1, correction=2), [2.0, 0.0], "float32")
        check(npusim.var(x, 1, False), [2 / 3, 0.0], "float32")  # the legacy unbiased flag


def test_logsumexp_handles_infinities(device):
    x = make([[-INF, -INF], [INF, 1.0], [INF, -INF], [NAN, INF], [1000.0, 1000.0]], "float32", device)
    check(npusim.logsumexp(x, 1), [-INF, INF, INF, NAN, 1000.0 + math.log(2)], "float32")


def test_softmax_is_stable_and_infinities_give_nan(device):
    x = make([[1000.0, 0.0], [-INF, -INF], [INF, 1.0]], "float32", device)
    check(npusim.softmax(x, 1), [[1.0, 0.0], [NAN, NAN], [NAN, NAN]], "float32")
    check(npusim.log_softmax(x, 1), [[0.0, -1000.0], [NAN, NAN], [NAN, NAN]], "float32")


def test_softmax_dtype_argument_and_aten_internal_forms(device):
    x = make(X3, "float16", device)
    check(npusim.softmax(x, 1, dtype=npusim.float32), np_softmax(host(x).astype(np.float64), 1), "float32")
    check(npusim.ops.aten._softmax(x, 1, False), np_softmax(host(x).astype(np.float64), 1), "float16",
          atol=1e-4)
    check(npusim.ops.aten._log_softmax(x, -1, False), np.log(np_softmax(host(x).astype(np.float64), -1)),
          "float16", rtol=4e-3)


def test_norm_p_zero_counts_nonzeros_and_negative_p_with_zeros_is_zero(device):
    x = make([[0.0, 3.0, -4.0], [0.0, 0.0, 2.0]], "float32", device)
    check(npusim.norm(x, 0, dim=1), [2.0, 1.0], "float32")
    check(npusim.norm(x, -1), 0.0, "float32")
    check(npusim.norm(x, dim=1, dtype=npusim.float64), [5.0, 2.0], "float64")
    check(npusim.ops.aten.norm.ScalarOpt_dim(x, None, [1]), [5.0, 2.0], "float32")


def test_max_with_dim_returns_named_tuple(device):
    x = make([[1.0, 5.0], [7.0, 2.0]], "float32", device)
    r = npusim.max(x, 1)
    assert isinstance(r, npusim.return_types.max)
    check(r.values, [5.0, 7.0], "float32")
    check(r.indices, [1, 0], "int64")
    r = x.min(dim=0, keepdim=True)
    assert isinstance(r, npusim.return_types.min)
    check(r.indices, [[0, 1]], "int64")


def test_out_variants_write_into_their_tensors(device):
    x = make(X3, "float32", device)
    ref = host(x).astype(np.float64)
    out = npusim.empty((3, 5), device=device)
    v = out._version
    r = npusim.sum(x, 1, out=out)
    assert r is out and out._version > v
    check(out, ref.sum(1), "float32")
    # out= computes in the out tensor's dtype, as torch
    check(npusim.mean(x, 1, out=npusim.empty(0, dtype=npusim.float64, device=device)), ref.mean(1), "float64")
    check(npusim.prod(x, 0, out=npusim.empty(0, device=device)), ref.prod(0), "float32")
    values, indices = npusim.empty(0, device=device), npusim.empty(0, dtype=npusim.int64, device=device)
    r = npusim.max(x, 2, out=(values, indices))
    assert r.values is values and r.indices is indices
    check(values, ref.max(2), "float32")
    check(indices, ref.argmax(2), "int64")
    values, indices = npusim.empty(0, device=device), npusim.empty(0, dtype=npusim.int64, device=device)
    npusim.min(x, 0, keepdim=True, out=(values, indices))
    check(indices, ref.argmin(0)[None], "int64")
    check(npusim.amax(x, (0, 1), out=npusim.empty(0, device=device)), ref.max((0, 1)), "float32")
    check(npusim.argmin(x, 1, out=npusim.empty(0, dtype=npusim.int64, device=device)), ref.argmin(1), "int64")
    check(npusim.var(x, 1, out=npusim.empty(0, dtype=npusim.float64, device=device)), ref.var(1, ddof=1),
          "float64")
    check(npusim.std(x, 1, out=npusim.empty(0, device=device)), ref.std(1, ddof=1), "float32")
    check(npusim.norm(x, 2, 1, out=npusim.empty(0, device=device)), np_vector_norm(ref, 2, 1), "float32")
    check(npusim.all(x, 1, out=npusim.empty(0, dtype=npusim.bool, device=device)), (ref != 0).all(1), "bool")
    check(npusim.any(x, out=npusim.empty(0, dtype=npusim.bool, device=device)), True, "bool")
    check(npusim.logsumexp(x, 1, out=npusim.empty(0, dtype=npusim.float64, device=device)),
          np_logsumexp(ref, 1), "float64", rtol=1e-6)
    check(npusim.cumsum(x, 2, out=npusim.empty(0, dtype=npusim.float64, device=device)), np.cumsum(ref, 2),
          "float64")
    check(npusim.cumprod(x, 2, out=npusim.empty(0, device=device)), np.cumprod(ref, 2), "float32")


def test_out_variants_compute_in_the_out_dtype(device):
    x = make([[0.5, 1.5, 2.5]], "float32", device)
    # a uint8 out truncates the input first, as torch: 0.5 -> 0
    check(npusim.all(x, 1, out=npusim.empty(0, dtype=npusim.uint8, device=device)), [0], "uint8")
    check(npusim.any(x, out=npusim.empty(0, dtype=npusim.uint8, device=device)), 1, "uint8")
    check(npusim.all(x, out=npusim.empty(0, dtype=npusim.bool, device=device)), True, "bool")
    check(npusim.sum(x, 1, out=npusim.empty(1, dtype=npusim.int64, device=device)), [3], "int64")
    check(npusim.cumsum(x, 1, out=npusim.empty(0, dtype=npusim.int64, device=device)), [[0, 1, 3]], "int64")
    big = make([2 ** 30] * 3, "int32", device)
    check(npusim.sum(big, 0, out=npusim.empty((), dtype=npusim.int32, device=device)), -2 ** 30, "int32")


def test_out_with_elements_is_resized_with_a_warning(device):
    x = make(X3, "float32", device)
    out = npusim.empty(7, device=device)
    with pytest.warns(UserWarning, match=r"An output with one or more elements was resized since it had shape "
                                         r"\[7\], which does not match the required output shape \[3, 5\]"):
        npusim.sum(x, 1, out=out)
    assert out.shape == (3, 5)


def test_inplace_cumsum_and_cumprod(device):
    x = make([[1, 2, 3], [4, 5, 6]], "int32", device)
    v = x._version
    assert x.cumsum_(1) is x and x._version > v
    check(x, [[1, 3, 6], [4, 9, 15]], "int32")
    y = make([[1.0, 2.0], [3.0, 4.0]], "float16", device)
    y.cumprod_(0)
    check(y, [[1.0, 2.0], [3.0, 8.0]], "float16")
    z = make(np.full(3000, 0.1), "float16", device)
    assert host(z.cumsum_(0))[-1] == 300.0


# --- bad inputs: the error type and message torch gives ---------------------------------------------

def _t(values, dtype="float32"):
    return lambda L: L.t(values, dtype)


X23 = [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
I23 = [[0, 1, 2], [3, 4, 5]]

# (id, call, exception type, message)
ERRORS = [
    ("sum-dim-out-of-range", lambda L: L.sum(L.t(X23), 2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("sum-duplicate-dim", lambda L: L.sum(L.t(X23), (1, -1)), RuntimeError,
     "dim 1 appears multiple times in the list of dims"),
    ("sum-0d-dim-1", lambda L: L.sum(L.t(2.0), 1), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    ("sum-0d-duplicate", lambda L: L.sum(L.t(2.0), [0, -1]), RuntimeError,
     "dim 0 appears multiple times in the list of dims"),
    ("mean-integral", lambda L: L.mean(L.t(I23, "int64")), RuntimeError,
     "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
     "Got: Long"),
    ("mean-bool-dim", lambda L: L.mean(L.t([True], "bool"), 0), RuntimeError,
     "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
     "Got: Bool"),
    ("mean-integral-dtype", lambda L: L.mean(L.t(X23), dtype=L.int64), RuntimeError,
     "mean(): could not infer output dtype. Optional dtype must be either a floating point or complex dtype. "
     "Got: Long"),
    ("mean-out-cannot-cast", lambda L: L.mean(L.t(X23), 1, out=L.e(2, "int64")), RuntimeError,
     "result type Float can't be cast to the desired output type Long"),
    ("sum-out-dtype-mismatch", lambda L: L.sum(L.t(X23), 1, dtype=L.float64, out=L.e(2, "float32")),
     RuntimeError, "Expected out tensor to have dtype double, but got float instead"),
    ("prod-out-dtype-mismatch", lambda L: L.prod(L.t(X23), 1, dtype=L.bfloat16, out=L.e(2, "float16")),
     RuntimeError, "Expected out tensor to have dtype c10::BFloat16, but got c10::Half instead"),
    ("max-empty", lambda L: L.max(L.e((0, 3))), RuntimeError,
     "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the "
     "'dim' argument."),
    ("min-empty", lambda L: L.min(L.e((0, 3))), RuntimeError,
     "min(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the "
     "'dim' argument."),
    ("max-empty-dim", lambda L: L.max(L.e((0, 3)), -2), IndexError,
     "max(): Expected reduction dim 0 to have non-zero size."),
    ("min-empty-dim-keepdim", lambda L: L.min(L.e((2, 0)), 1, keepdim=True), IndexError,
     "min(): Expected reduction dim 1 to have non-zero size."),
    ("amax-empty", lambda L: L.amax(L.e((0, 3))), RuntimeError,
     "amax(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the "
     "'dim' argument."),
    ("amax-empty-dim-as-given", lambda L: L.amax(L.e((0, 3)), -2), IndexError,
     "amax(): Expected reduction dim -2 to have non-zero size."),
    ("amin-empty-dims-in-order", lambda L: L.amin(L.e((2, 0, 0)), (2, 1)), IndexError,
     "amin(): Expected reduction dim 2 to have non-zero size."),
    ("amax-duplicate-dim", lambda L: L.amax(L.t(X23), (0, -2)), RuntimeError,
     "dim 0 appears multiple times in the list of dims"),
    ("argmax-empty", lambda L: L.argmax(L.e((0, 3))), IndexError,
     "argmax(): Expected reduction dim to be specified for input.numel() == 0."),
    ("argmin-empty-dim", lambda L: L.argmin(L.e((0, 3)), 0), IndexError,
     "argmin(): Expected reduction dim 0 to have non-zero size."),
    ("argmax-bool", lambda L: L.argmax(L.t([True, False], "bool")), RuntimeError,
     "argmax(): does not support bool input"),
    ("argmin-bad-dim", lambda L: L.argmin(L.t(X23), 3), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 3)"),
    ("max-out-values-dtype", lambda L: L.max(L.t(X23), 1, out=(L.e(2, "float64"), L.e(2, "int64"))),
     RuntimeError, "Expected out tensor to have dtype float, but got double instead"),
    ("max-out-indices-int32", lambda L: L.max(L.t(X23), 1, out=(L.e(2), L.e(2, "int32"))), RuntimeError,
     "Expected out tensor to have dtype long int, but got int instead"),
    ("min-out-values-long", lambda L: L.min(L.t(X23), 1, out=(L.e(2, "int64"), L.e(2, "int64"))), RuntimeError,
     "Expected out tensor to have dtype float, but got long int instead"),
    ("max-unary-out-cannot-cast", lambda L: L.max(L.t(X23), out=L.e((), "int64")), RuntimeError,
     "Expected canCast( typeMetaToScalarType(self.dtype()), typeMetaToScalarType(out.dtype())) to be true, but got "
     "false."),
    ("argmax-out-int32", lambda L: L.argmax(L.t(X23), 1, out=L.e(2, "int32")), RuntimeError,
     "Expected out tensor to have dtype long int, but got int instead"),
    ("argmin-out-float", lambda L: L.argmin(L.t(X23), 1, out=L.e(2)), RuntimeError,
     "Expected out tensor to have dtype long int, but got float instead"),
    ("amax-out-dtype", lambda L: L.amax(L.t(X23), 1, out=L.e(2, "float64")), RuntimeError,
     "Expected the dtype for input and out to match, but got Float for input's dtype and Double for out's dtype."),
    ("var-integral", lambda L: L.var(L.t(I23, "int64")), RuntimeError,
     "std and var only support floating point and complex dtypes"),
    ("std-bool-dim", lambda L: L.std(L.t([True, False], "bool"), 0), RuntimeError,
     "std and var only support floating point and complex dtypes"),
    ("var_mean-integral", lambda L: L.var_mean(L.t(I23, "int32")), RuntimeError,
     "var_mean only support floating point and complex dtypes"),
    ("std_mean-integral", lambda L: L.std_mean(L.t(I23, "int64"), 1), RuntimeError,
     "std_mean only support floating point and complex dtypes"),
    ("var-out-cannot-cast", lambda L: L.var(L.t(X23), 1, out=L.e(2, "int64")), RuntimeError,
     "result type Float can't be cast to the desired output type Long"),
    ("var-duplicate-dim", lambda L: L.var(L.t(X23), (0, 0)), RuntimeError,
     "dim 0 appears multiple times in the list of dims"),
    ("norm-integral", lambda L: L.norm(L.t(I23, "int64")), RuntimeError,
     "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"),
    ("norm-bool", lambda L: L.norm(L.t([True], "bool"), 1), RuntimeError,
     "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Bool"),
    ("aten-norm-integral", lambda L: L.aten.norm.Scalar(L.t(I23, "int64"), 2), RuntimeError,
     "norm(): input dtype should be either floating point or complex. Got Long instead."),
    ("norm-narrowing-dtype", lambda L: L.norm(L.t(X23), 2, 1, dtype=L.float16), RuntimeError,
     "linalg.vector_norm: the dtype of the input (Float) should be convertible without narrowing to the "
     "specified dtype (Half)"),
    ("aten-norm-integral-dtype", lambda L: L.aten.norm.ScalarOpt_dim_dtype(L.t(X23), 2, [1], False,
                                                                           dtype=L.int64), RuntimeError,
     "norm(): the desired output dtype should be either floating point or complex. Got Long instead."),
    ("norm-out-dtype", lambda L: L.norm(L.t(X23), 2, 1, out=L.e(2, "float64")), RuntimeError,
     "Expected out tensor to have dtype float, but got double instead"),
    ("norm-inf-empty", lambda L: L.norm(L.e(0), INF), RuntimeError,
     "linalg.vector_norm cannot compute the inf norm on an empty tensor because the operation does not have an "
     "identity"),
    ("norm-negative-empty", lambda L: L.norm(L.e(0), -1), RuntimeError,
     "linalg.vector_norm cannot compute the -1 norm on an empty tensor because the operation does not have an "
     "identity"),
    ("norm-neg-inf-empty-dim", lambda L: L.norm(L.e((3, 0)), -INF, -1), RuntimeError,
     "linalg.vector_norm cannot compute the -inf norm on the dimension -1because this dimension is empty and the "
     "operation does not have an identity"),
    ("all-out-float", lambda L: L.all(L.t(X23), 1, out=L.e(2)), RuntimeError,
     "all only supports bool tensor for result, got: Float"),
    ("any-out-long", lambda L: L.any(L.t(X23), out=L.e((), "int64")), RuntimeError,
     "any only supports bool tensor for result, got: Long"),
    ("all-duplicate-dims", lambda L: L.all(L.t(X23), (0, 0)), RuntimeError,
     "dim 0 appears multiple times in the list of dims"),
    ("any-bad-dim", lambda L: L.any(L.t(X23), 2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("logsumexp-out-integral", lambda L: L.logsumexp(L.t(X23), 1, out=L.e(2, "int64")), RuntimeError,
     "logsumexp(): Expected floating point type for result tensor, but got: Long"),
    ("logsumexp-duplicate-dim", lambda L: L.logsumexp(L.t(X23), (1, -1)), RuntimeError,
     "dim 1 appears multiple times in the list of dims"),
    ("cumsum-bad-dim", lambda L: L.cumsum(L.t(X23), -3), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    ("cumsum-bool-dtype", lambda L: L.cumsum(L.t(X23), 0, dtype=L.bool), NotImplementedError,
     "\"cumsum_out_cpu\" not implemented for 'Bool'"),
    ("cumprod-bool-out", lambda L: L.cumprod(L.t(X23), 0, out=L.e((2, 3), "bool")), NotImplementedError,
     "\"cumprod_out_cpu\" not implemented for 'Bool'"),
    ("cumsum-out-dtype-mismatch", lambda L: L.cumsum(L.t(X23), 1, dtype=L.float64, out=L.e((2, 3))), RuntimeError,
     "Expected out tensor to have dtype double, but got float instead"),
    ("cumsum_-bool", lambda L: L.t([True, False], "bool").cumsum_(0), NotImplementedError,
     "\"cumsum_out_cpu\" not implemented for 'Bool'"),
    ("cumsum_-dtype-mismatch", lambda L: L.t(X23).cumsum_(1, dtype=L.int64), RuntimeError,
     "Bad in-place call: input tensor dtype float and output tensor dtype long int should match"),
    ("cumprod_-dtype-mismatch", lambda L: L.t(I23, "int32").cumprod_(1, dtype=L.int64), RuntimeError,
     "Bad in-place call: input tensor dtype int and output tensor dtype long int should match"),
    ("softmax-integral-lastdim", lambda L: L.softmax(L.t(I23, "int64"), 1), NotImplementedError,
     "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'"),
    ("softmax-integral", lambda L: L.softmax(L.t(I23, "int64"), 0), NotImplementedError,
     "\"softmax_kernel_impl\" not implemented for 'Long'"),
    ("log_softmax-bool", lambda L: L.log_softmax(L.t([True], "bool"), 0), NotImplementedError,
     "\"log_softmax_lastdim_kernel_impl\" not implemented for 'Bool'"),
    ("softmax-integral-dtype", lambda L: L.softmax(L.t(X23), 0, dtype=L.int8), NotImplementedError,
     "\"softmax_kernel_impl\" not implemented for 'Char'"),
    ("softmax-bad-dim", lambda L: L.softmax(L.t(X23), 2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("aten-sum-number-self", lambda L: L.aten.sum.default(3), RuntimeError,
     "aten::sum() Expected a value of type 'Tensor' for argument 'self' but instead found type 'int'."),
    ("aten-cumsum-number-self", lambda L: L.aten.cumsum.default(2.5, 0), RuntimeError,
     "aten::cumsum() Expected a value of type 'Tensor' for argument 'self' but instead found type 'float'."),
    ("_softmax-half-to-float-cpu", lambda L: L.aten._softmax(L.t(X23, "float16"), 1, True), RuntimeError,
     "softmax with half to float conversion is not supported on CPU"),
]


class Lib:
    """npusim or torch behind one small interface, so one case body runs on both."""

    def __init__(self, mod, device="cpu"):
        self.mod, self.device = mod, device
        self.aten = mod.ops.aten

    def t(self, values, dtype="float32"):
        return self.mod.tensor(values, dtype=getattr(self.mod, dtype), device=self.device)

    def e(self, shape, dtype="float32"):
        return self.mod.empty(shape, dtype=getattr(self.mod, dtype), device=self.device)

    def __getattr__(self, name):
        return getattr(self.mod, name)


def _first_line(e):
    return str(e).split("\n")[0]


@pytest.mark.parametrize("call,exc,message", [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_bad_input_raises_torchs_error(device, call, exc, message):
    if "cpu" in message.lower() and device != "cpu":
        pytest.skip("the cpu kernel's name is part of this message")
    with pytest.raises(exc, match=re.escape(message)):
        call(Lib(npusim, device))


@pytest.mark.oracle
@pytest.mark.parametrize("call,exc,message", [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_bad_input_error_matches_torch(torch, call, exc, message):
    with pytest.raises(exc) as theirs:
        call(Lib(torch))
    assert _first_line(theirs.value).startswith(message)


def test_half_to_float_softmax_off_cpu_needs_half_input():
    npu = getattr(npusim, "npu", None)
    if npu is None or not npu.is_available():
        pytest.skip("needs the npu device: the cpu refuses half_to_float as torch's CPU does")
    x = make(X3, "float16", "npu")
    check(npusim.ops.aten._softmax(x, 1, True), np_softmax(host(x).astype(np.float64), 1), "float32")
    with pytest.raises(RuntimeError, match="conversion is supported for Half type only"):
        npusim.ops.aten._softmax(make(X3, "float32", "npu"), 1, True)


def test_out_on_another_device_is_refused():
    npu = getattr(npusim, "npu", None)
    if npu is None or not npu.is_available():
        pytest.skip("needs a second device (npu)")
    x = make(X23, "float32", "npu")
    with pytest.raises(RuntimeError, match="Expected out tensor to have device npu:0, but got cpu instead"):
        npusim.sum(x, 1, out=npusim.empty(2))
    with pytest.raises(RuntimeError, match="Expected out tensor to have device npu:0, but got cpu instead"):
        npusim.max(x, 1, out=(npusim.empty(2), npusim.empty(2, dtype=npusim.int64)))
    with pytest.raises(RuntimeError, match="Expected out tensor to have device npu:0, but got cpu instead"):
        npusim.cumsum(x, 1, out=npusim.empty(0))


def test_wrong_argument_types_are_refused():
    x = make(X23, "float32", "cpu")
    with pytest.raises(TypeError, match="dim must be an int, not float"):
        npusim.sum(x, 1.0)
    with pytest.raises(TypeError, match="must be Tensor, not list"):
        npusim.ops.aten.sum.IntList_out(x, [1], out=[1, 2])
    with pytest.raises(TypeError, match="max\\(\\): argument 'out' must be a tuple of two Tensors"):
        npusim.max(x, 1, out=npusim.empty(2))
    with pytest.raises(TypeError, match="dtype must be npusim.dtype, not str"):
        npusim.sum(x, dtype="float64")


# --- oracle: values, dtypes and shapes against torch ------------------------------------------------

XR = np.round(X3, 3).tolist()
IR = I3.tolist()

# (id, call); each result (or tuple of results) is compared with torch's
ORACLE = [
    ("sum", lambda L: L.sum(L.t(XR))),
    ("sum-int32", lambda L: L.sum(L.t(IR, "int32"), 1)),
    ("sum-bool-keepdim", lambda L: L.sum(L.t(IR, "bool"), (0, 2), keepdim=True)),
    ("sum-uint8-dtype", lambda L: L.sum(L.t(np.abs(I3).tolist(), "uint8"), -1, dtype=L.int16)),
    ("sum-half", lambda L: L.sum(L.t(XR, "float16"), 2)),
    ("sum-bfloat16-dims", lambda L: L.sum(L.t(XR, "bfloat16"), [0, 1])),
    ("sum-dtype-half", lambda L: L.sum(L.t(XR), dtype=L.float16)),
    ("sum-empty-list", lambda L: L.sum(L.t(XR), [], keepdim=True)),
    ("sum-0d", lambda L: L.sum(L.t(3.5), -1, keepdim=True)),
    ("sum-empty", lambda L: L.sum(L.e((0, 3)), 0)),
    ("sum-out-bool", lambda L: L.sum(L.t(IR), 1, out=L.e(0, "bool"))),
    ("mean", lambda L: L.mean(L.t(XR), (1, 2))),
    ("mean-half", lambda L: L.mean(L.t(XR, "float16"), 0, keepdim=True)),
    ("mean-int-dtype", lambda L: L.mean(L.t(IR), 1, dtype=L.float64)),
    ("mean-empty", lambda L: L.mean(L.e((0, 3)), 0)),
    ("mean-out-half", lambda L: L.mean(L.t(XR), 1, out=L.e(0, "float16"))),
    ("prod", lambda L: L.prod(L.t(XR), 1)),
    ("prod-int", lambda L: L.prod(L.t(IR, "int8"), 2, keepdim=True)),
    ("prod-bool", lambda L: L.prod(L.t(IR, "bool"))),
    ("prod-empty", lambda L: L.prod(L.e((2, 0)))),
    ("prod-out-int", lambda L: L.prod(L.t([[0.5, 1.5, 3.5]]), 1, out=L.e(0, "int64"))),
    ("max", lambda L: L.max(L.t(XR))),
    ("max-dim", lambda L: tuple(L.max(L.t(XR), 1))),
    ("max-dim-keepdim-bool", lambda L: tuple(L.max(L.t(IR, "bool"), -1, keepdim=True))),
    ("min-dim-ties", lambda L: tuple(L.min(L.t([[1, 0, 0], [2, 2, 1]], "int32"), 1))),
    ("max-dim-nan", lambda L: tuple(L.max(L.t([[1.0, NAN, NAN], [NAN, 3.0, 1.0]]), 1))),
    ("max-dim-empty-rows", lambda L: tuple(L.max(L.e((0, 3)), 1))),
    ("max-0d", lambda L: tuple(L.max(L.t(2.0), 0))),
    ("amax", lambda L: L.amax(L.t(XR), (0, -1))),
    ("amin-bool", lambda L: L.amin(L.t(IR, "bool"))),
    ("amax-nan", lambda L: L.amax(L.t([[1.0, NAN], [2.0, 3.0]]), 1)),
    ("amin-bfloat16", lambda L: L.amin(L.t(XR, "bfloat16"), 1, keepdim=True)),
    ("argmax", lambda L: L.argmax(L.t(XR))),
    ("argmax-keepdim", lambda L: L.argmax(L.t(XR), keepdim=True)),
    ("argmin-dim", lambda L: L.argmin(L.t(IR), 2)),
    ("argmax-nan", lambda L: L.argmax(L.t([1.0, NAN, 3.0, NAN]))),
    ("argmin-0d", lambda L: L.argmin(L.t(1.0), 0, keepdim=True)),
    ("var", lambda L: L.var(L.t(XR))),
    ("var-dim-correction", lambda L: L.var(L.t(XR), 1, correction=2)),
    ("var-half", lambda L: L.var(L.t(XR, "float16"), (0, 2), keepdim=True)),
    ("var-correction-too-big", lambda L: L.var(L.t(XR), 0, correction=3)),
    ("var-unbiased-false", lambda L: L.var(L.t(XR), 2, False)),
    ("std", lambda L: L.std(L.t(XR), [0, 1])),
    ("std-bfloat16", lambda L: L.std(L.t(XR, "bfloat16"), 2)),
    ("std-one-element", lambda L: L.std(L.t([1.0]))),
    ("var-empty", lambda L: L.var(L.e((0, 3)), 0)),
    ("var_mean", lambda L: L.var_mean(L.t(XR), 1)),
    ("std_mean", lambda L: L.std_mean(L.t(XR), (0, 2), keepdim=True, correction=0)),
    ("var-out-half", lambda L: L.var(L.t(XR), 1, out=L.e(0, "float16"))),
    ("norm", lambda L: L.norm(L.t(XR))),
    ("norm-none", lambda L: L.norm(L.t(XR), None)),
    ("norm-1-dim", lambda L: L.norm(L.t(XR), 1, 1)),
    ("norm-inf", lambda L: L.norm(L.t(XR), INF, (0, 2))),
    ("norm-neg-inf", lambda L: L.norm(L.t(XR), -INF)),
    ("norm-0", lambda L: L.norm(L.t([[0.0, 1.0], [0.0, 0.0]]), 0, 1)),
    ("norm-frac", lambda L: L.norm(L.t(XR), 0.5, -1, keepdim=True)),
    ("norm-fro", lambda L: L.norm(L.t(XR), "fro", (1, 2))),
    ("norm-half", lambda L: L.norm(L.t(XR, "float16"))),
    ("norm-dtype", lambda L: L.norm(L.t(XR, "float16"), 2, 1, dtype=L.float32)),
    ("norm-empty", lambda L: L.norm(L.e((0, 3)))),
    ("aten-norm-dim-empty-list", lambda L: L.aten.norm.ScalarOpt_dim(L.t(XR), 2, [], True)),
    ("all", lambda L: L.all(L.t(IR))),
    ("any-dim", lambda L: L.any(L.t(IR), 1, keepdim=True)),
    ("all-uint8", lambda L: L.all(L.t(np.abs(I3).tolist(), "uint8"), (0, 1))),
    ("any-uint8-dim", lambda L: L.any(L.t(np.abs(I3).tolist(), "uint8"), 2)),
    ("all-nan", lambda L: L.all(L.t([NAN, 1.0]))),
    ("all-empty", lambda L: L.all(L.e((0, 3)), 0)),
    ("aten-all-dims-empty-list", lambda L: L.aten.all.dims(L.t(IR), [])),
    ("any-out-uint8", lambda L: L.any(L.t(XR), 1, out=L.e(0, "uint8"))),
    ("logsumexp", lambda L: L.logsumexp(L.t(XR), 1)),
    ("logsumexp-int", lambda L: L.logsumexp(L.t(IR), (0, 2), keepdim=True)),
    ("logsumexp-half", lambda L: L.logsumexp(L.t(XR, "float16"), -1)),
    ("logsumexp-infinities", lambda L: L.logsumexp(L.t([[-INF, -INF], [INF, 1.0], [INF, -INF], [NAN, 1.0]]), 1)),
    ("logsumexp-empty", lambda L: L.logsumexp(L.e((0, 3)), 0)),
    ("logsumexp-0d", lambda L: L.logsumexp(L.t(3.0), 0)),
    # the exponentials are float32 (platform exp), summed in double
    ("logsumexp-out-double", lambda L: L.logsumexp(L.t(XR), 1, out=L.e(0, "float64")), 1e-7),
    ("cumsum", lambda L: L.cumsum(L.t(XR), 1)),
    ("cumsum-int32", lambda L: L.cumsum(L.t(IR, "int32"), 2)),
    ("cumsum-bool", lambda L: L.cumsum(L.t(IR, "bool"), 0)),
    ("cumsum-dtype", lambda L: L.cumsum(L.t(IR), -1, dtype=L.float16)),
    ("cumsum-half-long", lambda L: L.cumsum(L.t([0.1] * 3000, "float16"), 0)),
    ("cumprod", lambda L: L.cumprod(L.t(XR), 0)),
    ("cumprod-uint8", lambda L: L.cumprod(L.t([[1, 2], [0, 3]], "uint8"), 1)),
    ("cumprod-0d", lambda L: L.cumprod(L.t(3, "int32"), 0)),
    ("cumsum-out-int8", lambda L: L.cumsum(L.t(XR), 1, out=L.e(0, "int8"))),
    ("cumsum_", lambda L: L.t(IR, "int16").cumsum_(1)),
    ("cumprod_-float", lambda L: L.t(XR).cumprod_(-1, dtype=L.float32)),
    ("softmax", lambda L: L.softmax(L.t(XR), 1)),
    ("softmax-dtype", lambda L: L.softmax(L.t(IR), 0, dtype=L.float64)),
    ("softmax-half", lambda L: L.softmax(L.t(XR, "float16"), -1)),
    ("softmax-bfloat16", lambda L: L.softmax(L.t(XR, "bfloat16"), 0)),
    ("softmax-stability", lambda L: L.softmax(L.t([[1000.0, 0.0], [-INF, -INF], [INF, 1.0]]), 1)),
    ("softmax-0d", lambda L: L.softmax(L.t(4.0), -1)),
    ("softmax-empty-int", lambda L: L.softmax(L.e((0, 3), "int64"), 0)),
    ("log_softmax", lambda L: L.log_softmax(L.t(XR), 2)),
    ("log_softmax-dtype", lambda L: L.log_softmax(L.t(XR, "float16"), 0, dtype=L.float32)),
    ("log_softmax-extremes", lambda L: L.log_softmax(L.t([1000.0, 0.0, -1000.0]), 0)),
    ("aten-_softmax", lambda L: L.aten._softmax(L.t(XR), 0, False)),
    ("aten-_log_softmax", lambda L: L.aten._log_softmax(L.t(XR, "bfloat16"), 1, False)),
]

_TORCH_RTOL = {"float64": 1e-12, "float32": 2e-6, "float16": 1e-3, "bfloat16": 8e-3}


def _dtype_name(dt):
    return str(dt).split(".")[-1]


def _assert_same_as_torch(ours, theirs, rtol=None):
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            _assert_same_as_torch(o, t, rtol)
        return
    name = _dtype_name(theirs.dtype)
    assert _dtype_name(ours.dtype) == name
    assert tuple(ours.shape) == tuple(theirs.shape)
    expected = theirs.float().numpy() if name == "bfloat16" else theirs.numpy()
    got = host(ours)
    if name in _TORCH_RTOL:
        tol = _TORCH_RTOL[name] if rtol is None else rtol
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)


def _warning_texts(record):
    return sorted(str(w.message).split(" (Triggered internally")[0] for w in record
                  if issubclass(w.category, UserWarning))


@pytest.mark.oracle
@pytest.mark.parametrize("call,rtol", [(c[1], c[2] if len(c) > 2 else None) for c in ORACLE],
                         ids=[c[0] for c in ORACLE])
def test_matches_torch(torch, device, call, rtol):
    with warnings.catch_warnings(record=True) as ours_w:
        warnings.simplefilter("always")
        ours = call(Lib(npusim, device))
    with warnings.catch_warnings(record=True) as theirs_w:
        warnings.simplefilter("always")
        theirs = call(Lib(torch))
    _assert_same_as_torch(ours, theirs, rtol)
    assert _warning_texts(ours_w) == _warning_texts(theirs_w)


@pytest.mark.oracle
def test_prod_of_half_is_close_to_torch(torch):
    # torch multiplies 16-bit floats in 16-bit vector lanes; npusim accumulates in float32 (more accurate)
    x = np.full(40, 1.1)
    ours = host(npusim.prod(npusim.tensor(x, dtype=npusim.float16))).item()
    theirs = torch.prod(torch.tensor(x, dtype=torch.float16)).item()
    assert abs(ours - theirs) / theirs < 2e-3
    exact = float(np.float16(1.1)) ** 40
    assert abs(ours - exact) / exact < 1e-3
