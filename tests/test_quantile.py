"""quantile and nanquantile: values against NumPy's methods, shapes, NaN rules, errors, gradients; torch as oracle."""
from __future__ import annotations

import numpy as np
import pytest

import npusim
from conftest import host

MODES = ["linear", "lower", "higher", "midpoint", "nearest"]


def _data(seed=0):
    return np.random.default_rng(seed).standard_normal((3, 5, 4))


@pytest.mark.parametrize("mode", MODES)
def test_values_match_numpy_methods(device, mode):
    x = _data()
    qs = np.array([0.0, 0.1, 0.25, 0.5, 0.9, 1.0])
    t = npusim.tensor(x, device=device)
    for dim in (None, 0, 1, -1):
        got = npusim.quantile(t, npusim.tensor(qs, device=device), dim=dim, interpolation=mode)
        want = np.quantile(x, qs, axis=dim, method=mode)
        np.testing.assert_allclose(host(got), want, rtol=1e-12, atol=1e-12)
        one = npusim.quantile(t, 0.3, dim=dim, keepdim=True, interpolation=mode)
        np.testing.assert_allclose(host(one), np.quantile(x, 0.3, axis=dim, method=mode, keepdims=True), atol=1e-12)


def test_shapes_and_method(device):
    t = npusim.randn(3, 4, device=device)
    assert npusim.quantile(t, 0.5).shape == ()
    assert npusim.quantile(t, npusim.tensor([0.2, 0.8], device=device), dim=1).shape == (2, 3)
    assert npusim.quantile(t, npusim.tensor([0.2, 0.8], device=device), dim=0, keepdim=True).shape == (2, 1, 4)
    assert npusim.quantile(t, 0.5, keepdim=True).shape == (1, 1)
    assert t.quantile(0.5, 1).shape == (3,)
    assert npusim.quantile(npusim.tensor(3.0, device=device), 0.5, 0, True).shape == ()
    assert t.quantile(0.5).dtype is npusim.float32


def test_nan_rows(device):
    x = np.array([[1.0, np.nan, 3.0, 4.0], [np.nan] * 4, [1.0, 2.0, 3.0, 4.0]])
    t = npusim.tensor(x, device=device)
    np.testing.assert_allclose(host(npusim.quantile(t, 0.5, dim=1)), [np.nan, np.nan, 2.5])
    np.testing.assert_allclose(host(npusim.nanquantile(t, 0.5, dim=1)), [3.0, np.nan, 2.5])
    np.testing.assert_allclose(host(t.nanquantile(0.25, dim=1, interpolation="lower")),
                               np.nanquantile(x, 0.25, axis=1, method="lower"))


def test_errors(device):
    t = npusim.randn(3, 4, device=device)
    with pytest.raises(RuntimeError, match=r"q must be in the range \[0, 1\] but got 1.5"):
        npusim.quantile(t, 1.5)
    with pytest.raises(RuntimeError, match=r"q values must be in the range \[0, 1\]"):
        npusim.quantile(t, npusim.tensor([0.1, 1.5], device=device))
    with pytest.raises(RuntimeError, match="interpolation must be one of linear, lower, higher, midpoint or nearest, "
                                           "but got foo"):
        npusim.quantile(t, 0.5, interpolation="foo")
    with pytest.raises(IndexError, match="Dimension out of range"):
        npusim.quantile(t, 0.5, dim=3)
    with pytest.raises(RuntimeError, match="input tensor must be non-empty"):
        npusim.quantile(npusim.empty(0, device=device), 0.5)
    with pytest.raises(RuntimeError, match="must be either float or double"):
        npusim.quantile(t.long(), 0.5)
    with pytest.raises(RuntimeError, match="q tensor must be same dtype"):
        npusim.quantile(t, npusim.tensor([0.5], dtype=npusim.float64, device=device))
    with pytest.raises(RuntimeError, match="q must be a scalar or 1D tensor"):
        npusim.quantile(t, npusim.tensor([[0.5]], device=device))
    with pytest.raises(TypeError):
        npusim.quantile(t, [0.5])


def test_out(device):
    t = npusim.randn(3, 4, device=device)
    out = npusim.empty(0, device=device)
    r = npusim.quantile(t, 0.5, dim=0, out=out)
    assert r is out and out.shape == (4,)


def test_gradient_flows_through_the_interpolated_values(device):
    x = npusim.tensor([[3.0, 1.0, 2.0, 4.0]], dtype=npusim.float64, device=device, requires_grad=True)
    npusim.quantile(x, 0.4, dim=1).sum().backward()   # rank 1.2: 0.8 * 2 + 0.2 * 3
    np.testing.assert_allclose(host(x.grad), [[0.2, 0.0, 0.8, 0.0]])


@pytest.mark.oracle
@pytest.mark.parametrize("fn", ["quantile", "nanquantile"])
@pytest.mark.parametrize("mode", MODES)
def test_against_torch(device, torch, fn, mode):
    x = _data(1)
    x[0, 1, 2] = x[2, 0, 0] = np.nan
    x[1, :, 3] = np.nan
    qs = np.array([0.0, 0.25, 0.5, 0.77, 1.0])
    for dim in (None, 0, 1, 2):
        for keepdim in (False, True):
            for q in (0.35, qs):
                a = getattr(npusim, fn)(npusim.tensor(x, device=device),
                                        q if isinstance(q, float) else npusim.tensor(q, device=device),
                                        dim, keepdim, interpolation=mode)
                b = getattr(torch, fn)(torch.tensor(x), q if isinstance(q, float) else torch.tensor(q), dim, keepdim,
                                       interpolation=mode)
                assert tuple(a.shape) == tuple(b.shape)
                np.testing.assert_allclose(host(a), b.numpy(), equal_nan=True, rtol=1e-12)


@pytest.mark.oracle
@pytest.mark.parametrize("mode", MODES)
def test_gradients_against_torch(device, torch, mode):
    x = np.random.default_rng(2).standard_normal((4, 6))
    x[1, 2] = x[1, 4]    # a tie
    q = np.array([0.1, 0.5, 0.95])
    a = npusim.tensor(x, device=device, requires_grad=True)
    b = torch.tensor(x, requires_grad=True)
    w = np.random.default_rng(3).standard_normal((3, 4))
    (npusim.nanquantile(a, npusim.tensor(q, device=device), dim=1, interpolation=mode)
     * npusim.tensor(w, device=device)).sum().backward()
    (torch.nanquantile(b, torch.tensor(q), dim=1, interpolation=mode) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(host(a.grad), b.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.oracle
def test_error_messages_match_torch(torch):
    for call in (lambda m: m.quantile(m.randn(2, 2), 2.0), lambda m: m.quantile(m.randn(2, 2), 0.5, interpolation="x"),
                 lambda m: m.quantile(m.empty(0), 0.1), lambda m: m.quantile(m.ones(2, dtype=m.int64), 0.1)):
        with pytest.raises(Exception) as ours:
            call(npusim)
        with pytest.raises(Exception) as theirs:
            call(torch)
        assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)
