"""Backward formulas of the complex ops (torch's derivatives.yaml): the views of the parts, conjugation, and
building complex tensors. Gradients follow torch's convention: for a real loss L of a complex z, the gradient
is dL/d(re z) + i dL/d(im z), the conjugate Wirtinger derivative times two."""
from __future__ import annotations

from ..dispatch.ops_namespace import aten
from .derivatives import complex_ready, derivative


@derivative("view_as_real", "view_as_real_copy")
def view_as_real_backward(ctx, g):
    return aten.view_as_complex.default(aten.contiguous.default(g))


@derivative("view_as_complex", "view_as_complex_copy")
def view_as_complex_backward(ctx, g):
    return aten.view_as_real.default(aten.contiguous.default(g))


@derivative("conj_physical", "_conj_physical", "conj_physical_")
def conj_physical_backward(ctx, g):
    return aten.conj_physical.default(g)


@derivative("complex", inputs=("real", "imag"))
def complex_backward(ctx, g):
    n = ctx.needs_input_grad
    return (aten.real.default(g) if n[0] else None, aten.imag.default(g) if n[1] else None)


@derivative("polar", inputs=("abs", "angle"), save_result=True)
def polar_backward(ctx, g):
    # torch's polar_backward: d/d|z| is the unit phasor, d/dangle is i z
    n = ctx.needs_input_grad
    g_conj = aten.conj_physical.default(g)
    result = ctx.result
    grad_abs = grad_angle = None
    if n[0]:
        grad_abs = aten.real.default(aten.mul.Tensor(g_conj, aten.sgn.default(result)))
    if n[1]:
        grad_angle = aten.real.default(aten.mul.Tensor(g_conj, aten.mul.Scalar(result, 1j)))
    return grad_abs, grad_angle


def holomorphic(formula):
    """``formula`` (of the form g * F(inputs), linear in g) made right for complex tensors: torch's gradient is
    g * conj(F), which is conj(formula(conj(g))). Real gradients take the formula as it is."""
    def complex_aware(ctx, g):
        if g._a.dtype.kind != "c":
            return formula(ctx, g)
        r = formula(ctx, aten.conj_physical.default(g))
        if isinstance(r, tuple):
            return tuple(None if x is None else conj_if_complex(x) for x in r)
        return conj_if_complex(r)
    complex_aware.__name__ = complex_aware.__qualname__ = formula.__name__
    complex_aware.__doc__ = formula.__doc__
    complex_aware.__wrapped__ = formula
    return complex_aware


def conj_if_complex(t):
    return aten.conj_physical.default(t) if t.is_complex() else t


# Formulas right for complex tensors: the linear ops (the gradient passes through unchanged, summed, moved or
# selected), the complex ops above, and those marked ``holomorphic`` in their families' files.
complex_ready(
    "add", "add_", "sub", "sub_", "rsub", "neg", "neg_", "sum", "mean", "cumsum", "clone", "contiguous", "alias",
    "detach", "view", "reshape", "_reshape_alias", "_unsafe_view", "permute", "transpose", "t", "expand",
    "squeeze", "unsqueeze", "flatten", "unflatten", "narrow", "select", "slice", "as_strided", "diagonal",
    "unbind", "split", "split_with_sizes", "chunk", "cat", "stack", "index", "index_select", "where",
    "masked_fill", "masked_fill_", "_to_copy", "copy_", "fill_", "zero_", "abs",
    "view_as_real", "view_as_complex", "view_as_real_copy", "view_as_complex_copy", "conj_physical",
    "_conj_physical", "conj_physical_", "complex", "polar",
    "mul", "mul_", "div", "div_", "exp", "exp_", "log", "log_", "sqrt", "sqrt_", "sin", "sin_", "cos", "cos_",
    "tan", "tan_", "tanh", "tanh_", "sinh", "sinh_", "cosh", "cosh_", "sigmoid", "sigmoid_", "reciprocal",
    "reciprocal_", "rsqrt", "rsqrt_", "square", "square_", "log2", "log10", "log1p", "expm1", "exp2",
    "pow", "pow_", "mm", "bmm", "mv", "dot", "vdot", "addmm", "addmm_", "matmul", "outer", "addmv", "baddbmm",
    # real results of complex inputs whose formulas are torch's complex ones: (x - mean) and sgn(x) carry the phase
    "var", "std", "var_mean", "std_mean", "norm", "linalg_vector_norm",
    "prod", "cumprod", "cumprod_", "logsumexp", "addcmul", "addcmul_",
    "flip", "roll", "repeat", "tril", "triu", "take", "trace", "diag", "kron", "masked_select",
    "index_put", "index_put_", "_index_put_impl_",
)
