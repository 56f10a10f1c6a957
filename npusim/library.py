"""``npusim.library``: define operators and register kernels (torch.library's API).

The dispatch-key names torch keeps in ``torch._C`` live here too: ``DispatchKey``,
``DispatchKeySet``, the thread-local ``_IncludeDispatchKeyGuard`` /
``_ExcludeDispatchKeyGuard`` and the sets a kernel redispatches to
(``_after_autograd_keyset``, ``_after_autocast_keyset``).

``generated_source("aten::add.Tensor")`` returns the Python source npusim generated for an operator (its
dispatch function, device guard and capacity check), the lines its tracebacks and debuggers show.
"""
from .core.c10.dispatch_keys import (  # noqa: F401
    DispatchKey, DispatchKeySet, _after_autocast_keyset, _after_autograd_keyset,
)
from .core.dispatch.dispatch_tls import (  # noqa: F401
    _dispatch_tls_local_exclude_set, _dispatch_tls_local_include_set, _ExcludeDispatchKeyGuard,
    _IncludeDispatchKeyGuard,
)
from .core.dispatch.dispatcher import generated_source  # noqa: F401
from .core.dispatch.library import Library, define, fallthrough_kernel, impl  # noqa: F401

__all__ = ["Library", "fallthrough_kernel", "define", "impl", "DispatchKey", "DispatchKeySet", "generated_source"]
