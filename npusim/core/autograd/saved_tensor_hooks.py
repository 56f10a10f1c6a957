"""Saved-tensor hooks, per thread: what ``autograd.graph.saved_tensors_hooks`` installs.

While a pair is installed, every tensor an op saves for backward is handed to ``pack_hook`` (with grad mode
off) and only what it returns is kept; backward hands that to ``unpack_hook`` and uses the tensor it returns
(torch's ``SavedVariable`` with hooks). The innermost pair wins. Nothing is version-checked through hooks:
the hooks own the data. ``disable_saved_tensors_hooks`` makes installing a pair an error with its message.
"""
from __future__ import annotations

import threading


class _HooksTLS(threading.local):
    stack = ()                  # ((pack_hook, unpack_hook), ...), innermost last
    disabled_message = None     # str while disable_saved_tensors_hooks is active


tls = _HooksTLS()


def current():
    """The innermost ``(pack_hook, unpack_hook)`` pair of this thread, or None."""
    stack = tls.stack
    return stack[-1] if stack else None


def push(pack_hook, unpack_hook) -> None:
    if tls.disabled_message is not None:
        raise RuntimeError(tls.disabled_message)
    tls.stack = tls.stack + ((pack_hook, unpack_hook),)


def pop() -> None:
    tls.stack = tls.stack[:-1]


def set_disabled(message):
    """Install ``message`` (None enables the hooks again); returns the message it replaces."""
    prev, tls.disabled_message = tls.disabled_message, message
    return prev


def capture():
    """This thread's hooks and disabled message, for a task forked to another thread."""
    return tls.stack, tls.disabled_message


def restore(value):
    prev = capture()
    tls.stack, tls.disabled_message = value
    return prev
