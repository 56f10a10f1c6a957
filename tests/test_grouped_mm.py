"""F.grouped_mm: the four operand layouts by hand, gradients through the groups, torch's checks, and values against
PyTorch 2.13's CPU path."""
from __future__ import annotations

import numpy as np
import pytest

import npusim
import npusim.nn.functional as F
from conftest import host


def _t(shape, device, dtype=npusim.float32, seed=0, grad=False):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return npusim.tensor(a, device=device).to(dtype).requires_grad_(grad)


def _offs(*v, device="cpu"):
    return npusim.tensor(v, dtype=npusim.int32, device=device)


def test_layouts_by_hand(device):
    a3, b3 = _t((2, 3, 8), device), _t((2, 8, 16), device, seed=1)
    np.testing.assert_allclose(host(F.grouped_mm(a3, b3)), host(a3) @ host(b3), rtol=1e-5, atol=1e-5)
    a2 = _t((6, 8), device)
    out = F.grouped_mm(a2, b3, offs=_offs(2, 5, device=device))
    expect = np.concatenate([host(a2)[:2] @ host(b3)[0], host(a2)[2:5] @ host(b3)[1], np.zeros((1, 16))])
    np.testing.assert_allclose(host(out), expect, rtol=1e-5, atol=1e-5)   # rows past offs[-1]: zeros here
    b2 = _t((8, 16), device, seed=2)
    out = F.grouped_mm(a3, b2, offs=_offs(4, 16, device=device))
    expect = np.concatenate([host(a3)[0] @ host(b2)[:, :4], host(a3)[1] @ host(b2)[:, 4:]], 1)
    np.testing.assert_allclose(host(out), expect, rtol=1e-5, atol=1e-5)
    a = _t((3, 16), device)
    out = F.grouped_mm(a, _t((16, 8), device, seed=3), offs=_offs(8, 16, device=device))
    assert out.shape == (2, 3, 8)
    b = host(_t((16, 8), device, seed=3))
    np.testing.assert_allclose(host(out)[1], host(a)[:, 8:] @ b[8:], rtol=1e-5, atol=1e-5)


def test_gradients_flow_through_the_groups(device):
    a = _t((6, 8), device, grad=True)
    b = _t((2, 8, 16), device, seed=1, grad=True)
    g = np.random.default_rng(2).standard_normal((6, 16)).astype(np.float32)
    F.grouped_mm(a, b, offs=_offs(2, 6, device=device)).backward(npusim.tensor(g, device=device))
    x, w = host(a), host(b)
    expect_a = np.concatenate([g[:2] @ w[0].T, g[2:] @ w[1].T])
    expect_b = np.stack([x[:2].T @ g[:2], x[2:].T @ g[2:]])
    np.testing.assert_allclose(host(a.grad), expect_a, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(host(b.grad), expect_b, rtol=1e-5, atol=1e-5)


def test_checks(device):
    a, b = _t((2, 3, 8), device), _t((2, 8, 16), device)
    cases = [
        (lambda: F.grouped_mm(a.int(), b), "Expected mat_a to be Float32, BFloat16 or Float16 matrix, got Int"),
        (lambda: F.grouped_mm(a, b, offs=_offs(1, 2, device=device)), "Have to provide offsets if there is a 2d"),
        (lambda: F.grouped_mm(a[0], b, offs=npusim.tensor([1, 3], device=device)), "Offsets have to be int32"),
        (lambda: F.grouped_mm(a, b, bias=npusim.zeros(2, 16, device=device)), "Bias not supported yet"),
        (lambda: F.grouped_mm(a.bfloat16(), b.bfloat16(), out_dtype=npusim.float32), "output dtype must match"),
        (lambda: F.grouped_mm(_t((2, 3, 6), device), _t((2, 6, 16), device)), "strides should be multiple of 16"),
        (lambda: F.grouped_mm(a, _t((3, 8, 16), device)), "batched dimension has to match"),
        (lambda: F.grouped_mm(a.bfloat16(), b), "Expected out tensor to have dtype float, but got c10::BFloat16"),
    ]
    for call, message in cases:
        with pytest.raises(RuntimeError, match=message):
            call()


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("shapes, offs", [(((2, 3, 8), (2, 8, 16)), None), (((6, 8), (2, 8, 16)), (2, 6)),
                                          (((2, 3, 8), (8, 16)), (8, 16)), (((3, 16), (16, 8)), (8, 16)),
                                          (((2, 3, 8), (2, 16, 8)), None)])
def test_matches_torch(torch, device, dtype, shapes, offs):
    (sa, sb) = shapes
    a, b = _t(sa, device, getattr(npusim, dtype)), _t(sb, device, getattr(npusim, dtype), seed=1)
    transposed = len(sb) == 3 and sb[1] == 16 and sb[2] == 8
    ta, tb = torch.tensor(host(a)).to(getattr(torch, dtype)), torch.tensor(host(b)).to(getattr(torch, dtype))
    if transposed:   # a column-major mat_b
        b, tb = b.transpose(-2, -1), tb.transpose(-2, -1)
    o = None if offs is None else npusim.tensor(offs, dtype=npusim.int32, device=device)
    to = None if offs is None else torch.tensor(offs, dtype=torch.int32)
    ours = F.grouped_mm(a, b, offs=o)
    theirs = torch.nn.functional.grouped_mm(ta, tb, offs=to)
    assert tuple(ours.shape) == tuple(theirs.shape) and str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    # float32 accumulation of 8 or 16 products on both sides, rounded once to the dtype
    eps = float(torch.finfo(getattr(torch, dtype)).eps)
    np.testing.assert_allclose(host(ours), theirs.float().numpy(), rtol=2 * eps, atol=2 * eps * 4)
