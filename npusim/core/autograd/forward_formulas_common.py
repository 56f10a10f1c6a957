"""Direct forward-mode formulas of the common ops (torch's derivatives.yaml ``result:`` entries).

Each ``f(a, t, out)`` reads the op's arguments by name on ``a``, the tangents of the differentiable inputs that
carry one in ``t`` (a name absent from ``t`` has a zero tangent) and the op's result ``out``, and returns the
output's tangent (one per output for several). They are cheaper than the generic rule (the JVP of the reverse
formula, ``forward_mode._generic_tangents``), which covers every other op with a derivative formula. The
tangent ops run below forward AD but under the caller's grad mode, so a tangent stays differentiable.
"""
from __future__ import annotations

from ..dispatch.ops_namespace import aten
from .forward_mode import forward_formula


def _plus(*terms):
    """The sum of the terms that are not None (None when all are)."""
    r = None
    for x in terms:
        if x is not None:
            r = x if r is None else aten.add.Tensor(r, x)
    return r


def _scaled(x, c):
    return x if x is None or c == 1 else aten.mul.Scalar(x, c)


# --- elementwise arithmetic ---------------------------------------------------------------------------------------

@forward_formula("add.Tensor", "add.Scalar")
def add_jvp(a, t, out):
    return _plus(t.get("self"), _scaled(t.get("other"), a.alpha))


@forward_formula("sub.Tensor", "sub.Scalar")
def sub_jvp(a, t, out):
    return _plus(t.get("self"), _scaled(t.get("other"), -a.alpha))


@forward_formula("rsub.Tensor")
def rsub_jvp(a, t, out):
    return _plus(t.get("other"), _scaled(t.get("self"), -a.alpha))


@forward_formula("mul.Tensor", "mul.Scalar")
def mul_jvp(a, t, out):
    ts, to = t.get("self"), t.get("other")
    return _plus(None if ts is None else aten.mul.Tensor(ts, a.other),
                 None if to is None else aten.mul.Tensor(a.self, to))


@forward_formula("div.Tensor", "div.Scalar")
def div_jvp(a, t, out):
    ts, to = t.get("self"), t.get("other")
    return _plus(None if ts is None else aten.div.Tensor(ts, a.other),
                 None if to is None else aten.neg.default(aten.div.Tensor(aten.mul.Tensor(to, out), a.other)))


@forward_formula("neg")
def neg_jvp(a, t, out):
    return aten.neg.default(t["self"])


@forward_formula("pow.Tensor_Scalar")
def pow_jvp(a, t, out):
    e = a.exponent
    if e == 0:
        return aten.zeros_like.default(out)
    return aten.mul.Tensor(t["self"], aten.mul.Scalar(aten.pow.Tensor_Scalar(a.self, e - 1), e))


# --- elementwise math and activations -----------------------------------------------------------------------------

@forward_formula("exp")
def exp_jvp(a, t, out):
    return aten.mul.Tensor(t["self"], out)


@forward_formula("log")
def log_jvp(a, t, out):
    return aten.div.Tensor(t["self"], a.self)


@forward_formula("sin")
def sin_jvp(a, t, out):
    return aten.mul.Tensor(t["self"], aten.cos.default(a.self))


@forward_formula("cos")
def cos_jvp(a, t, out):
    return aten.neg.default(aten.mul.Tensor(t["self"], aten.sin.default(a.self)))


@forward_formula("sqrt")
def sqrt_jvp(a, t, out):
    return aten.div.Tensor(t["self"], aten.mul.Scalar(out, 2))


@forward_formula("tanh")
def tanh_jvp(a, t, out):
    return aten.mul.Tensor(t["self"], aten.rsub.Scalar(aten.mul.Tensor(out, out), 1))


@forward_formula("sigmoid")
def sigmoid_jvp(a, t, out):
    return aten.mul.Tensor(t["self"], aten.mul.Tensor(out, aten.rsub.Scalar(out, 1)))


@forward_formula("relu")
def relu_jvp(a, t, out):
    # torch's threshold_backward(self_t, result, 0): zero where the result is not positive
    return aten.mul.Tensor(t["self"], aten.gt.Scalar(out, 0))


@forward_formula("gelu")
def gelu_jvp(a, t, out):
    if a.approximate != "none":
        from .forward_mode import NO_DIRECT_FORMULA
        return NO_DIRECT_FORMULA
    x = a.self
    cdf = aten.mul.Scalar(aten.add.Scalar(aten.erf.default(aten.mul.Scalar(x, 0.7071067811865476)), 1), 0.5)
    pdf = aten.mul.Scalar(aten.exp.default(aten.mul.Scalar(aten.mul.Tensor(x, x), -0.5)), 0.3989422804014327)
    return aten.mul.Tensor(t["self"], aten.add.Tensor(cdf, aten.mul.Tensor(x, pdf)))


@forward_formula("_softmax", "softmax.int", "_safe_softmax")
def softmax_jvp(a, t, out):
    ts = t["self"]
    if ts.dtype != out.dtype:
        ts = aten._to_copy.default(ts, dtype=out.dtype)
    inner = aten.sum.dim_IntList(aten.mul.Tensor(out, ts), [a.dim], True)
    return aten.mul.Tensor(out, aten.sub.Tensor(ts, inner))


@forward_formula("_log_softmax", "log_softmax.int")
def log_softmax_jvp(a, t, out):
    ts = t["self"]
    if ts.dtype != out.dtype:
        ts = aten._to_copy.default(ts, dtype=out.dtype)
    return aten.sub.Tensor(ts, aten.sum.dim_IntList(aten.mul.Tensor(aten.exp.default(out), ts), [a.dim], True))


# --- products, reductions, joins ----------------------------------------------------------------------------------

def _bilinear(op, first, second, t):
    """The tangent of a product that is linear in each of its two arguments."""
    tf, ts = t.get(first[0]), t.get(second[0])
    return _plus(None if tf is None else op(tf, second[1]), None if ts is None else op(first[1], ts))


@forward_formula("mm")
def mm_jvp(a, t, out):
    return _bilinear(aten.mm.default, ("self", a.self), ("mat2", a.mat2), t)


@forward_formula("bmm")
def bmm_jvp(a, t, out):
    return _bilinear(aten.bmm.default, ("self", a.self), ("mat2", a.mat2), t)


@forward_formula("matmul")
def matmul_jvp(a, t, out):
    return _bilinear(aten.matmul.default, ("self", a.self), ("other", a.other), t)


@forward_formula("addmm")
def addmm_jvp(a, t, out):
    prod = _bilinear(aten.mm.default, ("mat1", a.mat1), ("mat2", a.mat2), t)
    return _plus(_scaled(t.get("self"), a.beta), _scaled(prod, a.alpha))


@forward_formula("sum")
def sum_jvp(a, t, out):
    return aten.sum.default(t["self"], dtype=out.dtype)


@forward_formula("sum.dim_IntList")
def sum_dim_jvp(a, t, out):
    return aten.sum.dim_IntList(t["self"], a.dim, a.keepdim, dtype=out.dtype)


@forward_formula("mean")
def mean_jvp(a, t, out):
    return aten.mean.default(t["self"], dtype=out.dtype)


@forward_formula("mean.dim")
def mean_dim_jvp(a, t, out):
    return aten.mean.dim(t["self"], a.dim, a.keepdim, dtype=out.dtype)


def _tangents_or_zeros(tensors, tangents):
    return [aten.zeros_like.default(x) if tx is None else tx for x, tx in zip(tensors, tangents)]


@forward_formula("cat")
def cat_jvp(a, t, out):
    return aten.cat.default(_tangents_or_zeros(a.tensors, t["tensors"]), a.dim)


@forward_formula("stack")
def stack_jvp(a, t, out):
    return aten.stack.default(_tangents_or_zeros(a.tensors, t["tensors"]), a.dim)


@forward_formula("convolution")
def convolution_jvp(a, t, out):
    geometry = (a.stride, a.padding, a.dilation, a.transposed, a.output_padding, a.groups)
    ti, tw, tb = t.get("input"), t.get("weight"), t.get("bias")
    r = _plus(None if ti is None else aten.convolution.default(ti, a.weight, None, *geometry),
              None if tw is None else aten.convolution.default(a.input, tw, None, *geometry))
    if tb is not None:   # the bias is added along the channel dimension
        tb = aten.view.default(tb, [1, -1] + [1] * (out.dim() - 2))
        r = aten.add.Tensor(aten.zeros_like.default(out), tb) if r is None else aten.add.Tensor(r, tb)
    return r
