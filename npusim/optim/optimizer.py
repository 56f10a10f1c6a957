"""``Optimizer``: the base class of every optimizer, as ``torch.optim.Optimizer``.

It owns the parameter groups, the per-parameter state, step hooks, and the
state_dict format torch uses (parameters referenced by integer ids, in group
order), so checkpoints written by one side load on the other.

The update rules of the subclasses run the single-tensor (``foreach=False``)
algorithms of torch, in the same order of operations, with in-place tensor ops
on each parameter's own device.
"""
from __future__ import annotations

import functools
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from copy import deepcopy
from itertools import chain

from ..api.misc import typename as _typename
from ..core.c10 import dtype as _dtype
from ..core.dispatch.api_usage import log_api_usage_once
from ..core.autograd import enable_grad, set_grad_enabled
from ..core.factories import tensor as _tensor
from ..core.tensor import Tensor
from ..utils.hooks import RemovableHandle

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook", "required"]


class _RequiredParameter:
    """Singleton class representing a required parameter for an Optimizer."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


# torch.utils.hooks.RemovableHandle, as torch returns from every optimizer hook registration
_HookHandle = RemovableHandle


_global_optimizer_pre_hooks: OrderedDict = OrderedDict()
_global_optimizer_post_hooks: OrderedDict = OrderedDict()


def register_optimizer_step_pre_hook(hook) -> _HookHandle:
    """Register ``hook(optimizer, args, kwargs)`` to run before every optimizer's ``step``."""
    handle = _HookHandle(_global_optimizer_pre_hooks)
    _global_optimizer_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook) -> _HookHandle:
    """Register ``hook(optimizer, args, kwargs)`` to run after every optimizer's ``step``."""
    handle = _HookHandle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[handle.id] = hook
    return handle


def _scalar_dtype():
    """dtype of the ``step`` counters: float64 under a float64 default dtype, else float32."""
    return _dtype.float64 if _dtype.get_default_dtype() is _dtype.float64 else _dtype.float32


def _to_scalar(x):
    """A 1-element hyperparameter tensor as a 0-dim tensor; anything else unchanged."""
    if isinstance(x, Tensor) and x.dim() != 0:
        return x.squeeze()
    return x


def _get_value(x):
    return x.item() if isinstance(x, Tensor) else x


def _evaluate_closure(closure):
    """The loss ``closure`` returns, computed with grad mode on (None without a closure)."""
    if closure is None:
        return None
    with enable_grad():
        return closure()


def _use_grad_for_differentiable(step):
    """Run ``step`` with grad mode set to the optimizer's ``differentiable`` flag (off by default)."""
    @functools.wraps(step)
    def _use_grad(self, *args, **kwargs):
        _graph_capture_health_check(self)
        with set_grad_enabled(bool(self.defaults.get("differentiable", False))):
            return step(self, *args, **kwargs)
    return _use_grad


_accelerator_probe = None     # (type name, its module's is_current_stream_capturing), found on first use


def _graph_capture_health_check(optimizer) -> None:
    """torch's check: a step whose state lives on the host (``capturable=False``) cannot be captured in a graph."""
    global _accelerator_probe
    if _accelerator_probe is None:
        import npusim
        acc = npusim.accelerator.current_accelerator()
        module = getattr(npusim, acc.type, None) if acc is not None else None
        if module is None:
            return
        _accelerator_probe = (acc.type, module.is_current_stream_capturing)
    name, capturing = _accelerator_probe
    if capturing() and any(group.get("capturable") is False for group in optimizer.param_groups):
        raise RuntimeError(f"Attempting {name.upper()} graph capture of step() for an instance of "
                           f"{type(optimizer).__name__} but param_groups' capturable is False.")


def _check_unsupported(name: str, *, foreach=None, fused=None, capturable=False, differentiable=False) -> None:
    """Reject the implementation switches that have no npusim counterpart (the loop is always single-tensor)."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        raise NotImplementedError(f"{name}: fused=True is not supported; npusim runs the single-tensor algorithm")
    if capturable:
        raise NotImplementedError(f"{name}: capturable=True is not supported; npusim keeps the step count on the host, "
                                  f"so graph capture takes optimizers without one (SGD...)")
    if differentiable:
        raise NotImplementedError(f"{name}: differentiable=True is not supported")


# torch's addcmul_/addcdiv_ compute self + (value * t1) * t2 and self + (value * t1) / t2; composed here from
# in-place ops in the same order, so the result stays on the tensors' device with no host round trip.

def addcmul_(self: Tensor, t1: Tensor, t2: Tensor, value=1) -> Tensor:
    prod = t1.mul(value).mul_(t2) if value != 1 else t1.mul(t2)
    return self.add_(prod)


def addcdiv_(self: Tensor, t1: Tensor, t2: Tensor, value=1) -> Tensor:
    quot = t1.mul(value).div_(t2) if value != 1 else t1.div(t2)
    return self.add_(quot)


def addcmul(self: Tensor, t1: Tensor, t2: Tensor, value=1) -> Tensor:
    # the final add is commutative, so the product can take ``self`` in place of a copy of ``self``
    prod = t1.mul(value).mul_(t2) if value != 1 else t1.mul(t2)
    return prod.add_(self)


class Optimizer:
    """Base class for all optimizers.

    Args:
        params (iterable): an iterable of Tensors, of ``(name, Tensor)`` pairs, or of dicts (parameter groups).
        defaults (dict): default values of the optimization options, used where a group does not set them.
    """

    # set on unpickling where missing (torch's per-class __setstate__ defaults)
    _group_defaults: dict = {}
    # whether per-parameter "step" counters are tensors, which older checkpoints kept as numbers
    _tensor_step_counters = False

    def __init__(self, params, defaults: dict) -> None:
        log_api_usage_once("python.optimizer")
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        self._patch_step_function()

        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            "but got " + _typename(params))

        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict] = []

        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    # --- pickling and printing ------------------------------------------------------------------------

    def __getstate__(self) -> dict:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
                     "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self._patch_step_function()
        self.defaults.setdefault("differentiable", False)
        # options an optimizer pickled by an older version may lack, as each subclass lists them
        for group in self.param_groups:
            for key, value in self._group_defaults.items():
                group.setdefault(key, value)
        if self._tensor_step_counters:
            self._step_counters_as_tensors()

    def _gather(self, group, keys, new_state):
        """torch's ``_init_group``: the parameters of ``group`` that have a gradient, their gradients, and one
        list per state entry named in ``keys``; ``new_state(p)`` gives the entries of a parameter seen first
        (in torch's order, which its state_dict keeps)."""
        params, grads = [], []
        columns = [[] for _ in keys]
        for p in group["params"]:
            if p.grad is None:
                continue
            params.append(p)
            grads.append(p.grad)
            state = self.state[p]
            if len(state) == 0:
                state.update(new_state(p))
            for column, key in zip(columns, keys):
                column.append(state[key])
        return (params, grads, *columns)

    def _step_counters_as_tensors(self) -> None:
        """State loaded from old checkpoints kept ``step`` as a Python number; the update rules want a tensor."""
        for group in self.param_groups:
            for p in group["params"]:
                p_state = self.state.get(p, [])
                if len(p_state) != 0 and not isinstance(p_state["step"], Tensor):
                    p_state["step"] = _tensor(float(p_state["step"]), dtype=_scalar_dtype())

    def __repr__(self) -> str:
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    # --- step and its hooks -----------------------------------------------------------------------------

    @staticmethod
    def profile_hook_step(func):
        """Wrap a ``step`` so the global and per-optimizer pre/post hooks run around it."""
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            self = args[0]
            for pre_hook in chain(_global_optimizer_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
                result = pre_hook(self, args, kwargs)
                if result is not None:
                    if isinstance(result, tuple) and len(result) == 2:
                        args, kwargs = result
                    else:
                        raise RuntimeError(f"{func} must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {result}.")
            out = func(*args, **kwargs)
            for post_hook in chain(self._optimizer_step_post_hooks.values(), _global_optimizer_post_hooks.values()):
                post_hook(self, args, kwargs)
            return out
        return wrapper

    def _patch_step_function(self) -> None:
        # Wrapped once per class, the first time one of its instances is built (as torch does).
        if not getattr(self.__class__.step, "hooked", None):
            self.__class__.step = self.profile_hook_step(self.__class__.step)
            self.__class__.step.hooked = True

    def register_step_pre_hook(self, hook) -> _HookHandle:
        """Register ``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)`` to run before ``step``."""
        return self._register(self._optimizer_step_pre_hooks, hook, False)

    def register_step_post_hook(self, hook) -> _HookHandle:
        """Register ``hook(optimizer, args, kwargs)`` to run after ``step``."""
        return self._register(self._optimizer_step_post_hooks, hook, False)

    @staticmethod
    def _register(hooks_dict: OrderedDict, hook, prepend: bool) -> _HookHandle:
        handle = _HookHandle(hooks_dict)
        hooks_dict[handle.id] = hook
        if prepend:
            hooks_dict.move_to_end(handle.id, last=False)
        return handle

    def register_state_dict_pre_hook(self, hook, prepend: bool = False) -> _HookHandle:
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend: bool = False) -> _HookHandle:
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend: bool = False) -> _HookHandle:
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend: bool = False) -> _HookHandle:
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    def step(self, closure=None):
        """Perform a single optimization step (subclasses implement it)."""
        raise NotImplementedError

    # --- state dict -------------------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """``{"state": {param_id: {...}}, "param_groups": [{..., "params": [param_id, ...]}]}``.

        Parameter ids number the parameters in group order; the state tensors are not copied.
        """
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)

        param_mappings: dict[int, int] = {}
        start_index = 0

        def pack_group(group: dict) -> dict:
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}

        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _process_value_according_to_param_policy(param: Tensor, value: Tensor, param_id, param_groups, key=None):
        """A loaded state tensor, copied onto the parameter's device (and dtype, for floating parameters).

        ``step`` keeps its own dtype (and device, unless the group is fused or capturable), as in torch.
        The result never aliases the loaded tensor, so stepping one optimizer cannot change another's state.
        """
        fused = capturable = False
        for pg in param_groups:
            if param_id in pg["params"]:
                fused = pg.get("fused", False)
                capturable = pg.get("capturable", False)
                break
        if key == "step":
            moved = value.to(dtype=_dtype.float32, device=param.device) if (capturable or fused) else value
        elif param.is_floating_point():
            moved = value.to(dtype=param.dtype, device=param.device)
        else:
            moved = value.to(device=param.device)
        return moved.clone() if moved is value else moved

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a state dict produced by :meth:`state_dict` (of this optimizer class, same group layout)."""
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result

        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")

        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def _cast(param, value, param_id=None, param_groups=None, key=None):
            if isinstance(value, Tensor):
                return Optimizer._process_value_according_to_param_policy(param, value, param_id, param_groups, key)
            if isinstance(value, dict):
                return {k: _cast(param, v, param_id=param_id, param_groups=param_groups, key=k)
                        for k, v in value.items()}
            if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
                return type(value)(_cast(param, v, param_id=param_id, param_groups=param_groups) for v in value)
            return value

        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = _cast(param, v, param_id=k, param_groups=state_dict["param_groups"])
            else:
                state[k] = v

        def update_group(group: dict, new_group: dict) -> dict:
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})

        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # --- gradients and groups -----------------------------------------------------------------------------

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors: to ``None`` (default) or to zeros in place."""
        plain_grad = Tensor.grad     # the .grad property (a subclass may override it)
        for group in self.param_groups:
            for p in group["params"]:
                if p.__class__.grad is plain_grad:
                    am = p._am
                    if am is None:
                        continue      # a tensor that never had autograd state has no gradient
                    if set_to_none and am.grad_fn is None:
                        am.grad = None    # a leaf's gradient, dropped without the property's checks
                        continue
                grad = p.grad     # (a non-leaf's read warns, as torch's does)
                if grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if grad.grad_fn is not None:
                        grad.detach_()
                    else:
                        grad.requires_grad_(False)
                    grad.zero_()

    def add_param_group(self, param_group: dict) -> None:
        """Add a parameter group (a dict with ``"params"`` and optional per-group options)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")

        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)

        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) == len(tensors):
                param_group["param_names"] = names
            else:
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")

        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)

        params = param_group["params"]
        if len(params) != len(set(params)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)

        param_set: set = set()
        for group in self.param_groups:
            param_set.update(set(group["params"]))
            if ("param_names" in param_group) != ("param_names" in group):
                current = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {current} to the optimizer")
        if not param_set.isdisjoint(set(param_group["params"])):
            raise ValueError("some parameters appear in more than one parameter group")

        self.param_groups.append(param_group)
