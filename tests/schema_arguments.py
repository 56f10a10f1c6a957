"""Arguments made from an op's schema, for the tests that walk every registered op with one kind of tensor."""
from __future__ import annotations

import npusim


def schema_argument(arg, x, device, scalar_type=None):
    """An argument for ``arg`` of a schema: the tensor ``x`` for tensors, small plain values otherwise
    (``scalar_type``, or ``x``'s dtype, for a dtype argument)."""
    t = arg.type
    base = t.base
    if base == "Tensor":
        return [x, x] if t.is_list else x
    if t.optional:
        return None
    if base in ("int", "SymInt"):
        return [0] if t.is_list else 0
    if base == "float":
        return [1.0] if t.is_list else 0.5
    if base == "bool":
        return [False] if t.is_list else False
    if base == "Scalar":
        return 1
    if base == "str":
        return "none"
    if base == "ScalarType":
        return x.dtype if scalar_type is None else scalar_type
    if base == "Device":
        return npusim.device(device)
    return None
