"""vmap's batched run: the function called once, on BatchedTensors, its results unwrapped along ``out_dims``.

Each input mapped over becomes a BatchedTensor at a new vmap level (its batch dim moved first); every op the
function runs on them goes through ``batched_fallback``. Random draws follow ``randomness``: "error" raises;
"same" lets an op with no batched input draw once for all samples; "different" lets ops on batched inputs draw per
sample, and an op with no batched input (``torch.rand(3)``) sends the call to the per-sample loop
(``NeedsPerSampleLoop``), as does a read of a BatchedTensor's data outside the dispatcher.
"""
from __future__ import annotations

from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor
from ..core.c10 import generator as _generator
from ._pytree import tree_flatten, tree_unflatten
from .batched_tensor import STACK, BatchedTensor, NeedsPerSampleLoop, VmapLevel, wrap
from . import batched_fallback  # noqa: F401 - registers the FuncTorchBatched kernel

_unsqueeze = aten.unsqueeze.default
_expand = aten.expand.default

RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either use the 'same' or "
                "'different' randomness flags on vmap or perform the randomness operation out of vmap")


class BatchedRandomness:
    """Watches the draws of one batched run (and remembers where each generator stood, to rewind on a retry)."""

    def __init__(self, lv):
        self.lv = lv
        self.start = {}

    def __call__(self, gen):
        mode = self.lv.randomness
        if mode == "error":
            raise RuntimeError(RANDOM_ERROR)
        if gen not in self.start:
            self.start[gen] = gen.get_offset()
        if mode == "different" and not STACK.random_op:
            raise NeedsPerSampleLoop("a random op with no batched input under randomness='different'")

    def rewind(self):
        for gen, offset in self.start.items():
            gen.set_offset(offset)


def run_batched(func, name, flat_args, flat_dims, spec, kwargs, batch, out_dims, randomness, flat_out_dims):
    """``func`` run once on the batch; raises NeedsPerSampleLoop (generators rewound) when it cannot be."""
    lv = VmapLevel(len(STACK.levels) + 1, batch, randomness)
    watch = BatchedRandomness(lv)
    STACK.levels.append(lv)
    try:
        with _generator.watch_draws(watch):
            inputs = []
            for a, d in zip(flat_args, flat_dims):
                if d is None:
                    inputs.append(a)
                    continue
                t = wrap(a if d == 0 else a.movedim(d, 0), lv.level)
                lv.input_versions.add(id(t._vc))
                inputs.append(t)
            out = func(*tree_unflatten(inputs, spec), **kwargs)
            return _unwrap(name, out, lv, out_dims, flat_out_dims)
    except NeedsPerSampleLoop:
        watch.rewind()
        if lv.mutated:
            raise RuntimeError(f"vmap({name}): the function wrote into an input in place and then did something "
                               f"that can only run sample by sample; rewrite it without the in-place write") from None
        raise
    finally:
        STACK.levels.pop()


def _unwrap(name, out, lv, out_dims, flat_out_dims):
    flat, out_spec = tree_flatten(out)
    dims = flat_out_dims(out_dims, out, out_spec)
    level = lv.level
    res = []
    for o, d in zip(flat, dims):
        is_batched = o.__class__ is BatchedTensor and o._level == level
        if d is None:
            if is_batched:
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
            res.append(o)
            continue
        if not isinstance(o, Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(o)}. Did you "
                             f"mean to set out_dims= to None for output?")
        if is_batched:
            v = o._value
            res.append(v if d == 0 else v.movedim(0, d))
        else:
            u = _unsqueeze(o, d)
            shape = list(u.shape)
            shape[d % len(shape)] = lv.batch
            res.append(_expand(u, shape))
    return tree_unflatten(res, out_spec)
