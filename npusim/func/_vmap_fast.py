"""vmap's fast path: a function that is provably elementwise runs once on the whole batch.

Only npusim's own elementwise functions (``npusim.sin``, ``nn.functional.relu``, ...) called with the one
batched tensor and default arguments, and the elementwise activation modules of exactly those types with no
hooks and not in place, qualify: for them each output element depends on the matching input element alone,
so applying them to the batch and moving the batch dimension to ``out_dims`` gives what the per-sample loop
gives. Anything else (a lambda, a subclass, extra arguments) takes the loop.
"""
from __future__ import annotations

import npusim
from ..core.tensor import Tensor
from ..nn import functional as _nnf
from ..nn.modules import module as _module

_FUNCTIONS = ("abs absolute neg negative exp exp2 expm1 log log2 log10 log1p sin cos tan asin acos atan arcsin "
              "arccos arctan sinh cosh tanh asinh acosh atanh sigmoid sqrt rsqrt square reciprocal sign sgn floor "
              "ceil round trunc fix frac erf erfc erfinv relu logical_not bitwise_not isnan isinf isfinite isposinf "
              "isneginf signbit deg2rad rad2deg lgamma digamma i0 sinc nan_to_num").split()
_NN_FUNCTIONS = ("relu relu6 gelu silu sigmoid tanh softplus elu selu celu leaky_relu hardtanh hardsigmoid hardswish "
                 "mish logsigmoid softsign tanhshrink").split()
_MODULES = ("ReLU ReLU6 GELU SiLU Sigmoid Tanh Softplus ELU SELU CELU LeakyReLU Hardtanh Hardsigmoid Hardswish Mish "
            "LogSigmoid Softsign Tanhshrink").split()

ELEMENTWISE_FUNCTIONS = frozenset([getattr(npusim, n) for n in _FUNCTIONS] + [getattr(_nnf, n) for n in _NN_FUNCTIONS])
ELEMENTWISE_MODULES = frozenset(getattr(npusim.nn, n) for n in _MODULES)

_GLOBAL_HOOKS = ("_global_forward_pre_hooks", "_global_forward_hooks", "_global_backward_pre_hooks",
                 "_global_backward_hooks")
_MODULE_HOOKS = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")


def _qualifies(func) -> bool:
    try:
        if func in ELEMENTWISE_FUNCTIONS:
            return True
    except TypeError:          # an unhashable callable
        return False
    if type(func) not in ELEMENTWISE_MODULES or getattr(func, "inplace", False):
        return False
    if any(getattr(_module, name, None) for name in _GLOBAL_HOOKS):
        return False
    return not any(getattr(func, name, None) for name in _MODULE_HOOKS)


def try_whole_batch(func, args, kwargs, in_dims, out_dims):
    """``func`` applied to the whole batch when that provably equals the per-sample loop, else None."""
    if kwargs or len(args) != 1 or not isinstance(args[0], Tensor):
        return None
    in_dim = in_dims[0] if isinstance(in_dims, tuple) and len(in_dims) == 1 else in_dims
    out_dim = out_dims[0] if isinstance(out_dims, tuple) and len(out_dims) == 1 else out_dims
    x = args[0]
    if not (isinstance(in_dim, int) and isinstance(out_dim, int)) or isinstance(in_dim, bool) \
            or isinstance(out_dim, bool) or x.dim() == 0 or not _qualifies(func):
        return None
    rank = x.dim()
    if not (-rank <= in_dim < rank and -rank <= out_dim < rank):
        return None            # the loop raises torch's errors
    return func(x).movedim(in_dim % rank, out_dim % rank)
