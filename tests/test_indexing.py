"""Indexing: gather / scatter, index_select, masked_select / masked_fill, nonzero,
aten::index / index_put, and Python indexing (views, advanced indices, setitem).

Values are checked against NumPy on every device; ``oracle`` tests run the same
calls through PyTorch and compare values, dtypes, shapes, view-ness and errors.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import npusim
from conftest import checked_on_device, host, reported_later
from npusim.kernels import device_checks as DC
from npusim.kernels import indexing as K
from npusim.native import indexing as indexing_ops

aten = npusim.ops.aten

DTYPES = [npusim.float32, npusim.float64, npusim.float16, npusim.bfloat16, npusim.int64, npusim.int32,
          npusim.uint8, npusim.bool]
rng = np.random.default_rng(0)


def mk(data, dtype=None, device="cpu"):
    """A tensor from a list (default dtypes, as npusim.tensor) or a NumPy array (its dtype)."""
    return npusim.tensor(data, dtype=dtype, device=device)


def sample(shape, dtype, device):
    """A tensor of small exact values (sums stay exact in every dtype) and its values as NumPy sees them."""
    n = rng.integers(0, 5, size=shape)
    t = mk(n.astype(np.float64), dtype=dtype, device=device)
    return t, host(t)


def check(t, expected, dtype=None):
    expected = np.asarray(expected)
    assert tuple(t.shape) == expected.shape
    if dtype is not None:
        assert t.dtype is dtype
    np.testing.assert_array_equal(host(t), expected)


def same_as_torch(ours, theirs):
    """Same shape, dtype and values as the torch result."""
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_array_equal(host(ours), theirs.detach().float().numpy() if theirs.dtype.is_floating_point
                                  else theirs.numpy())


def lib_dtype(L, name):
    return None if name is None else getattr(L, name)


# --- the array kernels -----------------------------------------------------------------------------

def test_ufunc_at_in_rounds_applies_duplicates_like_numpy_at():
    a = np.arange(1, 7, dtype=np.float64).reshape(2, 3)
    rows = np.array([[0, 1, 0, 0], [1, 1, 0, 1]])
    cols = np.array([[2, 2, 2, 0], [0, 0, 1, 0]])
    vals = np.array([[2., 3., 5., 7.], [11., 13., 17., 19.]])
    expected = a.copy()
    np.multiply.at(expected, (rows, cols), vals)
    K.ufunc_at_in_rounds(np.multiply, a, (rows, cols), vals)
    np.testing.assert_array_equal(a, expected)


def test_ufunc_at_in_rounds_keeps_index_order_for_non_commutative_updates():
    a = np.zeros(3)
    K.ufunc_at_in_rounds(lambda old, v: old * 10 + v, a, (np.array([1, 1, 2, 1]),), np.array([1., 2., 3., 4.]))
    np.testing.assert_array_equal(a, [0., 124., 3.])


def test_first_out_of_range_reports_the_first_bad_value():
    idx = np.array([0, 2, -4, 7, 1])
    assert K.first_out_of_range(idx, 3) == -4
    assert K.first_out_of_range(idx, 8) is None
    assert K.first_out_of_range(np.array([0, -1]), 3, allow_negative=False) == -1
    assert K.first_out_of_range(np.array([], dtype=np.int64), 0) is None


# --- gather --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather_matches_numpy(device, dtype, dim):
    x, n = sample((3, 4, 5), dtype, device)
    d = dim % 3
    ishape = [2, 3, 4]
    ishape[d] = 6
    idx = rng.integers(0, n.shape[d], size=ishape)
    part = n[tuple(slice(None) if i == d else slice(0, s) for i, s in enumerate(ishape))]
    expected = np.take_along_axis(part, idx, axis=d)
    check(npusim.gather(x, dim, mk(idx, device=device)), expected, dtype)
    check(x.gather(dim, mk(idx.astype(np.int32), device=device)), expected, dtype)


def test_gather_0dim_and_empty_index(device):
    s = mk(5., device=device)
    check(npusim.gather(s, 0, mk(0, device=device)), 5.)
    check(npusim.gather(s, 0, mk([0, 0], device=device)), [5., 5.])
    check(npusim.gather(mk([5., 6.], device=device), 0, mk(1, device=device)), 6.)
    x = npusim.zeros(3, 4, device=device)
    # an empty index skips the shape checks, as in torch
    check(npusim.gather(x, 1, npusim.zeros(0, 7, dtype=npusim.int64, device=device)), np.zeros((0, 7)))


def test_gather_out_writes_and_resizes(device):
    x = npusim.arange(12., device=device).reshape(3, 4)
    out = npusim.empty(2, 2, device=device)
    r = npusim.gather(x, 1, mk([[0, 1], [2, 0]], device=device), out=out)
    assert r is out
    check(out, [[0., 1.], [6., 4.]])
    out = npusim.zeros(3, device=device)
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        npusim.gather(x, 0, mk([[2]], device=device), out=out)
    check(out, [[8.]])


# --- scatter -----------------------------------------------------------------------------------------------

def _scatter_reference(n, dim, idx, src):
    out = n.copy()
    grids = np.indices(idx.shape)
    target = tuple(idx if d == dim else grids[d] for d in range(idx.ndim))
    out[target] = src[tuple(slice(0, s) for s in idx.shape)] if np.ndim(src) else src
    return out


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter_src_and_value_match_numpy(device, dtype):
    x, n = sample((4, 5), dtype, device)
    src, ns = sample((3, 4), dtype, device)
    idx = np.array([[3, 0, 1, 2], [0, 1, 2, 3], [1, 2, 3, 0]])  # unique targets per column
    check(x.scatter(0, mk(idx, device=device), src), _scatter_reference(n, 0, idx, ns), dtype)
    check(npusim.scatter(x, 0, mk(idx, device=device), 1), _scatter_reference(n, 0, idx, np.asarray(1).astype(n.dtype)),
          dtype)
    check(x, n)  # the functional form leaves self alone


def test_scatter_duplicates_last_write_wins(device):
    r = npusim.zeros(5, device=device).scatter(0, mk([1, 1, 1], device=device), mk([1., 2., 3.], device=device))
    check(r, [0., 3., 0., 0., 0.])


@pytest.mark.parametrize("dtype", [npusim.float32, npusim.float16, npusim.bfloat16, npusim.int64, npusim.int8,
                                   npusim.bool])
def test_scatter_add_accumulates_duplicates(device, dtype):
    x, n = sample((3, 4), dtype, device)
    src, ns = sample((5, 4), dtype, device)
    idx = rng.integers(0, 3, size=(5, 4))
    expected = n.copy()
    np.add.at(expected, (idx, np.arange(4)[None, :]), ns)
    check(npusim.scatter_add(x, 0, mk(idx, device=device), src), expected, dtype)
    v = x._version
    assert x.scatter_add_(0, mk(idx, device=device), src) is x
    check(x, expected)
    assert x._version == v + 1


def test_scatter_reduce_and_value_reduce(device):
    idx = mk([[0, 0]], device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = npusim.full((3, 4), 2., device=device).scatter(1, idx, npusim.full((1, 2), 3., device=device),
                                                           reduce="multiply")
        check(r[0], [18., 2., 2., 2.])
        r = npusim.zeros(3, 4, device=device).scatter(1, idx, npusim.ones(1, 2, device=device), reduce="add")
        check(r[0], [2., 0., 0., 0.])
    check(npusim.zeros(2, 3, device=device).scatter(1, idx, 1.5, reduce="add")[0], [3., 0., 0.])
    # the value is cast to self's dtype before it multiplies
    r = npusim.ones(3, dtype=npusim.int64, device=device).scatter(0, mk([1, 1], device=device), 2.5,
                                                                  reduce="multiply")
    check(r, [1, 4, 1], npusim.int64)
    x = npusim.ones(3, device=device)
    x.scatter_(0, mk([2, 2], device=device), 3., reduce="multiply")
    check(x, [1., 1., 9.])


def test_scatter_reduce_with_src_warns_once(device, monkeypatch):
    monkeypatch.setattr(indexing_ops, "_scatter_reduce_warned", False)
    x = npusim.zeros(3, device=device)
    args = (0, mk([0], device=device), npusim.ones(1, device=device))
    with pytest.warns(UserWarning, match="The reduce argument of torch.scatter with Tensor src is deprecated"):
        x.scatter(*args, reduce="add")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x.scatter_(*args, reduce="multiply")
        x.scatter(0, args[1], 2., reduce="add")  # the value form never warned


def test_scatter_inplace_writes_through_views(device):
    base = npusim.zeros(4, 3, device=device)
    view = base.t()
    v = base._version
    view.scatter_(1, mk([[0, 3]], device=device), npusim.ones(1, 2, device=device))
    check(base[:, 0], [1., 0., 0., 1.])
    assert base._version == v + 1


def test_scatter_add_out(device):
    out = npusim.empty(5, device=device)
    r = npusim.scatter_add(npusim.zeros(5, device=device), 0, mk([1, 1, 3], device=device),
                           mk([1., 2., 3.], device=device), out=out)
    assert r is out
    check(out, [0., 3., 0., 3., 0.])


def test_scatter_0dim_and_empty_index(device):
    check(mk(1., device=device).scatter(0, mk(0, device=device), mk(5., device=device)), 5.)
    check(mk(1., device=device).scatter_add(0, mk([0, 0], device=device), mk([2., 3.], device=device)), 6.)
    empty = npusim.zeros(0, dtype=npusim.int64, device=device)
    check(npusim.zeros(3, dtype=npusim.int8, device=device).scatter(0, empty, 300), [0, 0, 0])


# --- index_select -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_index_select_matches_numpy_take(device, dtype):
    x, n = sample((3, 4), dtype, device)
    idx = np.array([3, 0, 3])
    check(npusim.index_select(x, 1, mk(idx, device=device)), np.take(n, idx, axis=1), dtype)
    check(x.index_select(-1, mk(idx.astype(np.int32), device=device)), np.take(n, idx, axis=1), dtype)
    check(x.index_select(0, mk(2, device=device)), n[2:3], dtype)
    check(x.index_select(0, npusim.zeros(0, dtype=npusim.int64, device=device)), n[:0], dtype)


def test_index_select_0dim_self_and_out(device):
    s = mk(5., device=device)
    check(npusim.index_select(s, 0, mk([0], device=device)), 5.)
    check(npusim.index_select(s, 0, mk(0, device=device)), 5.)
    out = npusim.empty(0, device=device)
    x = npusim.arange(12., device=device).reshape(3, 4)
    assert npusim.index_select(x, 0, mk([1], device=device), out=out) is out
    check(out, [[4., 5., 6., 7.]])


# --- masked_select / nonzero ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_select_broadcasts(device, dtype):
    x, n = sample((3, 4), dtype, device)
    m = np.array([True, False, True, False])
    check(npusim.masked_select(x, mk(m, device=device)), n[np.broadcast_to(m, (3, 4))], dtype)
    row = mk([1., 2., 3., 4.], device=device)
    check(row.masked_select(mk([[True], [False]], device=device)), [1., 2., 3., 4.])
    check(npusim.masked_select(mk(3., device=device), mk(True, device=device)), [3.])
    check(npusim.masked_select(mk([1., 2.], device=device), mk(False, device=device)), np.zeros(0))


def test_masked_select_out(device):
    out = npusim.empty(0, device=device)
    x = mk([1., 2., 3.], device=device)
    assert npusim.masked_select(x, mk([True, False, True], device=device), out=out) is out
    check(out, [1., 3.])


@pytest.mark.parametrize("dtype", DTYPES)
def test_nonzero_matches_numpy_argwhere(device, dtype):
    x, n = sample((3, 4, 2), dtype, device)
    check(npusim.nonzero(x), np.argwhere(n), npusim.int64)
    check(x.argwhere(), np.argwhere(n), npusim.int64)


def test_nonzero_shapes(device):
    check(npusim.nonzero(mk(3, device=device)), np.zeros((1, 0)), npusim.int64)
    check(npusim.nonzero(mk(0, device=device)), np.zeros((0, 0)), npusim.int64)
    check(npusim.nonzero(npusim.zeros(0, 3, device=device)), np.zeros((0, 2)), npusim.int64)
    check(npusim.nonzero(mk([0., np.nan, -0.0], device=device)), [[1]])  # NaN is non-zero, -0.0 is zero
    check(npusim.nonzero(mk([[0, 1], [2, 0]], device=device).t()), [[0, 1], [1, 0]])
    rows, cols = npusim.nonzero(mk([[0, 1], [2, 0]], device=device), as_tuple=True)
    check(rows, [0, 1])
    check(cols, [1, 0])
    (only,) = npusim.nonzero(mk(3, device=device), as_tuple=True)
    check(only, [0])
    (only,) = mk(0, device=device).nonzero(as_tuple=True)
    check(only, np.zeros(0))


def test_nonzero_out(device):
    out = npusim.empty(0, dtype=npusim.int64, device=device)
    assert npusim.nonzero(mk([1, 0, 1], device=device), out=out) is out
    check(out, [[0], [2]])


# --- masked_fill ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_fill_matches_numpy(device, dtype):
    x, n = sample((3, 4), dtype, device)
    m = np.array([True, False, True, False])
    expected = np.where(m, np.asarray(1).astype(n.dtype), n)
    check(x.masked_fill(mk(m, device=device), 1), expected, dtype)
    check(npusim.masked_fill(x, mk(m, device=device), mk(1, device=device)), expected, dtype)
    check(x, n)
    v = x._version
    assert x.masked_fill_(mk(m, device=device), 1) is x
    check(x, expected)
    assert x._version == v + 1


def test_masked_fill_values_and_broadcasting(device):
    m = mk([True, False, True, False], device=device)
    check(npusim.zeros(4, dtype=npusim.int64, device=device).masked_fill(m, 2.7), [2, 0, 2, 0])
    check(npusim.zeros(4, dtype=npusim.int64, device=device).masked_fill(m, mk(2.7, device=device)), [2, 0, 2, 0])
    check(npusim.zeros(4, dtype=npusim.uint8, device=device).masked_fill(m, -1), [255, 0, 255, 0])
    check(npusim.zeros(4, dtype=npusim.bool, device=device).masked_fill(m, 2), [True, False, True, False])
    check(npusim.zeros(4, dtype=npusim.float16, device=device).masked_fill(m, float("inf")), [np.inf, 0, np.inf, 0])
    # out of place, self broadcasts with the mask; in place, the mask broadcasts to self
    check(npusim.zeros(4, device=device).masked_fill(mk([[True], [False]], device=device), 1.),
          [[1.] * 4, [0.] * 4])
    x = npusim.zeros(2, 3, device=device)
    x.masked_fill_(mk([True, False, True], device=device), mk(5., device=device))
    check(x, [[5., 0., 5.], [5., 0., 5.]])
    check(mk(1., device=device).masked_fill(mk([True, False], device=device), 3.), [3., 1.])


# --- aten::index / aten::index_put ---------------------------------------------------------------------------

def test_aten_index_matches_numpy(device):
    n = np.arange(24.).reshape(2, 3, 4)
    x = mk(n, device=device)
    L = lambda v: mk(v, device=device)  # noqa: E731
    check(aten.index.Tensor(x, [L([1, 0])]), n[[1, 0]])
    check(aten.index.Tensor(x, [None, L([2, 0])]), n[:, [2, 0]])
    check(aten.index.Tensor(x, [L([1, 0]), None, L([3, 3])]), n[[1, 0], :, [3, 3]])
    check(aten.index.Tensor(x, [None, L([1, 0]), L([3, 3])]), n[:, [1, 0], [3, 3]])
    check(aten.index.Tensor(x, [L([[1], [0]]), L([0, 1, 2])]), n[[[1], [0]], [0, 1, 2]])
    check(aten.index.Tensor(x, [L([-1]).int()]), n[[-1]])
    mask = n[:, :, 0] > 5
    check(aten.index.Tensor(x, [L(mask)]), n[mask])
    check(aten.index.Tensor(x, [L([True, False]), L([0, 2])]), n[[True, False], [0, 2]])
    check(aten.index.Tensor(x, [L(1)]), n[1])
    check(aten.index.Tensor(x, [npusim.zeros(0, dtype=npusim.int64, device=device)]), n[:0])


def test_cpu_indices_and_0dim_cpu_values_join_any_device(device):
    x = npusim.arange(6., device=device).reshape(2, 3)
    check(aten.index.Tensor(x, [None, mk([2, 0])]), [[2., 0.], [5., 3.]])
    x.index_put_((mk([1]),), mk(7.))
    check(x, [[0., 1., 2.], [7., 7., 7.]])
    check(x.masked_fill(mk([True, False, False], device=device), mk(9.)), [[9., 1., 2.], [9., 7., 7.]])
    x[[0], [0]] = mk(-1.)
    check(x[0], [-1., 1., 2.])


def test_index_put_accumulate_and_last_write(device):
    L = lambda v: mk(v, device=device)  # noqa: E731
    y = npusim.zeros(5, device=device)
    check(npusim.index_put(y, (L([1, 1, 1]),), L([1., 2., 3.])), [0., 3., 0., 0., 0.])
    check(npusim.index_put(y, (L([1, 1, 1]),), L([1., 2., 3.]), True), [0., 6., 0., 0., 0.])
    check(npusim.index_put(y, (L([-1, -1, 4]),), L([7., 1., 1.]), accumulate=True), [0., 0., 0., 0., 9.])
    check(y, np.zeros(5))
    half = npusim.zeros(3, dtype=npusim.float16, device=device)
    # accumulation is sequential in the tensor's dtype (0.1 + 0.1 + 0.1 in float16)
    r = aten.index_put.default(half, [L([0, 0, 0])], mk([0.1] * 3, npusim.float16, device), True)
    expected = np.zeros(3, np.float16)
    np.add.at(expected, [0, 0, 0], np.float16(0.1))
    check(r, expected)
    check(aten.index_put.default(mk([False] * 3, device=device), [L([0, 0])], L([True, True]), True),
          [True, False, False])


def test_index_put_masks_values_and_versions(device):
    L = lambda v: mk(v, device=device)  # noqa: E731
    x = npusim.zeros(3, 2, device=device)
    v = x._version
    assert x.index_put_((L([1, 2]),), L([4., 5.])) is x
    check(x, [[0., 0.], [4., 5.], [4., 5.]])
    assert x._version == v + 1
    x.index_put_((L([True, False, True]),), L(7.))
    check(x, [[7., 7.], [4., 5.], [7., 7.]])
    # a lone mask with a one-element cpu value is a masked_fill: any value dtype is accepted
    x.index_put_((L([False, True, False]),), mk(9))
    check(x[1], [9., 9.])
    aten.index_put_.default(x, [None, L([1, 0])], L([[1.], [2.], [3.]]))
    check(x, [[1., 1.], [2., 2.], [3., 3.]])


@pytest.mark.parametrize("dtype", DTYPES)
def test_index_put_matches_numpy(device, dtype):
    x, n = sample((4, 3), dtype, device)
    vals, nv = sample((2, 3), dtype, device)
    expected = n.copy()
    expected[[3, 0]] = nv
    check(npusim.index_put(x, (mk([3, 0], device=device),), vals), expected, dtype)


# --- Python indexing: reads ----------------------------------------------------------------------------------

# index expressions with the same meaning in NumPy and torch
NUMPY_SAME = {
    "int": 1, "neg_int": -1, "ints": (1, 2), "ints3": (0, -1, 3), "slice": slice(1, None),
    "slice_none_step": (slice(1, None), None, slice(None, None, 2)), "ellipsis": Ellipsis,
    "ellipsis_int": (Ellipsis, 1), "int_ellipsis_none": (0, Ellipsis, None), "none": None,
    "nones_int": (None, None, 0), "empty_tuple": (), "list": [0, 1], "ndarray": np.array([1, 0]),
    "np_int": np.int64(1), "int_list": (0, [0, 2]), "lists_apart": ([0, 1], slice(None), [0, 2]),
    "slice_int_list": (slice(None), 0, [0, 2]), "list_int_list": ([0, 1], 0, [0, 2]),
    "bool_list": [True, False], "bool_ndarray": np.array([True, False]), "list_ellipsis_list": ([0, 1], ..., [0, 1]),
    "empty_list": [], "range": range(2), "long_slices": (slice(-10, None), slice(0, 10)),
    "slice_list": (slice(1, None), [0, 2]), "none_list": (slice(None), None, [0, 2]),
    "neg_list": [0, -1], "list2d": (np.array([[0]]), np.array([1])),
}


@pytest.mark.parametrize("dtype", [npusim.float32, npusim.int64])
@pytest.mark.parametrize("key", list(NUMPY_SAME))
def test_getitem_matches_numpy(device, dtype, key):
    n = np.arange(24).reshape(2, 3, 4)
    x = mk(n, dtype=dtype, device=device)
    check(x[NUMPY_SAME[key]], n.astype(dtype.np)[NUMPY_SAME[key]], dtype)


def test_getitem_masks_match_numpy(device):
    n = np.arange(24.).reshape(2, 3, 4)
    x = mk(n, device=device)
    check(x[x > 5], n[n > 5])
    check(x[x[:, :, 0] > 5], n[n[:, :, 0] > 5])
    check(x[:, mk([True, False, True], device=device)], n[:, [True, False, True]])
    check(x[x > 100], np.zeros(0))


def test_getitem_integers_are_selects_applied_first(device):
    # NumPy moves the broadcast dims of separated advanced indices to the front; torch selects first
    n = np.arange(24.).reshape(2, 3, 4)
    x = mk(n, device=device)
    check(x[0, :, [1, 3]], n[0][:, [1, 3]])
    check(x[[0, 1], :, 0], n[:, :, 0][[0, 1], :])


def test_getitem_non_contiguous_source(device):
    n = np.arange(24.).reshape(4, 6)
    x = mk(n, device=device).t()
    check(x[[5, 0]], n.T[[5, 0]])
    check(x[1:4:2, [0, 3]], n.T[1:4:2, [0, 3]])


def test_basic_indexing_returns_views_sharing_storage_and_version(device):
    x = npusim.zeros(2, 3, 4, device=device)
    for view in (x[0], x[1:, None, ::2], x[..., 1], x[None], x[...], x[:], x[mk(1)]):
        assert view._base is x
        assert view.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    y = x[1:, None, ::2]
    v = x._version
    y.fill_(1.)
    assert x._version == y._version == v + 1
    assert float(x.sum()) == 8.
    x[0, 0] = 5.
    assert y._version == x._version == v + 2
    assert float(x[0, 0, 3]) == 5.


def test_advanced_indexing_returns_copies(device):
    x = npusim.zeros(2, 3, device=device)
    for r in (x[[0]], x[True], x[x > 0], x[0, [1]], x[False]):
        assert r._base is None
    r = x[[0, 1]]
    r.fill_(1.)
    check(x, np.zeros((2, 3)))


def test_getitem_bools_and_0dim_tensors(device):
    n = np.arange(6.).reshape(2, 3)
    x = mk(n, device=device)
    check(x[True], n[None])
    check(x[False], n[None][:0])
    check(x[True, 0], n[None, 0])
    check(x[0, True], n[0][None])
    check(x[mk(True)], n[None])
    check(x[mk(1)], n[1])
    check(x[mk(1, dtype=npusim.int32)], n[1])
    check(x[mk(0, dtype=npusim.uint8)], n[None][:0])
    check(x[[1.7]], n[[1]])  # list indices become int64, truncating
    check(x[np.array([1.])], n[[1]])
    check(x[np.array([1], np.int16)], n[[1]])
    s = mk(3., device=device)
    check(s[None], [3.])
    check(s[...], 3.)
    check(s[()], 3.)
    check(s[True], [3.])
    check(s[False], np.zeros(0))
    check(s[s > 1], [3.])


def test_getitem_sequence_treated_as_tuple_warns(device):
    n = np.arange(24.).reshape(2, 3, 4)
    x = mk(n, device=device)
    with pytest.warns(UserWarning, match="Using a non-tuple sequence for multidimensional indexing is deprecated"):
        r = x[[[0, 1], [1, 2]]]
    check(r, n[[0, 1], [1, 2]])
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        r = x[[0, slice(None)]]
    check(r, n[0, :])
    assert r._base is x


def test_getitem_uint8_index_is_a_deprecated_mask(device):
    n = np.arange(6.).reshape(2, 3)
    x = mk(n, device=device)
    with pytest.warns(UserWarning, match=re.escape("indexing with dtype torch.uint8 is now deprecated, please use a "
                                                   "dtype torch.bool instead.")):
        r = x[(x > 2).to(npusim.uint8)]
    check(r, n[n > 2])


def test_getitem_slice_bounds_may_be_tensors_and_numpy_ints(device):
    n = np.arange(10.)
    x = mk(n, device=device)
    check(x[mk(2):np.int32(8):mk(3)], n[2:8:3])


# --- Python indexing: writes -------------------------------------------------------------------------------

def test_setitem_basic_scalars_and_broadcast(device):
    x = npusim.zeros(2, 3, device=device)
    v = x._version
    x[0] = 5
    x[1, 1:] = mk([1., 2.], device=device)
    x[:, 0] = mk([[7.], [8.]], device=device)[:, 0]
    check(x, [[7., 5., 5.], [8., 1., 2.]])
    assert x._version == v + 3
    x[...] = mk([1., 2., 3.], device=device)
    x[0] = npusim.ones(1, 1, 3, device=device)  # leading 1s of the value are dropped
    check(x, [[1., 1., 1.], [1., 2., 3.]])
    x[False] = 9.
    assert x._version == v + 5
    x[None] = 0
    check(x, np.zeros((2, 3)))


def test_setitem_converts_scalars_to_the_tensor_dtype(device):
    x = npusim.zeros(3, dtype=npusim.int64, device=device)
    x[0] = 2.7
    x[1] = True
    x[[2]] = np.float64(3.9)
    check(x, [2, 1, 3])
    u = npusim.zeros(2, dtype=npusim.uint8, device=device)
    u[0] = -1
    check(u, [255, 0])
    h = npusim.zeros(2, dtype=npusim.float16, device=device)
    h[0] = 1e6  # float16 targets take any float, as in torch
    check(h, [np.inf, 0])


def test_setitem_advanced(device):
    x = npusim.zeros(2, 3, device=device)
    x[[0, 1], [1, 2]] = mk([5., 6.], device=device)
    check(x, [[0., 5., 0.], [0., 0., 6.]])
    x[x > 4] = 1.
    check(x, [[0., 1., 0.], [0., 0., 1.]])
    x[[0, 0]] = mk([[1., 2., 3.], [4., 5., 6.]], device=device)  # the last write wins
    check(x[0], [4., 5., 6.])
    x[[1]] = npusim.ones(1, 1, 3, device=device) * 9
    check(x[1], [9., 9., 9.])
    x[mk([True, False], device=device)] = mk(0., dtype=npusim.float64)
    check(x[0], [0., 0., 0.])


def test_setitem_through_a_view_reaches_the_base(device):
    x = npusim.zeros(4, device=device)
    y = x[1:3]
    y[0] = 5.
    y[[1]] = 6.
    check(x, [0., 5., 6., 0.])
    assert x._version == y._version == 2


# --- errors ---------------------------------------------------------------------------------------------------

def _set(x, idx, value):
    x[idx] = value


def _expanded(L, d):
    return L.zeros(1, device=d).expand(3)


# (id, call(L, device), exception type, message); "{L}" stands for the library's name
ERRORS = [
    ("gather_float_index", lambda L, d: L.gather(L.zeros(3, 4, device=d), 1, L.tensor([[0.]], device=d)),
     RuntimeError, "gather(): Expected dtype int32/int64 for index"),
    ("gather_ndim", lambda L, d: L.gather(L.zeros(3, 4, device=d), 1, L.tensor([0], device=d)),
     RuntimeError, "Index tensor must have the same number of dimensions as input tensor"),
    ("gather_size", lambda L, d: L.gather(L.zeros(3, 4, device=d), 0, L.zeros(2, 5, dtype=L.int64, device=d)),
     RuntimeError, "Size does not match at dimension 1 expected index [2, 5] to be no larger than self [3, 4] apart "
                   "from dimension 0"),
    ("gather_bounds", lambda L, d: L.gather(L.zeros(3, 4, device=d), 0, L.tensor([[5]], device=d)),
     RuntimeError, "index 5 is out of bounds for dimension 0 with size 3"),
    ("gather_negative", lambda L, d: L.gather(L.zeros(3, 4, device=d), 0, L.tensor([[-1]], device=d)),
     RuntimeError, "index -1 is out of bounds for dimension 0 with size 3"),
    ("gather_dim", lambda L, d: L.gather(L.zeros(3, 4, device=d), 2, L.tensor([[0]], device=d)),
     IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("gather_out_dtype", lambda L, d: L.gather(L.zeros(3, 4, device=d), 1, L.tensor([[0]], device=d),
                                               out=L.zeros(1, 1, dtype=L.float64, device=d)),
     RuntimeError, "Expected out tensor to have dtype float, but got double instead"),
    ("scatter_src_dtype", lambda L, d: L.zeros(3, device=d).scatter(0, L.tensor([0], device=d),
                                                                    L.tensor([1], device=d)),
     RuntimeError, "scatter(): Expected self.dtype to be equal to src.dtype"),
    ("scatter_add_float_index", lambda L, d: L.zeros(3, device=d).scatter_add(0, L.tensor([0.], device=d),
                                                                              L.ones(1, device=d)),
     RuntimeError, "scatter(): Expected dtype int32/int64 for index"),
    ("scatter_size_src", lambda L, d: L.zeros(3, 4, device=d).scatter(1, L.zeros(2, 3, dtype=L.int64, device=d),
                                                                      L.ones(2, 2, device=d)),
     RuntimeError, "Expected index [2, 3] to be no larger than self [3, 4] apart from dimension 1 and to be no larger "
                   "size than src [2, 2]"),
    ("scatter_size_self", lambda L, d: L.zeros(3, 4, device=d).scatter(0, L.zeros(2, 5, dtype=L.int64, device=d), 1.),
     RuntimeError, "Expected index [2, 5] to be no larger than self [3, 4] apart from dimension 0"),
    ("scatter_ndim", lambda L, d: L.zeros(3, 4, device=d).scatter(0, L.zeros(2, dtype=L.int64, device=d),
                                                                  L.ones(2, 5, device=d)),
     RuntimeError, "Index tensor must have the same number of dimensions as self tensor"),
    ("scatter_src_ndim", lambda L, d: L.zeros(3, 3, device=d).scatter(0, L.tensor([[1]], device=d),
                                                                      L.ones(2, 2, 2, device=d)),
     RuntimeError, "Index tensor must have the same number of dimensions as src tensor"),
    ("scatter_bounds", lambda L, d: L.zeros(3, 4, device=d).scatter_(0, L.tensor([[5]], device=d),
                                                                     L.ones(1, 1, device=d)),
     RuntimeError, "index 5 is out of bounds for dimension 0 with size 3"),
    ("scatter_add_bounds", lambda L, d: L.zeros(5, device=d).scatter_add(0, L.tensor([1, -1], device=d),
                                                                          L.ones(2, device=d)),
     RuntimeError, "index -1 is out of bounds for dimension 0 with size 5"),
    ("scatter_reduce_name", lambda L, d: L.zeros(3, device=d).scatter(0, L.tensor([0], device=d),
                                                                      L.ones(1, device=d), reduce="mean"),
     RuntimeError, "reduce argument must be either add or multiply."),
    ("scatter_value_reduce_name", lambda L, d: L.zeros(3, device=d).scatter_(0, L.tensor([0], device=d), 1.,
                                                                             reduce="max"),
     RuntimeError, "reduce argument must be either add or multiply."),
    ("scatter_value_overflow", lambda L, d: L.zeros(3, dtype=L.int8, device=d).scatter(0, L.tensor([1], device=d),
                                                                                       300),
     RuntimeError, "value cannot be converted to type int8_t without overflow"),
    ("scatter_expanded", lambda L, d: _expanded(L, d).scatter_(0, L.tensor([0], device=d), L.tensor([2.], device=d)),
     RuntimeError, "unsupported operation: more than one element of the written-to tensor refers to a single memory "
                   "location. Please clone() the tensor before performing the operation."),
    ("scatter_add_out_dtype", lambda L, d: L.scatter_add(L.zeros(3, device=d), 0, L.tensor([1], device=d),
                                                         L.ones(1, device=d),
                                                         out=L.zeros(3, dtype=L.float64, device=d)),
     RuntimeError, "Expected out tensor to have dtype float, but got double instead"),
    ("index_select_matrix", lambda L, d: L.index_select(L.zeros(3, 4, device=d), 0, L.tensor([[2]], device=d)),
     IndexError, "index_select(): Index is supposed to be a vector"),
    ("index_select_float", lambda L, d: L.index_select(L.zeros(3, 4, device=d), 0, L.tensor([2.], device=d)),
     RuntimeError, "index_select(): Expected dtype int32 or int64 for index"),
    ("index_select_bounds", lambda L, d: L.index_select(L.zeros(3, 4, device=d), 0, L.tensor([3], device=d)),
     IndexError, "index out of range in self"),
    ("index_select_negative", lambda L, d: L.index_select(L.zeros(3, 4, device=d), 0, L.tensor([-1], device=d)),
     IndexError, "index out of range in self"),
    ("index_select_scalar", lambda L, d: L.index_select(L.tensor(5., device=d), 0, L.tensor([0, 0], device=d)),
     RuntimeError, "index_select(): Index to scalar can have only 1 value, got 2 value(s)"),
    ("index_select_out_dtype", lambda L, d: L.index_select(L.zeros(3, device=d), 0, L.tensor([1], device=d),
                                                           out=L.zeros(1, dtype=L.int64, device=d)),
     RuntimeError, "index_select(): self and result must have the same scalar type"),
    ("masked_select_long_mask", lambda L, d: L.masked_select(L.zeros(3, device=d), L.ones(3, dtype=L.int64, device=d)),
     RuntimeError, "masked_select: expected BoolTensor for mask"),
    ("masked_select_shape", lambda L, d: L.masked_select(L.zeros(3, 4, device=d),
                                                         L.tensor([True, False, True], device=d)),
     RuntimeError, "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"),
    ("masked_select_out_dtype", lambda L, d: L.masked_select(L.zeros(3, device=d), L.ones(3, dtype=L.bool, device=d),
                                                             out=L.zeros(0, dtype=L.float64, device=d)),
     RuntimeError, "masked_select(): self and result must have the same scalar type"),
    ("nonzero_out_dtype", lambda L, d: L.nonzero(L.tensor([1, 0], device=d), out=L.zeros(1, 1, device=d)),
     RuntimeError, "nonzero: Expected out tensor to have scalar type Long but got scalar typeFloat"),
    ("nonzero_tuple_out", lambda L, d: L.nonzero(L.tensor([1], device=d), as_tuple=True,
                                                 out=L.zeros(1, 1, dtype=L.int64, device=d)),
     RuntimeError, "nonzero does not support the out kwarg when as_tuple is True"),
    ("masked_fill_long_mask", lambda L, d: L.zeros(3, device=d).masked_fill(L.ones(3, dtype=L.int64, device=d), 1.),
     RuntimeError, "masked_fill_ only supports boolean masks, but got mask with dtype long int"),
    ("masked_fill__byte_mask", lambda L, d: L.zeros(3, device=d).masked_fill_(L.ones(3, dtype=L.uint8, device=d), 1.),
     RuntimeError, "masked_fill_ only supports boolean masks, but got mask with dtype unsigned char"),
    ("masked_fill_value_dim", lambda L, d: L.zeros(3, device=d).masked_fill(L.ones(3, dtype=L.bool, device=d),
                                                                            L.ones(1, device=d)),
     RuntimeError, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s)."),
    ("masked_fill__grows", lambda L, d: L.zeros(4, device=d).masked_fill_(L.tensor([[True], [False]], device=d), 1.),
     RuntimeError, "output with shape [4] doesn't match the broadcast shape [2, 4]"),
    ("masked_fill_shape", lambda L, d: L.zeros(4, device=d).masked_fill(L.tensor([True, False], device=d), 1.),
     RuntimeError, "The size of tensor a (2) must match the size of tensor b (4) at non-singleton dimension 0"),
    ("masked_fill__shape", lambda L, d: L.zeros(4, device=d).masked_fill_(L.tensor([True, False], device=d), 1.),
     RuntimeError, "The size of tensor a (4) must match the size of tensor b (2) at non-singleton dimension 0"),
    ("masked_fill_int8_overflow", lambda L, d: L.zeros(2, dtype=L.int8, device=d).masked_fill(
        L.ones(2, dtype=L.bool, device=d), 300), RuntimeError,
     "value cannot be converted to type int8_t without overflow"),
    ("masked_fill_uint8_overflow", lambda L, d: L.zeros(2, dtype=L.uint8, device=d).masked_fill(
        L.ones(2, dtype=L.bool, device=d), -256), RuntimeError,
     "value cannot be converted to type uint8_t without overflow"),
    ("masked_fill_half_overflow", lambda L, d: L.zeros(2, dtype=L.float16, device=d).masked_fill(
        L.ones(2, dtype=L.bool, device=d), 1e6), RuntimeError,
     "value cannot be converted to type c10::Half without overflow"),
    ("masked_fill_nan_into_long", lambda L, d: L.zeros(2, dtype=L.int64, device=d).masked_fill(
        L.ones(2, dtype=L.bool, device=d), float("nan")), RuntimeError,
     "value cannot be converted to type int64_t without overflow"),
    ("masked_fill_tensor_overflow", lambda L, d: L.zeros(2, dtype=L.int8, device=d).masked_fill(
        L.ones(2, dtype=L.bool, device=d), L.tensor(300.)), RuntimeError,
     "value cannot be converted to type int8_t without overflow"),
    ("index_too_many", lambda L, d: L.ops.aten.index.Tensor(L.zeros(2, 3, device=d), [L.tensor([0])] * 3),
     IndexError, "too many indices for tensor of dimension 2 (got 3)"),
    ("index_float", lambda L, d: L.ops.aten.index.Tensor(L.zeros(3, device=d), [L.tensor([0.])]),
     IndexError, "tensors used as indices must be long, int, byte or bool tensors"),
    ("index_int16", lambda L, d: L.ops.aten.index.Tensor(L.zeros(3, device=d), [L.tensor([0], dtype=L.int16)]),
     IndexError, "tensors used as indices must be long, int, byte or bool tensors"),
    ("index_broadcast", lambda L, d: L.ops.aten.index.Tensor(L.zeros(2, 3, device=d),
                                                             [L.tensor([1, 0]), L.tensor([0, 1, 2])]),
     IndexError, "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]"),
    ("index_bounds", lambda L, d: L.ops.aten.index.Tensor(L.zeros(2, 3, device=d), [L.tensor([2])]),
     IndexError, "index 2 is out of bounds for dimension 0 with size 2"),
    ("index_bounds_second", lambda L, d: L.ops.aten.index.Tensor(L.zeros(2, 3, 4, device=d),
                                                                 [L.tensor([0]), None, L.tensor([-5])]),
     IndexError, "index -5 is out of bounds for dimension 1 with size 4"),
    ("index_empty_dim", lambda L, d: L.ops.aten.index.Tensor(L.zeros(0, 3, device=d), [L.tensor([0])]),
     IndexError, "index is out of bounds for dimension with size 0"),
    ("index_no_indices", lambda L, d: L.ops.aten.index.Tensor(L.zeros(3, device=d), []),
     IndexError, "at least one index must be provided"),
    ("index_mask_shape", lambda L, d: L.ops.aten.index.Tensor(L.zeros(2, 3, 4, device=d),
                                                              [None, L.tensor([True, False])]),
     IndexError, "The shape of the mask [2] at index 0 does not match the shape of the indexed tensor [2, 3, 4] at "
                 "index 1"),
    ("index_put_dtype", lambda L, d: L.index_put(L.zeros(5, device=d), (L.tensor([1]),), L.tensor([1], device=d)),
     RuntimeError, "Index put requires the source and destination dtypes match, got Float for the destination and "
                   "Long for the source."),
    ("index_put_dtype_0dim", lambda L, d: L.index_put(L.zeros(5, device=d), (L.tensor([1]),), L.tensor(1.).double()),
     RuntimeError, "Index put requires the source and destination dtypes match, got Float for the destination and "
                   "Double for the source."),
    ("index_put_shape", lambda L, d: L.index_put(L.zeros(3, 2, device=d), (L.tensor([1, 2]),),
                                                 L.tensor([4., 5., 6.], device=d)),
     RuntimeError, "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of shape [2, 2]"),
    ("index_put_leading_ones", lambda L, d: L.index_put(L.zeros(5, device=d), (L.tensor([1, 2]),),
                                                        L.tensor([[2., 3.]], device=d)),
     RuntimeError, "shape mismatch: value tensor of shape [1, 2] cannot be broadcast to indexing result of shape [2]"),
    ("index_put_bounds", lambda L, d: L.index_put(L.zeros(5, device=d), (L.tensor([5]),), L.tensor([7.], device=d),
                                                  accumulate=True),
     IndexError, "index 5 is out of bounds for dimension 0 with size 5"),
    ("index_put_byte_mask_scalar", lambda L, d: L.index_put(L.zeros(3, device=d),
                                                            (L.tensor([1, 0, 1], dtype=L.uint8, device=d),),
                                                            L.tensor(5.)),
     RuntimeError, "masked_fill_ only supports boolean masks, but got mask with dtype unsigned char"),
    ("index_put_mask_shape", lambda L, d: L.index_put(L.zeros(3, device=d), (L.tensor([True], device=d),),
                                                      L.ones(1, device=d), accumulate=True),
     IndexError, "The shape of the mask [1] at index 0 does not match the shape of the indexed tensor [3] at index 0"),
    ("index_put_too_many", lambda L, d: L.index_put(L.zeros(3, device=d), (L.tensor([0]), L.tensor([0])),
                                                    L.ones(1, device=d)),
     IndexError, "too many indices for tensor of dimension 1 (got 2)"),
    ("index_put_none_index", lambda L, d: L.index_put(L.zeros(3, device=d), (None,), L.ones(1, device=d)),
     TypeError, "expected Tensor as element 0 in argument 1, but got NoneType"),
    ("index_put_method_none_index", lambda L, d: L.zeros(3, device=d).index_put((None,), L.ones(1, device=d)),
     TypeError, "expected Tensor as element 0 in argument 0, but got NoneType"),
    ("index_put__tensor_indices", lambda L, d: L.zeros(3, device=d).index_put_(L.tensor([0]), L.ones(1, device=d)),
     TypeError, "index_put_(): argument 'indices' (position 1) must be tuple of Tensors, not Tensor"),
    ("index_put__number_values", lambda L, d: L.zeros(3, device=d).index_put_((L.tensor([0]),), 1.),
     TypeError, "index_put_(): argument 'values' (position 2) must be Tensor, not float"),
    ("getitem_bounds", lambda L, d: L.zeros(3, 2, device=d)[5],
     IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    ("getitem_negative_bounds", lambda L, d: L.zeros(3, 2, device=d)[-4],
     IndexError, "index -4 is out of bounds for dimension 0 with size 3"),
    ("getitem_bounds_second", lambda L, d: L.zeros(3, 2, device=d)[0, 5],
     IndexError, "index 5 is out of bounds for dimension 1 with size 2"),
    ("getitem_bounds_after_none", lambda L, d: L.zeros(2, 3, device=d)[None, 5],
     IndexError, "index 5 is out of bounds for dimension 1 with size 2"),
    ("getitem_list_bounds", lambda L, d: L.zeros(2, 3, device=d)[:, [5]],
     IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    ("getitem_too_many", lambda L, d: L.zeros(3, 2, device=d)[0, 0, 0],
     IndexError, "too many indices for tensor of dimension 2"),
    ("getitem_negative_step", lambda L, d: L.zeros(3, device=d)[::-1],
     ValueError, "step must be greater than zero"),
    ("getitem_zero_step", lambda L, d: L.zeros(3, device=d)[::0],
     ValueError, "slice step cannot be zero"),
    ("getitem_float", lambda L, d: L.zeros(3, device=d)[1.0],
     IndexError, "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices "
                 "(got float)"),
    ("getitem_numpy_bool", lambda L, d: L.zeros(3, device=d)[np.bool_(True)],
     IndexError, "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices "
                 "(got numpy.bool)"),
    ("getitem_float_slice", lambda L, d: L.zeros(3, device=d)[1.5:],
     TypeError, "slice indices must be integers or None or have an __index__ method"),
    ("getitem_float_tensor", lambda L, d: L.zeros(3, device=d)[L.tensor([1.], device=d)],
     IndexError, "tensors used as indices must be long, int, byte or bool tensors"),
    ("getitem_mask_shape", lambda L, d: L.zeros(2, device=d)[L.tensor([True, False, True], device=d)],
     IndexError, "The shape of the mask [3] at index 0 does not match the shape of the indexed tensor [2] at index 0"),
    ("getitem_broadcast", lambda L, d: L.zeros(2, 3, device=d)[[0, 1], [0, 1, 2]],
     IndexError, "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]"),
    ("getitem_0dim", lambda L, d: L.tensor(3., device=d)[0],
     IndexError, "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to "
                 "convert a 0-dim tensor to a number"),
    ("getitem_0dim_bounds", lambda L, d: L.tensor(3., device=d)[1],
     IndexError, "index 1 is out of bounds for dimension 0 with size 0"),
    ("getitem_0dim_list", lambda L, d: L.tensor(3., device=d)[[0]],
     IndexError, "too many indices for tensor of dimension 0"),
    ("getitem_0dim_tensor", lambda L, d: L.tensor(3., device=d)[L.tensor([0], device=d)],
     IndexError, "too many indices for tensor of dimension 0"),
    ("getitem_0dim_slice", lambda L, d: L.tensor(3., device=d)[1:],
     IndexError, "slice() cannot be applied to a 0-dim tensor."),
    ("getitem_0dim_slice_in_tuple", lambda L, d: L.tensor(3., device=d)[..., 1:],
     IndexError, "too many indices for tensor of dimension 0"),
    ("setitem_0dim_slice", lambda L, d: _set(L.tensor(3., device=d), slice(None), 1.),
     IndexError, "slice() cannot be applied to a 0-dim tensor."),
    ("getitem_mask_too_many_dims", lambda L, d: L.zeros(2, device=d)[L.ones(2, 2, dtype=L.bool, device=d)],
     IndexError, "too many indices for tensor of dimension 1"),
    ("getitem_set", lambda L, d: L.zeros(3, device=d)[{0}],
     IndexError, "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices "
                 "(got set)"),
    ("setitem_list_value", lambda L, d: _set(L.zeros(3, device=d), 0, [1, 2, 3]),
     TypeError, "can't assign a list to a {L}.FloatTensor"),
    ("setitem_ndarray_value", lambda L, d: _set(L.zeros(2, dtype=L.int64, device=d), [0], np.array([1.])),
     TypeError, "can't assign a numpy.ndarray to a {L}.LongTensor"),
    ("setitem_none_value", lambda L, d: _set(L.zeros(3, device=d), 0, None),
     TypeError, "can't assign a NoneType to a {L}.FloatTensor"),
    ("setitem_int8_overflow", lambda L, d: _set(L.zeros(3, dtype=L.int8, device=d), 0, 300),
     RuntimeError, "value cannot be converted to type int8_t without overflow"),
    ("setitem_advanced_overflow", lambda L, d: _set(L.zeros(3, dtype=L.int8, device=d), [0], 300.5),
     RuntimeError, "value cannot be converted to type int8_t without overflow"),
    ("setitem_float_overflow", lambda L, d: _set(L.zeros(3, device=d), 0, 1e300),
     RuntimeError, "value cannot be converted to type float without overflow"),
    ("setitem_nan_into_long", lambda L, d: _set(L.zeros(3, dtype=L.int64, device=d), 0, float("nan")),
     RuntimeError, "value cannot be converted to type int64_t without overflow"),
    ("setitem_dtype", lambda L, d: _set(L.zeros(2, 3, device=d), [0, 1], L.tensor([1, 2, 3], device=d)),
     RuntimeError, "Index put requires the source and destination dtypes match, got Float for the destination and "
                   "Long for the source."),
    ("setitem_basic_shape", lambda L, d: _set(L.zeros(2, 3, device=d), 0, L.ones(2, device=d)),
     RuntimeError, "The expanded size of the tensor (3) must match the existing size (2) at non-singleton dimension 0."
                   "  Target sizes: [3].  Tensor sizes: [2]"),
    ("setitem_advanced_shape", lambda L, d: _set(L.zeros(2, 3, device=d), [0, 1], L.ones(2, device=d)),
     RuntimeError, "shape mismatch: value tensor of shape [2] cannot be broadcast to indexing result of shape [2, 3]"),
    ("setitem_bounds", lambda L, d: _set(L.zeros(2, 3, device=d), 5, 1.),
     IndexError, "index 5 is out of bounds for dimension 0 with size 2"),
    ("setitem_list_bounds", lambda L, d: _set(L.zeros(2, 3, device=d), [5], 1.),
     IndexError, "index 5 is out of bounds for dimension 0 with size 2"),
    ("setitem_negative_step", lambda L, d: _set(L.zeros(2, 3, device=d), slice(None, None, -1), 1.),
     ValueError, "step must be greater than zero"),
]


# cases whose indices live on the device: in cuda mode they are checked there and reported later
DEFERRED = {"gather_bounds": DC.GATHER, "gather_negative": DC.GATHER, "scatter_bounds": DC.SCATTER,
            "scatter_add_bounds": DC.SCATTER, "index_select_bounds": DC.INDEX_SELECT,
            "index_select_negative": DC.INDEX_SELECT}


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_bad_input_raises(device, case):
    name, call, exc, message = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name in DEFERRED and checked_on_device(device):
            with reported_later(DEFERRED[name]):
                call(npusim, device)
            return
        lib = "npusim" if device == "cpu" else f"npusim.{device}"
        with pytest.raises(exc, match=re.escape(message.format(L=lib))):
            call(npusim, device)


@pytest.mark.oracle
@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_bad_input_raises_like_torch(torch, case):
    _, call, exc, message = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc) as info:
            call(torch, "cpu")
    assert str(info.value).split("\n")[0] == message.format(L="torch")


def test_indices_on_another_device_are_refused():
    if not (hasattr(npusim, "npu") and npusim.npu.is_available()):
        pytest.skip("needs the npu device to mix devices")
    x = npusim.zeros(3)
    with pytest.raises(IndexError, match=re.escape("indices should be either on cpu or on the same device as the "
                                                   "indexed tensor (cpu)")):
        aten.index.Tensor(x, [mk([0], device="npu")])
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        npusim.gather(x, 0, mk([0], device="npu"))
    with pytest.raises(RuntimeError, match=re.escape("Expected out tensor to have device cpu, but got npu:0 instead")):
        npusim.gather(x, 0, mk([0]), out=npusim.zeros(1, device="npu"))


def test_expanded_writes_warn_and_write_through(device):
    with pytest.warns(UserWarning, match="Use of index_put_ on expanded tensors is deprecated"):
        r = npusim.zeros(1, device=device).expand(3).index_put_((mk([0, 1], device=device),),
                                                                mk([1., 2.], device=device))
    check(r, [2., 2., 2.])
    with pytest.warns(UserWarning, match="Use of masked_fill_ on expanded tensors is deprecated"):
        r = npusim.zeros(1, device=device).expand(3).masked_fill_(mk([True, False, False], device=device), 2.)
    check(r, [2., 2., 2.])


# --- against torch ---------------------------------------------------------------------------------------------

# index builders run in both libraries: L is npusim or torch, x the indexed tensor (shape 2x3x4)
GETITEM_ORACLE = {
    **{k: (lambda v: lambda L, x: v)(v) for k, v in NUMPY_SAME.items()},
    "true": lambda L, x: True, "false": lambda L, x: False, "true_int": lambda L, x: (True, 0),
    "int_true": lambda L, x: (0, True), "true_list": lambda L, x: (True, [0]), "list_true": lambda L, x: ([0, 1], True),
    "nested_list": lambda L, x: [[0, 1], [1, 2]], "list_with_slice": lambda L, x: [0, slice(None)],
    "list_with_none": lambda L, x: [0, None], "tensor_0dim": lambda L, x: L.tensor(1),
    "tensor_0dim_bool": lambda L, x: L.tensor(True), "tensor_0dim_uint8": lambda L, x: L.tensor(0, dtype=L.uint8),
    "tensor_1": lambda L, x: L.tensor([1]), "ints_select_first": lambda L, x: (0, slice(None), [1, 3]),
    "list_slice_int": lambda L, x: ([0, 1], slice(None), 0), "list_none_list": lambda L, x: ([1], None, [0]),
    "none_lists": lambda L, x: (None, [1], [0]), "mask": lambda L, x: x > 5, "mask2d": lambda L, x: x[:, :, 0] > 5,
    "mask2d_int": lambda L, x: (x[:, :, 0] > -1, 0), "mask2d_ellipsis_int": lambda L, x: (x[:, :, 0] > -1, ..., 0),
    "mask_dim1": lambda L, x: (slice(None), L.tensor([True, False, True])), "byte_mask": lambda L, x: (x > 5).byte(),
    "float_list": lambda L, x: [1.7], "int16_ndarray": lambda L, x: np.array([1], dtype=np.int16),
    "float_ndarray": lambda L, x: np.array([1.]), "ndarray_0dim": lambda L, x: np.array(1),
    "double_ellipsis": lambda L, x: (..., 0, ...), "ellipsis_none_list": lambda L, x: (..., None, [1]),
    "tensor_slice_bounds": lambda L, x: slice(L.tensor(1), None), "list_tensor0d": lambda L, x: ([0, 1], L.tensor(1)),
    "nested_ndarray": lambda L, x: [np.array([0, 1])], "list_bools_ints": lambda L, x: [0, True],
    "none_int_ellipsis_none": lambda L, x: (None, 1, ..., None),
}


@pytest.mark.oracle
@pytest.mark.parametrize("key", list(GETITEM_ORACLE))
def test_getitem_like_torch(torch, key):
    n = np.arange(24.).reshape(2, 3, 4).astype(np.float32)
    x, tx = npusim.tensor(n), torch.tensor(n)
    build = GETITEM_ORACLE[key]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r, tr = x[build(npusim, x)], tx[build(torch, tx)]
    same_as_torch(r, tr)
    assert (r._base is x) == (tr._base is tx)
    if tr._base is tx:   # a view: it reads the memory with torch's strides
        assert r.stride() == tr.stride()


# (index builder, value builder, dtype name of the written tensor), on zeros(2, 3)
SETITEM_ORACLE = {
    "int_scalar": (lambda L, x: 0, lambda L: 5, None),
    "float_into_long": (lambda L, x: 0, lambda L: 2.7, "int64"),
    "tensor_broadcast": (lambda L, x: 0, lambda L: L.tensor([1., 2., 3.]), None),
    "long_tensor_basic": (lambda L, x: 0, lambda L: L.tensor([1, 2, 3]), None),
    "list_scalar": (lambda L, x: [0, 1], lambda L: 5, None),
    "lists_tensor": (lambda L, x: ([0, 1], [1, 2]), lambda L: L.tensor([5., 6.]), None),
    "leading_ones_basic": (lambda L, x: 0, lambda L: L.ones(1, 1, 3), None),
    "leading_ones_advanced": (lambda L, x: [0], lambda L: L.ones(1, 1, 3), None),
    "leading_ones_advanced2": (lambda L, x: [0, 1], lambda L: L.ones(1, 2, 3), None),
    "false": (lambda L, x: False, lambda L: 5, None),
    "true": (lambda L, x: True, lambda L: 5, None),
    "true_long_tensor": (lambda L, x: True, lambda L: L.ones(1, 2, 3, dtype=L.int64), None),
    "none": (lambda L, x: None, lambda L: 5, None),
    "ellipsis": (lambda L, x: ..., lambda L: L.tensor([1., 2., 3.]), None),
    "mask_tensor": (lambda L, x: L.tensor([[True, False, True], [False, False, True]]),
                    lambda L: L.tensor([1., 2., 3.]), None),
    "mask_scalar": (lambda L, x: L.tensor([[True, False, True], [False, False, True]]), lambda L: 9, None),
    "mask_double_0dim": (lambda L, x: L.tensor([[True, False, True], [False, False, False]]),
                         lambda L: L.tensor(7., dtype=L.float64), None),
    "row_mask_long_1elem": (lambda L, x: L.tensor([True, False]), lambda L: L.tensor([3]), None),
    "duplicates": (lambda L, x: [0, 0], lambda L: L.tensor([[1., 2., 3.], [4., 5., 6.]]), None),
    "tensor_0dim_index": (lambda L, x: L.tensor(1), lambda L: 3, None),
    "bool_value": (lambda L, x: 0, lambda L: True, None),
    "uint8_negative": (lambda L, x: 0, lambda L: -1, "uint8"),
    "half_overflow": (lambda L, x: 0, lambda L: 1e6, "float16"),
    "half_advanced_overflow": (lambda L, x: [0], lambda L: 1e6, "float16"),
    "bfloat16_big_int": (lambda L, x: 0, lambda L: 2 ** 62, "bfloat16"),
    "numpy_scalar": (lambda L, x: 0, lambda L: np.float64(2.5), None),
    "numpy_int": (lambda L, x: (slice(None), 1), lambda L: np.int64(2), None),
    "column_tensor": (lambda L, x: (slice(None), 1), lambda L: L.tensor([7., 8.]), None),
    "true_tuple": (lambda L, x: (True, 0), lambda L: L.tensor([1., 2., 3.]), None),
    "mask_from_self": (lambda L, x: x == 0, lambda L: 4., None),
    "slice_list": (lambda L, x: (slice(None), [0, 2]), lambda L: L.tensor([[1.], [2.]]), None),
    "double_0dim_basic": (lambda L, x: 0, lambda L: L.tensor(2.5, dtype=L.float64), None),
}


@pytest.mark.oracle
@pytest.mark.parametrize("key", list(SETITEM_ORACLE))
def test_setitem_like_torch(torch, key):
    index, value, dtype = SETITEM_ORACLE[key]
    x = npusim.zeros(2, 3, dtype=lib_dtype(npusim, dtype))
    tx = torch.zeros(2, 3, dtype=lib_dtype(torch, dtype))
    v, tv = x._version, tx._version
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x[index(npusim, x)] = value(npusim)
        tx[index(torch, tx)] = value(torch)
    same_as_torch(x, tx)
    assert x._version - v == tx._version - tv


def _pair(torch, n, dtype=None):
    return npusim.tensor(n, dtype=lib_dtype(npusim, dtype)), torch.tensor(n, dtype=lib_dtype(torch, dtype))


# op builders run in both libraries on (L, x) with x = arange(12).reshape(3, 4) of the given dtype
OPS_ORACLE = {
    "gather": lambda L, x: L.gather(x, 1, L.tensor([[0, 3], [2, 0], [1, 1]])),
    "gather_int32": lambda L, x: x.gather(0, L.tensor([[2, 0, 1, 2]], dtype=L.int32)),
    "gather_0dim_index": lambda L, x: L.gather(x[0], 0, L.tensor(3)),
    "scatter_src": lambda L, x: x.scatter(1, L.tensor([[0, 1], [2, 0]]), L.ones(2, 3, dtype=x.dtype)),
    "scatter_value": lambda L, x: x.scatter(0, L.tensor([[2, 1, 0, 2]]), 7),
    "scatter_duplicates": lambda L, x: x.scatter(1, L.tensor([[1, 1, 1]]), L.tensor([[1, 0, 1]], dtype=x.dtype)),
    "scatter_reduce_add": lambda L, x: x.scatter(1, L.tensor([[0, 0]]), L.ones(1, 2, dtype=x.dtype), reduce="add"),
    "scatter_reduce_mul": lambda L, x: x.scatter(1, L.tensor([[3, 3]]), L.full((1, 2), 3, dtype=x.dtype),
                                                 reduce="multiply"),
    "scatter_value_reduce": lambda L, x: x.scatter(0, L.tensor([[1, 1]]), 2, reduce="multiply"),
    "scatter_add": lambda L, x: x.scatter_add(0, L.tensor([[0, 0, 2, 2], [0, 1, 2, 2]]), L.ones(2, 4, dtype=x.dtype)),
    "scatter_add_": lambda L, x: x.clone().scatter_add_(-1, L.tensor([[0, 0]] * 3), L.ones(3, 2, dtype=x.dtype)),
    "index_select": lambda L, x: L.index_select(x, 1, L.tensor([3, 0, 3])),
    "index_select_0dim": lambda L, x: x.index_select(0, L.tensor(2)),
    "masked_select": lambda L, x: L.masked_select(x, L.tensor([True, False, True, False])),
    "masked_select_bcast": lambda L, x: L.masked_select(x[0], L.tensor([[True], [False]])),
    "nonzero": lambda L, x: L.nonzero(x),
    "nonzero_0dim": lambda L, x: L.nonzero(x[0, 1]),
    "masked_fill": lambda L, x: x.masked_fill(L.tensor([True, False, True, False]), 1),
    "masked_fill_tensor": lambda L, x: x.masked_fill(L.tensor([True, False, True, False]), L.tensor(1)),
    "masked_fill_bcast_self": lambda L, x: x[0].masked_fill(L.tensor([[True], [False]]), 1),
    "masked_fill_": lambda L, x: x.clone().masked_fill_(L.tensor([True, False, True, False]), 2),
    "index": lambda L, x: L.ops.aten.index.Tensor(x, [L.tensor([2, 0]), L.tensor([1, 3])]),
    "index_apart": lambda L, x: L.ops.aten.index.Tensor(x[None], [L.tensor([0]), None, L.tensor([3, 1])]),
    "index_mask": lambda L, x: L.ops.aten.index.Tensor(x, [None, L.tensor([True, False, False, True])]),
    "index_put": lambda L, x: L.index_put(x, (L.tensor([0, 0, 2]),), L.ones(4, dtype=x.dtype)),
    "index_put_acc": lambda L, x: L.index_put(x, (L.tensor([0, 0, 2]),), L.ones(4, dtype=x.dtype), True),
    "index_put_2d": lambda L, x: x.clone().index_put_((L.tensor([0, 2]), L.tensor([1, 1])),
                                                      L.ones(2, dtype=x.dtype), accumulate=True),
    "index_put_mask": lambda L, x: L.index_put(x, (x > 5,), L.zeros((), dtype=x.dtype)),
}


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64", "uint8", "bool"])
@pytest.mark.parametrize("key", list(OPS_ORACLE))
def test_ops_like_torch(torch, key, dtype):
    n = np.arange(12).reshape(3, 4)
    x, tx = _pair(torch, n, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same_as_torch(OPS_ORACLE[key](npusim, x), OPS_ORACLE[key](torch, tx))


@pytest.mark.oracle
def test_accumulation_rounding_like_torch(torch):
    for dt in ("float16", "bfloat16"):
        x, tx = _pair(torch, np.zeros(3), dt)
        v, tv = _pair(torch, np.full(5, 0.1), dt)
        i, ti = _pair(torch, np.zeros(5, np.int64))
        same_as_torch(npusim.index_put(x, (i,), v, True), torch.index_put(tx, (ti,), tv, True))
        same_as_torch(x.scatter_add(0, i, v), tx.scatter_add(0, ti, tv))


@pytest.mark.oracle
def test_expanded_writes_like_torch(torch):
    for L in (npusim, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            r = L.zeros(1).expand(3).index_put_((L.tensor([0, 1]),), L.tensor([1., 2.]), accumulate=True)
        assert r.tolist() == [3., 3., 3.]
        assert "Use of index_put_ on expanded tensors is deprecated" in str(caught[0].message)


def _random_index(L, rnd):
    """A random mix of basic and advanced index items (same draws for both libraries)."""
    items = []
    for _ in range(rnd.randint(1, 4)):
        k = rnd.random()
        if k < 0.2:
            items.append(rnd.randint(-3, 3))
        elif k < 0.4:
            items.append(slice(rnd.choice([None, -2, 0, 1]), rnd.choice([None, -1, 2, 5]), rnd.choice([None, 1, 2])))
        elif k < 0.5:
            items.append(None)
        elif k < 0.55:
            items.append(Ellipsis)
        elif k < 0.6:
            items.append(rnd.random() < 0.5)
        elif k < 0.75:
            items.append([rnd.randint(-2, 2) for _ in range(rnd.randint(1, 3))])
        elif k < 0.85:
            items.append(L.tensor([rnd.randint(-2, 2) for _ in range(rnd.randint(1, 2))]))
        elif k < 0.9:
            items.append(L.tensor(rnd.randint(0, 1)))
        else:
            items.append(L.tensor([rnd.random() < 0.5 for _ in range(rnd.randint(1, 3))]))
    return tuple(items)


def _outcome(fn):
    try:
        return fn(), None
    except Exception as e:  # noqa: BLE001 - the error itself is what gets compared
        return None, (type(e), str(e).split("\n")[0].replace("torch.", "npusim."))


@pytest.mark.oracle
def test_random_indexing_like_torch(torch):
    import random
    n = np.arange(18.).reshape(2, 3, 3).astype(np.float32)
    for seed in range(300):
        x, tx = npusim.tensor(n), torch.tensor(n)
        r, err = _outcome(lambda: x[_random_index(npusim, random.Random(seed))])
        tr, terr = _outcome(lambda: tx[_random_index(torch, random.Random(seed))])
        assert err == terr, seed
        if err is None:
            same_as_torch(r, tr)
            assert (r._base is x) == (tr._base is tx), seed
            shape = tuple(tr.shape[1:])  # broadcasts over the indexed result
            value = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) + 50
        else:
            value = np.float32(50.)
        v, tv = npusim.tensor(value), torch.tensor(value)
        _, err = _outcome(lambda: x.__setitem__(_random_index(npusim, random.Random(seed)), v))
        _, terr = _outcome(lambda: tx.__setitem__(_random_index(torch, random.Random(seed)), tv))
        assert err == terr, seed
        if err is None:  # (after an out-of-range error torch may have written part of the values)
            same_as_torch(x, tx)
            assert x._version == tx._version, seed
