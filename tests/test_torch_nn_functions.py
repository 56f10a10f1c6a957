"""torch's aten-form nn functions: conv_tbc (also nn.functional's), convolution, embedding_bag's four outputs,
embedding_renorm_, grid_sampler(_2d/_3d), affine_grid_generator, ctc_loss with integer reductions,
max_pool1d_with_indices, norm_except_dim, frobenius_norm, nuclear_norm and segment_reduce: equal to the
nn.functional / linalg forms on every device, with torch's argument errors; against torch, values and gradients
agree."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import host

import npusim
import npusim.nn.functional as F

pytestmark = pytest.mark.usefixtures("torch_on_one_thread")


def randn(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _t(a, device, grad=False):
    return npusim.tensor(a, device=device, requires_grad=grad)


# --- torch-free ------------------------------------------------------------------------------------------------

def test_conv_tbc_is_conv1d_over_time(device):
    x, w, b = _t(randn(6, 2, 3), device), _t(randn(3, 3, 4, seed=1), device), _t(randn(4, seed=2), device)
    assert npusim.conv_tbc is F.conv_tbc
    out = npusim.conv_tbc(x, w, b, 1)
    want = F.conv1d(x.permute(1, 2, 0), w.permute(2, 1, 0), b, padding=1).permute(2, 0, 1)
    assert out.shape == (6, 2, 4)
    np.testing.assert_allclose(host(out), host(want), rtol=1e-6, atol=1e-6)
    assert npusim.conv_tbc(x, w, b, -1).shape == (2, 2, 4)       # a negative pad crops
    with pytest.raises(RuntimeError, match="Input must have 3 dims: time, batch, in_channel"):
        npusim.conv_tbc(x[0], w, b)
    with pytest.raises(RuntimeError, match="Bias size must equal dim 2 in the weight tensor"):
        npusim.conv_tbc(x, w, b[:2])
    with pytest.raises(TypeError, match="argument 'bias' \\(position 3\\) must be Tensor, not NoneType"):
        npusim.conv_tbc(x, w, None)
    with pytest.raises(RuntimeError, match="negative dimension -2"):
        npusim.conv_tbc(x[:2], _t(randn(5, 3, 4), device), b)


def test_convolution_direct_and_transposed(device):
    x, w = _t(randn(2, 3, 5, 6), device), _t(randn(4, 3, 2, 2, seed=1), device)
    out = npusim.convolution(x, w, None, [2, 1], [1, 0], [1, 1], False, [0, 0], 1)
    np.testing.assert_array_equal(host(out), host(F.conv2d(x, w, None, (2, 1), (1, 0))))
    wt = _t(randn(3, 4, 2, 2, seed=2), device)
    out = npusim.convolution(x, wt, None, [1], [0], [1], True, [0], 1)
    np.testing.assert_array_equal(host(out), host(F.conv_transpose2d(x, wt)))


def test_embedding_bag_outputs(device):
    weight = _t(np.arange(30, dtype=np.float32).reshape(10, 3), device)
    indices = _t(np.array([1, 2, 4, 5, 4, 3]), device)
    offsets = _t(np.array([0, 2, 2]), device)
    out, offset2bag, bag_size, max_indices = npusim.embedding_bag(weight, indices, offsets, False, 2)
    np.testing.assert_array_equal(host(out), host(F.embedding_bag(indices, weight, offsets, mode="max")))
    assert host(offset2bag).tolist() == [0, 0, 2, 2, 2, 2] and host(bag_size).tolist() == [2, 0, 4]
    assert host(max_indices).tolist() == [[2, 2, 2], [0, 0, 0], [5, 5, 5]]
    out, offset2bag, bag_size, max_indices = npusim.embedding_bag(weight, indices, offsets, mode=1)
    assert host(bag_size).tolist() == host(max_indices).tolist() == [2, 0, 4]
    out, offset2bag, bag_size, max_indices = npusim.embedding_bag(weight, indices, offsets)   # sum
    assert offset2bag.numel() == 0 and host(bag_size).tolist() == [0, 0, 0]
    np.testing.assert_array_equal(host(out), host(F.embedding_bag(indices, weight, offsets, mode="sum")))
    ties = npusim.embedding_bag(_t(np.ones((10, 2), np.float32), device), indices, offsets, False, 2)[3]
    assert host(ties).tolist() == [[1, 1], [0, 0], [4, 4]]     # the first of equal rows wins, as in torch's kernel
    with pytest.raises(RuntimeError, match="`mode` must be sum, mean, or max."):
        npusim.embedding_bag(weight, indices, offsets, False, 3)


def test_embedding_bag_is_differentiable(device):
    weight = _t(randn(10, 3), device, grad=True)
    out = npusim.embedding_bag(weight, _t(np.array([1, 2, 2]), device), _t(np.array([0, 1]), device), False, 1)[0]
    out.sum().backward()
    assert host(weight.grad)[2].tolist() == [1.0, 1.0, 1.0] and host(weight.grad)[1].tolist() == [1.0, 1.0, 1.0]


def test_embedding_renorm_(device):
    weight = _t(np.full((4, 2), 3.0, np.float32), device)
    assert npusim.embedding_renorm_(weight, _t(np.array([1, 3]), device), 1.0, 2.0) is weight
    norms = np.linalg.norm(host(weight), axis=1)
    np.testing.assert_allclose(norms, [np.sqrt(18), 1.0, np.sqrt(18), 1.0], rtol=1e-5)


def test_grid_sampler_integer_modes(device):
    x = _t(randn(2, 3, 4, 5), device)
    grid = _t(np.random.default_rng(1).uniform(-1.2, 1.2, (2, 6, 7, 2)).astype(np.float32), device)
    for interp, name in enumerate(["bilinear", "nearest", "bicubic"]):
        for pad, pname in enumerate(["zeros", "border", "reflection"]):
            want = F.grid_sample(x, grid, name, pname, True)
            np.testing.assert_array_equal(host(npusim.grid_sampler(x, grid, interp, pad, True)), host(want))
            np.testing.assert_array_equal(host(npusim.grid_sampler_2d(x, grid, interp, pad, True)), host(want))
    x3 = _t(randn(1, 2, 3, 4, 5), device)
    g3 = _t(np.random.default_rng(2).uniform(-1, 1, (1, 2, 3, 4, 3)).astype(np.float32), device)
    np.testing.assert_array_equal(host(npusim.grid_sampler_3d(x3, g3, 0, 0, False)),
                                  host(F.grid_sample(x3, g3, "bilinear", "zeros", False)))
    with pytest.raises(RuntimeError, match="expected 5D input and grid with same number of dimensions"):
        npusim.grid_sampler_3d(x, grid, 0, 0, False)
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
        npusim.grid_sampler_3d(x3, g3, 2, 0, False)
    with pytest.raises(RuntimeError, match="expected grid and input to have same batch size"):
        npusim.grid_sampler_2d(x[:1], grid, 0, 0, False)


def test_affine_grid_generator_is_affine_grid(device):
    theta = _t(randn(2, 2, 3), device)
    np.testing.assert_array_equal(host(npusim.affine_grid_generator(theta, [2, 3, 4, 5], False)),
                                  host(F.affine_grid(theta, [2, 3, 4, 5], False)))
    theta3 = _t(randn(2, 3, 4), device)
    assert npusim.affine_grid_generator(theta3, [2, 1, 3, 4, 5], True).shape == (2, 3, 4, 5, 3)
    with pytest.raises(RuntimeError, match="Expected size for first two dimensions of batch2 tensor"):
        npusim.affine_grid_generator(theta, [2, 3, 4, 5, 6], True)


def test_ctc_loss_integer_reduction(device):
    log_probs = _t(randn(7, 2, 5), device).log_softmax(2)
    targets = _t(np.array([[1, 2, 3], [2, 3, 4]]), device)
    for reduction, name in ((0, "none"), (1, "mean"), (2, "sum")):
        want = F.ctc_loss(log_probs, targets, [7, 6], [3, 2], reduction=name)
        got = npusim.ctc_loss(log_probs, targets, [7, 6], [3, 2], 0, reduction)
        np.testing.assert_array_equal(host(got), host(want))
    got = npusim.ctc_loss(log_probs, targets, _t(np.array([7, 6]), device), _t(np.array([3, 2]), device))
    np.testing.assert_array_equal(host(got), host(F.ctc_loss(log_probs, targets, [7, 6], [3, 2])))


def test_max_pool1d_with_indices(device):
    x = _t(randn(2, 3, 9), device)
    values, indices = npusim.max_pool1d_with_indices(x, 3)
    want_values, want_indices = F.max_pool1d(x, 3, return_indices=True)
    np.testing.assert_array_equal(host(values), host(want_values))
    np.testing.assert_array_equal(host(indices), host(want_indices))
    values, indices = npusim.max_pool1d_with_indices(x, 3, 2, 1, 1, True)
    assert values.shape == indices.shape == (2, 3, 5)


def test_norm_except_dim_frobenius_and_nuclear(device):
    v = _t(randn(3, 4, 5), device)
    a = host(v)
    np.testing.assert_allclose(host(npusim.norm_except_dim(v)), np.sqrt((a ** 2).sum(axis=(1, 2), keepdims=True)),
                               rtol=1e-5)
    np.testing.assert_allclose(host(npusim.norm_except_dim(v, 2, 1)),
                               np.sqrt((a ** 2).sum(axis=(0, 2), keepdims=True)), rtol=1e-5)
    assert npusim.norm_except_dim(v, 2, -1).shape == ()
    assert npusim.norm_except_dim(v, 3, 2).shape == (1, 1, 5)
    with pytest.warns(UserWarning, match="frobenius_norm is deprecated"):
        fro = npusim.frobenius_norm(v, [0, 2], True)
    np.testing.assert_allclose(host(fro), np.sqrt((a ** 2).sum(axis=(0, 2), keepdims=True)), rtol=1e-5)
    with pytest.raises(RuntimeError, match="Expected at most 2 dimensions, but got 3 dimensions instead."):
        npusim.frobenius_norm(v, [0, 1, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nuc = npusim.nuclear_norm(v[0])
        nuc_dims = npusim.nuclear_norm(v, [0, 2], True)
    np.testing.assert_allclose(host(nuc), np.linalg.svd(a[0], compute_uv=False).sum(), rtol=1e-5)
    assert nuc_dims.shape == (1, 4, 1)


def test_segment_reduce(device):
    data = _t(np.arange(1.0, 11.0, dtype=np.float32).reshape(5, 2), device)
    lengths = _t(np.array([2, 0, 3]), device)
    want = {"sum": [[4, 6], [0, 0], [21, 24]], "mean": [[2, 3], [np.nan, np.nan], [7, 8]],
            "max": [[3, 4], [-np.inf, -np.inf], [9, 10]], "min": [[1, 2], [np.inf, np.inf], [5, 6]],
            "prod": [[3, 8], [1, 1], [315, 480]]}
    for reduce, expected in want.items():
        np.testing.assert_array_equal(host(npusim.segment_reduce(data, reduce, lengths=lengths)), expected)
    offsets = _t(np.array([0, 2, 2, 5]), device)
    np.testing.assert_array_equal(host(npusim.segment_reduce(data, "sum", offsets=offsets)), want["sum"])
    # offsets need not cover the axis: rows outside offsets[0]..offsets[-1] take no part
    np.testing.assert_array_equal(host(npusim.segment_reduce(data, "sum", offsets=_t(np.array([1, 3, 4]), device))),
                                  [[8, 10], [7, 8]])
    np.testing.assert_allclose(host(npusim.segment_reduce(data, "mean", lengths=lengths, initial=2.0)),
                               [[3, 4], [2, 2], [23 / 3, 26 / 3]], rtol=1e-6)
    per_row = _t(np.array([[2, 0, 3], [1, 1, 3]]), device)
    np.testing.assert_array_equal(host(npusim.segment_reduce(data.t(), "sum", lengths=per_row, axis=1)),
                                  [[4, 0, 21], [2, 4, 24]])
    np.testing.assert_array_equal(host(npusim.segment_reduce(data, "sum", lengths=_t(np.array([2, 0, 2]), device),
                                                             unsafe=True)), [[4, 6], [0, 0], [12, 14]])
    with pytest.raises(RuntimeError, match="Expected all rows of lengths along axis to sum"):
        npusim.segment_reduce(data, "sum", lengths=_t(np.array([2, 0, 2]), device))
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, amax or amin"):
        npusim.segment_reduce(data, "avg", lengths=lengths)
    with pytest.raises(RuntimeError, match="indices based reduction is not supported yet"):
        npusim.segment_reduce(data, "sum", indices=lengths)
    with pytest.raises(RuntimeError, match="Either lengths or offsets must be defined"):
        npusim.segment_reduce(data, "sum")
    with pytest.raises(RuntimeError, match="lengths contains negative value!"):
        npusim.segment_reduce(data, "sum", lengths=_t(np.array([2, -1, 4]), device))
    with pytest.raises(RuntimeError, match="Expected axis to be the last dimension of lengths but got 1"):
        npusim.segment_reduce(data.t(), "sum", lengths=lengths, axis=1)


def test_segment_reduce_gradient_shares_ties(device):
    data = _t(np.array([[1.0, 5.0], [1.0, 2.0], [3.0, 3.0]], np.float32), device, grad=True)
    npusim.segment_reduce(data, "min", lengths=_t(np.array([2, 1]), device)).sum().backward()
    np.testing.assert_array_equal(host(data.grad), [[0.5, 0.0], [0.5, 1.0], [1.0, 1.0]])


# --- against torch ---------------------------------------------------------------------------------------------

def _pair(torch, arrays, device):
    """Leaves of the same values in both libraries; float arrays require grad."""
    tt = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    nt = [npusim.tensor(a, device=device, requires_grad=a.dtype.kind == "f") for a in arrays]
    return tt, nt


def _check(torch_out, npusim_out, t_leaves, n_leaves, tol):
    t_out = torch_out if isinstance(torch_out, tuple) else (torch_out,)
    n_out = npusim_out if isinstance(npusim_out, tuple) else (npusim_out,)
    assert len(t_out) == len(n_out)
    for a, b in zip(t_out, n_out):
        assert tuple(a.shape) == tuple(b.shape) and str(a.dtype)[6:] == str(b.dtype)[7:]
        np.testing.assert_allclose(host(b), a.detach().numpy(), rtol=tol, atol=tol)
    for lib_out, leaves in ((t_out, t_leaves), (n_out, n_leaves)):
        total = sum((o * (k + 1.5)).sum() for k, o in enumerate(lib_out) if o.is_floating_point() and o.requires_grad)
        total.backward()
    for a, b in zip(t_leaves, n_leaves):
        if a.requires_grad:
            np.testing.assert_allclose(host(b.grad), a.grad.numpy(), rtol=tol, atol=tol)


# float64 everywhere below: each function is a short chain of convolutions, gathers, sums and elementwise ops, so
# both libraries agree to ~1e-14; 1e-10 (1e-9 for the SVD-based nuclear norm) leaves room for summation order.
F64 = np.float64


@pytest.mark.oracle
@pytest.mark.parametrize("pad", [0, 2, -1])
def test_conv_tbc_matches_torch(torch, device, pad):
    tt, nt = _pair(torch, [randn(7, 2, 3, dtype=F64), randn(3, 3, 4, seed=1, dtype=F64),
                           randn(4, seed=2, dtype=F64)], device)
    _check(torch.conv_tbc(*tt, pad), npusim.conv_tbc(*nt, pad), tt, nt, 1e-10)


@pytest.mark.oracle
@pytest.mark.parametrize("transposed", [False, True])
def test_convolution_matches_torch(torch, device, transposed):
    # weight (in, out, kh, kw) when transposed, (out, in, kh, kw) otherwise
    w = randn(3, 4, 2, 3, seed=1, dtype=F64) if transposed else randn(4, 3, 2, 3, seed=1, dtype=F64)
    tt, nt = _pair(torch, [randn(2, 3, 5, 6, dtype=F64), w, randn(4, seed=2, dtype=F64)], device)
    args = ([2, 1], [1, 0], [1, 2], transposed, [1, 0] if transposed else [0, 0], 1)
    _check(torch.convolution(*tt, *args), npusim.convolution(*nt, *args), tt, nt, 1e-10)


@pytest.mark.oracle
@pytest.mark.parametrize("mode, padding_idx, include_last", [(0, None, False), (1, None, True), (2, None, False),
                                                             (2, 4, False), (0, 4, False), (1, 4, False)])
def test_embedding_bag_matches_torch(torch, device, mode, padding_idx, include_last):
    indices = np.array([1, 2, 4, 5, 4, 3, 7])
    offsets = np.array([0, 2, 2, 7]) if include_last else np.array([0, 2, 2, 4])   # the last offset ends the indices
    tt, nt = _pair(torch, [randn(10, 3, dtype=F64), indices, offsets], device)
    _check(torch.embedding_bag(*tt, False, mode, False, None, include_last, padding_idx),
           npusim.embedding_bag(*nt, False, mode, False, None, include_last, padding_idx), tt, nt, 1e-10)


@pytest.mark.oracle
def test_embedding_bag_per_sample_weights_match_torch(torch, device):
    tt, nt = _pair(torch, [randn(10, 3, dtype=F64), np.array([1, 2, 4, 5]), np.array([0, 3]),
                           randn(4, seed=3, dtype=F64)], device)
    _check(torch.embedding_bag(*tt[:3], False, 0, False, tt[3]),
           npusim.embedding_bag(*nt[:3], False, 0, False, nt[3]), tt, nt, 1e-10)


@pytest.mark.oracle
def test_embedding_renorm_matches_torch(torch, device):
    w = randn(6, 3, dtype=F64) * 3
    t, n = torch.tensor(w), npusim.tensor(w, device=device)
    torch.embedding_renorm_(t, torch.tensor([0, 2, 2, 5]), 1.5, 1.0)
    npusim.embedding_renorm_(n, npusim.tensor([0, 2, 2, 5], device=device), 1.5, 1.0)
    np.testing.assert_allclose(host(n), t.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.oracle
@pytest.mark.parametrize("interp", [0, 1, 2])
@pytest.mark.parametrize("pad", [0, 1, 2])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sampler_2d_matches_torch(torch, device, interp, pad, align_corners):
    grid = np.random.default_rng(5).uniform(-1.3, 1.3, (2, 4, 3, 2))
    tt, nt = _pair(torch, [randn(2, 3, 4, 5, dtype=F64), grid], device)
    for fn in ("grid_sampler", "grid_sampler_2d"):
        t_leaves, n_leaves = [t.detach().requires_grad_() for t in tt], [t.detach().requires_grad_() for t in nt]
        _check(getattr(torch, fn)(*t_leaves, interp, pad, align_corners),
               getattr(npusim, fn)(*n_leaves, interp, pad, align_corners), t_leaves, n_leaves, 1e-10)


@pytest.mark.oracle
@pytest.mark.parametrize("interp, pad", [(0, 0), (1, 1), (0, 2)])
def test_grid_sampler_3d_matches_torch(torch, device, interp, pad):
    grid = np.random.default_rng(6).uniform(-1.2, 1.2, (1, 2, 3, 2, 3))
    tt, nt = _pair(torch, [randn(1, 2, 3, 4, 5, dtype=F64), grid], device)
    _check(torch.grid_sampler_3d(*tt, interp, pad, False), npusim.grid_sampler_3d(*nt, interp, pad, False), tt, nt,
           1e-10)


@pytest.mark.oracle
@pytest.mark.parametrize("size", [[2, 3, 4, 5], [2, 1, 3, 4, 2]])
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_generator_matches_torch(torch, device, size, align_corners):
    theta = randn(2, 2, 3, dtype=F64) if len(size) == 4 else randn(2, 3, 4, dtype=F64)
    tt, nt = _pair(torch, [theta], device)
    _check(torch.affine_grid_generator(tt[0], size, align_corners),
           npusim.affine_grid_generator(nt[0], size, align_corners), tt, nt, 1e-10)


@pytest.mark.oracle
@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("lengths_as_tensors", [False, True])
def test_ctc_loss_matches_torch(torch, device, reduction, lengths_as_tensors):
    log_probs = np.log(np.random.default_rng(7).dirichlet(np.ones(5), (7, 2)))
    targets = np.array([[1, 2, 3], [2, 2, 4]])
    tt, nt = _pair(torch, [log_probs, targets], device)
    lengths = ([7, 6], [3, 2])
    t_len = tuple(torch.tensor(x) for x in lengths) if lengths_as_tensors else lengths
    n_len = tuple(npusim.tensor(x, device=device) for x in lengths) if lengths_as_tensors else lengths
    _check(torch.ctc_loss(*tt, *t_len, 0, reduction), npusim.ctc_loss(*nt, *n_len, 0, reduction), tt, nt, 1e-10)


@pytest.mark.oracle
@pytest.mark.parametrize("args", [(3,), (3, 2, 1, 1, True), (2, [], 0, 2)])
def test_max_pool1d_with_indices_matches_torch(torch, device, args):
    tt, nt = _pair(torch, [randn(2, 3, 9, dtype=F64)], device)
    _check(torch.max_pool1d_with_indices(tt[0], *args), npusim.max_pool1d_with_indices(nt[0], *args), tt, nt, 1e-10)


@pytest.mark.oracle
@pytest.mark.parametrize("pow_, dim", [(2, 0), (2, 1), (3, 2), (2, -1), (1, -2)])
def test_norm_except_dim_matches_torch(torch, device, pow_, dim):
    tt, nt = _pair(torch, [randn(3, 4, 5, dtype=F64)], device)
    _check(torch.norm_except_dim(tt[0], pow_, dim), npusim.norm_except_dim(nt[0], pow_, dim), tt, nt, 1e-10)


@pytest.mark.oracle
@pytest.mark.parametrize("dim, keepdim", [([0, 1], False), (1, True), ([], False), ([-1, 0], True)])
def test_frobenius_norm_matches_torch(torch, device, dim, keepdim):
    tt, nt = _pair(torch, [randn(3, 4, 5, dtype=F64)], device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _check(torch.frobenius_norm(tt[0], dim, keepdim), npusim.frobenius_norm(nt[0], dim, keepdim), tt, nt, 1e-10)


@pytest.mark.oracle
@pytest.mark.parametrize("args", [(), (True,), ([0, 2],), ([0, 2], True), ([-1, 1], False)])
def test_nuclear_norm_matches_torch(torch, device, args):
    # the SVD's iterations round differently in the two libraries: 1e-9 on values around 10
    tt, nt = _pair(torch, [randn(3, 4, 5, dtype=F64)], device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _check(torch.nuclear_norm(tt[0], *args), npusim.nuclear_norm(nt[0], *args), tt, nt, 1e-9)


@pytest.mark.oracle
@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod", "amax"])
@pytest.mark.parametrize("initial", [None, 0.5])
@pytest.mark.parametrize("layout", ["lengths", "offsets", "offsets_gap", "axis1"])
def test_segment_reduce_matches_torch(torch, device, reduce, initial, layout):
    data = randn(6, 3, seed=11, dtype=F64)
    data[1, 0] = data[0, 0]            # a tie inside a segment
    if layout == "axis1":
        data = np.ascontiguousarray(data.T)
        kwargs = {"lengths": np.array([[2, 0, 4], [3, 3, 0], [1, 1, 4]]), "axis": 1}
    elif layout == "lengths":
        kwargs = {"lengths": np.array([2, 0, 4])}
    elif layout == "offsets":
        kwargs = {"offsets": np.array([0, 2, 2, 6])}
    else:
        kwargs = {"offsets": np.array([1, 3, 3, 5])}
    tt, nt = _pair(torch, [data], device)
    t_kw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    n_kw = {k: npusim.tensor(v, device=device) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    t_out = torch.segment_reduce(tt[0], reduce, initial=initial, **t_kw)
    n_out = npusim.segment_reduce(nt[0], reduce, initial=initial, **n_kw)
    # the backward of an empty segment's slot is nothing in either: weight the finite outputs only
    weights = np.where(np.isfinite(t_out.detach().numpy()), 1.0 + np.arange(t_out.numel()).reshape(t_out.shape), 0)
    np.testing.assert_allclose(host(n_out), t_out.detach().numpy(), rtol=1e-10, atol=1e-10)
    (t_out.nan_to_num(0.0, 0.0, 0.0) * torch.tensor(weights)).sum().backward()
    (n_out.nan_to_num(0.0, 0.0, 0.0) * npusim.tensor(weights, device=device)).sum().backward()
    np.testing.assert_allclose(host(nt[0].grad), tt[0].grad.numpy(), rtol=1e-10, atol=1e-10)
