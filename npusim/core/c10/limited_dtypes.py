"""The dtypes torch 2.13 supports only in part: uint16/32/64, the float8 family, float4_e2m1fn_x2 and the
sub-byte integers int1..int7 / uint1..uint7.

They are registered in ``dtype``'s tables (names, torch's ScalarType names, NumPy dtype -> dtype, promotion) but
are not in ``ALL_DTYPES``: code that walks every dtype means the fully supported ones. Which ops take them is an
allow-list per dtype (``native/limited_dtype_support.py``); any other op refuses them with torch's error.

Storage: uint16/32/64 are NumPy's own dtypes and the float8 types ml_dtypes'. The sub-byte integers and
float4_e2m1fn_x2 hold one byte per element in torch (a tag on plain bytes: nothing computes with them), so each is
a one-field structured NumPy dtype over uint8 named after it: a distinct NumPy dtype (a tensor's dtype is read
from its array's), the size of a byte, and NumPy refuses arithmetic on it instead of computing something wrong.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from . import dtype as D

_INT, _FLOAT = D._INT, D._FLOAT


def _make(name, np_dtype, category, scalar_name, rank, *, signed=None):
    d = D.dtype(name, np_dtype, category, rank)
    if signed is not None:
        d.is_signed = signed
    D._BY_NAME[name] = d
    D.SCALAR_TYPE_NAME[d] = scalar_name
    D.FROM_NUMPY[d.np] = d
    return d


def _byte_tag(name):
    """The one-byte NumPy dtype that stands for ``name`` (a structured dtype of one uint8 field)."""
    return np.dtype([(name, np.uint8)])


uint16 = _make("uint16", np.uint16, _INT, "UInt16", 20)
uint32 = _make("uint32", np.uint32, _INT, "UInt32", 21)
uint64 = _make("uint64", np.uint64, _INT, "UInt64", 22)
BAREBONES_UNSIGNED = (uint16, uint32, uint64)

float8_e5m2 = _make("float8_e5m2", ml_dtypes.float8_e5m2, _FLOAT, "Float8_e5m2", 23)
float8_e4m3fn = _make("float8_e4m3fn", ml_dtypes.float8_e4m3fn, _FLOAT, "Float8_e4m3fn", 24)
float8_e5m2fnuz = _make("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz, _FLOAT, "Float8_e5m2fnuz", 25)
float8_e4m3fnuz = _make("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz, _FLOAT, "Float8_e4m3fnuz", 26)
float8_e8m0fnu = _make("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu, _FLOAT, "Float8_e8m0fnu", 27, signed=False)
FLOAT8_DTYPES = (float8_e5m2, float8_e4m3fn, float8_e5m2fnuz, float8_e4m3fnuz, float8_e8m0fnu)

float4_e2m1fn_x2 = _make("float4_e2m1fn_x2", _byte_tag("float4_e2m1fn_x2"), _FLOAT, "Float4_e2m1fn_x2", 28)

_sub_byte = {}
for _bits in range(1, 8):
    _sub_byte[f"int{_bits}"] = _make(f"int{_bits}", _byte_tag(f"int{_bits}"), _INT, f"Int{_bits}", 28 + _bits,
                                     signed=True)
    _sub_byte[f"uint{_bits}"] = _make(f"uint{_bits}", _byte_tag(f"uint{_bits}"), _INT, f"UInt{_bits}",
                                      35 + _bits, signed=False)
int1 = _sub_byte["int1"]
int2 = _sub_byte["int2"]
int3 = _sub_byte["int3"]
int4 = _sub_byte["int4"]
int5 = _sub_byte["int5"]
int6 = _sub_byte["int6"]
int7 = _sub_byte["int7"]
uint1 = _sub_byte["uint1"]
uint2 = _sub_byte["uint2"]
uint3 = _sub_byte["uint3"]
uint4 = _sub_byte["uint4"]
uint5 = _sub_byte["uint5"]
uint6 = _sub_byte["uint6"]
uint7 = _sub_byte["uint7"]
bit = uint1     # torch.bit is uint1
SUB_BYTE_INTS = (int1, int2, int3, int4, int5, int6, int7)
SUB_BYTE_UINTS = (uint1, uint2, uint3, uint4, uint5, uint6, uint7)
# dtypes whose elements are bytes with a tag: no kernel reads them as numbers
BYTE_TAGGED = SUB_BYTE_INTS + SUB_BYTE_UINTS + (float4_e2m1fn_x2,)

LIMITED_DTYPES = BAREBONES_UNSIGNED + FLOAT8_DTYPES + BYTE_TAGGED
LIMITED_NP = frozenset(d.np for d in LIMITED_DTYPES)
FLOAT8_NP = frozenset(d.np for d in FLOAT8_DTYPES)
BYTE_TAGGED_NP = frozenset(d.np for d in BYTE_TAGGED)
# the dtypes only NumPy arrays hold (CuPy has no float8, float4 or sub-byte type)
HOST_ONLY_NP = FLOAT8_NP | BYTE_TAGGED_NP
_FLOATS = (D.float16, D.bfloat16, D.float32, D.float64)


def promotion_error(a, b) -> RuntimeError:
    """torch's error for promoting ``a`` and ``b`` when one of them is a limited dtype (c10's promoteTypes)."""
    name_a, name_b = D.SCALAR_TYPE_NAME[a], D.SCALAR_TYPE_NAME[b]
    if a in FLOAT8_DTYPES or b in FLOAT8_DTYPES:
        return RuntimeError(f"Promotion for Float8 Types is not supported, attempted to promote {name_a} and {name_b}")
    if a in BAREBONES_UNSIGNED + SUB_BYTE_UINTS or b in BAREBONES_UNSIGNED + SUB_BYTE_UINTS:
        return RuntimeError("Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
                            f"{name_a} and {name_b}")
    # torch fails an internal assert here (the sub-byte ints and float4 have no row in its table)
    return RuntimeError(f"Promotion of {name_a} and {name_b} is not supported")


def _promotions():
    """The pairs torch promotes: a dtype with itself, and an unsigned one with a floating dtype (the float)."""
    table = {(d, d): d for d in LIMITED_DTYPES}
    for u in BAREBONES_UNSIGNED + SUB_BYTE_UINTS:
        for f in _FLOATS:
            table[u, f] = table[f, u] = f
    return table


D._PROMOTE.update(_promotions())

__all__ = ["uint16", "uint32", "uint64", "float8_e5m2", "float8_e4m3fn", "float8_e5m2fnuz", "float8_e4m3fnuz",
           "float8_e8m0fnu", "float4_e2m1fn_x2", "int1", "int2", "int3", "int4", "int5", "int6", "int7", "uint1",
           "uint2", "uint3", "uint4", "uint5", "uint6", "uint7", "bit"]
