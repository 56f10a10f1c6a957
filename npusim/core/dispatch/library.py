"""``npusim.library``: define operators and register kernels, as ``torch.library``.

This is the public extension point: the CPU kernels, the npu backend, autocast
policies and third-party code all register through ``Library`` objects.
"""
from __future__ import annotations

import sys
import weakref

from . import dispatcher
from ..c10.dispatch_keys import parse_key
from .dispatcher import fallthrough_kernel

__all__ = ["Library", "fallthrough_kernel", "define", "impl"]

_RESERVED_NAMESPACES = {"prim"}          # torch.library._reserved_namespaces
_DEF_NAMESPACES: dict[str, str] = {}     # namespace -> where its DEF library was created
_INTERNAL = object()                     # marks the library npusim defines the aten operators with


def _deregister_all(defs, impls, fallbacks, ns, kind, where):
    for qual, key, reg in impls:
        dispatcher.deregister_kernel(qual, key, reg)
    for key, reg in fallbacks:
        dispatcher.deregister_fallback(key, reg)
    for op in defs:
        dispatcher.undefine(op)
    if kind == "DEF" and _DEF_NAMESPACES.get(ns) == where:
        del _DEF_NAMESPACES[ns]


def _caller(depth: int) -> str:
    f = sys._getframe(depth + 1)
    return f"{f.f_code.co_filename}:{f.f_lineno}"


class Library:
    """A handle for defining operators in a namespace and registering kernels.

    ``kind`` is ``"DEF"`` (a new namespace, once per process), ``"FRAGMENT"`` (more
    definitions for a namespace) or ``"IMPL"`` (kernels only). Registrations are
    undone when the library object is destroyed (``_destroy()`` or garbage
    collection); the dispatcher holds no reference to the library itself.
    """

    def __init__(self, ns, kind, dispatch_key="", *, _owner=None):
        if kind not in ("IMPL", "DEF", "FRAGMENT"):
            raise ValueError(f"Unsupported kind: {kind}")
        # npusim.ops.<ns> needs an identifier (torch accepts any string but cannot reach it then)
        if not isinstance(ns, str) or not (ns == "_" or ns.isidentifier()):
            raise ValueError(f"Invalid namespace {ns!r}: a namespace is a Python identifier")
        if ns in _RESERVED_NAMESPACES and kind in ("DEF", "FRAGMENT"):
            raise ValueError(f"{ns} is a reserved namespace. Please try creating a library with another name.")
        if dispatch_key:
            parse_key(dispatch_key)
        where = _caller(1)
        if kind == "DEF":
            if ns in _DEF_NAMESPACES:
                raise RuntimeError(
                    f"Only a single TORCH_LIBRARY can be used to register the namespace {ns}; please put all "
                    "of your definitions in a single TORCH_LIBRARY block.  If you were trying to specify "
                    "implementations, consider using TORCH_LIBRARY_IMPL (which can be duplicated).  If you "
                    "really intended to define operators for a single namespace in a distributed way, you "
                    "can use TORCH_LIBRARY_FRAGMENT to explicitly indicate this.  Previous registration of "
                    f"TORCH_LIBRARY was registered at {_DEF_NAMESPACES[ns]}; latest registration was "
                    f"registered at {where}")
            _DEF_NAMESPACES[ns] = where
        self.ns = ns
        self.kind = kind
        self.dispatch_key = dispatch_key
        self._where = where
        self._defs: list = []
        self._impls: list = []
        self._fallbacks: list = []
        self._alive = True
        self._finalizer = weakref.finalize(self, _deregister_all, self._defs, self._impls,
                                           self._fallbacks, ns, kind, where)

    def __repr__(self):
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    def _check_alive(self):
        if not self._alive:
            raise AssertionError("Library object has been destroyed")

    def define(self, schema, alias_analysis="", *, tags=()):
        """Define an operator from its schema; returns its name as written (without overload)."""
        if alias_analysis not in ("", "FROM_SCHEMA", "CONSERVATIVE"):
            raise RuntimeError(f"Invalid alias_analysis type {alias_analysis}")
        self._check_alive()
        if self.kind == "IMPL":
            name = schema.split("(")[0].strip() if isinstance(schema, str) else schema
            raise RuntimeError(
                f'def("{name}"): Cannot define an operator inside of a TORCH_LIBRARY_IMPL block.  All def()s '
                f"should be placed in the (unique) TORCH_LIBRARY block for their namespace.")
        if not isinstance(tags, (tuple, list)):
            tags = (tags,)
        op = dispatcher.define(self.ns, schema, tags)
        self._defs.append(op)
        return schema.split("(")[0].strip().split(".")[0]

    def _qualname(self, op_name) -> str:
        if isinstance(op_name, dispatcher.OpOverload):
            return op_name.name_
        if isinstance(op_name, dispatcher.OpOverloadPacket):
            return op_name._qualified_op_name
        if not isinstance(op_name, str) or not op_name:
            raise RuntimeError(f"impl should be passed either a name or an OpOverload object as the first "
                               f"argument, got {type(op_name)}")
        if "::" not in op_name:
            return f"{self.ns}::{op_name}"
        given = op_name.split("::", 1)[0]
        if given != self.ns and self.ns != "_":
            raise RuntimeError(
                f'impl("{op_name}", ...): Explicitly provided namespace ({given}) in operator name does not match '
                f"namespace of enclosing TORCH_LIBRARY block ({self.ns}).  Move this definition to the "
                f"TORCH_LIBRARY block corresponding to this namespace (and consider deleting the namespace "
                f"from your schema string.)")
        return op_name

    def impl(self, op_name, fn, dispatch_key="", *, with_keyset=False, allow_override=True):
        """Register ``fn`` as the kernel of ``op_name`` for ``dispatch_key``.

        ``fn`` may be ``fallthrough_kernel``. With ``with_keyset=True`` the kernel
        receives the call's DispatchKeySet first, for redispatching. The operator
        may be defined later: the kernel waits for it, as in torch.
        """
        if not callable(fn):
            raise TypeError(f"Input function is required to be a callable but found type {type(fn)}")
        self._check_alive()
        key = parse_key(dispatch_key or self.dispatch_key or "CompositeImplicitAutograd")
        qual = self._qualname(op_name)
        # aten is complete at import: a kernel for a name it lacks is a typo, not a later define()
        if qual.split("::")[0] == "aten" and dispatcher.find_op(qual) is None:
            raise RuntimeError(f"operator {qual} does not exist, so no kernel can be registered for it")
        reg = dispatcher.register_kernel(qual, key, fn, with_keyset, where=self._where,
                                         allow_override=allow_override)
        self._impls.append((dispatcher.full_name(qual), key, reg))

    def fallback(self, fn, dispatch_key="", *, with_keyset=False):
        """Register a boxed fallback for every op at ``dispatch_key``.

        It is called as ``fn(op, *args, **kwargs)``, or ``fn(keyset, op, *args,
        **kwargs)`` with ``with_keyset=True`` (torch's order).
        """
        dispatch_key = dispatch_key or self.dispatch_key
        if self.ns != "_":
            raise RuntimeError(f'Fallback can only be registered using library fragment on the global '
                               f'namespace "_" but it is {self.ns}')
        if not callable(fn):
            raise TypeError(f"Input function is required to be a callable but found type {type(fn)}")
        if not dispatch_key:
            raise AssertionError("dispatch_key must not be empty for fallback")
        self._check_alive()
        key = parse_key(dispatch_key)
        reg = dispatcher.register_fallback(key, fn, with_keyset, where=self._where)
        self._fallbacks.append((key, reg))

    def _destroy(self):
        if self._alive:
            self._alive = False
            self._finalizer()


_keepalive: list[Library] = []


def define(qualname, schema, *, lib=None, tags=()):
    """``npusim.library.define("mylib::foo", "(Tensor x) -> Tensor")``."""
    if not isinstance(qualname, str) or "::" not in qualname:
        raise ValueError(f"define(qualname, ...): expected qualname to be 'namespace::name', got {qualname}")
    ns, name = qualname.split("::", 1)
    if lib is None:
        lib = Library(ns, "FRAGMENT")
        _keepalive.append(lib)
    lib.define(name + schema, tags=tags)
    return lib


_DEVICE_TYPE_KEYS = {"cpu": "CPU", "cuda": "CUDA", "meta": "Meta", "default": "CompositeExplicitAutograd"}


def impl(qualname, types, func=None, *, lib=None):
    """``npusim.library.impl("mylib::foo", "cpu", fn)`` or as a decorator."""
    if isinstance(types, str):
        types = (types,)
    from ..c10.device import PRIVATEUSE1, privateuse1_backend_name
    keys = []
    for t in types:
        if t in (privateuse1_backend_name(), PRIVATEUSE1):
            keys.append("PrivateUse1")
        else:
            keys.append(_DEVICE_TYPE_KEYS.get(t, t))
    for k in keys:
        parse_key(k)

    def register(fn):
        nonlocal lib
        if lib is None:
            lib = Library(qualname.split("::")[0], "FRAGMENT")
            _keepalive.append(lib)
        for k in keys:
            lib.impl(qualname, fn, k)
        return fn

    return register if func is None else register(func)
