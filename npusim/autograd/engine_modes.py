"""torch.autograd's engine switches: ``set_multithreading_enabled`` / ``is_multithreading_enabled``,
``enforce_grad_layout_policy`` and ``is_view_replay_enabled``.

npusim's engine runs every backward pass in the calling thread (it has no per-device worker threads), which is
what torch does with multithreading disabled; the switch is kept per thread and read back, as torch's, and changes
nothing here. Views are never replayed (a view's base and geometry are kept instead), so ``is_view_replay_enabled``
is False, torch's default.
"""
from __future__ import annotations

import builtins
import threading

from ..core.autograd import layout_policy as _layout_policy
from ..core.autograd.grad_mode import _DecoratorContextManager


class _EngineTLS(threading.local):
    def __init__(self):
        self.multithreading = True


_tls = _EngineTLS()


def is_multithreading_enabled() -> builtins.bool:
    """Whether multithreaded backward is enabled for this thread (True unless switched off)."""
    return _tls.multithreading


class set_multithreading_enabled(_DecoratorContextManager):  # noqa: N801 - torch's name
    """Enable or disable multithreaded backward for this thread, now; as a context manager or decorator, restore
    the previous setting on exit. npusim's backward always runs in the calling thread, so it only records the
    setting."""

    def __init__(self, mode: builtins.bool) -> None:
        self.prev = _tls.multithreading
        _tls.multithreading = mode
        self.mode = mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        _tls.multithreading = self.prev

    def clone(self) -> "set_multithreading_enabled":
        return self.__class__(self.mode)


class enforce_grad_layout_policy(_DecoratorContextManager):  # noqa: N801 - torch's name
    """Hold leaves' first gradients to the gradient layout contract (``True``, the default) or relax it (``False``)
    for this thread, now; as a context manager or decorator, restore the previous setting on exit.

    The contract: a leaf's gradient has the leaf's strides when the leaf is dense but not row-major (a permuted or
    channels_last parameter), so the engine copies a gradient that comes in another layout. Relaxed, a gradient
    nothing else refers to is kept in the layout it came in (no copy); one that must be copied still takes the
    leaf's layout.
    """

    def __init__(self, enable: bool = True) -> None:
        self.prev = _layout_policy.tls.enforced
        _layout_policy.tls.enforced = enable
        self.mode = enable

    def __call__(self, orig_func):
        _layout_policy.tls.enforced = self.prev          # as a decorator it applies per call, not from now on
        return super().__call__(orig_func)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        _layout_policy.tls.enforced = self.prev

    def clone(self) -> "enforce_grad_layout_policy":
        return self.__class__(self.mode)


def is_view_replay_enabled() -> builtins.bool:
    """Whether views are rebuilt by replaying their view ops: never here (False, torch's default)."""
    return False


__all__ = ["is_multithreading_enabled", "set_multithreading_enabled", "enforce_grad_layout_policy",
           "is_view_replay_enabled"]
