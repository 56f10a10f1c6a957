"""``npusim.special``: torch.special's functions.

Aliases of existing ops call them; ndtr, log_ndtr, ndtri, erfcx, i0e, i1e, entr, xlog1py, zeta, the
Bessel and Airy functions and the orthogonal polynomials are aten primitives with kernels of their own;
gammainc and gammaincc call igamma and igammac; multigammaln and torch.mvlgamma are aten composites of
lgamma.
Gradients come from the ops each function calls (torch has none for the Bessel functions and polynomials).
"""
from __future__ import annotations

from ..core.dispatch.ops_namespace import aten as _aten
from ..core.tensor import Tensor as _Tensor

__all__ = [
    "airy_ai",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfcx",
    "erfinv",
    "exp2",
    "expit",
    "expm1",
    "gammainc",
    "gammaincc",
    "gammaln",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
    "log1p",
    "log_ndtr",
    "log_softmax",
    "logit",
    "logsumexp",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "multigammaln",
    "ndtr",
    "ndtri",
    "polygamma",
    "psi",
    "round",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
    "sinc",
    "softmax",
    "spherical_bessel_j0",
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


def mvlgamma(input, p, *, out=None):
    """The log of the multivariate gamma function of dimension p:
    p (p - 1) / 4 log(pi) + the sum over j < p of lgamma(input - j / 2)."""
    _check_input(input, "mvlgamma")
    return _aten.mvlgamma.default(input, p) if out is None else _aten.mvlgamma.out(input, p, out=out)


def mvlgamma_(self, p):
    """In-place mvlgamma: self must be floating (the result is)."""
    return _aten.mvlgamma_.default(self, p)


def multigammaln(input, p, *, out=None):
    """Alias for :func:`npusim.mvlgamma`."""
    _check_input(input, "multigammaln")
    op = _aten.special_multigammaln
    return op.default(input, p) if out is None else op.out(input, p, out=out)


# --- the incomplete gamma functions --------------------------------------------------------------------------

def _tensor_pair(name, op, input, other, out):
    for pos, (argname, x) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(x, _Tensor):
            raise TypeError(f"{name}(): argument '{argname}' (position {pos}) must be Tensor, not {type(x).__name__}")
    return op.default(input, other) if out is None else op.out(input, other, out=out)


def gammainc(input, other, *, out=None):
    """The regularized lower incomplete gamma function: igamma."""
    return _tensor_pair("special_gammainc", _aten.igamma, input, other, out)


def gammaincc(input, other, *, out=None):
    """The regularized upper incomplete gamma function: igammac."""
    return _tensor_pair("special_gammaincc", _aten.igammac, input, other, out)


# --- Bessel and Airy functions (torch names their argument ``input`` or ``x`` as its schema does) ------------

def _unary_op(name, input, out):
    op = getattr(_aten, f"special_{name}")
    return op.default(input) if out is None else op.out(input, out=out)


def _check(x, name, argname):
    _check_input(x, f"special_{name}", argname)


def airy_ai(x, *, out=None):
    """The Airy function Ai."""
    _check(x, "airy_ai", "x")
    return _unary_op("airy_ai", x, out)


def bessel_j0(input, *, out=None):
    """The Bessel function of the first kind of order 0."""
    _check(input, "bessel_j0", "input")
    return _unary_op("bessel_j0", input, out)


def bessel_j1(input, *, out=None):
    """The Bessel function of the first kind of order 1."""
    _check(input, "bessel_j1", "input")
    return _unary_op("bessel_j1", input, out)


def bessel_y0(input, *, out=None):
    """The Bessel function of the second kind of order 0."""
    _check(input, "bessel_y0", "input")
    return _unary_op("bessel_y0", input, out)


def bessel_y1(input, *, out=None):
    """The Bessel function of the second kind of order 1."""
    _check(input, "bessel_y1", "input")
    return _unary_op("bessel_y1", input, out)


def modified_bessel_i0(input, *, out=None):
    """The modified Bessel function of the first kind of order 0."""
    _check(input, "modified_bessel_i0", "input")
    return _unary_op("modified_bessel_i0", input, out)


def modified_bessel_i1(input, *, out=None):
    """The modified Bessel function of the first kind of order 1."""
    _check(input, "modified_bessel_i1", "input")
    return _unary_op("modified_bessel_i1", input, out)


def modified_bessel_k0(input, *, out=None):
    """The modified Bessel function of the second kind of order 0."""
    _check(input, "modified_bessel_k0", "input")
    return _unary_op("modified_bessel_k0", input, out)


def modified_bessel_k1(input, *, out=None):
    """The modified Bessel function of the second kind of order 1."""
    _check(input, "modified_bessel_k1", "input")
    return _unary_op("modified_bessel_k1", input, out)


def scaled_modified_bessel_k0(x, *, out=None):
    """exp(x) K0(x)."""
    _check(x, "scaled_modified_bessel_k0", "x")
    return _unary_op("scaled_modified_bessel_k0", x, out)


def scaled_modified_bessel_k1(x, *, out=None):
    """exp(x) K1(x)."""
    _check(x, "scaled_modified_bessel_k1", "x")
    return _unary_op("scaled_modified_bessel_k1", x, out)


def spherical_bessel_j0(x, *, out=None):
    """The spherical Bessel function of the first kind of order 0: sin(x) / x."""
    _check(x, "spherical_bessel_j0", "x")
    return _unary_op("spherical_bessel_j0", x, out)


# --- orthogonal polynomials: (x, n), either a number, at least one a Tensor -------------------------------

_POLYNOMIAL_SIGNATURES = ("(Tensor x, Tensor n, *, Tensor out = None)", "(Number x, Tensor n, *, Tensor out = None)",
                          "(Tensor x, Number n, *, Tensor out = None)")


def _polynomial(name, x, n, out):
    op = getattr(_aten, f"special_{name}")
    if isinstance(x, _Tensor):
        ov = "default" if isinstance(n, _Tensor) else "n_scalar"
    elif isinstance(n, _Tensor):
        ov = "x_scalar"
    else:
        got = f"{type(x).__name__}, {type(n).__name__}"
        lines = "".join(f" * {s}\n" for s in _POLYNOMIAL_SIGNATURES)
        raise TypeError(f"special_{name}() received an invalid combination of arguments - got ({got}), "
                        f"but expected one of:\n{lines}")
    if out is None:
        return getattr(op, ov)(x, n)
    return getattr(op, "out" if ov == "default" else f"{ov}_out")(x, n, out=out)


def chebyshev_polynomial_t(x, n, *, out=None):
    """The Chebyshev polynomial of the first kind T_n(x)."""
    return _polynomial("chebyshev_polynomial_t", x, n, out)


def chebyshev_polynomial_u(x, n, *, out=None):
    """The Chebyshev polynomial of the second kind U_n(x)."""
    return _polynomial("chebyshev_polynomial_u", x, n, out)


def chebyshev_polynomial_v(x, n, *, out=None):
    """The Chebyshev polynomial of the third kind V_n(x)."""
    return _polynomial("chebyshev_polynomial_v", x, n, out)


def chebyshev_polynomial_w(x, n, *, out=None):
    """The Chebyshev polynomial of the fourth kind W_n(x)."""
    return _polynomial("chebyshev_polynomial_w", x, n, out)


def shifted_chebyshev_polynomial_t(x, n, *, out=None):
    """T_n(2x - 1)."""
    return _polynomial("shifted_chebyshev_polynomial_t", x, n, out)


def shifted_chebyshev_polynomial_u(x, n, *, out=None):
    """U_n(2x - 1)."""
    return _polynomial("shifted_chebyshev_polynomial_u", x, n, out)


def shifted_chebyshev_polynomial_v(x, n, *, out=None):
    """V_n(2x - 1)."""
    return _polynomial("shifted_chebyshev_polynomial_v", x, n, out)


def shifted_chebyshev_polynomial_w(x, n, *, out=None):
    """W_n(2x - 1)."""
    return _polynomial("shifted_chebyshev_polynomial_w", x, n, out)


def hermite_polynomial_h(x, n, *, out=None):
    """The physicists' Hermite polynomial H_n(x)."""
    return _polynomial("hermite_polynomial_h", x, n, out)


def hermite_polynomial_he(x, n, *, out=None):
    """The probabilists' Hermite polynomial He_n(x)."""
    return _polynomial("hermite_polynomial_he", x, n, out)


def laguerre_polynomial_l(x, n, *, out=None):
    """The Laguerre polynomial L_n(x)."""
    return _polynomial("laguerre_polynomial_l", x, n, out)


def legendre_polynomial_p(x, n, *, out=None):
    """The Legendre polynomial P_n(x)."""
    return _polynomial("legendre_polynomial_p", x, n, out)
