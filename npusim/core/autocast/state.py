"""The autocast engine: per-thread autocast state, the cast cache, cast policies and ``autocast``.

How a call is autocast: while autocast is enabled for a device type in a thread,
that thread's bit of the device's Autocast key is set in ``dispatch_tls.tls.autocast``
and the dispatcher's slow path adds the key to calls on that device. A policy
kernel registered for the key (``register_autocast_policies``) casts the floating
arguments as its policy says, then redispatches below the Autocast keys with its
own key excluded, so the ops it runs internally are not autocast again (torch's
``ExcludeDispatchKeyGuard`` in ATen/autocast_mode.h). Ops without a policy fall
through.

All state is per thread, as in torch: whether autocast is on and its dtype per
device type, the nesting depth of ``autocast`` regions, whether the cache is used,
and the cache itself. The cache keeps the lower-precision cast of each floating
leaf tensor that requires grad (the weights) for the rest of the outermost region;
an entry is used only while the weight's version counter and data are unchanged
and under the grad mode it was made in.
"""
from __future__ import annotations

import copy
import functools
import sys
import threading
import warnings
import weakref

from ..dispatch import dispatch_tls
from ..dispatch.api_usage import log_api_usage_once
from ..c10 import dtype as D
from ..dispatch import dispatcher
from ..autograd.grad_mode import tls as _grad_tls
from ..c10.device import PRIVATEUSE1, device, privateuse1_backend_name
from ..c10.dispatch_keys import BELOW_AUTOCAST, DispatchKey
from ..tensor import Tensor

__all__ = [
    "autocast", "is_autocast_available", "is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype",
    "set_autocast_dtype", "is_any_autocast_enabled", "is_autocast_cache_enabled", "set_autocast_cache_enabled",
    "clear_autocast_cache", "autocast_increment_nesting", "autocast_decrement_nesting",
    "register_autocast_policies", "CAST_POLICIES",
]

# device type (as core stores it) -> its Autocast key; the types torch can autocast that npusim knows
_KEY_OF_TYPE = {"cpu": DispatchKey.AutocastCPU, "cuda": DispatchKey.AutocastCUDA,
                PRIVATEUSE1: DispatchKey.AutocastPrivateUse1}
_TYPE_OF_KEY = {k: t for t, k in _KEY_OF_TYPE.items()}
# torch's per-device defaults (autocast_mode.cpp): bfloat16 on the cpu, float16 on cuda and PrivateUse1
_DEFAULT_DTYPE = {DispatchKey.AutocastCPU: D.bfloat16, DispatchKey.AutocastCUDA: D.float16,
                  DispatchKey.AutocastPrivateUse1: D.float16}


# --- per-thread state ----------------------------------------------------------------------------

class _SlowPathHold:
    """One thread's reason for the dispatcher's slow path while it has autocast on.

    Released when autocast goes off in the thread, or when the thread ends with it
    still on (its thread-local state, which holds this object, is then dropped).
    """

    __slots__ = ("active",)

    def __init__(self):
        dispatch_tls.enter_slow()
        self.active = True

    def release(self):
        if self.active:
            self.active = False
            dispatch_tls.exit_slow()

    __del__ = release


class _AutocastTLS(threading.local):
    def __init__(self):
        # threading.local runs this once in every thread that touches the state
        self.dtype = dict(_DEFAULT_DTYPE)  # Autocast key -> lower-precision dtype
        self.nesting = 0
        self.cache_enabled = True
        self.cache = {}
        self.slow = None


_state = _AutocastTLS()


def _device_type(device_type, fname, position=1) -> str:
    """A device-type string (``"npu"``, ``"cpu:0"``) -> the type as core stores it; torch's errors."""
    if not isinstance(device_type, str):
        raise TypeError(f"{fname}(): argument 'device_type' (position {position}) must be str, not "
                        f"{type(device_type).__name__}")
    return device(device_type)._type


def _key(device_type, fname) -> DispatchKey:
    key = _KEY_OF_TYPE.get(_device_type(device_type, fname))
    if key is None:
        raise RuntimeError("unknown device type for autocast in get_autocast_dispatch_key_from_device_type")
    return key


def is_autocast_available(device_type) -> bool:
    """Whether ``device_type`` can autocast: ``"cpu"``, ``"cuda"`` and the PrivateUse1 device (``"npu"``)."""
    return _device_type(device_type, "_is_autocast_available") in _KEY_OF_TYPE


def is_autocast_enabled(device_type="cuda") -> bool:
    """Whether autocast is on for ``device_type`` in this thread (off inside a policy kernel, as in torch)."""
    bit = 1 << _key(device_type, "is_autocast_enabled")
    t = dispatch_tls.tls
    return bool(t.autocast & bit) and not t.excluded & bit


def _set_enabled(key: DispatchKey, enabled: bool) -> None:
    t = dispatch_tls.tls
    old = t.autocast
    new = old | (1 << key) if enabled else old & ~(1 << key)
    if new == old:
        return
    t.autocast = new
    st = _state
    if new and st.slow is None:
        st.slow = _SlowPathHold()
    elif not new and st.slow is not None:
        st.slow.release()
        st.slow = None


def set_autocast_enabled(*args) -> None:
    """``set_autocast_enabled(device_type, enabled)``, or ``set_autocast_enabled(enabled)`` for cuda."""
    if len(args) == 1 and isinstance(args[0], bool):
        device_type, enabled = "cuda", args[0]
    elif len(args) == 2:
        device_type, enabled = args
        if not isinstance(enabled, bool):
            raise TypeError(f"set_autocast_enabled(): argument 'enabled' (position 2) must be bool, not "
                            f"{type(enabled).__name__}")
    elif len(args) == 1:
        raise TypeError(f"set_autocast_enabled(): argument 'enabled' (position 1) must be bool, not "
                        f"{type(args[0]).__name__}")
    else:
        got = ", ".join(type(a).__name__ for a in args)
        raise TypeError(f"set_autocast_enabled() received an invalid combination of arguments - got ({got}), but "
                        f"expected one of:\n * (str device_type, bool enabled)\n * (bool enabled)\n")
    _set_enabled(_key(device_type, "set_autocast_enabled"), enabled)


def get_autocast_dtype(device_type):
    """The lower-precision dtype autocast uses for ``device_type`` in this thread."""
    key = _KEY_OF_TYPE.get(_device_type(device_type, "get_autocast_dtype"))
    if key is None:
        raise RuntimeError("unsupported scalarType")  # torch's words: the type has no autocast dtype
    return _state.dtype[key]


def set_autocast_dtype(device_type, dtype) -> None:
    """Set the dtype autocast uses for ``device_type`` in this thread (any dtype is stored, as in torch)."""
    key = _key(device_type, "set_autocast_dtype")
    if not isinstance(dtype, D.dtype):
        raise TypeError(f"set_autocast_dtype(): argument 'dtype' (position 2) must be npusim.dtype, not "
                        f"{type(dtype).__name__}")
    _state.dtype[key] = dtype


def is_any_autocast_enabled() -> bool:
    """Whether autocast is on for any device type in this thread."""
    t = dispatch_tls.tls
    return bool(t.autocast & ~t.excluded)


def is_autocast_cache_enabled() -> bool:
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled) -> None:
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be a bool (got {type(enabled).__name__})")
    _state.cache_enabled = enabled


def clear_autocast_cache() -> None:
    """Drop this thread's cached casts."""
    _state.cache.clear()


def autocast_increment_nesting() -> int:
    st = _state
    st.nesting += 1
    return st.nesting


def autocast_decrement_nesting() -> int:
    st = _state
    st.nesting -= 1
    return st.nesting


# --- casting ----------------------------------------------------------------------------------------

# Floating dtypes autocast may cast; float64 is never touched (torch's is_eligible).
_ELIGIBLE = frozenset((D.float16.np, D.bfloat16.np, D.float32.np))
_FLOAT32 = D.float32.np
_to_copy = None  # aten::_to_copy, bound when the first policy is registered (the op table is complete then)


def _cast_cached(t, to):
    """``t`` (a float32 leaf weight) cast to ``to``, from this thread's cache when still valid."""
    cache = _state.cache
    key = (id(t), to, _grad_tls.enabled)
    hit = cache.get(key)
    if hit is not None:
        ref, version, arr, casted = hit
        # the same tensor (ids are reused), no in-place update since, and no swapped .data
        vc = t._vc     # not t._version: inference tensors (weights made under inference_mode) have none
        if ref() is t and (vc[0] if vc is not None else 0) == version and t._a is arr:
            return casted
    casted = _to_copy(t, dtype=to)
    vc = t._vc
    cache[key] = (weakref.ref(t), vc[0] if vc is not None else 0, t._a, casted)
    return casted


def cached_cast(to, t, device_type: str, lower=None):
    """``t`` cast to ``to`` if autocast may cast it on ``device_type``; anything else unchanged.

    ``lower`` is the device's lower-precision dtype: casts of float32 weights to it are cached.
    """
    if not isinstance(t, Tensor):
        return t
    a = t._a
    if a.dtype not in _ELIGIBLE or a.dtype == to.np or t._device._type != device_type:
        return t
    if to is lower and a.dtype == _FLOAT32 and t._base is None and _state.cache_enabled:
        am = t._am
        if am is not None and am.requires_grad and am.grad_fn is None:
            return _cast_cached(t, to)
    return _to_copy(t, dtype=to)


def _eligible(t, device_type: str) -> bool:
    return isinstance(t, Tensor) and t._a.dtype in _ELIGIBLE and t._device._type == device_type


def _prioritize(current, t, device_type: str):
    """torch's at::autocast::prioritize: float32 wins over the lower dtype; float64 is ignored."""
    if not isinstance(t, Tensor) or t._device._type != device_type or not t.is_floating_point():
        return current
    nxt = t.dtype
    if nxt is D.float64:
        return current
    if current is D.float32 or nxt is D.float32:
        return D.float32
    if current is nxt:
        return current
    raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")


# --- cast policies (torch's CastPolicy) ----------------------------------------------------------------

def _tensor_slots(schema):
    """Positions of the positional Tensor, Tensor? and Tensor[] arguments.

    Tensor?[] (index lists) and keyword-only tensors (``out=``) are left alone, as torch's wrappers do.
    """
    slots = []
    for i, a in enumerate(schema.arguments):
        if a.kwarg_only:
            break
        if a.type.base == "Tensor" and not a.type.elem_optional:
            slots.append((i, a.type.is_list))
    return tuple(slots)


def _cast_args(args, slots, to, device_type, lower):
    """``args`` with the Tensor slots cast; ``args`` itself when nothing needed a cast (the common case)."""
    out = None
    n = len(args)
    for i, is_list in slots:
        if i >= n:
            break
        v = args[i]
        if is_list:
            if v is None:
                continue
            c = type(v)(cached_cast(to, x, device_type, lower) for x in v)
            if all(a is b for a, b in zip(c, v)):
                continue
        else:
            c = cached_cast(to, v, device_type, lower)
            if c is v:
                continue
        if out is None:
            out = list(args)
        out[i] = c
    return args if out is None else out


def _kernel(op, key, prepare, target=None):
    """The Autocast kernel of ``op``: ``prepare(args, kwargs)`` casts, then ``target`` (default ``op``)
    runs below the Autocast keys. ``key`` stays excluded meanwhile, so neither the casts nor the ops the
    kernel runs internally are autocast again."""
    bit = 1 << key
    target = target or op
    memo, resolve = target._memo, dispatcher._resolve  # OpOverload.redispatch, inlined: this runs per call
    int_and = int.__and__
    tls = dispatch_tls.tls

    def kernel(ks, *args, **kwargs):
        prev = tls.excluded
        tls.excluded = prev | bit
        try:
            args, kwargs = prepare(args, kwargs)
            below = int_and(ks, BELOW_AUTOCAST)
            fn = memo.get(below)
            if fn is None:
                fn = resolve(target, below)
            return fn(*args, **kwargs)
        finally:
            tls.excluded = prev
    return kernel


def _cast_kernel(op, key, slots, fixed=None):
    """lower_precision_fp (``fixed=None``: the autocast dtype) and fp32 (``fixed=float32``).

    The same shape as ``_kernel``, written out: these two policies serve most autocast calls, so they
    skip the ``prepare`` call and, when no Tensor slot is a list, the general ``_cast_args``.
    """
    dev, bit = _TYPE_OF_KEY[key], 1 << key
    memo, resolve = op._memo, dispatcher._resolve
    int_and = int.__and__
    tls = dispatch_tls.tls
    # positions of the Tensor slots when none is a list (nearly every op): a plain loop serves them
    plain = None if any(is_list for _, is_list in slots) else tuple(i for i, _ in slots)

    def kernel(ks, *args, **kwargs):
        prev = tls.excluded
        tls.excluded = prev | bit
        try:
            if fixed is None:
                to = lower = _state.dtype[key]
            else:
                to, lower = fixed, None  # only casts to the autocast dtype are cached
            if plain is None:
                args = _cast_args(args, slots, to, dev, lower)
            else:
                cast = None
                castable = _CASTABLE_TO[to]
                for i in plain:
                    if i < len(args):
                        v = args[i]
                        # most inputs need no cast: one set lookup decides it, without a call of cached_cast
                        a = getattr(v, "_a", None)
                        if a is None or a.dtype not in castable:
                            continue
                        c = cached_cast(to, v, dev, lower)
                        if c is not v:
                            if cast is None:
                                cast = list(args)
                            cast[i] = c
                if cast is not None:
                    args = cast
            below = int_and(ks, BELOW_AUTOCAST)
            fn = memo.get(below)
            if fn is None:
                fn = resolve(op, below)
            return fn(*args, **kwargs) if kwargs else fn(*args)
        finally:
            tls.excluded = prev
    return kernel


# autocast target dtype -> the NumPy dtypes of inputs autocast casts to it (eligible, and not already it)
_CASTABLE_TO = {d: _ELIGIBLE - {d.np} for d in (D.float16, D.bfloat16, D.float32)}


def _lower_precision_fp(op, key, slots):
    return _cast_kernel(op, key, slots)


def _fp32(op, key, slots):
    return _cast_kernel(op, key, slots, D.float32)


def _dtype_argument(schema):
    for i, a in enumerate(schema.arguments):
        if a.name == "dtype" and a.type.base == "ScalarType":
            return i, a
    raise ValueError(f"autocast policy fp32_set_opt_dtype needs a 'dtype' argument, but {schema} has none")


def _fp32_set_opt_dtype(op, key, slots):
    """Reductions like softmax and sum: when the first argument may be cast, the result is float32 unless
    the caller asked for a dtype (torch's set_opt_dtype); the input itself is not cast."""
    dev = _TYPE_OF_KEY[key]
    i, arg = _dtype_argument(op._schema)
    defaults = tuple(a.default for a in op._schema.arguments[:i])

    def prepare(args, kwargs):
        if args and _eligible(args[0], dev):
            if arg.kwarg_only:
                if kwargs.get("dtype") is None:
                    kwargs = dict(kwargs, dtype=D.float32)
            elif len(args) <= i:
                args = args + defaults[len(args):] + (D.float32,)
            elif args[i] is None:
                args = args[:i] + (D.float32,) + args[i + 1:]
        return args, kwargs
    return _kernel(op, key, prepare)


def _fp32_append_dtype(op, key, slots):
    """norm: redispatch to the overload that takes an output dtype, float32 when the input may be cast."""
    dev = _TYPE_OF_KEY[key]
    whole = op._overloadname == "Scalar"  # norm.Scalar(self, p=2) reduces every dimension

    def prepare(args, kwargs):
        self, p, dim, keepdim = (tuple(args) + (2, None, False)[len(args) - 1:])[:4]
        if whole:
            dim = list(range(self.dim()))
        out = D.float32 if _eligible(self, dev) else self.dtype
        return (self, p, dim, keepdim), {"dtype": out}
    return _kernel(op, key, prepare, dispatcher.find_op("aten::norm.ScalarOpt_dim_dtype"))


def _promote(op, key, slots):
    """Run in the widest floating dtype among the arguments (float32 if any is float32)."""
    dev = _TYPE_OF_KEY[key]

    def prepare(args, kwargs):
        lower = to = _state.dtype[key]
        n = len(args)
        for i, is_list in slots:
            if i < n:
                v = args[i]
                for x in (v if is_list and v is not None else (v,)):
                    to = _prioritize(to, x, dev)
        return _cast_args(args, slots, to, dev, lower), kwargs
    return _kernel(op, key, prepare)


def _banned(op, key, slots):
    name = op._opname

    def kernel(ks, *args, **kwargs):
        raise RuntimeError(
            f"npusim.nn.functional.{name} and npusim.nn.BCELoss are unsafe to autocast.\n"
            "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
            "In this case, combine the two layers using npusim.nn.functional.binary_cross_entropy_with_logits\n"
            "or npusim.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
            "safe to autocast.")
    return kernel


# policy name -> kernel factory(op, autocast key, tensor slots)
CAST_POLICIES = {
    "lower_precision_fp": _lower_precision_fp,
    "fp32": _fp32,
    "fp32_set_opt_dtype": _fp32_set_opt_dtype,
    "fp32_append_dtype": _fp32_append_dtype,
    "promote": _promote,
    "banned": _banned,
}


def make_autocast_kernel(op, policy: str, dispatch_key):
    """The kernel applying ``policy`` to overload ``op`` at ``dispatch_key`` (register it with_keyset=True)."""
    global _to_copy
    if _to_copy is None:
        _to_copy = dispatcher.find_op("aten::_to_copy")
    key = DispatchKey[dispatch_key] if isinstance(dispatch_key, str) else DispatchKey(dispatch_key)
    if key not in _TYPE_OF_KEY:
        raise ValueError(f"{key.name} is not an Autocast dispatch key")
    try:
        factory = CAST_POLICIES[policy]
    except KeyError:
        raise ValueError(f"unknown autocast cast policy '{policy}'; expected one of {', '.join(CAST_POLICIES)}") \
            from None
    return factory(op, key, _tensor_slots(op._schema))


def register_autocast_policies(lib, dispatch_key, policies: dict) -> list:
    """Register cast-policy kernels at ``dispatch_key`` through ``lib`` (a ``Library("aten", "IMPL")``).

    ``policies`` maps a policy name to aten overload names (``"mm"``, ``"pow.Tensor_Scalar"``), like
    torch's KERNEL_CPU / KERNEL_PRIVATEUSEONE lists. Names whose operator npusim does not define are
    skipped and returned, so one table can list all of torch's ops.
    """
    missing = []
    for policy, names in policies.items():
        for name in names:
            op = dispatcher.find_op(f"aten::{name}")
            if op is None or (policy == "fp32_append_dtype"
                              and dispatcher.find_op("aten::norm.ScalarOpt_dim_dtype") is None):
                missing.append(name)
                continue
            lib.impl(op, make_autocast_kernel(op, policy, dispatch_key), dispatch_key, with_keyset=True)
    return missing


# --- the autocast context manager -------------------------------------------------------------------------

def _device_module(name):
    root = sys.modules[__name__.split(".")[0]]
    return getattr(root, name, None)


class autocast:
    """Run a region in mixed precision: ``with npusim.autocast("npu", dtype=npusim.float16):``.

    Also a decorator. ``dtype=None`` uses ``get_autocast_dtype(device_type)`` (float16 on the npu,
    bfloat16 on the cpu); ``cache_enabled=None`` keeps the current cache setting. A dtype the device
    cannot autocast to disables autocast with a warning, as in torch. The state is per thread.
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        log_api_usage_once("npusim.autocast")
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        dev_type = _device_type(device_type, "_is_autocast_available")
        if dev_type not in _KEY_OF_TYPE:      # is_autocast_available, with the type kept for the key below
            raise RuntimeError(f"User specified an unsupported autocast device_type '{self.device}'")
        # the device's Autocast key, resolved once: __enter__ and __exit__ set the thread's state through it
        self._key_of = (device_type, _KEY_OF_TYPE[dev_type])
        supported = [D.bfloat16, D.float16]
        self.custom_backend_name = privateuse1_backend_name()
        if self.device == self.custom_backend_name:
            message = (f"Tried to use AMP with the `{self.custom_backend_name}` backend, but the backend has not "
                       "registered a module or  the module miss some necessary funcs. The backend should register "
                       "a module by `npusim._register_device_module`, and the module must have these funcs: \n"
                       "`get_amp_supported_dtype() -> List[npusim.dtype]`. \n")
            mod = _device_module(self.custom_backend_name)
            if mod is None:
                raise AssertionError(message)
            if not hasattr(mod, "get_amp_supported_dtype"):
                raise AssertionError(message + "But the func `get_amp_supported_dtype` is missing. \n")
            supported = mod.get_amp_supported_dtype()
        self._cache_enabled = _state.cache_enabled if cache_enabled is None else cache_enabled
        name = self.device if self.device == self.custom_backend_name else self.device.upper()
        if enabled:
            if dev_type == "cuda":
                # npusim has no cuda device: its accelerator is the PrivateUse1 one
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
                enabled = False
            elif self.fast_dtype not in supported:
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                              f"{name} Autocast only supports dtypes of " + ", ".join(map(str, supported))
                              + " currently.", stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        # torch's type errors, raised before any state changes so that the thread is left as it was
        if not isinstance(self._enabled, bool):
            raise TypeError(f"set_autocast_enabled(): argument 'enabled' (position 2) must be bool, not "
                            f"{type(self._enabled).__name__}")
        if not isinstance(self.fast_dtype, D.dtype):
            raise TypeError(f"set_autocast_dtype(): argument 'dtype' (position 2) must be npusim.dtype, not "
                            f"{type(self.fast_dtype).__name__}")
        if not isinstance(self._cache_enabled, bool):
            raise TypeError(f"enabled must be a bool (got {type(self._cache_enabled).__name__})")
        # is_autocast_enabled, set_autocast_enabled / _dtype / _cache_enabled and the nesting count, written out
        # on the key: a region costs a few frames, not ~40 (training loops enter one, enabled or not, per step)
        device_type, key = self._key_of
        if self.device is not device_type:
            key = self._autocast_key()
        bit = 1 << key
        st, t = _state, dispatch_tls.tls
        self.prev_cache_enabled = st.cache_enabled
        self.prev = bool(t.autocast & bit) and not t.excluded & bit
        self.prev_fastdtype = st.dtype[key]
        if bool(t.autocast & bit) is not self._enabled:
            _set_enabled(key, self._enabled)
        st.dtype[key] = self.fast_dtype
        st.nesting += 1
        st.cache_enabled = self._cache_enabled
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        st = _state
        device_type, key = self._key_of
        if self.device is not device_type:
            key = self._autocast_key()
        # leaving the outermost region drops the cached casts, so none outlive the forward pass
        st.nesting -= 1
        if st.nesting == 0:
            st.cache.clear()
        if bool(dispatch_tls.tls.autocast & (1 << key)) is not self.prev:
            _set_enabled(key, self.prev)
        st.dtype[key] = self.prev_fastdtype
        st.cache_enabled = self.prev_cache_enabled
        return False

    def _autocast_key(self) -> DispatchKey:
        """The Autocast key of ``self.device``, resolved again: the attribute was changed since __init__."""
        key = _key(self.device, "set_autocast_enabled")
        self._key_of = (self.device, key)
        return key

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                            "Did you mean to use autocast as a context manager? For example:\n"
                            "    with npusim.autocast(device_type=...):\n"
                            "        output = model(input)")
        return autocast_decorator(self, func)


def autocast_decorator(autocast_instance, func):
    @functools.wraps(func)
    def decorate_autocast(*args, **kwargs):
        # a copy per call: the saved previous state must not be shared by recursive or concurrent calls
        with copy.copy(autocast_instance):
            return func(*args, **kwargs)
    return decorate_autocast
