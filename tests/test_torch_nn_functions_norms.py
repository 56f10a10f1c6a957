"""torch.native_batch_norm / native_layer_norm / native_group_norm, SyncBatchNorm's batch_norm_* steps,
native_dropout and feature_dropout(_): result tuples and shapes as torch's, values as the nn.functional forms, the
batch_norm_* steps recombine two shards into whole-batch batch norm (forward and backward); against torch, values
and gradients agree."""
from __future__ import annotations

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


# --- native norms ----------------------------------------------------------------------------------------------

def test_native_norms_return_torch_tuples(device):
    x = _t(randn(4, 6, 5), device)
    out, mean, invstd = npusim.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)
    assert out.shape == (4, 6, 5) and mean.shape == (6,) and invstd.shape == (6,)
    np.testing.assert_allclose(host(out), host(F.batch_norm(x, None, None, training=True)), rtol=1e-6, atol=1e-6)
    out, mean, rstd = npusim.native_layer_norm(x, [5], None, None, 1e-5)
    assert mean.shape == (4, 6, 1) and rstd.shape == (4, 6, 1)
    np.testing.assert_allclose(host(out), host(F.layer_norm(x, [5])), rtol=1e-6, atol=1e-6)
    out, mean, rstd = npusim.native_group_norm(x, None, None, 4, 6, 5, 3, 1e-5)
    assert mean.shape == (4, 3) and rstd.shape == (4, 3)
    np.testing.assert_allclose(host(out), host(F.group_norm(x, 3)), rtol=1e-6, atol=1e-6)


def test_native_batch_norm_updates_running_stats_and_is_differentiable(device):
    x = _t(randn(8, 3, 2), device, grad=True)
    running_mean, running_var = _t(np.zeros(3, np.float32), device), _t(np.ones(3, np.float32), device)
    out, mean, invstd = npusim.native_batch_norm(x, None, None, running_mean, running_var, True, 0.5, 1e-5)
    np.testing.assert_allclose(host(running_mean), 0.5 * host(mean), rtol=1e-6, atol=1e-7)
    assert out.grad_fn is not None and not mean.requires_grad
    (out * out).sum().backward()
    assert np.isfinite(host(x.grad)).all()


def test_native_batch_norm_out_tuple(device):
    x = _t(randn(4, 3, 5), device)
    out = tuple(npusim.empty(0, device=device) for _ in range(3))
    got = npusim.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5, out=out)
    assert all(g is o for g, o in zip(got, out)) and out[1].shape == (3,)
    _same = npusim.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)
    for a, b in zip(out, _same):
        np.testing.assert_array_equal(host(a), host(b))
    with pytest.raises(TypeError, match="argument 'out' must be tuple of Tensors, not Tensor"):
        npusim.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5, out=out[0])
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        npusim.native_batch_norm(x.requires_grad_(), None, None, None, None, True, 0.1, 1e-5, out=out)


# --- SyncBatchNorm's steps -------------------------------------------------------------------------------------

def _two_rank_batch_norm(x, weight, bias, running_mean, running_var, momentum, eps, lib):
    """SyncBatchNorm's forward as two ranks holding halves of the batch would run it."""
    shards = x.chunk(2, 0)
    stats = [lib.batch_norm_stats(s, eps) for s in shards]
    means = lib.stack([m for m, _ in stats])
    invstds = lib.stack([v for _, v in stats])
    counts = lib.tensor([float(s.numel() // s.size(1)) for s in shards], dtype=x.dtype, device=x.device)
    mean, invstd = lib.batch_norm_gather_stats_with_counts(x, means, invstds, running_mean, running_var, momentum,
                                                           eps, counts)
    return [lib.batch_norm_elemt(s, weight, bias, mean, invstd, eps) for s in shards], mean, invstd, counts


def _two_rank_backward(grads, x, weight, mean, invstd, counts, lib):
    shards = x.chunk(2, 0)
    reduced = [lib.batch_norm_backward_reduce(g, s, mean, invstd, weight, True, True, True)
               for g, s in zip(grads, shards)]
    sum_dy = reduced[0][0] + reduced[1][0]            # what the all-reduce adds up
    sum_dy_xmu = reduced[0][1] + reduced[1][1]
    grad_weight = reduced[0][2] + reduced[1][2]
    grad_bias = reduced[0][3] + reduced[1][3]
    grad_input = [lib.batch_norm_backward_elemt(g, s, mean, invstd, weight, sum_dy, sum_dy_xmu,
                                                counts.to(lib.int32)) for g, s in zip(grads, shards)]
    return lib.cat(grad_input), grad_weight, grad_bias


def test_batch_norm_steps_recombine_shards_into_whole_batch_batch_norm(device):
    x = _t(randn(6, 3, 4), device, grad=True)
    weight, bias = _t(randn(3, seed=1), device, grad=True), _t(randn(3, seed=2), device, grad=True)
    rm, rv = _t(np.zeros(3, np.float32), device), _t(np.ones(3, np.float32), device)
    outs, mean, invstd, counts = _two_rank_batch_norm(x.detach(), weight.detach(), bias.detach(), rm, rv, 0.1, 1e-5,
                                                      npusim)
    ref_rm, ref_rv = _t(np.zeros(3, np.float32), device), _t(np.ones(3, np.float32), device)
    ref = F.batch_norm(x, ref_rm, ref_rv, weight, bias, True, 0.1, 1e-5)
    # float32 sums of 24 values per channel, combined two ways: within a few ulps of the values (~1e-6)
    np.testing.assert_allclose(host(npusim.cat(outs)), host(ref), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(host(rm), host(ref_rm), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(host(rv), host(ref_rv), rtol=1e-5, atol=1e-6)
    g = _t(randn(6, 3, 4, seed=3), device)
    ref.backward(g)
    grad_input, grad_weight, grad_bias = _two_rank_backward(g.chunk(2, 0), x.detach(), weight.detach(), mean,
                                                            invstd, counts, npusim)
    np.testing.assert_allclose(host(grad_input), host(x.grad), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(host(grad_weight), host(weight.grad), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(host(grad_bias), host(bias.grad), rtol=1e-5, atol=1e-5)


def test_batch_norm_stats_and_gather_stats(device):
    x = _t(randn(5, 2, 3), device)
    mean, invstd = npusim.batch_norm_stats(x, 1e-5)
    var = host(x).var(axis=(0, 2))
    np.testing.assert_allclose(host(mean), host(x).mean(axis=(0, 2)), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(host(invstd), 1 / np.sqrt(var + 1e-5), rtol=1e-5)
    # gather_stats: the same count on every rank
    m2, i2 = npusim.batch_norm_gather_stats(x, npusim.stack([mean, mean]), npusim.stack([invstd, invstd]), None,
                                            None, 0.1, 1e-5, 15)
    np.testing.assert_allclose(host(m2), host(mean), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(host(i2), host(invstd), rtol=1e-5)
    assert not mean.requires_grad


def test_batch_norm_update_stats(device):
    x = _t(randn(5, 2, 3), device)
    rm, rv = _t(np.zeros(2, np.float32), device), _t(np.ones(2, np.float32), device)
    mean, var = npusim.batch_norm_update_stats(x, rm, rv, 0.25)
    a = host(x)
    np.testing.assert_allclose(host(var), a.var(axis=(0, 2)), rtol=1e-5)
    np.testing.assert_allclose(host(rm), 0.25 * a.mean(axis=(0, 2)), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(host(rv), 0.75 + 0.25 * a.var(axis=(0, 2), ddof=1), rtol=1e-5)


def test_batch_norm_backward_reduce_flags(device):
    x = _t(randn(4, 3, 2), device)
    mean, invstd = npusim.batch_norm_stats(x, 1e-5)
    g = _t(randn(4, 3, 2, seed=1), device)
    sum_dy, sum_dy_xmu, gw, gb = npusim.batch_norm_backward_reduce(g, x, mean, invstd, None, False, False, True)
    assert sum_dy is None and sum_dy_xmu is None and gw is None
    with pytest.raises(IndexError, match="Dimension out of range"):
        npusim.batch_norm_stats(x[0, 0], 1e-5)
    np.testing.assert_allclose(host(gb), host(g).sum(axis=(0, 2)), rtol=1e-5, atol=1e-6)


# --- dropout ---------------------------------------------------------------------------------------------------

def test_native_dropout(device):
    x = _t(randn(50, 40), device, grad=True)
    out, mask = npusim.native_dropout(x, 0.5, True)
    assert mask.dtype is npusim.bool and mask.shape == x.shape
    np.testing.assert_allclose(host(out), host(x) * host(mask) * 2.0, rtol=1e-6)
    assert 0.4 < host(mask).mean() < 0.6
    out.sum().backward()
    np.testing.assert_array_equal(host(x.grad), host(mask) * 2.0)
    x.grad = None
    out, mask = npusim.native_dropout(x, 0.5, False)
    assert host(mask).all()
    np.testing.assert_array_equal(host(out), host(x))
    out, mask = npusim.native_dropout(x, 0.5, None)    # None drops as True does; backward scales by the mask only
    out.sum().backward()
    np.testing.assert_array_equal(host(x.grad), host(mask).astype(np.float32))
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        npusim.native_dropout(npusim.arange(3, device=device), 0.5, True)


def test_feature_dropout_zeroes_whole_channels(device):
    x = _t(np.ones((4, 30, 5), np.float32), device)
    out = npusim.feature_dropout(x, 0.5, True)
    per_channel = host(out)
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert (per_channel.min(axis=2) == per_channel.max(axis=2)).all()
    np.testing.assert_array_equal(host(npusim.feature_dropout(x, 0.5, False)), host(x))
    y = x.clone()
    assert npusim.feature_dropout_(y, 0.5, True) is y
    assert set(np.unique(host(y))) <= {0.0, 2.0}


# --- against torch ---------------------------------------------------------------------------------------------

@pytest.mark.oracle
@pytest.mark.parametrize("name", ["native_batch_norm", "native_layer_norm", "native_group_norm"])
def test_native_norms_match_torch(torch, device, name):
    # float64: per-row sums of 20 values and a handful of elementwise ops; 1e-10 leaves room for the sum order
    x = randn(4, 6, 5, seed=1, dtype=np.float64)
    w, b = randn(6 if name != "native_layer_norm" else 5, seed=2, dtype=np.float64), \
        randn(6 if name != "native_layer_norm" else 5, seed=3, dtype=np.float64)
    results = []
    for lib in (torch, npusim):
        make = (lambda a, lib=lib: lib.tensor(a, requires_grad=True)) if lib is torch else \
            (lambda a: npusim.tensor(a, device=device, requires_grad=True))
        leaves = [make(a) for a in (x, w, b)]
        if name == "native_batch_norm":
            rm = lib.zeros(6, dtype=lib.float64) if lib is torch else npusim.zeros(6, dtype=npusim.float64,
                                                                                 device=device)
            rv = rm + 1
            out = lib.native_batch_norm(*leaves, rm, rv, True, 0.1, 1e-5)
            extra = [rm, rv]
        elif name == "native_layer_norm":
            out, extra = lib.native_layer_norm(leaves[0], [5], leaves[1], leaves[2], 1e-5), []
        else:
            out, extra = lib.native_group_norm(*leaves, 4, 6, 5, 3, 1e-5), []
        (out[0] * out[0]).sum().backward()
        results.append((out, leaves, extra))
    (t_out, t_leaves, t_extra), (n_out, n_leaves, n_extra) = results
    assert len(t_out) == len(n_out) == 3
    for a, c in zip(list(t_out) + t_extra, list(n_out) + n_extra):
        assert tuple(a.shape) == tuple(c.shape)
        np.testing.assert_allclose(host(c), a.detach().numpy(), rtol=1e-10, atol=1e-10)
    for a, c in zip(t_leaves, n_leaves):
        np.testing.assert_allclose(host(c.grad), a.grad.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.oracle
def test_batch_norm_steps_match_torch_whole_batch(torch, device):
    # torch has CPU kernels only for batch_norm_update_stats: the oracle for the CUDA-only steps is torch's
    # whole-batch native_batch_norm and its autograd (float64; per-channel sums of 20 values, 1e-10 holds)
    x = randn(4, 3, 5, seed=4, dtype=np.float64)
    w, b, g = randn(3, seed=5, dtype=np.float64), randn(3, seed=6, dtype=np.float64), \
        randn(4, 3, 5, seed=7, dtype=np.float64)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    t_rm, t_rv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    t_out, t_mean, t_invstd = torch.native_batch_norm(tx, tw, tb, t_rm, t_rv, True, 0.1, 1e-5)
    t_out.backward(torch.tensor(g))
    nx, nw, nb, ng = (npusim.tensor(a, device=device) for a in (x, w, b, g))
    n_rm, n_rv = npusim.zeros(3, dtype=npusim.float64, device=device), npusim.ones(3, dtype=npusim.float64,
                                                                                    device=device)
    outs, mean, invstd, counts = _two_rank_batch_norm(nx, nw, nb, n_rm, n_rv, 0.1, 1e-5, npusim)
    for got, want in ((npusim.cat(outs), t_out), (mean, t_mean), (invstd, t_invstd), (n_rm, t_rm), (n_rv, t_rv)):
        np.testing.assert_allclose(host(got), want.detach().numpy(), rtol=1e-10, atol=1e-10)
    grad_input, grad_weight, grad_bias = _two_rank_backward(ng.chunk(2, 0), nx, nw, mean, invstd, counts, npusim)
    for got, want in ((grad_input, tx.grad), (grad_weight, tw.grad), (grad_bias, tb.grad)):
        np.testing.assert_allclose(host(got), want.numpy(), rtol=1e-10, atol=1e-10)
    # and batch_norm_update_stats, which torch has on the CPU
    t_rm, t_rv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    n_rm, n_rv = npusim.zeros(3, dtype=npusim.float64, device=device), npusim.ones(3, dtype=npusim.float64,
                                                                                    device=device)
    want = torch.batch_norm_update_stats(torch.tensor(x), t_rm, t_rv, 0.3)
    got = npusim.batch_norm_update_stats(nx, n_rm, n_rv, 0.3)
    for a, c in zip(list(want) + [t_rm, t_rv], list(got) + [n_rm, n_rv]):
        np.testing.assert_allclose(host(c), a.detach().numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.oracle
@pytest.mark.parametrize("p, train", [(0.0, True), (0.5, False), (1.0, True)])
def test_native_dropout_deterministic_cases_match_torch(torch, device, p, train):
    # the draws differ between the libraries; p = 0, p = 1 and eval are deterministic, and exact
    x = randn(3, 4, seed=8)
    tx = torch.tensor(x, requires_grad=True)
    nx = npusim.tensor(x, device=device, requires_grad=True)
    t_out, t_mask = torch.native_dropout(tx, p, train)
    n_out, n_mask = npusim.native_dropout(nx, p, train)
    t_out.sum().backward()
    n_out.sum().backward()
    np.testing.assert_array_equal(host(n_out), t_out.detach().numpy())
    np.testing.assert_array_equal(host(n_mask), t_mask.numpy())
    np.testing.assert_array_equal(host(nx.grad), tx.grad.numpy())
    assert type(n_out.grad_fn).__name__ == type(t_out.grad_fn).__name__ == "NativeDropoutBackward0"


@pytest.mark.oracle
def test_feature_dropout_eval_and_p_one_match_torch(torch, device):
    x = randn(2, 3, 4, seed=9)
    for p, train in ((0.3, False), (1.0, True), (0.0, True)):
        want = torch.feature_dropout(torch.tensor(x), p, train)
        got = npusim.feature_dropout(npusim.tensor(x, device=device), p, train)
        np.testing.assert_array_equal(host(got), want.numpy())
