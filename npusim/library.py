"""``npusim.library``: define operators and register kernels (torch.library's API)."""
from .core.dispatch_keys import DispatchKey, DispatchKeySet  # noqa: F401
from .core.dispatch_tls import _ExcludeDispatchKeyGuard, _IncludeDispatchKeyGuard  # noqa: F401
from .core.library import Library, define, fallthrough_kernel, impl  # noqa: F401

__all__ = ["Library", "fallthrough_kernel", "define", "impl", "DispatchKey", "DispatchKeySet"]
