"""gradient: central and one-sided differences against NumPy's gradient, every overload, errors, autograd;
torch as oracle."""
from __future__ import annotations

import numpy as np
import pytest

import npusim
from conftest import host


def _f(seed=0):
    return np.random.default_rng(seed).standard_normal((4, 6))


@pytest.mark.parametrize("edge_order", [1, 2])
def test_matches_numpy(device, edge_order):
    x = _f()
    t = npusim.tensor(x, device=device)
    for got, want in zip(npusim.gradient(t, edge_order=edge_order), np.gradient(x, edge_order=edge_order)):
        np.testing.assert_allclose(host(got), want, rtol=1e-12, atol=1e-12)
    got = npusim.gradient(t, spacing=[2.0, 0.5], edge_order=edge_order)
    for g, w in zip(got, np.gradient(x, 2.0, 0.5, edge_order=edge_order)):
        np.testing.assert_allclose(host(g), w, rtol=1e-12, atol=1e-12)
    coords = np.array([0.0, 0.5, 1.5, 1.7, 3.0, 4.5])
    (g,) = npusim.gradient(t, spacing=(npusim.tensor(coords, device=device),), dim=1, edge_order=edge_order)
    np.testing.assert_allclose(host(g), np.gradient(x, coords, axis=1, edge_order=edge_order), rtol=1e-10)
    (g,) = npusim.gradient(t, spacing=3, dim=-1, edge_order=edge_order)
    np.testing.assert_allclose(host(g), np.gradient(x, 3, axis=-1, edge_order=edge_order), rtol=1e-12)
    g = npusim.gradient(t, dim=[1, 0], edge_order=edge_order)
    np.testing.assert_allclose(host(g[0]), np.gradient(x, axis=1, edge_order=edge_order), rtol=1e-12)


def test_dtypes_and_shapes(device):
    x = npusim.tensor([[1, 2, 4, 8], [10, 20, 40, 80]], device=device)
    g = npusim.gradient(x)
    assert isinstance(g, tuple) and len(g) == 2 and g[0].dtype is npusim.float32
    assert host(g[1]).tolist() == [[1.0, 1.5, 3.0, 4.0], [10.0, 15.0, 30.0, 40.0]]
    assert npusim.gradient(npusim.tensor(3.0, device=device)) == ()
    assert npusim.gradient(x.double(), spacing=npusim.tensor(2.0), dim=1)[0].dtype is npusim.float64


def test_errors(device):
    x = npusim.randn(2, 4, device=device)
    with pytest.raises(RuntimeError, match="since dim argument was not given, but got a list of length 1"):
        npusim.gradient(x, spacing=[2.0])
    with pytest.raises(RuntimeError, match="only supports edge_order=1 and edge_order=2"):
        npusim.gradient(x, edge_order=3)
    with pytest.raises(RuntimeError, match="each dimension size to be at least edge_order\\+1"):
        npusim.gradient(x, edge_order=2)
    with pytest.raises(RuntimeError, match="does not support uint8 input"):
        npusim.gradient(x.to(npusim.uint8))
    with pytest.raises(IndexError, match="Dimension out of range"):
        npusim.gradient(x, dim=2)
    with pytest.raises(RuntimeError, match="spacing argument of length 2 and a dim argument of length 1"):
        npusim.gradient(x, spacing=[1.0, 2.0], dim=1)
    with pytest.raises(RuntimeError, match="each element of spacing to have one dimension, but got an element with 2"):
        npusim.gradient(x, spacing=(npusim.zeros(1, 2, device=device),), dim=0)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times"):
        npusim.gradient(x, dim=(0, 0))


def test_backward(device):
    x = npusim.tensor(_f(1), device=device, requires_grad=True)
    (g,) = npusim.gradient(x, dim=1)
    g.sum().backward()
    # d/dx of the summed differences: a telescoping sum, only the ends' weights survive
    w = np.zeros(6)
    w[[0, 1]] = [-1.5, 0.5]
    w[[4, 5]] = [-0.5, 1.5]
    np.testing.assert_allclose(host(x.grad), np.broadcast_to(w, (4, 6)), atol=1e-12)


@pytest.mark.oracle
@pytest.mark.parametrize("edge_order", [1, 2])
def test_against_torch(device, torch, edge_order):
    x = np.random.default_rng(2).standard_normal((3, 5, 4))
    coords = [np.array([0.0, 1.0, 1.5]), np.array([0, 2, 3, 7, 8]), np.array([0.0, 0.1, 0.5, 2.0])]
    cases = [dict(), dict(spacing=2), dict(spacing=1.5, dim=(0, 2)), dict(spacing=[2.0, 3.0, 0.5]),
             dict(spacing=[2.0], dim=1), dict(dim=[2, 0]), dict(spacing="coords"), dict(spacing="coords1", dim=1)]
    for dt in ("float32", "float64", "int64"):
        for kw in cases:
            def conv(m):
                k = dict(kw)
                on = {"device": device} if m is npusim else {}
                if k.get("spacing") == "coords":
                    k["spacing"] = tuple(m.tensor(c, **on) for c in coords)
                elif k.get("spacing") == "coords1":
                    k["spacing"] = (m.tensor(coords[1], **on),)
                return k
            data = (x * 10).astype(dt) if dt == "int64" else x.astype(dt)
            a = npusim.gradient(npusim.tensor(data, device=device), edge_order=edge_order, **conv(npusim))
            b = torch.gradient(torch.tensor(data), edge_order=edge_order, **conv(torch))
            assert len(a) == len(b)
            for p, q in zip(a, b):
                assert str(p.dtype).split(".")[1] == str(q.dtype).split(".")[1]
                np.testing.assert_allclose(host(p), q.numpy(), rtol=1e-6 if dt == "float32" else 1e-12)
    y = npusim.tensor(x, device=device, requires_grad=True)
    z = torch.tensor(x, requires_grad=True)
    sum((g ** 2).sum() for g in npusim.gradient(y, spacing=(npusim.tensor(coords[0], device=device),), dim=0,
                                                 edge_order=edge_order)).backward()
    sum((g ** 2).sum() for g in torch.gradient(z, spacing=(torch.tensor(coords[0]),), dim=0,
                                                edge_order=edge_order)).backward()
    np.testing.assert_allclose(host(y.grad), z.grad.numpy(), rtol=1e-10)
