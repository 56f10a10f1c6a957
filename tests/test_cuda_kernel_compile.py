"""Every CUDA-source kernel npusim hands CuPy resolves its argument types and compiles for sm_80 and sm_90.

The compile tests need real CuPy with NVRTC (``pip install -e '.[cuda-check]'``)
but no GPU; they skip without it, unless NPUSIM_REQUIRE_CUDA_COMPILE_CHECK=1,
and always skip when the ``cupy`` on the path is the tests' stand-in. The
guards below them (no kernel outside the registry, declared argument kinds
match the call sites) need neither and run everywhere.
"""
from __future__ import annotations

import dataclasses
import os
import sys

import numpy as np
import pytest

import cuda_compile_check as check
import npusim
from npusim.kernels import cuda_registry


def require_compiler() -> None:
    reason = check.standin_reason()
    if reason:
        pytest.skip(reason)
    reason = check.unavailable_reason()
    if reason:
        if os.environ.get(check.REQUIRE_ENV) == "1":
            pytest.fail(f"{check.REQUIRE_ENV}=1, but the CUDA compile check cannot run: {reason}", pytrace=False)
        pytest.skip(f"CUDA compile check skipped: {reason}; pip install -e '.[cuda-check]' enables it")


def _case_id(case) -> str:
    kernel, dtype, arch = case
    return f"{kernel.name}-{dtype or 'raw'}-sm_{arch}"


CASES = check.cases()


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_kernel_resolves_and_compiles(case):
    require_compiler()
    kernel, dtype, arch = case
    try:
        check.check_kernel(kernel, dtype, arch)
        return
    except check.KernelCheckError as e:
        failure = str(e)
    pytest.fail(failure, pytrace=False)     # outside the except: the message alone, not a chained traceback


# --- the check itself catches what it is for ---------------------------------------------------------------------

def _declared(name: str):
    return next(k for k in check.declared_kernels() if k.name == name)


def test_a_placeholder_only_a_scalar_carries_fails_before_compiling():
    require_compiler()
    # add_alpha as first written: alpha typed by a placeholder no array binds (CuPy raises KeyError: 'S')
    unbound = dataclasses.replace(_declared("npusim_add_alpha"), in_params="T x, T y, S alpha")
    with pytest.raises(check.KernelCheckError, match=r"npusim_add_alpha .*\[float32\].*KeyError: 'S'"):
        check.check_kernel(unbound, "float32", "80")


def test_a_compile_error_names_kernel_dtype_arch_and_the_compiler_message():
    require_compiler()
    broken = dataclasses.replace(_declared("npusim_sigmoid"), operation="y = npusim_no_such_function(x);")
    with pytest.raises(check.KernelCheckError) as info:
        check.check_kernel(broken, "float16", "90")
    message = str(info.value)
    assert "npusim_sigmoid" in message and "[float16]" in message and "sm_90" in message
    assert 'identifier "npusim_no_such_function" is undefined' in message


def test_raw_kernel_arguments_must_match_their_c_parameters():
    require_compiler()
    narrow = dataclasses.replace(_declared("philox4x64_raw"), calls=(
        (cuda_registry.numpy_scalar("uint32"),) * 3 + (cuda_registry.array_of("uint64"),),))
    with pytest.raises(check.KernelCheckError, match=r"'key' \(unsigned long long\) is uint64, the call passes uint32"):
        check.check_kernel(narrow, None, "80")


def test_the_check_leaves_cupy_as_it_found_it():
    require_compiler()
    from cupy.cuda import compiler
    before = (compiler._get_arch, compiler._get_arch_for_options_for_nvrtc, compiler.function,
              os.environ.get("CUPY_CACHE_IN_MEMORY"))
    with check.offline_nvrtc("90"):
        assert compiler._get_arch() == "90"
    assert (compiler._get_arch, compiler._get_arch_for_options_for_nvrtc, compiler.function,
            os.environ.get("CUPY_CACHE_IN_MEMORY")) == before


# --- guards that need no CuPy ---------------------------------------------------------------------------------------

def test_no_cuda_kernel_is_built_outside_the_registry():
    found = check.kernel_constructions()
    assert not found, ("CuPy kernels built outside npusim.kernels.cuda_registry escape the CUDA compile check; "
                       "declare them with cuda_registry.elementwise/reduction/raw and build them with "
                       "cuda_registry.build:\n" + "\n".join(found))


def test_kernel_declarations_run_at_import():
    found = check.declarations_off_module_level()
    assert not found, ("declare CUDA kernels at module level, where importing the module registers them for the "
                       "compile check:\n" + "\n".join(found))
    assert check.declared_kernels(), "no CUDA kernel is declared: the compile check would check nothing"


class _RecordingCupy:
    """Enough of CuPy for npusim's kernel call sites to run on NumPy arrays; records each call's argument kinds."""

    def __init__(self):
        self.seen: dict[str, set[tuple[str, ...]]] = {}

    def __getattr__(self, name):     # dtypes and array creation come from NumPy
        return getattr(np, name)

    def _record(self, name, args):
        self.seen.setdefault(name, set()).add(tuple(_kind_of(a) for a in args))

    def ElementwiseKernel(self, in_params, out_params, operation, name, **kwargs):  # noqa: N802 - CuPy's name
        def call(*args):
            self._record(name, args)
            return np.zeros_like(args[0])
        return call

    def ReductionKernel(self, in_params, out_params, map_expr, reduce_expr, post_map_expr, identity,  # noqa: N802
                        name, **kwargs):
        def call(*args):
            self._record(name, args)
            return np.zeros((), args[0].dtype)
        return call

    def RawKernel(self, code, name, **kwargs):  # noqa: N802
        def launch(grid, block, args, **launch_kwargs):
            self._record(name, args)
        return launch


def _kind_of(arg) -> str:
    if isinstance(arg, np.ndarray):
        return cuda_registry.array_of(arg.dtype.name)
    if isinstance(arg, np.generic):
        return cuda_registry.numpy_scalar(arg.dtype.name)
    return {bool: cuda_registry.PY_BOOL, int: cuda_registry.PY_INT, float: cuda_registry.PY_FLOAT}[type(arg)]


def _declared_kinds(kernel) -> set[tuple[str, ...]]:
    """The declared calls with ``ARRAY`` spelt out for each of the kernel's dtypes."""
    return {tuple(cuda_registry.array_of(d) if k == cuda_registry.ARRAY else k for k in call)
            for call in kernel.calls for d in (kernel.dtypes or (None,))}


def test_declared_argument_kinds_are_what_the_call_sites_pass(monkeypatch):
    from npusim.backend import cupy_kernels
    from npusim.kernels import random_cuda as cupy_philox
    from npusim.native.registration import KERNELS
    cupy = _RecordingCupy()
    # the hot ops' plain case (cpu tensors take it as npu tensors do: it looks at the arrays only)
    fast = cupy_kernels.specialised(KERNELS, cupy)
    for dtype in ("float16", "float32", "float64"):
        x = npusim.from_numpy(np.ones((3, 4), dtype))
        y = npusim.from_numpy(np.ones((3, 4), dtype))
        fast["add.Tensor"](x, y, 0.5)
        fast["add.Tensor"](x, y, 3)
        fast["sigmoid"](x)
        fast["gelu"](x)
        fast["gelu"](x, approximate="tanh")
        fast["linalg_vector_norm"](x)
    # the Philox stream on a GPU
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setattr(cupy_philox, "_kernel", None)
    cupy_philox.philox_raw(7, 11, 10)

    declared = {k.name: k for k in check.declared_kernels()}
    for name, calls in cupy.seen.items():
        assert name in declared, f"{name} runs but is not declared in npusim.kernels.cuda_registry"
        undeclared = calls - _declared_kinds(declared[name])
        assert not undeclared, f"{name} is called with argument kinds its declaration lacks: {sorted(undeclared)}"
    missed = sorted(set(declared) - set(cupy.seen))
    assert not missed, f"drive the call sites of {missed} above, so their declared argument kinds are checked"
