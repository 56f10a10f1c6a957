"""In-place shape changes (transpose_, t_, squeeze_, unsqueeze_, swapaxes_ / swapdims_) and the
unsafe splits.

An in-place view op gives the tensor the geometry of the matching view of
itself: the tensor keeps its memory, takes the view's autograd history (a view
stays a view of the same base) and its version counter moves, as in torch.
The unsafe splits are the split's pieces without view tracking, each with a
version counter of its own.
"""
from __future__ import annotations

from ..core.autograd import grad_mode
from ..core.autograd.derivatives import check_inplace
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import make_alias
from . import views as V


def _adopt(self, view):
    self._a = view._a
    am = view._am
    if self._base is not None:
        self._am = am
    elif am is not None and am.grad_fn is not None:
        self._am.grad_fn = am.grad_fn
        self._am.output_nr = 0
    self._bump_version()
    return self


def _inplace_view(make_view):
    def kernel(self, *args):
        if grad_mode.is_grad_enabled():
            check_inplace(self)
        return _adopt(self, make_view(self, *args))
    return kernel


def _t(self):
    if self.dim() > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
    return aten.t.default(self)


transpose_ = _inplace_view(aten.transpose.int)
t_ = _inplace_view(_t)
squeeze_ = _inplace_view(aten.squeeze.default)
squeeze_dim_ = _inplace_view(aten.squeeze.dim)
squeeze_dims_ = _inplace_view(aten.squeeze.dims)
unsqueeze_ = _inplace_view(aten.unsqueeze.default)


def _unaliased(pieces, self):
    out = []
    for p in pieces:
        t = make_alias(p._a, self)
        t._vc = None   # a counter of its own
        out.append(t)
    return out


def unsafe_split(self, split_size, dim=0):
    return _unaliased(V.split(self, split_size, dim), self)


def unsafe_chunk(self, chunks, dim=0):
    return _unaliased(V.chunk(self, chunks, dim), self)


COMPOSITE_IMPLICIT = {
    "transpose_": transpose_, "swapaxes_": transpose_, "swapdims_": transpose_, "t_": t_,
    "squeeze_": squeeze_, "squeeze_.dim": squeeze_dim_, "squeeze_.dims": squeeze_dims_, "unsqueeze_": unsqueeze_,
}
KERNELS = {"unsafe_split.Tensor": unsafe_split, "unsafe_chunk": unsafe_chunk}
