"""Grad modes, per thread: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``."""
from __future__ import annotations

import functools
import threading


class _GradTLS(threading.local):
    enabled = True
    inference = False


tls = _GradTLS()


def is_grad_enabled() -> bool:
    return tls.enabled


def is_inference_mode_enabled() -> bool:
    return tls.inference


class _DecoratorContextManager:
    """A context manager that is also a decorator (for functions and generators)."""

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        return self.__class__()


class no_grad(_DecoratorContextManager):
    """Disable gradient recording in this thread."""

    def __init__(self):
        self.prev = None

    def __enter__(self):
        self.prev = tls.enabled
        tls.enabled = False
        return None

    def __exit__(self, *exc):
        tls.enabled = self.prev
        return False


class enable_grad(_DecoratorContextManager):
    """Enable gradient recording in this thread (inside no_grad, for example)."""

    def __init__(self):
        self.prev = None

    def __enter__(self):
        self.prev = tls.enabled
        tls.enabled = True
        return None

    def __exit__(self, *exc):
        tls.enabled = self.prev
        return False


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode now; as a context manager, restore it on exit."""

    def __init__(self, mode: bool):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'mode' must be bool, not {type(mode).__name__}")
        self.prev = tls.enabled
        self.mode = mode
        tls.enabled = mode

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        tls.enabled = self.prev
        return False

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """No gradients, and tensors made inside are inference tensors (not usable by autograd later)."""

    def __init__(self, mode: bool = True):
        self.mode = mode
        self.prev = None

    def __enter__(self):
        self.prev = (tls.enabled, tls.inference)
        if self.mode:
            tls.enabled = False
            tls.inference = True
        return None

    def __exit__(self, *exc):
        tls.enabled, tls.inference = self.prev
        return False

    def clone(self):
        return self.__class__(self.mode)
