"""The kernel of the FuncTorchBatched dispatch key: batching rule, decomposition, or one op run per sample.

An op reaching this key has a BatchedTensor among its arguments. The innermost vmap level among them is the level
served (values batched at outer levels are plain values to it, as torch's levels work). In order:

1. the op's batching rule (``batching_rules_*``) computes on the whole batch at once;
2. a CompositeImplicitAutograd op without a backend kernel decomposes into ops that have rules;
3. otherwise (torch's "batched fallback") the op runs once per sample, on each sample's slice, and the results are
   stacked: correct for every op, slower, with torch's warning ("There is a performance drop..."). In-place ops
   write each sample's slice; random ops draw per sample ("different") or rewind the generators between samples
   ("same").

``STATS`` counts the calls each way (``per_sample`` by op name), and the vmap calls that fell back to running the
whole function per sample (``whole_function_loops``), for tests and benchmarks.
"""
from __future__ import annotations

import collections
import warnings

import numpy as np

from ..core.c10 import generator as _generator
from ..core.c10.dispatch_keys import BACKEND_KEYS, DispatchKey
from ..core.dispatch import dispatcher as _dispatcher
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor
from .batched_tensor import ITEM_MESSAGE, BatchedTensor, NeedsPerSampleLoop, STACK, current, wrap
from .batching_registry import UsePerSampleLoop, batched, rule_for
from . import (batching_rules_elementwise, batching_rules_linalg, batching_rules_nn,  # noqa: F401 - fill RULES
               batching_rules_pooling, batching_rules_reductions, batching_rules_rnn, batching_rules_views)

STATS = {"rule": 0, "decomposed": 0, "per_sample": collections.Counter(), "whole_function_loops": 0}
_stack = aten.stack.default
_select = aten.select.int
_CIA = DispatchKey.CompositeImplicitAutograd
_BACKEND_REGISTRATIONS = BACKEND_KEYS + (DispatchKey.CompositeExplicitAutograd,
                                         DispatchKey.CompositeExplicitAutogradNonFunctional)
# how torch words the error for an in-place write of a batch into an unbatched tensor, by op: its pointwise binary
# family decomposes and fails on the broadcast; a few rules say "inplace arithmetic"; the other pointwise ops name
# themselves as aten::name_; the rest (fill_, index_put_, index_add_...) as name_
_BROADCAST_FAILURE = frozenset("add_ atan2_ copysign_".split())
_ARITHMETIC_INPLACE = frozenset("sub_ mul_ div_ true_divide_ logical_and_ logical_or_ logical_xor_ clamp_min_ "
                                "clamp_max_ copy_ masked_fill_".split())
_ATEN_NAMED = frozenset(batching_rules_elementwise.POINTWISE_INPLACE) | {"clamp_"}


class InplaceIntoUnbatched(RuntimeError):
    """torch's error for an in-place write of a batch into a tensor that is not batched."""


def inplace_error(op, args, kwargs, batch, level) -> RuntimeError:
    name = op._schema.name
    if name in _BROADCAST_FAILURE:
        shapes = [tuple(v.shape) for v in list(args) + list(kwargs.values()) if isinstance(v, Tensor)]
        try:
            wide = list(np.broadcast_shapes(*shapes))
        except ValueError:
            wide = list(shapes[0])
        return InplaceIntoUnbatched(f"output with shape {list(shapes[0])} doesn't match the broadcast shape "
                                    f"{[batch] + wide}")
    what = "inplace arithmetic" if name in _ARITHMETIC_INPLACE else f"aten::{name}" if name in _ATEN_NAMED else name
    where = f"at level {level}" if name in _ATEN_NAMED and name not in _ARITHMETIC_INPLACE else "in a vmap"
    return InplaceIntoUnbatched(
        f"vmap: {what}(self, *extra_args) is not possible because there exists a Tensor `other` in extra_args that "
        f"has more elements than `self`. This happened due to `other` being vmapped over but `self` not being "
        f"vmapped over {where}. Please try to use out-of-place operators instead of {what}. If said operator is "
        f"being called inside the PyTorch framework, please file a bug report instead.")


def _innermost_level(args, kwargs) -> int:
    level = 0
    for v in (*args, *kwargs.values()):
        if v.__class__ is BatchedTensor:
            if v._level > level:
                level = v._level
        elif v.__class__ is list or v.__class__ is tuple:
            for t in v:
                if t.__class__ is BatchedTensor and t._level > level:
                    level = t._level
    return level


def _decomposition(op):
    kernels = op._kernels
    regs = kernels.get(_CIA)
    if not regs or op._ns != "aten" or any(kernels.get(k) for k in _BACKEND_REGISTRATIONS):
        return None
    return regs[-1]


class _Plan:
    """What the batched kernel needs of an op, worked out on its first batched call."""

    __slots__ = ("rule", "written", "decomposition")

    def __init__(self, op):
        self.rule = rule_for(op)
        self.written = tuple((i, a.name, a.kwarg_only) for i, a in enumerate(op._schema.arguments) if a.type.is_write)
        self.decomposition = _decomposition(op)


_PLANS: dict = {}


def batched_kernel(keyset, op, *args, **kwargs):
    level = _innermost_level(args, kwargs)
    lv = current(level)
    plan = _PLANS.get(op)
    if plan is None:
        plan = _PLANS[op] = _Plan(op)
    if plan.written:
        if op._schema.is_out:
            raise RuntimeError(f"Batching rule not implemented for aten::{op.__name__}; the fallback path doesn't "
                               f"work on out= or view ops.")
        # torch's rule: an in-place op may not write a batch into a tensor that is not batched
        for i, name, kwarg_only in plan.written:
            target = kwargs.get(name) if kwarg_only or i >= len(args) else args[i]
            if isinstance(target, Tensor) and not (target.__class__ is BatchedTensor and target._level == level):
                raise inplace_error(op, args, kwargs, lv.batch, level)
            if target is not None and id(target._vc) in lv.input_versions:
                lv.mutated = True
    rule = plan.rule
    if rule is not None:
        try:
            out = rule(op, level, args, kwargs)
            STATS["rule"] += 1
            return out
        except UsePerSampleLoop:
            pass
    reg = plan.decomposition
    if reg is not None:
        try:
            out = reg.fn(keyset, *args, **kwargs) if reg.with_keyset else reg.fn(*args, **kwargs)
            STATS["decomposed"] += 1
            return out
        except InplaceIntoUnbatched:
            pass     # the decomposition fills a fresh tensor in place (diag): per sample instead
    return per_sample(op, lv, args, kwargs)


def _sample(v, level, i):
    if v.__class__ is BatchedTensor and v._level == level:
        return _select(v._value, 0, i)
    if v.__class__ is list or v.__class__ is tuple:
        return type(v)(_sample(t, level, i) for t in v)
    return v


class _DrawsOfOneOp:
    """Where each generator stood before this op's first sample drew (to rewind for randomness="same")."""

    def __init__(self):
        self.start = {}

    def __call__(self, gen):
        if gen not in self.start:
            self.start[gen] = gen.get_offset()

    def rewind(self):
        for gen, offset in self.start.items():
            gen.set_offset(offset)


# in-place ops that change a tensor's shape or storage: done on one sample's slice they would not change the batch
_RESHAPING_INPLACE = frozenset("resize_ resize_as_ as_strided_ set_ squeeze_ unsqueeze_ transpose_ t_ "
                               "swapdims_ swapaxes_".split())


# ops whose result's shape depends on the values: torch refuses them under vmap
DYNAMIC_SHAPE = frozenset("nonzero _unique2 unique_dim unique_consecutive argwhere nonzero_static_dynamic".split())


def per_sample(op, lv, args, kwargs):
    """``op`` run once per sample of level ``lv`` and the results stacked (torch's batched fallback)."""
    if op._schema.name in DYNAMIC_SHAPE:
        raise dynamic_shape_error(op)
    if op._schema.name == "masked_select" and batched(args[1] if len(args) > 1 else kwargs.get("mask"),
                                                              lv.level):
        raise RuntimeError("vmap: Attempted to vmap over `mask` in torch.masked_select(self, mask) We cannot support "
                           "this because for each batch this would return a differently shaped Tensor. Please file "
                           "an issue at https://github.com/pytorch/pytorch/issues if you need this feature.")
    if op._schema.name in _RESHAPING_INPLACE:
        raise RuntimeError(f"vmap: {op._schema.name} on a BatchedTensor is not supported: it changes the "
                           f"tensor's shape in place; use the out-of-place op")
    STATS["per_sample"][op._opname] += 1
    if op._ns == "aten":
        warnings.warn(f"There is a performance drop because we have not yet implemented the batching rule for "
                      f"aten::{op._opname}. Please file us an issue on GitHub so that we can prioritize its "
                      f"implementation.", UserWarning, stacklevel=2)
    level = lv.level
    draws = _DrawsOfOneOp()
    outs = []
    STACK.random_op += 1
    try:
        with _generator.watch_draws(draws):
            for i in range(lv.batch):
                if i and lv.randomness == "same":
                    draws.rewind()
                outs.append(op(*[_sample(a, level, i) for a in args],
                               **{k: _sample(v, level, i) for k, v in kwargs.items()}))
    finally:
        STACK.random_op -= 1
    if op._schema.is_inplace:
        return args[0]
    return _stack_results(op, outs, level)


def dynamic_shape_error(op) -> RuntimeError:
    return RuntimeError(f"vmap: We do not support batching operators that can output dynamic shape. Attempted to vmap "
                        f"over aten::{op._opname}. Please file an issue at https://github.com/pytorch/pytorch/issues "
                        f"if you need this feature.")


def _same_shapes(tensors) -> bool:
    shape = tensors[0].shape
    return all(t.shape == shape for t in tensors[1:])


def _stack_results(op, outs, level):
    first = outs[0]
    if isinstance(first, Tensor):
        if not _same_shapes(outs):
            raise dynamic_shape_error(op)
        return wrap(_stack(outs, 0), level)
    if isinstance(first, (tuple, list)) and first and all(isinstance(o, Tensor) for o in first):
        if any(len(o) != len(first) for o in outs) or not all(_same_shapes([o[j] for o in outs])
                                                              for j in range(len(first))):
            raise dynamic_shape_error(op)
        parts = [wrap(_stack([o[j] for o in outs], 0), level) for j in range(len(first))]
        return type(first)(parts) if type(first) in (tuple, list) else type(first)(*parts)
    if op._opname == "_local_scalar_dense":
        raise RuntimeError(ITEM_MESSAGE)
    raise NeedsPerSampleLoop(f"{op._opname} returned {type(first).__name__} for a batch")


_dispatcher.register_fallback(DispatchKey.FuncTorchBatched, batched_kernel, with_keyset=True,
                              where="npusim/func/batched_fallback.py")
