"""``F.affine_grid`` and ``F.grid_sample``: composites of differentiable ops, on cpu and npu.

Torch-free tests prove the sampling by hand (identity grids return the input, a point between pixels is their
mean, each padding mode's value outside the image) and the gradients by float64 gradcheck; oracle tests compare
values and gradients (input and grid) with torch for every mode, padding mode, align_corners, 4-D and 5-D.
"""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

import npusim
import npusim.nn.functional as F
from conftest import host
from npusim.autograd import gradcheck

RNG = np.random.default_rng(0)


def _identity_theta(n, dims, device):
    eye = np.concatenate([np.eye(dims), np.zeros((dims, 1))], 1)
    return npusim.tensor(np.broadcast_to(eye, (n, dims, dims + 1)).copy(), device=device)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_identity_grid_returns_the_input(device, mode):
    x = npusim.tensor(RNG.standard_normal((2, 3, 4, 5)), device=device)
    grid = F.affine_grid(_identity_theta(2, 2, device), (2, 3, 4, 5), align_corners=True)
    out = F.grid_sample(x, grid, mode=mode, align_corners=True)
    assert out.device.type == device
    np.testing.assert_allclose(host(out), host(x), atol=1e-12)   # weights are exactly 0/1 up to rounding of linspace


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_identity_grid_returns_the_input_5d(device, mode):
    x = npusim.tensor(RNG.standard_normal((1, 2, 3, 4, 5)), device=device)
    grid = F.affine_grid(_identity_theta(1, 3, device), (1, 2, 3, 4, 5), align_corners=False)
    assert grid.shape == (1, 3, 4, 5, 3)
    np.testing.assert_allclose(host(F.grid_sample(x, grid, mode=mode, align_corners=False)), host(x), atol=1e-12)


def test_affine_grid_values_by_hand(device):
    theta = npusim.tensor([[[2.0, 0.0, 0.5], [0.0, 1.0, -0.25]]], device=device)
    grid = host(F.affine_grid(theta, (1, 1, 2, 3), align_corners=False))
    xs = np.array([-2 / 3, 0.0, 2 / 3])      # pixel centres of 3 columns without align_corners
    ys = np.array([-0.5, 0.5])
    np.testing.assert_allclose(grid[0, :, :, 0], np.broadcast_to(2 * xs + 0.5, (2, 3)), atol=1e-15)
    np.testing.assert_allclose(grid[0, :, :, 1], np.broadcast_to((ys - 0.25)[:, None], (2, 3)), atol=1e-15)


def test_a_point_between_pixels_is_their_mean_and_padding_modes_outside(device):
    x = npusim.tensor([[[[1.0, 3.0], [5.0, 7.0]]]], device=device)
    centre = npusim.tensor([[[[0.0, 0.0]]]], device=device)
    assert host(F.grid_sample(x, centre, align_corners=True)).item() == 4.0
    # x = 2 is one pixel width right of the last column (align_corners=True: columns at -1 and 1)
    outside = npusim.tensor([[[[3.0, -1.0]]]], device=device)
    assert host(F.grid_sample(x, outside, padding_mode="zeros", align_corners=True)).item() == 0.0
    assert host(F.grid_sample(x, outside, padding_mode="border", align_corners=True)).item() == 3.0
    assert host(F.grid_sample(x, outside, padding_mode="reflection", align_corners=True)).item() == 1.0


@pytest.mark.parametrize("mode,dims", [("bilinear", 2), ("bilinear", 3), ("bicubic", 2)])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_gradcheck(device, mode, dims, padding_mode):
    spatial = (3, 4) if dims == 2 else (2, 3, 3)
    x = npusim.tensor(RNG.standard_normal((1, 2) + spatial), device=device, requires_grad=True)
    g = npusim.tensor(RNG.uniform(-1.3, 1.3, (1, 2, 3) + ((2,) if dims == 2 else (2, 3))), device=device,
                      requires_grad=True)
    assert gradcheck(lambda a, b: F.grid_sample(a, b, mode=mode, padding_mode=padding_mode, align_corners=False),
                     (x, g))


def test_affine_grid_gradcheck(device):
    theta = npusim.tensor(RNG.standard_normal((2, 3, 4)), device=device, requires_grad=True)
    assert gradcheck(lambda t: F.affine_grid(t, (2, 1, 2, 3, 2), align_corners=True), (theta,))


def test_bad_arguments():
    x = npusim.zeros(1, 1, 2, 2)
    grid = npusim.zeros(1, 1, 1, 2)
    with pytest.raises(ValueError, match="expected mode"):
        F.grid_sample(x, grid, mode="area", align_corners=False)
    with pytest.raises(ValueError, match="expected padding_mode"):
        F.grid_sample(x, grid, padding_mode="circular", align_corners=False)
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
        F.grid_sample(npusim.zeros(1, 1, 2, 2, 2), npusim.zeros(1, 1, 1, 1, 3), mode="bicubic", align_corners=False)
    with pytest.raises(ValueError, match="Nx2x3"):
        F.affine_grid(npusim.zeros(1, 3, 4), (1, 1, 2, 2), align_corners=False)
    with pytest.warns(UserWarning, match="align_corners=False"):
        F.affine_grid(npusim.zeros(1, 2, 3), (1, 1, 2, 2))


# --- oracle ---------------------------------------------------------------------------------------------------------

CASES = [(mode, pad, ac, dims) for mode in ("bilinear", "nearest", "bicubic") for pad in ("zeros", "border",
         "reflection") for ac in (False, True) for dims in (2, 3) if not (mode == "bicubic" and dims == 3)]


@pytest.mark.oracle
@pytest.mark.parametrize("mode,padding_mode,align_corners,dims", CASES)
def test_grid_sample_matches_torch(torch, device, mode, padding_mode, align_corners, dims):
    spatial = (5, 6) if dims == 2 else (3, 4, 5)
    a = RNG.standard_normal((2, 3) + spatial)
    g = RNG.uniform(-1.4, 1.4, (2, 4, 3) + ((2,) if dims == 2 else (2, 3)))   # some points fall outside
    w = RNG.standard_normal((2, 3, 4, 3) + (() if dims == 2 else (2,)))
    kw = dict(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    ta, tg = torch.tensor(a, requires_grad=True), torch.tensor(g, requires_grad=True)
    na = npusim.tensor(a, device=device, requires_grad=True)
    ng = npusim.tensor(g, device=device, requires_grad=True)
    t_out = torch.nn.functional.grid_sample(ta, tg, **kw)
    n_out = F.grid_sample(na, ng, **kw)
    (t_out * torch.tensor(w)).sum().backward()
    (n_out * npusim.tensor(w, device=device)).sum().backward()
    # float64, a sum of at most 16 products per output and the same summation order up to reassociation:
    # differences are a few ulps of values of order 10
    np.testing.assert_allclose(host(n_out), t_out.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(host(na.grad), ta.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(host(ng.grad), tg.grad.numpy(), rtol=1e-11, atol=1e-11)


@pytest.mark.oracle
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 3, 2, 4, 5), (1, 1, 1, 1)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_matches_torch(torch, device, size, align_corners):
    theta = RNG.standard_normal((size[0], len(size) - 2, len(size) - 1))
    tt = torch.tensor(theta, requires_grad=True)
    nt = npusim.tensor(theta, device=device, requires_grad=True)
    unit = align_corners and min(size[2:]) == 1
    with pytest.warns(UserWarning, match="unit-size grids") if unit else contextlib.nullcontext():
        t_out = torch.nn.functional.affine_grid(tt, size, align_corners=align_corners)
    with pytest.warns(UserWarning, match="unit-size grids") if unit else contextlib.nullcontext():
        n_out = F.affine_grid(nt, size, align_corners=align_corners)
    w = RNG.standard_normal(tuple(t_out.shape))
    (t_out * torch.tensor(w)).sum().backward()
    (n_out * npusim.tensor(w, device=device)).sum().backward()
    # each grid value is a dot product of 3 or 4 terms in float64
    np.testing.assert_allclose(host(n_out), t_out.detach().numpy(), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(host(nt.grad), tt.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.oracle
def test_float32_on_device_matches_torch(torch, device):
    a = RNG.standard_normal((2, 3, 8, 8)).astype(np.float32)
    theta = (np.eye(2, 3) + 0.2 * RNG.standard_normal((2, 2, 3))).astype(np.float32)
    t_out = torch.nn.functional.grid_sample(torch.tensor(a), torch.nn.functional.affine_grid(
        torch.tensor(theta), (2, 3, 6, 7), align_corners=False), align_corners=False)
    n_out = F.grid_sample(npusim.tensor(a, device=device), F.affine_grid(
        npusim.tensor(theta, device=device), (2, 3, 6, 7), align_corners=False), align_corners=False)
    assert n_out.dtype is npusim.float32
    # float32: a grid coordinate of order 8 carries ~1e-6 absolute error, times a slope of order 3
    np.testing.assert_allclose(host(n_out), t_out.numpy(), rtol=1e-5, atol=2e-5)
