"""vmap batching rules of the matrix products, embedding and convolution.

A product of batches is one batched matmul: 1-D samples become rows / columns, the batch dim goes before every
broadcast dim, and a batch times an unbatched matrix is a single matrix product over all rows of the batch. The
``add*`` products are written as the product plus the scaled ``self`` on the BatchedTensors, so each part takes
its own rule. Convolution folds the batch into the conv's own batch dim.
"""
from __future__ import annotations

from ..core.dispatch.ops_namespace import aten
from .batched_tensor import BatchedTensor, wrap
from .batching_registry import UsePerSampleLoop, register, unwrap

_unsqueeze = aten.unsqueeze.default
_squeeze = aten.squeeze.dim
_reshape = aten.reshape.default
_matmul = aten.matmul.default
_mm = aten.mm.default


def batched_matmul(a, b, level):
    """The batch of ``a @ b`` (samples' matmul semantics), batch dim first."""
    av, a_batched = unwrap(a, level)
    bv, b_batched = unwrap(b, level)
    ra, rb = a._a.ndim, b._a.ndim
    if ra == 0 or rb == 0 or not (a_batched or b_batched):
        raise UsePerSampleLoop()
    if ra == 1 and rb == 2 and a_batched and not b_batched:
        return _mm(av, bv)                 # a row per sample times one matrix: the batch is the matrix of rows
    if ra == 2 and rb == 1 and b_batched and not a_batched:
        return _mm(bv, aten.t.default(av))
    row, col = ra == 1, rb == 1
    if row:
        av, ra = _unsqueeze(av, -2), 2
    if col:
        bv, rb = _unsqueeze(bv, -1), 2
    if a_batched and not b_batched and rb == 2:
        # every row of the batch times one matrix: one matrix product
        k = av.shape[-1]
        out = _mm(_reshape(av, [-1, k]), bv)
        out = _reshape(out, list(av.shape[:-1]) + [bv.shape[-1]])
    else:
        top = max(ra, rb)
        if a_batched:
            for _ in range(top - ra):
                av = _unsqueeze(av, 1)
        if b_batched:
            for _ in range(top - rb):
                bv = _unsqueeze(bv, 1)
        if av.shape[-1] == 1 and av.dtype == bv.dtype:
            out = aten.mul.Tensor(av, bv)     # a contraction over one element: outer products, broadcast
        else:
            out = _matmul(av, bv)
    if col:
        out = _squeeze(out, -1)
    if row:
        out = _squeeze(out, -1 if col else -2)
    return out


def _ranks(*pairs):
    for t, want in pairs:
        if t._a.ndim != want:
            raise UsePerSampleLoop()        # the op's own error, from one sample


def matmul(op, level, args, kwargs):
    return wrap(batched_matmul(args[0], args[1], level), level)


def mm(op, level, args, kwargs):
    _ranks((args[0], 2), (args[1], 2))
    return matmul(op, level, args, kwargs)


def bmm(op, level, args, kwargs):
    _ranks((args[0], 3), (args[1], 3))
    return matmul(op, level, args, kwargs)


def mv(op, level, args, kwargs):
    _ranks((args[0], 2), (args[1], 1))
    return matmul(op, level, args, kwargs)


def dot(op, level, args, kwargs):
    _ranks((args[0], 1), (args[1], 1))
    if args[0].dtype != args[1].dtype:
        raise UsePerSampleLoop()
    return matmul(op, level, args, kwargs)


def outer(op, level, args, kwargs):
    _ranks((args[0], 1), (args[1], 1))
    return aten.mul.Tensor(_unsqueeze(args[0], 1), _unsqueeze(args[1], 0))


def _scaled_sum(self, product, beta, alpha):
    """beta * self + alpha * product, beta 0 ignoring self (NaN included), as the add* products do."""
    if beta == 0:
        return aten.mul.Scalar(product, alpha) if alpha != 1 else aten.clone.default(product)
    base = self if beta == 1 else aten.mul.Scalar(self, beta)
    return aten.add.Tensor(base, product, alpha=alpha)


def add_product(product_op, ranks):
    def rule(op, level, args, kwargs):
        self, m1, m2 = args[:3]
        _ranks((m1, ranks[0]), (m2, ranks[1]))
        if isinstance(self, BatchedTensor) and self._level == level and self._a.ndim > len(ranks) or \
                op._schema.is_inplace:
            raise UsePerSampleLoop()
        beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
        product = product_op(m1, m2)
        return _scaled_sum(self, product, beta, alpha)
    return rule


def embedding(op, level, args, kwargs):
    weight, indices = args[0], args[1]
    if isinstance(weight, BatchedTensor) or not (indices.__class__ is BatchedTensor and indices._level == level):
        raise UsePerSampleLoop()
    return wrap(op(weight, indices._value, *args[2:], **kwargs), level)


def convolution(op, level, args, kwargs):
    x = args[0]
    if not (x.__class__ is BatchedTensor and x._level == level) or kwargs or \
            any(isinstance(v, BatchedTensor) for v in args[1:]):
        raise UsePerSampleLoop()
    value = x._value
    batch, n = value.shape[0], value.shape[1]
    out = op(_reshape(value, [batch * n] + list(value.shape[2:])), *args[1:])
    return wrap(_reshape(out, [batch, n] + list(out.shape[1:])), level)


def matrix_function(op, level, args, kwargs):
    """Ops on a (..., m, n) matrix (decompositions, inverse, det): the batch is one more leading dim."""
    self, is_batched = unwrap(args[0], level)
    if not is_batched or args[0]._a.ndim < 2 or any(isinstance(v, BatchedTensor) for v in
                                                   list(args[1:]) + list(kwargs.values())):
        raise UsePerSampleLoop()
    try:
        out = op(self, *args[1:], **kwargs)
    except RuntimeError:
        raise UsePerSampleLoop() from None       # the error worded for one sample (no batch element number)
    return type(out)(wrap(o, level) for o in out) if isinstance(out, tuple) else wrap(out, level)


def repeat(op, level, args, kwargs):
    self, is_batched = unwrap(args[0], level)
    repeats = list(args[1] if len(args) > 1 else kwargs.get("repeats", ()))
    if not is_batched or len(repeats) < args[0]._a.ndim:
        raise UsePerSampleLoop()
    for _ in range(len(repeats) - args[0]._a.ndim):
        self = _unsqueeze(self, 1)
    return wrap(op(self, [1] + repeats), level)


def convolution_backward(op, level, args, kwargs):
    """Per-sample convolution gradients: the input's with the batch folded into N; the weight's as one grouped
    convolution's (each sample a group of its own: torch's trick); the bias's as sums over N and space."""
    grad, x, weight, bias_sizes, stride, padding, dilation, transposed, output_padding, groups, mask = args
    if kwargs or transposed or isinstance(weight, BatchedTensor) or not (
            grad.__class__ is BatchedTensor and grad._level == level and x.__class__ is BatchedTensor
            and x._level == level) or grad._a.ndim != x._a.ndim:
        raise UsePerSampleLoop()
    g, xv = grad._value, x._value
    batch, n = xv.shape[0], xv.shape[1]
    params = (stride, padding, dilation, transposed, output_padding)
    gi = gw = gb = None
    if mask[0]:
        gi = op(_reshape(g, [batch * n] + list(g.shape[2:])), _reshape(xv, [batch * n] + list(xv.shape[2:])),
                weight, None, *params, groups, [True, False, False])[0]
        gi = wrap(_reshape(gi, list(xv.shape)), level)
    if mask[1]:
        # (B, N, C, *space) -> (N, B*C, *space): sample b's channels form group b (times the conv's own groups)
        gg = _reshape(aten.transpose.int(g, 0, 1), [n, batch * g.shape[2]] + list(g.shape[3:]))
        xx = _reshape(aten.transpose.int(xv, 0, 1), [n, batch * xv.shape[2]] + list(xv.shape[3:]))
        ww = aten.expand.default(_unsqueeze(weight, 0), [batch] + list(weight.shape))
        ww = _reshape(ww, [batch * weight.shape[0]] + list(weight.shape[1:]))
        gw = op(gg, xx, ww, None, *params, groups * batch, [False, True, False])[1]
        gw = wrap(_reshape(gw, [batch] + list(weight.shape)), level)
    if mask[2]:
        gb = wrap(aten.sum.dim_IntList(g, [1] + list(range(3, g.dim()))), level)
    return gi, gw, gb


register("matmul", matmul)
register("mm", mm)
register("bmm", bmm)
register("mv", mv)
register("dot", dot)
register("outer ger", outer)
register("addmm addmm_", add_product(aten.mm.default, (2, 2)))
register("addmv addmv_", add_product(aten.mv.default, (2, 1)))
register("baddbmm baddbmm_", add_product(aten.bmm.default, (3, 3)))
register("embedding", embedding)
register("convolution", convolution)
register("convolution_backward", convolution_backward)
register("repeat", repeat)
register("linalg_det linalg_slogdet linalg_inv_ex linalg_cholesky_ex linalg_qr _linalg_eigh _linalg_svd "
         "linalg_lu_factor_ex linalg_matrix_exp linalg_lu linalg_eig _linalg_eigvals", matrix_function)
