"""``npusim.ops``: every defined operator as ``ops.<namespace>.<name>.<overload>``."""
from __future__ import annotations

from . import dispatcher


class _OpNamespace:
    def __init__(self, name: str):
        self.name = name

    def __getattr__(self, op_name):
        if op_name.startswith("__"):
            raise AttributeError(op_name)
        pk = dispatcher.packet(self.name, op_name)
        if pk is None:
            raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute '{op_name}'")
        return pk

    def __repr__(self):
        return f"<npusim.ops.{self.name}>"


class _Ops:
    """The root of ``npusim.ops``; namespaces appear as libraries define them."""

    def __getattr__(self, ns):
        if ns.startswith("__"):
            raise AttributeError(ns)
        return _OpNamespace(ns)

    def __dir__(self):
        return sorted(dispatcher.namespaces())


ops = _Ops()
aten = _OpNamespace("aten")
