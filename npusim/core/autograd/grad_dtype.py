"""A leaf's ``grad_dtype``: the dtype its gradient is kept in (torch 2.13).

By default it is the leaf's own dtype; ``t.grad_dtype = d`` makes the engine cast incoming gradients to ``d``, and
``None`` keeps each gradient in whatever dtype it comes. It is stored on the tensor (``_grad_dtype``, absent while
it is the default) and read only where a leaf's gradient is made: the engine's accumulation, a custom Function's
gradient for a leaf input, and ``t.grad = ...``.
"""
from __future__ import annotations

from ..c10.dtype import SCALAR_TYPE_NAME
from ..dispatch.ops_namespace import aten


class _SameAsDtype:
    def __repr__(self):
        return "<the tensor's dtype>"


SAME = _SameAsDtype()
_CPP_NAME = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short int", "int32": "int",
             "int64": "long int", "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
             "float64": "double", "complex32": "c10::complex<c10::Half>", "complex64": "c10::complex<float>",
             "complex128": "c10::complex<double>"}


def effective(t):
    """The dtype ``t``'s gradient is kept in, or None for any."""
    gd = getattr(t, "_grad_dtype", SAME)
    return t.dtype if gd is SAME else gd


def cast_incoming(leaf, g):
    """``g`` in the dtype ``leaf``'s gradient is kept in."""
    target = effective(leaf)
    if target is not None and g.dtype is not target:
        return aten._to_copy.default(g, dtype=target)
    return g


def edge_target(node, inputs, i, dtype):
    """The dtype a custom Function's gradient for its ``i``-th argument goes to: a leaf's grad dtype when that
    argument is a leaf, else ``dtype`` (the argument's own)."""
    from .node import AccumulateGrad
    k = sum(m is not None for m in inputs[:i])
    fn = node._next[k][0] if k < len(node._next) else None
    if isinstance(fn, AccumulateGrad):
        leaf = fn._variable()
        if leaf is not None:
            return effective(leaf)
    return dtype


def check_assigned(t, value) -> None:
    """``t.grad = value`` must match ``t``'s grad dtype (any dtype when it is None)."""
    target = effective(t)
    if target is not None and value.dtype is not target:
        raise RuntimeError(
            f"attempting to assign a gradient with dtype '{_CPP_NAME.get(value.dtype.name, value.dtype.name)}' to a "
            f"tensor with grad_dtype '{SCALAR_TYPE_NAME.get(target, target.name)}'. The gradient must match the "
            f"tensor's grad_dtype (defaults to the tensor's dtype). You can set the tensor's grad_dtype attribute "
            f"with a specific dtype, or None to allow any dtype. Set grad_dtype with caution. Diverging the dtypes "
            f"of a tensor and its gradient may break downstream systems that assume they match.")
