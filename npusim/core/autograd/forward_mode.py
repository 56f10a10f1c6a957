"""Forward-mode AD (torch.autograd.forward_ad's engine): tangents per level and their propagation through ops.

A tangent lives on its tensor's autograd metadata (``AutogradMeta.fw_grads``: level -> tangent), as torch's
forward grads do. A tensor with a tangent dispatches through the Autograd key (its key set is the device's
grad key set), where ``derivatives``' kernels hand the call to :func:`forward_call` while a level is open.
``forward_call`` runs the op below forward AD, then gives each differentiable output its tangent:

- a direct forward formula (``forward_formulas_*.py``, torch's derivatives.yaml ``result:`` entries) where
  one is written; views get the same view of the tangent (torch's rule: a view's tangent views the tangent);
- otherwise the JVP of the op's reverse-mode formula: the backward is linear in its incoming gradient ``u``,
  so ``J t = d/du <vjp(u), t>``, one backward and one double backward on stand-ins of the dual inputs.

In-place ops compute the new tangent from the values before the op, then write it into the tangent
of ``self`` in place (views of that tangent see it), or give ``self`` (and its base) a tangent.
Like torch's ``forward_ad``, one level exists at a time (``Nested forward mode AD is not supported``).
"""
from __future__ import annotations

import weakref

from ..dispatch.ops_namespace import aten
from ..tensor import Tensor
from . import grad_mode
from .meta import AutogradMeta

# ON[0]: a level is open and forward grads are enabled; the one check the dispatch path makes
ON = [False]


class _State:
    level = -1          # the open level (-1: none)
    enabled = True      # False while an op runs below forward AD
    duals: list = []    # weak references to the tensors holding a tangent at the open level


_state = _State()
_FORMULAS: dict = {}   # overload -> direct forward formula
NO_DIRECT_FORMULA = object()   # what a direct formula returns for a case it leaves to the generic rule


def _refresh():
    ON[0] = _state.level >= 0 and _state.enabled


def current_level() -> int:
    return _state.level


def enter_level() -> int:
    if _state.level >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _state.level = 0
    _state.duals = []
    _refresh()
    return 0


def exit_level(level: int) -> None:
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    if level != _state.level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    duals, _state.duals = _state.duals, []
    for ref in duals:
        t = ref()
        if t is None:
            continue
        am = t._am
        if am is not None and am.fw_grads is not None:
            am.fw_grads.pop(level, None)
            if not am.fw_grads:
                am.fw_grads = None
                if not am.requires_grad and am.grad_fn is None:
                    t._ks = t._device._ks   # back to the plain key set: nothing left for the Autograd key
    _state.level = level - 1
    _refresh()


class disabled:
    """Run below forward AD (the primal computation of an op, a custom Function's forward, tangent math)."""

    def __enter__(self):
        self.prev = _state.enabled
        _state.enabled = False
        ON[0] = False

    def __exit__(self, *exc):
        _state.enabled = self.prev
        _refresh()


def is_enabled() -> bool:
    return _state.enabled


def set_enabled(mode: bool) -> None:
    _state.enabled = mode
    _refresh()


# --- tangents on tensors ------------------------------------------------------------------------------------------

def own_tangent(t, level):
    am = t._am
    if am is None:
        return None
    fg = am.fw_grads
    return None if fg is None else fg.get(level)


def tangent_of(t, level=None):
    """``t``'s tangent at ``level``; a view without one of its own reads the view of its base's tangent."""
    level = _state.level if level is None else level
    if level < 0:
        return None
    own = own_tangent(t, level)
    if own is not None or t._base is None:
        return own
    base_tangent = own_tangent(t._base, level)
    if base_tangent is None:
        return None
    view = _view_of(base_tangent, t._base, t)
    put_tangent(t, view, level)
    return view


def _view_of(base_tangent, base, view):
    """The view of ``base_tangent`` at ``view``'s place in ``base`` (the tangent has the base's layout)."""
    rel = view.storage_offset() - base.storage_offset()
    with disabled(), grad_mode.no_grad():
        return aten.as_strided.default(base_tangent, list(view.shape), list(view.stride()),
                                       base_tangent.storage_offset() + rel)


def put_tangent(t, tangent, level=None) -> None:
    """Store ``tangent`` as ``t``'s tangent at ``level`` (as is: callers match the layout first)."""
    level = _state.level if level is None else level
    am = t._am
    if am is None:
        am = t._am = AutogradMeta()
    if am.fw_grads is None:
        am.fw_grads = {}
    am.fw_grads[level] = tangent
    t._ks = t._device._grad_ks
    _state.duals.append(weakref.ref(t))


def _same_layout(a, b) -> bool:
    return a._a.shape == b._a.shape and (a.numel() <= 1 or a.stride() == b.stride())


def laid_out_like(tangent, primal):
    """``tangent`` with ``primal``'s shape, dtype and strides (torch copies a tangent whose layout differs)."""
    with disabled():
        if tangent.dtype != primal.dtype and (primal.is_floating_point() or primal.is_complex()):
            tangent = aten._to_copy.default(tangent, dtype=primal.dtype)
        if tuple(tangent.shape) != tuple(primal.shape):
            tangent = aten.expand.default(tangent, list(primal.shape))
        if _same_layout(tangent, primal) and not _is_expanded(tangent):
            return tangent
        out = aten.empty_strided.default(list(primal.shape), list(primal.stride()), dtype=tangent.dtype,
                                         device=tangent.device)
        if tangent.requires_grad:
            out.copy_(tangent)   # recorded: the copy stays differentiable (reverse over forward)
        else:
            with grad_mode.no_grad():
                out.copy_(tangent)
        return out


def _is_expanded(t) -> bool:
    return any(s == 0 and n > 1 for s, n in zip(t.stride(), t.shape))


# --- the forward kernel ------------------------------------------------------------------------------------------

class OpSpec:
    """What the forward path needs of one overload with a derivative formula."""

    __slots__ = ("overload", "op", "inputs", "inplace", "view_kind", "nondiff", "positions", "defaults")

    def __init__(self, overload, op, input_specs, inplace, view_kind, nondiff):
        self.overload = overload
        self.op = op
        self.inputs = input_specs            # (position, name, default) of each differentiable input
        self.inplace = inplace
        self.view_kind = view_kind
        self.nondiff = nondiff
        args = op._schema.arguments
        self.positions = {a.name: (None if a.kwarg_only else i) for i, a in enumerate(args)}
        self.defaults = {a.name: a.default for a in args if a.has_default}

    def value(self, name, args, kwargs):
        i = self.positions.get(name)
        if i is not None and i < len(args):
            return args[i]
        return kwargs.get(name, self.defaults.get(name))


def _input_tangents(spec, args, kwargs, level):
    """{name: tangent or list of tangents} of the differentiable inputs that carry one; None when none does."""
    found = None
    for i, name, d in spec.inputs:
        v = args[i] if i < len(args) else kwargs.get(name, d)
        if isinstance(v, Tensor):
            t = tangent_of(v, level)
            if t is not None:
                found = found or {}
                found[name] = t
        elif isinstance(v, (list, tuple)):
            ts = [tangent_of(x, level) if isinstance(x, Tensor) else None for x in v]
            if any(t is not None for t in ts):
                found = found or {}
                found[name] = ts
    return found


def forward_call(spec, kernel, ks, args, kwargs):
    """The Autograd kernel of ``spec``'s op while a forward level is open (see the module docstring)."""
    level = _state.level
    tangents = _input_tangents(spec, args, kwargs, level)
    if tangents is None:
        with disabled():
            return kernel(ks, *args, **kwargs)
    if spec.inplace:
        new = _generic_tangents(spec, args, kwargs, tangents)[0]
        with disabled():
            out = kernel(ks, *args, **kwargs)
        _write_inplace(args[0], new, level)
        return out
    with disabled():
        out = kernel(ks, *args, **kwargs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    if any(o is a for o in outs for a in args if isinstance(o, Tensor)):
        return out   # the op handed an input back (contiguous of a contiguous tensor): its tangent stands
    formula = _FORMULAS.get(spec.overload)
    r = NO_DIRECT_FORMULA
    if formula is not None:
        with disabled():
            r = formula(_Args(spec, args, kwargs), tangents, out)
    if r is not NO_DIRECT_FORMULA:
        results = list(r) if isinstance(r, (tuple, list)) else [r]
    elif spec.view_kind and len(tangents) == 1 and "self" in tangents:
        results = _view_tangents(spec, args, kwargs, tangents["self"])
    else:
        results = _generic_tangents(spec, args, kwargs, tangents)
    for i, (o, t) in enumerate(zip(outs, results)):
        if t is None or i in spec.nondiff or not isinstance(o, Tensor) or not (o.is_floating_point()
                                                                               or o.is_complex()):
            continue
        put_tangent(o, t if spec.view_kind else laid_out_like(t, o), level)
        _tangent_for_saved_output(o, t, i, level)
    return out


class _Args:
    """An op's arguments by schema name, defaults filled in (what a forward formula reads)."""

    __slots__ = ("_spec", "_args", "_kwargs")

    def __init__(self, spec, args, kwargs):
        self._spec, self._args, self._kwargs = spec, args, kwargs

    def __getattr__(self, name):
        return self._spec.value(name, self._args, self._kwargs)


def _view_tangents(spec, args, kwargs, self_tangent):
    """Views: the same view of the tangent (as_strided is placed relative to the tangent's own storage offset)."""
    targs = (self_tangent,) + tuple(args[1:])
    with disabled():
        if spec.overload == "as_strided":
            base = args[0]
            offset = spec.value("storage_offset", args, kwargs)
            offset = base.storage_offset() if offset is None else offset
            shift = self_tangent.storage_offset() - base.storage_offset()
            r = aten.as_strided.default(self_tangent, list(spec.value("size", args, kwargs)),
                                        list(spec.value("stride", args, kwargs)), offset + shift)
        else:
            r = spec.op(*targs, **kwargs)
    return list(r) if isinstance(r, (tuple, list)) else [r]


def _tangent_for_saved_output(o, tangent, i, level):
    """A formula that saved its result keeps an alias of it: that alias carries the tangent too (forward over
    reverse reads it in the backward pass, as torch's SavedVariable keeps the forward grad)."""
    node = o._am.grad_fn if o._am is not None else None
    saved = getattr(node, "_saved", None)
    if not saved or "result" not in saved:
        return
    s = saved["result"]
    s = s[i] if isinstance(s, list) else s
    alias = getattr(s, "tensor", None)
    if isinstance(alias, Tensor) and alias is not o:
        put_tangent(alias, own_tangent(o, level), level)


def _write_inplace(self_t, new, level):
    """``self_t`` was changed in place: its tangent becomes ``new`` (written into the old tangent if any)."""
    if new is None:
        return
    old = tangent_of(self_t, level)
    if old is None and self_t._base is not None:
        base = self_t._base
        if own_tangent(base, level) is None:
            with disabled():
                zeros = aten.empty_strided.default(list(base.shape), list(base.stride()), dtype=base.dtype,
                                                   device=base.device)
                zeros.zero_()
            put_tangent(base, zeros, level)
        old = tangent_of(self_t, level)
    with disabled():
        if old is None:
            put_tangent(self_t, laid_out_like(new, self_t), level)
        elif new.requires_grad or old.requires_grad:
            old.copy_(new)
        else:
            with grad_mode.no_grad():
                old.copy_(new)


# --- the generic rule: the JVP of the reverse-mode formula ------------------------------------------------------

def _generic_tangents(spec, args, kwargs, tangents):
    """One tangent per output: ``J t`` from the op's backward, differentiated with respect to its gradient."""
    from .api import grad
    args, kwargs = list(args), dict(kwargs)
    create = grad_mode.is_grad_enabled() and _any_requires_grad(args, kwargs, tangents)
    stand_ins, used = [], []
    with disabled(), grad_mode.enable_grad():
        for i, name, d in spec.inputs:
            t = tangents.get(name)
            if t is None:
                continue
            if i < len(args):
                v = args[i]
            else:
                v = kwargs.get(name, d)
            if isinstance(v, Tensor):
                s = _stand_in(v, create)
                stand_ins.append(s)
                used.append(t)
                v = s
            else:
                v = list(v)
                for k, (x, tk) in enumerate(zip(v, t)):
                    if tk is not None:
                        s = _stand_in(x, create)
                        stand_ins.append(s)
                        used.append(tk)
                        v[k] = s
            if i < len(args):
                args[i] = v
            else:
                kwargs[name] = v
        if spec.inplace:
            args[0] = aten.clone.default(args[0])
        out = spec.op(*args, **kwargs)
        if spec.inplace:
            out = args[0]
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        diff = [(k, o) for k, o in enumerate(outs) if isinstance(o, Tensor) and o.requires_grad
                and k not in spec.nondiff]
        results = [None] * len(outs)
        if not diff:
            return results
        us = [aten.zeros_like.default(o).requires_grad_(True) for _, o in diff]
        back = grad([o for _, o in diff], stand_ins, us, create_graph=True, allow_unused=True)
        pairs = [(b, _cast(t, b)) for b, t in zip(back, used) if b is not None and b.requires_grad]
        if not pairs:
            return [aten.zeros_like.default(o) if o is not None and k in dict(diff) else None
                    for k, o in enumerate(outs)]
        jt = grad([b for b, _ in pairs], us, [t for _, t in pairs], create_graph=create, allow_unused=True)
        for (k, o), r in zip(diff, jt):
            r = aten.zeros_like.default(o) if r is None else r
            results[k] = r if create else r.detach()
    return results


def _cast(t, like):
    return t if t.dtype == like.dtype else aten._to_copy.default(t, dtype=like.dtype)


def _stand_in(x, create):
    if create and x.requires_grad:
        return aten.alias.default(x)   # stays connected to x's graph: the tangent depends on x there
    return x.detach().requires_grad_(True)


def _any_requires_grad(args, kwargs, tangents):
    for v in list(tangents.values()) + list(args) + list(kwargs.values()):
        for t in (v if isinstance(v, (list, tuple)) else (v,)):
            if isinstance(t, Tensor) and t.requires_grad:
                return True
    return False


def forward_formula(*overloads):
    """Register a direct forward formula ``f(a, tangents, out)`` (``a.<argument name>``; ``tangents`` maps the
    differentiable inputs that carry a tangent to it) for ``overloads``."""
    def register(fn):
        for ov in overloads:
            _FORMULAS[ov] = fn
        return fn
    return register


def has_formula(overload: str) -> bool:
    return overload in _FORMULAS


def any_tangent(values, level=None) -> bool:
    level = _state.level if level is None else level
    for v in values:
        if isinstance(v, Tensor) and tangent_of(v, level) is not None:
            return True
    return False


def unsupported(op_name: str):
    """torch's error for an op that has no forward derivative."""
    return NotImplementedError(f"Trying to use forward AD with {op_name} that does not support it.")


def may_require_grad(t) -> bool:
    """torch's _may_require_fw_or_bw_grad: ``t`` requires grad or carries a tangent (composites that compute
    extra results only for differentiation, such as svdvals' singular vectors, ask this)."""
    return t.requires_grad or (ON[0] and tangent_of(t) is not None)


def check_fallback(op, args, kwargs, nondifferentiable):
    """An op with no derivative formula refuses dual inputs (torch's message); one with no gradient drops them."""
    if nondifferentiable:
        return
    flat = []
    for v in list(args) + list(kwargs.values()):
        flat.extend(v if isinstance(v, (list, tuple)) else (v,))
    if any_tangent(flat):
        raise unsupported(op.name_)


# --- custom Functions --------------------------------------------------------------------------------------------

def custom_function_jvp(cls, ctx, args, out):
    """Give the outputs of ``cls.apply(*args)`` the tangents of ``cls.jvp(ctx, *input tangents)`` (torch's rule:
    tensors without a tangent pass zeros, other arguments None)."""
    from .function import Function
    if cls.jvp is Function.jvp:
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it "
                                  "with forward mode AD.")
    level = _state.level
    in_tangents = []
    with disabled():
        for a in args:
            if isinstance(a, Tensor):
                t = tangent_of(a, level)
                in_tangents.append(aten.zeros_like.default(a) if t is None else t)
            else:
                in_tangents.append(None)
        # inside jvp, ctx.saved_tensors reads what save_for_forward kept (torch's rule)
        from .node import SavedTensor
        saved = getattr(ctx, "_saved_for_forward", None) or ()
        backward_saved = ctx._saved_list
        ctx._saved_list = [SavedTensor(t) if isinstance(t, Tensor) else None for t in saved]
        try:
            r = cls.jvp(ctx, *in_tangents)
        finally:
            ctx._saved_list = backward_saved
    is_tuple = isinstance(out, tuple)
    outs = out if is_tuple else (out,)
    rs = r if isinstance(r, tuple) else (r,)
    if len(rs) != len(outs):
        raise RuntimeError(f"jvp() returned an incorrect number of tangents: expected {len(outs)}, got {len(rs)}")
    result = []
    for o, t in zip(outs, rs):
        if isinstance(o, Tensor) and isinstance(t, Tensor) and (o.is_floating_point() or o.is_complex()):
            if any(o is a for a in args):
                with disabled():
                    o = aten.alias.default(o)   # an input handed back: its own tangent must not change
            put_tangent(o, laid_out_like(t, o), level)
        result.append(o)
    return tuple(result) if is_tuple else result[0]



def _import_forward_formulas():
    """Import every ``forward_formulas_<family>`` module: each registers its direct formulas as it loads."""
    import importlib
    import pkgutil
    package = __name__.rpartition(".")[0]
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        if info.name.startswith("forward_formulas_"):
            importlib.import_module(f"{package}.{info.name}")


_import_forward_formulas()
