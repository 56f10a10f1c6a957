"""Named tuples returned by ops with several outputs (``npusim.return_types``)."""
from __future__ import annotations

import collections

__all__ = []


def _make(name, fields):
    base = collections.namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"npusim.return_types.{name}(\n{body})"

    cls = type(name, (base,), {"__slots__": (), "__repr__": __repr__, "__module__": "npusim.return_types",
                               "n_fields": len(fields), "n_sequence_fields": len(fields)})
    globals()[name] = cls
    __all__.append(name)
    return cls


for _name in ("max", "min", "sort", "topk", "kthvalue", "mode", "median", "nanmedian", "cummax", "cummin",
              "aminmax"):
    _make(_name, ("values", "indices") if _name != "aminmax" else ("min", "max"))
