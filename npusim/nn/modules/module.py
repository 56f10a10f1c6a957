"""``nn.Module``: parameters, buffers and submodules registered by assignment, hooks, state dicts."""
from __future__ import annotations

import itertools
import weakref
from collections import OrderedDict, namedtuple

from ...core.tensor import Tensor
from ..parameter import Buffer, Parameter

__all__ = ["Module"]

_global_forward_pre_hooks: dict = OrderedDict()
_global_forward_hooks: dict = OrderedDict()


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__().replace("IncompatibleKeys", "_IncompatibleKeys")

    __str__ = __repr__


class RemovableHandle:
    """Returned by hook registrations; ``remove()`` unregisters the hook."""

    _ids = itertools.count()

    def __init__(self, *dicts):
        self.id = next(self._ids)
        self._dicts = [weakref.ref(d) if hasattr(d, "__weakref__") else (lambda d=d: d) for d in dicts]

    def remove(self):
        for ref in self._dicts:
            d = ref()
            if d is not None:
                d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _HookDict(OrderedDict):
    pass


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
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected argument: Module takes no "
                            f"arguments")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = OrderedDict()
        d["_forward_pre_hooks"] = _HookDict()
        d["_forward_pre_hooks_with_kwargs"] = {}
        d["_forward_hooks"] = _HookDict()
        d["_forward_hooks_with_kwargs"] = {}
        d["_forward_hooks_always_called"] = {}
        d["_backward_hooks"] = _HookDict()
        d["_state_dict_hooks"] = _HookDict()
        d["_load_state_dict_pre_hooks"] = _HookDict()

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
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (torch Tensor or None "
                            f"required)".replace("torch Tensor", "npusim Tensor"))
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
            self.register_buffer(name, value.data, value.persistent)
        else:
            buffers = d.get("_buffers")
            if buffers is not None and name in buffers:
                if value is not None and not isinstance(value, Tensor):
                    raise TypeError(f"cannot assign '{_type_name(value)}' as buffer '{name}' (npusim.Tensor or None "
                                    f"expected)")
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
        for hook_id, hook in itertools.chain(_global_forward_pre_hooks.items(), pre.items()):
            if self._forward_pre_hooks_with_kwargs.get(hook_id):
                r = hook(self, args, kwargs)
                if r is not None:
                    if not (isinstance(r, tuple) and len(r) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {r}.")
                    args, kwargs = r
            else:
                r = hook(self, args)
                if r is not None:
                    args = r if isinstance(r, tuple) else (r,)
        result = self.forward(*args, **kwargs)
        for hook_id, hook in itertools.chain(_global_forward_hooks.items(), post.items()):
            if self._forward_hooks_with_kwargs.get(hook_id):
                r = hook(self, args, kwargs, result)
            else:
                r = hook(self, args, result)
            if r is not None:
                result = r
        return result

    def __call__(self, *args, **kwargs):
        return self._call_impl(*args, **kwargs)

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        handle = RemovableHandle(self._forward_pre_hooks, self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        handle = RemovableHandle(self._forward_hooks, self._forward_hooks_with_kwargs,
                                 self._forward_hooks_always_called)
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
        for m in self.modules():
            m.training = mode
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        from ...core.autograd.grad_mode import no_grad
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
        """Replace every parameter and buffer by ``fn(tensor)``, keeping Parameter identity semantics."""
        from ...core.autograd.grad_mode import no_grad
        if recurse:
            for m in self.children():
                m._apply(fn)
        for key, param in self._parameters.items():
            if param is None:
                continue
            with no_grad():
                new = fn(param)
            if new is param:
                continue
            p = Parameter(new, param.requires_grad)
            if param.grad is not None:
                with no_grad():
                    g = fn(param.grad)
                p.grad = g
            self._parameters[key] = p
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs):
        from ...core.tensor_methods import _parse_to
        dev, dt, non_blocking, _copy, memory_format = _parse_to(args, dict(kwargs))
        if dt is not None and not dt.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired dtype="
                            f"{dt}")

        def convert(t):
            if dt is not None and t.is_floating_point():
                return t.to(device=dev, dtype=dt, non_blocking=non_blocking)
            return t.to(device=dev, non_blocking=non_blocking) if dev is not None else t
        return self._apply(convert)

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def type(self, dst_type):
        return self._apply(lambda t: t.type(dst_type))

    def _float_cast(self, dt):
        return self._apply(lambda t: t.to(dt) if t.is_floating_point() else t)

    def float(self):
        from ...core import dtype as D
        return self._float_cast(D.float32)

    def double(self):
        from ...core import dtype as D
        return self._float_cast(D.float64)

    def half(self):
        from ...core import dtype as D
        return self._float_cast(D.float16)

    def bfloat16(self):
        from ...core import dtype as D
        return self._float_cast(D.bfloat16)

    def share_memory(self):
        return self

    # --- state dicts ---------------------------------------------------------------------------------------------
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        if args:
            destination = args[0] if len(args) > 0 else destination
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        stack = [(prefix, self)]
        while stack:
            pre, m = stack.pop()
            if hasattr(destination, "_metadata"):
                destination._metadata[pre[:-1]] = {"version": m._version}
            m._save_to_state_dict(destination, pre, keep_vars)
            for hook in m._state_dict_hooks.values():
                r = hook(m, destination, pre, {})
                if r is not None:
                    destination = r
            kids = [(pre + name + ".", sub) for name, sub in m._modules.items() if sub is not None]
            stack.extend(reversed(kids))
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs, assign=False):
        from ...core.autograd.grad_mode import no_grad
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        persistent = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local = {**{k: v for k, v in self._parameters.items() if v is not None},
                 **{k: v for k, v in persistent.items() if v is not None}}
        for name, param in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not isinstance(input_param, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like '
                                  f'object from checkpoint but received {type(input_param)}')
                continue
            if input_param.shape != param.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {input_param.shape} from "
                                  f"checkpoint, the shape in current model is {param.shape}.")
                continue
            try:
                if assign:
                    new = input_param
                    if isinstance(param, Parameter) and not isinstance(new, Parameter):
                        new = Parameter(new, param.requires_grad)
                    setattr(self, name, new)
                else:
                    with no_grad():
                        param.copy_(input_param)
            except Exception as e:  # noqa: BLE001 - reported like torch, with the key
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                                  f'{param.shape} and whose dimensions in the checkpoint are {input_param.shape}, an '
                                  f'exception occurred : {e.args}.')
        if strict:
            for key in state_dict:
                if key.startswith(prefix):
                    rest = key[len(prefix):]
                    head = rest.split(".", 1)[0]
                    if head not in self._modules and rest not in local and rest not in self._parameters and \
                            rest not in persistent:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        stack = [("", self)]
        while stack:
            pre, m = stack.pop()
            local_meta = {} if metadata is None else metadata.get(pre[:-1], {})
            m._load_from_state_dict(state_dict, pre, local_meta, True, missing, unexpected, errors, assign)
            kids = [(pre + name + ".", sub) for name, sub in m._modules.items() if sub is not None]
            stack.extend(reversed(kids))
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    def register_state_dict_pre_hook(self, hook):
        return self.register_state_dict_post_hook(hook)

    def register_state_dict_post_hook(self, hook):
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def register_load_state_dict_pre_hook(self, hook):
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = hook
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
        from ...core.tensor_methods import _LEGACY
        return f"npusim.{_LEGACY[v.dtype]}"
    return type(v).__name__


def register_module_forward_pre_hook(hook):
    handle = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[handle.id] = hook
    return handle


def register_module_forward_hook(hook):
    handle = RemovableHandle(_global_forward_hooks)
    _global_forward_hooks[handle.id] = hook
    return handle
