"""``npusim.ops``: every defined operator as ``ops.<namespace>.<name>.<overload>``."""
from __future__ import annotations

from . import dispatcher


class _OpNamespace:
    """``npusim.ops.<ns>``: a packet found once stays a plain attribute until its last overload goes."""

    def __init__(self, name: str):
        self.name = name

    def __getattr__(self, op_name):
        if op_name.startswith("__"):
            raise AttributeError(op_name)
        with dispatcher._lock:  # so a packet removed meanwhile is not cached
            pk = dispatcher.packet(self.name, op_name)
            if pk is None:
                raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute '{op_name}'")
            self.__dict__[op_name] = pk
        return pk

    def __dir__(self):
        prefix = self.name + "::"
        return sorted(q[len(prefix):] for q in list(dispatcher._PACKETS) if q.startswith(prefix))

    def __repr__(self):
        return f"<npusim.ops.{self.name}>"


class _Ops:
    """The root of ``npusim.ops``; namespaces appear as libraries define them."""

    def __getattr__(self, ns):
        if ns.startswith("__"):
            raise AttributeError(ns)
        space = _OpNamespace(ns)
        self.__dict__[ns] = space  # a namespace object holds no state, so keep it
        return space

    def __dir__(self):
        return sorted(dispatcher.namespaces())


ops = _Ops()
aten = ops.aten


def _forget_packet(ns: str, name: str) -> None:
    space = ops.__dict__.get(ns)
    if space is not None:
        space.__dict__.pop(name, None)


dispatcher.on_packet_removed(_forget_packet)
