"""``npusim.compile``: torch.compile's signature, running the program as it is (eagerly).

Compilation (graph capture, code generation) is deliberately out of scope for npusim. A program that
compiles its model still runs: ``compile`` hands back the model or function it was given, which computes
what a compiled one would (torch.compile with ``backend="eager"`` does the same), so ``model =
torch.compile(model)`` and ``@torch.compile`` change nothing here. Invalid arguments are refused as torch
refuses them.
"""
from __future__ import annotations

_MODES = (None, "default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,  # noqa: A001
            name=None, disable=False, recompile_limit=None, isolate_recompiles=False, shapes_spec=None):
    """Return ``model`` unchanged (or, without a model, a decorator that does): npusim runs it eagerly."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: " + ", ".join(m for m in _MODES if m))
    if model is None:
        def decorate(fn):
            return compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options,
                           name=name, disable=disable)
        return decorate
    if not callable(model):
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")
    return model
