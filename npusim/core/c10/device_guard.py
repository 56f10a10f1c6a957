"""Device guards: what a backend registers to switch devices and streams, and the guards built on it.

This is PyTorch's ``c10::impl::DeviceGuardImplInterface`` with its registry
(``C10_REGISTER_GUARD_IMPL``) and the RAII guards written as context managers:
``DeviceGuard``, ``OptionalDeviceGuard``, ``StreamGuard`` and ``OptionalStreamGuard``.

The dispatcher wraps each kernel served for a multi-device backend key
(PrivateUse1) so the kernel runs with the current device set to the device of
its inputs, as torch's generated kernel wrappers do. The wrapper is generated
per operator from its schema; when the inputs are already on the current
device (the common case) it costs one extra call and one comparison. A backend
spares its own device-generic kernels even that (``kernel_needs_guard``).
"""
from __future__ import annotations

import itertools
import threading
import weakref

from . import codegen
from .device import CPU, PRIVATEUSE1, device, privateuse1_backend_name

__all__ = ["DeviceGuardImplInterface", "register_guard_impl", "get_guard_impl", "has_guard_impl", "DeviceGuard",
           "OptionalDeviceGuard", "StreamGuard", "OptionalStreamGuard", "guard_kernel"]


def _type_name(typ: str) -> str:
    return privateuse1_backend_name() if typ == PRIVATEUSE1 else typ


class DeviceGuardImplInterface:
    """Device and stream switching for one device type (torch's DeviceGuardImplInterface).

    Devices are ``npusim.device`` objects, streams are ``npusim.Stream`` objects;
    events are opaque handles the implementation creates on first ``record_event``.
    The defaults describe a backend without streams or events and raise torch's errors.
    """

    def type(self) -> str:
        """The device type served, as ``npusim.device(...).type`` names it."""
        raise NotImplementedError

    # --- devices ------------------------------------------------------------------------------------
    def exchange_device(self, d: device) -> device:
        """Set the current device to ``d``; return the previous one."""
        old = self.get_device()
        if old is not d:
            self.set_device(d)
        return old

    def get_device(self) -> device:
        raise NotImplementedError

    def set_device(self, d: device) -> None:
        raise NotImplementedError

    def unchecked_set_device(self, d: device) -> None:
        """Set the device without validating it (used to restore a device that was valid)."""
        self.set_device(d)

    def device_count(self) -> int:
        raise NotImplementedError

    def current_index(self) -> int:
        """The current device's index: the dispatcher's per-call question, so make it cheap."""
        return self.get_device().index

    def launch_blocking(self) -> bool:
        """Whether every op must finish before it returns (the dispatcher then synchronizes after it)."""
        return False

    def kernel_needs_guard(self, kernel) -> bool:
        """Whether the dispatcher must run ``kernel`` with its inputs' device current.

        A backend may answer False for kernels that never consult the current
        device (they take it from their inputs), sparing them the check.
        """
        return True

    # --- streams ---------------------------------------------------------------------------------------
    def get_stream(self, d: device):
        """The current stream of device ``d``."""
        raise NotImplementedError

    def get_default_stream(self, d: device):
        raise RuntimeError("Backend doesn't support acquiring a default stream.")

    def get_stream_from_global_pool(self, d: device, is_high_priority: bool = False):
        raise RuntimeError("Backend doesn't support acquiring a stream from pool.")

    def get_new_stream(self, d: device, priority: int = 0):
        raise RuntimeError("Backend doesn't support create a new Stream.")

    def exchange_stream(self, s):
        """Make ``s`` the current stream of its device (the current device is unchanged); return the old one."""
        raise NotImplementedError

    def query_stream(self, s) -> bool:
        raise RuntimeError("Backend doesn't support querying streams.")

    def synchronize_stream(self, s) -> None:
        raise RuntimeError("Backend doesn't support synchronizing streams.")

    def synchronize_device(self, device_index: int) -> None:
        raise RuntimeError("Backend doesn't support synchronizing all streams on device.")

    # --- events -----------------------------------------------------------------------------------------
    def record_event(self, event, stream, device_index, enable_timing: bool):
        """Record ``event`` (None: create it) on ``stream``; return the event handle.

        ``device_index`` is the device the event was first recorded on (-1: never),
        and a stream of another device is an error, as in torch.
        """
        raise RuntimeError("Backend doesn't support events.")

    def block(self, event, stream) -> None:
        """Make future work on ``stream`` wait for ``event``."""
        raise RuntimeError("Backend doesn't support events.")

    def query_event(self, event) -> bool:
        raise RuntimeError("Backend doesn't support events.")

    def synchronize_event(self, event) -> None:
        raise RuntimeError("Backend doesn't support synchronizing events.")

    def destroy_event(self, event, device_index: int) -> None:
        """Release an event handle (nothing to do by default)."""

    def elapsed_time(self, event1, event2, device_index: int) -> float:
        """Milliseconds from ``event1`` to ``event2``."""
        raise RuntimeError("Backend doesn't support elapsedTime.")


class _CpuGuardImpl(DeviceGuardImplInterface):
    """The cpu has one device and one stream, and no events (torch's NoOpDeviceGuardImpl)."""

    def type(self) -> str:
        return "cpu"

    def get_device(self) -> device:
        return CPU

    def set_device(self, d) -> None:
        pass

    def exchange_device(self, d) -> device:
        return CPU

    def device_count(self) -> int:
        return 1

    def current_index(self):
        return None

    def _stream(self):
        from .stream import Stream
        return Stream(stream_id=0, device_index=-1, device_type=0)

    def get_stream(self, d):
        return self._stream()

    def get_default_stream(self, d):
        return self._stream()

    def get_stream_from_global_pool(self, d, is_high_priority=False):
        return self._stream()

    def get_new_stream(self, d, priority=0):
        return self._stream()

    def exchange_stream(self, s):
        return self._stream()

    def query_stream(self, s) -> bool:
        return True

    def synchronize_stream(self, s) -> None:
        pass

    def synchronize_device(self, device_index) -> None:
        pass

    def record_event(self, event, stream, device_index, enable_timing):
        raise RuntimeError("cpu backend doesn't support events.")

    def block(self, event, stream) -> None:
        raise RuntimeError("cpu backend doesn't support events.")

    def query_event(self, event) -> bool:
        raise RuntimeError("cpu backend doesn't support events.")


_IMPLS: dict = {"cpu": _CpuGuardImpl()}
_lock = threading.Lock()
_on_register: list = []


def register_guard_impl(device_type: str, impl: DeviceGuardImplInterface) -> None:
    """Register ``impl`` for ``device_type`` (once per type), as ``C10_REGISTER_GUARD_IMPL`` does."""
    if not isinstance(impl, DeviceGuardImplInterface):
        raise TypeError(f"register_guard_impl expects a DeviceGuardImplInterface, got {type(impl).__name__}")
    typ = device(device_type)._type
    with _lock:
        if typ in _IMPLS:
            raise RuntimeError(f"A device guard implementation is already registered for device type "
                               f"'{_type_name(typ)}'")
        _IMPLS[typ] = impl
    for hook in _on_register:
        hook()


def on_register(hook) -> None:
    """Call ``hook()`` after each registration (the dispatcher drops kernels it resolved without a guard)."""
    _on_register.append(hook)


def get_guard_impl(device_type) -> DeviceGuardImplInterface:
    """The implementation registered for a device type (a name, or a device)."""
    typ = device_type._type if isinstance(device_type, device) else device(device_type)._type
    impl = _IMPLS.get(typ)
    if impl is None:
        raise RuntimeError(f"npusim is not linked with support for {_type_name(typ)} devices")
    return impl


def has_guard_impl(device_type) -> bool:
    typ = device_type._type if isinstance(device_type, device) else device(device_type)._type
    return typ in _IMPLS


def _full(d: device, impl) -> device:
    """``d`` with its index filled in from the current device."""
    return d if d.index is not None else impl.get_device()


# --- guards ---------------------------------------------------------------------------------------------

class DeviceGuard:
    """``with DeviceGuard(d):`` runs the block with ``d`` current; the previous device comes back on exit,
    also when the block raises."""

    __slots__ = ("_impl", "_target", "_original", "_current")

    def __init__(self, d):
        d = device(d)
        self._impl = get_guard_impl(d)
        self._target = d
        self._original = None
        self._current = None

    def __enter__(self):
        impl = self._impl
        target = _full(self._target, impl)
        self._original = impl.exchange_device(target)
        self._current = target
        return self

    def __exit__(self, *exc):
        self._impl.unchecked_set_device(self._original)
        return False

    def set_device(self, d) -> None:
        """Switch to another device of the same type inside the block (restored on exit as well)."""
        d = device(d)
        if d._type != self._current._type:
            raise RuntimeError(f"DeviceGuard can only switch between devices of type {self._current.type}, "
                               f"got {d}")
        d = _full(d, self._impl)
        self._impl.set_device(d)
        self._current = d

    reset_device = set_device

    def set_index(self, index: int) -> None:
        self.set_device(device(self._current.type, index))

    def original_device(self):
        return self._original

    def current_device(self):
        return self._current


class OptionalDeviceGuard:
    """A DeviceGuard that does nothing for ``None`` (or until ``reset_device`` gives it a device)."""

    __slots__ = ("_initial", "_guard")

    def __init__(self, d=None):
        self._initial = None if d is None else device(d)
        self._guard = None

    def __enter__(self):
        if self._initial is not None:
            self._guard = DeviceGuard(self._initial).__enter__()
        return self

    def __exit__(self, *exc):
        if self._guard is not None:
            self._guard.__exit__(*exc)
            self._guard = None
        return False

    def reset_device(self, d) -> None:
        if self._guard is None:
            self._guard = DeviceGuard(d).__enter__()
        else:
            self._guard.set_device(d)

    set_device = reset_device

    def original_device(self):
        return None if self._guard is None else self._guard.original_device()

    def current_device(self):
        return None if self._guard is None else self._guard.current_device()


class StreamGuard:
    """``with StreamGuard(s):`` makes ``s``'s device current and ``s`` the current stream on it; on exit the
    original stream of that device and the original device come back (torch's StreamGuard)."""

    __slots__ = ("_stream", "_impl", "_original_device", "_original_stream", "_current")

    def __init__(self, stream):
        self._stream = stream
        self._impl = get_guard_impl(stream.device)
        self._original_device = None
        self._original_stream = None
        self._current = None

    def __enter__(self):
        impl, s = self._impl, self._stream
        self._original_device = impl.exchange_device(s.device)
        self._original_stream = impl.exchange_stream(s)
        self._current = s
        return self

    def __exit__(self, *exc):
        impl = self._impl
        impl.exchange_stream(self._original_stream)
        impl.unchecked_set_device(self._original_device)
        return False

    def reset_stream(self, stream) -> None:
        """Switch to another stream inside the block (its device becomes current too)."""
        impl = self._impl
        if stream.device is not self._current.device:
            impl.exchange_stream(self._original_stream)
            impl.set_device(stream.device)
            self._original_stream = impl.exchange_stream(stream)
        else:
            impl.exchange_stream(stream)
        self._current = stream

    def original_stream(self):
        return self._original_stream

    def current_stream(self):
        return self._current

    def original_device(self):
        return self._original_device

    def current_device(self):
        return self._current.device


class OptionalStreamGuard:
    """A StreamGuard that does nothing for ``None``."""

    __slots__ = ("_stream", "_guard")

    def __init__(self, stream=None):
        self._stream = stream
        self._guard = None

    def __enter__(self):
        if self._stream is not None:
            self._guard = StreamGuard(self._stream).__enter__()
        return self

    def __exit__(self, *exc):
        if self._guard is not None:
            self._guard.__exit__(*exc)
            self._guard = None
        return False

    def original_stream(self):
        return None if self._guard is None else self._guard.original_stream()

    def current_stream(self):
        return None if self._guard is None else self._guard.current_stream()


# --- the dispatcher's kernel wrapper ---------------------------------------------------------------------

def _device_index_of(value, typ):
    """The index of ``value``'s device if it is a tensor (or list of tensors) or device of type ``typ``."""
    d = getattr(value, "_device", None)
    if d is None:
        if isinstance(value, (list, tuple)):
            for v in value:
                d = getattr(v, "_device", None)
                if d is not None and d._type == typ:
                    return d.index
            return None
        if isinstance(value, (str, device)):
            try:
                d = device(value)
            except RuntimeError:
                return None
        else:
            return None
    return d.index if d._type == typ else None


def _call_index(typ, args, kwargs):
    """The device an op call runs on: the first tensor (or device argument) of type ``typ``, as torch picks."""
    for v in itertools.chain(args, kwargs.values()):
        i = _device_index_of(v, typ)
        if i is not None:
            return i
    return None


class _Devices(dict):
    """index -> device of one type, made once (the switch path runs per op)."""

    def __init__(self, typ):
        super().__init__()
        self.typ = typ

    def __missing__(self, index):
        d = self[index] = device(self.typ, index)
        return d


def _run_on(impl, devices, index, fn, args, kwargs):
    """Call ``fn`` with device ``index`` current, restoring the previous device after (also on error).

    The index comes from an input tensor or from a device argument the dispatcher
    already resolved, so it is valid: the unchecked setter is enough.
    """
    prev = impl.current_index()
    impl.unchecked_set_device(devices[index])
    try:
        return fn(*args, **kwargs)
    finally:
        impl.unchecked_set_device(devices[prev])


def _after_blocking(impl, typ):
    """Wait for the op's device's current stream (``index`` None: the current device)."""
    def sync(index):
        d = impl.get_device() if index is None else device(typ, index)
        impl.synchronize_stream(impl.get_stream(d))
    return sync


def _wrapper_factory(op, typ):
    """``make(fn, impl) -> guarded fn`` with the operator's own signature; the source is compiled once per signature
    (``codegen.source_of(op.name_)`` shows it) and each operator's wrappers carry its name in their file name."""
    schema = op._schema
    sig = codegen.Signature.of_schema(schema, schema_keys=False)
    # helper and local names no parameter shadows
    fn_, cur, switch, slow, sync, i, r = map(sig.fresh, ("_fn", "_cur", "_switch", "_slow", "_sync", "_i", "_r"))
    first = next(((p.name, a.type) for p, a in zip(sig.params, schema.arguments) if a.type.base == "Tensor"), None)
    device_arg = next((p.name for p, a in zip(sig.params, schema.arguments) if a.type.base == "Device"), None)
    args_tuple, kw_dict, call = sig.args_tuple, sig.kwargs_dict, sig.call
    if first is None:
        lookup = [f"{i} = None"]
    else:
        # the first tensor decides, as torch's device_of(self); a number or a cpu tensor there: look further
        attr = f"{first[0]}[0]._device.index" if first[1].is_list else f"{first[0]}._device.index"
        lookup = ["try:", f"    {i} = {attr}", "except (AttributeError, IndexError, TypeError):", f"    {i} = None",
                  f"if {i} is None:", f"    {i} = {slow}({args_tuple}, {kw_dict})"]
    if device_arg is not None:
        # an op that creates a tensor runs on the device it creates it on (torch's
        # DeviceGuard(device_or_default(device))); without a device argument, the tensors decide
        lookup = [f"{i} = {slow}(({device_arg},), {{}}) if {device_arg} is not None else None",
                  f"if {i} is None:"] + ["    " + line for line in lookup]
    plain = lookup + [f"if {i} is None or {i} == {cur}():", f"    return {fn_}({call})",
                      f"return {switch}({i}, {fn_}, {args_tuple}, {kw_dict})"]
    blocking = lookup + [
        f"if {i} is None or {i} == {cur}():",
        f"    {r} = {fn_}({call})",
        "else:",
        f"    {r} = {switch}({i}, {fn_}, {args_tuple}, {kw_dict})",
        f"{sync}({i})",
        f"return {r}",
    ]
    src = (f"def _make({fn_}, {cur}, {switch}, {slow}, {sync}, {', '.join(sig.defaults)}):\n"
           f"    def guarded({sig.parameters}):\n" + codegen.indent(plain, 2)
           + f"    def guarded_blocking({sig.parameters}):\n" + codegen.indent(blocking, 2)
           + f"    return guarded_blocking if {sync} is not None else guarded\n")
    make = codegen.compile_function(src, codegen.DEVICE_GUARD)
    name = f"{schema.name}_device_guard"
    # the template's two functions' code -> this operator's (file name "<device guard aten::add.Tensor #N>")
    named = {c: codegen.named_code(c, codegen.DEVICE_GUARD, op.name_, name) for c in codegen.inner_codes(make)}

    devices = _Devices(typ)

    def factory(fn, impl):
        def switch(i, f, args, kwargs):
            return _run_on(impl, devices, i, f, args, kwargs)
        sync = _after_blocking(impl, typ) if impl.launch_blocking() else None
        guarded = make(fn, impl.current_index, switch, lambda a, k: _call_index(typ, a, k), sync, **sig.defaults)
        guarded.__code__ = named[guarded.__code__]
        guarded.__name__ = guarded.__qualname__ = name
        guarded.__wrapped__ = fn
        return guarded
    return factory


_factories = weakref.WeakKeyDictionary()   # operator -> {device type: wrapper factory}


def guard_kernel(op, typ: str, fn, kernel=None):
    """``fn`` (serving ``kernel``) wrapped so it runs on its inputs' device of type ``typ``.

    Unchanged if ``typ`` has no guard implementation or the implementation says
    ``kernel`` does not depend on the current device.
    """
    impl = _IMPLS.get(typ)
    if impl is None or typ == "cpu" or not impl.kernel_needs_guard(fn if kernel is None else kernel):
        return fn
    return guard_factory(op, typ)(fn, impl)


def generate_guards(op) -> None:
    """Generate ``op``'s device-guard wrappers for every device type with a guard (to show their source)."""
    for typ in list(_IMPLS):
        if typ != "cpu":
            guard_factory(op, typ)


def guard_factory(op, typ: str):
    """``factory(fn, impl) -> guarded fn`` for ``op`` on devices of type ``typ``, generated once."""
    per_type = _factories.setdefault(op, {})
    factory = per_type.get(typ)
    if factory is None:
        factory = per_type[typ] = _wrapper_factory(op, typ)
    return factory
