"""nn.CrossMapLRN2d (the legacy cross-channel LRN with its own backward): by hand and against PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import npusim
import npusim.nn as nn
from conftest import host


def _legacy_lrn(x, size, alpha, beta, k):
    """The legacy window: channels c - pre_pad + 1 .. c + pre_pad - 1, except that channel 0 never leaves it."""
    n, ch = x.shape[:2]
    sq = x ** 2
    pre_pad = int((size - 1) / 2 + 1)
    scale = np.zeros_like(x)
    scale[:, 0] = sq[:, :min(pre_pad, ch)].sum(1)
    for c in range(1, ch):
        scale[:, c] = scale[:, c - 1]
        if c < ch - pre_pad + 1:
            scale[:, c] += sq[:, c + pre_pad - 1]
        if c > pre_pad:
            scale[:, c] -= sq[:, c - pre_pad]
    scale = scale * alpha / size + k
    return x * scale ** -beta, scale


def _legacy_lrn_backward(x, g, size, alpha, beta, k):
    """The legacy backward (not the exact gradient of the forward above, in torch either: gradcheck fails there)."""
    out, scale = _legacy_lrn(x, size, alpha, beta, k)
    ch = x.shape[1]
    grad = scale ** -beta * g
    inverse_pre_pad = int(size - (size - 1) / 2)
    for n in range(x.shape[0]):
        padded = np.zeros((ch + size - 1,) + x.shape[2:])
        padded[inverse_pre_pad:inverse_pre_pad + ch] = g[n] * out[n] / scale[n]
        accum = padded[:size - 1].sum(0)
        for c in range(ch):
            accum = accum + padded[c + size - 1]
            grad[n, c] -= 2 * alpha * beta / size * x[n, c] * accum
            accum = accum - padded[c]
    return grad


def test_cross_map_lrn2d_by_hand_and_gradcheck(device):
    x = np.random.default_rng(0).standard_normal((2, 6, 3, 2))
    m = nn.CrossMapLRN2d(3, alpha=0.5, beta=0.75, k=2.0)
    assert repr(m) == "CrossMapLRN2d(3, alpha=0.5, beta=0.75, k=2.0)"
    a = npusim.tensor(x, device=device, requires_grad=True)
    out = m(a)
    np.testing.assert_allclose(host(out), _legacy_lrn(x, 3, 0.5, 0.75, 2.0)[0], rtol=1e-12)
    assert type(out.grad_fn).__name__ == "CrossMapLRN2dBackward"
    g = np.random.default_rng(1).standard_normal(x.shape)
    out.backward(npusim.tensor(g, device=device))
    np.testing.assert_allclose(host(a.grad), _legacy_lrn_backward(x, g, 3, 0.5, 0.75, 2.0), rtol=1e-10)
    with pytest.raises(ValueError, match="Expected input to be 4D, got 3D instead"):
        m(a[0])


@pytest.mark.oracle
@pytest.mark.parametrize("size, alpha, beta, k", [(3, 1e-4, 0.75, 1), (5, 0.5, 0.6, 2.0), (2, 1.0, 1.0, 1.5)])
def test_cross_map_lrn2d_matches_torch(torch, device, size, alpha, beta, k):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 7, 4, 3)).astype(np.float32)
    g = rng.standard_normal((2, 7, 4, 3)).astype(np.float32)
    m, tm = nn.CrossMapLRN2d(size, alpha, beta, k), torch.nn.CrossMapLRN2d(size, alpha, beta, k)
    assert repr(m) == repr(tm)
    a = npusim.tensor(x, device=device, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    out, tout = m(a), tm(t)
    # the same sums in the same order; pow may differ by an ulp between NumPy and torch
    np.testing.assert_allclose(host(out), tout.detach().numpy(), rtol=1e-6, atol=1e-7)
    out.backward(npusim.tensor(g, device=device))
    tout.backward(torch.tensor(g))
    np.testing.assert_allclose(host(a.grad), t.grad.numpy(), rtol=1e-5, atol=1e-6)
