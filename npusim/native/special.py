"""Kernels of the torch.special primitives (ndtr, log_ndtr, ndtri, erfcx, i0e, i1e, entr, xlog1py,
zeta): integral inputs compute in the default float dtype, 16-bit floats through float32, as torch."""
from __future__ import annotations

from ..kernels import special as K
from ..kernels.array_api import HALF_TYPES
from . import elementwise_binary as B
from . import common as C
from .elementwise_math import _float_family


def _no_half(fn, kernel):
    """torch's CPU kernels of erfcx, log_ndtr and ndtri take no 16-bit floats."""
    def run(a, out=None):
        if a.dtype in HALF_TYPES:
            C.not_implemented(kernel, a.dtype)
        return fn(a, out)
    return run


_UNARY = {"special_ndtr": K.ndtr, "special_log_ndtr": _no_half(K.log_ndtr, "log_ndtr_cpu"),
          "special_ndtri": _no_half(K.ndtri, "ndtri_cpu"), "special_erfcx": _no_half(K.erfcx, "erfcx_cpu"),
          "special_i0e": K.i0e, "special_i1e": K.i1e, "special_entr": K.entr}
_BINARY = {"special_xlog1py": B._family(B._float_compute(K.xlog1py)),
           "special_zeta": B._family(B._float_compute(K.zeta))}


def _build():
    t = {}
    for name, fn in _UNARY.items():
        t[name], t[f"{name}.out"], _ = _float_family(fn)
    for name, (f, o, _) in _BINARY.items():
        t[name] = t[f"{name}.other_scalar"] = t[f"{name}.self_scalar"] = f
        t[f"{name}.out"] = t[f"{name}.self_scalar_out"] = t[f"{name}.other_scalar_out"] = o
    return t


KERNELS = _build()
