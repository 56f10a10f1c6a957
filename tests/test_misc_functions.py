"""Assorted torch-namespace functions: searchsorted/bucketize/isin, meshgrid and combinatorics, stacking,
window functions, trapezoid, vander, cov/corrcoef, utilities, global flags and the Tensor methods
(cov, msort, frexp, fill_diagonal_, renorm, split_with_sizes, narrow_copy, new).

Oracle tests compare values, dtypes and shapes with torch on every device; the rest check hand-computed
values, NumPy references, float64 gradients and torch's errors without torch.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from conftest import host

import npusim

X = [[1.0, 2, 4, 7], [3, 1, 0, 2], [2, 2, 5, 1]]
R = [[1.0, 2, 3], [3, 4, 5], [0.1, 0.2, 0.1]]

# (name, fn(lib, tensor_factory)) pairs run against both libraries
CASES = [
    ("searchsorted_right", lambda L, T: L.searchsorted(T([1., 2, 3, 4]), T([[0.5, 2, 3.5]]), right=True)),
    ("searchsorted_rows_int32", lambda L, T: L.searchsorted(T([[1., 2, 3], [2, 4, 6]]), T([[2.], [5.]]),
                                                            side="right", out_int32=True)),
    ("searchsorted_sorter", lambda L, T: L.searchsorted(T([3., 1, 2]), T([2.]), sorter=T([1, 2, 0]))),
    ("searchsorted_scalar_promotes", lambda L, T: L.searchsorted(T([1, 2, 3]), 2.5)),
    ("bucketize", lambda L, T: L.bucketize(T([1, 5, 9]), T([1, 3, 5, 7]), right=True)),
    ("bucketize_scalar", lambda L, T: L.bucketize(4, T([1, 3, 5, 7]))),
    ("isin", lambda L, T: L.isin(T([1, 2, 3, 4]), T([2., 4.5, 4]))),
    ("isin_invert_scalar", lambda L, T: L.isin(T([1, 2, 3, 4]), 2, invert=True)),
    ("isin_scalar_elem", lambda L, T: L.isin(3, T([1, 2, 3]))),
    ("frexp", lambda L, T: tuple(L.frexp(T([0., 8., -0.3, 1e-40, 5.])))),
    ("frexp_bf16", lambda L, T: tuple(T([3., -0.1], dtype=L.bfloat16).frexp())),
    ("meshgrid_xy", lambda L, T: L.meshgrid(T([1, 2, 3]), T([4, 5]), indexing="xy")),
    ("meshgrid_ij_list", lambda L, T: L.meshgrid([T([1, 2, 3]), T(4), T([4, 5])], indexing="ij")),
    ("cartesian_prod", lambda L, T: L.cartesian_prod(T([1, 2]), T([3, 4, 5]))),
    ("combinations", lambda L, T: L.combinations(T([1., 2, 3, 4]), 3)),
    ("combinations_repl", lambda L, T: L.combinations(T([1., 2, 3]), with_replacement=True)),
    ("combinations_too_many", lambda L, T: L.combinations(T([1, 2]), 3)),
    ("combinations_r0", lambda L, T: L.combinations(T([1, 2]), 0)),
    ("block_diag", lambda L, T: L.block_diag(T(1), T([1., 2]), T([[1, 2], [3, 4]]))),
    ("block_diag_empty_rows", lambda L, T: L.block_diag(T([[1, 2]]), T([[1, 2, 3]])[:0])),
    ("column_stack", lambda L, T: L.column_stack([T([1, 2]), T([[3, 4], [5, 6]])])),
    ("dstack", lambda L, T: L.dstack([T([1, 2]), T([[3, 4]])])),
    ("row_stack", lambda L, T: L.row_stack([T([1, 2]), T([3, 4])])),
    ("atleast_3d", lambda L, T: (L.atleast_3d(T([1, 2])), L.atleast_3d(T([[1, 2]])))),
    ("atleast_3d_many", lambda L, T: L.atleast_3d(T(1), T([[1]]))),
    ("logspace", lambda L, T: L.logspace(0, 2, 5, device=T(0).device)),
    ("logspace_int", lambda L, T: L.logspace(0, 3, 4, dtype=L.int64, device=T(0).device)),
    ("logspace_base2", lambda L, T: L.logspace(-1, 1, 7, base=2, dtype=L.float64, device=T(0).device)),
    ("kaiser_beta", lambda L, T: L.kaiser_window(7, False, 5.0, dtype=L.float64, device=T(0).device)),
    ("hamming_alpha_beta", lambda L, T: L.hamming_window(7, True, 0.6, 0.3, dtype=L.float64, device=T(0).device)),
    ("unravel_index", lambda L, T: L.unravel_index(T([[5], [-7]]), (2, 3))),
    ("unravel_index_int_shape", lambda L, T: L.unravel_index(T(5, dtype=L.int32), 6)),
    ("trapezoid", lambda L, T: L.trapezoid(T(X))),
    ("trapezoid_x", lambda L, T: L.trapezoid(T(X), T([1., 3, 4, 8]))),
    ("trapezoid_x_dim0", lambda L, T: L.trapezoid(T(X), T([1., 3, 4]), dim=0)),
    ("trapezoid_x_2d", lambda L, T: L.trapezoid(T(R), T([[1., 3, 4], [0, 1, 5], [0, 2, 3]]))),
    ("trapz_dx_int", lambda L, T: L.trapz(T([1, 2, 3]), dx=2)),
    ("trapezoid_int_x", lambda L, T: L.trapezoid(T([1, 2, 3]), T([1, 2, 4]))),
    ("trapezoid_empty", lambda L, T: L.trapezoid(T(X)[:, :0])),
    ("cumulative_trapezoid", lambda L, T: L.cumulative_trapezoid(T(X))),
    ("cumulative_trapezoid_x", lambda L, T: L.cumulative_trapezoid(T(X), T([1., 3, 4, 8]))),
    ("cumulative_trapezoid_dx", lambda L, T: L.cumulative_trapezoid(T(X), dx=0.5, dim=0)),
    ("cumulative_trapezoid_int", lambda L, T: L.cumulative_trapezoid(T([1, 2, 3]))),
    ("vander", lambda L, T: L.vander(T([1, 2, 3]))),
    ("vander_n_increasing", lambda L, T: L.vander(T([1., 2, 3]), 4, True)),
    ("vander_bool", lambda L, T: L.vander(T([True, False]))),
    ("vander_n0", lambda L, T: L.vander(T([1, 2]), N=0)),
    ("cov", lambda L, T: L.cov(T(X))),
    ("cov_int_1d", lambda L, T: L.cov(T([1, 2, 4]))),
    ("cov_fweights", lambda L, T: L.cov(T(X), fweights=T([1, 2, 1, 3]))),
    ("cov_aweights", lambda L, T: L.cov(T(X), aweights=T([.5, 2, 1, 3]))),
    ("cov_both_correction2", lambda L, T: L.cov(T(X), correction=2, fweights=T([1, 2, 1, 3]),
                                                aweights=T([.5, 2, 1, 3]))),
    ("tensor_cov", lambda L, T: T(X).cov(correction=0)),
    ("corrcoef", lambda L, T: L.corrcoef(T(X))),
    ("corrcoef_int", lambda L, T: T([[1, 2, 3], [3, 1, 2]]).corrcoef()),
    ("corrcoef_1d", lambda L, T: L.corrcoef(T([1., 2, 3]))),
    ("msort", lambda L, T: (L.msort(T([[3, 1], [1, 2]])), T([[3., 1], [1, 2]]).msort())),
    ("renorm", lambda L, T: L.renorm(T(R), 2, 0, 3)),
    ("renorm_p1_dim1", lambda L, T: L.renorm(T(R), 1, 1, 2.5)),
    ("renorm_inf", lambda L, T: T(R).renorm(float("inf"), -1, 2)),
    ("renorm_half", lambda L, T: T(R, dtype=L.float16).renorm(2, 0, 3)),
    ("split_with_sizes", lambda L, T: T([1, 2, 3, 4]).split_with_sizes([1, 3])),
    ("narrow_copy", lambda L, T: (L.narrow_copy(T([[1, 2, 3], [4, 5, 6]]), 1, 1, 2), T([1, 2, 3]).narrow_copy(0, 1, 2))),
    ("new_data", lambda L, T: (T([1., 2]).new([1, 2]), T([1, 2]).new(((1, 2), (3, 4))))),
    ("range", lambda L, T: (L.range(1, 4, device=T(0).device), L.range(0, 1, 0.3, device=T(0).device),
                            L.range(4, 1, -1, dtype=L.int64, device=T(0).device))),
]
for _w in ("hann", "hamming", "blackman", "bartlett", "kaiser"):
    for _periodic in (True, False):
        CASES.append((f"{_w}_window_{_periodic}", lambda L, T, w=_w, p=_periodic: tuple(
            getattr(L, w + "_window")(n, p, device=T(0).device) for n in (0, 1, 5, 8))))


def _flat(r):
    if isinstance(r, (tuple, list)):
        return [x for item in r for x in _flat(item)]
    return [r]


@pytest.mark.oracle
@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(name, fn, device, torch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # torch.range's deprecation warning
        ours = _flat(fn(npusim, lambda *a, **k: npusim.tensor(*a, device=device, **k)))
        theirs = _flat(fn(torch, lambda *a, **k: torch.tensor(*a, **k)))
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.device.type == device
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        assert tuple(a.shape) == tuple(b.shape)
        expected = b.float().numpy() if b.dtype is torch.bfloat16 else b.numpy()
        np.testing.assert_allclose(host(a), expected, rtol=1e-5, atol=1e-6, equal_nan=True)


# --- torch-free values ----------------------------------------------------------------------------------------

def test_searchsorted_matches_numpy_both_sides(device):
    rng = np.random.default_rng(0)
    b = np.sort(rng.integers(0, 10, 20)).astype(np.float64)
    v = rng.integers(-1, 11, (3, 4)).astype(np.float64)
    bt, vt = npusim.tensor(b, device=device), npusim.tensor(v, device=device)
    for side in ("left", "right"):
        r = npusim.searchsorted(bt, vt, side=side)
        assert r.dtype is npusim.int64 and r.device.type == device
        np.testing.assert_array_equal(host(r), np.searchsorted(b, v, side=side))


def test_isin_nan_matches_nothing_and_bucketize_edges(device):
    nan = float("nan")
    r = npusim.isin(npusim.tensor([1., nan, 3.], device=device), npusim.tensor([nan, 3.], device=device))
    assert host(r).tolist() == [False, False, True]
    # a value equal to a boundary lands left of it unless right=True
    b = npusim.tensor([1, 3, 5], device=device)
    assert host(npusim.bucketize(npusim.tensor([3], device=device), b)).tolist() == [1]
    assert host(npusim.bucketize(npusim.tensor([3], device=device), b, right=True)).tolist() == [2]


def test_frexp_reconstructs_and_handles_specials(device):
    x = npusim.tensor([0., 8., -0.3, 5e-324, math.inf], dtype=npusim.float64, device=device)
    m, e = npusim.frexp(x)
    assert e.dtype is npusim.int32 and m.dtype is npusim.float64
    np.testing.assert_array_equal(host(e), [0, 4, -1, -1073, 0])
    np.testing.assert_array_equal(host(m), [0., 0.5, -0.6, 0.5, math.inf])


def test_windows_hand_values(device):
    np.testing.assert_allclose(host(npusim.hann_window(4, device=device)), [0, 0.5, 1, 0.5], atol=1e-7)
    np.testing.assert_allclose(host(npusim.bartlett_window(5, False, dtype=npusim.float64, device=device)),
                               [0, 0.5, 1, 0.5, 0])
    np.testing.assert_allclose(host(npusim.blackman_window(5, False, dtype=npusim.float64, device=device)),
                               np.blackman(5), atol=1e-15)
    np.testing.assert_allclose(host(npusim.kaiser_window(6, False, 3.0, dtype=npusim.float64, device=device)),
                               np.kaiser(6, 3.0), rtol=1e-12)
    assert npusim.hamming_window(3, dtype=npusim.float64, requires_grad=True).requires_grad


def test_cov_and_corrcoef_match_numpy(device):
    x = np.array(X)
    fw, aw = np.array([1, 2, 1, 3]), np.array([.5, 2, 1, 3])
    t = npusim.tensor(x, device=device)
    got = npusim.cov(t, fweights=npusim.tensor(fw, device=device), aweights=npusim.tensor(aw, device=device))
    np.testing.assert_allclose(host(got), np.cov(x, fweights=fw, aweights=aw), rtol=1e-12)
    np.testing.assert_allclose(host(npusim.corrcoef(t)), np.corrcoef(x), rtol=1e-12)


def test_trapezoid_and_cumulative_against_numpy(device):
    y = np.array(X)
    xs = np.array([0., 1.5, 2, 4])
    yt, xt = npusim.tensor(y, device=device), npusim.tensor(xs, device=device)
    np.testing.assert_allclose(host(npusim.trapezoid(yt, xt)), np.trapezoid(y, xs))
    np.testing.assert_allclose(host(npusim.cumulative_trapezoid(yt, dx=0.5)),
                               np.cumsum((y[:, 1:] + y[:, :-1]) * 0.25, axis=1))


def test_meshgrid_returns_expanded_views_and_warns_without_indexing(device):
    a, b = npusim.tensor([1, 2, 3], device=device), npusim.tensor([4, 5], device=device)
    with pytest.warns(UserWarning, match="it will be required to pass the indexing argument"):
        ga, gb = npusim.meshgrid(a, b)
    assert ga.shape == (3, 2) and ga.stride() == (1, 0)   # a view, as torch's expand
    assert host(gb).tolist() == [[4, 5]] * 3


def test_unravel_and_combinations_hand_values(device):
    rows, cols = npusim.unravel_index(npusim.tensor([0, 4, 5], device=device), (2, 3))
    assert host(rows).tolist() == [0, 1, 1] and host(cols).tolist() == [0, 1, 2]
    assert npusim.unravel_index(npusim.tensor([1], device=device), ()) == ()
    c = npusim.combinations(npusim.tensor([10, 20, 30], device=device))
    assert host(c).tolist() == [[10, 20], [10, 30], [20, 30]]


def test_vander_block_diag_hand_values(device):
    v = npusim.vander(npusim.tensor([2, 3], device=device), 3)
    assert host(v).tolist() == [[4, 2, 1], [9, 3, 1]] and v.dtype is npusim.int64
    bd = npusim.block_diag(npusim.tensor([[1, 2]], device=device), npusim.tensor(3, device=device))
    assert host(bd).tolist() == [[1, 2, 0], [0, 0, 3]]
    assert npusim.block_diag().shape == (1, 0)


def test_fill_diagonal_wraps_tall_matrices(device):
    a = npusim.zeros(5, 2, device=device).fill_diagonal_(1, wrap=True)
    assert host(a).tolist() == [[1, 0], [0, 1], [0, 0], [1, 0], [0, 1]]
    b = npusim.zeros(5, 2, device=device).fill_diagonal_(1)
    assert host(b).sum() == 2
    c = npusim.zeros(2, 2, 2, device=device).fill_diagonal_(7)
    assert host(c)[0, 0, 0] == 7 and host(c)[1, 1, 1] == 7 and host(c).sum() == 14


def test_renorm_caps_slice_norms(device):
    x = npusim.tensor([[3., 4.], [0.3, 0.4]], device=device)
    r = host(x.renorm(2, 0, 1.0))
    np.testing.assert_allclose(np.linalg.norm(r, axis=1), [1.0, 0.5], rtol=1e-5)   # only the first row is scaled
    y = x.clone()
    assert y.renorm_(2, 0, 1.0) is y
    np.testing.assert_allclose(host(y), r)


def test_small_tensor_methods(device):
    t = npusim.arange(6, device=device).reshape(2, 3)
    nc = t.narrow_copy(1, 1, 2)
    assert nc.is_contiguous() and host(nc).tolist() == [[1, 2], [4, 5]]
    nc[0, 0] = 100   # a copy: the source keeps its values
    assert host(t)[0, 1] == 1
    parts = t.split_with_sizes([1, 2], dim=1)
    assert isinstance(parts, tuple) and [p.shape[1] for p in parts] == [1, 2]
    assert t.new(2, 3).shape == (2, 3) and t.new().shape == (0,) and t.new(2).dtype is npusim.int64
    assert t.new(2).device.type == device and t.new(npusim.Size([1, 4])).shape == (1, 4)
    alias = t.new(t)
    alias[0, 0] = 42   # new(tensor) aliases its argument
    assert host(t)[0, 0] == 42


def test_utilities():
    assert npusim.is_signed(npusim.tensor([1.])) and not npusim.is_signed(npusim.tensor([1], dtype=npusim.uint8))
    assert not npusim.is_signed(npusim.tensor([True]))
    assert npusim.typename(npusim.ones(2)) == "npusim.FloatTensor"
    assert npusim.typename(3) == "int" and npusim.typename(np.ones(2)) == "numpy.ndarray"
    assert npusim.is_storage(npusim.ones(2).untyped_storage()) and not npusim.is_storage(npusim.ones(2))
    buf = bytearray(np.arange(4, dtype=np.float32).tobytes())
    t = npusim.frombuffer(buf, dtype=npusim.float32, offset=4, count=2)
    assert host(t).tolist() == [1., 2.]
    t[0] = 9   # shares the buffer's memory
    assert np.frombuffer(buf, dtype=np.float32).tolist() == [0., 9., 2., 3.]
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        r = npusim.range(1, 2, 0.5)
    assert host(r).tolist() == [1., 1.5, 2.] and r.dtype is npusim.float32


def test_global_flags_round_trip():
    try:
        npusim.set_deterministic_debug_mode("warn")
        assert npusim.get_deterministic_debug_mode() == 1
        assert npusim.are_deterministic_algorithms_enabled() and npusim.is_deterministic_algorithms_warn_only_enabled()
        npusim.use_deterministic_algorithms(True)
        assert npusim.get_deterministic_debug_mode() == 2
        npusim.set_deterministic_debug_mode(0)
        assert not npusim.are_deterministic_algorithms_enabled()
        npusim.set_float32_matmul_precision("medium")
        assert npusim.get_float32_matmul_precision() == "medium"
        with pytest.warns(UserWarning, match="has no effect"):
            npusim.set_float32_matmul_precision("fast")
        assert npusim.get_float32_matmul_precision() == "medium"
        npusim.set_warn_always(True)
        assert npusim.is_warn_always_enabled()
    finally:
        npusim.use_deterministic_algorithms(False)
        npusim.set_float32_matmul_precision("highest")
        npusim.set_warn_always(False)


# --- gradients ------------------------------------------------------------------------------------------------

def _leaf(a):
    return npusim.tensor(a, dtype=npusim.float64, requires_grad=True)


GRADS = [
    ("cov", lambda x, w: npusim.cov(x, aweights=w), (np.array(X), [.5, 2, 1, 3])),
    ("corrcoef", lambda x: npusim.corrcoef(x), (np.array(X),)),
    ("trapezoid_x", lambda y, x: npusim.trapezoid(y, x), (np.array(X), [0., 1.5, 2, 4])),
    ("cumulative_trapezoid", lambda y: npusim.cumulative_trapezoid(y, dx=0.3, dim=0), (np.array(X),)),
    ("vander", lambda x: npusim.vander(x, 4), ([0.5, -1.2, 2.0],)),
    ("renorm", lambda x: npusim.renorm(x, 2, 0, 3.0), (R,)),
    ("frexp", lambda x: npusim.frexp(x).mantissa, ([0.3, -5.0, 12.5],)),
    ("block_diag", lambda a, b: npusim.block_diag(a, b), ([[1., 2]], [3., 4])),
    ("combinations", lambda x: npusim.combinations(x, 2, True), ([1., 2, 3],)),
    ("meshgrid", lambda a, b: npusim.meshgrid(a, b, indexing="xy")[1] * 2, ([1., 2], [3., 4, 5])),
    ("msort", lambda x: npusim.msort(x), ([[3., 1], [1, 2]],)),
]


@pytest.mark.parametrize("name,fn,args", GRADS, ids=[g[0] for g in GRADS])
def test_gradcheck(name, fn, args):
    assert npusim.autograd.gradcheck(fn, tuple(_leaf(a) for a in args))


# --- errors ---------------------------------------------------------------------------------------------------

T = npusim.tensor
ERRORS = [
    (lambda: npusim.searchsorted(T([1., 2]), T([2.]), side="left", right=True), RuntimeError,
     "side and right can't be set to opposites, got side of left while right was True"),
    (lambda: npusim.searchsorted(T([1., 2]), T([2.]), side="abc"), RuntimeError,
     "side can only be 'left' or 'right' but got abc"),
    (lambda: npusim.searchsorted(T([[1., 2, 3]]), T([2., 3])), RuntimeError,
     (r"the first N-1 dimensions of boundaries tensor and input value tensor must match, but we got boundaries "
     r"tensor \[1, 3\] and input value tensor \[2\]")),
    (lambda: npusim.searchsorted(T(1.), T([2.])), RuntimeError, "should have positive dimension, but got 0"),
    (lambda: npusim.searchsorted(T([3., 1, 2]), T([2.]), sorter=T([1, 2])), RuntimeError,
     r"boundary and sorter must have the same size, but got boundary tensor \[3\]and got sorter tensor \[2\]"),
    (lambda: npusim.searchsorted(T([3., 1, 2]), T([2.]), sorter=T([1., 2, 0])), RuntimeError,
     "sorter must be a tensor of long dtype but got dtype Float"),
    (lambda: npusim.searchsorted(T([3., 1, 2]), T([2.]), sorter=T([1, 5, 0])), RuntimeError,
     "sorter index out of range"),
    (lambda: npusim.bucketize(T([1.]), T([[1., 2]])), RuntimeError, (r"boundaries tensor must be 1 dimension, but got "
     r"dim\(2\)")),
    (lambda: npusim.isin(T([True]), T([1])), RuntimeError, "Unsupported input type encountered for isin\\(\\): Bool"),
    (lambda: npusim.frexp(T([1, 2])), RuntimeError, r"torch.frexp\(\) only supports floating-point dtypes"),
    (lambda: npusim.meshgrid(T([[1, 2]]), T([1]), indexing="ij"), RuntimeError,
     "Expected 0D or 1D tensor in the tensor list"),
    (lambda: npusim.meshgrid(T([1, 2]), T([1.]), indexing="ij"), RuntimeError,
     "meshgrid expects all tensors to have the same dtype"),
    (lambda: npusim.meshgrid(T([1]), indexing="foo"), RuntimeError,
     'indexing must be one of "xy" or "ij", but received: foo'),
    (lambda: npusim.meshgrid(), RuntimeError, "meshgrid expects a non-empty TensorList"),
    (lambda: npusim.cartesian_prod(T([[1]])), RuntimeError, r"Expect a 1D vector, but got shape \[1, 1\]"),
    (lambda: npusim.combinations(T([1, 2]), r=-1), RuntimeError, "Expect a non-negative number, but got -1"),
    (lambda: npusim.block_diag(T([[[1]]])), RuntimeError,
     "Input tensors must have 2 or fewer dimensions. Input 0 has 3 dimensions"),
    (lambda: npusim.column_stack([]), RuntimeError, "column_stack expects a non-empty TensorList"),
    (lambda: npusim.dstack([]), RuntimeError, "dstack expects a non-empty TensorList"),
    (lambda: npusim.logspace(0, 1, -1), RuntimeError, "number of steps must be non-negative"),
    (lambda: npusim.hann_window(4, dtype=npusim.int64), RuntimeError,
     r"hann_window expects floating point dtypes, got: TensorOptions\(dtype=long int, device=cpu"),
    (lambda: npusim.kaiser_window(-1), RuntimeError,
     "kaiser_window requires non-negative window_length, got window_length=-1"),
    (lambda: npusim.unravel_index(T([1.]), (2, 3)), TypeError,
     "expected 'indices' to be integer dtype, but got npusim.float32"),
    (lambda: npusim.unravel_index(T([1]), (2, -3)), ValueError, (r"'shape' cannot have negative values, but got "
     r"\(2, -3\)")),
    (lambda: npusim.unravel_index(T([1]), 2.0), TypeError, "expected 'shape' to be int or sequence of ints"),
    (lambda: npusim.trapezoid(T([[1., 2, 3]]), T([1., 2])), RuntimeError,
     "trapezoid: There must be one `x` value for each sample point"),
    (lambda: npusim.trapezoid(T([True, False])), RuntimeError,
     "trapezoid: received a bool input for `y`, but bool is not supported"),
    (lambda: npusim.trapezoid(T(1.)), IndexError, "Dimension specified as -1 but tensor has no dimensions"),
    (lambda: npusim.cumulative_trapezoid(T([1., 2, 3]), T([1., 2])), RuntimeError,
     "cumulative_trapezoid: There must be one `x` value for each sample point"),
    (lambda: npusim.vander(T([[1]])), RuntimeError, "x must be a one-dimensional tensor."),
    (lambda: npusim.vander(T([1, 2]), N=-1), RuntimeError, "N must be non-negative."),
    (lambda: npusim.cov(T([[[1.]]])), RuntimeError,
     "cov\\(\\): expected input to have two or fewer dimensions but got an input with 3 dimensions"),
    (lambda: npusim.cov(T([[1., 2, 4]]), fweights=T([1., 2, 3])), RuntimeError,
     "expected fweights to have integral dtype but got fweights with Float dtype"),
    (lambda: npusim.cov(T([[1., 2, 4]]), fweights=T([1, 2])), RuntimeError,
     "expected fweights to have the same numel as there are observations in the input but got 2 != 3"),
    (lambda: npusim.cov(T([[1., 2, 4]]), fweights=T([1, -2, 3])), RuntimeError, "fweights cannot be negative"),
    (lambda: npusim.cov(T([[1., 2, 4]]), aweights=T([1, 2, 3])), RuntimeError,
     "expected aweights to have floating point dtype but got aweights with Long dtype"),
    (lambda: npusim.cov(T([[1., 2, 4]]), aweights=T([[1., 2, 3]])), RuntimeError,
     "expected aweights to have one or fewer dimensions but got aweights with 2 dimensions"),
    (lambda: npusim.cov(T([1., 2]), correction=1.5), TypeError, ("cov\\(\\): argument 'correction' must be int, not "
     "float")),
    (lambda: npusim.corrcoef(T([[[1.]]])), RuntimeError, "corrcoef\\(\\): expected input to have two or fewer"),
    (lambda: npusim.is_signed(3), TypeError, r"is_signed\(\): argument 'input' \(position 1\) must be Tensor, not int"),
    (lambda: npusim.frombuffer(b"", dtype=npusim.float32), ValueError,
     r"both buffer length \(0\) and count \(-1\) must not be 0"),
    (lambda: npusim.frombuffer(bytearray(8), dtype=npusim.float32, offset=10), ValueError,
     r"offset \(10 bytes\) must be non-negative and no greater than buffer length \(8 bytes\) minus 1"),
    (lambda: npusim.frombuffer(bytearray(8), dtype=npusim.float32, count=3), ValueError,
     (r"requested buffer length \(3 \* 4 bytes\) after offset \(0 bytes\) must not be greater than actual buffer "
     r"length \(8 bytes\)")),
    (lambda: npusim.frombuffer(bytearray(9), dtype=npusim.float32), ValueError,
     r"buffer length \(9 bytes\) after offset \(0 bytes\) must be a multiple of element size \(4\)"),
    (lambda: npusim.range(1, 4, 0), RuntimeError, "step must be nonzero"),
    (lambda: npusim.range(4, 1), RuntimeError, "upper bound and lower bound inconsistent with step sign"),
    (lambda: npusim.range(4), TypeError, 'range\\(\\) missing 1 required positional arguments: "end"'),
    (lambda: npusim.use_deterministic_algorithms(1), TypeError,
     r"argument 'mode' \(position 1\) must be bool, not int"),
    (lambda: npusim.set_deterministic_debug_mode("abc"), RuntimeError,
     "invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got abc"),
    (lambda: npusim.set_deterministic_debug_mode(3), RuntimeError,
     "invalid value of debug_mode, expected 0, 1, or 2, but got 3"),
    (lambda: npusim.set_deterministic_debug_mode(1.0), TypeError, ("debug_mode must be str or int, but got <class "
     "'float'>")),
    (lambda: npusim.set_float32_matmul_precision(1), RuntimeError,
     "set_float32_matmul_precision expects a str, but got int"),
    (lambda: npusim.set_warn_always(1), RuntimeError, "setWarnOnlyOnce expects a bool, but got int"),
    (lambda: npusim.zeros(3).fill_diagonal_(1), RuntimeError, "dimensions must larger than 1"),
    (lambda: npusim.zeros(3, 3, 2).fill_diagonal_(1), RuntimeError, "all dimensions of input must be of equal length"),
    (lambda: npusim.renorm(T([[1., 2]]), 0, 0, 3), RuntimeError, "renorm: non-positive-norm not supported"),
    (lambda: npusim.renorm(T([[1., 2]]), 2, 0, -3), RuntimeError, "renorm: expected maxnorm to be >= 0 but got -3"),
    (lambda: npusim.renorm(T([1., 2]), 2, 0, 1), RuntimeError, ("renorm: input needs at least 2 dimensions, got 1 "
     "dimensions")),
    (lambda: npusim.renorm(T([[1, 2]]), 2, 0, 3), RuntimeError, ("Expected a floating point or complex tensor as "
     "input. Got Long")),
    (lambda: npusim.renorm(T([[1., 2]]), 2, 2, 3), IndexError, "Dimension out of range"),
    (lambda: npusim.narrow_copy(T([1, 2, 3]), 0, 1, 5), RuntimeError, (r"start \(1\) \+ length \(5\) exceeds "
     r"dimension size \(3\)")),
    (lambda: npusim.zeros(2).new(2.5), TypeError, r"new\(\): data must be a sequence \(got float\)"),
    (lambda: npusim.zeros(2).new(T([1, 2])), TypeError, (r"expected TensorOptions\(dtype=float, .*\(got "
     r"TensorOptions\(dtype=long int")),
    (lambda: npusim.zeros(2).new(-1), RuntimeError, "negative dimension -1"),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    fn, exc, match = ERRORS[i]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc, match=match):
            fn()


@pytest.mark.oracle
@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_are_torchs(i, torch, monkeypatch):
    """The same calls on torch raise the same type and message (npusim's names read as torch's)."""
    fn, exc, match = ERRORS[i]
    # the lambdas read the module globals ``npusim`` and ``T``: point them at torch
    monkeypatch.setitem(fn.__globals__, "npusim", torch)
    monkeypatch.setitem(fn.__globals__, "T", torch.tensor)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc, match=match.replace("npusim.", "torch.")):
            fn()
