"""The dispatcher: operators, their per-key kernel tables, fallbacks, and calls.

Every operator overload (``aten::add.Tensor``) owns a table of kernels keyed by
dispatch key. A call computes the key set of its tensor arguments, finds the
highest key with a kernel (fallthrough kernels are skipped, keys without a kernel
use the global fallback for that key), and calls it. The answer for a key set is
memoised per overload, so the common call is: key set, one dict lookup, call.

Each overload gets a dispatch function generated from its schema, so that
arguments bind with Python's own machinery and the key set is computed with
attribute reads rather than a generic loop.
"""
from __future__ import annotations

import functools
import itertools
import keyword
import threading
import warnings

from . import dispatch_tls
from .dispatch_keys import (
    ALIAS_KEYS, AUTOCAST_OF, AUTOGRAD_KEYS, AUTOGRAD_OF, BACKEND_KEYS, BACKEND_MASK,
    DispatchKey, DispatchKeySet, RUNTIME_KEYS, parse_key,
)
from .schema import FunctionSchema, parse_schema

_CPU_BIT = 1 << DispatchKey.CPU


def fallthrough_kernel():
    """A marker kernel: registering it means "skip this key and go lower"."""
    raise NotImplementedError("fallthrough_kernel() should never be called.")


class _Registration:
    __slots__ = ("fn", "with_keyset", "owner")

    def __init__(self, fn, with_keyset, owner):
        self.fn, self.with_keyset, self.owner = fn, with_keyset, owner


_lock = threading.RLock()
_OPS: dict[str, "OpOverload"] = {}                # "aten::add.Tensor" -> overload
_PACKETS: dict[str, "OpOverloadPacket"] = {}      # "aten::add" -> packet
_FALLBACKS: dict[DispatchKey, list[_Registration]] = {}
_PENDING: dict[str, list[tuple]] = {}             # impls registered before their define()

# Globals every generated dispatch function reads.
GEN_GLOBALS: dict = {"_SLOW": 0}


def _set_slow(count):
    GEN_GLOBALS["_SLOW"] = count


dispatch_tls.on_slow_change(_set_slow)

# Hook installed by the record-function machinery: hook(op, keyset, args, kwargs).
_record_function_hook = None


def set_record_function_hook(hook) -> None:
    global _record_function_hook
    _record_function_hook = hook


def _invalidate_all() -> None:
    for op in _OPS.values():
        op._memo.clear()


# --- argument errors ---------------------------------------------------------

def _describe(v) -> str:
    if isinstance(v, (list, tuple)):
        return type(v).__name__ + " of [" + ", ".join(type(x).__name__ for x in v) + "]"
    return type(v).__name__


def _number_or_error(v, op, argname, position) -> int:
    """Key set contribution of a non-Tensor value in a Tensor slot (numbers are CPU scalars)."""
    if isinstance(v, (bool, int, float)) or type(v).__module__ == "numpy" and hasattr(v, "dtype") and v.ndim == 0:
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


# Key set of a factory call, from its ``device`` argument; installed by the tensor module.
device_keys = None


# --- operator objects ----------------------------------------------------------

class OpOverload:
    """One overload of an operator, e.g. ``npusim.ops.aten.add.Tensor``."""

    def __init__(self, ns: str, schema: FunctionSchema, tags=()):
        self._ns = ns
        self._schema = schema
        self._opname = schema.name
        self._overloadname = schema.overload_name or "default"
        self.name_ = f"{ns}::{schema.name}" + (f".{schema.overload_name}" if schema.overload_name else "")
        self.tags = tuple(tags)
        self._kernels: dict[DispatchKey, list[_Registration]] = {}
        self._memo: dict[int, object] = {}
        self.fn = _generate(self)
        self.__name__ = f"{schema.name}.{self._overloadname}"
        self.__qualname__ = self.__name__

    def name(self) -> str:
        return self.name_

    @property
    def overloadpacket(self) -> "OpOverloadPacket":
        return _PACKETS[f"{self._ns}::{self._opname}"]

    @property
    def namespace(self) -> str:
        return self._ns

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def redispatch(self, keyset, *args, **kwargs):
        """Call the kernel that serves ``keyset`` directly (no thread-local keys)."""
        ks = int(keyset)
        fn = self._memo.get(ks)
        if fn is None:
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
        for ov in self._overloads.values():
            if _binds(ov._schema, args, kwargs):
                return ov.fn(*args, **kwargs)
        sigs = "\n  ".join(str(o._schema) for o in self._overloads.values())
        raise RuntimeError(f"{self._qualified_op_name}() Expected a value of type matching one of the "
                           f"overloads, got args of types ({', '.join(_describe(a) for a in args)}).\n"
                           f"Overloads:\n  {sigs}")

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self._ns}.{self.__name__}')>"

    def __str__(self):
        return f"{self._ns}.{self.__name__}"


def _matches_type(typ, v) -> bool:
    if v is None:
        return typ.optional or typ.base == "Any"
    if typ.is_list:
        if not isinstance(v, (list, tuple)):
            # int[2] accepts a single int, as torch does
            return typ.base in ("int", "SymInt") and isinstance(v, int) and not isinstance(v, bool)
        return all(_matches_type(_elem_type(typ), x) for x in v)
    base = typ.base
    if base == "Tensor":
        return hasattr(v, "_ks")
    if base in ("int", "SymInt"):
        return isinstance(v, int) and not hasattr(v, "_ks")
    if base == "float":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if base == "bool":
        return isinstance(v, bool)
    if base == "Scalar":
        return isinstance(v, (bool, int, float))
    if base == "str":
        return isinstance(v, str)
    return True


def _elem_type(typ):
    from .schema import SchemaType
    return SchemaType(typ.base, optional=typ.elem_optional)


def _binds(schema: FunctionSchema, args, kwargs) -> bool:
    params = schema.arguments
    positional = [a for a in params if not a.kwarg_only]
    if len(args) > len(positional):
        return False
    seen = set()
    for a, v in zip(positional, args):
        if not _matches_type(a.type, v):
            return False
        seen.add(a.name)
    names = {a.name for a in params}
    for k, v in kwargs.items():
        if k not in names or k in seen:
            return False
        arg = next(a for a in params if a.name == k)
        if not _matches_type(arg.type, v):
            return False
        seen.add(k)
    return all(a.name in seen or a.has_default for a in params)


# --- kernel resolution ---------------------------------------------------------

def _last(regs):
    return regs[-1] if regs else None


def _entry_for_key(op: OpOverload, key: DispatchKey):
    """The registration serving ``key`` (PyTorch's computeDispatchTableEntry order)."""
    k = op._kernels
    reg = _last(k.get(key))
    if reg is not None:
        return reg
    if key in BACKEND_KEYS:
        reg = (_last(k.get(DispatchKey.CompositeExplicitAutogradNonFunctional))
               or _last(k.get(DispatchKey.CompositeExplicitAutograd))
               or _last(k.get(DispatchKey.CompositeImplicitAutograd)))
        if reg is not None:
            return reg
    elif key in AUTOGRAD_KEYS:
        cia = _last(k.get(DispatchKey.CompositeImplicitAutograd))
        if cia is not None:
            backend = _BACKEND_OF_AUTOGRAD.get(key)
            has_backend = (backend is not None and k.get(backend)) or k.get(DispatchKey.CompositeExplicitAutograd)
            if not has_backend:
                return cia
        reg = _last(k.get(DispatchKey.Autograd))
        if reg is not None:
            return reg
    return _last(_FALLBACKS.get(key))


_BACKEND_OF_AUTOGRAD = {v: k for k, v in AUTOGRAD_OF.items()}


def _resolve(op: OpOverload, ks: int):
    """Find, memoise and return the callable that serves key set ``ks``."""
    rest = ks
    while rest:
        key = DispatchKey(rest.bit_length() - 1)
        rest &= ~(1 << key)
        reg = _entry_for_key(op, key)
        if reg is None:
            fn = functools.partial(_missing_kernel, op, key)
            break
        if reg.fn is fallthrough_kernel:
            continue
        fn = reg.fn
        is_fallback = reg in _FALLBACKS.get(key, ())
        if is_fallback:
            fn = functools.partial(fn, op, DispatchKeySet(ks)) if reg.with_keyset else functools.partial(fn, op)
        elif reg.with_keyset:
            fn = functools.partial(fn, DispatchKeySet(ks))
        break
    else:
        key = DispatchKey(max(ks.bit_length() - 1, 0)) if ks else DispatchKey.CPU
        fn = functools.partial(_missing_kernel, op, key)
    op._memo[ks] = fn
    return fn


def _available_keys(op: OpOverload):
    keys = []
    for key in RUNTIME_KEYS:
        reg = _entry_for_key(op, key)
        if reg is not None:
            keys.append(key.name)
    return keys


def _missing_kernel(op, key, *args, **kwargs):
    raise NotImplementedError(
        f"Could not run '{op.name_}' with arguments from the '{key.name}' backend. This could be because "
        f"the operator doesn't exist for this backend. '{op.name_}' is only available for these backends: "
        f"[{', '.join(_available_keys(op))}].")


def call_with_keyset(op: OpOverload, ks: int, args, kwargs):
    """Dispatch a call whose full key set (thread-local keys applied) is known."""
    fn = op._memo.get(ks)
    if fn is None:
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
    t = dispatch_tls.tls
    if t.autocast:
        ks |= _AUTOCAST_FOR_BACKENDS[ks & BACKEND_MASK] & t.autocast
    ks = (ks | t.included) & ~t.excluded
    hook = _record_function_hook
    if hook is not None:
        return hook(op, ks, args, kwargs)
    return call_with_keyset(op, ks, args, kwargs)


# --- code generation -------------------------------------------------------------

def _pyname(name: str) -> str:
    return name + "_" if keyword.iskeyword(name) else name


_counter = itertools.count()


def _generate(op: OpOverload):
    """Build the dispatch function for ``op`` from its schema."""
    schema = op._schema
    env = {"op": op, "memo": op._memo, "resolve": _resolve, "slow": slow_call,
           "num_or_err": _number_or_error, "list_keys": _list_keys, "CPU": _CPU_BIT,
           "device_keys": lambda d: device_keys(d)}
    params, call_args, body = [], [], ["ks = 0"]
    star = False
    has_tensor = False
    for pos, a in enumerate(schema.arguments, start=1):
        n = _pyname(a.name)
        if a.kwarg_only and not star:
            params.append("*")
            star = True
        if a.has_default:
            env[f"_d_{n}"] = a.default
            params.append(f"{n}=_d_{n}")
        else:
            params.append(n)
        call_args.append(f"{n}={n}" if a.kwarg_only else n)
        t = a.type
        if t.base != "Tensor":
            continue
        if t.is_list:
            body.append(f"ks |= list_keys({n}, op, {a.name!r}, {pos}, {t.elem_optional})")
        else:
            # A Tensor slot may hold a Python number (a CPU scalar), as in torch.ops.
            ind = "    " if t.optional else ""
            if t.optional:
                body.append(f"if {n} is not None:")
            if not has_tensor and not t.optional:
                body[0:1] = []  # the first tensor initialises ks directly
                body += ["try:", f"    ks = {n}._ks", "except AttributeError:",
                         f"    ks = num_or_err({n}, op, {a.name!r}, {pos})"]
            else:
                body += [f"{ind}try:", f"{ind}    ks |= {n}._ks", f"{ind}except AttributeError:",
                         f"{ind}    ks |= num_or_err({n}, op, {a.name!r}, {pos})"]
        has_tensor = True
    if not has_tensor:
        dev_arg = next((a for a in schema.arguments if a.type.base == "Device"), None)
        if dev_arg is not None:
            body.append(f"ks = device_keys({_pyname(dev_arg.name)})")
    args_tuple = "(" + "".join(_pyname(a.name) + ", " for a in schema.arguments if not a.kwarg_only) + ")"
    kw_dict = "{" + ", ".join(f"{a.name!r}: {_pyname(a.name)}" for a in schema.arguments if a.kwarg_only) + "}"
    body += [
        "if not ks:",
        "    ks = CPU",
        "if _SLOW:",
        f"    return slow(op, ks, {args_tuple}, {kw_dict})",
        "fn = memo.get(ks)",
        "if fn is None:",
        "    fn = resolve(op, ks)",
        f"return fn({', '.join(call_args)})",
    ]
    fname = f"{schema.name}_{op._overloadname}"
    src = (f"def _make({', '.join(env)}):\n"
           f"    def {fname}({', '.join(params)}):\n"
           + "".join(f"        {line}\n" for line in body)
           + f"    return {fname}\n")
    local: dict = {}
    # GEN_GLOBALS becomes the functions' globals, so _SLOW is one LOAD_GLOBAL away.
    exec(compile(src, f"<dispatch {op.name_} #{next(_counter)}>", "exec"), GEN_GLOBALS, local)
    fn = local["_make"](**env)
    fn.__doc__ = str(schema)
    return fn


# --- registration (used by library.Library) --------------------------------------

def define(ns: str, schema_text: str, tags=()) -> OpOverload:
    schema = parse_schema(schema_text)
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
        for args in _PENDING.pop(qual, ()):
            _add_kernel(op, *args)
        return op


def undefine(op: OpOverload) -> None:
    with _lock:
        _OPS.pop(op.name_, None)
        pk = _PACKETS.get(f"{op._ns}::{op._opname}")
        if pk is not None:
            pk._overloads.pop(op._overloadname, None)
            pk.__dict__.pop(op._overloadname, None)
            if not pk._overloads:
                del _PACKETS[f"{op._ns}::{op._opname}"]


def find_op(qualname: str) -> OpOverload | None:
    """``"aten::add.Tensor"`` or ``"aten::add"`` (the default overload) -> overload."""
    op = _OPS.get(qualname)
    if op is None and "." not in qualname.split("::")[-1]:
        op = _OPS.get(qualname + ".default")
    return op


def _add_kernel(op, key, reg, allow_override):
    regs = op._kernels.setdefault(key, [])
    if regs:
        if not allow_override:
            raise RuntimeError(
                f"This is not allowed since there's already a kernel registered from python overriding "
                f"{op._opname}'s behavior for {key.name} dispatch key and {op._ns} namespace.")
        warnings.warn(
            "Overriding a previously registered kernel for the same operator and the same dispatch key\n"
            f"  operator: {op._ns}::{op._schema}\n  dispatch key: {key.name}", UserWarning, stacklevel=4)
    regs.append(reg)
    _invalidate_all()


def register_kernel(qualname: str, key, fn, with_keyset=False, owner=None, allow_override=True):
    key = parse_key(key)
    reg = _Registration(fn, with_keyset, owner)
    with _lock:
        op = find_op(qualname)
        if op is None:
            _PENDING.setdefault(qualname if "." in qualname.split("::")[-1] else qualname + ".default",
                                []).append((key, reg, allow_override))
            return reg
        _add_kernel(op, key, reg, allow_override)
    return reg


def deregister_kernel(qualname: str, key: DispatchKey, reg: _Registration) -> None:
    with _lock:
        op = find_op(qualname)
        if op is not None:
            regs = op._kernels.get(key, [])
            if reg in regs:
                regs.remove(reg)
        _invalidate_all()


def register_fallback(key, fn, with_keyset=False, owner=None) -> _Registration:
    key = parse_key(key)
    if key in ALIAS_KEYS:
        raise RuntimeError(f"cannot register a fallback for the alias key {key.name}")
    reg = _Registration(fn, with_keyset, owner)
    with _lock:
        _FALLBACKS.setdefault(key, []).append(reg)
        _invalidate_all()
    return reg


def deregister_fallback(key: DispatchKey, reg: _Registration) -> None:
    with _lock:
        regs = _FALLBACKS.get(key, [])
        if reg in regs:
            regs.remove(reg)
        _invalidate_all()


def has_fallback(key) -> bool:
    return bool(_FALLBACKS.get(parse_key(key)))


def all_ops():
    return list(_OPS.values())


def packet(ns: str, name: str) -> OpOverloadPacket | None:
    return _PACKETS.get(f"{ns}::{name}")


def namespaces():
    return {op._ns for op in _OPS.values()}
