"""CuPy's ufuncs: NumPy's arithmetic behind CuPy's loop tables.

Each ufunc takes only device arrays and scalars, picks its loop the way CuPy
does (the first loop of CuPy 14's table that every array operand casts to
safely; Python scalars are weak), and refuses dtypes CuPy has no loop for —
bfloat16 works only where CuPy 14 registered a bfloat16 loop. ``at`` is CuPy's
scatter: add/subtract for int32, uint32, uint64 and float16/32/64, maximum and
minimum without float16, nothing else.
"""
from __future__ import annotations

import numpy as np

from . import _core as K

_SCATTER_ADD = set("iILQefd")
_SCATTER_MINMAX = set("iILQfd")


import ml_dtypes

_BF16 = np.dtype(ml_dtypes.bfloat16)


def _dt(c):
    return _BF16 if c == "E" else np.dtype(c)


_cast_cache = {}


def _casts(dtype, c):
    key = (dtype, c)
    r = _cast_cache.get(key)
    if r is None:
        r = _cast_cache[key] = bool(np.can_cast(dtype, _dt(c), "safe"))
    return r


def _loops(types):
    out = []
    for t in types:
        ins, outs = t.split("->")
        out.append((tuple(ins), tuple(outs)))
    return out


def _scalar_fits(x, c):
    if isinstance(x, np.generic):    # NumPy scalars (bfloat16's included) are typed, as 0-d arrays are
        return _casts(x.dtype, c)
    kind = _dt(c).kind
    if isinstance(x, (bool, np.bool_)):
        return True
    if isinstance(x, (int, np.integer)):
        return kind in "iufc" or kind == "V"
    if isinstance(x, (float, np.floating)):
        return kind in "fc" or c == "E"
    if isinstance(x, complex):
        return kind == "c"
    return False


class ufunc:
    def __init__(self, name, info):
        self.__name__ = self.name = name
        self._np = getattr(np, name)
        self.nin, self.nout = info["nin"], info["nout"]
        self.nargs = self.nin + self.nout
        self.types = list(info["types"])
        self._table = _loops(self.types)

    def __repr__(self):
        return f"<ufunc 'cupy_{self.name}'>"

    def _loop(self, operands, dtype=None):
        """CuPy's loop for these operands (TypeError when its table has none)."""
        for ins, outs in self._table:
            if dtype is not None and _dt(outs[0]) != np.dtype(dtype):
                continue
            if all(_casts(o.dtype, c) if isinstance(o, K.ndarray) else _scalar_fits(o, c)
                   for o, c in zip(operands, ins)):
                return ins, outs
        raise TypeError(f"Wrong type ({tuple(o.dtype if isinstance(o, K.ndarray) else type(o) for o in operands)}) "
                        f"of arguments for cupy_{self.name}")

    def _check_operands(self, operands):
        for o in operands:
            if isinstance(o, np.ndarray):
                raise K._unsupported(o)
            if isinstance(o, (list, tuple, str)) or o is None:
                raise TypeError(f"Unsupported type {type(o)}")

    def __call__(self, *args, out=None, dtype=None, casting="same_kind", **kwargs):
        if len(args) > self.nin:
            args, extra = args[:self.nin], args[self.nin:]
            out = extra[0] if len(extra) == 1 else tuple(extra)
        self._check_operands(args)
        ins, outs = self._loop(args, dtype)
        outs_t = out if isinstance(out, tuple) else ((out,) if out is not None else ())
        for o in outs_t:
            if o is not None and not isinstance(o, K.ndarray):
                raise TypeError(f"Output arguments must be cupy.ndarray, got {type(o)}")
        arrays = [a for a in args if isinstance(a, K.ndarray)] + [o for o in outs_t if o is not None]
        K.check_device(arrays)
        # NumPy computes (and types) the result; the table above only decides whether CuPy could
        uargs = [a._np if isinstance(a, K.ndarray) else a for a in args]
        with np.errstate(all="ignore"):
            r = self._np(*uargs, dtype=dtype, **kwargs) if dtype is not None else self._np(*uargs, **kwargs)
        fixed = [np.asarray(v) for v in (r if isinstance(r, tuple) else (r,))]
        if outs_t:
            for o, val in zip(outs_t, fixed):
                if not np.can_cast(val.dtype, o.dtype, casting):
                    raise TypeError(f"output (typecode '{val.dtype.char}') could not be coerced to provided output "
                                    f"parameter (typecode '{o.dtype.char}') according to the casting rule "
                                    f"'{casting}'")
                with np.errstate(all="ignore"):
                    np.copyto(o._np, val, casting="unsafe")
            return out
        wrapped = tuple(K.wrap_new(np.ascontiguousarray(v) if v.ndim else v, K.CURRENT.device
                                   if not arrays else arrays[0]._dev) for v in fixed)
        return wrapped[0] if self.nout == 1 else wrapped

    def at(self, a, indices, b=None):
        if not isinstance(a, K.ndarray):
            raise TypeError("cupy.ufunc.at only supports cupy.ndarray as its first argument")
        if self.name in ("add", "subtract"):
            allowed = _SCATTER_ADD
        elif self.name in ("maximum", "minimum"):
            allowed = _SCATTER_MINMAX
        else:
            raise NotImplementedError(f"`{self.name}.at` is not supported yet")
        if a.dtype.char not in allowed:
            raise TypeError(f"scatter_{'add' if self.name in ('add', 'subtract') else self.name[:3]} only supports "
                            f"int32, float32, uint32, uint64 as data type (got {a.dtype})")
        idx = K.unwrap_index(indices, a)
        if isinstance(b, np.ndarray):
            raise K._unsupported(b)
        vals = b._np if isinstance(b, K.ndarray) else b
        K.check_device([a] + ([b] if isinstance(b, K.ndarray) else []))
        with np.errstate(all="ignore"):
            self._np.at(a._np, idx, vals)

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False):
        return K.call_numpy(self._np.reduce, (a,), {"axis": axis, "dtype": dtype, "out": out,
                                                    "keepdims": keepdims}, [a], self.name)

    def accumulate(self, a, axis=0, dtype=None, out=None):
        return K.call_numpy(self._np.accumulate, (a,), {"axis": axis, "dtype": dtype, "out": out}, [a], self.name)

    def outer(self, a, b, **kwargs):
        return K.call_numpy(self._np.outer, (a, b), kwargs, [], self.name)

    def reduceat(self, a, indices, axis=0, dtype=None, out=None):
        return K.call_numpy(self._np.reduceat, (a, indices), {"axis": axis, "dtype": dtype, "out": out}, [],
                            self.name)


UFUNCS = {name: ufunc(name, info) for name, info in K.NAMES["ufuncs"].items() if hasattr(np, name)}
