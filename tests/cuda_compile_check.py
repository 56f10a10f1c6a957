"""Compile every CUDA-source kernel npusim declares, with CuPy's own code generators and NVRTC, without a GPU.

The kernels come from ``npusim.kernels.cuda_registry``: every module of the
package that imports the registry is imported, which runs its declarations.
For each kernel, each dtype it runs with and each declared call, the check
builds the real CuPy kernel object, runs CuPy's type resolution with the
argument kinds of the call (an ndarray per array argument, no dtype for a
scalar, as CuPy's ``__call__`` does), generates the source with CuPy's
generator and compiles it through CuPy's ``compile_with_cache`` (its headers,
its options, ``-arch=sm_XX``) for every architecture in ``ARCHS``.

Without a driver two steps of that path cannot run, and only those are
replaced, for the duration of one compile (``offline_nvrtc``): the probe of
the current device's architecture (it answers the architecture under check)
and the loading of the compiled binary into a CUDA context (the binary is kept
and checked instead: an ELF for the requested SM holding the kernel's entry
point). CuPy's on-disk kernel cache is bypassed, so every check compiles.
"""
from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import os
import pathlib
import re
import struct

import numpy as np

import npusim
from npusim.kernels import cuda_registry
from npusim.kernels.cuda_registry import ARRAY, CudaKernel

REQUIRE_ENV = "NPUSIM_REQUIRE_CUDA_COMPILE_CHECK"
ARCHS = ("80", "90")

PACKAGE_DIR = pathlib.Path(npusim.__file__).resolve().parent
REGISTRY_MODULE = cuda_registry.__name__
STANDIN_DIR = pathlib.Path(__file__).resolve().parent / "cupy_standin"

# CuPy entry points that turn CUDA source (or Python) into a kernel: only the registry may use them
CUPY_KERNEL_CONSTRUCTORS = frozenset({"ElementwiseKernel", "ReductionKernel", "RawKernel", "RawModule", "fuse",
                                      "rawkernel", "create_ufunc", "create_reduction_func"})
DECLARERS = frozenset({"elementwise", "reduction", "raw"})


class KernelCheckError(AssertionError):
    pass


# --- finding the kernels ---------------------------------------------------------------------------------------

@functools.cache
def package_sources() -> dict[str, tuple[pathlib.Path, str]]:
    """Every module of the npusim package: its dotted name, its file and its text."""
    sources = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
        sources[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = (path, path.read_text())
    return sources


@functools.cache
def _tree(name: str) -> ast.Module:
    path, text = package_sources()[name]
    return ast.parse(text, filename=str(path))


def _modules_mentioning(words) -> list[str]:
    """The modules whose text has one of ``words`` as a word: the only ones worth parsing."""
    pattern = re.compile(r"\b(?:" + "|".join(sorted(words)) + r")\b")
    return [name for name, (_, text) in package_sources().items() if name != REGISTRY_MODULE and pattern.search(text)]


def _registry_aliases(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The names a module gives the registry module, and the names of the declaring functions it imports."""
    modules, functions = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if (node.module or "").endswith("cuda_registry"):
                functions |= {a.asname or a.name for a in node.names if a.name in DECLARERS}
            else:
                modules |= {a.asname or a.name for a in node.names if a.name == "cuda_registry"}
        elif isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name.endswith(".cuda_registry")}
    return modules, functions


def declaring_modules() -> list[str]:
    """The modules that import the registry: those that declare CUDA kernels."""
    return [name for name in _modules_mentioning(["cuda_registry"]) if any(_registry_aliases(_tree(name)))]


@functools.cache
def declared_kernels() -> tuple[CudaKernel, ...]:
    """Every declared kernel, after importing every module that declares one."""
    for name in declaring_modules():
        importlib.import_module(name)
    return tuple(sorted(cuda_registry.KERNELS.values(), key=lambda k: k.name))


def cases() -> list[tuple[CudaKernel, str | None, str]]:
    """(kernel, dtype, arch) for every architecture and every dtype a kernel runs with (None for raw kernels)."""
    return [(k, dtype, arch) for k in declared_kernels() for dtype in (k.dtypes or (None,)) for arch in ARCHS]


def kernel_constructions() -> list[str]:
    """``file:line: name`` of every use of a CuPy kernel constructor outside the registry."""
    found = []
    for name in _modules_mentioning(CUPY_KERNEL_CONSTRUCTORS):
        path = package_sources()[name][0]
        for node in ast.walk(_tree(name)):
            used = None
            if isinstance(node, ast.Attribute) and node.attr in CUPY_KERNEL_CONSTRUCTORS:
                used = node.attr
            elif isinstance(node, ast.Name) and node.id in CUPY_KERNEL_CONSTRUCTORS:
                used = node.id
            elif isinstance(node, ast.ImportFrom):
                used = next((a.name for a in node.names if a.name in CUPY_KERNEL_CONSTRUCTORS), None)
            elif isinstance(node, ast.Constant) and node.value in CUPY_KERNEL_CONSTRUCTORS:
                used = node.value   # getattr(cupy, "RawKernel")
            if used:
                found.append(f"{path.relative_to(PACKAGE_DIR.parent)}:{node.lineno}: {used}")
    return found


def declarations_off_module_level() -> list[str]:
    """``file:line`` of every declaration that importing its module does not run (inside a function or lambda)."""
    found = []
    for name in declaring_modules():
        path, tree = package_sources()[name][0], _tree(name)
        modules, functions = _registry_aliases(tree)

        def visit(node, in_function):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.Call) and in_function and _is_declaration(child.func, modules, functions):
                    found.append(f"{path.relative_to(PACKAGE_DIR.parent)}:{child.lineno}")
                visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))
        visit(tree, False)
    return found


def _is_declaration(func, modules, functions) -> bool:
    if isinstance(func, ast.Attribute):
        return func.attr in DECLARERS and isinstance(func.value, ast.Name) and func.value.id in modules
    return isinstance(func, ast.Name) and func.id in functions


# --- whether the check can run here ----------------------------------------------------------------------------

def standin_reason() -> str | None:
    """Why not to run even when required: the ``cupy`` on the path is the tests' stand-in, not CuPy."""
    try:
        import cupy
    except Exception:
        return None
    origin = pathlib.Path(getattr(cupy, "__file__", None) or "").resolve()
    if getattr(cupy, "_NPUSIM_STANDIN", False) or STANDIN_DIR in origin.parents:
        return "the cupy on the path is the tests' stand-in, not real CuPy: the CUDA compile check needs real CuPy"
    return None


_unavailable: list[str | None] = []


def unavailable_reason() -> str | None:
    """Why real CuPy and NVRTC cannot compile here (None when they can): computed once per run."""
    if not _unavailable:
        _unavailable.append(_probe())
    return _unavailable[0]


def _probe() -> str | None:
    try:
        import cupy
        from cupy._core import _kernel, _reduction, core, raw
        from cupy.cuda import compiler
    except Exception as e:
        return f"real CuPy is not importable ({type(e).__name__}: {e})"
    try:
        from cupy_backends.cuda.libs import nvrtc
        nvrtc.getVersion()
    except Exception as e:
        return f"CuPy {cupy.__version__} cannot load NVRTC ({type(e).__name__}: {e})"
    # what the check drives; the memoized ones are called through ``__wrapped__``, past their per-device memo
    internals = [(_kernel, "_ArgInfo", False), (_kernel, "_TypeMap", False), (_kernel, "_get_elementwise_kernel", True),
                 (_reduction, "_decide_params_type", False), (_reduction, "_get_block_specs", False),
                 (_reduction, "_ReductionKernel_get_cached_function", True), (raw, "_get_raw_module", True),
                 (compiler, "_get_arch", False), (compiler, "_get_arch_for_options_for_nvrtc", True),
                 (compiler, "function", False)]
    for module, attr, memoized in internals:
        if not hasattr(module, attr) or (memoized and not hasattr(getattr(module, attr), "__wrapped__")):
            return (f"CuPy {cupy.__version__} lacks {module.__name__}.{attr}{'.__wrapped__' if memoized else ''}, "
                    "which this check drives (written for CuPy 14.2)")
    try:
        with offline_nvrtc("80"):
            core.compile_with_cache('extern "C" __global__ void npusim_probe() {}')
    except Exception as e:
        return f"NVRTC cannot compile a trivial kernel with CuPy's headers ({type(e).__name__}: {e})"
    return None


# --- compiling without a device --------------------------------------------------------------------------------

_EM_CUDA = 190      # ELF machine of a cubin


def _binary_sm(binary: bytes) -> int | None:
    """The SM a cubin is built for (e_flags bits 8-15); None for PTX."""
    if binary[:4] != b"\x7fELF" or struct.unpack_from("<H", binary, 18)[0] != _EM_CUDA:
        return None
    return (struct.unpack_from("<I", binary, 48)[0] >> 8) & 0xFF


@contextlib.contextmanager
def offline_nvrtc(arch: str):
    """CuPy compiles for ``arch`` with no device: the arch probe and the module loading are replaced meanwhile.

    Yields the list of binaries CuPy asked to load."""
    from cupy.cuda import compiler, function

    loaded: list[bytes] = []

    class ModuleWithoutContext(function.Module):
        # CuPy creates, fills and asks a Module for a function; here nothing goes to a CUDA context
        def load(self, binary):
            self._binary = bytes(binary)
            loaded.append(self._binary)

        def get_function(self, name):
            if name.encode() not in self._binary:
                raise KernelCheckError(f"the compiled module has no entry point {name!r}")
            return function.Function.__new__(function.Function)

    class FunctionModule:
        # compiler.py reaches Module through its ``function`` global; everything else stays CuPy's
        Module = ModuleWithoutContext

        def __getattr__(self, attr):
            return getattr(function, attr)

    saved = {"_get_arch": compiler._get_arch, "_get_arch_for_options_for_nvrtc":
             compiler._get_arch_for_options_for_nvrtc, "function": compiler.function}
    saved_env = os.environ.get("CUPY_CACHE_IN_MEMORY")
    compiler._get_arch = lambda: arch
    # the per-device memo asks the driver for the current device; the function under it does not
    compiler._get_arch_for_options_for_nvrtc = saved["_get_arch_for_options_for_nvrtc"].__wrapped__
    compiler.function = FunctionModule()
    os.environ["CUPY_CACHE_IN_MEMORY"] = "1"    # compile every time, and leave the user's kernel cache alone
    try:
        yield loaded
    finally:
        for attr, value in saved.items():
            setattr(compiler, attr, value)
        if saved_env is None:
            os.environ.pop("CUPY_CACHE_IN_MEMORY", None)
        else:
            os.environ["CUPY_CACHE_IN_MEMORY"] = saved_env


def _compile(where: str, arch: str, compile_fn) -> None:
    from cupy.cuda.compiler import CompileException
    with offline_nvrtc(arch) as loaded:
        try:
            compile_fn()
        except CompileException as e:
            raise KernelCheckError(f"{where}, sm_{arch}: NVRTC rejected the source CuPy generated:\n"
                                   f"{e.get_message()}\n--- generated source ---\n{_numbered(e.source)}") from None
        except KernelCheckError as e:
            raise KernelCheckError(f"{where}, sm_{arch}: {e}") from None
    sms = [_binary_sm(b) for b in loaded]
    if not sms or any(sm != int(arch) for sm in sms):
        raise KernelCheckError(f"{where}: asked for sm_{arch}, CuPy built binaries for SMs {sms} (None: PTX)")


def _numbered(source: str) -> str:
    return "\n".join(f"{i:4d}  {line}" for i, line in enumerate(source.splitlines(), 1))


# --- argument kinds --------------------------------------------------------------------------------------------

def _is_array(kind: str) -> bool:
    return kind == ARRAY or kind.startswith("array[")


def _array_dtype(kind: str, dtype: str | None) -> np.dtype | None:
    """The dtype of an array argument, None for a scalar (CuPy's type resolution sees no type for it)."""
    if kind == ARRAY:
        return np.dtype(dtype)
    return np.dtype(kind[6:-1]) if kind.startswith("array[") else None


def _scalar_dtype(kind: str) -> np.dtype:
    """The dtype CuPy gives a scalar argument before converting it to its parameter's type."""
    if kind.startswith("numpy."):
        return np.dtype(kind[6:])
    return np.dtype({"float": np.float64, "int": np.int64, "bool": np.bool_}[kind])


def _resolution_error(where: str, e: Exception) -> KernelCheckError:
    msg = f"{where}: CuPy's argument-type resolution fails: {type(e).__name__}: {e}"
    if isinstance(e, KeyError):
        msg += (f"\n  no ndarray argument binds placeholder {e.args[0]!r}: CuPy binds type placeholders from "
                "ndarray arguments only, never from scalars (CuPy issue 2091); give that parameter a fixed type")
    return KernelCheckError(msg)


def _check_scalar_conversions(where, kinds, params, types) -> None:
    # CuPy converts a scalar to its parameter's type silently: a float into an integer parameter is a bug
    for kind, p, t in zip(kinds, params, types):
        if not _is_array(kind) and not np.can_cast(_scalar_dtype(kind), t, "same_kind"):
            raise KernelCheckError(f"{where}: a {kind} argument is converted to {np.dtype(t)} for parameter "
                                   f"{p.name!r}, across kinds")


# CuPy's _ArgKind values (cupy/_core/_kernel.pxd)
_ARG_NDARRAY, _ARG_INDEXER, _ARG_SCALAR = 1, 2, 3


def _ndarray_info(dtype, ndim: int):
    import cupy
    from cupy._core import _kernel
    return _kernel._ArgInfo(_ARG_NDARRAY, cupy.ndarray, np.dtype(dtype), ndim, True, True)


def _scalar_info(dtype):
    from cupy._core import _kernel, _scalar
    return _kernel._ArgInfo(_ARG_SCALAR, _scalar.CScalar, np.dtype(dtype), 0, True, True)


def _indexer_info(ndim: int):
    from cupy._core import _carray, _kernel
    return _kernel._ArgInfo(_ARG_INDEXER, _carray.Indexer, None, ndim, True, True)


def _input_infos(kinds, resolved, ndim: int) -> list:
    """CuPy's descriptions of the inputs after its dimension reduction (C-contiguous arrays become 1-D); a
    scalar takes its parameter's resolved type, as CuPy converts it before the launch."""
    return [_ndarray_info(t, ndim) if _is_array(k) else _scalar_info(t) for k, t in zip(kinds, resolved)]


# --- the check -------------------------------------------------------------------------------------------------

_results: dict[tuple, str | None] = {}


def check_kernel(kernel: CudaKernel, dtype: str | None, arch: str) -> None:
    """Raise ``KernelCheckError`` unless every declared call of ``kernel`` resolves and compiles for ``arch``."""
    key = (kernel, dtype, arch)
    if key not in _results:
        try:
            {"elementwise": _check_elementwise, "reduction": _check_reduction, "raw": _check_raw}[kernel.kind](
                kernel, dtype, arch)
            _results[key] = None
        except KernelCheckError as e:
            _results[key] = str(e)
    if _results[key] is not None:
        raise KernelCheckError(_results[key])


def _where(kernel, dtype, call) -> str:
    return f"kernel {kernel.name} ({kernel.kind}) [{dtype or 'no dtype'}] called with ({', '.join(call)})"


def _split_call(where, call, nin, nargs):
    if len(call) not in (nin, nargs):
        raise KernelCheckError(f"{where}: it takes {nin} arguments ({nargs} with outputs), the call passes {len(call)}")
    ins, outs = call[:nin], call[nin:]
    if not all(_is_array(k) for k in outs):
        raise KernelCheckError(f"{where}: output arguments must be arrays")
    return ins, outs


def _check_elementwise(kernel, dtype, arch) -> None:
    import cupy
    from cupy._core import _kernel
    obj = cuda_registry.build(kernel, cupy)
    for call in kernel.calls:
        where = _where(kernel, dtype, call)
        ins, outs = _split_call(where, call, obj.nin, obj.nargs)
        try:
            in_types, out_types, type_map = obj._decide_params_type(
                tuple(_array_dtype(k, dtype) for k in ins), tuple(_array_dtype(k, dtype) for k in outs))
        except Exception as e:
            raise _resolution_error(where, e) from None
        _check_scalar_conversions(where, ins, obj.in_params, in_types)
        infos = _input_infos(ins, in_types, 1) + [_ndarray_info(t, 1) for t in out_types] + [_indexer_info(1)]
        _compile(where, arch, lambda: _kernel._get_elementwise_kernel.__wrapped__(
            tuple(infos), type_map, obj.params, obj.operation, obj.name, obj.preamble, **obj.kwargs))


def _check_reduction(kernel, dtype, arch) -> None:
    # npusim reduces whole arrays (axis=None): the input is 1-D after CuPy's dimension reduction, the output 0-D
    import cupy
    from cupy._core import _kernel, _reduction
    obj = cuda_registry.build(kernel, cupy)
    nin, nout = len(obj.in_params), len(obj.out_params)
    for call in kernel.calls:
        where = _where(kernel, dtype, call)
        ins, outs = _split_call(where, call, nin, nin + nout)
        try:    # ReductionKernel resolves with scalar types (dtype.type), not dtypes
            in_types, out_types, type_map = _reduction._decide_params_type(
                obj.in_params, obj.out_params, tuple(_scalar_type(k, dtype) for k in ins),
                tuple(_scalar_type(k, dtype) for k in outs))
        except Exception as e:
            raise _resolution_error(where, e) from None
        _check_scalar_conversions(where, ins, obj.in_params, in_types)
        type_map = _kernel._TypeMap(type_map._pairs + (("IndexT", "int32"),))
        infos = (_input_infos(ins, in_types, 1) + [_ndarray_info(t, 0) for t in out_types]
                 + [_indexer_info(1), _indexer_info(0), _scalar_info(np.int32)])     # _block_stride
        block_size = _reduction._get_block_specs(1 << 20, 1, 1, -1)[0]
        _compile(where, arch, lambda: _reduction._ReductionKernel_get_cached_function.__wrapped__(
            nin, nout, obj._params, tuple(infos), type_map, obj.name, block_size, obj.reduce_type, obj.identity,
            obj.map_expr, obj.reduce_expr, obj.post_map_expr, obj.preamble, obj.options))


def _scalar_type(kind, dtype):
    t = _array_dtype(kind, dtype)
    return None if t is None else t.type


# C parameter types of raw kernels and the dtypes whose values CuPy passes for them
_C_DTYPES = {
    "bool": "bool", "char": "int8", "signed char": "int8", "unsigned char": "uint8", "short": "int16",
    "unsigned short": "uint16", "int": "int32", "unsigned int": "uint32", "unsigned": "uint32",
    "long long": "int64", "unsigned long long": "uint64", "long": "int64", "unsigned long": "uint64",
    "size_t": "uint64", "ptrdiff_t": "int64", "float": "float32", "double": "float64", "half": "float16",
    "__half": "float16", "float16": "float16", "int8_t": "int8", "uint8_t": "uint8", "int16_t": "int16",
    "uint16_t": "uint16", "int32_t": "int32", "uint32_t": "uint32", "int64_t": "int64", "uint64_t": "uint64",
}


def _raw_parameters(kernel) -> list[tuple[str, str, bool]]:
    """(name, C type, is pointer) of each parameter of the raw kernel's entry point."""
    m = re.search(r"\b__global__\b[^;{]*?\b" + re.escape(kernel.name) + r"\s*\(([^)]*)\)", kernel.code, re.S)
    if m is None:
        raise KernelCheckError(f"kernel {kernel.name} (raw): no __global__ function {kernel.name!r} in its source")
    params = []
    for text in (p.strip() for p in m.group(1).split(",") if p.strip()):
        pointer = "*" in text
        words = text.replace("*", " ").replace("__restrict__", " ").split()
        name, ctype = words[-1], " ".join(w for w in words[:-1] if w not in ("const", "volatile"))
        params.append((name, ctype, pointer))
    return params


def _check_raw(kernel, dtype, arch) -> None:
    # CuPy passes a raw kernel's arguments as they are: each must match its C parameter in size and kind
    import cupy
    from cupy._core import raw
    params = _raw_parameters(kernel)
    for call in kernel.calls:
        where = _where(kernel, dtype, call)
        if len(call) != len(params):
            raise KernelCheckError(f"{where}: the kernel takes {len(params)} arguments, the call passes {len(call)}")
        for kind, (name, ctype, pointer) in zip(call, params):
            expected = _C_DTYPES.get(ctype)
            if expected is None:
                raise KernelCheckError(f"{where}: parameter {name!r} has type {ctype!r}, which the check cannot map")
            passed = _array_dtype(kind, dtype)
            if pointer != (passed is not None):
                raise KernelCheckError(f"{where}: parameter {name!r} ({ctype}{' *' if pointer else ''}) gets {kind}")
            passed = passed if pointer else _scalar_dtype(kind)
            if passed != np.dtype(expected):
                raise KernelCheckError(f"{where}: parameter {name!r} ({ctype}{' *' if pointer else ''}) is "
                                       f"{expected}, the call passes {passed}")
    obj = cuda_registry.build(kernel, cupy)
    state = obj.__getstate__()
    where = f"kernel {kernel.name} (raw)"
    _compile(where, arch, lambda: raw._get_raw_module.__wrapped__(
        state["code"], state["file_path"], state["options"], state["backend"], state["translate_cucomplex"],
        state["enable_cooperative_groups"], state["jitify"], state["name_expressions"], None
    ).get_function(obj.name))
