"""Graph nodes: the ``grad_fn`` of tensors and ``AccumulateGrad`` for leaves.

A node knows the edges to the nodes of its inputs (``next_functions``), the
tensors it saved for backward (with the version each had, to catch in-place
changes), hooks, and a sequence number that orders backward and links a
forward op to its backward op in profiles.
"""
from __future__ import annotations

import itertools
import threading
import weakref

from .meta import AutogradMeta

_seq = itertools.count()
_seq_lock = threading.Lock()


def next_sequence_nr() -> int:
    with _seq_lock:
        return next(_seq)


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved."""

    __slots__ = ("tensor", "version", "is_output", "output_nr", "node_ref")

    def __init__(self, t, is_output=False, node=None):
        if is_output:
            # An output must not keep its own grad_fn alive (a reference cycle): keep a detached alias.
            from ..tensor import make_alias
            alias = make_alias(t._a, t)
            alias._vc = t._vc if t._vc is not None else _ensure_vc(t)
            self.tensor = alias
            self.output_nr = t._am.output_nr if t._am is not None else 0
            self.node_ref = weakref.ref(node) if node is not None else None
        else:
            self.tensor = t
            self.output_nr = 0
            self.node_ref = None
        self.is_output = is_output
        self.version = t._version

    def unpack(self, owner):
        t = self.tensor
        if t is None:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved tensors after they "
                "have already been freed). Saved intermediate values of the graph are freed when you call "
                ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
                "graph a second time or if you need to access saved tensors after calling backward.")
        if t._version != self.version:
            shape = list(t._a.shape)
            tname = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
                     "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor"}.get(
                t.dtype.name, "Tensor")
            where = f", which is output {self.output_nr} of {type(owner).__name__}," if self.is_output else ""
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an inplace operation: "
                f"[npusim.{tname} {shape}]{where} is at version {t._version}; expected version {self.version} "
                f"instead. Hint: the backtrace further above shows the operation that failed to compute its "
                f"gradient. The variable in question was changed in there or anywhere later. Good luck!")
        if self.is_output:
            from .grad_mode import tls
            if tls.enabled:
                # create_graph: the saved output must be differentiable through its own node again.
                node = self.node_ref() if self.node_ref is not None else None
                if node is not None:
                    from ..tensor import make_alias
                    r = make_alias(t._a, t)
                    r._vc = t._vc
                    r._am = AutogradMeta(True, node, self.output_nr)
                    r._ks = r._device._grad_ks
                    return r
        return t


def _ensure_vc(t):
    if t._vc is None:
        t._vc = [0]
    return t._vc


class Node:
    """Base of every backward node (``grad_fn``)."""

    __slots__ = ("_next", "_saved", "_pre_hooks", "_hooks", "_seq", "_released", "metadata", "_tensor_pre_hooks",
                 "_retains", "__weakref__", "__dict__")

    def __init__(self):
        self._next = ()
        self._saved = None
        self._pre_hooks = None
        self._hooks = None
        self._tensor_pre_hooks = None
        self._retains = None
        self._seq = next_sequence_nr()
        self._released = False

    # --- the interface torch exposes --------------------------------------------------------
    @property
    def next_functions(self):
        return tuple(self._next)

    def name(self) -> str:
        return type(self).__name__

    def _sequence_nr(self) -> int:
        return self._seq

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` after this node runs; may return new grad_inputs."""
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(fn)
        return _RemovableHandle(self._hooks, fn)

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` before this node runs; may return new grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = []
        self._pre_hooks.append(fn)
        return _RemovableHandle(self._pre_hooks, fn)

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
                if isinstance(s, SavedTensor):
                    s.tensor = None

    def __repr__(self):
        return f"<{type(self).__name__} object at {hex(id(self))}>"


class AccumulateGrad(Node):
    """The node of a leaf tensor: adds incoming gradients into ``leaf.grad``."""

    __slots__ = ("_variable",)

    def __init__(self, leaf):
        super().__init__()
        self._variable = weakref.ref(leaf)
        self._seq = 2 ** 62   # leaves run after everything that feeds them

    @property
    def variable(self):
        return self._variable()

    def apply(self, grads):
        return ()


def grad_accumulator(leaf) -> AccumulateGrad:
    am = leaf._am
    acc = am.grad_accumulator() if am.grad_accumulator is not None else None
    if acc is None:
        acc = AccumulateGrad(leaf)
        # weak: the graph holds the accumulator, the leaf must not keep a stale one alive
        am.grad_accumulator = weakref.ref(acc)
    return acc


def edge_of(t):
    """The (node, input_nr) edge a tensor contributes to the graph, or (None, 0)."""
    am = t._am
    if am is None or not am.requires_grad:
        return (None, 0)
    if am.grad_fn is not None:
        return (am.grad_fn, am.output_nr)
    return (grad_accumulator(t), 0)


class _RemovableHandle:
    _ids = itertools.count()

    def __init__(self, container, fn):
        self._container = container
        self._fn = fn
        self.id = next(self._ids)

    def remove(self):
        if self._fn in self._container:
            self._container.remove(self._fn)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
