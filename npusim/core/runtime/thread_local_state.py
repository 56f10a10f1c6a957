"""Capture a thread's profiling state and install it in another (at::ThreadLocalState).

A task forked to another thread (``npusim.jit.fork``) should see what its parent
saw: the debug info set by ``DebugInfoGuard``, the thread-local op callbacks
(a running ``npusim.profiler.profile``) and whether callbacks are enabled::

    state = capture_thread_local_state()          # in the forking thread
    ...
    with ThreadLocalStateGuard(state):            # in the worker, around the task
        task()

Beyond those two, each subsystem whose per-thread state a task must see
registers a capture/restore pair with ``register_thread_local``: grad and
inference mode, the thread-local dispatch key sets, autocast, saved-tensor hooks
and the current device of the PrivateUse1 backend are registered below.
"""
from __future__ import annotations

from ..dispatch import dispatch_tls, record_function
from ..autograd import grad_mode as _grad_mode
from ..autograd import saved_tensor_hooks as _saved_tensor_hooks
from ..dispatch.debug_info import ThreadLocalDebugInfo
from ..c10.device import PRIVATEUSE1, device, privateuse1_backend_name
from ..c10.device_guard import get_guard_impl
from ..c10.device_hooks import get_device_hooks


class ThreadLocalState:
    """A snapshot of one thread's debug info, record-function state and registered states; immutable."""

    __slots__ = ("debug_info", "record_function", "registered")

    def __init__(self, debug_info, record_function_state, registered=()):
        self.debug_info = debug_info
        self.record_function = record_function_state
        self.registered = registered   # ((restore, value), ...) of the register_thread_local entries


_REGISTERED: list = []   # (name, capture, restore), in registration order


def register_thread_local(name: str, capture, restore) -> None:
    """Carry one more piece of per-thread state into forked tasks.

    ``capture()`` reads it in the forking thread; ``restore(value)`` installs a
    captured value in the current thread and returns the value it replaced (which
    is later handed back to ``restore`` to put things back).
    """
    if any(entry[0] == name for entry in _REGISTERED):
        raise RuntimeError(f"thread-local state '{name}' is already registered")
    _REGISTERED.append((name, capture, restore))


def capture_thread_local_state() -> ThreadLocalState:
    """This thread's state, to hand to a task that will run in another thread."""
    registered = tuple((restore, capture()) for _, capture, restore in _REGISTERED)
    return ThreadLocalState(ThreadLocalDebugInfo.current(), record_function._capture(), registered)


def restore_thread_local_state(state: ThreadLocalState) -> ThreadLocalState:
    """Install ``state`` in this thread; returns the state it replaces (restore that afterwards)."""
    if not isinstance(state, ThreadLocalState):
        raise TypeError(f"expected a ThreadLocalState from capture_thread_local_state(), got "
                        f"{type(state).__name__}")
    prev_rf = record_function._restore(state.record_function)
    prev_debug = ThreadLocalDebugInfo._forceCurrentDebugInfo(state.debug_info)
    prev = tuple((restore, restore(value)) for restore, value in state.registered)
    return ThreadLocalState(prev_debug, prev_rf, prev)


class ThreadLocalStateGuard:
    """Run a block with ``state`` installed, then put this thread's own state back."""

    __slots__ = ("_state", "_prev")

    def __init__(self, state: ThreadLocalState):
        self._state = state
        self._prev = None

    def __enter__(self):
        self._prev = restore_thread_local_state(self._state)
        return self

    def __exit__(self, *exc):
        restore_thread_local_state(self._prev)
        self._prev = None
        return False


# --- the framework's own per-thread state ---------------------------------------------------------------

def _capture_grad_mode():
    t = _grad_mode.tls
    return t.enabled, t.inference


def _restore_grad_mode(value):
    t = _grad_mode.tls
    prev = t.enabled, t.inference
    t.enabled, t.inference = value
    return prev


def _capture_dispatch_keys():
    t = dispatch_tls.tls
    return t.included, t.excluded


def _restore_dispatch_keys(value):
    """Install included/excluded key sets; a thread with any set holds one reason for the slow dispatch path."""
    t = dispatch_tls.tls
    prev = t.included, t.excluded
    if value != prev:
        t.included, t.excluded = value
        had, has = prev != (0, 0), value != (0, 0)
        if has and not had:
            dispatch_tls.enter_slow()
        elif had and not has:
            dispatch_tls.exit_slow()
    return prev


_autocast_module = None


def _autocast():
    """autocast_state, imported on first use (it needs the whole tensor machinery)."""
    global _autocast_module
    if _autocast_module is None:
        from ..autocast import state as autocast_state
        _autocast_module = autocast_state
    return _autocast_module


def _capture_autocast():
    """Per device type (enabled, dtype) and whether the cache is on, read through autocast's public functions.

    Whether any type is enabled is one bit field; only then is each type asked."""
    A = _autocast()
    types = ("cpu", "cuda", privateuse1_backend_name())
    enabled = tuple(A.is_autocast_enabled(t) for t in types) if dispatch_tls.tls.autocast else (False,) * 3
    return types, enabled, tuple(A.get_autocast_dtype(t) for t in types), A.is_autocast_cache_enabled()


def _restore_autocast(value):
    prev = _capture_autocast()
    if value != prev:
        A = _autocast()
        types, enabled, dtypes, cache = value
        for t, on, dt in zip(types, enabled, dtypes):
            A.set_autocast_dtype(t, dt)
            A.set_autocast_enabled(t, on)
        A.set_autocast_cache_enabled(cache)
    return prev


def _capture_current_device():
    """The PrivateUse1 backend's current device index in this thread, asked through its hooks (None: no backend)."""
    hooks = get_device_hooks(PRIVATEUSE1)
    return None if hooks is None else hooks.current_device()


def _restore_current_device(index):
    prev = _capture_current_device()
    if index is not None and prev is not None and index != prev:
        get_guard_impl(PRIVATEUSE1).unchecked_set_device(device(privateuse1_backend_name(), index))
    return prev


register_thread_local("grad_mode", _capture_grad_mode, _restore_grad_mode)
register_thread_local("dispatch_keys", _capture_dispatch_keys, _restore_dispatch_keys)
register_thread_local("autocast", _capture_autocast, _restore_autocast)
register_thread_local("saved_tensors_hooks", _saved_tensor_hooks.capture, _saved_tensor_hooks.restore)
register_thread_local("current_device", _capture_current_device, _restore_current_device)
