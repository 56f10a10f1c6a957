"""Elementwise ops: binary and unary families in functional, method, operator, in-place and out= forms.

The oracle tests sweep every dtype pair (tensors, 0-dim tensors and Python numbers) and compare
values, dtypes and errors with PyTorch; the other tests check the same behaviour against NumPy
and against torch's documented messages, so they run without torch.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import npusim
from conftest import host

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]
RTOL = {"float16": 2e-3, "bfloat16": 1e-2, "float32": 2e-6, "float64": 1e-12}


# --- helpers shared by the oracle sweeps -------------------------------------------------------------

def _sweep_dtypes(device, name=""):
    """Every dtype on cpu; other devices, and the method/operator spellings of an op already swept in
    functional form, run the same kernels, so a sample keeps the suite fast."""
    if device != "cpu":
        return ["bool", "int64", "float16", "float32"]
    if name.startswith(("method_", "op_")):
        return ["bool", "uint8", "int8", "int32", "float16", "bfloat16", "float64"]
    return DTYPES


def _values(dt, shape, seed):
    rng = np.random.default_rng(seed)
    if dt == "bool":
        return rng.random(shape) > 0.5
    if dt == "uint8":
        return rng.integers(0, 10, shape)
    if dt.startswith("int"):
        return rng.integers(-5, 5, shape)
    return np.round(rng.uniform(-5, 5, shape), 2)


def _maker(device):
    """mk(L, dtype, shape, seed): the same values as a torch tensor (cpu) or an npusim tensor on ``device``."""
    def mk(L, dt, shape=(2, 3), seed=0):
        v = _values(dt, shape, seed)
        data = v.tolist() if v.ndim else v.item()
        if L is npusim:
            return npusim.tensor(data, dtype=getattr(npusim, dt), device=device)
        return L.tensor(data, dtype=getattr(L, dt))
    return mk


def _outcome(fn, L, device="cpu"):
    """("ok", result) or ("err", type name, first line); npusim factories default to ``device``."""
    if L is npusim:
        previous = npusim.get_default_device()
        npusim.set_default_device(device)
    try:
        return ("ok", fn(L))
    except Exception as e:  # noqa: BLE001 - the exception itself is what is compared
        return ("err", type(e).__name__, str(e).split("\n")[0])
    finally:
        if L is npusim:
            npusim.set_default_device(previous)


def _as_numpy(x):
    if isinstance(x, npusim.Tensor):
        return str(x.dtype).split(".")[-1], tuple(x.shape), host(x)
    t = x.detach().cpu()
    name = str(t.dtype).split(".")[-1]
    if name == "bfloat16":
        t = t.float()
    return name, tuple(t.shape), t.numpy()


def _differs(a, b, rtol=None, half_atol=0.0):
    """None when torch's result ``a`` and npusim's ``b`` agree, else a description.

    ``rtol`` is a floor on the relative tolerance (a float32 result written into a float64 ``out=``
    keeps float32's rounding); ``half_atol`` loosens float comparisons of 16-bit computations where
    torch's own rounding depends on its code path.
    """
    if a[0] != b[0]:
        return f"torch {a[1:]!r} / npusim {b[1:]!r}"
    if a[0] == "err":
        if a[1] != b[1] or a[2].replace("torch.", "npusim.") != b[2]:
            return f"torch {a[1]}: {a[2]!r} / npusim {b[1]}: {b[2]!r}"
        return None
    ta, tb = a[1], b[1]
    if isinstance(ta, (list, tuple)):
        for x, y in zip(ta, tb):
            d = _differs(("ok", x), ("ok", y), rtol, half_atol)
            if d:
                return d
        return None
    if not hasattr(ta, "shape"):
        return None if ta == tb or (ta != ta and tb != tb) else f"torch {ta!r} / npusim {tb!r}"
    (da, sa, va), (db, sb, vb) = _as_numpy(ta), _as_numpy(tb)
    if (da, sa) != (db, sb):
        return f"torch {da}{list(sa)} / npusim {db}{list(sb)}"
    if va.dtype == np.bool_ or va.dtype.kind in "iu":
        ok = np.array_equal(va, vb)
    else:
        tol = max(RTOL.get(da, 1e-6), rtol or 0.0)
        ok = np.allclose(va.astype(np.float64), vb.astype(np.float64), rtol=tol, atol=max(half_atol, tol * 1e-3),
                         equal_nan=True)
    return None if ok else f"values torch {va.ravel()[:6]} / npusim {vb.ravel()[:6]} ({da})"


def _sweep(torch, cases, rtol=None, half_atol=0.0, device="cpu"):
    """Run each (label, fn) with torch and npusim; return the labels that disagree."""
    bad = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for label, fn in cases:
            d = _differs(_outcome(fn, torch), _outcome(fn, npusim, device), rtol, half_atol)
            if d:
                bad.append(f"{label}: {d}")
    return bad


# --- binary ops: every dtype pair, against torch -----------------------------------------------------

BINARY = {
    "add": lambda L, a, b: L.add(a, b),
    "add_alpha": lambda L, a, b: L.add(a, b, alpha=2),
    "sub": lambda L, a, b: L.sub(a, b),
    "sub_alpha": lambda L, a, b: L.sub(a, b, alpha=3),
    "mul": lambda L, a, b: L.mul(a, b),
    "div": lambda L, a, b: L.div(a, b),
    "div_trunc": lambda L, a, b: L.div(a, b, rounding_mode="trunc"),
    "div_floor": lambda L, a, b: L.div(a, b, rounding_mode="floor"),
    "true_divide": lambda L, a, b: L.true_divide(a, b),
    "pow": lambda L, a, b: L.pow(a, b),
    "remainder": lambda L, a, b: L.remainder(a, b),
    "fmod": lambda L, a, b: L.fmod(a, b),
    "floor_divide": lambda L, a, b: L.floor_divide(a, b),
    "maximum": lambda L, a, b: L.maximum(a, b),
    "minimum": lambda L, a, b: L.minimum(a, b),
    "atan2": lambda L, a, b: L.atan2(a, b),
    "eq": lambda L, a, b: L.eq(a, b),
    "ne": lambda L, a, b: L.ne(a, b),
    "lt": lambda L, a, b: L.lt(a, b),
    "le": lambda L, a, b: L.le(a, b),
    "gt": lambda L, a, b: L.gt(a, b),
    "ge": lambda L, a, b: L.ge(a, b),
    "logical_and": lambda L, a, b: L.logical_and(a, b),
    "logical_or": lambda L, a, b: L.logical_or(a, b),
    "logical_xor": lambda L, a, b: L.logical_xor(a, b),
    "bitwise_and": lambda L, a, b: L.bitwise_and(a, b),
    "bitwise_or": lambda L, a, b: L.bitwise_or(a, b),
    "bitwise_xor": lambda L, a, b: L.bitwise_xor(a, b),
    "method_add": lambda L, a, b: a.add(b),
    "method_div_floor": lambda L, a, b: a.div(b, rounding_mode="floor"),
    "method_maximum": lambda L, a, b: a.maximum(b),
    "method_atan2": lambda L, a, b: a.atan2(b),
    "method_logical_or": lambda L, a, b: a.logical_or(b),
    "op_add": lambda L, a, b: a + b,
    "op_sub": lambda L, a, b: a - b,
    "op_mul": lambda L, a, b: a * b,
    "op_truediv": lambda L, a, b: a / b,
    "op_floordiv": lambda L, a, b: a // b,
    "op_mod": lambda L, a, b: a % b,
    "op_pow": lambda L, a, b: a ** b,
    "op_and": lambda L, a, b: a & b,
    "op_or": lambda L, a, b: a | b,
    "op_xor": lambda L, a, b: a ^ b,
    "op_eq": lambda L, a, b: a == b,
    "op_ne": lambda L, a, b: a != b,
    "op_lt": lambda L, a, b: a < b,
    "op_ge": lambda L, a, b: a >= b,
}

INPLACE = {
    "add_": lambda L, a, b: a.add_(b),
    "add_alpha_": lambda L, a, b: a.add_(b, alpha=2),
    "sub_": lambda L, a, b: a.sub_(b),
    "mul_": lambda L, a, b: a.mul_(b),
    "div_": lambda L, a, b: a.div_(b),
    "div_trunc_": lambda L, a, b: a.div_(b, rounding_mode="trunc"),
    "div_floor_": lambda L, a, b: a.div_(b, rounding_mode="floor"),
    "pow_": lambda L, a, b: a.pow_(b),
    "remainder_": lambda L, a, b: a.remainder_(b),
    "fmod_": lambda L, a, b: a.fmod_(b),
    "floor_divide_": lambda L, a, b: a.floor_divide_(b),
    "atan2_": lambda L, a, b: a.atan2_(b),
    "eq_": lambda L, a, b: a.eq_(b),
    "lt_": lambda L, a, b: a.lt_(b),
    "logical_and_": lambda L, a, b: a.logical_and_(b),
    "logical_xor_": lambda L, a, b: a.logical_xor_(b),
    "bitwise_and_": lambda L, a, b: a.bitwise_and_(b),
    "bitwise_or_": lambda L, a, b: a.bitwise_or_(b),
    "op_iadd": lambda L, a, b: a.__iadd__(b),
    "op_isub": lambda L, a, b: a.__isub__(b),
    "op_imul": lambda L, a, b: a.__imul__(b),
    "op_itruediv": lambda L, a, b: a.__itruediv__(b),
    "op_ifloordiv": lambda L, a, b: a.__ifloordiv__(b),
    "op_imod": lambda L, a, b: a.__imod__(b),
    "op_ipow": lambda L, a, b: a.__ipow__(b),
    "op_iand": lambda L, a, b: a.__iand__(b),
}

SCALARS = [2, 2.5, True, False, -3, 0]
# (first operand, second operand): t = 2x3 tensor, r = length-3 row (broadcasts), z = 0-dim tensor
KINDS = [("t", "r"), ("t", "z"), ("z", "t")]


def _binary_cases(mk, fn, name, dtypes):
    def operand(L, kind, dt, seed):
        return mk(L, dt, {"t": (2, 3), "r": (3,), "z": ()}[kind], seed)
    cases = []
    for d1 in dtypes:
        for d2 in dtypes:
            for k1, k2 in KINDS:
                cases.append((f"{name} {d1}[{k1}] {d2}[{k2}]",
                              lambda L, d1=d1, d2=d2, k1=k1, k2=k2: fn(L, operand(L, k1, d1, 1), operand(L, k2, d2, 2))))
        for s in SCALARS:
            cases.append((f"{name} {d1} {s!r}", lambda L, d1=d1, s=s: fn(L, operand(L, "t", d1, 1), s)))
            if name.startswith("op_") and "i" not in name[3:5]:
                cases.append((f"{name} {s!r} {d1}", lambda L, d1=d1, s=s: fn(L, s, operand(L, "t", d1, 1))))
    return cases


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_matches_torch_for_every_dtype_pair(name, device, torch):
    assert _sweep(torch, _binary_cases(_maker(device), BINARY[name], name, _sweep_dtypes(device, name)), half_atol=_alpha_atol(name),
                  device=device) == []


def _alpha_atol(name):
    # torch rounds alpha * b to 16 bits on some of its code paths (which one depends on the memory layout):
    # allow one 16-bit ulp of the operands' magnitude (|values| < 16 here)
    return 0.07 if "alpha" in name else 0.0


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_binary_matches_torch_for_every_dtype_pair(name, device, torch):
    assert _sweep(torch, _binary_cases(_maker(device), INPLACE[name], name, _sweep_dtypes(device, name)), half_atol=_alpha_atol(name),
                  device=device) == []


OUT_FORMS = {
    "add": lambda L, a, b, o: L.add(a, b, out=o),
    "add_alpha": lambda L, a, b, o: L.add(a, b, alpha=3, out=o),
    "sub": lambda L, a, b, o: L.sub(a, b, out=o),
    "mul": lambda L, a, b, o: L.mul(a, b, out=o),
    "div": lambda L, a, b, o: L.div(a, b, out=o),
    "div_floor": lambda L, a, b, o: L.div(a, b, rounding_mode="floor", out=o),
    "pow": lambda L, a, b, o: L.pow(a, b, out=o),
    "remainder": lambda L, a, b, o: L.remainder(a, b, out=o),
    "fmod": lambda L, a, b, o: L.fmod(a, b, out=o),
    "floor_divide": lambda L, a, b, o: L.floor_divide(a, b, out=o),
    "maximum": lambda L, a, b, o: L.maximum(a, b, out=o),
    "minimum": lambda L, a, b, o: L.minimum(a, b, out=o),
    "atan2": lambda L, a, b, o: L.atan2(a, b, out=o),
    "eq": lambda L, a, b, o: L.eq(a, b, out=o),
    "gt": lambda L, a, b, o: L.gt(a, b, out=o),
    "logical_or": lambda L, a, b, o: L.logical_or(a, b, out=o),
    "bitwise_and": lambda L, a, b, o: L.bitwise_and(a, b, out=o),
}


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(OUT_FORMS))
def test_out_variants_match_torch(name, device, torch):
    mk, fn = _maker(device), OUT_FORMS[name]
    cases = []
    for d1 in _sweep_dtypes(device):
        for d2 in ("bool", "int8", "int64", "float16", "float32"):
            for od in ("bool", "uint8", "int64", "float16", "float64"):
                cases.append((f"{name} {d1} {d2} out={od}", lambda L, d1=d1, d2=d2, od=od: fn(
                    L, mk(L, d1, (2, 3), 1), mk(L, d2, (3,), 2), L.empty(2, 3, dtype=getattr(L, od)))))
    cases.append((f"{name} out of another shape is resized", lambda L: fn(
        L, mk(L, "float32", (2, 3), 1), mk(L, "float32", (3,), 2), L.empty(5))))
    cases.append((f"{name} broadcast error", lambda L: fn(
        L, mk(L, "float32", (2, 3), 1), mk(L, "float32", (4,), 2), L.empty(5))))
    assert _sweep(torch, cases, rtol=2e-6, half_atol=_alpha_atol(name), device=device) == []


@pytest.mark.oracle
def test_out_resize_warns_like_torch(device, torch):
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        r = npusim.add(npusim.ones(2, 3, device=device), 1, out=npusim.empty(5, device=device))
    assert r.shape == (2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        npusim.add(npusim.ones(2, 3, device=device), 1, out=npusim.empty(0, device=device))  # empty: no warning


REFLECTED = {
    "rsub": lambda L, s, x: s - x,
    "rtruediv": lambda L, s, x: s / x,
    "rpow": lambda L, s, x: s ** x,
    "rfloordiv": lambda L, s, x: s // x,
    "rmod": lambda L, s, x: s % x,
    "radd": lambda L, s, x: s + x,
    "rmul": lambda L, s, x: s * x,
    "rand": lambda L, s, x: s & x,
    "ror": lambda L, s, x: s | x,
    "rsub_fn_alpha": lambda L, s, x: L.rsub(x, s, alpha=2),
    "pow_scalar_base": lambda L, s, x: L.pow(s, x),
    "pow_scalar_base_out": lambda L, s, x: L.pow(s, x, out=L.empty(2, 3)),
    "remainder_scalar_first": lambda L, s, x: L.remainder(s, x),
    "scalar_lt": lambda L, s, x: s < x,
    "scalar_ne": lambda L, s, x: s != x,
}


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(REFLECTED))
def test_reflected_and_scalar_first_forms_match_torch(name, device, torch):
    mk, fn = _maker(device), REFLECTED[name]
    cases = [(f"{name} {s!r} {dt}{shape}", lambda L, s=s, dt=dt, shape=shape: fn(L, s, mk(L, dt, shape, 1)))
             for dt in _sweep_dtypes(device) for s in SCALARS for shape in ((2, 3), ())]
    assert _sweep(torch, cases, rtol=2e-6, device=device) == []


TERNARY = {
    "where_tt": lambda L, x, s: L.where(x > 0 if x.dtype != L.bool else x, x, x * 2),
    "where_ts": lambda L, x, s: L.where(x > 0 if x.dtype != L.bool else x, x, s),
    "where_st": lambda L, x, s: L.where(x > 0 if x.dtype != L.bool else x, s, x),
    "where_ss": lambda L, x, s: L.where(x > 0 if x.dtype != L.bool else x, s, 0),
    "where_method": lambda L, x, s: x.where(x > 0 if x.dtype != L.bool else x, s),
    "where_out": lambda L, x, s: L.where(x > 0 if x.dtype != L.bool else x, x, s, out=L.empty(2, 3, dtype=x.dtype)),
    "clamp_min": lambda L, x, s: L.clamp(x, s),
    "clamp_max": lambda L, x, s: L.clamp(x, max=s),
    "clamp_both": lambda L, x, s: L.clamp(x, s, 3),
    "clip": lambda L, x, s: L.clip(x, s, 4),
    "clamp_method": lambda L, x, s: x.clamp(min=s),
    "clamp_": lambda L, x, s: x.clamp_(s),
    "clamp_out": lambda L, x, s: L.clamp(x, s, out=L.empty(2, 3, dtype=x.dtype)),
    "clamp_min_fn": lambda L, x, s: L.clamp_min(x, s),
    "clamp_max_": lambda L, x, s: x.clamp_max_(s),
    "clamp_tensor_min": lambda L, x, s: L.clamp(x, L.tensor(s)),
    "clamp_tensor_both": lambda L, x, s: L.clamp(x, L.tensor(s), L.tensor([3, 4, 5])),
    "clamp_tensor_": lambda L, x, s: x.clamp_(L.tensor(s)),
    "clamp_tensor_max_method": lambda L, x, s: x.clamp(max=L.tensor([s, s, s])),
    "lerp": lambda L, x, s: L.lerp(x, x * 2, s),
    "lerp_tensor_weight": lambda L, x, s: L.lerp(x, x * 2, L.tensor(s)),
    "lerp_": lambda L, x, s: x.lerp_(x + 1, s),
    "lerp_out": lambda L, x, s: L.lerp(x, x * 2, s, out=L.empty(2, 3, dtype=x.dtype)),
}


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(TERNARY))
def test_where_clamp_lerp_match_torch(name, device, torch):
    mk, fn = _maker(device), TERNARY[name]
    cases = [(f"{name} {dt}{shape} {s!r}", lambda L, dt=dt, s=s, shape=shape: fn(L, mk(L, dt, shape, 1), s))
             for dt in _sweep_dtypes(device) for s in (2, 2.5, True, -1, 0, 300) for shape in ((2, 3), ())]
    assert _sweep(torch, cases, device=device) == []


@pytest.mark.oracle
def test_ternary_errors_match_torch(device, torch):
    mk = _maker(device)
    cases = [
        ("where int condition", lambda L: L.where(mk(L, "int64"), mk(L, "float32"), 0.)),
        ("where float condition", lambda L: L.where(mk(L, "float32"), 1, 0)),
        ("where broadcast", lambda L: L.where(mk(L, "bool", (2,)), mk(L, "float32", (3,)), 0.)),
        ("clamp no bounds", lambda L: L.clamp(mk(L, "float32"))),
        ("clamp bool scalar", lambda L: mk(L, "bool").clamp(True)),
        ("clamp bool both tensors", lambda L: mk(L, "bool").clamp(L.tensor(True), L.tensor(False))),
        ("clamp_ int with float", lambda L: mk(L, "int16").clamp_(0.5)),
        ("clamp_ int with float tensor", lambda L: mk(L, "int16").clamp_(L.tensor(0.5))),
        ("clamp overflow", lambda L: mk(L, "int8").clamp(max=300)),
        ("clamp broadcast", lambda L: L.clamp(mk(L, "float32"), mk(L, "float32", (4,)))),
        ("clamp tensor and number bounds", lambda L: L.clamp(mk(L, "float32"), L.tensor([1.]), 3)),
        ("clamp method number and tensor bounds", lambda L: mk(L, "float32").clamp(1, L.tensor([3.]))),
        ("clamp_ tensor and number bounds", lambda L: mk(L, "float32").clamp_(L.tensor([1.]), 3)),
        ("clamp tensor max only", lambda L: L.clamp(mk(L, "float32"), None, L.tensor([1.]))),
        ("lerp int", lambda L: L.lerp(mk(L, "int64"), mk(L, "int64"), 0.5)),
        ("lerp int tensor weight", lambda L: L.lerp(mk(L, "int64"), mk(L, "int64"), L.tensor(1))),
        ("lerp end dtype", lambda L: L.lerp(mk(L, "float32"), mk(L, "float64"), 0.5)),
        ("lerp weight dtype", lambda L: L.lerp(mk(L, "float32"), mk(L, "float32"), mk(L, "float64", (3,)))),
        ("lerp end half", lambda L: L.lerp(mk(L, "float16"), mk(L, "float32"), 0.5)),
        ("lerp broadcast", lambda L: L.lerp(mk(L, "float32"), mk(L, "float32", (4,)), 0.5)),
        ("lerp_ broadcast into self", lambda L: mk(L, "float32", (3,)).lerp_(mk(L, "float32"), 0.5)),
        ("maximum with a number", lambda L: L.maximum(mk(L, "float32"), 2)),
        ("minimum method with a number", lambda L: mk(L, "float32").minimum(2.5)),
        ("atan2_ with a number", lambda L: mk(L, "float32").atan2_(2)),
        ("logical_and with a number", lambda L: L.logical_and(mk(L, "bool"), True)),
        ("add broadcast", lambda L: mk(L, "float32") + mk(L, "float32", (4,))),
        ("add_ into smaller self", lambda L: mk(L, "float32", (3,)).add_(mk(L, "float32"))),
        ("add_ broadcast error", lambda L: mk(L, "float32", (3,)).add_(mk(L, "float32", (4,)))),
        ("div bad rounding mode", lambda L: L.div(mk(L, "float32"), 2, rounding_mode="round")),
        ("alpha float for ints", lambda L: L.add(mk(L, "int64"), 1, alpha=0.5)),
        ("alpha bool for floats", lambda L: L.add(mk(L, "float32"), 1, alpha=True)),
        ("alpha bool for ints", lambda L: L.sub(mk(L, "int64"), mk(L, "int64"), alpha=True)),
        ("integer to negative power", lambda L: mk(L, "int64") ** -1),
        ("integer to negative power in place", lambda L: mk(L, "int32").pow_(-2)),
        ("int overflow scalar", lambda L: mk(L, "int8") + 2 ** 64),
        ("invert float", lambda L: ~mk(L, "float32")),
        ("positive bool", lambda L: +mk(L, "bool")),
    ]
    assert _sweep(torch, cases, device=device) == []


@pytest.mark.oracle
def test_half_precision_scalar_operands_match_torch_bit_for_bit(device, torch):
    """mul/div read a scalar second operand at float32 precision; add/sub round it to 16 bits first."""
    rng = np.random.default_rng(0)
    vals = (rng.standard_normal(4096) * 10).astype(np.float32)
    for dt in ("float16", "bfloat16"):
        t = torch.tensor(vals).to(getattr(torch, dt))
        n = npusim.tensor(vals, device=device).to(getattr(npusim, dt))
        for s in (-2.37, 0.1234567, 3.3):
            for op in ("add", "sub", "mul", "div", "floor_divide", "remainder"):
                for scalar in (s, "0-dim float64"):
                    ts = s if scalar == s else torch.tensor(s, dtype=torch.float64)
                    ns = s if scalar == s else npusim.tensor(s, dtype=npusim.float64, device=device)
                    expect = getattr(torch, op)(t, ts).float().numpy()
                    got = host(getattr(npusim, op)(n, ns)).astype(np.float32)
                    assert np.array_equal(expect, got, equal_nan=True), (dt, op, s, scalar)


@pytest.mark.oracle
def test_float32_arithmetic_is_exact(device, torch):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 1000)).astype(np.float32)
    ta, tb = torch.tensor(a), torch.tensor(b)
    na, nb = npusim.tensor(a, device=device), npusim.tensor(b, device=device)
    for op in ("add", "sub", "mul", "div", "maximum", "remainder", "fmod"):
        assert np.array_equal(getattr(torch, op)(ta, tb).numpy(), host(getattr(npusim, op)(na, nb))), op
    assert np.array_equal(torch.add(ta, tb, alpha=0.5).numpy(), host(npusim.add(na, nb, alpha=0.5)))


# --- unary ops, against torch --------------------------------------------------------------------------

UNARY = ["exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "sigmoid", "erf",
         "reciprocal", "exp2", "log2", "log10", "sinh", "cosh", "asin", "acos", "atan", "neg", "abs", "floor",
         "ceil", "trunc", "sign", "sgn", "bitwise_not", "isnan", "isinf", "isfinite", "logical_not", "round",
         "square", "relu", "nan_to_num", "negative", "absolute", "fix", "arcsin", "arccos", "arctan"]


def _unary_data(L, dt, special, device):
    if special:
        vals = [[float("nan"), float("inf"), -float("inf")], [0.0, -0.0, 0.5], [-2.5, 1e-3, 100.0], [3.5, -0.5, 1.5]]
        if L is npusim:
            return npusim.tensor(vals, dtype=getattr(npusim, dt), device=device)
        return L.tensor(vals, dtype=getattr(L, dt))
    return _maker(device)(L, dt, (3, 4), 3)


@pytest.mark.oracle
@pytest.mark.parametrize("op", UNARY)
def test_unary_matches_torch(op, device, torch):
    cases = []
    for dt in _sweep_dtypes(device):
        for special in (False, True) if dt in FLOATS else (False,):
            tag = f"{op} {dt}{' special values' if special else ''}"

            def data(L, dt=dt, special=special):
                return _unary_data(L, dt, special, device)
            cases += [
                (f"{tag} functional", lambda L, data=data: getattr(L, op)(data(L))),
                (f"{tag} method", lambda L, data=data: getattr(data(L), op)()),
                (f"{tag} in-place", lambda L, data=data: getattr(data(L), op + "_")()),
                (f"{tag} 0-dim", lambda L, data=data: getattr(L, op)(data(L)[1, 2])),
                (f"{tag} empty", lambda L, data=data: getattr(L, op)(data(L)[:0])),
                (f"{tag} transposed", lambda L, data=data: getattr(L, op)(data(L).t())),
            ]
            for od in ("bool", "int64", "float16", "float32", "float64"):
                cases.append((f"{tag} out={od}", lambda L, data=data, od=od: getattr(L, op)(
                    data(L), out=L.empty(data(L).shape, dtype=getattr(L, od)))))
    assert _sweep(torch, cases, rtol=2e-6, device=device) == []


@pytest.mark.oracle
def test_round_decimals_and_nan_to_num_arguments_match_torch(device, torch):
    cases = []
    for dt in _sweep_dtypes(device):
        for dec in (1, -1, 2, 0):
            cases.append((f"round {dt} decimals={dec}", lambda L, dt=dt, dec=dec: L.round(
                _unary_data(L, dt, False, device) * (10 if dt != "bool" else 1), decimals=dec)))
            cases.append((f"round_ {dt} decimals={dec}",
                          lambda L, dt=dt, dec=dec: _unary_data(L, dt, False, device).round_(decimals=dec)))
    for dt in FLOATS:
        cases += [
            (f"nan_to_num {dt}", lambda L, dt=dt: L.nan_to_num(_unary_data(L, dt, True, device), nan=1.5, posinf=2.0,
                                                                neginf=-3.0)),
            (f"nan_to_num_ {dt}", lambda L, dt=dt: _unary_data(L, dt, True, device).nan_to_num_(nan=1.5, posinf=2.0)),
            (f"nan_to_num huge {dt}", lambda L, dt=dt: _unary_data(L, dt, True, device).nan_to_num(nan=1e300)),
        ]
    assert _sweep(torch, cases, device=device) == []


# --- the same behaviour against NumPy and torch's documented messages (no torch needed) -----------------

def test_arithmetic_matches_numpy(device):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4,)).astype(np.float32) + 3
    x, y = npusim.tensor(a, device=device), npusim.tensor(b, device=device)
    np.testing.assert_array_equal(host(x + y), a + b)
    np.testing.assert_array_equal(host(x - y), a - b)
    np.testing.assert_array_equal(host(x * y), a * b)
    np.testing.assert_allclose(host(x / y), a / b, rtol=1e-6)
    np.testing.assert_allclose(host(x ** 2), a ** 2, rtol=1e-6)
    np.testing.assert_array_equal(host(npusim.add(x, y, alpha=2)), a + np.float32(2) * b)
    np.testing.assert_array_equal(host(npusim.maximum(x, y)), np.maximum(a, b))
    np.testing.assert_allclose(host(npusim.atan2(x, y)), np.arctan2(a, b), rtol=1e-6)
    np.testing.assert_array_equal(host(x % y), np.remainder(a, b))
    np.testing.assert_array_equal(host(npusim.fmod(x, y)), np.fmod(a, b))
    np.testing.assert_array_equal(host(x // y), np.floor_divide(a, b))
    np.testing.assert_array_equal(host(npusim.div(x, y, rounding_mode="trunc")), np.trunc(a / b))
    np.testing.assert_array_equal(host(x > y), a > b)
    np.testing.assert_array_equal(host(2 - x), 2 - a)
    np.testing.assert_allclose(host(2 / x), 2 / a, rtol=1e-6)
    np.testing.assert_allclose(host(2 ** x), 2 ** a, rtol=1e-6)


def test_float_remainder_zero_keeps_the_dividends_sign_as_torchs(device):
    # torch computes fmod(a, b) and moves a nonzero result into b's sign; NumPy gives every zero b's sign
    a = np.array([-0.0, 0.0, -4.0, 4.0, 5.5, -5.5, -6.0], np.float32)
    b = np.array([2.0, -2.0, 2.0, -2.0, 2.0, 2.0, -3.0], np.float32)
    want = np.array([-0.0, 0.0, -0.0, 0.0, 1.5, 0.5, -0.0], np.float32)
    for dt in (npusim.float32, npusim.float64, npusim.float16, npusim.bfloat16):
        x, y = npusim.tensor(a, device=device).to(dt), npusim.tensor(b, device=device).to(dt)
        for got in (x % y, npusim.remainder(x, y, out=npusim.empty_like(x)), x.clone().remainder_(y)):
            got = host(got.float())
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    got = host(npusim.remainder(npusim.tensor(a[:4], device=device), 2.0))
    np.testing.assert_array_equal(np.signbit(got), [True, False, True, False])


def test_unary_matches_numpy(device):
    a = np.linspace(-0.9, 0.9, 13).astype(np.float32)
    x = npusim.tensor(a, device=device)
    for name, ref in [("exp", np.exp), ("sin", np.sin), ("tanh", np.tanh), ("asin", np.arcsin), ("abs", np.abs),
                      ("neg", np.negative), ("floor", np.floor), ("ceil", np.ceil), ("trunc", np.trunc),
                      ("expm1", np.expm1), ("log1p", np.log1p), ("atan", np.arctan), ("exp2", np.exp2)]:
        np.testing.assert_allclose(host(getattr(npusim, name)(x)), ref(a), rtol=2e-6, err_msg=name)
    np.testing.assert_allclose(host(npusim.sigmoid(x)), 1 / (1 + np.exp(-a)), rtol=1e-6)
    np.testing.assert_allclose(host(npusim.rsqrt(x.abs())), 1 / np.sqrt(np.abs(a)), rtol=1e-6)
    from math import erf
    np.testing.assert_allclose(host(npusim.erf(x)), [erf(v) for v in a.tolist()], rtol=1e-6)
    # torch's sign: sign(nan) and sign(-0.0) are 0, not nan or -0.0
    s = host(npusim.sign(npusim.tensor([float("nan"), -0.0, -2.0, 3.0], device=device)))
    assert s.tolist() == [0.0, 0.0, -1.0, 1.0] and not np.signbit(s[1])
    # round ties to even, with decimals through x * 10**d
    r = npusim.round(npusim.tensor([0.5, 1.5, 2.5, -0.5, 1.25], device=device))
    assert host(r).tolist() == [0.0, 2.0, 2.0, -0.0, 1.0]
    assert host(npusim.round(npusim.tensor([1.25, 12.5], device=device), decimals=-1)).tolist() == [0.0, 10.0]


def test_result_dtypes(device):
    i8 = npusim.ones(3, dtype=npusim.int8, device=device)
    u8 = npusim.ones(3, dtype=npusim.uint8, device=device)
    b = npusim.ones(3, dtype=npusim.bool, device=device)
    h = npusim.ones(3, dtype=npusim.float16, device=device)
    assert (i8 + u8).dtype is npusim.int16
    assert (i8 + 1000).dtype is npusim.int8  # a Python int does not widen an int tensor
    assert (i8 + 2.5).dtype is npusim.float32
    assert (b + 1).dtype is npusim.int64
    assert (b + b).dtype is npusim.bool
    assert (h + npusim.tensor(1.0, dtype=npusim.float64, device=device)).dtype is npusim.float16  # 0-dim ranks lower
    assert (i8 + npusim.tensor(1.0, dtype=npusim.float64, device=device)).dtype is npusim.float64
    assert (i8 / i8).dtype is npusim.float32
    assert npusim.atan2(i8, i8).dtype is npusim.float32
    assert (i8 // u8).dtype is npusim.int16
    assert (i8 < 2.5).dtype is npusim.bool
    assert npusim.where(b, 1, 0).dtype is npusim.int64
    assert npusim.where(b, 1.0, 0).dtype is npusim.float32
    assert npusim.where(b, i8, 2.5).dtype is npusim.float32
    assert npusim.clamp(i8, 0.5).dtype is npusim.float32
    assert (u8 ** 2).dtype is npusim.uint8 and (b ** 2).dtype is npusim.int64 and (b ** True).dtype is npusim.bool
    assert npusim.square(b).dtype is npusim.int64
    assert npusim.exp(i8).dtype is npusim.float32 and npusim.neg(i8).dtype is npusim.int8
    assert npusim.isnan(h).dtype is npusim.bool


def test_square_out_and_sgn_in_place_are_aten_ops(device):
    aten = npusim.ops.aten
    x = npusim.tensor([-2.0, 0.0, 3.0], device=device, requires_grad=True)
    out = npusim.empty(3, dtype=npusim.int64, device=device)
    assert aten.square.out(npusim.tensor([True, False, True], device=device), out=out) is out
    assert host(out).tolist() == [1, 0, 1]
    y = x.clone()
    assert aten.sgn_.default(y) is y and host(y.detach()).tolist() == [-1.0, 0.0, 1.0]
    y.sum().backward()   # sgn is piecewise constant: a zero gradient, not an error
    assert host(x.grad).tolist() == [0.0, 0.0, 0.0]


def test_default_dtype_decides_integer_to_float_results(device):
    i = npusim.ones(2, dtype=npusim.int32, device=device)
    npusim.set_default_dtype(npusim.float64)
    try:
        assert (i / 2).dtype is npusim.float64
        assert (i * 0.5).dtype is npusim.float64
        assert npusim.sqrt(i).dtype is npusim.float64
    finally:
        npusim.set_default_dtype(npusim.float32)


def test_integer_division_by_zero_raises(device):
    x = npusim.tensor([1, 2, 3], device=device)
    z = npusim.tensor([1, 0, 1], device=device)
    for fn in (lambda: x // 0, lambda: x % z, lambda: npusim.fmod(x, 0), lambda: npusim.div(x, z, rounding_mode="trunc"),
               lambda: npusim.div(x, 0, rounding_mode="floor"), lambda: x.remainder_(0), lambda: x.floor_divide_(z)):
        with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
            fn()
    # true division promotes to float: inf and nan, no error
    assert host(x / 0).tolist() == [float("inf")] * 3
    f = host(npusim.tensor([1.0, -1.0, 0.0], device=device) // 0.0)
    assert f[0] == np.inf and f[1] == -np.inf and np.isnan(f[2])


def test_integer_pow_with_negative_exponents(device):
    base = npusim.tensor([0, 1, -1, 2, -2], device=device)
    assert host(base ** npusim.tensor([-1], device=device)).tolist() == [0, 1, -1, 0, 0]
    assert host(base ** npusim.tensor(-2, device=device)).tolist() == [0, 1, 1, 0, 0]
    assert host(npusim.pow(2, npusim.tensor([-1, 0, 3], device=device))).tolist() == [0, 1, 8]
    with pytest.raises(RuntimeError, match="^Integers to negative integer powers are not allowed.$"):
        base ** -1
    assert host(base ** -1.0).dtype == np.float32


def test_bool_special_cases(device):
    b = npusim.tensor([True, False], device=device)
    with pytest.raises(RuntimeError, match=r"^Subtraction, the `-` operator, with two bool tensors is not supported. "
                                           r"Use the `\^` or `logical_xor\(\)` operator instead.$"):
        b - b
    with pytest.raises(RuntimeError, match=r"^Subtraction, the `-` operator, with a bool tensor is not supported. "
                                           r"If you are trying to invert a mask, use the `~` or `logical_not\(\)` "
                                           r"operator instead.$"):
        1 - b
    with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
        npusim.ones(2, device=device).sub_(b)
    with pytest.raises(RuntimeError, match=r"^Negation, the `-` operator, on a bool tensor is not supported."):
        -b
    with pytest.raises(RuntimeError, match=r"^The `\+` operator, on a bool tensor is not supported.$"):
        +b
    with pytest.raises(NotImplementedError, match="^\"abs_cpu\" not implemented for 'Bool'$"):
        abs(b)
    with pytest.raises(NotImplementedError, match="^\"pow\" not implemented for 'Bool'$"):
        b ** b
    with pytest.raises(NotImplementedError, match="^\"div_floor_cpu\" not implemented for 'Bool'$"):
        b // b
    with pytest.raises(RuntimeError, match="^Boolean inputs not supported for relu$"):
        npusim.relu(b)
    assert host(b + b).tolist() == [True, False] and host(b * True).tolist() == [True, False]
    assert host(~b).tolist() == [False, True] and host(b ^ True).tolist() == [False, True]
    assert host(b ** False).tolist() == [True, True]


def test_inplace_cast_errors(device):
    i = npusim.ones(3, dtype=npusim.int64, device=device)
    for fn, name in [(lambda: i.add_(1.5), "Float"), (lambda: i.div_(2), "Float"), (lambda: i.mul_(npusim.ones(3)), "Float"),
                     (lambda: i.exp_(), "Float"), (lambda: i.atan2_(i), "Float"),
                     (lambda: npusim.ones(3, dtype=npusim.bool, device=device).add_(1), "Long")]:
        with pytest.raises(RuntimeError, match=f"^result type {name} can't be cast to the desired output type "):
            fn()
    with pytest.raises(RuntimeError, match=r"^output with shape \[3\] doesn't match the broadcast shape \[2, 3\]$"):
        i.add_(npusim.ones(2, 3, dtype=npusim.int64, device=device))
    with pytest.raises(RuntimeError, match="^result type Float can't be cast to the desired output type long int$"):
        i.clamp_(0.5)
    with pytest.raises(RuntimeError, match="^Found dtype Double but expected Float$"):
        npusim.abs(npusim.ones(2, device=device), out=npusim.empty(2, dtype=npusim.float64, device=device))
    # same-kind results are cast into self
    f = npusim.ones(3, dtype=npusim.float16, device=device)
    f.add_(npusim.ones(3, dtype=npusim.float64, device=device))
    assert f.dtype is npusim.float16 and host(f).tolist() == [2.0] * 3
    i.eq_(1)
    assert i.dtype is npusim.int64 and host(i).tolist() == [1, 1, 1]


def test_broadcast_error_message(device):
    a = npusim.ones(2, 3, device=device)
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(3\) must match the size of tensor b \(4\) at "
                                           r"non-singleton dimension 1$"):
        a + npusim.ones(4, device=device)
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(5\) must match the size of tensor b \(3\) at "
                                           r"non-singleton dimension 1$"):
        npusim.where(npusim.ones(5, dtype=npusim.bool, device=device), a, 0.0)
    assert (a + npusim.ones(4, 1, 1, device=device)).shape == (4, 2, 3)
    # torch compares from the last dim: with several mismatches, the rightmost is named
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(4\) must match the size of tensor b \(6\) at "
                                           r"non-singleton dimension 2$"):
        npusim.ones(2, 3, 4, device=device) + npusim.ones(5, 3, 6, device=device)
    # shapes join in turn: the dim is numbered in the shape broadcast so far
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(3\) must match the size of tensor b \(4\) at "
                                           r"non-singleton dimension 1$"):
        npusim.where(a > 0, npusim.ones(4, device=device), npusim.ones(5, 1, 1, device=device))


BROADCAST_SHAPES = [((2,), (3, 1), (1, 1, 1)), (), (3, (2, 1)), ((2, 3), None), ([2, 3], [1]), ((1,), (0,)),
                    ((2, 3), (3, 2)), ((2, 3, 4), (5, 3, 6)), ((-1,),), ((2,), (-1,)), ((2, 3), (2,), (5, 1, 1))]


@pytest.mark.oracle
@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=str)
def test_broadcast_shapes_like_torch(shapes, torch):
    def run(L):
        try:
            return tuple(L.broadcast_shapes(*shapes))
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            return type(e).__name__, str(e)
    assert run(npusim) == run(torch)


def test_broadcast_shapes_results_and_errors():
    assert npusim.broadcast_shapes((2,), (3, 1), (1, 1, 1)) == npusim.Size([1, 3, 2])
    assert npusim.broadcast_shapes() == npusim.Size([])
    assert npusim.broadcast_shapes(3, None, (2, 1)) == (2, 3)
    with pytest.raises(RuntimeError, match=re.escape(
            "Attempting to broadcast a dimension of length 2 at -1! Mismatching argument at index 1 had (3, 2); but "
            "expected shape should be broadcastable to [2, 3]")):
        npusim.broadcast_shapes((2, 3), (3, 2))
    with pytest.raises(ValueError, match="Attempting to broadcast a dimension with negative length!"):
        npusim.broadcast_shapes((-1,))
    with pytest.raises(RuntimeError, match="Input shapes should be of type ints, a tuple of ints, or a list of ints"):
        npusim.broadcast_shapes(2.5)


def test_scalar_overflow_errors(device):
    x = npusim.ones(2, dtype=npusim.int8, device=device)
    assert host(x + 300).tolist() == [45, 45]  # a wrapped number wraps, as in torch's kernels
    assert host(x == 257).tolist() == [True, True]
    with pytest.raises(OverflowError, match="^int too big to convert$"):
        x + 2 ** 64
    with pytest.raises(RuntimeError, match="^value cannot be converted to type int8_t without overflow$"):
        npusim.clamp(x, max=300)
    with pytest.raises(RuntimeError, match="^value cannot be converted to type int8_t without overflow$"):
        npusim.where(x > 0, x, 300)
    with pytest.raises(RuntimeError, match="^value cannot be converted to type c10::Half without overflow$"):
        npusim.ones(2, dtype=npusim.float16, device=device).clamp(70000)


# numbers written into a tensor (fill_, full, masked_fill_, setitem, clamp_): c10's checked conversion, one rule
CHECKED_WRITES = {
    "fill_": lambda L, dt, v: L.zeros(2, dtype=dt).fill_(v),
    "full": lambda L, dt, v: L.full((2,), v, dtype=dt),
    "masked_fill_": lambda L, dt, v: L.zeros(2, dtype=dt).masked_fill_(L.tensor([True, False]), v),
    "setitem": lambda L, dt, v: L.zeros(2, dtype=dt).__setitem__(0, v),
    "clamp_": lambda L, dt, v: L.zeros(2, dtype=dt).clamp_(min=v),
}


@pytest.mark.oracle
@pytest.mark.parametrize("op", sorted(CHECKED_WRITES))
def test_numbers_written_into_tensors_are_checked_like_torch(op, torch):
    def run(L, dt, v):
        try:
            r = CHECKED_WRITES[op](L, getattr(L, dt), v)
            return None if r is None else str(r.tolist())   # as text: NaN compares equal
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            return type(e).__name__, str(e)
    values = [-1, -256, 256, -1.0, -0.5, 255.5, float("nan"), float("inf"), 1e39, True, 2 ** 62]
    if op != "clamp_":   # torch's argument parser refuses ints past uint64 before clamp_ checks anything
        values.append(2 ** 64)
    cases = [(dt, v) for dt in ("uint8", "int8", "int64", "float16", "float32", "bool") for v in values]
    assert [(dt, v, run(npusim, dt, v)) for dt, v in cases] == [(dt, v, run(torch, dt, v)) for dt, v in cases]


def test_negative_floats_are_refused_by_unsigned_writes(device):
    x = npusim.zeros(2, dtype=npusim.uint8, device=device)
    assert host(x.fill_(-1)).tolist() == [255, 255]   # an int wraps
    with pytest.raises(RuntimeError, match="^value cannot be converted to type uint8_t without overflow$"):
        x.fill_(-1.0)   # a float must lie within the range
    with pytest.raises(OverflowError, match="^int too big to convert$"):
        npusim.full((2,), 2 ** 64, dtype=npusim.uint8, device=device)
    with pytest.raises(RuntimeError, match="^result type Float can't be cast to the desired output type int$"):
        npusim.zeros(2, dtype=npusim.int32, device=device).clamp_(min=1e39)


def test_tensor_only_arguments_refuse_numbers(device):
    x = npusim.ones(2, device=device)
    with pytest.raises(TypeError, match=r"^maximum\(\): argument 'other' \(position 2\) must be Tensor, not int$"):
        npusim.maximum(x, 2)
    with pytest.raises(TypeError, match=r"^atan2_\(\): argument 'other' \(position 1\) must be Tensor, not float$"):
        x.atan2_(2.0)
    with pytest.raises(TypeError, match=r"^logical_or\(\): argument 'other' \(position 2\) must be Tensor, not bool$"):
        npusim.logical_or(x, True)
    with pytest.raises(TypeError, match=r"^add\(\): argument 'input' \(position 1\) must be Tensor, not str$"):
        npusim.add("1", x)
    # torch 2.13's parser takes a number as add/sub/mul/div/floor_divide's input (a 0-d tensor that promotes as
    # the number would)
    assert npusim.add(1, x).tolist() == [2.0, 2.0] and npusim.add(1, x).device == x.device
    assert npusim.add(1, npusim.ones(2, dtype=npusim.int32, device=device)).dtype is npusim.int32
    assert npusim.div(1, npusim.arange(1, 3, device=device)).tolist() == [1.0, 0.5]
    with pytest.raises(TypeError, match="^~ \\(operator.invert\\) is only implemented on integer and Boolean-type"):
        ~x
    with pytest.raises(NotImplementedError, match="^\"bitwise_and_cpu\" not implemented for 'Float'$"):
        x & 1
    assert (x == None) is False  # noqa: E711 - comparisons with non-numbers fall back to identity


def test_versions_and_identity_of_inplace_results(device):
    x = npusim.zeros(3, device=device)
    v = x[1:]
    y = x.add_(1)
    assert y is x and x._version == 1 and v._version == 1
    x.mul_(2)
    x += 1
    x.clamp_(max=2.5)
    x.lerp_(npusim.ones(3, device=device), 0.5)
    x.exp_()
    assert x._version == 6
    assert host(v).tolist() == host(x)[1:].tolist()
    out = npusim.empty(3, device=device)
    r = npusim.mul(x, 2, out=out)
    assert r is out and out._version == 1


def test_writes_into_expanded_tensors_are_refused(device):
    base = npusim.ones(3, 1, device=device)
    e = base.expand(3, 4)
    for write in (lambda: e.add_(1), lambda: e.exp_(), lambda: e.mul_(e), lambda: e.neg_(), lambda: e.clamp_(0, 1)):
        with pytest.raises(RuntimeError, match="^unsupported operation: more than one element of the written-to "
                                               "tensor refers to a single memory location"):
            write()
    e.fill_(2)  # every alias receives the same value: allowed, as in torch
    assert host(base).tolist() == [[2.0]] * 3
    e.zero_()
    assert host(base).tolist() == [[0.0]] * 3


def test_nan_propagation(device):
    n = float("nan")
    x = npusim.tensor([n, 1.0, 2.0], device=device)
    assert np.isnan(host(npusim.maximum(x, npusim.zeros(3, device=device)))[0])
    assert np.isnan(host(x.clamp(0, 1))[0])
    assert np.isnan(host(npusim.ones(3, device=device).clamp(min=n))).all()
    assert host(npusim.nan_to_num(x)).tolist() == [0.0, 1.0, 2.0]
    big = host(npusim.nan_to_num(npusim.tensor([float("inf"), -float("inf")], dtype=npusim.float16, device=device)))
    assert big.tolist() == [65504.0, -65504.0]


def test_lerp_hits_end_points_exactly(device):
    a = npusim.tensor([0.1, 1e8, -3.3], device=device)
    b = npusim.tensor([7.7, -2.0, 1e-8], device=device)
    assert host(npusim.lerp(a, b, 1.0)).tolist() == host(b).tolist()
    assert host(npusim.lerp(a, b, 0.0)).tolist() == host(a).tolist()
    w = npusim.tensor([0.0, 1.0, 0.5], device=device)
    np.testing.assert_allclose(host(a.lerp(b, w)), [0.1, -2.0, -1.65], rtol=1e-6)


def test_where_with_uint8_condition_warns(device):
    c = npusim.tensor([1, 0], dtype=npusim.uint8, device=device)
    with pytest.warns(UserWarning, match="where received a uint8 condition tensor"):
        r = npusim.where(c, npusim.tensor([1, 2], device=device), npusim.tensor([3, 4], device=device))
    assert host(r).tolist() == [1, 4]
    with pytest.raises(RuntimeError, match="^where expected condition to be a boolean tensor, but got a tensor with "
                                           "dtype Float$"):
        npusim.where(npusim.ones(2, device=device), 1, 0)


def test_aten_overloads_are_callable_directly(device):
    aten = npusim.ops.aten
    x = npusim.tensor([1.0, 2.0], device=device)
    assert host(aten.add.Scalar(x, 2, 3)).tolist() == [7.0, 8.0]
    assert host(aten.rsub.Scalar(x, 1)).tolist() == [0.0, -1.0]
    assert host(aten.pow.Scalar(2, x)).tolist() == [2.0, 4.0]
    assert host(aten.div.Tensor_mode(x, 0.75, rounding_mode="floor")).tolist() == [1.0, 2.0]
    assert host(aten.where.ScalarOther(x > 1, x, 0.0)).tolist() == [0.0, 2.0]
    assert host(aten.clamp.Tensor(x, npusim.tensor(1.5, device=device))).tolist() == [1.5, 2.0]
