"""Sorting, top-k and uniqueness: sort, argsort, topk, unique, unique_consecutive.

Values are checked against NumPy references on every device; dtypes, shapes,
strides and error messages against PyTorch (the ``oracle`` tests).
"""
from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest

import npusim
from conftest import host

RNG = np.random.default_rng(0)
NAN = math.nan

ALL_DTYPES = ["bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]


def make(values, dtype, device):
    """An npusim tensor of ``dtype`` (a name) holding ``values``."""
    return npusim.tensor(np.asarray(values), dtype=getattr(npusim, dtype), device=device)


def sample(shape, dtype, *, nan=True):
    """Small integers (many ties), NaN in every third place for float dtypes."""
    a = RNG.integers(0, 4, size=shape)
    if dtype == "bool":
        return a > 1
    a = a.astype(np.float64)
    if dtype in FLOATS and nan and a.size:
        a.reshape(-1)[::3] = NAN
    return a


def ref_sort_indices(a, axis, descending):
    """Stable sort order with NaN largest, from a lexsort on (is-NaN, value) - independent of the kernel."""
    a = np.moveaxis(np.asarray(a, dtype=np.float64), axis, -1)
    nan = np.isnan(a)
    val = np.nan_to_num(a, nan=0.0)
    idx = np.lexsort((-val, ~nan)) if descending else np.lexsort((val, nan))
    return np.moveaxis(idx, -1, axis)


def check_values(result, expected, dtype):
    assert result.dtype is getattr(npusim, dtype)
    expected = np.asarray(expected, dtype=np.float64)
    assert tuple(result.shape) == expected.shape
    np.testing.assert_array_equal(host(result).astype(np.float64), expected)


def check_index(result, expected):
    assert result.dtype is npusim.int64
    expected = np.asarray(expected)
    assert tuple(result.shape) == expected.shape
    np.testing.assert_array_equal(host(result), expected)


# --- sort / argsort ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_matches_stable_reference(device, dtype, descending):
    a = sample((3, 4, 5), dtype)
    x = make(a, dtype, device)
    for dim in (0, 1, -1):
        r = npusim.sort(x, dim, descending)
        assert type(r) is npusim.return_types.sort
        want = ref_sort_indices(a, dim % 3, descending)
        check_index(r.indices, want)
        check_values(r.values, np.take_along_axis(a, want, dim), dtype)
        check_index(npusim.argsort(x, dim, descending), want)
        check_index(x.argsort(dim=dim, descending=descending, stable=True), want)


def test_sort_nan_is_largest_both_ways(device):
    x = make([3.0, NAN, 1.0, 2.0, NAN, -1.0], "float32", device)
    up = npusim.sort(x)
    np.testing.assert_array_equal(host(up.values), [-1, 1, 2, 3, NAN, NAN])
    check_index(up.indices, [5, 2, 3, 0, 1, 4])
    down = npusim.sort(x, descending=True)
    np.testing.assert_array_equal(host(down.values), [NAN, NAN, 3, 2, 1, -1])
    check_index(down.indices, [1, 4, 0, 3, 2, 5])


def test_sort_ties_keep_input_order_both_ways(device):
    x = make([1, 1, 0, 1, 0], "int64", device)
    check_index(npusim.sort(x, stable=True).indices, [2, 4, 0, 1, 3])
    check_index(npusim.sort(x, descending=True, stable=True).indices, [0, 1, 3, 2, 4])
    check_index(npusim.argsort(x, descending=True), [0, 1, 3, 2, 4])


def test_sort_extremes_of_integer_and_unsigned_types(device):
    x = make([0, 255, 7, 255, 0], "uint8", device)
    check_values(npusim.sort(x, descending=True).values, [255, 255, 7, 0, 0], "uint8")
    big = make([2 ** 63 - 1, -2 ** 63, 0], "int64", device)
    np.testing.assert_array_equal(host(npusim.sort(big, descending=True).values), [2 ** 63 - 1, 0, -2 ** 63])


def test_sort_zero_dim_and_empty(device):
    r = npusim.sort(make(5.0, "float32", device))
    assert r.values.shape == () and r.indices.shape == () and r.indices.dtype is npusim.int64
    assert r.values.item() == 5.0 and r.indices.item() == 0
    assert npusim.sort(make(5.0, "float32", device), dim=0).indices.item() == 0
    e = npusim.sort(npusim.zeros(2, 0, device=device), dim=0)
    assert e.values.shape == (2, 0) and e.indices.shape == (2, 0)


def test_sort_method_and_result_fields(device):
    x = make([[3, 1, 2]], "int32", device)
    values, indices = x.sort(descending=True)
    check_values(values, [[3, 2, 1]], "int32")
    check_index(indices, [[0, 2, 1]])


def test_sort_of_a_transposed_tensor_keeps_its_layout(device):
    x = npusim.arange(12.0, device=device).reshape(3, 4).t()
    r = npusim.sort(x, 0, descending=True)
    assert r.values.stride() == x.stride() and r.indices.stride() == x.stride()
    np.testing.assert_array_equal(host(r.values), -np.sort(-host(x), axis=0))


def test_sort_out_writes_and_resizes(device):
    x = make([[3, 1, 2], [0, 5, 4]], "float32", device)
    values = npusim.empty(0, device=device)
    indices = npusim.empty(0, dtype=npusim.int64, device=device)
    r = npusim.sort(x, 1, out=(values, indices))
    assert r.values is values and r.indices is indices
    np.testing.assert_array_equal(host(values), [[1, 2, 3], [0, 4, 5]])
    np.testing.assert_array_equal(host(indices), [[1, 2, 0], [0, 2, 1]])
    with pytest.warns(UserWarning, match="was resized since it had shape \\[5\\]"):
        npusim.sort(x, out=(npusim.empty(5, device=device), npusim.empty(0, dtype=npusim.int64, device=device)))


def test_sort_out_bumps_versions(device):
    x = make([3, 1], "int64", device)
    values, indices = npusim.empty(2, dtype=npusim.int64, device=device), npusim.empty(2, dtype=npusim.int64,
                                                                                        device=device)
    v0, i0 = values._version, indices._version
    npusim.sort(x, out=(values, indices))
    assert values._version > v0 and indices._version > i0


def test_sort_ops_overloads(device):
    x = make([2, 0, 1], "int64", device)
    v, i = npusim.ops.aten.sort.default(x)
    check_index(i, [1, 2, 0])
    v, i = npusim.ops.aten.sort.stable(x, stable=None, dim=0, descending=True)
    check_index(i, [0, 2, 1])
    check_index(npusim.ops.aten.argsort.default(x, 0, True), [0, 2, 1])


# --- topk --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d != "bool"])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_matches_sorted_reference(device, dtype, largest):
    a = sample((4, 9), dtype)
    x = make(a, dtype, device)
    order = ref_sort_indices(a, 1, largest)
    for k in (0, 1, 3, 9):
        r = npusim.topk(x, k, 1, largest)
        assert type(r) is npusim.return_types.topk
        check_values(r.values, np.take_along_axis(a, order[:, :k], 1), dtype)
        # indices point at the values (which of equal values is picked is free, as in torch)
        got = np.take_along_axis(a, host(r.indices), 1)
        np.testing.assert_array_equal(got, host(r.values).astype(np.float64))
        assert r.indices.dtype is npusim.int64


def test_topk_large_input_selects_partially(device):
    a = RNG.integers(0, 50, size=(3, 2000)).astype(np.float64)
    a[:, ::97] = NAN
    x = make(a, "float64", device)
    for k, largest in ((10, True), (10, False), (1999, True)):
        r = npusim.topk(x, k, largest=largest)
        want = np.take_along_axis(a, ref_sort_indices(a, 1, largest)[:, :k], 1)
        np.testing.assert_array_equal(host(r.values), want)
        np.testing.assert_array_equal(np.take_along_axis(a, host(r.indices), 1), want)


def test_topk_nan_counts_as_largest(device):
    x = make([3.0, NAN, 1.0, 2.0, NAN, -1.0], "float32", device)
    np.testing.assert_array_equal(host(npusim.topk(x, 3).values), [NAN, NAN, 3])
    np.testing.assert_array_equal(host(npusim.topk(x, 3, largest=False).values), [-1, 1, 2])
    np.testing.assert_array_equal(host(npusim.topk(x, 6, largest=False).values), [-1, 1, 2, 3, NAN, NAN])


def test_topk_sorted_ties_come_in_index_order(device):
    x = make([1, 2, 2, 2, 0, 2], "int64", device)
    r = npusim.topk(x, 3)
    check_values(r.values, [2, 2, 2], "int64")
    assert np.all(np.diff(host(r.indices)) > 0)


def test_topk_unsorted_returns_the_same_set(device):
    a = RNG.permutation(200).astype(np.float32)
    x = make(a, "float32", device)
    r = npusim.topk(x, 7, sorted=False)
    np.testing.assert_array_equal(np.sort(host(r.values)), np.arange(193, 200))
    np.testing.assert_array_equal(a[host(r.indices)], host(r.values))


def test_topk_zero_dim_and_empty(device):
    s = make(5.0, "float32", device)
    for k in (0, 1):
        r = npusim.topk(s, k)
        assert r.values.shape == () and r.values.item() == 5.0 and r.indices.item() == 0
    e = npusim.topk(npusim.zeros(2, 0, device=device), 0)
    assert e.values.shape == (2, 0) and e.indices.shape == (2, 0) and e.indices.dtype is npusim.int64
    e = npusim.topk(npusim.zeros(2, 0, device=device), 1, dim=0)
    assert e.values.shape == (1, 0)


def test_topk_out(device):
    x = make([[3, 1, 2], [0, 5, 4]], "float32", device)
    values = npusim.empty(0, device=device)
    indices = npusim.empty(0, dtype=npusim.int64, device=device)
    r = npusim.topk(x, 2, out=(values, indices))
    assert r.values is values and type(r) is npusim.return_types.topk
    np.testing.assert_array_equal(host(values), [[3, 2], [5, 4]])
    np.testing.assert_array_equal(host(indices), [[0, 2], [1, 2]])


def test_topk_method(device):
    x = make([1, 4, 2], "int32", device)
    values, indices = x.topk(2)
    check_values(values, [4, 2], "int32")
    check_index(indices, [1, 2])


# --- unique ----------------------------------------------------------------------------------------------------

def ref_unique(a):
    """Sorted distinct values, inverse, counts; every NaN distinct."""
    flat = np.asarray(a, dtype=np.float64).reshape(-1)
    order = ref_sort_indices(flat, 0, False)
    s = flat[order]
    starts = np.ones(s.size, bool)
    starts[1:] = s[1:] != s[:-1]
    inverse = np.empty(s.size, np.int64)
    inverse[order] = np.cumsum(starts) - 1
    return s[starts], inverse.reshape(np.shape(a)), np.diff(np.append(np.flatnonzero(starts), s.size))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_unique_matches_reference(device, dtype):
    a = sample((4, 6), dtype, nan=False)
    x = make(a, dtype, device)
    values, inverse, counts = ref_unique(a)
    check_values(npusim.unique(x), values, dtype)
    for sorted_ in (True, False):  # torch's CPU kernel sorts either way
        u, inv, cnt = npusim.unique(x, sorted=sorted_, return_inverse=True, return_counts=True)
        check_values(u, values, dtype)
        check_index(inv, inverse)
        check_index(cnt, counts)
    u, cnt = x.unique(return_counts=True)
    check_index(cnt, counts)


def test_unique_nan_values_are_all_distinct(device):
    x = make([NAN, 1.0, NAN, 1.0, 0.0], "float32", device)
    u, inv, cnt = npusim.unique(x, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(host(u), [0, 1, NAN, NAN])
    np.testing.assert_array_equal(host(cnt), [1, 2, 1, 1])
    assert sorted(host(inv)[[0, 2]]) == [2, 3]


def test_unique2_returns_empty_placeholders(device):
    x = make([3, 1, 3], "int64", device)
    u, inv, cnt = npusim.ops.aten._unique2(x, True, False, False)
    check_values(u, [1, 3], "int64")
    assert inv.shape == (0,) and cnt.shape == (0,) and inv.dtype is npusim.int64


def test_unique_zero_dim_and_empty(device):
    u, inv, cnt = npusim.unique(make(5.0, "float32", device), return_inverse=True, return_counts=True)
    assert u.shape == (1,) and inv.shape == () and inv.item() == 0 and cnt.tolist() == [1]
    u, inv, cnt = npusim.unique(npusim.zeros(2, 0, device=device), return_inverse=True, return_counts=True)
    assert u.shape == (0,) and inv.shape == (2, 0) and cnt.shape == (0,)


def ref_unique_rows(a):
    rows = [tuple(r) for r in a]
    uniq = sorted(set(rows))
    inverse = [uniq.index(r) for r in rows]
    counts = [rows.count(r) for r in uniq]
    return np.array(uniq), inverse, counts


@pytest.mark.parametrize("dtype", ["bool", "int32", "int64", "bfloat16", "float32"])
def test_unique_along_dim_matches_reference(device, dtype):
    a = sample((7, 3), dtype, nan=False)
    a = np.concatenate([a, a[:3]])  # guaranteed duplicates
    x = make(a, dtype, device)
    values, inverse, counts = ref_unique_rows(a)
    u, inv, cnt = npusim.unique(x, dim=0, return_inverse=True, return_counts=True)
    check_values(u, values, dtype)
    check_index(inv, inverse)
    check_index(cnt, counts)
    # along dim 1 of the transpose: the same slices, as columns
    u, inv, cnt = npusim.unique(x.t(), dim=-1, return_inverse=True, return_counts=True)
    check_values(u, values.T, dtype)
    check_index(inv, inverse)


def test_unique_dim_always_fills_inverse_and_counts(device):
    x = make([[1, 2], [1, 2], [0, 1]], "int64", device)
    u, inv, cnt = npusim.ops.aten.unique_dim(x, 0, True, False, False)
    check_index(inv, [1, 1, 0])
    check_index(cnt, [1, 2])


def test_unique_dim_of_empty_selected_dim(device):
    u, inv, cnt = npusim.unique(npusim.zeros(0, 3, device=device), dim=0, return_inverse=True, return_counts=True)
    assert u.shape == (0, 3) and inv.shape == (0,) and cnt.shape == (0,)


def ref_unique_consecutive(a):
    flat = np.asarray(a, dtype=np.float64).reshape(-1)
    starts = np.ones(flat.size, bool)
    starts[1:] = flat[1:] != flat[:-1]
    return flat[starts], (np.cumsum(starts) - 1).reshape(np.shape(a)), \
        np.diff(np.append(np.flatnonzero(starts), flat.size))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_unique_consecutive_matches_reference(device, dtype):
    a = np.repeat(sample((12,), dtype), RNG.integers(1, 3, size=12)).reshape(-1)
    a = a[: a.size // 2 * 2].reshape(2, -1)
    x = make(a, dtype, device)
    values, inverse, counts = ref_unique_consecutive(a)
    u, inv, cnt = npusim.unique_consecutive(x, return_inverse=True, return_counts=True)
    check_values(u, values, dtype)
    check_index(inv, inverse)
    check_index(cnt, counts)
    check_values(x.unique_consecutive(), values, dtype)


def test_unique_consecutive_along_dim(device):
    a = np.array([[1, 1, 2, 2, 1], [0, 0, 5, 5, 0], [0, 0, 5, 5, 0]])
    x = make(a, "int64", device)
    u, inv, cnt = npusim.unique_consecutive(x, dim=1, return_inverse=True, return_counts=True)
    check_values(u, a[:, [0, 2, 4]], "int64")
    check_index(inv, [0, 0, 1, 1, 2])
    check_index(cnt, [2, 2, 1])
    u, inv, cnt = npusim.unique_consecutive(x, dim=0, return_inverse=True, return_counts=True)
    check_values(u, a[:2], "int64")
    check_index(inv, [0, 1, 1])


def test_unique_consecutive_nan_runs_stay_apart(device):
    u, cnt = npusim.unique_consecutive(make([NAN, NAN, 1.0, 1.0], "float32", device), return_counts=True)
    np.testing.assert_array_equal(host(u), [NAN, NAN, 1])
    check_index(cnt, [1, 1, 2])


def test_unique_consecutive_zero_dim_and_empty(device):
    u, inv, cnt = npusim.unique_consecutive(make(5, "int64", device), return_inverse=True, return_counts=True)
    assert u.tolist() == [5] and inv.shape == () and cnt.tolist() == [1]
    u, inv, cnt = npusim.unique_consecutive(npusim.zeros(0, device=device), return_inverse=True, return_counts=True)
    assert u.shape == (0,) and inv.shape == (0,) and cnt.shape == (0,)


# --- bad inputs ------------------------------------------------------------------------------------------------------

def _t(m, device, data, dtype=None):
    """A tensor from ``m`` (npusim or torch)."""
    kw = {} if dtype is None else {"dtype": getattr(m, dtype)}
    return m.tensor(data, device=device if m is npusim else "cpu", **kw)


# (id, call, exception type, message): each call gets the module (npusim or torch) and the device
BAD = [
    ("sort-dim", lambda m, d: m.sort(_t(m, d, [1.0, 2.0]), dim=1), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    ("sort-0d-dim", lambda m, d: m.sort(_t(m, d, 5.0), dim=1), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    ("sort-out-values-dtype", lambda m, d: m.sort(_t(m, d, [1.0]), out=(_t(m, d, [0.0], "float64"),
                                                                        _t(m, d, [0], "int64"))),
     RuntimeError, "Expected out tensor to have dtype float, but got double instead"),
    ("sort-out-indices-dtype", lambda m, d: m.sort(_t(m, d, [1.0]), out=(_t(m, d, [0.0]), _t(m, d, [0], "int32"))),
     RuntimeError, "Expected out tensor to have dtype long int, but got int instead"),
    ("sort-out-half", lambda m, d: m.sort(_t(m, d, [1.0]), out=(_t(m, d, [0.0], "float16"),
                                                                _t(m, d, [0], "int64"))),
     RuntimeError, "Expected out tensor to have dtype float, but got c10::Half instead"),
    ("sort-out-one", lambda m, d: m.sort(_t(m, d, [1.0]), out=(_t(m, d, [0.0]),)), TypeError,
     "expected tuple of 2 elements but got 1"),
    ("sort-out-element", lambda m, d: m.sort(_t(m, d, [1.0]), out=(_t(m, d, [0.0]), 5)), TypeError,
     "expected Tensor as element 1 in argument 3, but got int"),
    ("topk-out-tensor", lambda m, d: m.topk(_t(m, d, [1.0]), 1, out=_t(m, d, [0.0])), TypeError,
     "topk(): argument 'out' must be tuple of Tensors, not Tensor"),
    ("topk-out-element", lambda m, d: m.topk(_t(m, d, [1.0]), 1, out=(5, _t(m, d, [0]))), TypeError,
     "expected Tensor as element 0 in argument 5, but got int"),
    ("argsort-dim", lambda m, d: m.argsort(_t(m, d, [[1, 2]]), dim=-3), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    ("topk-k-big", lambda m, d: m.topk(_t(m, d, [1.0, 2.0]), 3), RuntimeError, "selected index k out of range"),
    ("topk-k-negative", lambda m, d: m.topk(_t(m, d, [1.0, 2.0]), -1), RuntimeError,
     "selected index k out of range"),
    ("topk-k-0d", lambda m, d: m.topk(_t(m, d, 1.0), 2), RuntimeError, "selected index k out of range"),
    ("topk-bool", lambda m, d: m.topk(_t(m, d, [True, False]), 1), RuntimeError,
     "topk does not support bool dtypes on CPU"),
    ("topk-k-float", lambda m, d: m.topk(_t(m, d, [1.0]), 1.0), TypeError,
     "topk(): argument 'k' (position 2) must be int, not float"),
    ("topk-dim", lambda m, d: m.topk(_t(m, d, [1.0]), 1, dim=2), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 2)"),
    ("topk-out-indices", lambda m, d: m.topk(_t(m, d, [1.0]), 1, out=(_t(m, d, [0.0]), _t(m, d, [0], "int32"))),
     RuntimeError, "Expected out tensor to have dtype long int, but got int instead"),
    ("unique-dim-0d", lambda m, d: m.unique(_t(m, d, 5.0), dim=0), IndexError,
     "Dimension specified as 0 but tensor has no dimensions"),
    ("unique-dim-range", lambda m, d: m.unique(_t(m, d, [[1]]), dim=2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("unique-dim-zero-unselected", lambda m, d: m.unique(m.zeros(2, 0, device=d if m is npusim else "cpu"), dim=0),
     RuntimeError, "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied"),
    ("unique-dim-two-zero", lambda m, d: m.unique(m.zeros(0, 0, device=d if m is npusim else "cpu"), dim=0),
     RuntimeError, "Number of zero sized dimensions is more than one, so unique cannot be applied"),
    ("unique-consecutive-dim-0d", lambda m, d: m.unique_consecutive(_t(m, d, 5), dim=-1), IndexError,
     "Dimension specified as -1 but tensor has no dimensions"),
    ("unique-consecutive-zero-unselected",
     lambda m, d: m.unique_consecutive(m.zeros(0, 2, device=d if m is npusim else "cpu"), dim=1), RuntimeError,
     "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied"),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_input_raises(device, case):
    _, call, exc, msg = case
    with pytest.raises(exc, match="^" + re.escape(msg)):
        call(npusim, device)


@pytest.mark.oracle
@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_input_matches_torch(torch, case):
    _, call, exc, msg = case
    with pytest.raises(exc, match="^" + re.escape(msg)):
        call(torch, "cpu")


# --- oracle: values, dtypes, shapes, strides ----------------------------------------------------------------------

def _same(r, t):
    """npusim tensor ``r`` equals torch tensor ``t``: dtype, shape, strides, values (NaN in place)."""
    assert str(r.dtype).rsplit(".", 1)[-1] == str(t.dtype).rsplit(".", 1)[-1]
    assert tuple(r.shape) == tuple(t.shape)
    if r.numel() > 1:
        assert r.stride() == t.stride()
    np.testing.assert_array_equal(host(r), t.float().numpy() if t.dtype.is_floating_point else t.numpy())


def _pair(a, dtype, torch):
    x = npusim.tensor(a, dtype=getattr(npusim, dtype))
    t = torch.tensor(a, dtype=getattr(torch, dtype))
    return x, t


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_sort_and_topk_match_torch(torch, dtype):
    x, t = _pair(sample((3, 4, 5), dtype), dtype, torch)
    for dim in (0, 2):
        for desc in (False, True):
            r, q = npusim.sort(x, dim, desc, stable=True), torch.sort(t, dim=dim, descending=desc, stable=True)
            _same(r.values, q.values)
            _same(r.indices, q.indices)
        if dtype != "bool":
            for largest in (True, False):
                _same(npusim.topk(x, 2, dim, largest).values, torch.topk(t, 2, dim, largest).values)
    # a permuted input: results follow its layout, as torch's do
    r, q = npusim.sort(x.permute(2, 0, 1), 1), torch.sort(t.permute(2, 0, 1), 1)
    _same(r.values, q.values)
    _same(r.indices, q.indices)


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_unique_family_matches_torch(torch, dtype):
    x, t = _pair(sample((5, 4), dtype, nan=False), dtype, torch)
    for flags in ((False, False), (True, False), (False, True), (True, True)):
        for r, q in zip(npusim.ops.aten._unique2(x, True, *flags), torch.ops.aten._unique2(t, True, *flags)):
            _same(r, q)
        for r, q in zip(npusim.ops.aten.unique_consecutive(x, *flags), torch.ops.aten.unique_consecutive(t, *flags)):
            _same(r, q)
    for dim in (0, 1, -1):
        for r, q in zip(npusim.unique(x, dim=dim, return_inverse=True, return_counts=True),
                        torch.unique(t, dim=dim, return_inverse=True, return_counts=True)):
            _same(r, q)
        for r, q in zip(npusim.unique_consecutive(x, dim=dim, return_inverse=True, return_counts=True),
                        torch.unique_consecutive(t, dim=dim, return_inverse=True, return_counts=True)):
            _same(r, q)


@pytest.mark.oracle
def test_edge_shapes_match_torch(torch):
    for a in (5.0, [], [[], []]):
        x, t = npusim.tensor(a), torch.tensor(a)
        for r, q in zip(npusim.sort(x), torch.sort(t)):
            _same(r, q)
        for r, q in zip(npusim.unique(x, return_inverse=True, return_counts=True),
                        torch.unique(t, return_inverse=True, return_counts=True)):
            _same(r, q)
        for r, q in zip(npusim.unique_consecutive(x, return_inverse=True, return_counts=True),
                        torch.unique_consecutive(t, return_inverse=True, return_counts=True)):
            _same(r, q)
    for r, q in zip(npusim.topk(npusim.tensor(5.0), 0), torch.topk(torch.tensor(5.0), 0)):
        _same(r, q)


@pytest.mark.oracle
def test_out_resize_warning_matches_torch(torch):
    def messages(m):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m.sort(m.tensor([2.0, 1.0]), out=(m.empty(5), m.empty(0, dtype=m.int64)))
        return [str(x.message).split(" (Triggered")[0] for x in w]
    assert messages(npusim) == messages(torch)
