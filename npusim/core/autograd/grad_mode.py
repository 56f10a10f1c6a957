"""Grad modes, per thread: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

Each is a context manager and a decorator (of functions and generator
functions); ``no_grad``, ``enable_grad`` and ``inference_mode`` also decorate
without parentheses (``@no_grad``), as torch's do.
"""
from __future__ import annotations

import functools
import inspect
import threading

from .. import inference_tensors as _inference_tensors
from .. import tensor as _tensor


class _GradTLS(threading.local):
    enabled = True
    inference = False


tls = _GradTLS()
_inference_tensors.grad_tls = tls
_contexts_lock = threading.Lock()


def is_grad_enabled() -> bool:
    return tls.enabled


def is_inference_mode_enabled() -> bool:
    return tls.inference


class _DecoratorContextManager:
    """A context manager that is also a decorator (for functions and generators)."""

    def __call__(self, fn):
        if inspect.isgeneratorfunction(fn):
            return self._wrap_generator(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def _wrap_generator(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            gen = fn(*args, **kwargs)
            # the mode holds while the generator runs, not while its caller does
            try:
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as exc:   # noqa: B036 - thrown into the generator, passed on
                        with self.clone():
                            response = gen.throw(exc)
                    else:
                        with self.clone():
                            response = gen.send(request)
            except StopIteration as stop:
                return stop.value
        return wrapper

    def clone(self):
        return self.__class__()


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """Also usable as a bare decorator: ``@no_grad`` means ``@no_grad()``."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class _GradModeSetter(_NoParamDecoratorContextManager):
    """Sets grad mode to ``_mode`` in this thread for the block, then restores it."""

    def __init__(self) -> None:
        self.prev = None

    def __enter__(self):
        self.prev = tls.enabled
        tls.enabled = self._mode
        return None

    def __exit__(self, *exc):
        tls.enabled = self.prev
        return False


class no_grad(_GradModeSetter):
    """Disable gradient recording in this thread."""

    _mode = False


class enable_grad(_GradModeSetter):
    """Enable gradient recording in this thread (inside no_grad, for example)."""

    _mode = True


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode now; as a context manager, restore it on exit."""

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'enabled' (position 1) must be bool, not "
                            f"{type(mode).__name__}")
        self.prev = tls.enabled
        self.mode = mode
        tls.enabled = mode

    def __call__(self, fn):
        tls.enabled = self.prev   # as a decorator it changes nothing until the function runs
        return super().__call__(fn)

    def __enter__(self):
        tls.enabled = self.mode
        return None

    def __exit__(self, *exc):
        tls.enabled = self.prev
        return False

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """No gradients recorded (like no_grad); ``inference_mode(False)`` turns inference mode off, grad mode kept."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)   # @inference_mode without parentheses

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode
        self.prev = None

    def __enter__(self):
        self.prev = (tls.enabled, tls.inference)
        with _contexts_lock:     # counted first: a tensor made from now on in this thread is an inference tensor
            _tensor.inference_contexts_changed(1)
        if self.mode:
            tls.enabled = False
            tls.inference = True
        else:
            tls.inference = False
        return None

    def __exit__(self, *exc):
        tls.enabled, tls.inference = self.prev
        with _contexts_lock:
            _tensor.inference_contexts_changed(-1)
        return False

    def clone(self):
        return self.__class__(self.mode)
