"""softmax's gradient runs as torch's one ``_softmax_backward_data`` op (one kernel where the formula took four ops),
with the formula's values bit for bit, at one and two threads; create_graph keeps the differentiable formula."""
import numpy as np
import pytest

import npusim
from npusim.profiler import ProfilerActivity, profile

SHAPES = [((4, 7), 1), ((4, 7), 0), ((3, 5, 64), -1), ((2, 3, 200, 300), -1), ((1000, 600), 0), ((5,), 0), ((), 0)]


def _bits(t):
    a = t.detach().cpu().numpy().reshape(-1)
    return a.view(f"u{a.dtype.itemsize}")


@pytest.mark.parametrize("shape,dim", SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_op_gives_the_formulas_bits(device, intra_op_threads, shape, dim, dtype):
    rng = np.random.default_rng(0)
    x = npusim.tensor(rng.standard_normal(shape) * 3, dtype=getattr(npusim, dtype), device=device,
                      requires_grad=True)
    g = npusim.tensor(rng.standard_normal(shape), dtype=x.dtype, device=device)
    (fused,) = npusim.autograd.grad(npusim.softmax(x, dim), x, g)
    (formula,) = npusim.autograd.grad(npusim.softmax(x, dim), x, g, create_graph=True)   # the formula's ops
    np.testing.assert_array_equal(_bits(fused), _bits(formula))


def test_a_zero_dim_softmax_sends_back_zero(device):
    x = npusim.tensor(0.3, device=device, requires_grad=True)
    npusim.softmax(x, 0).backward(npusim.tensor(2.5, device=device))
    assert x.grad.item() == 0.0 and x.grad.shape == ()


def test_profilers_see_one_backward_op(device):
    x = npusim.randn(8, 16, device=device, requires_grad=True)
    y = npusim.softmax(x, -1)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        y.backward(npusim.ones_like(y))
    names = [e.key for e in prof.key_averages()]
    assert "aten::_softmax_backward_data" in names
    assert "aten::sum" not in names


def test_a_16_bit_input_takes_its_gradient_in_its_own_dtype(device):
    x = npusim.randn(8, 16, device=device).half().requires_grad_()
    g = npusim.randn(8, 16, device=device)
    (fused,) = npusim.autograd.grad(npusim.softmax(x, 1, dtype=npusim.float32), x, g)
    (formula,) = npusim.autograd.grad(npusim.softmax(x, 1, dtype=npusim.float32), x, g, create_graph=True)
    assert fused.dtype == npusim.float16
    np.testing.assert_array_equal(_bits(fused), _bits(formula))


def test_double_backward_still_differentiates_the_formula(device):
    x = npusim.randn(4, 5, device=device, dtype=npusim.float64, requires_grad=True)
    assert npusim.autograd.gradcheck(lambda t: npusim.softmax(t, 1), (x,))
    assert npusim.autograd.gradgradcheck(lambda t: npusim.softmax(t, 1), (x,))
