"""How far apart two draws of the same op are: ulps between floats, equality elsewhere, per catalogue kind."""
from __future__ import annotations

import numpy as np

from .rng_catalogue import BITWISE, LOG_NORMAL, RARE, SAMPLER

# docs/random.md: float64 results within 8 ulp; results rounded to a narrower float within 1 ulp.
FLOAT64_ULPS, NARROW_ULPS = 8, 1
RARE_SHARE = 0.001          # near-ties: at most 0.1% of the values may differ
SAMPLER_SHARE = 0.90        # a flipped rejection decision may change up to the rejected share of values

_UINT_OF_SIZE = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Representable floats between ``a`` and ``b`` elementwise (as uint64; NaN against NaN is 0)."""
    bits = _UINT_OF_SIZE[a.dtype.itemsize]
    sign = np.uint64(1) << np.uint64(8 * a.dtype.itemsize - 1)
    ua, ub = a.view(bits).astype(np.uint64), b.view(bits).astype(np.uint64)
    sa, sb = (ua & sign) != 0, (ub & sign) != 0
    ma, mb = ua & ~sign, ub & ~sign
    dist = np.where(sa == sb, np.maximum(ma, mb) - np.minimum(ma, mb), ma + mb)
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    both_nan, one_nan = np.isnan(fa) & np.isnan(fb), np.isnan(fa) ^ np.isnan(fb)
    dist = np.where(both_nan, np.uint64(0), dist)
    return np.where(one_nan, np.uint64(np.iinfo(np.uint64).max), dist)


def _is_float(a: np.ndarray) -> bool:
    return a.dtype.kind == "f" or a.dtype.name == "bfloat16"


def allowed_ulps(kind: str, expected: np.ndarray) -> np.ndarray | int:
    if expected.dtype != np.float64:
        return NARROW_ULPS
    if kind == LOG_NORMAL:      # exp() turns an absolute error of its argument into a relative one
        with np.errstate(divide="ignore"):
            return np.maximum(1.0, np.abs(np.log(np.abs(expected)))) * FLOAT64_ULPS
    return FLOAT64_ULPS


def compare(kind: str, emulated: dict, cuda: dict) -> dict:
    """The comparison of one draw: counts, the worst distance and whether the kind's bound holds."""
    if "error" in emulated or "error" in cuda:
        return {"kind": kind, "ok": False, "compared": 0,
                "why": f"emulation: {emulated.get('error', 'ok')}; cuda: {cuda.get('error', 'ok')}"}
    a, b = emulated["values"], cuda["values"]
    row = {"kind": kind, "dtype": str(a.dtype), "compared": int(a.size),
           "state_equal": emulated["state"] == cuda["state"]}
    if a.shape != b.shape or a.dtype != b.dtype:
        return {**row, "ok": False, "why": f"emulation gave {a.dtype}{a.shape}, cuda {b.dtype}{b.shape}"}
    if _is_float(a):
        dist = ulp_distance(a, b)
        row["max_ulps"] = int(dist.max()) if dist.size else 0
        if kind == BITWISE:     # the same bits: -0.0 is not 0.0 here
            bits = _UINT_OF_SIZE[a.dtype.itemsize]
            within = a.view(bits) == b.view(bits)
        else:
            within = dist <= allowed_ulps(kind, a)
    else:
        within = a == b
    row["differing"] = int(a.size - np.count_nonzero(within))
    if kind == SAMPLER:
        row["ok"] = bool(np.count_nonzero(within) >= SAMPLER_SHARE * a.size)
    elif kind == RARE:
        row["ok"] = bool(row["differing"] <= max(1, RARE_SHARE * a.size) and row["state_equal"])
    else:
        row["ok"] = bool(row["differing"] == 0 and row["state_equal"])
    if not row["ok"]:
        row["why"] = (f"{row['differing']} of {a.size} values beyond the {kind} bound"
                      + ("" if row["state_equal"] else "; generator offsets differ"))
    return row
