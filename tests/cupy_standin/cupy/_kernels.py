"""Kernels from CUDA source, run on the host: CuPy's argument rules, the kernel's own body.

``ElementwiseKernel``, ``ReductionKernel`` and ``RawKernel`` resolve their
arguments as CuPy does (a type placeholder is bound only by an ndarray
argument: one that appears only on scalars raises ``KeyError`` before any
compiling, CuPy issue 2091), then compile the kernel's own CUDA body as C++
with the host compiler, behind a small shim for CUDA's built-ins, and run it
over every element or thread. So the operation that runs is the one the GPU
would run, not a rewrite of it; only the compiler and the math library differ
(a few ulps in transcendental functions).
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import subprocess
import tempfile
import threading

import numpy as np

from . import _core as K

_C_TYPES = {
    "bool": "bool", "int8": "signed char", "uint8": "unsigned char", "int16": "short", "uint16": "unsigned short",
    "int32": "int", "uint32": "unsigned int", "int64": "long long", "uint64": "unsigned long long",
    "float16": "float16", "float32": "float", "float64": "double",
}
_CTYPES = {
    "bool": ctypes.c_bool, "signed char": ctypes.c_byte, "unsigned char": ctypes.c_ubyte, "short": ctypes.c_short,
    "unsigned short": ctypes.c_ushort, "int": ctypes.c_int, "unsigned int": ctypes.c_uint,
    "long long": ctypes.c_longlong, "unsigned long long": ctypes.c_ulonglong, "float": ctypes.c_float,
    "double": ctypes.c_double, "long": ctypes.c_long, "unsigned long": ctypes.c_ulong, "size_t": ctypes.c_size_t,
}
_NAMED_TYPES = {"float16": "float16", "float32": "float", "float64": "double", "int8": "signed char",
                "int16": "short", "int32": "int", "int64": "long long", "uint8": "unsigned char",
                "uint16": "unsigned short", "uint32": "unsigned int", "uint64": "unsigned long long",
                "bool": "bool", "float": "float", "double": "double", "int": "int"}

_PRELUDE = r"""
#include <cmath>
#include <cstdint>
#include <cstddef>
using namespace std;
typedef _Float16 float16;
struct npusim_standin_dim3 { unsigned int x, y, z; };
// one set per host thread: ctypes releases the GIL, and launches from two threads must not share them
static thread_local npusim_standin_dim3 blockIdx, threadIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
static inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
"""

_lock = threading.Lock()
_loaded = {}


def _cache_dir():
    d = os.path.join(tempfile.gettempdir(), f"cupy-standin-kernels-{os.getuid()}")
    os.makedirs(d, exist_ok=True)
    return d


def _compile(source: str):
    """The host build of ``source`` as a loaded shared library (cached by content)."""
    key = hashlib.sha256(source.encode()).hexdigest()[:24]
    with _lock:
        lib = _loaded.get(key)
        if lib is not None:
            return lib
        path = os.path.join(_cache_dir(), f"k{key}.so")
        if not os.path.exists(path):
            src = path[:-3] + f".{os.getpid()}.cpp"
            with open(src, "w") as f:
                f.write(source)
            tmp = path + f".{os.getpid()}.tmp"
            r = subprocess.run(["g++", "-std=c++17", "-O1", "-shared", "-fPIC", "-w", "-o", tmp, src],
                               capture_output=True, text=True)
            os.unlink(src)
            if r.returncode:
                raise RuntimeError(f"the kernel did not compile (host build of its CUDA source):\n{r.stderr[-4000:]}")
            os.replace(tmp, path)
        lib = _loaded[key] = ctypes.CDLL(path)
        return lib


# --- CuPy's parameter lists and type resolution ----------------------------------------------------------------
class _Param:
    def __init__(self, text):
        parts = text.split()
        self.raw = "raw" in parts
        parts = [p for p in parts if p != "raw"]
        self.ctype, self.name = " ".join(parts[:-1]), parts[-1]
        self.dtype = np.dtype(self.ctype) if self.ctype in _C_TYPES and self.ctype not in ("T",) else None
        if self.ctype in ("float", "double", "int"):
            self.dtype = np.dtype({"float": np.float32, "double": np.float64, "int": np.int32}[self.ctype])


def _params(text):
    return [_Param(p.strip()) for p in text.split(",") if p.strip()]


def _resolve(in_params, out_params, in_args, out_args):
    """CuPy's ``_decide_params_type``: placeholders come from ndarray arguments only."""
    types = {}
    for p, a in list(zip(in_params, in_args)) + list(zip(out_params, out_args)):
        if isinstance(a, K.ndarray) and p.dtype is None:
            if p.ctype in types and types[p.ctype] != a.dtype:
                raise TypeError(f"Type is mismatched. {p.name} {a.dtype.type} {types[p.ctype]}")
            types[p.ctype] = a.dtype
    in_types = [p.dtype if p.dtype is not None else types[p.ctype] for p in in_params]   # KeyError as CuPy
    out_types = [p.dtype if p.dtype is not None else types[p.ctype] for p in out_params]
    return types, in_types, out_types


def _ctype_of(dt):
    try:
        return _C_TYPES[np.dtype(dt).name]
    except KeyError:
        raise TypeError(f"the CuPy stand-in cannot run a CUDA-source kernel on {np.dtype(dt)}") from None


def _typedefs(types):
    return "".join(f"typedef {_ctype_of(dt)} {name};\n" for name, dt in types.items())


def _scalar_value(value, dt):
    if isinstance(value, K.ndarray):
        raise TypeError("a 0-d array is not a scalar argument")
    return np.asarray(value).astype(dt)[()]


class ElementwiseKernel:
    def __init__(self, in_params, out_params, operation, name="kernel", reduce_dims=True, preamble="",
                 no_return=False, return_tuple=False, loop_prep="", after_loop="", options=()):
        self.in_params, self.out_params = _params(in_params), _params(out_params)
        self.operation, self.name, self.preamble = operation, name, preamble
        self.loop_prep, self.after_loop, self.options = loop_prep, after_loop, options
        self.nin, self.nout = len(self.in_params), len(self.out_params)
        self.nargs = self.nin + self.nout
        if any(p.raw for p in self.in_params + self.out_params):
            raise NotImplementedError(f"{name}: the stand-in runs no 'raw' parameters")

    def __call__(self, *args, size=None, block_size=None, **kwargs):
        if len(args) not in (self.nin, self.nargs):
            raise TypeError(f"Wrong number of arguments for {self.name!r}")
        in_args, out_args = list(args[:self.nin]), list(args[self.nin:]) or [None] * self.nout
        for a in args:
            if isinstance(a, np.ndarray):
                raise K._unsupported(a)
        types, in_types, out_types = _resolve(self.in_params, self.out_params, in_args, out_args)
        arrays = [a for a in in_args + out_args if isinstance(a, K.ndarray)]
        K.check_device(arrays)
        shape = np.broadcast_shapes(*[a.shape for a in arrays]) if arrays else ()
        is_array = [isinstance(a, K.ndarray) for a in in_args]
        # scalars travel as one-element buffers, converted to their parameter's type as CuPy converts them
        ins = [np.ascontiguousarray(np.broadcast_to(a._np, shape)).astype(t, copy=False) if arr
               else np.array([_scalar_value(a, t)], dtype=t) for a, t, arr in zip(in_args, in_types, is_array)]
        outs = [np.empty(shape, t) for t in out_types]
        lib = _compile(self._source(types, in_types, out_types, is_array))
        argv = [ctypes.c_ssize_t(int(np.prod(shape, dtype=np.int64)))]
        argv += [ctypes.c_void_p(v.ctypes.data) for v in ins + outs]
        lib.npusim_standin_run(*argv)
        results = []
        for o, v in zip(out_args, outs):
            if o is not None:
                np.copyto(o._np, v, casting="unsafe")
                results.append(o)
            else:
                results.append(K.wrap_new(v, K.CURRENT.device))
        return results[0] if self.nout == 1 else tuple(results)

    def _source(self, types, in_types, out_types, is_array):
        sig, body = ["ptrdiff_t _n"], []
        for p, t, arr in zip(self.in_params, in_types, is_array):
            c = _ctype_of(t)
            sig.append(f"const {c}* _raw_{p.name}")
            body.append(f"const {c} {p.name} = _raw_{p.name}[{'i' if arr else '0'}];")
        for p, t in zip(self.out_params, out_types):
            c = _ctype_of(t)
            sig.append(f"{c}* _raw_{p.name}")
            body.append(f"{c} &{p.name} = _raw_{p.name}[i];")
        return (_PRELUDE + _typedefs(types) + self.preamble + "\n"
                + f'extern "C" void npusim_standin_run({", ".join(sig)}) {{\n'
                + f"  {self.loop_prep};\n"
                + "  for (ptrdiff_t i = 0; i < _n; ++i) {\n    " + "\n    ".join(body)
                + f"\n    {self.operation};\n  }}\n  {self.after_loop};\n}}\n")


class ReductionKernel:
    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr, identity, name="reduce_kernel",
                 reduce_type=None, reduce_dims=True, preamble="", options=()):
        self.in_params, self.out_params = _params(in_params), _params(out_params)
        self.map_expr, self.reduce_expr, self.post_map_expr = map_expr, reduce_expr, post_map_expr
        self.identity, self.name, self.reduce_type, self.preamble = identity, name, reduce_type, preamble
        self.nin, self.nout = len(self.in_params), len(self.out_params)

    def __call__(self, *args, out=None, axis=None, keepdims=False, stream=None):
        if len(args) != self.nin:
            raise TypeError(f"Wrong number of arguments for {self.name!r}")
        for a in args:
            if isinstance(a, np.ndarray):
                raise K._unsupported(a)
        types, in_types, out_types = _resolve(self.in_params, self.out_params, list(args), [out])
        arrays = [a for a in args if isinstance(a, K.ndarray)]
        K.check_device(arrays + ([out] if out is not None else []))
        x = arrays[0]._np
        axes = tuple(range(x.ndim)) if axis is None else tuple(
            a % x.ndim for a in ((axis,) if isinstance(axis, int) else axis))
        keep = [d for d in range(x.ndim) if d not in axes]
        moved = np.ascontiguousarray(np.transpose(x, keep + list(axes))).astype(in_types[0], copy=False)
        out_shape = tuple(x.shape[d] for d in keep)
        nred = int(np.prod([x.shape[d] for d in axes], dtype=np.int64))
        nout = int(np.prod(out_shape, dtype=np.int64))
        y = np.empty(out_shape, out_types[0])
        lib = _compile(self._source(types, in_types, out_types))
        lib.npusim_standin_reduce(ctypes.c_ssize_t(nout), ctypes.c_ssize_t(nred), ctypes.c_void_p(moved.ctypes.data),
                                  ctypes.c_void_p(y.ctypes.data))
        if keepdims:
            y = y.reshape(tuple(1 if d in axes else x.shape[d] for d in range(x.ndim)))
        if out is not None:
            np.copyto(out._np, y, casting="unsafe")
            return out
        return K.wrap_new(y, arrays[0]._dev)

    def _source(self, types, in_types, out_types):
        (ip,), (op,) = self.in_params, self.out_params
        cin, cout = _ctype_of(in_types[0]), _ctype_of(out_types[0])
        red = self.reduce_type
        red = _NAMED_TYPES.get(red, red) if red else cout
        return (_PRELUDE + _typedefs(types) + self.preamble + "\n"
                + f"typedef {red} _type_reduce;\n"
                + f'extern "C" void npusim_standin_reduce(ptrdiff_t _nout, ptrdiff_t _nred, const {cin}* _raw_in, '
                + f"{cout}* _raw_out) {{\n"
                + "  for (ptrdiff_t _o = 0; _o < _nout; ++_o) {\n"
                + f"    _type_reduce a = _type_reduce({self.identity});\n"
                + "    for (ptrdiff_t _r = 0; _r < _nred; ++_r) {\n"
                + f"      const {cin} {ip.name} = _raw_in[_o * _nred + _r];\n"
                + f"      _type_reduce b = _type_reduce({self.map_expr});\n"
                + f"      a = _type_reduce({self.reduce_expr});\n    }}\n"
                + f"    {cout} &{op.name} = _raw_out[_o];\n    {self.post_map_expr};\n  }}\n}}\n")


_SIGNATURE = re.compile(r"void\s+(\w+)\s*\(([^)]*)\)", re.S)


class RawKernel:
    def __init__(self, code, name, options=(), backend="nvrtc", translate_cucomplex=False, enable_cooperative_groups=False,
                 jitify=False):
        self.code, self.name, self.options = code, name, options
        sigs = {m.group(1): m.group(2) for m in _SIGNATURE.finditer(code)}
        if name not in sigs:
            raise RuntimeError(f"the kernel source has no function named {name!r}")
        self._params = [p.strip() for p in sigs[name].split(",") if p.strip()]

    def _param_ctype(self, text):
        decl = text.rsplit(None, 1)[0].replace("const ", "").strip()
        if "*" in decl:
            return None
        if decl not in _CTYPES:
            raise TypeError(f"the stand-in cannot pass a {decl!r} argument to {self.name}")
        return _CTYPES[decl]

    def _source(self):
        names = [p.replace("*", " ").split()[-1] for p in self._params]
        return (_PRELUDE + self.code + "\n"
                + f'extern "C" void npusim_standin_launch(unsigned gx, unsigned gy, unsigned gz, unsigned bx, '
                + f"unsigned by, unsigned bz{''.join(', ' + p for p in self._params)}) {{\n"
                + "  gridDim = {gx, gy, gz}; blockDim = {bx, by, bz};\n"
                + "  for (unsigned z = 0; z < gz; ++z) for (unsigned y = 0; y < gy; ++y) for (unsigned x = 0; x < gx; ++x)\n"
                + "  for (unsigned tz = 0; tz < bz; ++tz) for (unsigned ty = 0; ty < by; ++ty) "
                + "for (unsigned tx = 0; tx < bx; ++tx) {\n"
                + "    blockIdx = {x, y, z}; threadIdx = {tx, ty, tz};\n"
                + f"    {self.name}({', '.join(names)});\n  }}\n}}\n")

    def __call__(self, grid, block, args, shared_mem=0, stream=None, enable_cooperative_groups=False):
        grid = tuple(grid) + (1,) * (3 - len(grid))
        block = tuple(block) + (1,) * (3 - len(block))
        if len(args) != len(self._params):
            raise TypeError(f"{self.name} takes {len(self._params)} arguments, {len(args)} given")
        argv = [ctypes.c_uint(int(v)) for v in grid + block]
        arrays = []
        for p, a in zip(self._params, args):
            ct = self._param_ctype(p)
            if ct is None:
                if not isinstance(a, K.ndarray):
                    raise TypeError(f"{self.name}: pointer argument {p!r} needs a cupy.ndarray, got {type(a)}")
                arrays.append(a)
                argv.append(ctypes.c_void_p(a._np.__array_interface__["data"][0]))
            else:
                if isinstance(a, (K.ndarray, np.ndarray)):
                    raise TypeError(f"{self.name}: argument {p!r} is a scalar, got an array")
                if isinstance(a, (int, float)) and not isinstance(a, bool):
                    # CuPy passes a Python int as a 64-bit integer and a float as double, whatever the parameter says
                    if (isinstance(a, int) and ct not in (ctypes.c_longlong, ctypes.c_ulonglong, ctypes.c_long,
                                                           ctypes.c_ulong, ctypes.c_size_t)) or \
                            (isinstance(a, float) and ct is not ctypes.c_double):
                        raise TypeError(f"{self.name}: a Python {type(a).__name__} is passed as a 64-bit value, but "
                                        f"parameter {p!r} is narrower (pass a NumPy scalar of its type)")
                argv.append(ct(a.item() if isinstance(a, np.generic) else a))
        K.check_device(arrays)
        _compile(self._source()).npusim_standin_launch(*argv)


class RawModule:
    def __init__(self, code=None, path=None, options=(), backend="nvrtc", translate_cucomplex=False,
                 enable_cooperative_groups=False, name_expressions=None, jitify=False):
        self.code = code

    def get_function(self, name):
        return RawKernel(self.code, name)
