"""torch.special's Bessel and Airy functions, orthogonal polynomials and incomplete gamma functions, and
torch.mvlgamma: torch-free checks against closed forms, identities and numpy.polynomial on cpu and npu,
then ``oracle`` comparisons with torch over grids that include the edges (0, negatives, large, inf, NaN)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import host
from numpy.polynomial import chebyshev as npcheb, hermite as npherm, hermite_e as npherme
from numpy.polynomial import laguerre as nplag, legendre as npleg

import npusim
from npusim import special as S

BESSEL = ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
          "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
          "scaled_modified_bessel_k1", "spherical_bessel_j0"]
POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
               "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
               "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]
EDGE = [0.0, -0.0, math.inf, -math.inf, math.nan, 1e-7, -1e-7, 1e-300, 1e300, -1e300]


def _t(values, device, dtype=npusim.float64):
    return npusim.tensor(values, dtype=dtype, device=device)


def _f(name, *args):
    return host(getattr(S, name)(*args)).astype(np.float64)


def _close(got, ref, rtol, atol=0.0):
    """NaN where ref is NaN, the same infinities, and the finite values within tolerance."""
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    inf = np.isinf(ref)
    np.testing.assert_array_equal(got[inf], ref[inf])
    fin = ~np.isnan(ref) & ~inf
    np.testing.assert_allclose(got[fin], ref[fin], rtol=rtol, atol=atol)


# --- Bessel and Airy functions without torch ---------------------------------------------------------------

def test_bessel_values_at_zero_and_known_roots(device):
    z = _t([0.0], device)
    assert _f("bessel_j0", z)[0] == 1.0 and _f("bessel_j1", z)[0] == 0.0
    assert _f("bessel_y0", z)[0] == -math.inf and _f("bessel_y1", z)[0] == -math.inf
    assert _f("modified_bessel_i0", z)[0] == 1.0 and _f("modified_bessel_i1", z)[0] == 0.0
    assert _f("modified_bessel_k0", z)[0] == math.inf and _f("scaled_modified_bessel_k1", z)[0] == math.inf
    assert _f("spherical_bessel_j0", z)[0] == 1.0
    # the first zeros of J0, J1, Y0, Y1 (DLMF table 10.21.1): the value vanishes to rounding of its slope
    assert abs(_f("bessel_j0", _t([2.404825557695773], device))[0]) < 1e-15
    assert abs(_f("bessel_j1", _t([3.8317059702075125], device))[0]) < 1e-15
    assert abs(_f("bessel_y0", _t([0.8935769662791675], device))[0]) < 1e-15
    # Cephes' rational form of Y1 below 5 is good to ~1e-14 absolute (torch's value here is 1.5e-14 too)
    assert abs(_f("bessel_y1", _t([2.197141326031017], device))[0]) < 3e-14


def test_bessel_wronskians(device):
    x = np.linspace(0.1, 40, 400)
    t = _t(x, device)
    j0, j1, y0, y1 = (_f(n, t) for n in ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1"))
    # J1 Y0 - J0 Y1 = 2 / (pi x) (DLMF 10.5.2). torch's expansions, which npusim follows to the last digit, are
    # exact to rounding below 2 but only good to ~1e-7 relative near 5, where the rational and the asymptotic
    # forms meet, and to ~1e-9 past 8 (measured against mpmath: J0(5.1) is off by 2e-6 relative in torch too)
    w = (j1 * y0 - j0 * y1) * (math.pi * x) / 2
    for lo, hi, tol in ((0, 2, 1e-13), (2, 8, 3e-7), (8, 41, 2e-9)):
        part = (x >= lo) & (x < hi)
        np.testing.assert_allclose(w[part], 1.0, rtol=tol)
    xi = np.linspace(0.05, 600, 500)
    ti = _t(xi, device)
    i0, i1, k0, k1 = (_f(n, ti) for n in ("modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
                                          "modified_bessel_k1"))
    # I0 K1 + I1 K0 = 1 / x (DLMF 10.28.2): positive terms, no cancellation
    np.testing.assert_allclose(i0 * k1 + i1 * k0, 1 / xi, rtol=1e-14)


def test_bessel_symmetries_and_scaling(device):
    x = np.linspace(0.01, 50, 300)
    t, tn = _t(x, device), _t(-x, device)
    np.testing.assert_array_equal(_f("bessel_j0", tn), _f("bessel_j0", t))
    np.testing.assert_array_equal(_f("bessel_j1", tn), -_f("bessel_j1", t))
    np.testing.assert_array_equal(_f("modified_bessel_i1", tn), -_f("modified_bessel_i1", t))
    for n in ("bessel_y0", "bessel_y1", "modified_bessel_k0", "scaled_modified_bessel_k1"):
        assert np.isnan(_f(n, tn)).all()
    # the scaled K is exp(x) K, up to the rounding of both sides
    np.testing.assert_allclose(_f("scaled_modified_bessel_k0", t), np.exp(x) * _f("modified_bessel_k0", t),
                               rtol=1e-14)
    np.testing.assert_allclose(_f("scaled_modified_bessel_k1", t), np.exp(x) * _f("modified_bessel_k1", t),
                               rtol=1e-14)
    # I0, I1 are torch.i0 and special.i1 (the same Cephes expansions)
    np.testing.assert_allclose(_f("modified_bessel_i0", t), host(npusim.i0(t)), rtol=1e-15)
    np.testing.assert_allclose(_f("modified_bessel_i1", t), host(S.i1(t)), rtol=1e-15)
    xs = np.concatenate([x, [1e-8, 0.3, -0.3, -7.5]])
    np.testing.assert_allclose(_f("spherical_bessel_j0", _t(xs, device)), np.sin(xs) / xs, rtol=1e-15)
    assert _f("spherical_bessel_j0", _t([math.inf, -math.inf], device)).tolist() == [0.0, 0.0]


def test_airy_known_values_and_branch_seams(device):
    # Ai(0) = 3^(-2/3) / Gamma(2/3); Ai(1), Ai(-1) from DLMF table 9.9.1
    ai0 = 3 ** (-2 / 3) / math.gamma(2 / 3)
    got = _f("airy_ai", _t([0.0, 1.0, -1.0], device))
    np.testing.assert_allclose(got, [ai0, 0.1352924163128814, 0.5355608832923521], rtol=1e-14)
    # the power series, the two asymptotic forms: continuous across the seams at -2.09, 2.09 and 8.32
    # (torch's oscillating form is good to only ~2e-5 relative at -2.09, npusim's the same to the last digit)
    for seam, tol in ((-2.09, 3e-5), (2.09, 1e-13), (8.3203353, 1e-13)):
        below, above = _f("airy_ai", _t([np.nextafter(seam, -np.inf), seam], device))
        assert abs(below - above) <= tol * abs(above)
    # Ai(x) ~ exp(-zeta) / (2 sqrt(pi) x^(1/4)), zeta = 2/3 x^(3/2), to 1 - 5 / (72 zeta)
    x = 40.0
    zeta = 2 / 3 * x ** 1.5
    lead = math.exp(-zeta) / (2 * math.sqrt(math.pi) * x ** 0.25) * (1 - 5 / (72 * zeta))
    assert abs(_f("airy_ai", _t([x], device))[0] / lead - 1) < 1e-5
    assert _f("airy_ai", _t([200.0], device))[0] == 0.0
    assert np.isnan(_f("airy_ai", _t([math.inf, -math.inf, math.nan], device))).all()


@pytest.mark.parametrize("name", BESSEL)
def test_bessel_dtypes_and_errors(device, name):
    fn = getattr(S, name)
    assert fn(npusim.tensor([1, 2], device=device)).dtype is npusim.float32
    assert fn(npusim.tensor([True], device=device)).dtype is npusim.float32
    assert fn(_t([1.5], device, npusim.float32)).dtype is npusim.float32
    for dt in (npusim.float16, npusim.bfloat16):   # torch's kernels take float32 and float64 only
        with pytest.raises(NotImplementedError, match=f'"{name}_cpu" not implemented for'):
            fn(_t([1.0], device, dt))
    out = npusim.empty(3, dtype=npusim.float64, device=device)
    r = fn(_t([0.5, 1.5, 3.0], device), out=out)
    assert r is out
    np.testing.assert_array_equal(host(out), _f(name, _t([0.5, 1.5, 3.0], device)))
    with pytest.raises(TypeError, match="must be Tensor, not float"):
        fn(0.5)
    # torch has no derivative for these: the result never requires grad
    assert not fn(_t([0.5, 2.0], device).requires_grad_()).requires_grad


# --- orthogonal polynomials without torch --------------------------------------------------------------------

def _unit(n):
    return [0.0] * n + [1.0]


def _reference_polynomial(name, x, n):
    """numpy.polynomial's values, or the trigonometric forms of U, V, W (DLMF 18.5.1, 18.5.2)."""
    shifted = name.startswith("shifted_")
    y = 2 * x - 1 if shifted else x
    kind = name.rsplit("_", 1)[1]
    if name.startswith(("chebyshev", "shifted")):
        if kind == "t":
            return npcheb.chebval(y, _unit(n))
        theta = np.arccos(y)
        if kind == "u":
            return np.sin((n + 1) * theta) / np.sin(theta)
        if kind == "v":
            return np.cos((n + 0.5) * theta) / np.cos(theta / 2)
        return np.sin((n + 0.5) * theta) / np.sin(theta / 2)
    return {"h": npherm.hermval, "he": npherme.hermeval, "l": nplag.lagval, "p": npleg.legval}[kind](x, _unit(n))


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_match_numpy_polynomial(device, name):
    x = np.linspace(0.02, 0.98, 25) if name.startswith("shifted") else np.linspace(-0.98, 0.98, 25)
    for n in range(0, 14):
        got = _f(name, _t(x, device), n)
        # different evaluation orders (recurrence / closed form against Clenshaw): a few ulps of the largest term
        np.testing.assert_allclose(got, _reference_polynomial(name, x, n), rtol=1e-12, atol=1e-12 * (n + 1) ** 2)


def test_polynomial_recurrences_outside_the_interval(device):
    x = np.array([-3.0, -1.5, 1.5, 2.5])
    t = _t(x, device)
    # T_{n+1} = 2x T_n - T_{n-1}, P: (n+1) P_{n+1} = (2n+1) x P_n - n P_{n-1}, H_{n+1} = 2x H_n - 2n H_{n-1}
    for n in range(1, 9):
        tn = [_f("chebyshev_polynomial_t", t, k) for k in (n - 1, n, n + 1)]
        np.testing.assert_allclose(tn[2], 2 * x * tn[1] - tn[0], rtol=1e-13)
        pn = [_f("legendre_polynomial_p", t, k) for k in (n - 1, n, n + 1)]
        np.testing.assert_allclose((n + 1) * pn[2], (2 * n + 1) * x * pn[1] - n * pn[0], rtol=1e-13)
        hn = [_f("hermite_polynomial_h", t, k) for k in (n - 1, n, n + 1)]
        np.testing.assert_allclose(hn[2], 2 * x * hn[1] - 2 * n * hn[0], rtol=1e-13)


def test_polynomial_ends_and_degrees(device):
    ends = _t([-1.0, 1.0], device)
    for n in (0, 3, 4, 20):
        np.testing.assert_array_equal(_f("chebyshev_polynomial_t", ends, n), [(-1) ** n, 1])
        np.testing.assert_array_equal(_f("chebyshev_polynomial_u", ends, n), [(-1) ** n * (n + 1), n + 1])
        np.testing.assert_array_equal(_f("chebyshev_polynomial_v", ends, n), [(-1) ** n * (2 * n + 1), 1])
        np.testing.assert_array_equal(_f("chebyshev_polynomial_w", ends, n), [(-1) ** n, 2 * n + 1])
        np.testing.assert_array_equal(_f("legendre_polynomial_p", ends, n), [(-1) ** n, 1])
    # a negative degree gives 0; a fractional one is truncated, a non-finite one reads as negative
    x = _t([0.3, 2.0], device)
    for name in POLYNOMIALS:
        assert _f(name, x, -1).tolist() == [0.0, 0.0]
        np.testing.assert_array_equal(_f(name, x, 3.7), _f(name, x, 3))
        assert _f(name, x, _t([math.nan, math.inf], device)).tolist() == [0.0, 0.0]
    # torch's degree limit of the Hermite recurrences: NaN past 512 in float64, past 128 in float32
    assert np.isnan(_f("hermite_polynomial_h", _t([0.1], device), 513))
    assert np.isfinite(_f("hermite_polynomial_he", _t([0.1], device), 200))
    assert np.isnan(_f("hermite_polynomial_he", _t([0.1], device, npusim.float32), 129))


def test_polynomial_overloads_and_dtypes(device):
    x = _t([0.25, 0.5], device)
    n = npusim.tensor([2, 3], device=device)
    both = _f("chebyshev_polynomial_t", x, n)
    np.testing.assert_allclose(both, [2 * 0.25 ** 2 - 1, 4 * 0.5 ** 3 - 3 * 0.5], rtol=1e-15)
    np.testing.assert_array_equal(_f("chebyshev_polynomial_t", 0.5, n), [-0.5, -1.0])
    assert S.chebyshev_polynomial_t(0.5, n).dtype is npusim.float32          # an integral n: the default dtype
    assert S.legendre_polynomial_p(npusim.tensor([1, 2], device=device), n).dtype is npusim.float32
    assert S.legendre_polynomial_p(_t([0.5], device, npusim.float32), _t([2.0], device)).dtype is npusim.float64
    out = npusim.empty(2, dtype=npusim.float64, device=device)
    assert S.hermite_polynomial_h(x, 2, out=out) is out
    np.testing.assert_allclose(host(out), 4 * np.array([0.25, 0.5]) ** 2 - 2, rtol=1e-15)
    S.laguerre_polynomial_l(0.5, _t([1.0, 2.0], device), out=out)
    np.testing.assert_allclose(host(out), [0.5, 1 - 2 * 0.5 + 0.5 ** 2 / 2], rtol=1e-15)
    with pytest.raises(NotImplementedError, match="chebyshev_polynomial_t_cpu"):
        S.chebyshev_polynomial_t(_t([0.5], device, npusim.float16), 2)
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        S.chebyshev_polynomial_t(0.5, 2)
    assert not S.legendre_polynomial_p(x.clone().requires_grad_(), 3).requires_grad


# --- incomplete gamma functions without torch ------------------------------------------------------------

def _upper_integer(n, x):
    """Q(n, x) = exp(-x) sum_{k<n} x^k / k! for an integral n, each term through logs."""
    return sum(math.exp(k * math.log(x) - x - math.lgamma(k + 1)) for k in range(n))


def test_igamma_closed_forms(device):
    x = np.concatenate([np.linspace(0.01, 30, 200), [45.0, 100.0]])
    t = _t(x, device)
    # P(1, x) = 1 - exp(-x); P(1/2, x) = erf(sqrt(x)); series and continued fraction both reach these
    np.testing.assert_allclose(host(npusim.igamma(_t(np.ones_like(x), device), t)), -np.expm1(-x), rtol=1e-14)
    ref = np.array([math.erf(math.sqrt(v)) for v in x])
    np.testing.assert_allclose(host(S.gammainc(_t(np.full_like(x, 0.5), device), t)), ref, rtol=1e-14)
    ref = np.array([math.erfc(math.sqrt(v)) for v in x])
    np.testing.assert_allclose(host(S.gammaincc(_t(np.full_like(x, 0.5), device), t)), ref, rtol=1e-13)


@pytest.mark.parametrize("n, xs", [(3, [0.5, 2.0, 7.0]), (30, [25.0, 30.0, 36.0]), (150, [140.0, 150.0, 160.0]),
                                   (400, [390.0, 400.0, 410.0])])
def test_igammac_integer_order_including_the_asymptotic_regime(device, n, xs):
    # large n with x near n takes the uniform asymptotic expansion; the closed form is a sum of positive terms
    got = host(npusim.igammac(_t([float(n)] * len(xs), device), _t(xs, device)))
    # torch's expansion divides by sqrt(2 pi a) with pi rounded to float32 (npusim does as torch): ~1e-9 relative
    np.testing.assert_allclose(got, [_upper_integer(n, v) for v in xs], rtol=1e-12 if n < 20 else 2e-9)
    lower = host(npusim.igamma(_t([float(n)] * len(xs), device), _t(xs, device)))
    np.testing.assert_allclose(lower + got, 1.0, rtol=2e-16 * 4)


def test_igamma_domain_edges(device):
    a = _t([2.0, 2.0, 0.0, 0.0, -1.0, 2.0, math.inf, math.inf, math.nan, 2.0], device)
    x = _t([0.0, math.inf, 1.0, 0.0, 1.0, -1.0, 1.0, math.inf, 1.0, math.nan], device)
    _close(host(npusim.igamma(a, x)), [0.0, 1.0, 1.0, math.nan, math.nan, math.nan, 0.0, math.nan, math.nan,
                                       math.nan], 0)
    _close(host(npusim.igammac(a, x)), [1.0, 0.0, 0.0, math.nan, math.nan, math.nan, 1.0, math.nan, math.nan,
                                        math.nan], 0)


def test_igamma_methods_dtypes_and_gradient(device):
    a, x = _t([1.5, 3.0], device), _t([2.0, 1.0], device)
    ref = host(npusim.igamma(a, x))
    np.testing.assert_array_equal(host(a.igamma(x)), ref)
    np.testing.assert_array_equal(host(a.igammac(x)), 1 - ref)
    b = a.clone()
    assert b.igamma_(x) is b
    np.testing.assert_array_equal(host(b), ref)
    b = a.clone()
    b.igammac_(x)
    np.testing.assert_allclose(host(b), 1 - ref, rtol=1e-15)
    half = npusim.igamma(a.half(), x.half())
    assert half.dtype is npusim.float16
    np.testing.assert_allclose(host(half), ref, rtol=1e-3)
    with pytest.raises(NotImplementedError, match="igamma_cpu"):
        npusim.igamma(npusim.tensor([1], device=device), npusim.tensor([2], device=device))
    with pytest.raises(TypeError, match="must be Tensor"):
        npusim.igamma(a, 2.0)
    # d/dx P(a, x) = x^(a-1) exp(-x) / Gamma(a); none with respect to a (torch has none either)
    xg = x.clone().requires_grad_()
    npusim.igamma(a, xg).sum().backward()
    dens = np.array([2.0 ** 0.5 * math.exp(-2) / math.gamma(1.5), math.exp(-1) / math.gamma(3.0)])
    np.testing.assert_allclose(host(xg.grad), dens, rtol=1e-14)
    xg.grad = None
    npusim.igammac(a, xg).sum().backward()
    np.testing.assert_allclose(host(xg.grad), -dens, rtol=1e-14)
    ag = a.clone().requires_grad_()
    with pytest.raises(NotImplementedError, match="the derivative for 'igamma: input' is not implemented"):
        npusim.igamma(ag, x).sum().backward()


# --- mvlgamma ----------------------------------------------------------------------------------------------

def test_mvlgamma_definition_gradient_and_inplace(device):
    x = _t([2.5, 3.0, 7.25], device)
    np.testing.assert_allclose(host(npusim.mvlgamma(x, 1)), [math.lgamma(v) for v in (2.5, 3.0, 7.25)],
                               rtol=1e-14)
    ref = [math.log(math.pi) / 2 + math.lgamma(v) + math.lgamma(v - 0.5) for v in (2.5, 3.0, 7.25)]
    np.testing.assert_allclose(host(x.mvlgamma(2)), ref, rtol=1e-14)
    np.testing.assert_array_equal(host(S.multigammaln(x, 2)), host(npusim.mvlgamma(x, 2)))
    assert npusim.mvlgamma(npusim.tensor([3, 4], device=device), 2).dtype is npusim.float32
    y = x.clone()
    assert y.mvlgamma_(2) is y
    np.testing.assert_allclose(host(y), ref, rtol=1e-14)
    with pytest.raises(RuntimeError, match="can't be cast"):
        npusim.tensor([3], device=device).mvlgamma_(2)
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        npusim.mvlgamma(x, 0)
    g = x.clone().requires_grad_()
    npusim.mvlgamma(g, 3).sum().backward()
    ref = host(npusim.digamma(x)) + host(npusim.digamma(x - 0.5)) + host(npusim.digamma(x - 1.0))
    np.testing.assert_allclose(host(g.grad), ref, rtol=1e-14)


# --- against torch ------------------------------------------------------------------------------------------

def _grid(lo, hi, n=601):
    return np.concatenate([np.linspace(lo, hi, n), EDGE])


BESSEL_DOMAINS = {
    "airy_ai": _grid(-60, 110), "bessel_j0": _grid(-60, 60), "bessel_j1": _grid(-60, 60),
    "bessel_y0": _grid(-5, 60), "bessel_y1": _grid(-5, 60), "modified_bessel_i0": _grid(-720, 720),
    "modified_bessel_i1": _grid(-720, 720), "modified_bessel_k0": _grid(-2, 720),
    "modified_bessel_k1": _grid(-2, 720), "scaled_modified_bessel_k0": _grid(-2, 1e4),
    "scaled_modified_bessel_k1": _grid(-2, 1e4), "spherical_bessel_j0": _grid(-60, 60),
}


@pytest.mark.oracle
@pytest.mark.parametrize("name", BESSEL)
def test_bessel_float64_matches_torch(torch, device, name):
    x = BESSEL_DOMAINS[name]
    got = host(getattr(S, name)(_t(x, device)))
    ref = getattr(torch.special, name)(torch.tensor(x)).numpy()
    # the same Cephes expansions in float64: measured within 2e-13 relative; near the zeros of J and Y the
    # value is small and the error is that of the argument reduction in sin / cos, absolute ~1e-17
    _close(got, ref, rtol=1e-12, atol=1e-16)


@pytest.mark.oracle
@pytest.mark.parametrize("name", BESSEL)
def test_bessel_float32_matches_torch(torch, device, name):
    with np.errstate(over="ignore"):   # +-1e300 become +-inf in float32
        x = BESSEL_DOMAINS[name].astype(np.float32)
    got = host(getattr(S, name)(_t(x, device, npusim.float32)))
    # npusim evaluates float32 in float64 and rounds once: torch's float64 value of the same input rounded,
    # to one float32 ulp (where the two float64 values straddle a rounding boundary)
    ref64 = getattr(torch.special, name)(torch.tensor(x).double()).float().numpy()
    _close(got, ref64, rtol=1.2e-7, atol=1e-38)
    # torch evaluates in float32: its own rounding (sin / cos of large arguments, exp near overflow) is larger
    # (Ai's oscillating tail takes sin / cos of (2/3)|x|^1.5: float32's rounding of that argument is ~1e-5 at -60)
    ref32 = getattr(torch.special, name)(torch.tensor(x)).numpy()
    fin = np.isfinite(ref32) & np.isfinite(got)
    np.testing.assert_allclose(got[fin], ref32[fin], rtol=2e-4, atol=2e-5)


@pytest.mark.oracle
@pytest.mark.parametrize("dt", ["bool", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("name", BESSEL)
def test_bessel_dtypes_match_torch(torch, device, name, dt):
    v = [0, 1, 1, 0] if dt == "bool" else [0.0, 1.0, 2.0, 3.0]
    try:
        ref = getattr(torch.special, name)(torch.tensor(v, dtype=getattr(torch, dt)))
    except NotImplementedError as e:
        with pytest.raises(NotImplementedError) as got:
            getattr(S, name)(npusim.tensor(v, dtype=getattr(npusim, dt), device=device))
        assert str(got.value) == str(e)
        return
    got = getattr(S, name)(npusim.tensor(v, dtype=getattr(npusim, dt), device=device))
    assert str(got.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
    _close(host(got), ref.double().numpy(), rtol=1e-6)


def _polynomial_grid(float32):
    if float32:   # degrees whose values stay far from float32's overflow
        xs = np.concatenate([np.linspace(-1.2, 1.2, 49), [0, 1, -1, 0.5, 2, -2, math.inf, -math.inf, math.nan]])
        ns = np.array([-3, -1, 0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 15, 20, 2.7, math.nan, math.inf])
    else:
        xs = np.concatenate([np.linspace(-1.5, 1.5, 61), [0, 1, -1, 0.5, 2, -2, 10, math.inf, -math.inf, math.nan]])
        ns = np.array([-3, -1, 0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 20, 50, 127, 128, 129, 300, 511, 512, 513, 1000, 2.7,
                       math.nan, math.inf, -math.inf])
    X, N = np.meshgrid(xs, ns)
    return X.ravel(), N.ravel()


@pytest.mark.oracle
@pytest.mark.parametrize("float32", [False, True])
@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_match_torch(torch, device, name, float32):
    X, N = _polynomial_grid(float32)
    dt, tdt = (npusim.float32, torch.float32) if float32 else (npusim.float64, torch.float64)
    got = host(getattr(S, name)(_t(X, device, dt), _t(N, device, dt))).astype(np.float64)
    ref = getattr(torch.special, name)(torch.tensor(X, dtype=tdt), torch.tensor(N, dtype=tdt)).numpy()
    # NaN x with a degree of 2 or more: torch returns a variable its loop never assigned (inf, NaN, whatever the
    # register held); npusim returns NaN there
    keep = ~(np.isnan(X) & (N >= 2))
    got, ref = got[keep], ref[keep].astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(got[np.isinf(ref)], ref[np.isinf(ref)])
    fin = np.isfinite(ref)
    # the same recurrences and closed forms in the same dtype; cos(n acos x) of a large degree magnifies the
    # libm's last-ulp differences by n: measured 6e-13 (float64) and 6e-6 (float32) relative to max(|value|, 1)
    tol = 2e-5 if float32 else 2e-12
    np.testing.assert_allclose(got[fin], ref[fin], rtol=tol, atol=tol)


@pytest.mark.oracle
@pytest.mark.parametrize("name", ["chebyshev_polynomial_t", "hermite_polynomial_he", "laguerre_polynomial_l"])
@pytest.mark.parametrize("args", [("ti", "ti"), ("tf", "s"), ("s", "ti"), ("tf", "tf64"), ("tb", "i"), ("ti", "i"),
                                  ("tf16", "i")])
def test_polynomial_promotion_and_scalars_match_torch(torch, device, name, args):
    def make(lib, kind):
        if kind in ("s", "i"):
            return 0.5 if kind == "s" else 3
        vals = {"ti": [1, 2, 3], "tb": [True, False, True]}.get(kind, [0.25, 0.5, 2.0])
        dt = {"ti": "int64", "tb": "bool", "tf": "float32", "tf64": "float64", "tf16": "float16"}[kind]
        t = lib.tensor(vals, dtype=getattr(lib, dt))
        return t if lib is torch else t.to(device)
    try:
        ref = getattr(torch.special, name)(make(torch, args[0]), make(torch, args[1]))
    except NotImplementedError as e:
        with pytest.raises(NotImplementedError) as got:
            getattr(S, name)(make(npusim, args[0]), make(npusim, args[1]))
        assert str(got.value) == str(e)
        return
    got = getattr(S, name)(make(npusim, args[0]), make(npusim, args[1]))
    assert str(got.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
    np.testing.assert_allclose(host(got), ref.double().numpy(), rtol=1e-6)


IG_A = np.array([0, 1e-3, 0.1, 0.5, 1, 1.5, 2, 5, 10, 19, 21, 30, 50, 100, 150, 199, 201, 250, 500, 1000, 1e4, 1e6,
                 math.inf, -1, math.nan])
IG_X = np.array([0, 1e-5, 0.1, 0.3, 0.5, 0.7, 1, 1.05, 1.2, 2, 5, 10, 20, 25, 30, 45, 55, 100, 120, 160, 200, 210,
                 260, 480, 1000, 1050, 1e4, 1e6, math.inf, -1, math.nan])


@pytest.mark.oracle
@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_incomplete_gamma_matches_torch(torch, device, name):
    A, X = (v.ravel() for v in np.meshgrid(IG_A, IG_X))
    got = host(getattr(npusim, name)(_t(A, device), _t(X, device)))
    ref = getattr(torch, name)(torch.tensor(A), torch.tensor(X)).numpy()
    # the same methods; lgamma and the power in the prefactor round differently: measured 6e-13 relative
    _close(got, ref, rtol=2e-12, atol=1e-300)
    A32, X32 = A.astype(np.float32), X.astype(np.float32)
    got32 = host(getattr(npusim, name)(_t(A32, device, npusim.float32), _t(X32, device, npusim.float32)))
    ref64 = getattr(torch, name)(torch.tensor(A32).double(), torch.tensor(X32).double()).float().numpy()
    # float64 evaluated, rounded once: torch's float64 value rounded, to one float32 ulp
    _close(got32, ref64, rtol=1.2e-7, atol=1e-44)
    # torch's float32 evaluation stops its series at float32's epsilon and cancels in 1 - P for small a
    ref32 = getattr(torch, name)(torch.tensor(A32), torch.tensor(X32)).numpy()
    ok = np.isclose(got32, ref32, rtol=5e-4, atol=1e-30) | (np.isnan(got32) & np.isnan(ref32))
    # and its float32 prefactor x^a e^-x / Gamma(a) is cut to 0 below e^-88.7 where the value is still representable
    ok |= (ref32 == 0) & (np.abs(got32) < 1e-10)
    assert ok.all(), (A32[~ok], X32[~ok], got32[~ok], ref32[~ok])


@pytest.mark.oracle
@pytest.mark.parametrize("dts", [("float16", "float16"), ("bfloat16", "bfloat16"), ("float32", "float64"),
                                 ("int64", "float32"), ("int32", "int64"), ("bool", "float32")])
def test_incomplete_gamma_dtypes_match_torch(torch, device, dts):
    a, x = [0.5, 2.0, 3.0], [1.0, 1.5, 4.0]
    for fn in ("igamma", "igammac"):
        def make(lib, v, dt):
            t = lib.tensor([bool(e) for e in v] if dt == "bool" else v, dtype=getattr(lib, dt))
            return t if lib is torch else t.to(device)
        try:
            ref = getattr(torch, fn)(make(torch, a, dts[0]), make(torch, x, dts[1]))
        except NotImplementedError as e:
            with pytest.raises(NotImplementedError) as got:
                getattr(npusim, fn)(make(npusim, a, dts[0]), make(npusim, x, dts[1]))
            assert str(got.value) == str(e)
            continue
        got = getattr(npusim, fn)(make(npusim, a, dts[0]), make(npusim, x, dts[1]))
        assert str(got.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
        # a 16-bit result is the float32 value rounded: one 16-bit ulp apart at most
        np.testing.assert_allclose(host(got), ref.double().numpy(), rtol=8e-3 if "16" in dts[0] else 1e-6)


@pytest.mark.oracle
def test_incomplete_gamma_gradient_matches_torch(torch, device):
    a, x = np.array([0.5, 2.0, 30.0, 250.0]), np.array([1.0, 0.3, 28.0, 260.0])
    for fn in ("igamma", "igammac"):
        xt = torch.tensor(x, requires_grad=True)
        getattr(torch, fn)(torch.tensor(a), xt).sum().backward()
        xn = _t(x, device).requires_grad_()
        getattr(npusim, fn)(_t(a, device), xn).sum().backward()
        np.testing.assert_allclose(host(xn.grad), xt.grad.numpy(), rtol=1e-12)


@pytest.mark.oracle
@pytest.mark.parametrize("p", [1, 2, 4])
def test_mvlgamma_matches_torch(torch, device, p):
    x = np.array([2.0, 2.5, 3.75, 10.0, 100.0, 0.75])
    got = npusim.mvlgamma(_t(x, device), p)
    ref = torch.mvlgamma(torch.tensor(x), p)
    # lgamma's rounding: test_special's tolerance for gammaln
    _close(host(got), ref.numpy(), rtol=2e-13)
    np.testing.assert_allclose(host(npusim.mvlgamma(npusim.tensor([3, 4], device=device), p)),
                               torch.mvlgamma(torch.tensor([3, 4]), p).numpy(), rtol=1e-6)
