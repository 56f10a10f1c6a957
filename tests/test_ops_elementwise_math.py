"""Elementwise math beyond the arithmetic core (the elementwise_math family): inverse hyperbolics, special
functions, float/integer binary math, predicates.

Oracle tests compare values, dtypes, gradients and errors with PyTorch; the others check hand-computed
values, NumPy/math references and float64 gradcheck, so they prove the ops without torch.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import host

import npusim

UNARY_FLOAT = ["acosh", "asinh", "atanh", "erfc", "erfinv", "lgamma", "digamma", "i0", "sinc", "deg2rad",
               "rad2deg"]
BINARY_FLOAT = ["xlogy", "hypot", "copysign", "logaddexp", "logaddexp2", "ldexp", "fmax", "fmin"]
DTYPES = ["bool", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
RTOL = {"float16": 2e-3, "bfloat16": 1e-2, "float32": 2e-6, "float64": 1e-12}


def _domain(name, rng, n):
    if name in ("erfinv", "atanh"):
        return rng.uniform(-0.99, 0.99, n)
    if name == "acosh":
        return rng.uniform(1.0, 20.0, n)
    return rng.uniform(-9.5, 9.5, n)


def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001 - the error type and message are what is compared
        return ("err", type(e).__name__, str(e).split("\n")[0])


# --- oracle ------------------------------------------------------------------------------------------------

@pytest.mark.oracle
@pytest.mark.parametrize("name", UNARY_FLOAT + ["frac", "isneginf", "isposinf", "signbit", "isreal"])
@pytest.mark.parametrize("dt", DTYPES)
def test_unary_matches_torch(torch, device, name, dt):
    rng = np.random.default_rng(1)
    v = _domain(name, rng, 64)
    if dt in ("bool",):
        v = v > 0
    elif dt.startswith(("int", "uint")):
        v = np.abs(np.round(v)) if dt == "uint8" or name == "acosh" else np.round(v)
    v = v.tolist() + ([math.inf, -math.inf, math.nan, -0.0, 0.0] if dt.startswith(("float", "bfloat")) else [])
    ref = _outcome(lambda: getattr(torch, name)(torch.tensor(v, dtype=getattr(torch, dt))))
    got = _outcome(lambda: getattr(npusim, name)(npusim.tensor(v, dtype=getattr(npusim, dt), device=device)))
    assert ref[0] == got[0], (ref, got)
    if ref[0] == "err":
        assert ref[1:] == got[1:]
        return
    r, g = ref[1], got[1]
    assert str(g.dtype).split(".")[-1] == str(r.dtype).split(".")[-1]
    rv = r.float().numpy() if r.dtype is torch.bfloat16 else r.numpy()
    rtol = RTOL.get(str(r.dtype).split(".")[-1], 0)
    np.testing.assert_allclose(host(g), rv, rtol=rtol, atol=rtol)


@pytest.mark.oracle
@pytest.mark.parametrize("name", UNARY_FLOAT + ["polygamma1", "polygamma3", "i1"])
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_special_accuracy_against_torch(torch, name, dt):
    """Measured: float64 within 1e-13 relative (erfinv 1e-13, lgamma near its zeros 1e-15 absolute);
    float32 within 2e-6 relative of torch's float32 kernels."""
    rng = np.random.default_rng(7)
    v = _domain(name.rstrip("13").replace("polygamma", "x"), rng, 4000)
    if name.startswith("polygamma"):
        v = np.abs(v) + 0.05   # torch's own float32 trigamma loses accuracy near the negative poles
    x = np.asarray(v, dtype=dt)
    if name.startswith("polygamma"):
        n = int(name[-1])
        ref, got = torch.polygamma(n, torch.from_numpy(x)), npusim.polygamma(n, npusim.from_numpy(x))
    elif name == "i1":
        ref, got = torch.special.i1(torch.from_numpy(x)), npusim.ops.aten.special_i1(npusim.from_numpy(x))
    else:
        ref, got = getattr(torch, name)(torch.from_numpy(x)), getattr(npusim, name)(npusim.from_numpy(x))
    tol = 1e-13 if dt == "float64" else 2e-6
    atol = tol if name in ("lgamma", "sinc", "digamma") else 0
    np.testing.assert_allclose(host(got), ref.numpy(), rtol=tol, atol=atol)


def _operand(L, dt, kind, seed):
    rng = np.random.default_rng(seed)
    v = rng.uniform(0.5, 4.0, (2, 3)) * np.where(rng.random((2, 3)) > 0.3, 1, -1)
    if dt == "bool":
        v = v > 0
    elif dt.startswith(("int", "uint")):
        v = np.abs(np.round(v)) if dt == "uint8" else np.round(v)
    if kind == "scalar":
        return float(v.flat[0]) if dt.startswith(("float", "bfloat")) else int(v.flat[0])
    data = v.tolist() if kind == "tensor" else v.flat[0].item()
    return L.tensor(data, dtype=getattr(L, dt))


@pytest.mark.oracle
@pytest.mark.parametrize("name", BINARY_FLOAT + ["heaviside", "nextafter", "gcd", "lcm", "bitwise_left_shift",
                                                 "bitwise_right_shift", "float_power"])
@pytest.mark.parametrize("kinds", [("tensor", "tensor"), ("tensor", "zerodim"), ("tensor", "scalar"),
                                   ("scalar", "tensor")])
def test_binary_dtypes_values_errors_match_torch(torch, device, name, kinds):
    pairs = [(a, b) for a in DTYPES for b in DTYPES] if device == "cpu" else \
        [("int64", "float32"), ("float16", "float16"), ("int32", "int64"), ("bool", "bool")]
    for da, db in pairs:
        def run(L, da=da, db=db):
            x, y = _operand(L, da, kinds[0], 1), _operand(L, db, kinds[1], 2)
            if L is npusim:
                x = x.to(device) if isinstance(x, npusim.Tensor) else x
                y = y.to(device) if isinstance(y, npusim.Tensor) and kinds[1] == "tensor" else y
            if name in ("bitwise_left_shift", "bitwise_right_shift") and isinstance(y, L.Tensor):
                y = y.abs() if y.dtype != L.bool else y
            return getattr(L, name)(x, y)
        ref, got = _outcome(lambda: run(torch)), _outcome(lambda: run(npusim))
        assert ref[0] == got[0], (da, db, ref, got)
        if ref[0] == "err":
            assert ref[1] == got[1] and ref[2].replace("torch", "npusim") == got[2], (da, db, ref, got)
            continue
        r, g = ref[1], got[1]
        assert str(g.dtype).split(".")[-1] == str(r.dtype).split(".")[-1], (da, db)
        rv = r.float().numpy() if r.dtype is torch.bfloat16 else r.numpy()
        rtol = RTOL.get(str(r.dtype).split(".")[-1], 0)
        if name == "ldexp" and db in RTOL:
            rtol = max(rtol, RTOL[db])   # 2**other is rounded in other's dtype (exp2 kernels differ by an ulp)
        np.testing.assert_allclose(host(g), rv, rtol=rtol, atol=rtol, err_msg=f"{da} {db}")


@pytest.mark.oracle
@pytest.mark.parametrize("name", UNARY_FLOAT + ["logit", "frac", "polygamma"] + BINARY_FLOAT)
def test_gradients_match_torch(torch, device, name):
    xv = np.array([0.3, 0.7, 1.6, 2.5]) if name not in ("acosh",) else np.array([1.3, 1.7, 2.6, 3.5])
    if name in ("erfinv", "atanh", "logit"):
        xv = xv / 3
    yv = np.array([1.5, -0.4, 2.0, 0.9])

    def grads(L, **kw):
        x = L.tensor(xv.tolist(), requires_grad=True, **kw)
        y = L.tensor(yv.tolist(), requires_grad=True, **kw)
        if name in BINARY_FLOAT:
            out = getattr(L, name)(x, y)
            return [t.detach() for t in L.autograd.grad(out.sum(), [x, y])]
        out = L.polygamma(1, x) if name == "polygamma" else getattr(L, name)(x)
        return [L.autograd.grad(out.sum(), x)[0]]

    for r, g in zip(grads(torch), grads(npusim, device=device)):
        np.testing.assert_allclose(host(g), r.numpy(), rtol=2e-5, atol=1e-6)


@pytest.mark.oracle
def test_edge_values_match_torch(torch, device):
    specials = [0.0, -0.0, 1.0, -1.0, -2.5, math.inf, -math.inf, math.nan]
    for name in ("lgamma", "digamma", "erfinv", "i0", "sinc", "erfc"):
        r = getattr(torch, name)(torch.tensor(specials, dtype=torch.float64))
        g = getattr(npusim, name)(npusim.tensor(specials, dtype=npusim.float64, device=device))
        np.testing.assert_allclose(host(g), r.numpy(), rtol=1e-12, err_msg=name)
    a, b = [0.0, 1.0, 1.0, -0.0, math.nan], [1.0, 2.0, 0.0, -1.0, 1.0]
    for dt in ("float16", "bfloat16", "float32", "float64"):
        r = torch.nextafter(torch.tensor(a, dtype=getattr(torch, dt)), torch.tensor(b, dtype=getattr(torch, dt)))
        g = npusim.nextafter(npusim.tensor(a, dtype=getattr(npusim, dt), device=device),
                             npusim.tensor(b, dtype=getattr(npusim, dt), device=device))
        np.testing.assert_array_equal(host(g), r.float().numpy() if dt == "bfloat16" else r.numpy())


# --- without torch ---------------------------------------------------------------------------------------------

def test_special_values_against_math(device):
    xs = [0.1, 0.5, 1.0, 2.5, 7.0, 12.0, -0.5, -3.3]
    t = npusim.tensor(xs, dtype=npusim.float64, device=device)
    np.testing.assert_allclose(host(npusim.lgamma(t)), [math.lgamma(x) for x in xs], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(host(npusim.erfc(t)), [math.erfc(x) for x in xs], rtol=1e-14)
    np.testing.assert_allclose(host(npusim.erfc(npusim.tensor([10.0, 25.0], dtype=npusim.float64))),
                               [math.erfc(10.0), math.erfc(25.0)], rtol=1e-13)
    p = npusim.tensor([-0.9, -0.3, 0.0, 0.4, 0.99], dtype=npusim.float64, device=device)
    np.testing.assert_allclose(host(npusim.erf(npusim.erfinv(p))), host(p), atol=1e-15)
    # digamma(1) = -Euler gamma, digamma(x + 1) = digamma(x) + 1 / x
    np.testing.assert_allclose(host(npusim.digamma(npusim.tensor([1.0], dtype=npusim.float64))), [-0.5772156649015329])
    d = host(npusim.digamma(t))
    np.testing.assert_allclose(host(npusim.digamma(t + 1)), d + 1 / np.array(xs), rtol=1e-12)
    # polygamma(1, 1) = pi^2 / 6; i0 by its power series
    np.testing.assert_allclose(host(npusim.polygamma(1, npusim.tensor([1.0], dtype=npusim.float64))), [math.pi ** 2 / 6])
    series = [sum((x / 2) ** (2 * k) / math.factorial(k) ** 2 for k in range(60)) for x in xs]
    np.testing.assert_allclose(host(npusim.i0(t)), series, rtol=1e-13)
    np.testing.assert_allclose(host(npusim.sinc(t)), np.sinc(xs), rtol=1e-14)


def test_pole_and_infinity_conventions(device):
    t = npusim.tensor([0.0, -0.0, -2.0, math.inf, -math.inf, math.nan], dtype=npusim.float64, device=device)
    assert host(npusim.lgamma(t)).tolist()[:5] == [math.inf] * 5
    d = host(npusim.digamma(t))
    assert d[0] == -math.inf and d[1] == math.inf and math.isnan(d[2]) and d[3] == math.inf and math.isnan(d[4])
    assert host(npusim.erfinv(npusim.tensor([1.0, -1.0, 1.5], device=device))).tolist()[:2] == [math.inf, -math.inf]
    assert math.isnan(host(npusim.erfinv(npusim.tensor([1.5], device=device)))[0])


@pytest.mark.parametrize("name", ["acosh", "asinh", "atanh", "erfc", "erfinv", "lgamma", "digamma", "i0", "sinc",
                                  "deg2rad", "rad2deg", "frac", "polygamma1", "polygamma2", "logit"])
def test_gradcheck_unary(device, name):
    v = {"acosh": [1.3, 2.0, 4.5], "atanh": [-0.5, 0.1, 0.6], "erfinv": [-0.5, 0.1, 0.6],
         "logit": [0.2, 0.5, 0.7]}.get(name, [0.4, 1.3, 2.7])
    x = npusim.tensor(v, dtype=npusim.float64, device=device, requires_grad=True)
    if name.startswith("polygamma"):
        fn = lambda t: npusim.polygamma(int(name[-1]), t)
    else:
        fn = getattr(npusim, name)
    assert npusim.autograd.gradcheck(fn, (x,))


@pytest.mark.parametrize("name", BINARY_FLOAT)
def test_gradcheck_binary_with_broadcasting(device, name):
    x = npusim.tensor([[0.4, 1.3, 2.7], [1.1, 0.6, 3.0]], dtype=npusim.float64, device=device, requires_grad=True)
    y = npusim.tensor([1.7, -0.8, 2.2], dtype=npusim.float64, device=device, requires_grad=True)
    if name == "xlogy":
        y = npusim.tensor([1.7, 0.8, 2.2], dtype=npusim.float64, device=device, requires_grad=True)
    assert npusim.autograd.gradcheck(getattr(npusim, name), (x, y))


def test_binary_values_and_dtypes_by_hand(device):
    i = npusim.tensor([0, -4, 6, -9, 12], device=device)
    j = npusim.tensor([0, 6, -4, -6, 0], device=device)
    assert npusim.gcd(i, j).tolist() == [0, 2, 2, 3, 12]
    assert npusim.lcm(i, j).tolist() == [0, 12, 12, 18, 0]
    s = npusim.tensor([1, -8, 5, -1], dtype=npusim.int8, device=device)
    assert (s << 7).tolist() == [-128, 0, -128, -128]
    assert (s >> 8).tolist() == [0, -1, 0, -1]
    assert (s << npusim.tensor([8, 3, -1, 1], dtype=npusim.int8, device=device)).tolist() == [0, -64, 0, -2]
    assert (3 << npusim.tensor([1, 2], device=device)).tolist() == [6, 12]
    u = npusim.tensor([200, 255], dtype=npusim.uint8, device=device)
    assert (u << 1).tolist() == [144, 254] and (u >> 9).tolist() == [0, 0]
    x = npusim.tensor([0.0, 0.0, 1.0, math.nan], device=device)
    y = npusim.tensor([0.0, math.nan, 0.0, 1.0], device=device)
    r = npusim.xlogy(x, y).tolist()
    assert r[0] == 0.0 and math.isnan(r[1]) and r[2] == -math.inf and math.isnan(r[3])
    assert npusim.xlogy(2, npusim.tensor([1, 2], device=device)).dtype is npusim.float32
    assert npusim.hypot(npusim.tensor([3.0], device=device), npusim.tensor([4.0], device=device)).tolist() == [5.0]
    c = npusim.copysign(npusim.tensor([1, 2], device=device), -0.0)
    assert c.tolist() == [-1.0, -2.0] and c.dtype is npusim.float32
    f = npusim.fmax(npusim.tensor([math.nan, 1.0, math.nan], device=device),
                    npusim.tensor([2.0, math.nan, math.nan], device=device)).tolist()
    assert f[:2] == [2.0, 1.0] and math.isnan(f[2])
    h = npusim.heaviside(npusim.tensor([-1.0, 0.0, 2.0, math.nan], device=device),
                         npusim.tensor([5.0], device=device))
    assert h.tolist() == [0.0, 5.0, 1.0, 0.0]
    big = npusim.logaddexp(npusim.tensor([1000.0, -math.inf], device=device),
                           npusim.tensor([1000.0, -math.inf], device=device)).tolist()
    assert big[0] == pytest.approx(1000.0 + math.log(2)) and big[1] == -math.inf
    fp = npusim.float_power(npusim.tensor([2, 3], device=device), 2)
    assert fp.dtype is npusim.float64 and fp.tolist() == [4.0, 9.0]
    ld = npusim.ldexp(npusim.tensor([1.0], dtype=npusim.float16, device=device), npusim.tensor([20], device=device))
    assert ld.dtype is npusim.float16 and ld.tolist() == [math.inf]
    nx = npusim.nextafter(npusim.tensor([1.0], dtype=npusim.float64, device=device),
                          npusim.tensor([2.0], dtype=npusim.float64, device=device))
    assert nx.tolist() == [np.nextafter(1.0, 2.0)]


def test_predicates_and_unary_dtypes(device):
    t = npusim.tensor([-0.0, 0.0, -1.0, math.inf, -math.inf, math.nan], device=device)
    assert npusim.signbit(t).tolist() == [True, False, True, False, True, False]
    assert npusim.isposinf(t).tolist() == [False, False, False, True, False, False]
    assert npusim.isneginf(t).tolist() == [False, False, False, False, True, False]
    assert npusim.isreal(t).tolist() == [True] * 6
    i = npusim.tensor([-1, 0, 3], device=device)
    assert npusim.signbit(i).tolist() == [True, False, False]
    assert npusim.acosh(i).dtype is npusim.float32
    assert npusim.frac(npusim.tensor([-1.5, 2.25], device=device)).tolist() == [-0.5, 0.25]
    assert npusim.deg2rad(npusim.tensor([180.0], dtype=npusim.float64, device=device)).tolist() == [math.pi]
    assert npusim.positive(t) is t
    assert npusim.arccosh is not npusim.acosh and npusim.arccosh(npusim.tensor([1.0])).tolist() == [0.0]


def test_out_inplace_and_methods(device):
    x = npusim.tensor([0.5, 1.5, 2.5], device=device)
    out = npusim.empty(3, device=device)
    assert npusim.lgamma(x, out=out) is out
    np.testing.assert_allclose(host(out), [math.lgamma(v) for v in (0.5, 1.5, 2.5)], rtol=1e-6)
    y = x.clone()
    assert y.digamma_() is y and y.tolist() == npusim.digamma(x).tolist()
    assert x.clone().arcsinh_().tolist() == npusim.asinh(x).tolist()
    assert x.clone().logit_(0.1).tolist() == npusim.logit(x, 0.1).tolist()
    assert x.clone().polygamma_(1).tolist() == x.polygamma(1).tolist()
    assert x.clone().xlogy_(2).tolist() == npusim.xlogy(x, 2).tolist()
    z = npusim.tensor([1.0, 2.0], dtype=npusim.float64, device=device)
    assert z.float_power_(2).tolist() == [1.0, 4.0]
    a = npusim.tensor([6, 4], device=device)
    a.gcd_(npusim.tensor([4, 6], device=device))
    a <<= 1
    assert a.tolist() == [4, 4]
    b = npusim.tensor([5.0, 1.0], device=device)
    b.subtract_(1).multiply_(2).true_divide_(4)
    assert b.tolist() == [2.0, 0.0]
    assert b.greater_(1).tolist() == [1.0, 0.0]
    c = npusim.tensor([1.0, 2.0], device=device)
    assert c.clone().less_equal_(1).tolist() == [1.0, 0.0] and c.clone().not_equal_(2).tolist() == [1.0, 0.0]
    assert c.clone().greater_equal_(2).tolist() == [0.0, 1.0] and c.clone().less_(2).tolist() == [1.0, 0.0]
    assert c.clone().arctan2_(c).tolist() == pytest.approx([math.pi / 4] * 2)


def test_errors_by_hand(device):
    i = npusim.tensor([1, 2], device=device)
    f = npusim.tensor([1.0, 2.0], device=device)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        i.acosh_()
    with pytest.raises(NotImplementedError, match="\"frac_cpu\" not implemented for 'Long'"):
        npusim.frac(i)
    with pytest.raises(NotImplementedError, match="\"hypot_cpu\" not implemented for 'Long'"):
        npusim.hypot(i, i)
    with pytest.raises(NotImplementedError, match="\"gcd_cpu\" not implemented for 'Float'"):
        npusim.gcd(f, f)
    with pytest.raises(NotImplementedError, match="\"lshift_cpu\" not implemented for 'Float'"):
        i << 1.5
    with pytest.raises(TypeError, match=r"hypot\(\): argument 'other' \(position 2\) must be Tensor, not int"):
        npusim.hypot(f, 2)
    with pytest.raises(RuntimeError, match="heaviside is not yet implemented for tensors with different dtypes."):
        npusim.heaviside(f, i)
    with pytest.raises(RuntimeError, match="the base given to float_power_ has dtype Float but the operation's "
                                           "result requires dtype Double"):
        f.float_power_(2)
    with pytest.raises(RuntimeError, match="polygamma\\(n, x\\) does not support negative n."):
        npusim.polygamma(-1, f)
    with pytest.raises(RuntimeError, match="The `\\+` operator, on a bool tensor is not supported."):
        npusim.positive(npusim.tensor([True]))
    with pytest.raises(TypeError, match="xlogy\\(\\) received an invalid combination of arguments"):
        npusim.xlogy(2, 3)
    x = npusim.tensor([1.0], requires_grad=True, device=device)
    with pytest.raises(RuntimeError, match="derivative for aten::heaviside is not implemented"):
        npusim.heaviside(x, npusim.tensor([0.5], device=device)).sum().backward()
