"""The boxed CPU fallback for ops the npu registers no kernel for.

Registered with ``Library("_", "IMPL").fallback(cpu_fallback, "PrivateUse1")`` as
the PrivateUse1 tutorial describes: npu inputs are copied to the cpu, the op's
CPU kernel runs, results come back to the input's device; in-place and ``out=``
arguments are written back into the original npu tensors, which are returned.
The first call of each op warns (once per process, whatever the warnings
filter); ``NPUSIM_FALLBACK=silent`` hides it and ``=error`` refuses instead.
View ops, factories and random ops never fall back: a silent copy would break
their meaning.
"""
from __future__ import annotations

import threading
import warnings

from .. import Tensor
from .. import device as _device
from ..library import DispatchKey, DispatchKeySet
from ..privateuse1 import array_of, bump_version, device_of, from_array, log_api_usage_once, replace_array
from ..privateuse1.codegen import user_stacklevel
from .memory import memory
from .runtime import runtime
from .transfer import from_host, to_host

CPU = _device("cpu")    # devices are interned: identity tells a cpu tensor

_CPU_KEYS = DispatchKeySet(DispatchKey.CPU)
_lock = threading.Lock()
_warned: set = set()
_counts: dict = {}
_mode_override = None


def set_mode(mode):
    """'warn', 'silent' or 'error' for this process (overrides NPUSIM_FALLBACK); None restores it."""
    global _mode_override
    if mode not in (None, "warn", "silent", "error"):
        raise ValueError(f"fallback mode must be 'warn', 'silent' or 'error', got {mode!r}")
    _mode_override = mode


def mode() -> str:
    return _mode_override or runtime.config.fallback


def stats() -> dict:
    with _lock:
        return dict(_counts)


def reset_stats() -> None:
    with _lock:
        _counts.clear()


def _packet_name(op) -> str:
    return f"{op.namespace}::{op._schema.name}"


_reasons: dict = {}     # op -> why it must not fall back ("" when it may)


def _refuse_reason(op):
    try:
        return _reasons[op]
    except KeyError:
        reason = _reasons[op] = _why_not(op) or ""
        return reason


def _why_not(op):
    schema = op._schema
    if any(r.type.alias is not None and not r.type.is_write for r in schema.returns):
        return "returns a view of its input, which a copy to the CPU cannot preserve"
    if not schema.tensor_args:
        return "creates tensors (a factory) and has no input to copy"
    if any(a.type.base == "Generator" for a in schema.arguments):
        return "draws random numbers, which must come from the npu's own generator"
    return None


# Copies below this many bytes are never worth checking early.
_EARLY = 1 << 20


def _check_expanded_copy(x) -> None:
    """Refuse, as the device's OutOfMemoryError, the CPU copy of an input that reads its storage many times
    (an expanded view) when the copy could not fit the device: in emulation that copy takes the host memory the
    device's capacity stands for, and the op's result (a sort's values, a nonzero's indices) grows with it.
    Memory the input already holds is no reason to refuse: only the expansion is checked."""
    a = array_of(x)
    if a.nbytes > _EARLY and a.nbytes > x.untyped_storage().nbytes():
        alloc = memory.emulated(device_of(x).index)     # in cuda mode CuPy's own copy fails cleanly
        if alloc is not None:
            alloc.check(a.nbytes)


def _to_cpu(x, seen):
    if isinstance(x, Tensor):
        if device_of(x) is CPU:
            return x
        _check_expanded_copy(x)
        cpu = from_array(to_host(array_of(x)), CPU)
        seen.append((cpu, x))
        return cpu
    if isinstance(x, (list, tuple)):
        return type(x)(_to_cpu(y, seen) for y in x)
    return x


class _OpFacts:
    """What the fallback needs to know of an op, worked out on its first call (the schema does not change)."""

    __slots__ = ("name", "usage_key", "reason", "mutable")

    def __init__(self, op):
        self.name = _packet_name(op)
        self.usage_key = "npusim.npu.cpu_fallback." + self.name
        self.reason = _refuse_reason(op)
        # each written argument: (its name, its position or None when keyword-only)
        self.mutable = tuple((a.name, None if a.kwarg_only else _position(op, a.name))
                             for a in op._schema.mutable_args)


_facts: dict = {}


def _facts_of(op) -> _OpFacts:
    try:
        return _facts[op]
    except KeyError:
        f = _facts[op] = _OpFacts(op)
        return f


def cpu_fallback(op, *args, **kwargs):
    facts = _facts_of(op)
    name = facts.name
    m = _mode_override or runtime.config.fallback
    if m == "error":
        raise NotImplementedError(
            f"Operator '{name}' is not currently supported on the npu backend, and the CPU fallback is disabled "
            f"(fallback mode 'error', set by NPUSIM_FALLBACK or npusim.npu.set_fallback_mode).")
    if facts.reason:
        raise NotImplementedError(f"Operator '{op.name_}' has no npu kernel and cannot fall back to the CPU: it "
                                  f"{facts.reason}. Register an npu kernel for it.")
    _check_one_device(args, kwargs)
    log_api_usage_once(facts.usage_key)
    with _lock:
        _counts[name] = _counts.get(name, 0) + 1
        first = name not in _warned
        if first:
            _warned.add(name)
    if first and m == "warn":
        # the depth between the user's call and this fallback varies (Autograd/Autocast keys, profiling
        # callbacks, Tensor methods, composite ops): the user's line is found, not assumed
        warnings.warn(f"Operator '{name}' is not currently supported on the npu backend and will fall back to run "
                      f"on the CPU. This may have performance implications.", UserWarning,
                      stacklevel=user_stacklevel())
    moved = []
    cpu_args = [_to_cpu(a, moved) for a in args]
    cpu_kwargs = {k: _to_cpu(v, moved) for k, v in kwargs.items()} if kwargs else kwargs
    device = device_of(moved[0][1]) if moved else None
    result = op.redispatch(_CPU_KEYS, *cpu_args, **cpu_kwargs)
    # Mutated arguments: write the CPU result back into the original npu tensors.
    originals = {id(cpu): orig for cpu, orig in moved}
    for arg_name, pos in facts.mutable:
        if pos is None:
            cpu_t = cpu_kwargs.get(arg_name)
        else:
            cpu_t = cpu_args[pos] if pos < len(cpu_args) else cpu_kwargs.get(arg_name)
        orig = originals.get(id(cpu_t))
        if orig is not None:
            _write_back(orig, cpu_t)
    return _restore(result, originals, device)


def _tensors(values):
    for v in values:
        if isinstance(v, Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from _tensors(v)


def _check_one_device(args, kwargs) -> None:
    """The op would have run on one device: refuse npu/cpu (or npu:0/npu:1) mixes as a kernel would."""
    first = None
    for group in (args, kwargs.values()):
        for v in group:
            if isinstance(v, Tensor):
                ts = (v,)
            elif isinstance(v, (list, tuple)):
                ts = _tensors(v)
            else:
                continue
            for t in ts:
                d = device_of(t)
                if d is CPU and array_of(t).ndim == 0:
                    continue  # cpu scalars may join an npu op, as in torch
                if first is None:
                    first = d
                elif d is not first:
                    raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two "
                                       f"devices, {first} and {d}!")


def _position(op, name) -> int:
    positional = [a.name for a in op._schema.arguments if not a.kwarg_only]
    return positional.index(name) if name in positional else len(positional) + 1


def _write_back(orig: Tensor, cpu_t: Tensor) -> None:
    if array_of(orig).shape != array_of(cpu_t).shape:
        replace_array(orig, from_host(array_of(cpu_t), device_of(orig)))
    else:
        array_of(orig)[...] = from_host(array_of(cpu_t), device_of(orig))
    bump_version(orig)


def _restore(result, originals, device):
    if isinstance(result, Tensor):
        orig = originals.get(id(result))
        if orig is not None:
            return orig
        if device is None or device_of(result) is not CPU:
            return result
        return from_array(from_host(array_of(result), device), device)
    if isinstance(result, (list, tuple)):
        return type(result)([_restore(r, originals, device) for r in result])
    return result
