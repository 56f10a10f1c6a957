"""adaptive_max_pool3d (values, indices, gradients) and max_unpool3d, against PyTorch and by hand."""
from __future__ import annotations

import numpy as np
import pytest

import npusim
import npusim.nn as nn
import npusim.nn.functional as F
from conftest import host
from npusim.autograd import gradcheck, gradgradcheck


def rand(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.oracle
@pytest.mark.parametrize("shape, out", [((2, 3, 5, 6, 7), (2, None, 3)), ((3, 4, 4, 4), 3), ((1, 1, 2, 3, 4), 1)])
def test_adaptive_max_pool3d_matches_torch(torch, device, shape, out):
    x = rand(shape)
    a = npusim.tensor(x, device=device, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    v, i = F.adaptive_max_pool3d(a, out, return_indices=True)
    tv, ti = torch.nn.functional.adaptive_max_pool3d(t, out, return_indices=True)
    np.testing.assert_array_equal(host(v), tv.detach().numpy())
    np.testing.assert_array_equal(host(i), ti.numpy())
    assert i.dtype is npusim.int64 and type(v.grad_fn).__name__ == type(tv.grad_fn).__name__
    g = rand(tuple(tv.shape), seed=1)
    v.backward(npusim.tensor(g, device=device))
    tv.backward(torch.tensor(g))
    np.testing.assert_allclose(host(a.grad), t.grad.numpy(), rtol=1e-6)
    m, tm = nn.AdaptiveMaxPool3d(out), torch.nn.AdaptiveMaxPool3d(out)
    assert repr(m) == repr(tm)
    np.testing.assert_array_equal(host(m(a)), tm(t).detach().numpy())


@pytest.mark.oracle
@pytest.mark.parametrize("shape, kernel, stride, padding, out_size", [
    ((2, 3, 4, 6, 6), 2, None, 0, None),
    ((3, 5, 5, 5), 3, 2, 1, None),
    ((1, 2, 4, 4, 4), 2, 2, 0, (5, 5, 5)),
])
def test_max_unpool3d_matches_torch(torch, device, shape, kernel, stride, padding, out_size):
    x = rand(shape)
    tv, ti = torch.nn.functional.max_pool3d(torch.tensor(x), kernel, stride, padding, return_indices=True)
    v = npusim.tensor(tv.numpy(), device=device, requires_grad=True)
    i = npusim.tensor(ti.numpy(), device=device)
    m, tm = nn.MaxUnpool3d(kernel, stride, padding), torch.nn.MaxUnpool3d(kernel, stride, padding)
    assert repr(m) == repr(tm)
    u, tu = m(v, i, out_size), tm(tv, ti, out_size)
    np.testing.assert_array_equal(host(u), tu.numpy())
    u.sum().backward()   # each pooled value lands in one place: its gradient is 1
    np.testing.assert_array_equal(host(v.grad), np.ones(tv.shape, np.float32))


@pytest.mark.oracle
def test_pool3d_errors_match_torch(torch, device):
    x = rand((1, 2, 4, 4, 4))
    tv, ti = torch.nn.functional.max_pool3d(torch.tensor(x), 2, return_indices=True)
    v, i = npusim.tensor(tv.numpy(), device=device), npusim.tensor(ti.numpy(), device=device)
    cases = [
        (lambda f, m, a: f.adaptive_max_pool3d(a[0, 0], 2), lambda lib: lib.tensor(x)),
        (lambda f, m, a: f.adaptive_max_pool3d(a, (2, 2)), lambda lib: lib.tensor(x)),
        (lambda f, m, a: f.adaptive_max_pool3d(a, -1), lambda lib: lib.tensor(x)),
        (lambda f, m, a: f.adaptive_max_pool3d(a, 2), lambda lib: lib.zeros(2, 0, 3, 3, 3)),
        (lambda f, m, a: f.adaptive_max_pool3d(a.long(), 2), lambda lib: lib.tensor(x)),
    ]
    for call, make in cases:
        with pytest.raises(Exception) as e:
            call(F, nn, make(npusim).to(device))
        with pytest.raises(Exception) as te:
            call(torch.nn.functional, torch.nn, make(torch))
        assert type(e.value) is type(te.value) and str(e.value) == str(te.value)
    unpool_cases = [
        (lambda f, a, j: f.max_unpool3d(a, j.int(), 2)),
        (lambda f, a, j: f.max_unpool3d(a[0, 0], j[0, 0], 2)),
        (lambda f, a, j: f.max_unpool3d(a, j[..., :1], 2)),
        (lambda f, a, j: f.max_unpool3d(a, j + (j == j.max()) * 100, 2)),   # a single out-of-range index
        (lambda f, a, j: f.max_unpool3d(a, j, 2, output_size=(9, 5, 5))),
    ]
    for call in unpool_cases:
        with pytest.raises(Exception) as e:
            call(F, v, i)
        with pytest.raises(Exception) as te:
            call(torch.nn.functional, tv, ti)
        assert type(e.value) is type(te.value) and str(e.value) == str(te.value)


def test_adaptive_max_pool3d_by_hand(device):
    # one 2x2x2 window per output cell; the maximum's flat index in the (D, H, W) volume is recorded
    x = np.arange(64, dtype=np.float32).reshape(1, 1, 4, 4, 4)[..., ::-1].copy()
    v, i = F.adaptive_max_pool3d(npusim.tensor(x, device=device), 2, return_indices=True)
    assert v.shape == (1, 1, 2, 2, 2)
    # first window: d, h in {0, 1}, w in {0, 1}; the largest value is at d=1, h=1, w=0 -> 16 + 4 + 0
    assert host(i)[0, 0, 0, 0, 0] == 20 and host(v)[0, 0, 0, 0, 0] == x[0, 0, 1, 1, 0]
    np.testing.assert_array_equal(host(v).ravel(), x.reshape(-1)[host(i).ravel()])


def test_adaptive_max_pool3d_gradcheck(device):
    # distinct values keep the maximum unique, so finite differences are exact enough
    a = npusim.tensor(np.random.default_rng(3).permutation(48).reshape(1, 2, 2, 3, 4) / 7.0, dtype=npusim.float64,
                      device=device, requires_grad=True)
    assert gradcheck(lambda z: F.adaptive_max_pool3d(z, (2, 2, 3)), (a,))
    assert gradgradcheck(lambda z: F.adaptive_max_pool3d(z, (1, 2, 2)), (a,))


def test_unpool_inverts_pool_at_the_maxima(device):
    x = npusim.tensor(rand((2, 2, 4, 4, 4), seed=5), device=device)
    v, i = F.max_pool3d(x, 2, return_indices=True)
    u = F.max_unpool3d(v, i, 2)
    assert u.shape == x.shape
    kept = host(u) != 0
    assert kept.sum() == v.numel()   # one survivor per window, zeros elsewhere
    np.testing.assert_array_equal(host(u)[kept], host(x)[kept])
