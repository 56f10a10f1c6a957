"""Graph nodes: the ``grad_fn`` of tensors and ``AccumulateGrad`` for leaves.

A node knows the edges to the nodes of its inputs (``next_functions``), the
tensors it saved for backward (with the version each had, to catch in-place
changes), hooks, and a sequence number that orders backward and links a
forward op to its backward op in profiles.
"""
from __future__ import annotations

import itertools
import re
import weakref

from ..inference_tensors import INFERENCE_VC, SAVE_MESSAGE
from ..tensor import Tensor, make_alias
from .anomaly_mode import is_anomaly_enabled
from . import saved_tensor_hooks as _hooks
from .grad_mode import tls as _grad_tls
from .meta import AutogradMeta

# next() on a count is atomic under the GIL: no lock needed
_seq = itertools.count()
next_sequence_nr = _seq.__next__

_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
               "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor",
               "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor"}

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have already "
    "been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). "
    "Specify retain_graph=True if you need to backward through the graph a second time or if you need to access "
    "saved tensors after calling backward.")


class Packed:
    """What a pack hook returned for a saved tensor, with the unpack hook that gives the tensor back."""

    __slots__ = ("packed", "unpack_hook", "cache")

    def __init__(self, packed, unpack_hook):
        self.packed = packed
        self.unpack_hook = unpack_hook
        self.cache = None   # while a backward formula runs: [] or [tensor], so it unpacks once

    def unpack(self):
        cache = self.cache
        if cache:
            return cache[0]
        t = self.unpack_hook(self.packed)
        if not isinstance(t, Tensor):
            raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                            f"{type(t).__name__}")
        if cache is not None:
            cache.append(t)
        return t


def unpacking_once(saved: dict, run):
    """``run()`` with each hook-packed tensor of ``saved`` unpacked at most once (torch's formulas unpack each
    saved variable once per call)."""
    packs = []
    for v in saved.values():
        for s in (v if v.__class__ is list else (v,)):
            if s.__class__ is SavedTensor and s.tensor.__class__ is Packed:
                packs.append(s.tensor)
    for p in packs:
        p.cache = []
    try:
        return run()
    finally:
        for p in packs:
            p.cache = None


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved.

    An output of the node that saves it is kept as a detached alias (the output
    must not keep its own grad_fn alive); when it is unpacked with grad mode on
    (``create_graph``) it is re-attached to that node, through the view geometry
    ``view_geom`` when the output was a view modified in place.

    Under ``saved_tensors_hooks`` only what the pack hook returned is kept: ``tensor`` is then a ``Packed``
    (that result and the unpack hook that turns it back into a tensor) until released.
    """

    __slots__ = ("tensor", "version", "is_output", "output_nr", "node_ref", "view_geom")

    def __init__(self, t, is_output=False, node=None, view_geom=None, output_nr=0):
        if _hooks.tls.stack:
            self._pack(t, is_output, node, view_geom, output_nr)
            return
        if is_output:
            self.tensor = make_alias(t._a, t)
            self.output_nr = output_nr
            # only a differentiable output is re-attached to its node
            self.node_ref = weakref.ref(node) if node is not None and (t.is_floating_point() or t.is_complex()) \
                else None
        else:
            self.tensor = t
            self.output_nr = 0
            self.node_ref = None
        self.is_output = is_output
        self.view_geom = view_geom
        vc = t._vc
        if vc is INFERENCE_VC:
            raise RuntimeError(SAVE_MESSAGE)
        self.version = vc[0] if vc is not None else 0

    def _pack(self, t, is_output, node, view_geom, output_nr):
        if t._vc is INFERENCE_VC:
            raise RuntimeError(SAVE_MESSAGE)
        pack_hook, unpack_hook = _hooks.current()
        version = t._version
        prev, _grad_tls.enabled = _grad_tls.enabled, False     # torch packs under no_grad
        try:
            packed = Packed(pack_hook(t), unpack_hook)
        finally:
            _grad_tls.enabled = prev
        if t._version != version:
            raise RuntimeError(
                "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack hook "
                "cannot be modified by in-place operations as this can lead to unexpected side-effects. Please "
                "open an issue if you need to perform in-place operations on the input to a pack hook.")
        self.tensor = packed
        self.is_output = is_output
        self.output_nr = output_nr
        self.node_ref = weakref.ref(node) if is_output and node is not None and (
            t.is_floating_point() or t.is_complex()) else None
        self.view_geom = view_geom
        self.version = version

    def release(self) -> None:
        """Free what was saved (the tensor, or the pack hook's result)."""
        self.tensor = None

    def register_hooks(self, pack_hook, unpack_hook) -> None:
        """Keep ``pack_hook(tensor)`` instead of the tensor, and give ``unpack_hook(packed)`` back when backward
        needs it (torch's ``grad_fn._raw_saved_<name>.register_hooks``; one pair per saved tensor)."""
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("register_hooks(): incompatible function arguments. The following argument types are "
                            "supported:\n    1. (self: SavedTensor, arg0: Callable, arg1: Callable) -> None")
        t = self.tensor
        if t is None:
            raise RuntimeError(FREED_MESSAGE)
        if t.__class__ is Packed:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have already been set. Hint: "
                               "only one pair of hooks is allowed at a time.")
        prev, _grad_tls.enabled = _grad_tls.enabled, False     # torch packs under no_grad
        try:
            self.tensor = Packed(pack_hook(t), unpack_hook)
        finally:
            _grad_tls.enabled = prev

    def unpack(self, owner):
        t = self.tensor
        if t is None:
            raise RuntimeError(FREED_MESSAGE)
        if t.__class__ is Packed:
            # through hooks: no version check (the hooks own the data), as torch's SavedVariable
            t = t.unpack()
            if self.is_output and _grad_tls.enabled:
                node = self.node_ref() if self.node_ref is not None else None
                if node is not None:
                    r = make_alias(t._a, t)
                    r._am = AutogradMeta(True, node, self.output_nr)
                    r._ks = r._device._grad_ks
                    return r
            return t
        vc = t._vc
        if (vc[0] if vc is not None else 0) != self.version:
            _raise_modified(t, self, owner)
        if self.is_output:
            if _grad_tls.enabled:
                # create_graph: the saved output must be differentiable through its own node again.
                node = self.node_ref() if self.node_ref is not None else None
                if node is not None:
                    r = make_alias(t._a, t)
                    if self.view_geom is not None:
                        from .inplace_views import view_of_node_output
                        node = view_of_node_output(node, self.view_geom)
                    r._am = AutogradMeta(True, node, self.output_nr)
                    r._ks = r._device._grad_ks
                    return r
        return t


def short_name(fn) -> str:
    """How torch's messages name a node: ``ExpBackward0`` -> ``Exp``."""
    return re.sub(r"Backward\d*$", "", fn.name())


def _raise_modified(t, saved, owner):
    shape = list(t._a.shape)
    tname = _TYPE_NAMES.get(t.dtype.name, "Tensor")
    if saved.is_output:
        where = f", which is output {saved.output_nr} of {short_name(owner)},"
    else:   # torch names the history the tensor has now
        am = t._am
        fn = am.grad_fn if am is not None else None
        where = f", which is output {am.output_nr} of {short_name(fn)}," if fn is not None else ""
    if is_anomaly_enabled():
        hint = ("Hint: the backtrace further above shows the operation that failed to compute its gradient. The "
                "variable in question was changed in there or anywhere later. Good luck!")
    else:
        hint = ("Hint: enable anomaly detection to find the operation that failed to compute its gradient, with "
                "npusim.autograd.set_detect_anomaly(True, check_nan=False).")
    raise RuntimeError(
        f"one of the variables needed for gradient computation has been modified by an inplace operation: "
        f"[npusim.{tname} {shape}]{where} is at version {t._version}; expected version {saved.version} "
        f"instead. {hint}")


class Node:
    """Base of every backward node (``grad_fn``).

    Hook containers are class-level ``None`` until a hook is added, so that making
    a node costs two attribute writes.
    """

    __slots__ = ("_next", "_saved", "_seq", "__weakref__", "__dict__")
    _pre_hooks = None
    _hooks = None
    _tensor_pre_hooks = None
    _retains = None
    _released = False

    def __init__(self):
        self._next = ()
        self._saved = None
        self._seq = next_sequence_nr()

    # --- the interface torch exposes --------------------------------------------------------
    @property
    def next_functions(self):
        return tuple(self._next)

    @property
    def metadata(self) -> dict:
        d = self.__dict__.get("_metadata")
        if d is None:
            d = self.__dict__["_metadata"] = {}
        return d

    def name(self) -> str:
        return type(self).__name__

    def _sequence_nr(self) -> int:
        return self._seq

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` after this node runs; may return new grad_inputs."""
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(fn)
        return RemovableHandle(self._hooks, fn)

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` before this node runs; may return new grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = []
        self._pre_hooks.append(fn)
        return RemovableHandle(self._pre_hooks, fn)

    def __call__(self, *grads):
        return self.apply(grads)

    # --- what subclasses implement -------------------------------------------------------------
    def apply(self, grads):
        raise NotImplementedError

    def release(self) -> None:
        """Free saved tensors (after a backward without retain_graph)."""
        self._released = True
        saved = self._saved
        if saved:
            for s in saved.values():
                if s.__class__ is SavedTensor:
                    s.release()
                elif isinstance(s, list):
                    for x in s:
                        if x.__class__ is SavedTensor:
                            x.release()

    def __repr__(self):
        return f"<{type(self).__name__} object at {hex(id(self))}>"


class AccumulateGrad(Node):
    """The node of a leaf tensor: adds incoming gradients into ``leaf.grad``."""

    __slots__ = ("_variable",)

    def __init__(self, leaf):
        self._next = ()
        self._saved = None
        self._variable = weakref.ref(leaf)
        # leaves rank above every op node (torch gives them the largest sequence number)
        self._seq = (1 << 62) + next_sequence_nr()

    @property
    def variable(self):
        return self._variable()

    def apply(self, grads):
        return ()


def grad_accumulator(leaf) -> AccumulateGrad:
    am = leaf._am
    acc = am.grad_accumulator
    if acc is None:
        # kept by the leaf (the accumulator refers back to it weakly, so there is no cycle):
        # every graph built on this leaf shares one, made once
        acc = am.grad_accumulator = AccumulateGrad(leaf)
    return acc


def edge_of(t):
    """The (node, input_nr) edge a tensor contributes to the graph, or (None, 0)."""
    am = t._am
    if am is None or not am.requires_grad:
        return (None, 0)
    fn = am.grad_fn
    if fn is not None:
        return (fn, am.output_nr)
    acc = am.grad_accumulator
    return (acc if acc is not None else grad_accumulator(t), 0)


class RemovableHandle:
    """What ``register_hook`` returns: ``remove()`` takes the hook out again."""

    _ids = itertools.count()

    def __init__(self, container, fn):
        self._container = container
        self._fn = fn
        self.id = next(self._ids)

    def remove(self):
        c = self._container
        for i, f in enumerate(c):
            if f is self._fn:
                del c[i]
                return

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


_RemovableHandle = RemovableHandle
