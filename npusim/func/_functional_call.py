"""``npusim.func.functional_call``: run a module with some parameters and buffers swapped for given tensors."""
from __future__ import annotations

import contextlib
from collections.abc import Sequence

_ABSENT = object()


def _untie(module, given: dict) -> dict:
    """``given`` plus, for every name tied to a given one (the same tensor under several names), that value."""
    named = dict(module.named_parameters(remove_duplicate=False))
    named.update(module.named_buffers(remove_duplicate=False))
    names_of = {}
    for name, t in named.items():
        names_of.setdefault(id(t), set()).add(name)
    tied = {n: names for names in names_of.values() if len(names) > 1 for n in names}
    given_tied = [n for n in given if n in tied]
    for name in given_tied:
        names = tied[name]
        if len(names.intersection(given_tied)) > 1 and len({id(given[n]) for n in names if n in given}) != 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, which are tied. "
                             f"Consider using tie_weights=False")
    out = dict(given)
    for name in given_tied:
        for other in tied[name]:
            out[other] = given[name]
    return out


def _owner(module, name: str):
    *path, leaf = name.split(".")
    for part in path:
        module = getattr(module, part)
    return module, leaf


def _swap(module, leaf: str, value):
    """Put ``value`` where ``module.<leaf>`` is found; returns what was there (or _ABSENT)."""
    d = module.__dict__
    for store in ("_parameters", "_buffers"):
        table = d.get(store)
        if table is not None and leaf in table:
            old = table[leaf]
            if value is _ABSENT:
                del table[leaf]
            else:
                table[leaf] = value
            return old
    old = d.get(leaf, _ABSENT)
    if value is _ABSENT:
        d.pop(leaf, None)
    else:
        d[leaf] = value   # not a parameter or buffer of this module: a plain attribute for the call
    return old


@contextlib.contextmanager
def reparametrize(module, tensors: dict, tie_weights: bool = True, strict: bool = False):
    """Within the block ``module``'s named parameters and buffers are the given tensors (restored after)."""
    tensors = _untie(module, tensors) if tie_weights else tensors
    if strict:
        valid = {n for n, _ in module.named_parameters(remove_duplicate=False)}
        valid |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing, unexpected = sorted(valid - set(tensors)), sorted(set(tensors) - valid)
        msgs = []
        if unexpected:
            msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if msgs:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(type(module).__name__,
                                                                                  "\n\t".join(msgs)))
    swapped = []
    try:
        for name, value in tensors.items():
            owner, leaf = _owner(module, name)
            swapped.append((owner, leaf, _swap(owner, leaf, value)))
        yield
    finally:
        for owner, leaf, old in reversed(swapped):
            _swap(owner, leaf, old)


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with the parameters and buffers named in ``parameter_and_buffer_dicts`` (a
    dict, or a list/tuple of dicts with distinct keys) replacing the module's own for the call."""
    if isinstance(parameter_and_buffer_dicts, dict):
        tensors = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        counts = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is "
                             f"ambiguous")
        tensors = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with reparametrize(module, tensors, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)
