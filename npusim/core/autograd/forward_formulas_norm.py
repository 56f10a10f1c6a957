"""Direct forward formula of layer normalization (torch's layer_norm_jvp).

With x_hat = (x - mean) * rstd over the normalized dims and dx = tangent of x:
  d x_hat = rstd * (dx - mean(dx)) - x_hat * rstd * mean(x_hat * (dx - mean(dx))),
  d out = d x_hat * weight + x_hat * d weight + d bias.
"""
from __future__ import annotations

from ..dispatch.ops_namespace import aten
from .forward_mode import forward_formula

_mul, _sub, _add = aten.mul.Tensor, aten.sub.Tensor, aten.add.Tensor


@forward_formula("native_layer_norm")
def native_layer_norm_jvp(a, t, out):
    y, mean, rstd = out
    x = a.input
    dims = list(range(x.dim() - len(a.normalized_shape), x.dim()))
    stat_shape = list(x.shape[:x.dim() - len(dims)]) + [1] * len(dims)
    mean_k = aten.view.default(mean, stat_shape)
    rstd_k = aten.view.default(rstd, stat_shape)
    x_hat = _mul(_sub(x, mean_k), rstd_k)
    tx, tw, tb = t.get("input"), t.get("weight"), t.get("bias")
    d_out = None
    if tx is not None:
        tx = tx if tx.dtype == x_hat.dtype else aten._to_copy.default(tx, dtype=x_hat.dtype)
        centred = _sub(tx, aten.mean.dim(tx, dims, True))
        spread = aten.mean.dim(_mul(x_hat, centred), dims, True)
        d_x_hat = _sub(_mul(rstd_k, centred), _mul(_mul(x_hat, rstd_k), spread))
        d_out = _mul(d_x_hat, a.weight) if a.weight is not None else d_x_hat
    if tw is not None:
        term = _mul(x_hat, tw)
        d_out = term if d_out is None else _add(d_out, term)
    if tb is not None:
        d_out = aten.add.Tensor(aten.zeros_like.default(y), tb) if d_out is None else _add(d_out, tb)
    return d_out, None, None   # mean and rstd are outputs without a derivative, in torch as here
