"""Type promotion: promote_types, can_cast, result_type, the default dtype, finfo and iinfo.

The reference is PyTorch's promotion table (written out below, so the tests run without torch)
and torch itself for the oracle tests. Property tests draw random mixes of dimensioned tensors,
0-dim tensors and Python numbers.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import npusim
from conftest import host

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
_ABBREV = {"b1": "bool", "u1": "uint8", "i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64",
           "f2": "float16", "bf": "bfloat16", "f4": "float32", "f8": "float64"}
# torch.promote_types(row, column), PyTorch 2.13
_TABLE = """
        b1  u1  i1  i2  i4  i8  f2  bf  f4  f8
    b1  b1  u1  i1  i2  i4  i8  f2  bf  f4  f8
    u1  u1  u1  i2  i2  i4  i8  f2  bf  f4  f8
    i1  i1  i2  i1  i2  i4  i8  f2  bf  f4  f8
    i2  i2  i2  i2  i2  i4  i8  f2  bf  f4  f8
    i4  i4  i4  i4  i4  i4  i8  f2  bf  f4  f8
    i8  i8  i8  i8  i8  i8  i8  f2  bf  f4  f8
    f2  f2  f2  f2  f2  f2  f2  f2  f4  f4  f8
    bf  bf  bf  bf  bf  bf  bf  f4  bf  f4  f8
    f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  f8
    f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8
"""
PROMOTE = {}
_rows = [line.split() for line in _TABLE.strip().splitlines()]
for _row in _rows[1:]:
    for _col, _res in zip(_rows[0], _row[1:]):
        PROMOTE[_ABBREV[_row[0]], _ABBREV[_col]] = _ABBREV[_res]
_CATEGORY = {n: 0 if n == "bool" else (2 if n.startswith(("float", "bfloat")) else 1) for n in NAMES}


def _dt(name):
    return getattr(npusim, name)


def test_promote_types_follows_torchs_table():
    for (a, b), r in PROMOTE.items():
        assert npusim.promote_types(_dt(a), _dt(b)) is _dt(r), (a, b)


def test_can_cast_is_torchs_same_kind_rule():
    for a in NAMES:
        for b in NAMES:
            expected = _CATEGORY[a] <= _CATEGORY[b]  # no float -> integral, no non-bool -> bool
            assert npusim.can_cast(_dt(a), _dt(b)) is expected, (a, b)


# --- result_type: a reference model of torch's rules ------------------------------------------------------
# operands are ("tensor", dtype), ("zero-dim", dtype) or ("number", value)

def _number_dtype(v):
    if isinstance(v, bool):
        return "bool"
    return "int64" if isinstance(v, int) else npusim.get_default_dtype().name


def _reference_result_type(operands):
    """Dimensioned tensors outrank 0-dim tensors, which outrank numbers; a lower rank only counts when
    its category (bool < integral < floating) is higher."""
    states = {}
    for kind, v in operands:
        name = _number_dtype(v) if kind == "number" else v
        states[kind] = name if kind not in states else PROMOTE[states[kind], name]

    def combine(higher, lower):
        if higher is None:
            return lower
        if lower is None or _CATEGORY[higher] >= _CATEGORY[lower]:
            return higher
        return PROMOTE[higher, lower]
    r = combine(states.get("tensor"), combine(states.get("zero-dim"), states.get("number")))
    return npusim.get_default_dtype().name if r is None else r


def _build(lib, operand, device="cpu"):
    kind, v = operand
    if kind == "number":
        return v
    shape = (2,) if kind == "tensor" else ()
    if lib is npusim:
        return npusim.ones(shape, dtype=_dt(v), device=device)
    return lib.ones(shape, dtype=getattr(lib, v))


operand_strategy = st.one_of(
    st.tuples(st.just("tensor"), st.sampled_from(NAMES)),
    st.tuples(st.just("zero-dim"), st.sampled_from(NAMES)),
    st.tuples(st.just("number"), st.one_of(st.booleans(), st.integers(-5, 5), st.floats(-5, 5, allow_nan=False))),
)
pairs = st.tuples(operand_strategy, operand_strategy)


@settings(max_examples=300, deadline=None)
@given(pairs)
def test_result_type_follows_the_reference_model(pair):
    a, b = pair
    expected = _reference_result_type([a, b])
    assert npusim.result_type(_build(npusim, a), _build(npusim, b)) is _dt(expected)


@settings(max_examples=200, deadline=None)
@given(pairs)
def test_ops_compute_in_result_type(pair):
    a, b = pair
    if a[0] == "number" and b[0] == "number":
        return
    x, y = _build(npusim, a), _build(npusim, b)
    expected = _dt(_reference_result_type([a, b]))
    r = x + y if isinstance(x, npusim.Tensor) else y + x
    assert r.dtype is expected
    assert npusim.where(npusim.tensor(True), x, y).dtype is expected
    assert (x == y if isinstance(x, npusim.Tensor) else y == x).dtype is npusim.bool


@pytest.mark.oracle
def test_promote_types_and_can_cast_match_torch(torch):
    for a in NAMES:
        for b in NAMES:
            ta, tb = getattr(torch, a), getattr(torch, b)
            assert npusim.promote_types(_dt(a), _dt(b)).name == str(torch.promote_types(ta, tb)).split(".")[1]
            assert npusim.can_cast(_dt(a), _dt(b)) == torch.can_cast(ta, tb)


@pytest.mark.oracle
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pairs, st.sampled_from(["float32", "float64", "float16", "bfloat16"]))
def test_result_type_matches_torch(torch, pair, default):
    a, b = pair
    if a[0] == "number" and b[0] == "number":
        return
    npusim.set_default_dtype(_dt(default))
    torch.set_default_dtype(getattr(torch, default))
    try:
        expected = str(torch.result_type(_build(torch, a), _build(torch, b))).split(".")[1]
        assert npusim.result_type(_build(npusim, a), _build(npusim, b)).name == expected
        # ops compute in that dtype too
        ta, na = _build(torch, a), _build(npusim, a)
        tb, nb = _build(torch, b), _build(npusim, b)
        if isinstance(na, npusim.Tensor):
            assert npusim.maximum(na, nb if isinstance(nb, npusim.Tensor) else npusim.tensor(nb)).dtype.name == \
                str(torch.maximum(ta, tb if isinstance(tb, torch.Tensor) else torch.tensor(tb)).dtype).split(".")[1]
            assert (na * nb).dtype.name == str((ta * tb).dtype).split(".")[1]
            assert (na == nb).dtype is npusim.bool
    finally:
        npusim.set_default_dtype(npusim.float32)
        torch.set_default_dtype(torch.float32)


def test_result_type_with_devices(device):
    x = npusim.ones(2, dtype=npusim.int16, device=device)
    assert npusim.result_type(x, 2.5) is npusim.float32
    assert npusim.result_type(x, npusim.tensor(1, dtype=npusim.int64)) is npusim.int16  # 0-dim cpu operand
    assert npusim.result_type(2, 3) is npusim.int64
    assert npusim.result_type(True, 2.5) is npusim.float32
    assert (x + npusim.tensor(1.5, dtype=npusim.float64)).device == x.device


def test_default_dtype():
    assert npusim.get_default_dtype() is npusim.float32
    for d in (npusim.float64, npusim.float16, npusim.bfloat16):
        npusim.set_default_dtype(d)
        try:
            assert npusim.get_default_dtype() is d
            assert npusim.tensor([1.5]).dtype is d
            assert npusim.tensor([1]).dtype is npusim.int64
            assert npusim.zeros(2).dtype is d and npusim.arange(0.5).dtype is d
            assert (npusim.tensor([1]) * 0.5).dtype is d
            assert npusim.result_type(1, 2.0) is d
        finally:
            npusim.set_default_dtype(npusim.float32)


def test_promotion_argument_errors():
    with pytest.raises(TypeError, match=r"^promote_types\(\): argument 'type2' \(position 2\) must be npusim.dtype, "
                                        r"not str$"):
        npusim.promote_types(npusim.float32, "a")
    with pytest.raises(TypeError, match=r"^promote_types\(\): argument 'type1' \(position 1\) must be npusim.dtype, "
                                        r"not int$"):
        npusim.promote_types(1, npusim.float32)
    with pytest.raises(TypeError, match=r"^can_cast\(\): argument 'to' \(position 2\) must be npusim.dtype, not int$"):
        npusim.can_cast(npusim.float32, 1)
    with pytest.raises(TypeError, match=r"^can_cast\(\): argument 'from_' \(position 1\) must be npusim.dtype"):
        npusim.can_cast("float32", npusim.float32)
    with pytest.raises(TypeError, match=r"^result_type\(\) received an invalid combination of arguments - got "
                                        r"\(Tensor, str\), but expected one of:"):
        npusim.result_type(npusim.ones(2), "a")
    with pytest.raises(TypeError, match="^only floating-point types are supported as the default type$"):
        npusim.set_default_dtype(npusim.int32)
    with pytest.raises(TypeError, match="^invalid dtype object: only floating-point types are supported as the "
                                        "default type$"):
        npusim.set_default_dtype("float64")
    assert npusim.get_default_dtype() is npusim.float32


def test_finfo_and_iinfo():
    for name in ("float16", "bfloat16", "float32", "float64"):
        fi, ref = npusim.finfo(_dt(name)), ml_dtypes.finfo(_dt(name).np)
        assert (fi.eps, fi.max, fi.min, fi.tiny) == (float(ref.eps), float(ref.max), float(ref.min), float(ref.tiny))
        assert fi.bits == _dt(name).itemsize * 8 and fi.dtype == name
    assert npusim.finfo(npusim.float16).resolution == 0.001
    assert npusim.finfo(npusim.bfloat16).resolution == 0.01
    assert npusim.finfo().dtype == "float32"
    assert repr(npusim.finfo(npusim.float16)) == (
        "finfo(resolution=0.001, min=-65504, max=65504, eps=0.000976562, smallest_normal=6.10352e-05, "
        "tiny=6.10352e-05, dtype=float16)")
    for name in ("uint8", "int8", "int16", "int32", "int64"):
        ii, ref = npusim.iinfo(_dt(name)), np.iinfo(name)
        assert (ii.min, ii.max, ii.bits) == (ref.min, ref.max, ref.bits)
    assert repr(npusim.iinfo(npusim.int8)) == "iinfo(min=-128, max=127, dtype=int8)"
    with pytest.raises(TypeError, match=r"^npusim.iinfo\(\) requires an integer input type. Use npusim.finfo to "
                                        r"handle 'npusim.iinfo'$"):
        npusim.iinfo(npusim.float32)
    with pytest.raises(TypeError, match=r"^npusim.finfo\(\) requires a floating point input type. Use npusim.iinfo "
                                        r"to handle 'npusim.finfo'$"):
        npusim.finfo(npusim.int32)
    with pytest.raises(TypeError, match="^npusim.bool is not supported by npusim.iinfo$"):
        npusim.iinfo(npusim.bool)
    with pytest.raises(TypeError, match=r"^finfo\(\): argument 'type' \(position 1\) must be npusim.dtype, not str$"):
        npusim.finfo("float32")


def test_dtype_objects():
    assert repr(npusim.float32) == "npusim.float32" and str(npusim.bfloat16) == "npusim.bfloat16"
    assert npusim.float is npusim.float32 and npusim.double is npusim.float64 and npusim.half is npusim.float16
    assert npusim.long is npusim.int64 and npusim.int is npusim.int32 and npusim.short is npusim.int16
    assert [d.itemsize for d in map(_dt, NAMES)] == [1, 1, 1, 2, 4, 8, 2, 2, 4, 8]
    assert [d.is_floating_point for d in map(_dt, NAMES)] == [False] * 6 + [True] * 4
    assert [d.is_signed for d in map(_dt, NAMES)] == [False, False] + [True] * 8
    import pickle
    assert all(pickle.loads(pickle.dumps(d)) is d for d in map(_dt, NAMES))


def test_mixed_promotion_values(device):
    u8 = npusim.tensor([200, 100], dtype=npusim.uint8, device=device)
    i8 = npusim.tensor([-1, 1], dtype=npusim.int8, device=device)
    r = u8 + i8  # int16: no wrap-around
    assert r.dtype is npusim.int16 and host(r).tolist() == [199, 101]
    h = npusim.tensor([1.5], dtype=npusim.float16, device=device)
    b = npusim.tensor([2.5], dtype=npusim.bfloat16, device=device)
    assert (h + b).dtype is npusim.float32 and host(h + b).tolist() == [4.0]
    assert (u8 + 1.5).dtype is npusim.float32 and host(u8 / i8).tolist() == [-200.0, 100.0]
