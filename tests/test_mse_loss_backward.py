"""mse_loss's gradient is torch's ``mse_loss_backward`` op: one dispatched op with torch's arithmetic,
alpha * (self - target) * grad_output, alpha = 2 (or 2 / numel for the mean) in the operands' dtype."""
import numpy as np
import pytest

import npusim
from conftest import host

aten = npusim.ops.aten


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_the_op_equals_torchs(torch, device, dtype, reduction):
    rng = np.random.default_rng(3)
    x, t = rng.standard_normal((5, 7)).astype(dtype), rng.standard_normal((5, 7)).astype(dtype)
    g = rng.standard_normal((5, 7) if reduction == 0 else ()).astype(dtype)
    want = torch.ops.aten.mse_loss_backward(torch.tensor(g), torch.tensor(x), torch.tensor(t), reduction).numpy()
    got = aten.mse_loss_backward(*(npusim.tensor(a, device=device) for a in (g, x, t)), reduction)
    assert got.dtype == getattr(npusim, dtype)
    np.testing.assert_array_equal(host(got), want)


@pytest.mark.oracle
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_gradients_equal_torchs(torch, device, reduction):
    rng = np.random.default_rng(4)
    x, t = rng.standard_normal((32, 1)).astype(np.float32), rng.standard_normal((32, 1)).astype(np.float32)
    grads = []
    for lib, dev in ((torch, "cpu"), (npusim, device)):
        xs, ts = lib.tensor(x, device=dev, requires_grad=True), lib.tensor(t, device=dev, requires_grad=True)
        gx, gt = lib.autograd.grad(lib.nn.functional.mse_loss(xs, ts, reduction=reduction).sum(), (xs, ts))
        grads.append((gx.detach().cpu().numpy(), gt.detach().cpu().numpy()))
    for a, b in zip(*grads):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_double_backward(device, reduction):
    rng = np.random.default_rng(5)
    x = npusim.tensor(rng.standard_normal((3, 4)), device=device, requires_grad=True)
    t = npusim.tensor(rng.standard_normal((3, 4)), device=device, requires_grad=True)
    assert npusim.autograd.gradgradcheck(lambda a, b: npusim.nn.functional.mse_loss(a, b, reduction=reduction),
                                         (x, t))


def test_the_mean_gradient(device):
    x = npusim.randn(4, 2, device=device, requires_grad=True)
    npusim.nn.functional.mse_loss(x, npusim.zeros(4, 2, device=device)).backward()
    np.testing.assert_allclose(host(x.grad), host(x.detach()) * 2 / 8, rtol=1e-6)
