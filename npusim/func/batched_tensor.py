"""vmap's BatchedTensor: a per-sample view of a batch, carried through npusim's dispatcher.

A BatchedTensor at vmap level ``L`` wraps ``value``, the whole batch with the batch dimension first (``value`` may
itself be a BatchedTensor of an outer level). To user code it looks like one sample: its shape, dtype and device
are the sample's. Its key set adds ``FuncTorchBatched``, so every op on it reaches ``batched_fallback`` (below the
autograd keys: a grad transform inside vmap records on BatchedTensors), which runs the op's batching rule on
``value``.

Its ``_a`` is a ``LogicalArray``: the sample's shape, dtype and strides, and no data. Code that reads a tensor's
array without dispatching (a fast path written for plain tensors) raises ``NeedsPerSampleLoop`` on it, and vmap then
runs the function once per sample instead; nothing computes silently on a wrong array.
"""
from __future__ import annotations

import threading

from ..core.c10.dispatch_keys import DispatchKey
from ..core.tensor import Tensor, _new
from ..core.dispatch.ops_namespace import aten

BATCHED_BIT = 1 << DispatchKey.FuncTorchBatched
_detach = aten.detach.default
_alias = aten.alias.default

ITEM_MESSAGE = ("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over calling .item() "
                "on a Tensor, please try to rewrite what you're doing with other operations. If error is occurring "
                "somewhere inside PyTorch internals, please file a bug report.")
CONTROL_FLOW_MESSAGE = ("vmap: It looks like you're attempting to use a Tensor in some data-dependent control flow. "
                        "We don't support that yet, please file an issue at https://github.com/pytorch/pytorch/issues .")
NO_STORAGE_MESSAGE = "Cannot access data pointer of Tensor that doesn't have storage"


class NeedsPerSampleLoop(RuntimeError):
    """Raised where a BatchedTensor's data was read outside the dispatcher: vmap falls back to the per-sample loop."""


class _Flags:
    __slots__ = ()
    c_contiguous = True
    f_contiguous = False
    owndata = False
    writeable = True
    aligned = True


_FLAGS = _Flags()


class LogicalArray:
    """The array-shaped facts of one sample (shape, dtype, strides); any read of data raises NeedsPerSampleLoop."""

    __slots__ = ("shape", "dtype", "ndim", "size")
    flags = _FLAGS
    __array_priority__ = 10 ** 6

    def __init__(self, shape, dtype):
        self.shape = shape = tuple(shape)
        self.dtype = dtype
        self.ndim = len(shape)
        n = 1
        for s in shape:
            n *= s
        self.size = n

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    @property
    def strides(self):
        out, acc = [], self.dtype.itemsize
        for n in reversed(self.shape):
            out.append(acc)
            acc *= max(n, 1)
        return tuple(reversed(out))

    def _refuse(self, *args, **kwargs):
        raise NeedsPerSampleLoop("a BatchedTensor's data was read outside the dispatcher")

    __array__ = __array_ufunc__ = __array_function__ = __getitem__ = __setitem__ = __iter__ = __len__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _refuse
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __bool__ = __float__ = __int__ = __neg__ = _refuse
    __hash__ = object.__hash__

    def __getattr__(self, name):
        self._refuse()


class BatchedTensor(Tensor):
    """One sample of ``value`` (batch dimension first) at vmap level ``level``."""

    __slots__ = ("_value", "_level", "_keys")

    # the key set read by dispatch: whatever autograd sets for the sample, plus the batched key
    @property
    def _ks(self):
        return self._keys

    @_ks.setter
    def _ks(self, ks):
        self._keys = ks | BATCHED_BIT

    def _rewrap(self, detach):
        value = self._value
        return wrap(_detach(value) if detach else _alias(value), self._level)

    def item(self):
        raise RuntimeError(ITEM_MESSAGE)

    def __bool__(self):
        raise RuntimeError(CONTROL_FLOW_MESSAGE)

    def _scalar_for(self, what):
        raise RuntimeError(ITEM_MESSAGE)

    def tolist(self):
        raise RuntimeError(NO_STORAGE_MESSAGE)

    def numpy(self, *, force=False):
        raise RuntimeError(NO_STORAGE_MESSAGE)

    def data_ptr(self):
        raise RuntimeError(NO_STORAGE_MESSAGE)

    def untyped_storage(self):
        raise RuntimeError(NO_STORAGE_MESSAGE)

    def __repr__(self, *, tensor_contents=None):
        inner = repr(self._value).replace("\n", "\n    ")
        return f"BatchedTensor(lvl={self._level}, bdim=0, value=\n    {inner}\n)"


def wrap(value: Tensor, level: int) -> BatchedTensor:
    """``value`` (batch dimension first) as a BatchedTensor at ``level``."""
    t = _new(BatchedTensor)
    shape = value.shape[1:]
    t._a = LogicalArray(shape, value._a.dtype)
    t._value = value
    t._level = level
    t._device = value._device
    t._keys = value._device._ks | BATCHED_BIT
    t._base = None
    t._st = None
    vc = value._vc
    if vc is None:
        vc = value._vc = [0]
    t._vc = vc              # the batch's version counter: in-place ops on the batch move the sample's too
    t._am = None
    return t


def level_of(t) -> int:
    """The vmap level a value is batched at (0: not batched)."""
    return t._level if t.__class__ is BatchedTensor else 0


# --- the stack of vmaps running in this thread -----------------------------------------------------------------

class VmapLevel:
    """One running vmap: its level, batch size and randomness mode."""

    __slots__ = ("level", "batch", "randomness", "mutated", "input_versions")

    def __init__(self, level, batch, randomness):
        self.level, self.batch, self.randomness = level, batch, randomness
        self.mutated = False     # an in-place op wrote into an input: the per-sample retry would repeat it
        self.input_versions = set()   # id() of the inputs' version counters (shared by their views)


class _Stack(threading.local):
    def __init__(self):
        self.levels = []
        self.random_op = 0       # >0 while a batching rule runs a random op sample by sample


STACK = _Stack()


def current(level: int) -> VmapLevel:
    for lv in STACK.levels:
        if lv.level == level:
            return lv
    raise RuntimeError("vmap: a BatchedTensor was used outside the vmap that created it")
