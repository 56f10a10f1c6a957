"""The table of vmap batching rules, and the helpers rules share.

A rule is ``rule(op, level, args, kwargs)``: ``op`` is the aten overload called with at least one BatchedTensor of
vmap level ``level`` (the innermost level among its arguments); the rule computes on the batches (``value``, batch
dimension first) and returns the result wrapped at ``level``. A rule that meets a case it does not cover raises
``UsePerSampleLoop`` and the op runs once per sample instead (``batched_fallback``).
"""
from __future__ import annotations

from .batched_tensor import BatchedTensor, wrap

RULES: dict = {}       # "add" (every overload) or "add.Tensor" (one overload) -> rule


class UsePerSampleLoop(Exception):
    """A rule's way of saying: run this call sample by sample."""


def register(names: str, rule) -> None:
    for name in names.split():
        if name in RULES:
            raise RuntimeError(f"two vmap batching rules for {name}")
        RULES[name] = rule


def rule_for(op):
    return RULES.get(op.__name__) or RULES.get(op._opname)


def unwrap(x, level):
    """(the batch, True) for a BatchedTensor of ``level``; (x, False) for anything else."""
    if x.__class__ is BatchedTensor and x._level == level:
        return x._value, True
    return x, False


def batched(x, level) -> bool:
    return x.__class__ is BatchedTensor and x._level == level


def wrap_all(out, level):
    """Wrap a rule's result (a tensor, or a tuple / list of them) at ``level``."""
    if isinstance(out, (tuple, list)):
        return type(out)(wrap(o, level) for o in out) if type(out) in (tuple, list) else \
            type(out)(*[wrap(o, level) for o in out])
    return wrap(out, level)


def wrap_dim(dim, rank) -> int:
    """A sample's dim made non-negative (torch's IndexError when out of range), as the op itself would check."""
    n = rank if rank > 0 else 1
    if not isinstance(dim, int) or isinstance(dim, bool) or not -n <= dim < n:
        raise UsePerSampleLoop()        # the op's own error, from one sample
    return dim + n if dim < 0 else dim


def argument(op, args, kwargs, name):
    """The value ``op`` receives for argument ``name`` (its default when not given)."""
    for i, a in enumerate(op._schema.arguments):
        if a.name == name:
            if name in kwargs:
                return kwargs[name]
            if i < len(args) and not a.kwarg_only:
                return args[i]
            return a.default if a.has_default else None
    raise KeyError(name)


def with_argument(op, args, kwargs, name, value):
    """(args, kwargs) with argument ``name`` set to ``value``."""
    args, kwargs = list(args), dict(kwargs)
    for i, a in enumerate(op._schema.arguments):
        if a.name != name:
            continue
        if name in kwargs or a.kwarg_only:
            kwargs[name] = value
        elif i < len(args):
            args[i] = value
        else:
            params = op._schema.arguments
            for j in range(len(args), i):
                p = params[j]
                if p.name in kwargs:
                    args.append(kwargs.pop(p.name))
                elif p.has_default:
                    args.append(p.default)
                else:
                    raise UsePerSampleLoop()
            args.append(value)
        return args, kwargs
    raise KeyError(name)


def has_argument(op, name) -> bool:
    return any(a.name == name for a in op._schema.arguments)
