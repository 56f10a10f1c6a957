"""Derivative formulas, and the Autograd kernels generated from them.

A formula says which tensor arguments are differentiable, what to save, and
how to turn output gradients into input gradients:

    @derivative("mul.Tensor", inputs=("self", "other"), save=("self", "other"))
    def mul_backward(ctx, grad):
        return (grad * ctx.other if ctx.needs_input_grad[0] else None,
                grad * ctx.self if ctx.needs_input_grad[1] else None)

Each formula becomes a Node subclass named like torch's (``MulBackward0``) and an
Autograd kernel (registered on the ``Autograd`` alias key through the Library
API) that runs the op below autograd and, when grad mode is on and an input
needs a gradient, records the node. Backward formulas are written with
dispatched ops, so ``create_graph=True`` differentiates them again.

In-place ops check torch's rules (no in-place change of a leaf that requires
grad, or of a view of one); on a view they rewrite the base's history
(``inplace_views.rebase_history``). Outputs of view ops get a
``ViewAutogradMeta`` so that they notice later in-place changes of their base.
"""
from __future__ import annotations

import weakref
from operator import itemgetter

from ..c10.dispatch_keys import BELOW_AUTOGRAD, DispatchKey
from ..dispatch.dispatcher import BELOW_UNWRAPPED, _resolve, all_ops, fallthrough_kernel, resolve_unwrapped
from ..dispatch.library import Library
from ..dispatch.ops_namespace import aten
from ..dispatch import record_function as _record_function
from ..c10.dtype import COMPLEX_DTYPES as _COMPLEX_DTYPES
from ..c10.dtype import FROM_NUMPY as _FROM_NP
from ..tensor import Size, Tensor
from . import grad_mode
from . import forward_mode as _fw
from .inplace_views import check_view_rebase, move_retains, rebase_history
from .meta import DEFAULT, MULTI_OUTPUT_NODE, NO_GRAD_MODE, AutogradMeta, ViewAutogradMeta
from .node import Node, SavedTensor, edge_of, grad_accumulator, unpacking_once
from .node import next_sequence_nr as _next_sequence_nr
from .saved_tensor_hooks import tls as _saved_hooks

_lib = Library("aten", "IMPL")
_gm = grad_mode.tls
_FORMULAS: dict = {}
_name_counts: dict = {}
_NO_EDGE = (None, 0)
_new_object = object.__new__
_and = int.__and__   # keyset & mask as a plain int (DispatchKeySet's own & builds a new set object)
_BELOW = BELOW_AUTOGRAD
_FW_ON = _fw.ON   # [True] while a forward-AD level is open: the Autograd kernels then propagate tangents


class TensorMeta:
    """What a formula may need of a tensor without keeping its values: shape, dtype, device."""

    __slots__ = ("shape", "dtype", "device")

    def __init__(self, t):
        a = t._a
        self.shape = Size(a.shape)
        self.dtype = _FROM_NP[a.dtype]   # what t.shape and t.dtype return, without their property calls
        self.device = t._device

    def dim(self) -> int:
        return len(self.shape)

    def numel(self) -> int:
        return self.shape.numel()


class TensorGeometry(TensorMeta):
    """A TensorMeta plus where the tensor sits in its storage."""

    __slots__ = ("strides", "storage_offset", "storage_numel")

    def __init__(self, t):
        TensorMeta.__init__(self, t)
        self.strides = t.stride()
        self.storage_offset = t.storage_offset()
        self.storage_numel = t.untyped_storage().nbytes() // t.element_size()


_VALUE, _META, _GEOMETRY = 0, 1, 2


def _save_shape(v, kind):
    """What an ``x_meta`` / ``x_geometry`` save keeps of ``v`` (a tensor, or a list of tensors)."""
    cls = TensorMeta if kind == _META else TensorGeometry
    if isinstance(v, Tensor):
        return cls(v)
    if isinstance(v, (list, tuple)):
        return [cls(t) if isinstance(t, Tensor) else None for t in v]
    return None


def _saved_arg(name):
    for suffix in ("_meta", "_geometry"):
        if name.endswith(suffix):
            return name[:-len(suffix)]
    return name


class FormulaNode(Node):
    """A node whose backward is a registered formula; saved values read as attributes."""

    __slots__ = ("_needs", "_layout")
    _formula = None
    _op_name = ""
    _packed = False     # saved through saved_tensors_hooks

    def apply(self, grads):
        if self._packed:
            return unpacking_once(self._saved, lambda: self._apply(grads))
        return self._apply(grads)

    def _apply(self, grads):
        r = type(self)._formula(self, *grads)
        r = r if r.__class__ is tuple else (r,)
        layout = self._layout
        if layout is None:
            return r
        # tensor-list inputs (cat's tensors): one gradient list per input, one edge per tensor
        flat = []
        for g, n in zip(r, layout):
            if n is None:
                flat.append(g)
            else:
                flat.extend(g if g is not None else (None,) * n)
        return tuple(flat)

    @property
    def needs_input_grad(self):
        return self._needs

    def __getattr__(self, name):
        saved = object.__getattribute__(self, "_saved")
        if saved is not None and name.startswith("_saved_") and name[7:] in saved:
            return _unpacked(self, saved[name[7:]])          # torch's grad_fn._saved_<name>
        if saved is not None and name.startswith("_raw_saved_") and _is_saved_tensor(saved.get(name[11:])):
            return saved[name[11:]]                         # torch's grad_fn._raw_saved_<name>: the SavedTensor
        if saved is None or name not in saved:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        return _unpacked(self, saved[name])


def _is_saved_tensor(v) -> bool:
    return v.__class__ is SavedTensor or (v.__class__ is list and all(s.__class__ is SavedTensor for s in v))


def _unpacked(node, v):
    if v.__class__ is SavedTensor:
        return v.unpack(node)
    if v.__class__ is list:
        return [s.unpack(node) if s.__class__ is SavedTensor else s for s in v]
    return v


def _saved_property(name):
    """``ctx.<name>`` for a value the formula saves: a property, cheaper than a failed lookup and __getattr__."""
    def get(self):
        saved = self._saved
        if saved is None or name not in saved:
            return self.__getattr__(name)   # raises torch's AttributeError
        v = saved[name]
        # _unpacked inline: one frame less per saved value a formula reads
        if v.__class__ is SavedTensor:
            return v.unpack(self)
        if v.__class__ is list:
            return [s.unpack(self) if s.__class__ is SavedTensor else s for s in v]
        return v
    return property(get)


_names_by_overload: dict = {}


def _node_class(op_name: str, formula, class_name=None, overload_name="", saved_names=()):
    if class_name is not None and class_name[-1].isdigit():
        name = class_name
    else:
        base = class_name or "".join(part.capitalize() for part in op_name.rstrip("_").split("_")) + "Backward"
        # an in-place overload is named like its functional twin (exp_ records ExpBackward0, as exp does)
        key = (base, op_name.rstrip("_"), overload_name)
        name = _names_by_overload.get(key)
        if name is None:
            n = _name_counts.get(base, 0)
            _name_counts[base] = n + 1
            name = _names_by_overload[key] = f"{base}{n}"
    ns = {"__slots__": (), "_formula": staticmethod(formula), "_op_name": op_name}
    for n in saved_names:
        if not hasattr(FormulaNode, n):   # a Node attribute (name, apply...) keeps its meaning
            ns[n] = _saved_property(n)
    return type(name, (FormulaNode,), ns)


# Ops whose formulas follow torch's convention for complex inputs (formulas_complex.py lists them): recording any
# other op on complex tensors raises, rather than give a gradient that is silently wrong. Only ops whose kernels
# take complex tensors (the native layer's list, set_complex_forward_ops) can meet them: the others refuse
# complex arguments before anything is recorded, so only the difference is checked, and other ops pay nothing.
_COMPLEX_READY: set = set()
_COMPLEX_FORWARD: frozenset = frozenset()
_COMPLEX_UNREADY: frozenset = frozenset()
_COMPLEX_NP = frozenset(d.np for d in _COMPLEX_DTYPES)   # membership: no costly dtype ==


def complex_ready(*packets) -> None:
    """Declare the formulas of these ops (overload packet names) right for complex tensors."""
    global _COMPLEX_UNREADY
    _COMPLEX_READY.update(packets)
    _COMPLEX_UNREADY = _COMPLEX_FORWARD - _COMPLEX_READY


def set_complex_forward_ops(packets) -> None:
    """The ops whose kernels take complex tensors; those without a complex-ready formula refuse to record them."""
    global _COMPLEX_FORWARD, _COMPLEX_UNREADY
    _COMPLEX_FORWARD = frozenset(packets)
    _COMPLEX_UNREADY = _COMPLEX_FORWARD - _COMPLEX_READY


def _is_complex(t) -> bool:
    dt = t._a.dtype
    return dt in _COMPLEX_NP


def _complex_among(values, args) -> bool:
    """Whether a differentiable input is a complex tensor, or a Python complex number is among the arguments."""
    for v in values:
        if v.__class__ is Tensor or isinstance(v, Tensor):
            if v._a.dtype in _COMPLEX_NP:
                return True
        elif isinstance(v, (list, tuple)):
            for t in v:
                if isinstance(t, Tensor) and t._a.dtype in _COMPLEX_NP:
                    return True
    for a in args:
        if a.__class__ is complex:
            return True
    return False


def _refuse_complex_derivative(packet):
    raise NotImplementedError(f"npusim has no derivative of '{packet}' for complex tensors yet (docs/complex.md)")


def _flat_edges(values):
    """Edges and needs_input_grad flags of the differentiable inputs (lists give one edge per tensor)."""
    edges, needs = [], []
    for v in values:
        if v.__class__ is Tensor:
            am = v._am
            if am is None or not am.requires_grad:
                edges.append(_NO_EDGE)
                needs.append(False)
            else:
                fn = am.grad_fn
                if fn is not None:
                    edges.append((fn, am.output_nr))
                else:
                    acc = am.grad_accumulator
                    edges.append((acc if acc is not None else grad_accumulator(v), 0))
                needs.append(True)
        elif isinstance(v, (list, tuple)):
            sub_needs = []
            for t in v:
                if isinstance(t, Tensor):
                    e = edge_of(t)
                    edges.append(e)
                    sub_needs.append(e[0] is not None)
                else:
                    edges.append((None, 0))
                    sub_needs.append(False)
            needs.append(tuple(sub_needs))
        elif isinstance(v, Tensor):
            e = edge_of(v)
            edges.append(e)
            needs.append(e[0] is not None)
        else:
            edges.append((None, 0))
            needs.append(False)
    return edges, needs


def _any_needs(needs):
    for n in needs:
        if n is True or (n.__class__ is tuple and any(n)):
            return True
    return False


def _attach(out, node, nondiff, view_kind=0):
    """Give each differentiable output its grad_fn (views get a ViewAutogradMeta); returns the outputs."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    for i, t in enumerate(outs):
        if i in nondiff or t.__class__ is not Tensor and not isinstance(t, Tensor) or not (
                t.is_floating_point() or t.is_complex()):
            continue
        am = t._am
        base = t._base
        if view_kind and base is not None:
            t._am = ViewAutogradMeta(t, base, True, node, i, MULTI_OUTPUT_NODE if view_kind == 2 else DEFAULT)
        elif am is None:
            t._am = AutogradMeta(True, node, i)
        else:
            old = am.grad_fn
            am.requires_grad = True
            am.grad_fn = node
            am.output_nr = i
            if am.retains_grad and old is not None:
                move_retains(weakref.ref(t), old, node, i)
        t._ks = t._device._grad_ks
    return outs


def _mark_no_grad_views(out):
    """Views made with grad mode off of a tensor that requires grad (torch's NO_GRAD_MODE views).

    As in torch they report requires_grad (their base does) with no grad_fn, and in-place changes
    to them with grad mode on are refused.
    """
    outs = out if isinstance(out, (tuple, list)) else (out,)
    for t in outs:
        if isinstance(t, Tensor) and t._base is not None and t._am is None and (t.is_floating_point()
                                                                                or t.is_complex()):
            t._am = ViewAutogradMeta(t, t._base, True, None, 0, NO_GRAD_MODE)
            t._ks = t._device._grad_ks


def check_inplace(self_t):
    """torch's check_inplace: in-place ops on leaves (and views of leaves) that require grad are refused."""
    am = self_t._am
    if am is None:
        return
    if am.__class__ is ViewAutogradMeta:
        check_view_rebase(am, indirect=False)
    if not am.requires_grad:
        return
    base = self_t._base
    if base is not None:
        bam = base._am
        if bam is None or bam.grad_fn is None:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
    if am.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")


def record_inplace(self_t, node, edges, needs):
    """Make ``node`` (an in-place op's backward) the new history of ``self_t`` (or of its base, for a view)."""
    node._next = tuple(edges)
    node._needs = tuple(needs)
    if self_t._base is not None:
        return rebase_history(self_t, node, edges)
    _attach(self_t, node, frozenset())
    return node


def _out_error(name):
    return RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, but "
                        f"one of the arguments requires grad.")


def derivative(*overloads, inputs=("self",), save=(), save_result=False, nondiff_outputs=(), name=None):
    """Register a backward formula for ``overloads`` (see the module docstring)."""
    def register(fn):
        for ov in overloads:
            _register(ov, fn, inputs, save, save_result, frozenset(nondiff_outputs), name)
        return fn
    return register


_KWARG = 1 << 30   # "position" of a keyword-only argument: never inside args


def _register(overload, formula, inputs, save, save_result, nondiff, class_name):
    packet, _, ov = overload.partition(".")
    op = getattr(getattr(aten, packet), ov or "default")
    schema = op._schema
    position = {a.name: (_KWARG if a.kwarg_only else i) for i, a in enumerate(schema.arguments)}
    defaults = {a.name: a.default for a in schema.arguments if a.has_default}
    # a name the overload lacks (norm.Scalar's dim) reads as None, so one formula serves several overloads
    input_specs = tuple((position.get(n, _KWARG), n, defaults.get(n)) for n in inputs)
    # "x_meta" saves only x's shape, dtype and device, "x_geometry" also its strides and storage offset
    # (torch saves sizes where it needs no values)
    save_specs = tuple((position.get(_saved_arg(n), _KWARG), n, defaults.get(_saved_arg(n)),
                        _META if n.endswith("_meta") else _GEOMETRY if n.endswith("_geometry") else _VALUE)
                       for n in save)
    node_cls = _node_class(packet, formula, class_name, ov,
                           tuple(save) + (("result",) if save_result else ()) + ("self_sizes",))
    inplace = schema.is_inplace
    if inplace and inputs[0] != "self":
        raise ValueError(f"{overload}: the first differentiable input of an in-place op must be self")
    ret = schema.returns[0].type if schema.returns else None
    view_kind = 0
    if ret is not None and ret.alias is not None and not ret.is_write:
        view_kind = 2 if ret.is_list else 1
    arg_by_name = {a.name: a for a in schema.arguments}
    layout_needed = any(n in arg_by_name and arg_by_name[n].type.is_list for n in inputs)
    # differentiable inputs that are all positional are read with one C call when the call passes them all
    positions = tuple(i for i, _, _ in input_specs)
    pick = itemgetter(*positions) if positions and _KWARG not in positions else None
    pick_one = len(positions) == 1
    n_needed = max(positions) + 1 if pick is not None else 0

    below = _BELOW
    fw_spec = _fw.OpSpec(overload, op, input_specs, inplace, view_kind, nondiff)

    def make_kernel(memo, resolve):
        """The Autograd kernel taking the kernels below from ``memo`` (resolved by ``resolve`` when missing)."""
        def kernel(ks, *args, **kwargs):
            if _FW_ON[0]:
                return _fw.forward_call(fw_spec, autograd_kernel, ks, args, kwargs)
            if not _gm.enabled:
                # the common case inside backward: nothing to record, straight to the kernel below
                key = _and(ks, below)
                fn = memo.get(key)
                if fn is None:
                    fn = resolve(op, key)
                out = fn(*args, **kwargs)
                if view_kind:
                    _mark_no_grad_views(out)
                return out
            n_args = len(args)
            if pick is not None and n_args >= n_needed:
                values = (pick(args),) if pick_one else pick(args)
            else:
                values = [args[i] if i < n_args else kwargs.get(n, d) for i, n, d in input_specs]
            edges, needs = _flat_edges(values)
            if True not in needs and not _any_needs(needs):
                fn = memo.get(_and(ks, below))
                if fn is None:
                    fn = resolve(op, _and(ks, below))
                return fn(*args, **kwargs)
            if packet in _COMPLEX_UNREADY and _complex_among(values, args):
                _refuse_complex_derivative(packet)
            self_t = args[0] if inplace else None
            if inplace:
                check_inplace(self_t)
            saved = {}
            for i, n, d, kind in save_specs:
                v = args[i] if i < n_args else kwargs.get(n, d)
                if kind:
                    # a tensor's shape (sum's self_meta), the common case, without _save_shape's frame
                    saved[n] = TensorMeta(v) if kind == _META and v.__class__ is Tensor else _save_shape(v, kind)
                elif v.__class__ is Tensor or isinstance(v, Tensor):
                    if v is self_t:
                        v = aten.clone.default(v)   # the op is about to overwrite it
                    saved[n] = SavedTensor(v)
                elif isinstance(v, (list, tuple)) and any(isinstance(t, Tensor) for t in v):
                    saved[n] = [SavedTensor(t) if isinstance(t, Tensor) else t for t in v]
                else:
                    saved[n] = v
            if inplace:
                # the formula sees self's shape before the op, as torch's formulas do
                saved.setdefault("self_sizes", tuple(self_t._a.shape))
            fn = memo.get(_and(ks, below))
            if fn is None:
                fn = resolve(op, _and(ks, below))
            out = fn(*args, **kwargs)
            node = _new_object(node_cls)    # Node.__init__'s work inline: one frame less per recorded op
            node._next = ()
            node._seq = _next_sequence_nr()
            if _record_function.ACTIVE:
                _record_function.adopt_sequence_nr(node, op)   # the seq_nr this op's callbacks were told
            node._saved = saved
            if _saved_hooks.stack:
                node._packed = True
            node._layout = tuple(len(v) if isinstance(v, (list, tuple)) else None for v in values) \
                if layout_needed else None
            if inplace:
                owner = record_inplace(self_t, node, edges, needs)
                if save_result:
                    if owner is node:
                        saved["result"] = SavedTensor(self_t, is_output=True, node=node, output_nr=0)
                    else:   # a view changed in place: the result is read back out of the base's new history
                        geom = (owner._base_geom, owner._view_geom)
                        saved["result"] = SavedTensor(self_t, is_output=True, node=owner, view_geom=geom)
                return out
            if out is self_t or (n_args and out is args[0]):
                return out   # the op handed its input back (contiguous() of a contiguous tensor): nothing to record
            if packet in _COMPLEX_UNREADY and out.__class__ is Tensor and _is_complex(out):
                _refuse_complex_derivative(packet)   # real inputs, complex result
            node._next = tuple(edges)
            node._needs = tuple(needs)
            if out.__class__ is Tensor and not view_kind:
                # one plain output, the common case
                outs = (out,)
                if out._a.dtype.kind == "f" or out.is_floating_point() or out.is_complex():
                    am = out._am
                    if am is None:
                        out._am = AutogradMeta(True, node, 0)
                        out._ks = out._device._grad_ks
                    else:
                        _attach(out, node, nondiff)
            else:
                outs = _attach(out, node, nondiff, view_kind)
            if save_result:
                if len(outs) == 1 and not isinstance(out, (tuple, list)):
                    saved["result"] = SavedTensor(outs[0], is_output=True, node=node, output_nr=0)
                else:
                    saved["result"] = [SavedTensor(t, is_output=True, node=node, output_nr=i)
                                       for i, t in enumerate(outs)]
            return out
        return kernel

    autograd_kernel = make_kernel(op._memo, _resolve)
    # served where the generated dispatch function found no argument the dtype guard would look at: the kernels
    # below without the guard's wrapper (dispatcher.BELOW_UNWRAPPED); forward AD goes through the plain one
    setattr(autograd_kernel, BELOW_UNWRAPPED, make_kernel(op._unwrapped, resolve_unwrapped))

    _lib.impl(overload, autograd_kernel, "Autograd", with_keyset=True)
    _FORMULAS[overload] = (formula, node_cls)


def registered(overload: str) -> bool:
    return overload in _FORMULAS


def node_class(overload: str):
    """The Node subclass recorded for ``overload`` (None without a formula)."""
    entry = _FORMULAS.get(overload)
    return entry[1] if entry is not None else None


# --- the Autograd fallback: ops without a formula ---------------------------------------------------------

NONDIFFERENTIABLE = {
    "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and",
    "bitwise_or", "bitwise_xor", "bitwise_not", "logical_and_", "logical_or_", "logical_xor_", "logical_not_",
    "bitwise_and_", "bitwise_or_", "bitwise_xor_", "bitwise_not_", "isnan", "isinf", "isfinite", "argmax",
    "argmin", "argsort", "nonzero", "where", "all", "any", "rand_like", "randn_like", "randint_like", "zeros_like",
    "ones_like", "empty_like", "full_like", "multinomial", "randperm", "_local_scalar_dense", "detach",
    "native_dropout", "resize_", "empty", "zeros", "ones", "full", "arange", "linspace", "eye", "scalar_tensor",
    "empty_strided", "rand", "randn", "randint",
}


# out= overloads of ops listed above whose values do carry gradients (where's self and other)
_DIFFERENTIABLE_OUTS = {"self_out"}


class NotImplementedNode(Node):
    """Recorded for ops that have no derivative formula: backward through them is an error."""

    __slots__ = ("_op", "_needs")

    def apply(self, grads):
        raise RuntimeError(f"derivative for {self._op} is not implemented")

    def name(self) -> str:
        return "npusim::autograd::NotImplemented"


NotImplementedNode.__name__ = NotImplementedNode.__qualname__ = "NotImplemented"


def _autograd_fallback(ks, op, *args, **kwargs):
    schema = op._schema
    if _FW_ON[0]:
        _fw.check_fallback(op, args, kwargs, schema.name in NONDIFFERENTIABLE)
    if schema.name == "resize_" and args and args[0].requires_grad:
        raise RuntimeError("cannot resize variables that require grad")   # torch refuses it in every grad mode
    if not _gm.enabled or schema.name in NONDIFFERENTIABLE and schema.overload_name not in _DIFFERENTIABLE_OUTS:
        return op.redispatch(_and(ks, _BELOW), *args, **kwargs)
    flat = []
    for v in list(args) + list(kwargs.values()):
        if isinstance(v, Tensor):
            flat.append(v)
        elif isinstance(v, (list, tuple)):
            flat.extend(t for t in v if isinstance(t, Tensor))
    if not any(t._am is not None and t._am.requires_grad for t in flat):
        return op.redispatch(_and(ks, _BELOW), *args, **kwargs)
    if schema.is_out:
        raise _out_error(schema.name)
    inplace = schema.is_inplace
    if inplace:
        check_inplace(args[0])
    out = op.redispatch(_and(ks, _BELOW), *args, **kwargs)
    node = NotImplementedNode()
    node._op = f"{op._ns}::{schema.name}"
    if inplace:   # self's edge first: the history rewrite (CopySlices for a view) expects it there
        edges = [edge_of(t) for t in [args[0]] + [t for t in flat if t is not args[0]]]
        record_inplace(args[0], node, edges, [e[0] is not None for e in edges])
        return out
    edges = [edge_of(t) for t in flat]
    node._next = tuple(edges)
    node._needs = tuple(e[0] is not None for e in edges)
    _attach(out, node, frozenset())
    return out


# Ops that never have a gradient skip the Autograd key entirely (in-place ones still go through the
# fallback, which refuses them on leaves that require grad, as torch does).
def register_nondifferentiable() -> None:
    """Called once the formulas are registered: overloads with neither a formula nor a gradient fall through."""
    lib = Library("aten", "IMPL")
    for op in all_ops():
        schema = op._schema
        name = op.name_.split("::", 1)[1]
        if op._ns == "aten" and schema.name in NONDIFFERENTIABLE and not schema.is_inplace and \
                schema.overload_name not in _DIFFERENTIABLE_OUTS and name not in _FORMULAS and \
                not op._kernels.get(DispatchKey.Autograd):
            lib.impl(name, fallthrough_kernel, "Autograd")
    _libs.append(lib)


_libs = []
_fallbacks = Library("_", "IMPL")
for _key in (DispatchKey.AutogradCPU, DispatchKey.AutogradCUDA, DispatchKey.AutogradMeta,
             DispatchKey.AutogradPrivateUse1, DispatchKey.AutogradOther):
    _fallbacks.fallback(_autograd_fallback, _key.name, with_keyset=True)
