"""``nn.Module``: parameters, buffers and submodules registered by assignment, hooks, state dicts."""
from __future__ import annotations

import itertools
import warnings
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ...core.c10 import dtype as D
from ...core.dispatch.api_usage import log_api_usage_once
from ...core.autograd.grad_mode import no_grad
from ...core.tensor import Tensor
from ...api.tensor_methods import _LEGACY, _parse_to
from ...utils.hooks import RemovableHandle
from ..parameter import Buffer, Parameter, is_lazy

__all__ = ["Module"]

_global_forward_pre_hooks: dict = OrderedDict()
_global_forward_pre_hooks_with_kwargs: dict = {}
_global_forward_hooks: dict = OrderedDict()
_global_forward_hooks_with_kwargs: dict = {}
_global_forward_hooks_always_called: dict = {}

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


# Hook dicts are OrderedDicts, as torch's: RemovableHandle refers to them weakly (an OrderedDict, unlike a dict,
# can be), and a pickled module names only classes a weights_only load can allow. The old name stays for
# checkpoints written when hook dicts had a class of their own.
_HookDict = OrderedDict


class _WrappedHook:
    """A hook that is handed its module first, holding the module weakly (no reference cycle)."""

    def __init__(self, hook, module=None):
        self.hook = hook
        self.module = None if module is None else weakref.ref(module)

    def __call__(self, *args, **kwargs):
        if self.module is None:
            return self.hook(*args, **kwargs)
        module = self.module()
        if module is None:
            raise RuntimeError("You are trying to call the hook of a dead Module!")
        return self.hook(module, *args, **kwargs)

    def __getstate__(self):
        # The module itself travels (a weak reference cannot be pickled or deep-copied).
        return {"hook": self.hook, "module": None if self.module is None else self.module()}

    def __setstate__(self, state):
        self.hook = state["hook"]
        self.module = None if state["module"] is None else weakref.ref(state["module"])


def _addindent(s, n):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    return first + "\n" + "\n".join(" " * n + line for line in lines)


class Module:
    """Base class of all neural-network modules."""

    training: bool
    _version = 1
    dump_patches = False
    call_super_init = False

    def __init__(self, *args, **kwargs):
        log_api_usage_once("python.nn_module")
        if self.call_super_init is False and kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if self.call_super_init is False and args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but {len(args) + 1} were "
                            f"given")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = OrderedDict()
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_pre_hooks_with_kwargs"] = {}
        d["_forward_hooks"] = OrderedDict()
        d["_forward_hooks_with_kwargs"] = {}
        d["_forward_hooks_always_called"] = {}
        d["_backward_hooks"] = OrderedDict()
        d["_state_dict_hooks"] = OrderedDict()
        d["_state_dict_pre_hooks"] = OrderedDict()
        d["_load_state_dict_pre_hooks"] = OrderedDict()
        d["_load_state_dict_post_hooks"] = OrderedDict()

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"Module [{type(self).__name__}] is missing the required \"forward\" function")

    # --- registration ----------------------------------------------------------------------------
    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (npusim Tensor or None "
                            f"required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_type_name(param)}' object to parameter '{name}' (npusim.nn.Parameter "
                            f"or None required)")
        if param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be created "
                             f"explicitly. To express '{name}' as a function of another Tensor, compute the value "
                             f"in the forward() method.")
        self._parameters[name] = param

    @staticmethod
    def _check_name(name, kind):
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f"{kind} name can't contain \".\"")
        if name == "":
            raise KeyError(f"{kind} name can't be empty string \"\"")

    def add_module(self, name: str, module) -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_type_name(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f"module name can't contain \".\", got: {name}")
        if name == "":
            raise KeyError("module name can't be empty string \"\"")
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> "Module":
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def get_parameter(self, target: str):
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        p = getattr(mod, name)
        if not isinstance(p, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return p

    def get_buffer(self, target: str):
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return mod._buffers[name]

    # --- attribute protocol -----------------------------------------------------------------------------
    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            s = d.get(store)
            if s is not None and name in s:
                return s[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")

        def remove_from(*stores):
            for s in stores:
                if s is not None and name in s:
                    del s[name]
            if name in d:
                del d[name]

        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(d.get("_buffers"), d.get("_modules"))
            d.get("_non_persistent_buffers_set", set()).discard(name)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as parameter '{name}' (npusim.nn.Parameter or "
                                f"None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            modules = d.get("_modules")
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            remove_from(params, d.get("_buffers"))
            modules[name] = value
        elif d.get("_modules") is not None and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as child module '{name}' (npusim.nn.Module or "
                                f"None expected)")
            d["_modules"][name] = value
        elif isinstance(value, Buffer):
            self.register_buffer(name, value, value.persistent)
        else:
            buffers = d.get("_buffers")
            if buffers is not None and name in buffers:
                if value is not None and not isinstance(value, Tensor):
                    raise TypeError(f"cannot assign '{_type_name(value)}' as buffer '{name}' (npusim.nn.Buffer, "
                                    f"npusim.Tensor or None expected)")
                buffers[name] = value
            else:
                object.__setattr__(self, name, value)

    def __delattr__(self, name):
        for store in ("_parameters", "_buffers", "_modules"):
            s = self.__dict__.get(store)
            if s is not None and name in s:
                del s[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = set(dir(type(self))) | set(self.__dict__) | set(self._parameters) | set(self._modules) | \
            set(self._buffers)
        return sorted(k for k in keys if not k[0].isdigit())

    # --- calling -------------------------------------------------------------------------------------------------
    def _call_impl(self, *args, **kwargs):
        pre = self._forward_pre_hooks
        post = self._forward_hooks
        if not (pre or post or _global_forward_pre_hooks or _global_forward_hooks):
            return self.forward(*args, **kwargs)
        called_always = set()
        try:
            for hook_id, hook in itertools.chain(_global_forward_pre_hooks.items(), pre.items()):
                if hook_id in self._forward_pre_hooks_with_kwargs or hook_id in _global_forward_pre_hooks_with_kwargs:
                    r = hook(self, args, kwargs)
                    if r is not None:
                        if not (isinstance(r, tuple) and len(r) == 2):
                            raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, "
                                               f"new_kwargs), but got {r}.")
                        args, kwargs = r
                else:
                    r = hook(self, args)
                    if r is not None:
                        args = r if isinstance(r, tuple) else (r,)
            result = self.forward(*args, **kwargs)
            for hook_id, hook in itertools.chain(_global_forward_hooks.items(), post.items()):
                if hook_id in self._forward_hooks_always_called or hook_id in _global_forward_hooks_always_called:
                    called_always.add(hook_id)
                if hook_id in self._forward_hooks_with_kwargs or hook_id in _global_forward_hooks_with_kwargs:
                    r = hook(self, args, kwargs, result)
                else:
                    r = hook(self, args, result)
                if r is not None:
                    result = r
            return result
        except Exception:
            # Hooks registered with always_call=True still run; their own errors are only warned about.
            for hook_id, hook in itertools.chain(_global_forward_hooks.items(), post.items()):
                if (hook_id in self._forward_hooks_always_called or hook_id in _global_forward_hooks_always_called) \
                        and hook_id not in called_always:
                    try:
                        if hook_id in self._forward_hooks_with_kwargs or \
                                hook_id in _global_forward_hooks_with_kwargs:
                            hook(self, args, kwargs, None)
                        else:
                            hook(self, args, None)
                    except Exception as e:  # noqa: BLE001 - torch warns and re-raises the forward's error
                        warnings.warn("forward hook with ``always_call=True`` raised an exception that was silenced "
                                      f"as another error was raised in forward: {e}", stacklevel=2)
            raise

    def __call__(self, *args, **kwargs):
        return self._call_impl(*args, **kwargs)

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        handle = RemovableHandle(self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        handle = RemovableHandle(self._forward_hooks, extra_dict=[self._forward_hooks_with_kwargs,
                                                                      self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    # --- traversal -------------------------------------------------------------------------------------------
    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else \
            [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or (remove_duplicate and id(v) in memo):
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_children(self):
        memo = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in memo:
                memo.add(id(m))
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """Depth-first, iteratively (deep models must not hit the recursion limit)."""
        if memo is None:
            memo = set()
        stack = [(prefix, self)]
        while stack:
            p, m = stack.pop()
            if remove_duplicate:
                if id(m) in memo:
                    continue
                memo.add(id(m))
            yield p, m
            kids = [(p + ("." if p else "") + name, sub) for name, sub in m._modules.items() if sub is not None]
            stack.extend(reversed(kids))

    def modules(self):
        for _, m in self.named_modules():
            yield m

    # --- modes and transforms ----------------------------------------------------------------------------------
    def train(self, mode: bool = True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        # Each child's own train() runs (subclasses override it); plain ones are walked without recursion.
        stack = [self]
        while stack:
            m = stack.pop()
            m.training = mode
            plain = []
            for child in m.children():
                if type(child).train is Module.train:
                    plain.append(child)
                else:
                    child.train(mode)
            stack.extend(reversed(plain))
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    g = p.grad
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    with no_grad():
                        g.zero_()

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def _apply(self, fn, recurse=True):
        """Replace every parameter's data and every buffer by ``fn(tensor)``.

        Parameters keep their identity (an optimizer built before ``.to()`` still
        holds them), as torch does by default: their ``.data`` is swapped.
        """
        if recurse:
            for m in self.children():
                m._apply(fn)
        for key, param in self._parameters.items():
            if param is None:
                continue
            with no_grad():
                new = fn(param)
            if new is not param:
                param.data = new
            grad = param.grad
            if grad is not None:
                with no_grad():
                    new_grad = fn(grad)
                if new_grad is not grad:
                    grad.data = new_grad
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs):
        dev, dt, non_blocking, _copy, memory_format = _parse_to(args, dict(kwargs))
        if dt is not None and not dt.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired dtype="
                            f"{dt}")

        def convert(t):
            if memory_format is not None and t.dim() in (4, 5):   # as torch: only 4-d and 5-d tensors take it
                return t.to(device=dev, dtype=dt if t.is_floating_point() else None, non_blocking=non_blocking,
                            memory_format=memory_format)
            if dt is not None and t.is_floating_point():
                return t.to(device=dev, dtype=dt, non_blocking=non_blocking)
            return t.to(device=dev, non_blocking=non_blocking) if dev is not None else t
        return self._apply(convert)

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None):
        """Parameters and buffers onto "cuda": the npu under ``--device-map cuda=npu``, else torch's error."""
        from ...api.tensor_methods import cuda_device
        target = cuda_device(device)   # checked once, before any parameter moves
        return self._apply(lambda t: t.to(target))

    def type(self, dst_type):
        return self._apply(lambda t: t.type(dst_type))

    def _float_cast(self, dt):
        return self._apply(lambda t: t.to(dt) if t.is_floating_point() else t)

    def float(self):
        return self._float_cast(D.float32)

    def double(self):
        return self._float_cast(D.float64)

    def half(self):
        return self._float_cast(D.float16)

    def bfloat16(self):
        return self._float_cast(D.bfloat16)

    def share_memory(self):
        """Move every parameter, gradient and buffer into shared memory (see ``Tensor.share_memory_``)."""
        return self._apply(lambda t: t.share_memory_())

    # --- state dicts ---------------------------------------------------------------------------------------------
    def get_extra_state(self):
        """Extra (non-tensor) state a subclass saves in its state dict; define set_extra_state to load it."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called. Please "
                           "file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
                           "to report this bug.")

    def set_extra_state(self, state):
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called. Please "
                           "file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
                           "to report this bug.")

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """Parameters and persistent buffers by dotted name (detached unless ``keep_vars``), with version metadata."""
        if args:
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                          "https://pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.state_dict "
                          "for details.", FutureWarning, stacklevel=2)
            destination = args[0] if len(args) > 0 and destination is None else destination
            prefix = args[1] if len(args) > 1 and prefix == "" else prefix
            keep_vars = args[2] if len(args) > 2 and keep_vars is False else keep_vars
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        # Pre-order saves, post-order hooks (a module's post-hooks see its children's entries), no recursion.
        stack = [(prefix, self, False)]
        local_metadata_of = {}
        while stack:
            pre, m, done = stack.pop()
            if done:
                local_metadata = local_metadata_of.pop(id(m), {})
                for hook in m._state_dict_hooks.values():
                    r = hook(m, destination, pre, local_metadata)
                    if getattr(hook, "_from_public_api", False):
                        if r is not None:
                            raise RuntimeError("state_dict post-hook must return None")
                    elif r is not None:
                        destination = r
                continue
            for hook in m._state_dict_pre_hooks.values():
                hook(m, pre, keep_vars)
            local_metadata = {"version": m._version}
            if hasattr(destination, "_metadata"):
                destination._metadata[pre[:-1]] = local_metadata
            local_metadata_of[id(m)] = local_metadata
            m._save_to_state_dict(destination, pre, keep_vars)
            stack.append((pre, m, True))
            kids = [(pre + name + ".", sub, False) for name, sub in m._modules.items() if sub is not None]
            stack.extend(reversed(kids))
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        """Copy this module's own entries of ``state_dict`` (keys under ``prefix``), collecting problems."""
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        persistent = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(), persistent.items())
                       if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not isinstance(input_param, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected npusim.Tensor or Tensor-like '
                                  f'object from checkpoint but received {type(input_param)}')
                continue
            # An uninitialized (lazy) parameter takes any shape; a lazy input into an initialized one fails
            # on its .shape, as in torch.
            is_param_lazy = is_lazy(param)
            if not is_param_lazy and len(param.shape) == 0 and len(input_param.shape) == 1:
                # Old checkpoints stored scalars as 1-element vectors.
                input_param = input_param[0]
            if not is_param_lazy and input_param.shape != param.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {input_param.shape} from "
                                  f"checkpoint, the shape in current model is {param.shape}.")
                continue
            try:
                with no_grad():
                    if assign:
                        if isinstance(param, Parameter):
                            if not isinstance(input_param, Parameter):
                                input_param = Parameter(input_param, requires_grad=param.requires_grad)
                            else:
                                input_param.requires_grad_(param.requires_grad)
                        setattr(self, name, input_param)
                    else:
                        param.copy_(input_param)
            except Exception as ex:  # noqa: BLE001 - reported like torch, with the key
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                                  f'{param.size()} and whose dimensions in the checkpoint are {input_param.size()}, '
                                  f'an exception occurred : {ex.args}.')
        extra_state_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_state_key in state_dict:
                self.set_extra_state(state_dict[extra_state_key])
            elif strict:
                missing_keys.append(extra_state_key)
        elif strict and extra_state_key in state_dict:
            unexpected_keys.append(extra_state_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_state_key:
                    input_name = key[len(prefix):].split(".", 1)
                    if len(input_name) > 1:
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy ``state_dict``'s tensors into the parameters and buffers (or assign them, with ``assign=True``)."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys, unexpected_keys, error_msgs = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata
        # Each module sees only the keys under its prefix (as torch passes it), walked without recursion.
        stack = [(self, state_dict, "")]
        visited = []
        while stack:
            module, local_state_dict, prefix = stack.pop()
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True, missing_keys,
                                         unexpected_keys, error_msgs)
            visited.append(module)
            kids = []
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    kids.append((child, {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)},
                                 child_prefix))
            stack.extend(reversed(kids))
        incompatible_keys = _IncompatibleKeys(missing_keys, unexpected_keys)
        for module in reversed(visited):  # children's post-hooks before their parent's
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, incompatible_keys) is not None:
                    raise RuntimeError("load_state_dict post hook should return None")
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(error_msgs)))
        return incompatible_keys

    def _register_state_dict_hook(self, hook):
        """A post hook ``hook(module, state_dict, prefix, local_metadata)`` that may return a new state dict."""
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata)``, run after the module's entries are saved."""
        hook._from_public_api = True
        return self._register_state_dict_hook(hook)

    def register_state_dict_pre_hook(self, hook):
        """``hook(module, prefix, keep_vars)``, run before the module's entries are saved."""
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = _WrappedHook(hook, self if with_module else None)
        return handle

    def register_load_state_dict_pre_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)``."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys)``, run after loading; may edit the key lists in place."""
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    # --- printing ------------------------------------------------------------------------------------------------
    def _get_name(self):
        return type(self).__name__

    def extra_repr(self) -> str:
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        children = [(key, _addindent(repr(module), 2)) for key, module in self._modules.items()]
        lines += self._child_lines(children)
        main = self._get_name() + "("
        if lines:
            if len(lines) == 1 and not children:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    @staticmethod
    def _child_lines(children):
        return [f"({key}): {text}" for key, text in children]

    def __setstate__(self, state):
        self.__dict__.update(state)


def compress_repeats(children):
    """torch's ModuleList repr: runs of identical children print as ``(0-1): 2 x ReLU()``."""
    out = []
    i = 0
    while i < len(children):
        j = i
        while j + 1 < len(children) and children[j + 1][1] == children[i][1]:
            j += 1
        if j > i:
            out.append(f"({children[i][0]}-{children[j][0]}): {j - i + 1} x {children[i][1]}")
        else:
            out.append(f"({children[i][0]}): {children[i][1]}")
        i = j + 1
    return out


def _type_name(v) -> str:
    if isinstance(v, Tensor):
        return f"npusim.{_LEGACY[v.dtype]}"
    return type(v).__name__


def register_module_forward_pre_hook(hook):
    """A forward pre-hook run for every module."""
    handle = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[handle.id] = hook
    return handle


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """A forward hook run for every module."""
    handle = RemovableHandle(_global_forward_hooks, extra_dict=[_global_forward_hooks_with_kwargs,
                                                          _global_forward_hooks_always_called])
    _global_forward_hooks[handle.id] = hook
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle
