"""geqrf's derivative: torch's derivatives.yaml marks it not_implemented, so its outputs require grad and
backward raises torch's NotImplementedError (the LDL factorization has no entry at all: the dispatcher's
generic error is torch's there)."""
from __future__ import annotations

from .derivatives import derivative


@derivative("geqrf")
def not_implemented_backward(ctx, *grads):
    name = type(ctx)._op_name
    raise NotImplementedError(f"the derivative for '{name}' is not implemented.")
