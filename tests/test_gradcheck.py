"""gradcheck and gradgradcheck: they accept right gradients and reject wrong ones."""
from __future__ import annotations

import re

import pytest

import npusim
from npusim.autograd import Function, GradcheckError, gradcheck, gradgradcheck


def leaf(values, device, dtype=npusim.float64):
    return npusim.tensor(values, dtype=dtype, device=device, requires_grad=True)


class HalfGradient(Function):
    """x ** 2 with a backward that forgets the factor 2."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x


class WrongSecondDerivative(Function):
    """x ** 3 whose backward is right in value but built from a detached x (its own derivative is lost)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x.detach() ** 2


def test_gradcheck_accepts_correct_gradients(device):
    x = leaf([[0.5, -1.0], [2.0, 1.5]], device)
    y = leaf([0.3, 0.7], device)
    assert gradcheck(lambda a, b: (a * b).exp().sum(1), (x, y))
    assert gradcheck(lambda a: (a.sin(), a.t() @ a), (x,))


def test_gradcheck_handles_scalars_and_non_contiguous_inputs(device):
    s = leaf(0.7, device)
    assert gradcheck(lambda a: a * a.exp(), (s,))
    t = npusim.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=npusim.float64, device=device).t().requires_grad_()
    assert not t.is_contiguous()
    assert gradcheck(lambda a: a.log(), (t,))


def test_gradcheck_rejects_a_wrong_backward(device):
    x = leaf([1.0, 2.0], device)
    with pytest.raises(GradcheckError, match=re.escape("Jacobian mismatch for output 0 with respect to input 0,\n"
                                                       "numerical:tensor([[2.0000, 0.0000],\n        [0.0000, "
                                                       "4.0000]]")):
        gradcheck(HalfGradient.apply, (x,))
    assert gradcheck(HalfGradient.apply, (x,), raise_exception=False) is False
    assert issubclass(GradcheckError, RuntimeError)


def test_gradcheck_needs_an_input_that_requires_grad(device):
    with pytest.raises(ValueError, match="gradcheck expects at least one input tensor to require gradient, but "
                                         "none of them have requires_grad=True."):
        gradcheck(lambda a: a * 2, (npusim.ones(2, dtype=npusim.float64, device=device),))


def test_gradcheck_warns_about_single_precision(device):
    x = leaf([1.0, 2.0], device, dtype=npusim.float32)
    with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double precision floating point"):
        gradcheck(lambda a: a * 2, (x,), eps=1e-3, atol=1e-2, rtol=1e-2)


def test_gradgradcheck_accepts_correct_second_derivatives(device):
    x = leaf([0.5, -1.0, 2.0], device)
    assert gradgradcheck(lambda a: (a ** 3).sum() * a.sin(), (x,))
    go = npusim.tensor([1.0, 2.0, 3.0], dtype=npusim.float64, device=device, requires_grad=True)
    assert gradgradcheck(lambda a: a.exp() * a, (x,), grad_outputs=(go,))


def test_gradgradcheck_rejects_a_wrong_second_derivative(device):
    x = leaf([1.0, 2.0], device)
    assert gradcheck(WrongSecondDerivative.apply, (x,))   # first derivatives are right
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradgradcheck(WrongSecondDerivative.apply, (x,))
    assert gradgradcheck(WrongSecondDerivative.apply, (x,), raise_exception=False) is False


@pytest.mark.oracle
def test_gradcheck_verdicts_match_torch(torch):
    def verdicts(m):
        class Half(m.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * x

        x = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
        return (m.autograd.gradcheck(lambda a: a.exp(), (x,)),
                m.autograd.gradcheck(Half.apply, (x,), raise_exception=False),
                m.autograd.gradgradcheck(lambda a: a ** 3, (x,)))

    assert verdicts(npusim) == verdicts(torch) == (True, False, True)
