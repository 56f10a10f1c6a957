"""``npusim.special``: torch.special's functions.

Aliases of existing ops call them; ndtr, log_ndtr, ndtri, erfcx, i0e, i1e, entr, xlog1py and zeta are
aten primitives with kernels of their own; multigammaln composes from lgamma. Gradients come from the
ops each function calls.
"""
from __future__ import annotations

import math

from ..core.dispatch.ops_namespace import aten as _aten
from ..core.tensor import Tensor as _Tensor

__all__ = [
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfcx",
    "erfinv",
    "exp2",
    "expit",
    "expm1",
    "gammaln",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "log1p",
    "log_ndtr",
    "log_softmax",
    "logit",
    "logsumexp",
    "multigammaln",
    "ndtr",
    "ndtri",
    "polygamma",
    "psi",
    "round",
    "sinc",
    "softmax",
    "xlog1py",
    "xlogy",
    "zeta",
]


def _npusim():
    import npusim  # the top-level functions; npusim imports this module last
    return npusim


def _check_input(x, fname, argname="input", pos=1):
    if not isinstance(x, _Tensor):
        raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be Tensor, not {type(x).__name__}")


def _alias(name, target):
    def fn(input, *, out=None):
        _check_input(input, name)
        return getattr(_npusim(), target)(input, out=out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{name}(input, *, out=None) -> Tensor\n\nAlias for :func:`npusim.{target}`."
    return fn


def _primitive(name):
    op = getattr(_aten, f"special_{name}")

    def fn(input, *, out=None):
        _check_input(input, name)
        return op.default(input) if out is None else op.out(input, out=out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{name}(input, *, out=None) -> Tensor"
    return fn


expit = _alias("expit", "sigmoid")
erf = _alias("erf", "erf")
erfc = _alias("erfc", "erfc")
erfinv = _alias("erfinv", "erfinv")
gammaln = _alias("gammaln", "lgamma")
digamma = _alias("digamma", "digamma")
psi = _alias("psi", "digamma")
i0 = _alias("i0", "i0")
sinc = _alias("sinc", "sinc")
log1p = _alias("log1p", "log1p")
expm1 = _alias("expm1", "expm1")
exp2 = _alias("exp2", "exp2")
ndtr = _primitive("ndtr")
log_ndtr = _primitive("log_ndtr")
ndtri = _primitive("ndtri")
erfcx = _primitive("erfcx")
i0e = _primitive("i0e")
i1e = _primitive("i1e")
entr = _primitive("entr")


def i1(input, *, out=None):
    _check_input(input, "i1")
    return _aten.special_i1.default(input) if out is None else _aten.special_i1.out(input, out=out)


def round(input, *, decimals=0, out=None):
    _check_input(input, "round")
    return _npusim().round(input, decimals=decimals, out=out)


def logit(input, eps=None, *, out=None):
    _check_input(input, "logit")
    return _npusim().logit(input, eps, out=out)


def polygamma(n, input, *, out=None):
    return _npusim().polygamma(n, input, out=out)


def logsumexp(input, dim, keepdim=False, *, out=None):
    _check_input(input, "logsumexp")
    return _npusim().logsumexp(input, dim, keepdim, out=out)


def softmax(input, dim, *, dtype=None):
    _check_input(input, "softmax")
    return _npusim().softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    _check_input(input, "log_softmax")
    return _npusim().log_softmax(input, dim, dtype=dtype)


def xlogy(input, other, *, out=None):
    return _npusim().xlogy(input, other, out=out)


def _binary(name, input, other, out):
    op = getattr(_aten, f"special_{name}")
    if isinstance(input, _Tensor):
        if isinstance(other, _Tensor):
            return op.default(input, other) if out is None else op.out(input, other, out=out)
        return op.other_scalar(input, other) if out is None else op.other_scalar_out(input, other, out=out)
    if isinstance(other, _Tensor):
        return op.self_scalar(input, other) if out is None else op.self_scalar_out(input, other, out=out)
    raise TypeError(f"special_{name}() received an invalid combination of arguments - got "
                    f"({type(input).__name__}, {type(other).__name__}), but expected at least one Tensor")


def xlog1py(input, other, *, out=None):
    """input * log1p(other), 0 where input == 0 unless other is NaN."""
    return _binary("xlog1py", input, other, out)


def zeta(input, other, *, out=None):
    """The Hurwitz zeta function: the sum over k >= 0 of (k + other) ** -input."""
    return _binary("zeta", input, other, out)


def multigammaln(input, p, *, out=None):
    """The log of the multivariate gamma function of dimension p:
    p (p - 1) / 4 log(pi) + the sum over j < p of lgamma(input - j / 2)."""
    _check_input(input, "multigammaln")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    n = _npusim()
    r = n.lgamma(input)
    for j in range(1, p):
        r = r + n.lgamma(input - j / 2.0)
    r = r + p * (p - 1) / 4.0 * math.log(math.pi)
    if out is None:
        return r
    out.resize_(r.shape)
    return out.copy_(r)
