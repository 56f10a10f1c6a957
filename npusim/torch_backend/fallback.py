"""The boxed CPU fallback for aten ops the npu has no kernel for, under npusim's fallback policy.

``Library("_", "IMPL").fallback(cpu_fallback, "PrivateUse1")``: npu arguments become CPU tensors aliasing the
same memory (no copy: the emulated npu's memory is the host's), the op's CPU kernel runs, mutated arguments are
already written (an ``out=`` the kernel resized is moved back onto the npu), and new results come back to the
npu. As npusim's own fallback: warns once per op (``NPUSIM_FALLBACK=silent`` hides it, ``=error`` refuses),
counts calls (``torch.npu.fallback_stats()``), and refuses view ops and random ops, whose meaning a CPU run
would change.
"""
from __future__ import annotations

import os
import threading
import warnings

import torch

import npusim

from .adoption import CPU_KEYS, NotAdoptable, cpu_alias, npu_from_host

_lock = threading.Lock()
_warned: set = set()
_counts: dict = {}
_mode_override = None
_reasons: dict = {}


def set_mode(mode) -> None:
    """'warn', 'silent' or 'error' for this process (None: back to NPUSIM_FALLBACK); npusim's own npu too."""
    global _mode_override
    if mode not in (None, "warn", "silent", "error"):
        raise ValueError(f"fallback mode must be 'warn', 'silent' or 'error', got {mode!r}")
    _mode_override = mode
    npusim.npu.set_fallback_mode(mode)


def mode() -> str:
    if _mode_override is not None:
        return _mode_override
    m = os.environ.get("NPUSIM_FALLBACK", "warn")
    return m if m in ("warn", "silent", "error") else "warn"


def stats() -> dict:
    """Calls per op through this fallback and npusim's own (an npusim kernel that itself falls back)."""
    merged = dict(npusim.npu.fallback_stats())
    with _lock:
        for k, v in _counts.items():
            merged[k] = merged.get(k, 0) + v
    return merged


def reset_stats() -> None:
    npusim.npu.reset_fallback_stats()
    with _lock:
        _counts.clear()


def _why_not(op) -> str:
    schema = op._schema
    if any(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns):
        return "returns a view of its input, which a run on the CPU cannot preserve"
    if any(a.type.kind() == "OptionalType" and str(a.type) == "Generator?" or str(a.type) == "Generator"
           for a in schema.arguments):
        return "draws random numbers, which must come from the npu's own generator"
    return ""


def _refuse_reason(op) -> str:
    try:
        return _reasons[op]
    except KeyError:
        reason = _reasons[op] = _why_not(op)
        return reason


def _to_cpu(v, moved):
    if isinstance(v, torch.Tensor):
        if v.device.type != "npu":
            return v
        try:
            c = cpu_alias(v)
        except NotAdoptable:        # a GPU's memory: a copy, written back below when mutated
            c = torch.from_numpy(_host_copy(v))
        moved.append((c, v, c.data_ptr(), tuple(c.shape)))
        return c
    if isinstance(v, (list, tuple)):
        return type(v)(_to_cpu(x, moved) for x in v)
    if isinstance(v, torch.device) and v.type == "npu":
        return torch.device("cpu")
    return v


def _host_copy(t):
    from .adoption import array_view
    return array_view(t).get()


def cpu_fallback(op, *args, **kwargs):
    name = op._schema.name     # per op, as npusim counts: 'aten::renorm' for renorm and renorm.out
    m = mode()
    if m == "error":
        raise NotImplementedError(
            f"Operator '{name}' is not currently supported on the npu backend, and the CPU fallback is disabled "
            f"(fallback mode 'error', set by NPUSIM_FALLBACK or torch.npu.set_fallback_mode).")
    reason = _refuse_reason(op)
    if reason:
        raise NotImplementedError(f"Operator '{name}' has no npu kernel and cannot fall back to the CPU: it "
                                  f"{reason}.")
    with _lock:
        _counts[name] = _counts.get(name, 0) + 1
        first = name not in _warned
        _warned.add(name)
    if first and m == "warn":
        warnings.warn(f"Operator '{name}' is not currently supported on the npu backend and will fall back to run "
                      f"on the CPU. This may have performance implications.", UserWarning, stacklevel=2)
    moved = []
    outs = _out_names(op)
    args = _numbers_as_tensors(op, args)
    cpu_args = [_to_cpu(a, moved) for a in args]
    cpu_kwargs = {k: (_out_to_cpu(v, moved) if k in outs else _to_cpu(v, moved)) for k, v in kwargs.items()}
    result = op.redispatch(CPU_KEYS, *cpu_args, **cpu_kwargs)
    originals = {}
    for cpu_t, orig, ptr, shape in moved:
        originals[id(cpu_t)] = orig
        # written in place through the alias, unless it is a resizable out= copy or a GPU's copy
        if cpu_t.data_ptr() != ptr or tuple(cpu_t.shape) != shape or not _is_alias(cpu_t, orig):
            _move_back(orig, cpu_t)
    return _restore(result, originals)


_outs: dict = {}
_tensor_positions: dict = {}


def _numbers_as_tensors(op, args):
    """torch hands a Python kernel the numbers a user wrote for Tensor arguments (``x * 2``); the CPU kernel
    needs tensors: 0-dim ones of the type a wrapped number takes in torch's promotion."""
    try:
        positions = _tensor_positions[op]
    except KeyError:
        positions = _tensor_positions[op] = tuple(
            i for i, a in enumerate(op._schema.arguments) if not a.kwarg_only and str(a.type) == "Tensor")
    if not positions or not any(i < len(args) and not isinstance(args[i], torch.Tensor) for i in positions):
        return args
    args = list(args)
    for i in positions:
        v = args[i] if i < len(args) else None
        if isinstance(v, bool):
            args[i] = torch.tensor(v)
        elif isinstance(v, int):
            args[i] = torch.tensor(v, dtype=torch.int64)
        elif isinstance(v, float):
            args[i] = torch.tensor(v, dtype=torch.get_default_dtype())
        elif isinstance(v, complex):
            args[i] = torch.tensor(v, dtype=torch.complex64 if torch.get_default_dtype() != torch.float64
                                   else torch.complex128)
    return args


def _out_names(op) -> frozenset:
    """The op's ``out=`` arguments (kwarg-only and written): the CPU kernel may resize them."""
    try:
        return _outs[op]
    except KeyError:
        names = _outs[op] = frozenset(a.name for a in op._schema.arguments
                                      if a.kwarg_only and a.alias_info is not None and a.alias_info.is_write)
        return names


def _out_to_cpu(v, moved):
    """A resizable CPU tensor standing for an npu ``out=`` (a CPU alias of npu memory cannot grow)."""
    if isinstance(v, torch.Tensor) and v.device.type == "npu":
        c = torch.empty(v.shape, dtype=v.dtype)
        moved.append((c, v, -1, None))
        return c
    if isinstance(v, (list, tuple)):
        return type(v)(_out_to_cpu(x, moved) for x in v)
    return v


def _is_alias(cpu_t, orig) -> bool:
    return cpu_t.untyped_storage().data_ptr() == orig.untyped_storage().data_ptr()


def _move_back(orig, cpu_t) -> None:
    if tuple(orig.shape) == tuple(cpu_t.shape) and orig.is_contiguous() == cpu_t.is_contiguous():
        with torch.no_grad():
            orig.copy_(cpu_t)   # an out= of the right size, or a GPU's copy: written back
        return
    fresh = npu_from_host(cpu_t)
    with torch.no_grad():
        orig.set_(fresh.untyped_storage(), 0, fresh.shape, fresh.stride())


def _restore(result, originals):
    if isinstance(result, torch.Tensor):
        orig = originals.get(id(result))
        if orig is not None:
            return orig
        if result.device.type != "cpu":
            return result
        return npu_from_host(result)
    if isinstance(result, (list, tuple)):
        return type(result)(_restore(r, originals) for r in result)
    return result


def register(lib) -> None:
    lib.fallback(cpu_fallback, "PrivateUse1")
