"""The table of Tensor-level kernels by overload name, and how to register it.

Every module of this package may define ``KERNELS`` (backend kernels), ``COMPOSITE``
(CompositeExplicitAutograd) and ``COMPOSITE_IMPLICIT`` (CompositeImplicitAutograd) tables; they are
found by walking the package, so a new module's kernels are registered without being listed here.
``register_kernels(lib, key)`` puts every kernel on one dispatch key of a Library; the cpu device and
the npu backend both call it (the npu leaves some ops out on purpose so they run through its CPU fallback).
"""
from __future__ import annotations

import importlib
import pkgutil

from . import elementwise_binary as B
from . import factories as F
from . import elementwise_unary as U
from . import views as V

# The tables a native module may define; each maps an overload name to its kernel.
TABLES = ("KERNELS", "COMPOSITE", "COMPOSITE_IMPLICIT")
# Modules of the package that hold no kernels of their own: shared helpers and the registration itself.
NOT_KERNEL_MODULES = frozenset({"common", "registration", "cpu_registration", "complex_support",
                                "limited_dtype_support", "dtype_guard"})


def _binary_family(table, name, fns, *, scalar=True, tensor_overload="Tensor", out_names=("out",),
                   inplace=True):
    functional, out_, inplace_fn = fns
    if tensor_overload:
        table[f"{name}.{tensor_overload}"] = functional
    else:
        table[name] = functional
    if scalar:
        table[f"{name}.Scalar"] = functional
    for o in out_names:
        table[f"{name}.{o}"] = out_
    if inplace:
        table[f"{name}_.Tensor" if scalar or tensor_overload else f"{name}_"] = inplace_fn
        if scalar:
            table[f"{name}_.Scalar"] = inplace_fn


def _core_table() -> dict:
    """The elementwise, view and factory kernels, named here because their overload families are regular."""
    t = {}
    _binary_family(t, "add", (B.add, B.add_out, B.add_))
    _binary_family(t, "sub", (B.sub, B.sub_out, B.sub_))
    _binary_family(t, "mul", (B.mul, B.mul_out, B.mul_))
    t["rsub.Tensor"] = t["rsub.Scalar"] = B.rsub
    for ov in ("Tensor", "Scalar", "Tensor_mode", "Scalar_mode"):
        t[f"div.{ov}"] = B.div
        t[f"div_.{ov}"] = B.div_
    t["div.out"] = t["div.out_mode"] = B.div_out
    t["pow.Tensor_Tensor"] = t["pow.Tensor_Scalar"] = B.pow_
    t["pow.Tensor_Tensor_out"] = t["pow.Tensor_Scalar_out"] = B.pow_out
    t["pow.Scalar"] = B.pow_scalar_base
    t["pow.Scalar_out"] = B.pow_scalar_base_out
    t["pow_.Scalar"] = t["pow_.Tensor"] = B.pow_inplace
    _binary_family(t, "remainder", (B.remainder, B.remainder_out, B.remainder_), out_names=("Tensor_out", "Scalar_out"))
    t["remainder.Scalar_Tensor"] = B.remainder
    _binary_family(t, "fmod", (B.fmod, B.fmod_out, B.fmod_), out_names=("Tensor_out", "Scalar_out"))
    t["floor_divide"] = t["floor_divide.Scalar"] = B.floor_divide
    t["floor_divide.out"] = B.floor_divide_out
    t["floor_divide_.Tensor"] = t["floor_divide_.Scalar"] = B.floor_divide_
    t["maximum"], t["maximum.out"] = B.maximum, B.maximum_out
    t["minimum"], t["minimum.out"] = B.minimum, B.minimum_out
    t["max.other"], t["min.other"] = B.maximum, B.minimum
    t["atan2"], t["atan2.out"], t["atan2_"] = B.atan2, B.atan2_out, B.atan2_
    for name, fns in B.COMPARISONS.items():
        _binary_family(t, name, fns, out_names=("Tensor_out", "Scalar_out"))
    for name, (f, o, i) in B.LOGICAL.items():
        t[name], t[f"{name}.out"], t[f"{name}_"] = f, o, i
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        fns = (getattr(B, name), getattr(B, name + "_out"), getattr(B, name + "_"))
        _binary_family(t, name, fns, out_names=("Tensor_out", "Scalar_out"))
    t["lerp.Scalar"] = t["lerp.Tensor"] = B.lerp
    t["lerp.Scalar_out"] = t["lerp.Tensor_out"] = B.lerp_out
    t["lerp_.Scalar"] = t["lerp_.Tensor"] = B.lerp_
    t["where.self"] = t["where.ScalarOther"] = t["where.ScalarSelf"] = t["where.Scalar"] = B.where
    t["where.self_out"] = B.where_out
    t["clamp"] = t["clamp.Tensor"] = B.clamp
    t["clamp.out"] = t["clamp.Tensor_out"] = B.clamp_out
    t["clamp_"] = t["clamp_.Tensor"] = B.clamp_
    t["clamp_min"] = t["clamp_min.Tensor"] = B.clamp_min
    t["clamp_max"] = t["clamp_max.Tensor"] = B.clamp_max
    t["clamp_min_"], t["clamp_max_"] = B.clamp_min_, B.clamp_max_
    # unary
    for name, (f, o, i) in {**U.FLOAT, **U.SAME, **U.PREDICATES}.items():
        t[name] = f
        if f"{name}.out" in _OUT_OK:
            t[f"{name}.out"] = o
        if f"{name}_" in _OUT_OK:
            t[f"{name}_"] = i
    t["round"] = t["round.decimals"] = U.round_
    t["round.out"] = t["round.decimals_out"] = U.round_out
    t["round_"] = t["round_.decimals"] = U.round_inplace
    t["square"], t["square_"] = U.square, U.square_
    t["relu"], t["relu_"] = U.relu, U.relu_
    t["nan_to_num"], t["nan_to_num.out"], t["nan_to_num_"] = U.nan_to_num, U.nan_to_num_out, U.nan_to_num_
    # views
    t.update({
        "view": V.view, "view.dtype": V.view_dtype, "reshape": V.reshape, "permute": V.permute,
        "transpose.int": V.transpose, "t": V.t, "expand": V.expand, "squeeze": V.squeeze,
        "squeeze.dim": V.squeeze, "squeeze.dims": V.squeeze, "unsqueeze": V.unsqueeze,
        "flatten.using_ints": V.flatten, "unflatten.int": V.unflatten, "narrow": V.narrow,
        "select.int": V.select, "slice.Tensor": V.slice_, "as_strided": V.as_strided,
        "contiguous": V.contiguous, "clone": V.clone, "detach": V.detach, "alias": V.alias,
        "diagonal": V.diagonal, "unbind.int": V.unbind, "split.Tensor": V.split,
        "split_with_sizes": V.split_with_sizes, "chunk": V.chunk,
    })
    # factories, copy, fill
    t.update({
        "empty.memory_format": F.empty, "empty_strided": F.empty_strided, "zeros": F.zeros, "ones": F.ones,
        "full": F.full, "scalar_tensor": F.scalar_tensor, "empty_like": F.empty_like,
        "zeros_like": F.zeros_like, "ones_like": F.ones_like, "full_like": F.full_like, "eye": F.eye,
        "eye.m": F.eye, "arange": F.arange, "arange.start": F.arange, "arange.start_step": F.arange,
        "arange.start_out": F.arange_out, "linspace": F.linspace, "copy_": F.copy_,
        "fill_.Scalar": F.fill_, "fill_.Tensor": F.fill_, "zero_": F.zero_,
        "_local_scalar_dense": F.local_scalar_dense, "resize_": F.resize_,
    })
    return t


def _schema_names():
    from ..core.dispatch.native_functions import schema_lines
    return {line.split("(")[0] for line in schema_lines()}


def kernel_modules(package=None) -> list:
    """Every module of ``package`` (npusim.native by default) that may define kernel tables, in name order."""
    if package is None:
        package = importlib.import_module(__package__)
    return [importlib.import_module(f"{package.__name__}.{info.name}")
            for info in pkgutil.iter_modules(package.__path__)
            if info.name not in NOT_KERNEL_MODULES and not info.name.startswith("_")]


def merge_tables(modules, base=None) -> dict:
    """``{table: {name: kernel}}`` from every module's ``KERNELS`` / ``COMPOSITE`` / ``COMPOSITE_IMPLICIT``.

    ``base`` holds tables already built (the core table). No module may override another's entry: a name
    defined twice is an error here rather than whichever module happened to be read last.
    """
    merged = {table: dict((base or {}).get(table, {})) for table in TABLES}
    owner = {(table, name): "the core table" for table in TABLES for name in merged[table]}
    for module in modules:
        for table in TABLES:
            for name, fn in getattr(module, table, {}).items():
                if (table, name) in owner:
                    raise RuntimeError(f"{module.__name__}.{table} defines {name!r}, already defined by "
                                       f"{owner[table, name]}")
                owner[table, name] = module.__name__
                merged[table][name] = fn
    return merged


_OUT_OK = _schema_names()
_TABLES = merge_tables(kernel_modules(), base={"KERNELS": _core_table()})
KERNELS = _TABLES["KERNELS"]
# Device-independent compositions, registered once for every backend:
# explicit ones are kernels in their own right, implicit ones decompose into other ops.
COMPOSITE = _TABLES["COMPOSITE"]
COMPOSITE_IMPLICIT = _TABLES["COMPOSITE_IMPLICIT"]
# An op that decomposes has no backend kernel of its own: one would take the autograd key from the decomposition.
for _name in COMPOSITE_IMPLICIT:
    KERNELS.pop(_name, None)


def register_kernels(lib, key, exclude=()):
    """Register every kernel (minus ``exclude``) on ``key`` of the IMPL library ``lib``."""
    for name, fn in KERNELS.items():
        if name.split(".")[0] in exclude or name in exclude:
            continue
        lib.impl(name, fn, key)
