"""The dispatcher: operators, their per-key kernel tables, fallbacks, and calls.

Every operator overload (``aten::add.Tensor``) owns a table of kernels keyed by
dispatch key. A call computes the key set of its tensor arguments, finds the
highest key with a kernel (fallthrough kernels are skipped, keys without a kernel
use the global fallback for that key, non-backend keys with neither fall
through), and calls it. The answer for a key set is memoised per overload, so the
common call is: key set, one dict lookup, call.

Each overload gets a dispatch function generated from its schema, so that
arguments bind with Python's own machinery and the key set is computed with
attribute reads rather than a generic loop.
"""
from __future__ import annotations

import builtins
import dataclasses
import functools
import itertools
import threading
import warnings

import numpy as np

from ..c10 import codegen, device_guard as _device_guard
from . import dispatch_tls
from ..c10 import dtype as _dtype_mod
from ..c10.device import PRIVATEUSE1, privateuse1_backend_name
from ..c10.device_hooks import on_refuse, refusal, resolve_target_device
from ..inference_tensors import INFERENCE_VC, check_write as check_inference_write
from ..c10.dispatch_keys import (
    ALIAS_KEYS, AUTOCAST_OF, AUTOGRAD_KEYS, AUTOGRAD_OF, BACKEND_KEYS, BACKEND_MASK, DispatchKey, DispatchKeySet,
    RUNTIME_KEYS, parse_key,
)
from .schema import FunctionSchema, SchemaType, parse_schema

_CPU_BIT = 1 << DispatchKey.CPU


def fallthrough_kernel():
    """A marker kernel: registering it means "skip this key and go lower"."""
    raise NotImplementedError("fallthrough_kernel() should never be called.")


class _Registration:
    """One kernel or fallback registration; ``where`` says which Library made it."""

    __slots__ = ("fn", "with_keyset", "where")

    def __init__(self, fn, with_keyset, where):
        self.fn, self.with_keyset, self.where = fn, with_keyset, where


# One lock guards every table and every memo write, so that a memo entry is never
# computed from a table that changed while it was being computed.
_lock = threading.RLock()
_OPS: dict[str, "OpOverload"] = {}                # "aten::add.Tensor" -> overload
_PACKETS: dict[str, "OpOverloadPacket"] = {}      # "aten::add" -> packet
_FALLBACKS: dict[DispatchKey, _Registration] = {}  # one boxed fallback per key, as in torch
_PENDING: dict[str, list[tuple]] = {}             # impls waiting for their define(): [(key, reg)]

# Globals every generated dispatch function reads. On the slow path a call first asks ``_RF_TICK()``
# for the function that takes it: normally always slow_call (ALWAYS_SLOW, set below); while sampled
# record-function callbacks are the only slow-path reason, core/record_function.py swaps in the
# ``pop`` of its list of sampling decisions (False for most calls: an op sampled out pays one C call
# and stays on the fast path).
GEN_GLOBALS: dict = {"_SLOW": 0}


def _set_slow(count):
    GEN_GLOBALS["_SLOW"] = count


dispatch_tls.on_slow_change(_set_slow)

# Hook installed by the record-function machinery: hook(op, keyset, args, kwargs).
_record_function_hook = None


def set_record_function_hook(hook) -> None:
    global _record_function_hook
    _record_function_hook = hook


# ``out=`` destinations: (offer, withdraw) from the array-kernel layer, installed with the native kernels.
# A backend kernel of an op whose one written argument is ``out`` runs with ``out``'s array offered as the
# place to compute the result in (see kernels/out_destination.py); core cannot import that layer itself.
_out_destination = None


def set_out_destination(offer, withdraw) -> None:
    global _out_destination
    _out_destination = (offer, withdraw)
    _invalidate_all()


# Wraps the aten kernels a backend key (or a decomposition) resolves to: native/complex_support.py refuses complex
# arguments to the ops not known to handle them. Installed by the native layer; core cannot import it.
_kernel_wrapper = None
# ``conditions(op, signature)``: (expressions, names they read) that are all false when the wrapper would call the
# kernel untouched, or None where it never wraps ``op``. The generated dispatch function evaluates them inline and,
# when all are false, calls the kernel resolved without the wrapper (``op._unwrapped``): the common dtypes pay no
# wrapper frame. Calls that do not come through it (redispatch, the slow path) keep the wrapped kernels.
_wrapper_conditions = None
# A kernel that redispatches below its key (the Autograd kernels) may carry, as ``BELOW_UNWRAPPED``, a variant that
# takes the kernels below from ``op._unwrapped``: resolved without the wrapper (wrap=False), the key serves that
# variant. Only a generated dispatch function that found every condition false calls those, and the arguments it
# passes down are the ones it tested, so the wrapper below would let them through too.
BELOW_UNWRAPPED = "_below_unwrapped"


def set_kernel_wrapper(wrap, conditions=None) -> None:
    """``wrap(op, kernel)`` gives the callable to run for an aten kernel (the kernel itself to leave it);
    ``conditions`` lets the dispatch functions skip the wrapper where it would do nothing (see above)."""
    global _kernel_wrapper, _wrapper_conditions
    _kernel_wrapper = wrap
    _wrapper_conditions = conditions
    _invalidate_all()


def _writes_only_out(op: OpOverload) -> bool:
    written = [a for a in op._schema.arguments if a.type.is_write]
    return len(written) == 1 and written[0].kwarg_only and written[0].name == "out"


def _into_out(fn, offer, withdraw):
    """``fn`` (an ``out=`` kernel) run with ``out``'s array offered when ``out`` is on the inputs' device."""
    def out_kernel(*args, **kwargs):
        out = kwargs.get("out")
        try:
            dev, dest = out._device, out._a
        except AttributeError:
            return fn(*args, **kwargs)
        inputs = []
        for x in itertools.chain(args, [v for k, v in kwargs.items() if k != "out"]):
            # an input that is ``out`` itself counts too: a kernel may read it after its first result is written
            for t in (x if x.__class__ is list or x.__class__ is tuple else (x,)):
                try:
                    a, d = t._a, t._device
                except AttributeError:
                    continue
                if d is not dev:
                    return fn(*args, **kwargs)
                inputs.append(a)
        if not offer(dest, inputs):
            return fn(*args, **kwargs)
        try:
            return fn(*args, **kwargs)
        finally:
            withdraw()
    return out_kernel


def _forget(op) -> None:
    """Drop ``op``'s resolved kernels, with and without the kernel wrapper (its kernels or the wrapper changed)."""
    op._memo.clear()
    op._unwrapped.clear()


def _invalidate_all() -> None:
    for op in _OPS.values():
        _forget(op)


def key_display_name(key: DispatchKey) -> str:
    """How torch names a key in messages: PrivateUse1 goes by the backend's name."""
    if key is DispatchKey.PrivateUse1:
        return privateuse1_backend_name()
    return key.name


# --- argument errors ---------------------------------------------------------

def _describe(v) -> str:
    if isinstance(v, (list, tuple)):
        return type(v).__name__ + " of [" + ", ".join(type(x).__name__ for x in v) + "]"
    return type(v).__name__


def _number_or_error(v, op, argname, position) -> int:
    """Key set contribution of a non-Tensor value in a Tensor slot (numbers are CPU scalars)."""
    if isinstance(v, (bool, int, float, complex)) or type(v).__module__ == "numpy" and hasattr(v, "dtype") and \
            v.ndim == 0:
        if v.__class__ is int and not _I64_MIN <= v <= _U64_MAX:   # torch's parser makes an int64 or uint64 of it
            raise OverflowError("int too big to convert" if v > 0 else "can't convert negative int to unsigned")
        return 0
    raise TypeError(f"{op._schema.name}(): argument '{argname}' (position {position}) must be Tensor, "
                    f"not {_describe(v)}")


def _list_keys(seq, op, argname, position, allow_none) -> int:
    ks = 0
    if not isinstance(seq, (list, tuple)):
        raise TypeError(f"{op._schema.name}(): argument '{argname}' (position {position}) must be "
                        f"tuple of Tensors, not {_describe(seq)}")
    for t in seq:
        try:
            ks |= t._ks
        except AttributeError:
            if t is None and allow_none:
                continue
            raise TypeError(f"{op._schema.name}(): argument '{argname}' (position {position}) must be "
                            f"tuple of Tensors, not {_describe(seq)}") from None
    return ks


# what torch's argument parser never reads as a number; other values pass (NumPy scalars, 0-d arrays, tensors)
_I64_MIN, _I64_MAX, _U64_MAX = -2 ** 63, 2 ** 63 - 1, 2 ** 64 - 1
_NOT_NUMBER = (str, bytes, list, tuple, dict, set, type)
_NOT_INT = _NOT_NUMBER + (float, complex, bool, np.bool_, np.floating, np.complexfloating)


def _python_signatures(op) -> int:
    """How many Python signatures torch's parser would try for ``op``: its overloads less the out= forms."""
    packet = _PACKETS.get(f"{op._ns}::{op._opname}")
    if packet is None:
        return 1
    ops = [_OPS.get(f"{op._ns}::{op._opname}" + (f".{o}" if o != "default" else "")) for o in packet.overloads()]
    return builtins.sum(1 for o in ops if o is not None and
                        not builtins.any(a.kwarg_only and a.type.is_write for a in o._schema.arguments)) or 1


def _bad_argument(op, argname, position, args, detail, what):
    """torch's TypeError for an argument of the wrong type: 'f(): argument 'x' (position n) must be ...' for a
    function with one signature, 'f() received an invalid combination of arguments - got (...)' otherwise."""
    name = op._schema.name
    if _python_signatures(op) > 1 and args is not None:
        got = ", ".join("Tensor" if _is_tensor(v) else type(v).__name__ for v in args[:position])
        return TypeError(f"{name}() received an invalid combination of arguments - got ({got}): {argname} must "
                         f"be {what}")
    if position is not None and name.endswith("_"):
        position -= 1     # an in-place op is a method: self is not counted
    where = "" if position is None else f" (position {position})"
    return TypeError(f"{name}(): argument '{argname}'{where} {detail}")


def _check_value(v, op, argname, kind, optional, position=None, args=None):
    """torch's error for a value that cannot fill a ``kind`` (int, Scalar, float) argument."""
    if v is None:
        bad = not optional
    elif kind == "bool":
        bad = not isinstance(v, (bool, np.bool_))
    elif kind == "str":
        bad = not isinstance(v, str)
    elif v.__class__ is int:
        # torch's parser reads an int argument as int64 and a Scalar's int as int64 or uint64
        if _I64_MIN <= v <= (_U64_MAX if kind == "Scalar" else _I64_MAX):
            return
        if kind == "int":
            raise ValueError("Overflow when unpacking long long")
        if kind == "Scalar":
            raise OverflowError("int too big to convert" if v > 0 else "can't convert negative int to unsigned")
        bad = False
    else:
        bad = isinstance(v, _NOT_INT if kind == "int" else _NOT_NUMBER) or \
            kind != "Scalar" and isinstance(v, complex)
    if bad:
        want = {"Scalar": "Number"}.get(kind, kind)
        raise _bad_argument(op, argname, position, args, f"must be {want}, not {_describe(v)}",
                            f"{'an int' if kind == 'int' else want}, not {type(v).__name__}")


def _check_ints(v, op, argname, optional, position=None, args=None):
    """The same for an int[] argument: a sequence of ints (or one int, as torch takes for int[1])."""
    if v is None:
        if not optional:
            raise _bad_argument(op, argname, position, args, "must be tuple of ints, not NoneType",
                                "a tuple of ints, not NoneType")
        return
    if isinstance(v, (list, tuple)):
        for i, x in enumerate(v):
            if x.__class__ is int and not _I64_MIN <= x <= _I64_MAX:
                raise _bad_argument(op, argname, position, None, f"failed to unpack the object at pos {i + 1} with "
                                    "error \"Overflow when unpacking long long\"", "")
            if x.__class__ is not int and isinstance(x, _NOT_INT) or x is None:
                raise _bad_argument(op, argname, position, args, f"must be tuple of ints, but found element of "
                                    f"type {type(x).__name__} at pos {i}", f"an int, not {type(x).__name__}")
    elif v.__class__ is int:
        _check_value(v, op, argname, "int", False, position, args)
    elif isinstance(v, _NOT_INT):
        raise _bad_argument(op, argname, position, args, f"must be tuple of ints, not {_describe(v)}",
                            f"an int, not {type(v).__name__}")


def _device_keys(d) -> int:
    """Key set of a factory call, from its ``device`` argument (None: the default device)."""
    return resolve_target_device(d)._ks


# --- operator objects ----------------------------------------------------------

class OpOverload:
    """One overload of an operator, e.g. ``npusim.ops.aten.add.Tensor``.

    Its dispatch function ``fn`` is generated on first use (reading ``op.fn`` or
    calling ``op``): most of the ~600 aten overloads are never called in a given
    program, and generating them all made ``import npusim`` slow. From then on the
    overload is the single instance of its own subclass whose ``__call__`` is the
    dispatch function itself, so ``op(x, y)`` costs no extra Python frame over
    ``op.fn(x, y)``.
    """

    def __init__(self, ns: str, schema: FunctionSchema, tags=()):
        self._ns = ns
        self._schema = schema
        self._opname = schema.name
        self._overloadname = schema.overload_name or "default"
        self.name_ = f"{ns}::{schema.name}" + (f".{schema.overload_name}" if schema.overload_name else "")
        self.tags = tuple(tags)
        self._kernels: dict[DispatchKey, list[_Registration]] = {}
        self._memo: dict[int, object] = {}
        self._unwrapped: dict[int, object] = {}     # the same without the kernel wrapper (_wrapper_conditions)
        self.__name__ = f"{schema.name}.{self._overloadname}"
        self.__qualname__ = self.__name__

    def __getattr__(self, name):
        # only reached while ``fn`` is not generated yet (afterwards it is an instance attribute)
        if name == "fn":
            return _materialize(self)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def name(self) -> str:
        return self.name_

    @property
    def overloadpacket(self) -> "OpOverloadPacket":
        return _PACKETS[f"{self._ns}::{self._opname}"]

    @property
    def namespace(self) -> str:
        return self._ns

    def __call__(self, *args, **kwargs):  # the first call only: _materialize replaces it
        return _materialize(self)(*args, **kwargs)

    def redispatch(self, keyset, *args, **kwargs):
        """Call the kernel that serves ``keyset`` directly (no thread-local keys)."""
        ks = int(keyset)
        try:
            fn = self._memo[ks]
        except KeyError:
            fn = _resolve(self, ks)
        return fn(*args, **kwargs)

    def has_kernel_for_dispatch_key(self, key) -> bool:
        return bool(self._kernels.get(parse_key(key)))

    def __repr__(self):
        return f"<OpOverload(op='{self._ns}.{self._opname}', overload='{self._overloadname}')>"

    def __str__(self):
        return f"{self._ns}.{self._opname}.{self._overloadname}"

    def __reduce__(self):
        return (_lookup_overload, (self.name_,))


def _lookup_overload(qualname):
    return _OPS[qualname]


class OpOverloadPacket:
    """All overloads of one operator name, e.g. ``npusim.ops.aten.add``."""

    def __init__(self, ns: str, name: str):
        self._ns = ns
        self._qualified_op_name = f"{ns}::{name}"
        self.__name__ = name
        self._overloads: dict[str, OpOverload] = {}

    def overloads(self) -> list[str]:
        return list(self._overloads)

    def __getattr__(self, item):
        if item.startswith("__"):
            raise AttributeError(item)
        try:
            return self._overloads[item]
        except KeyError:
            raise AttributeError(
                f"The underlying op of '{self._ns}.{self.__name__}' has no overload name '{item}'") from None

    def __call__(self, *args, **kwargs):
        overloads = list(self._overloads.values())
        # torch's order: an exact match first, then numbers allowed in Tensor slots
        for numbers_as_tensors in (False, True):
            for ov in overloads:
                if _bind_error(ov, args, kwargs, numbers_as_tensors) is None:
                    return ov.fn(*args, **kwargs)
        reasons = "\n\n".join(_bind_error(ov, args, kwargs, True) for ov in overloads)
        raise RuntimeError("Overloaded npusim operator invoked from Python failed to match any schema:\n"
                           f"{reasons}\n\n")

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self._ns}.{self.__name__}')>"

    def __str__(self):
        return f"{self._ns}.{self.__name__}"


# --- overload resolution for packets ---------------------------------------------

def _is_tensor(v) -> bool:
    return hasattr(v, "_ks")


def _is_number(v) -> bool:
    return isinstance(v, (bool, int, float)) and not _is_tensor(v)


def _matches_type(typ: SchemaType, v, numbers_as_tensors: bool) -> bool:
    if v is None:
        return typ.optional or typ.base == "Any"
    if typ.is_list:
        if not isinstance(v, (list, tuple)):
            # int[2] accepts a single int, as torch does
            return typ.base in ("int", "SymInt") and isinstance(v, int) and not isinstance(v, bool)
        elem = SchemaType(typ.base, optional=typ.elem_optional)
        return all(_matches_type(elem, x, numbers_as_tensors) for x in v)
    base = typ.base
    if base == "Tensor":
        return _is_tensor(v) or (numbers_as_tensors and _is_number(v))
    if base in ("int", "SymInt"):
        return isinstance(v, int) and not isinstance(v, bool)
    if base == "float":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if base == "bool":
        return isinstance(v, bool)
    if base == "Scalar":
        return isinstance(v, (bool, int, float, complex))
    if base == "complex":
        return isinstance(v, (int, float, complex)) and not isinstance(v, bool)
    if base == "str":
        return isinstance(v, str)
    return True


def _torch_type_name(typ: SchemaType) -> str:
    base = {"Scalar": "number", "SymInt": "int"}.get(typ.base, typ.base)
    if typ.is_list:
        base = f"List[Optional[{base}]]" if typ.elem_optional else f"List[{base}]"
    return f"Optional[{base}]" if typ.optional else base


def _bind_error(op: OpOverload, args, kwargs, numbers_as_tensors: bool):
    """None if ``args``/``kwargs`` fit ``op``'s schema, else torch's reason why not."""
    schema = op._schema
    qual = f"{op._ns}::{schema.name}"
    decl = f"{op._ns}::{schema}"
    params = schema.arguments
    positional = [a for a in params if not a.kwarg_only]
    if len(args) > len(params):
        return (f"{qual}() expected at most {len(params)} argument(s) but received {len(args)} argument(s). "
                f"Declaration: {decl}")
    if len(args) > len(positional):
        return (f"{qual}() takes {len(positional)} positional argument(s) but {len(args)} was/were given.  "
                f"Declaration: {decl}")
    by_name = {a.name: a for a in params}
    for k in kwargs:
        if k not in by_name:
            return f"Unknown keyword argument '{k}' for operator '{qual}'. Schema: {decl}"
    given = {}
    for i, (a, v) in enumerate(zip(positional, args)):
        if a.name in kwargs:
            return f"Argument '{a.name}' specified both as positional and keyword argument. Schema: {decl}"
        given[a.name] = (i, v)
    for k, v in kwargs.items():
        given[k] = (params.index(by_name[k]), v)
    for a in params:
        if a.name not in given:
            if not a.has_default:
                return f"{qual}() is missing value for argument '{a.name}'. Declaration: {decl}"
            continue
        pos, v = given[a.name]
        if not _matches_type(a.type, v, numbers_as_tensors):
            return (f"{qual}() Expected a value of type '{_torch_type_name(a.type)}' for argument '{a.name}' "
                    f"but instead found type '{type(v).__name__}'.\nPosition: {pos}\nValue: {v!r}\n"
                    f"Declaration: {decl}")
    return None


# --- kernel resolution ---------------------------------------------------------

def _last(regs):
    return regs[-1] if regs else None


_BACKEND_OF_AUTOGRAD = {v: k for k, v in AUTOGRAD_OF.items()}


def _entry_for_key(op: OpOverload, key: DispatchKey):
    """``(registration, is_fallback)`` serving ``key``: torch's computeDispatchTableEntry order."""
    k = op._kernels
    reg = _last(k.get(key))
    if reg is not None:
        return reg, False
    if key in BACKEND_KEYS:
        reg = (_last(k.get(DispatchKey.CompositeExplicitAutogradNonFunctional))
               or _last(k.get(DispatchKey.CompositeExplicitAutograd))
               or _last(k.get(DispatchKey.CompositeImplicitAutograd)))
        if reg is not None:
            return reg, False
    elif key in AUTOGRAD_KEYS:
        cia = _last(k.get(DispatchKey.CompositeImplicitAutograd))
        if cia is not None:
            # the implicit kernel serves autograd only when no backend kernel would
            backend = _BACKEND_OF_AUTOGRAD.get(key)
            if not ((backend is not None and k.get(backend)) or k.get(DispatchKey.CompositeExplicitAutograd)):
                return cia, False
        reg = _last(k.get(DispatchKey.Autograd))
        if reg is not None:
            return reg, False
    reg = _FALLBACKS.get(key)
    return (reg, True) if reg is not None else (None, False)


def _compute(op: OpOverload, ks: int, wrap: bool = True):
    """The callable serving key set ``ks`` (no memo); ``wrap``: with the kernel wrapper, where it applies."""
    if not ks:
        ks = _CPU_BIT  # a call with only Python numbers runs on the cpu
    rest = ks
    while rest:
        key = DispatchKey(rest.bit_length() - 1)
        rest &= ~(1 << key)
        reg, is_fallback = _entry_for_key(op, key)
        if reg is None:
            if key in BACKEND_KEYS:
                return functools.partial(_missing_kernel, op, key)
            continue  # autograd/autocast keys nobody handles fall through, as in torch
        if reg.fn is fallthrough_kernel:
            continue
        if is_fallback:
            # torch calls boxed fallbacks as fn(op, ...) or fn(keyset, op, ...)
            if reg.with_keyset:
                fn = functools.partial(reg.fn, DispatchKeySet(ks), op)
            else:
                fn = functools.partial(reg.fn, op)
        else:
            fn = reg.fn if wrap else getattr(reg.fn, BELOW_UNWRAPPED, reg.fn)
            if reg.with_keyset:
                fn = functools.partial(fn, DispatchKeySet(ks))
        if wrap and _kernel_wrapper is not None and not is_fallback and op._ns == "aten" and (
                key in BACKEND_KEYS or reg is _last(op._kernels.get(DispatchKey.CompositeImplicitAutograd))):
            fn = _kernel_wrapper(op, fn)
        if key in _GUARDED_TYPE_OF_KEY:
            typ = _GUARDED_TYPE_OF_KEY[key]
            check = refusal(typ)
            if check is None:
                # a backend with several devices: the kernel runs on its inputs' device (torch's device guard)
                fn = _device_guard.guard_kernel(op, typ, fn, reg.fn)
            elif not _is_view_op(op):
                fn = _refusing(check, _device_guard.guard_kernel(op, typ, fn, reg.fn))
            # else: a view in a refused process, which touches neither memory nor the current device
        if key in BACKEND_KEYS and not is_fallback and _out_destination is not None and _writes_only_out(op):
            fn = _into_out(fn, *_out_destination)
        return fn
    # Every key fell through: torch serves that (its "Undefined" key) with a composite kernel.
    k = op._kernels
    reg = (_last(k.get(DispatchKey.CompositeExplicitAutogradNonFunctional))
           or _last(k.get(DispatchKey.CompositeExplicitAutograd))
           or _last(k.get(DispatchKey.CompositeImplicitAutograd)))
    if reg is not None and reg.fn is not fallthrough_kernel:
        fn = functools.partial(reg.fn, DispatchKeySet(ks)) if reg.with_keyset else reg.fn
        return _kernel_wrapper(op, fn) if wrap and _kernel_wrapper is not None and op._ns == "aten" else fn
    backends = ks & BACKEND_MASK
    key = DispatchKey((backends or ks).bit_length() - 1)
    return functools.partial(_missing_kernel, op, key)


# Backend keys whose kernels run under a device guard when their device type registered one.
_GUARDED_TYPE_OF_KEY = {DispatchKey.CUDA: "cuda", DispatchKey.PrivateUse1: PRIVATEUSE1}
_device_guard.on_register(lambda: _invalidate_all())
# A device type refused in this process (a forked child) gets refusing kernels: resolved ones are dropped.
# The normal process never pays for this: its memoised kernels are the plain ones.
on_refuse(lambda: _invalidate_all())


def _is_view_op(op: OpOverload) -> bool:
    """Whether ``op`` only makes views (every return aliases an input, nothing is written): it touches no
    device memory, so a refused device still serves it, as torch's views need no device guard."""
    s = op._schema
    return (bool(s.returns) and all(r.type.alias is not None and not r.type.is_write for r in s.returns)
            and not any(a.type.is_write for a in s.arguments))


def _refusing(check, fn):
    def refused(*args, **kwargs):
        check()     # raises the backend's error (CUDA's "Cannot re-initialize ... in forked subprocess")
        return fn(*args, **kwargs)
    return refused


def _resolve(op: OpOverload, ks: int):
    """Find, memoise and return the callable that serves key set ``ks``."""
    with _lock:
        fn = _compute(op, ks)
        op._memo[ks] = fn
    return fn


def resolve_unwrapped(op: OpOverload, ks: int):
    """The same without the kernel wrapper (memoised in ``op._unwrapped``); the wrapped one is memoised too."""
    with _lock:
        op._memo[ks] = _compute(op, ks)
        fn = op._unwrapped[ks] = _compute(op, ks, wrap=False)
    return fn


def _available_keys(op: OpOverload):
    return [key_display_name(key) for key in RUNTIME_KEYS if _entry_for_key(op, key)[0] is not None]


def _missing_kernel(op, key, *args, **kwargs):
    raise NotImplementedError(
        f"Could not run '{op.name_}' with arguments from the '{key_display_name(key)}' backend. This could be "
        f"because the operator doesn't exist for this backend. '{op.name_}' is only available for these "
        f"backends: [{', '.join(_available_keys(op))}].")


def call_with_keyset(op: OpOverload, ks: int, args, kwargs):
    """Dispatch a call whose full key set (thread-local keys applied) is known."""
    try:
        fn = op._memo[ks]
    except KeyError:
        fn = _resolve(op, ks)
    return fn(*args, **kwargs)


# backend bits present -> the autocast bits those backends have
_AUTOCAST_FOR_BACKENDS = {}
for _combo in range(BACKEND_MASK + 1):
    if _combo & ~BACKEND_MASK:
        continue
    _m = 0
    for _b, _a in AUTOCAST_OF.items():
        if _combo & (1 << _b):
            _m |= 1 << _a
    _AUTOCAST_FOR_BACKENDS[_combo] = _m


def slow_call(op: OpOverload, ks: int, args, kwargs):
    """The path taken while any thread-local dispatch state or callback is active."""
    if not ks:
        ks = _CPU_BIT
    t = dispatch_tls.tls
    autocast = t.autocast
    if autocast:
        ks |= _AUTOCAST_FOR_BACKENDS[ks & BACKEND_MASK] & autocast
    ks = (ks | t.included) & ~t.excluded
    hook = _record_function_hook
    if hook is not None:
        return hook(op, ks, args, kwargs)
    # call_with_keyset, inlined: every op under autocast or a mode comes this way
    try:
        fn = op._memo[ks]
    except KeyError:
        fn = _resolve(op, ks)
    return fn(*args, **kwargs) if kwargs else fn(*args)


ALWAYS_SLOW = itertools.repeat(slow_call).__next__
GEN_GLOBALS["_RF_TICK"] = ALWAYS_SLOW


# --- code generation -------------------------------------------------------------

_pyname = codegen.pyname


def _generate(op: OpOverload):
    """Build the dispatch function for ``op`` from its schema.

    For ``add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1)`` the result is::

        def add(self, other, *, alpha=<1>):
            try:
                ks = self._ks
            except AttributeError:
                ks = num_or_err(self, op, 'self', 1)
            if other.__class__ is not float and other.__class__ is not int:
                try:
                    ks |= other._ks
                except AttributeError:
                    ks |= num_or_err(other, op, 'other', 2)
            if alpha is not <1> and alpha.__class__ is not int and alpha.__class__ is not float:
                check_value(alpha, ...)    # (and, after every type check, an int alpha's range)
            if _SLOW:
                try:
                    tick = _RF_TICK()       # slow_call, or a sampling decision
                except IndexError:
                    tick = slow
                if tick:
                    return tick(op, ks, (self, other), {'alpha': alpha})
            if (<self is complex or of a limited dtype, or not a tensor or a number>
                    or <the same of other>
                    or alpha.__class__ is complex):
                try:
                    fn = memo[ks]           # the kernel behind the dtype guard's check (_kernel_wrapper)
                except KeyError:
                    fn = resolve(op, ks)
                return fn(self, other, alpha=alpha)
            try:
                fn = unwrapped[ks]          # the kernel itself
            except KeyError:
                fn = resolve_unwrapped(op, ks)
            return fn(self, other, alpha=alpha)

    (an op the kernel wrapper never wraps has only the memo lookup). Helper names are chosen so that no schema
    argument can shadow them. ``codegen.source_of`` (and ``npusim.library.generated_source``) shows the source;
    tracebacks and debuggers show its lines.
    """
    schema = op._schema
    args = schema.arguments
    sig = codegen.Signature.of_schema(schema, reserved=("_SLOW", "_RF_TICK"))
    fresh = sig.fresh

    # overloads with the same signature share one compiled template: the function gets a neutral name
    # here and its real one afterwards
    fname = fresh("_dispatch")
    helpers = {"op": op, "memo": op._memo, "resolve": _resolve, "slow": slow_call,
               "unwrapped": op._unwrapped, "resolve_unwrapped": resolve_unwrapped,
               "num_or_err": _number_or_error, "list_keys": _list_keys,
               "device_keys": _device_keys, "no_versions": INFERENCE_VC, "check_write": check_inference_write,
               "as_dtype": _dtype_mod.as_dtype, "check_value": _check_value, "check_ints": _check_ints}
    N = {k: fresh(k) for k in list(helpers) + ["ks", "fn", "tick", "vc"]}  # noqa: N806 - reads like a template
    env = {N[k]: v for k, v in helpers.items()}
    env.update(sig.defaults)
    # where the kernel wrapper applies: the conditions under which it would do anything (see _wrapper_conditions)
    wrapper_conditions = None
    if _wrapper_conditions is not None and _kernel_wrapper is not None and op._ns == "aten":
        wrapper_conditions = _wrapper_conditions(op, sig)
        if wrapper_conditions is not None:
            wrapper_conditions, names = wrapper_conditions
            env.update(names)
    ks, fn, tick = N["ks"], N["fn"], N["tick"]
    body = []
    # an inference tensor refuses in-place updates outside inference mode, before anything is written
    for a in args:
        if a.type.base == "Tensor" and a.type.is_write and not a.type.is_list:
            n = _pyname(a.name)
            body += ["try:", f"    {N['vc']} = {n}._vc", "except AttributeError:", f"    {N['vc']} = None",
                     f"if {N['vc']} is {N['no_versions']}:", f"    {N['check_write']}({n})"]
    ks_set = False
    late = []   # range checks, after every argument's type check
    positional = sig.args_tuple
    for pos, a in enumerate(args, start=1):
        n = _pyname(a.name)
        t = a.type
        if t.base == "ScalarType" and not t.is_list:
            # the public functions that hand their dtype straight on take float/int/bool as torch's parser does
            body += [f"if {n}.__class__ is type:", f"    {n} = {N['as_dtype']}({n})"]
        where = None if a.kwarg_only else pos
        if t.base == "str" and not t.is_list:
            dflt = sig.default_of.get(n) if a.has_default and a.default.__class__ is str else None
            unless_default = f"{n} is not {dflt} and " if dflt else ""
            body += [f"if {unless_default}{n}.__class__ is not str and {n} is not None:",
                     f"    {N['check_value']}({n}, {N['op']}, {a.name!r}, 'str', {t.optional}, {where}, {positional})"]
        elif t.base in ("int", "SymInt", "Scalar", "float", "bool") and not t.is_list:
            # a str, None, tuple or (for int) float or bool where torch's parser wants a number is a TypeError;
            # ints past int64 (uint64 for a Scalar) fail after every argument's type passed, as in torch
            kind = "int" if t.base in ("int", "SymInt") else t.base
            check = (f"{N['check_value']}({n}, {N['op']}, {a.name!r}, {kind!r}, {t.optional}, {where}, "
                     f"{positional})")
            # the default value itself (alpha=1, keepdim=False) passes: its identity is tested first
            dflt = sig.default_of.get(n) if _valid_default(a.default if a.has_default else None, kind) else None
            unless_default = f"{n} is not {dflt} and " if dflt else ""
            if kind == "bool":
                body += [f"if {unless_default}{n}.__class__ is not bool:", f"    {check}"]
                continue
            cond = f"{n}.__class__ is not int" + (f" and {n}.__class__ is not float" if kind != "int" else "")
            body += [f"if {unless_default}{cond}:", f"    {check}"]
            top = _U64_MAX if kind == "Scalar" else _I64_MAX
            late += [f"if {unless_default}{n}.__class__ is int and not {_I64_MIN} <= {n} <= {top}:", f"    {check}"]
        elif t.base in ("int", "SymInt") and t.is_list:
            x = fresh("_x")
            check = f"{N['check_ints']}({n}, {N['op']}, {a.name!r}, {t.optional}, {where}, {positional})"
            late += [f"if {n}.__class__ is list or {n}.__class__ is tuple:", f"    for {x} in {n}:",
                     f"        if {x}.__class__ is not int or not {_I64_MIN} <= {x} <= {_I64_MAX}:",
                     f"            {check}", "            break",
                     "else:", f"    {check}"]
        if t.base != "Tensor":
            continue
        if t.is_list:
            op_ = "|=" if ks_set else "="
            body.append(f"{ks} {op_} {N['list_keys']}({n}, {N['op']}, {a.name!r}, {pos}, {t.elem_optional})")
        elif t.optional:
            if not ks_set:
                body.append(f"{ks} = 0")
            body += [f"if {n} is not None:",
                     "    try:", f"        {ks} |= {n}._ks", "    except AttributeError:",
                     f"        {ks} |= {N['num_or_err']}({n}, {N['op']}, {a.name!r}, {pos})"]
        elif not ks_set:
            # A Tensor slot may hold a Python number (a CPU scalar), as in torch.ops.
            body += ["try:", f"    {ks} = {n}._ks", "except AttributeError:",
                     f"    {ks} = {N['num_or_err']}({n}, {N['op']}, {a.name!r}, {pos})"]
        else:
            # Later slots hold numbers often (x + 2): test the class rather than pay for an exception.
            body += [f"if {n}.__class__ is not float and ({n}.__class__ is not int or not "
                     f"{_I64_MIN} <= {n} <= {_U64_MAX}):",
                     "    try:", f"        {ks} |= {n}._ks", "    except AttributeError:",
                     f"        {ks} |= {N['num_or_err']}({n}, {N['op']}, {a.name!r}, {pos})"]
        ks_set = True
    body += late
    if not ks_set:
        dev_arg = next((a for a in args if a.type.base == "Device"), None)
        if dev_arg is not None:
            body.append(f"{ks} = {N['device_keys']}({_pyname(dev_arg.name)})")
        else:
            body.append(f"{ks} = 0")
    body += [
        "if _SLOW:",
        "    try:",
        f"        {tick} = _RF_TICK()",
        "    except IndexError:",   # the sampling decisions ran out while threads raced to their end
        f"        {tick} = {N['slow']}",
        f"    if {tick}:",
        f"        return {tick}({N['op']}, {ks}, {sig.args_tuple}, {sig.kwargs_dict})",
    ]
    call_wrapped = ["try:", f"    {fn} = {N['memo']}[{ks}]", "except KeyError:",
                    f"    {fn} = {N['resolve']}({N['op']}, {ks})", f"return {fn}({sig.call})"]
    if wrapper_conditions is None:
        body += call_wrapped
    else:
        # an argument the wrapper would look at takes the wrapped kernel; the rest, the kernel itself
        if wrapper_conditions:
            body += codegen.if_any(wrapper_conditions) + codegen.indent(call_wrapped).splitlines()
        body += ["try:", f"    {fn} = {N['unwrapped']}[{ks}]", "except KeyError:",
                 f"    {fn} = {N['resolve_unwrapped']}({N['op']}, {ks})", f"return {fn}({sig.call})"]
    src = (f"def _make({', '.join(env)}):\n"
           f"    def {fname}({sig.parameters}):\n"
           + codegen.indent(body, 2)
           + f"    return {fname}\n")
    # one compile per distinct source: about 230 signatures serve the ~600 aten overloads. GEN_GLOBALS becomes
    # the functions' globals, so _SLOW is one LOAD_GLOBAL away.
    func = codegen.compile_function(src, codegen.DISPATCH, GEN_GLOBALS)(**env)
    # its own file name "<dispatch aten::add.Tensor #N>": tracebacks, source_of and the frame walks read it
    codegen.name_function(func, codegen.DISPATCH, op.name_, schema.name)
    func.__doc__ = str(schema)
    return func


def _valid_default(value, kind) -> bool:
    """Whether a schema default passes the generated type and range checks of a ``kind`` argument (so a call that
    leaves it may skip them): an int (float too, for Scalar and float) in range, a bool for bool."""
    if kind == "bool":
        return value.__class__ is bool
    if value.__class__ is int:
        return _I64_MIN <= value <= (_U64_MAX if kind == "Scalar" else _I64_MAX)
    return value.__class__ is float and kind != "int"


def _materialize(op: OpOverload):
    """Generate ``op``'s dispatch function (once) and make it ``op.__call__``; returns it."""
    with _lock:
        fn = op.__dict__.get("fn")
        if fn is None:
            fn = _generate(op)
            cls = op.__class__
            op.fn = fn
            op.__class__ = type(cls.__name__, (cls,), {"__slots__": (), "__module__": cls.__module__,
                                                       "__call__": staticmethod(fn)})
    return fn


def generated_source(op) -> str:
    """The Python source npusim generates for an operator (``"aten::add.Tensor"``, ``"aten::sin.default"`` or
    the overload itself): its dispatch function, its device-guard wrapper for every device type with a guard, and
    the capacity-check wrapper a backend put around its kernel, each headed by the file name its frames show."""
    if isinstance(op, str):
        name = op[:-len(".default")] if op.endswith(".default") else op
        if "::" not in name:
            name = "aten::" + name
        try:
            op = _OPS[name]
        except KeyError:
            raise KeyError(f"no operator named {name!r}") from None
    _materialize(op)
    _device_guard.generate_guards(op)
    return codegen.source_of(op.name_)


# --- registration (used by library.Library) --------------------------------------

def _qualify(ns: str, schema: FunctionSchema) -> FunctionSchema:
    """Strip a namespace written in the schema (``"mylib::foo(...)"``), checking it is ``ns``."""
    if "::" not in schema.name:
        return schema
    given, name = schema.name.split("::", 1)
    if given != ns:
        raise RuntimeError(
            f"Explicitly provided namespace ({given}) in schema string does not match namespace of enclosing "
            f"TORCH_LIBRARY block ({ns}).  Move this definition to the (unique) TORCH_LIBRARY block "
            f"corresponding to this namespace (and consider deleting the namespace from your schema string.)")
    return dataclasses.replace(schema, name=name)


def define(ns: str, schema_text: str, tags=()) -> OpOverload:
    schema = _qualify(ns, parse_schema(schema_text))
    qual = f"{ns}::{schema.name}" + (f".{schema.overload_name}" if schema.overload_name else "")
    with _lock:
        if qual in _OPS:
            raise RuntimeError(
                f"Tried to register an operator ({ns}::{schema}) with the same name and overload name "
                f"multiple times. Each overload's schema should only be registered with a single call to def().")
        op = OpOverload(ns, schema, tags)
        _OPS[qual] = op
        packet = _PACKETS.get(f"{ns}::{schema.name}")
        if packet is None:
            packet = _PACKETS[f"{ns}::{schema.name}"] = OpOverloadPacket(ns, schema.name)
        packet._overloads[op._overloadname] = op
        setattr(packet, op._overloadname, op)  # plain attribute: fast ops.aten.add.Tensor
        for key, reg in _PENDING.pop(qual, ()):
            op._kernels.setdefault(key, []).append(reg)
        return op


def undefine(op: OpOverload) -> None:
    """Remove ``op``; kernels other libraries still hold for it wait for a new define()."""
    with _lock:
        if _OPS.get(op.name_) is not op:
            return
        del _OPS[op.name_]
        pk = _PACKETS.get(f"{op._ns}::{op._opname}")
        if pk is not None:
            pk._overloads.pop(op._overloadname, None)
            pk.__dict__.pop(op._overloadname, None)
            if not pk._overloads:
                del _PACKETS[f"{op._ns}::{op._opname}"]
                for hook in _packet_removed_hooks:
                    hook(op._ns, op._opname)
        waiting = [(key, reg) for key, regs in op._kernels.items() for reg in regs]
        if waiting:
            _PENDING.setdefault(op.name_, []).extend(waiting)
        op._kernels.clear()
        _forget(op)


def full_name(qualname: str) -> str:
    """The key an overload is stored under: ``"ns::foo"`` (default overload) or ``"ns::foo.bar"``.

    ``"ns::foo.default"`` names the default overload too, as ``ops.ns.foo.default`` does.
    """
    if qualname.endswith(".default"):
        return qualname[:-len(".default")]
    return qualname


_packet_removed_hooks: list = []


def on_packet_removed(hook) -> None:
    """Call ``hook(ns, name)`` when the last overload of ``ns::name`` is removed (attribute caches)."""
    _packet_removed_hooks.append(hook)


def find_op(qualname: str) -> OpOverload | None:
    """``"aten::add.Tensor"``, ``"aten::add"`` or ``"aten::add.default"`` -> overload."""
    return _OPS.get(full_name(qualname))


_override_warned = False


def _has_kernel(qual: str, key: DispatchKey) -> bool:
    op = _OPS.get(qual)
    if op is not None and op._kernels.get(key):
        return True
    return any(k is key for k, _ in _PENDING.get(qual, ()))


def register_kernel(qualname: str, key, fn, with_keyset=False, where="", allow_override=True):
    """Add ``fn`` as ``qualname``'s kernel for ``key`` (pending until the op is defined)."""
    global _override_warned
    key = parse_key(key)
    reg = _Registration(fn, with_keyset, where)
    qual = full_name(qualname)
    ns, name = qual.split("::", 1)
    with _lock:
        if _has_kernel(qual, key):
            if not allow_override:
                raise RuntimeError(
                    f"This is not allowed since there's already a kernel registered from python overriding "
                    f"{name}'s behavior for {key.name} dispatch key and {ns} namespace.")
            if not _override_warned:
                _override_warned = True
                op = _OPS.get(qual)
                shown = f"{ns}::{op._schema}" if op is not None else qual
                warnings.warn(
                    "Warning only once for all operators,  other operators may also be overridden.\n"
                    "  Overriding a previously registered kernel for the same operator and the same dispatch key\n"
                    f"  operator: {shown}\n  dispatch key: {key.name}\n  new kernel: registered at {where}",
                    UserWarning, stacklevel=3)
        op = _OPS.get(qual)
        if op is None:
            _PENDING.setdefault(qual, []).append((key, reg))
        else:
            op._kernels.setdefault(key, []).append(reg)
            _forget(op)
    return reg


def deregister_kernel(qualname: str, key: DispatchKey, reg: _Registration) -> None:
    qual = full_name(qualname)
    with _lock:
        op = _OPS.get(qual)
        if op is not None:
            regs = op._kernels.get(key, [])
            if reg in regs:
                regs.remove(reg)
                if not regs:
                    del op._kernels[key]
            _forget(op)
        waiting = _PENDING.get(qual)
        if waiting:
            waiting[:] = [(k, r) for k, r in waiting if r is not reg]
            if not waiting:
                del _PENDING[qual]


def register_fallback(key, fn, with_keyset=False, where="") -> _Registration:
    key = parse_key(key)
    if key in ALIAS_KEYS:
        raise RuntimeError(f"cannot register a fallback for the alias key {key.name}")
    reg = _Registration(fn, with_keyset, where)
    with _lock:
        old = _FALLBACKS.get(key)
        if old is not None:
            raise RuntimeError(
                f"Tried to register multiple backend fallbacks for the same dispatch key {key.name}; previous "
                f"registration registered at {old.where}, new registration registered at {where}")
        _FALLBACKS[key] = reg
        _invalidate_all()
    return reg


def deregister_fallback(key: DispatchKey, reg: _Registration) -> None:
    with _lock:
        if _FALLBACKS.get(key) is reg:
            del _FALLBACKS[key]
            _invalidate_all()


def has_fallback(key) -> bool:
    return parse_key(key) in _FALLBACKS


def all_ops():
    return list(_OPS.values())


def packet(ns: str, name: str) -> OpOverloadPacket | None:
    return _PACKETS.get(f"{ns}::{name}")


def namespaces():
    return {op._ns for op in _OPS.values()}
