"""``npusim.func.vmap``: map a function over a dimension of its inputs.

As torch's: the function runs once, on BatchedTensors (``_vmap_batched``), and each op computes on the whole batch
through its batching rule (``batching_rules_*``; an op without one runs per sample, ``batched_fallback``). When
the function reads a BatchedTensor's data outside the dispatcher, or draws with no batched input under
randomness="different", vmap runs it once per index of the mapped dimension instead, on that slice of every batched
input (unbatched inputs, ``in_dims`` None, passed whole), and stacks the per-sample results along ``out_dims``.
npusim's own elementwise functions and activation modules called directly run once on the whole batch
(``_vmap_fast``). It composes with itself (nested vmap: levels) and with the grad transforms (per-sample
gradients).

``randomness``: "error" raises on a random op, as torch does; "different" draws afresh for each sample;
"same" rewinds every generator used to where it stood before the first sample, so each sample draws the same
numbers. An output with ``out_dims`` None must be the same for every sample.
"""
from __future__ import annotations

import functools

from ..core.c10 import generator as _generator
from ..api.operators import cat as _cat, equal as _equal, stack as _stack
from ..core.tensor import Tensor
from ._pytree import broadcast_to_and_flatten, tree_flatten, tree_unflatten
from ._vmap_fast import try_whole_batch
from ._vmap_batched import run_batched
from .batched_tensor import NeedsPerSampleLoop
from .batched_fallback import STATS

__all__ = ["vmap"]


def _name(func) -> str:
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return repr(func)


def _check_out_dims(out_dims, func):
    if isinstance(out_dims, int):
        return
    for d in tree_flatten(out_dims)[0]:
        if not (d is None or isinstance(d, int)):
            raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a "
                             f"python collection of ints representing where in the outputs the vmapped dimension "
                             f"should appear.")


def _process_inputs(func, in_dims, args):
    """(batch size, per-leaf in_dim, leaves, spec) of the inputs, checked as torch checks them."""
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if len(args) == 0:
        raise ValueError(f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
                         f"trying to vmap over a function with no inputs. The latter is unsupported.")
    flat_args, spec = tree_flatten(args)
    flat_dims = broadcast_to_and_flatten(in_dims, spec)
    if flat_dims is None:
        raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has structure {tree_flatten(in_dims)[1]} but inputs has "
                         f"structure {spec}.")
    for i, (arg, d) in enumerate(zip(flat_args, flat_dims)):
        if d is not None and (not isinstance(d, int) or isinstance(d, bool)):
            raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input "
                             f"but in_dim must be either an integer dimension or None.")
        if d is not None and not isinstance(arg, Tensor):
            raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input "
                             f"but the input is of type {type(arg)}. We cannot vmap over non-Tensor arguments, please "
                             f"use None as the respective in_dim")
        if d is not None and (d < -arg.dim() or d >= arg.dim()):
            raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some input, "
                             f"but that input is a Tensor of dimensionality {arg.dim()} so expected in_dim to satisfy "
                             f"-{arg.dim()} <= in_dim < {arg.dim()}.")
        if d is not None and d < 0:
            flat_dims[i] = d % arg.dim()
    sizes = [arg.size(d) for d, arg in zip(flat_dims, flat_args) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return sizes[0], flat_dims, flat_args, spec


class _Randomness:
    """Watches the generators' draws while one vmap runs (see the module docstring)."""

    def __init__(self, mode):
        self.mode = mode
        self.start = {}      # generator -> offset before the first sample drew from it

    def __call__(self, gen):
        if self.mode == "error":
            raise RuntimeError("vmap: called random operation while in randomness error mode. Please either use the "
                               "'same' or 'different' randomness flags on vmap or perform the randomness operation "
                               "out of vmap")
        if self.mode == "same" and gen not in self.start:
            self.start[gen] = gen.get_offset()

    def next_sample(self):
        for gen, offset in self.start.items():
            gen.set_offset(offset)


def _flat_out_dims(func, out_dims, output, out_spec):
    def incompatible():
        raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with "
                         f"the structure of `outputs`. out_dims has structure {tree_flatten(out_dims)[1]} but outputs "
                         f"has structure {out_spec}.")
    if isinstance(output, Tensor):
        if isinstance(out_dims, int) or out_dims is None:
            return [out_dims]
        if isinstance(out_dims, tuple) and len(out_dims) == 1:
            return list(out_dims)
        incompatible()
    flat = broadcast_to_and_flatten(out_dims, out_spec)
    if flat is None:
        incompatible()
    return flat


def _same_for_all(values) -> bool:
    first = values[0]
    if not isinstance(first, Tensor):
        return True            # a non-tensor output with out_dims None is passed through, as torch does
    return all(v is first or (isinstance(v, Tensor) and isinstance(first, Tensor) and v.shape == first.shape
                              and v.dtype == first.dtype and _equal(v, first)) for v in values[1:])


def _combine(func, out_dims, outputs):
    """The per-sample outputs stacked along their out_dims (checked as torch checks them)."""
    flat0, out_spec = tree_flatten(outputs[0])
    flat_dims = _flat_out_dims(func, out_dims, outputs[0], out_spec)
    per_leaf = list(zip(*[tree_flatten(o)[0] for o in outputs]))
    result = []
    for leaf, d in zip(per_leaf, flat_dims):
        if d is None:
            if not _same_for_all(leaf):
                raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` can not return a BatchedTensor when "
                                 f"out_dim is None")
            result.append(leaf[0])
            continue
        for v in leaf:
            if not isinstance(v, Tensor):
                raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` must only return Tensors, got type "
                                 f"{type(v)}. Did you mean to set out_dims= to None for output?")
        result.append(_stack(list(leaf), dim=d))
    return tree_unflatten(result, out_spec)


def _sample(flat_args, flat_dims, spec, i):
    return tree_unflatten([a if d is None else a.select(d, i) for a, d in zip(flat_args, flat_dims)], spec)


def _empty_batch(func, flat_args, flat_dims, spec, out_dims, kwargs):
    """A batch of size 0: run ``func`` on one zero-filled sample for the output shapes, return them empty."""
    probe = [a if d is None else a.new_zeros(a.shape[:d] + a.shape[d + 1:]) for a, d in zip(flat_args, flat_dims)]
    out = func(*tree_unflatten(probe, spec), **kwargs)
    flat, out_spec = tree_flatten(out)
    dims = _flat_out_dims(func, out_dims, out, out_spec)
    res = []
    for o, d in zip(flat, dims):
        if d is None:
            res.append(o)
            continue
        if not isinstance(o, Tensor):
            raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` must only return Tensors, got type "
                             f"{type(o)}. Did you mean to set out_dims= to None for output?")
        res.append(_stack([o], dim=d).narrow(d % (o.dim() + 1), 0, 0))
    return tree_unflatten(res, out_spec)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``func`` mapped over dimension ``in_dims`` of its inputs, results stacked along ``out_dims``.

    ``in_dims``: an int for every input, or a tuple with one entry per positional argument, each an int, None
    (not mapped: passed whole to every call) or a pytree matching that argument. Keyword arguments are not
    mapped. Runs ``func`` once on the whole batch through batching rules (see the module docstring);
    ``chunk_size`` runs it on that many samples at a time and concatenates the results.
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got "
                           f"{randomness}")
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        _check_out_dims(out_dims, func)
        batch, flat_dims, flat_args, spec = _process_inputs(func, in_dims, args)
        whole = try_whole_batch(func, args, kwargs, in_dims, out_dims)
        if whole is not None:
            return whole
        if batch == 0:
            with _generator.watch_draws(_Randomness(randomness)):
                return _empty_batch(func, flat_args, flat_dims, spec, out_dims, kwargs)
        if chunk_size is not None and chunk_size < batch:
            return _chunked(func, flat_args, flat_dims, spec, kwargs, batch, out_dims, randomness, chunk_size)
        return _run(func, flat_args, flat_dims, spec, kwargs, batch, out_dims, randomness)
    return wrapped


def _run(func, flat_args, flat_dims, spec, kwargs, batch, out_dims, randomness):
    try:
        return run_batched(func, _name(func), flat_args, flat_dims, spec, kwargs, batch, out_dims, randomness,
                           lambda dims, out, out_spec: _flat_out_dims(func, dims, out, out_spec))
    except NeedsPerSampleLoop:
        STATS["whole_function_loops"] += 1
    watch = _Randomness(randomness)
    outputs = []
    with _generator.watch_draws(watch):
        for i in range(batch):
            if i:
                watch.next_sample()
            outputs.append(func(*_sample(flat_args, flat_dims, spec, i), **kwargs))
    return _combine(func, out_dims, outputs)


def _chunked(func, flat_args, flat_dims, spec, kwargs, batch, out_dims, randomness, chunk_size):
    """The batch run ``chunk_size`` samples at a time, results concatenated along their out_dims."""
    parts = []
    first_draws = _Randomness("same")      # randomness="same": every chunk starts from the same generator state
    with _generator.watch_draws(first_draws):
        for start in range(0, batch, chunk_size):
            if start and randomness == "same":
                first_draws.next_sample()
            n = min(chunk_size, batch - start)
            chunk = [a if d is None else a.narrow(d, start, n) for a, d in zip(flat_args, flat_dims)]
            parts.append(_run(func, chunk, flat_dims, spec, kwargs, n, out_dims, randomness))
    flat0, out_spec = tree_flatten(parts[0])
    dims = _flat_out_dims(func, out_dims, parts[0], out_spec)
    leaves = list(zip(*[tree_flatten(p)[0] for p in parts]))
    return tree_unflatten([leaf[0] if d is None else _cat(list(leaf), d) for leaf, d in zip(leaves, dims)], out_spec)
