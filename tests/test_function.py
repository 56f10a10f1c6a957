"""Custom autograd Functions: ctx, saved tensors, flags, and the checks on what backward returns."""
from __future__ import annotations

import re

import numpy as np
import pytest

import npusim
from conftest import host
from npusim.autograd import Function
from npusim.autograd.function import once_differentiable


def leaf(values, device, dtype=None):
    return npusim.tensor(values, dtype=dtype or npusim.float32, device=device, requires_grad=True)


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x


def test_forward_and_backward(device):
    x = leaf([1.0, 2.0], device)
    y = Cube.apply(x)
    assert y.grad_fn.name() == "CubeBackward" and type(y.grad_fn).__name__ == "CubeBackward"
    assert y.grad_fn.next_functions[0][0].variable is x
    y.sum().backward()
    np.testing.assert_allclose(host(x.grad), [3.0, 12.0])


def test_forward_runs_without_recording(device):
    seen = {}

    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            seen["grad_enabled"] = npusim.is_grad_enabled()
            seen["inner"] = (x * 2).requires_grad
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    Probe.apply(leaf([1.0], device))
    assert seen == {"grad_enabled": False, "inner": False}


def test_no_recording_without_inputs_that_require_grad(device):
    y = Cube.apply(npusim.tensor([1.0, 2.0], device=device))
    assert not y.requires_grad and y.grad_fn is None
    with npusim.no_grad():
        assert not Cube.apply(leaf([1.0], device)).requires_grad


def test_needs_input_grad_and_non_tensor_arguments(device):
    seen = {}

    class Scale(Function):
        @staticmethod
        def forward(ctx, x, factor, y):
            ctx.factor = factor
            return x * factor + y

        @staticmethod
        def backward(ctx, g):
            seen["needs"] = ctx.needs_input_grad
            return g * ctx.factor, None, g

    x = leaf([1.0, 2.0], device)
    y = npusim.ones(2, device=device)
    Scale.apply(x, 3.0, y).sum().backward()
    assert seen["needs"] == (True, False, False)
    np.testing.assert_allclose(host(x.grad), [3.0, 3.0])


def test_saved_outputs_and_double_backward(device):
    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            r = x.exp()
            ctx.save_for_backward(r)
            return r

        @staticmethod
        def backward(ctx, g):
            (r,) = ctx.saved_tensors
            return g * r

    x = leaf([0.0, 1.0], device, dtype=npusim.float64)
    y = Exp.apply(x)
    (g,) = npusim.autograd.grad(y.sum(), x, create_graph=True)
    np.testing.assert_allclose(host(g), np.exp([0.0, 1.0]))
    (h,) = npusim.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(host(h), np.exp([0.0, 1.0]))


def test_mark_non_differentiable(device):
    class SortLike(Function):
        @staticmethod
        def forward(ctx, x):
            idx = npusim.tensor([1.0, 0.0], device=x.device)
            ctx.mark_non_differentiable(idx)
            return x * 2, idx

        @staticmethod
        def backward(ctx, g, g_idx):
            assert g_idx is not None and not bool(g_idx.any())   # materialized zeros
            return g * 2

    x = leaf([1.0, 2.0], device)
    y, idx = SortLike.apply(x)
    assert y.requires_grad and not idx.requires_grad
    y.sum().backward()
    np.testing.assert_allclose(host(x.grad), [2.0, 2.0])


def test_set_materialize_grads(device):
    seen = {}

    class Two(Function):
        @staticmethod
        def forward(ctx, x, materialize):
            ctx.set_materialize_grads(materialize)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            seen["g2"] = g2
            return g1 * 2 + (g2 * 3 if g2 is not None else 0), None

    x = leaf([1.0], device)
    Two.apply(x, False)[0].sum().backward()
    assert seen["g2"] is None
    Two.apply(x, True)[0].sum().backward()
    np.testing.assert_allclose(host(seen["g2"]), [0.0])


def test_setup_context_style(device):
    class Mul(Function):
        @staticmethod
        def forward(x, y):
            return x * y

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y, g * x

    x, y = leaf([2.0], device), leaf([5.0], device)
    Mul.apply(x, y).backward()
    assert host(x.grad).tolist() == [5.0] and host(y.grad).tolist() == [2.0]


def test_once_differentiable(device):
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            assert not npusim.is_grad_enabled()
            return g * 2 * x

    x = leaf([3.0], device)
    Square.apply(x).backward()
    np.testing.assert_allclose(host(x.grad), [6.0])
    (g,) = npusim.autograd.grad(Square.apply(x), x, create_graph=True)
    assert not g.requires_grad   # nothing to differentiate: the output gradient is a constant
    go = npusim.ones(1, device=device, requires_grad=True)
    (g,) = npusim.autograd.grad(Square.apply(x), x, grad_outputs=go, create_graph=True)
    assert g.requires_grad and type(g.grad_fn).__name__ == "Error"
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was marked with "
                                           "@once_differentiable"):
        g.backward()


def test_mark_dirty_in_place_function(device):
    class AddOne(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = leaf([1.0, 2.0], device)
    y = x * 2
    out = AddOne.apply(y)
    assert out is y and y.grad_fn.name() == "AddOneBackward" and y._version == 1
    (y * y).sum().backward()
    np.testing.assert_allclose(host(x.grad), [12.0, 20.0])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in an in-place "
                                           "operation."):
        AddOne.apply(leaf([1.0], device))


def test_input_returned_as_is_becomes_a_view(device):
    class Same(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    x = leaf([1.0], device)
    y = Same.apply(x)
    assert y is not x and y.grad_fn.name() == "SameBackward" and x.is_leaf
    y.backward()
    np.testing.assert_allclose(host(x.grad), [5.0])
    with pytest.raises(RuntimeError, match="^Output 0 of Same is a view and is being modified inplace. This view "
                                           "was created inside a custom Function"):
        Same.apply(x * 1).mul_(2)


class WrongCount(Function):
    @staticmethod
    def forward(ctx, a, b):
        return a * b

    @staticmethod
    def backward(ctx, g):
        return g


class WrongShape(Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2

    @staticmethod
    def backward(ctx, g):
        return npusim.ones(3, device=g.device)


class GradForNumber(Function):
    @staticmethod
    def forward(ctx, a, k):
        return a * k

    @staticmethod
    def backward(ctx, g):
        return g, g


class BroadcastGrad(Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2

    @staticmethod
    def backward(ctx, g):
        return g.expand(3, 2) * 1


def test_wrong_number_of_gradients(device):
    x = leaf([1.0, 2.0], device)
    with pytest.raises(RuntimeError, match=re.escape("function WrongCountBackward returned an incorrect number of "
                                                     "gradients (expected 2, got 1)")):
        WrongCount.apply(x, x).sum().backward()


def test_gradient_of_the_wrong_shape(device):
    x = leaf([1.0, 2.0], device)
    with pytest.raises(RuntimeError, match=re.escape("Function WrongShapeBackward returned an invalid gradient at "
                                                     "index 0 - got [3] but expected shape compatible with [2]")):
        WrongShape.apply(x).sum().backward()


def test_gradient_for_a_non_tensor_input(device):
    x = leaf([1.0, 2.0], device)
    with pytest.raises(RuntimeError, match="function GradForNumberBackward returned a gradient different than None "
                                           "at position 2, but the corresponding forward input was not a Variable"):
        GradForNumber.apply(x, 2.0).sum().backward()


def test_broadcast_gradient_is_summed_back(device):
    x = leaf([1.0, 2.0], device)
    BroadcastGrad.apply(x).sum().backward()
    np.testing.assert_allclose(host(x.grad), [3.0, 3.0])


def test_save_for_backward_accepts_only_tensors(device):
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 1

    with pytest.raises(TypeError, match="save_for_backward can only save variables, but argument 1 is of type int"):
        Bad.apply(leaf([1.0], device))


def test_saved_tensors_are_freed_after_backward(device):
    x = leaf([1.0], device)
    y = Cube.apply(x * 1)
    y.backward()
    with pytest.raises(RuntimeError, match="^Trying to backward through the graph a second time"):
        y.grad_fn.saved_tensors
    with pytest.raises(RuntimeError, match="^Trying to backward through the graph a second time"):
        y.backward()


def test_saved_input_changed_in_place(device):
    x = leaf([1.0], device)
    h = x * 1
    y = Cube.apply(h)
    h.add_(1)
    with pytest.raises(RuntimeError, match="one of the variables needed for gradient computation has been "
                                           "modified by an inplace operation"):
        y.backward()


def test_missing_forward_and_backward():
    class Empty(Function):
        pass

    with pytest.raises(NotImplementedError, match="You must implement the forward function for custom "
                                                  "autograd.Function."):
        Empty.apply(npusim.ones(1))

    class NoBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    with pytest.raises(NotImplementedError, match="You must implement either the backward or vjp method"):
        NoBackward.apply(npusim.ones(1, requires_grad=True)).sum().backward()


@pytest.mark.oracle
def test_function_errors_match_torch(torch):
    def build(m):
        F = m.autograd.Function

        class WrongCount(F):
            @staticmethod
            def forward(ctx, a, b):
                return a * b

            @staticmethod
            def backward(ctx, g):
                return g

        class WrongShape(F):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                return m.ones(3)

        class GradForNumber(F):
            @staticmethod
            def forward(ctx, a, k):
                return a * k

            @staticmethod
            def backward(ctx, g):
                return g, g

        x = m.ones(2, requires_grad=True)
        return [lambda: WrongCount.apply(x, x).sum().backward(), lambda: WrongShape.apply(x).sum().backward(),
                lambda: GradForNumber.apply(x, 2.0).sum().backward()]

    for t_fn, n_fn in zip(build(torch), build(npusim)):
        with pytest.raises(RuntimeError) as err:
            t_fn()
        with pytest.raises(RuntimeError, match=re.escape(str(err.value))):
            n_fn()


@pytest.mark.oracle
def test_custom_function_gradients_match_torch(torch, device):
    def run(m, dev):
        class Softsign(m.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                ctx.save_for_backward(x, y)
                return x / (1 + y.abs()), y * 2

            @staticmethod
            def backward(ctx, g1, g2):
                x, y = ctx.saved_tensors
                d = 1 + y.abs()
                return g1 / d, -g1 * x * y.sign() / (d * d) + 2 * g2

        x = m.tensor([1.0, -2.0, 3.0], device=dev, requires_grad=True)
        y = m.tensor([0.5, -1.5, 2.0], device=dev, requires_grad=True)
        a, b = Softsign.apply(x, y)
        (a * b).sum().backward()
        return x.grad, y.grad

    for got, want in zip(run(npusim, device), run(torch, "cpu")):
        np.testing.assert_allclose(host(got), want.numpy(), rtol=1e-6)
