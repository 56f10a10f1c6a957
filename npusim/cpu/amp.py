"""``npusim.cpu.amp``: torch.cpu.amp's deprecated spellings of ``npusim.amp.autocast("cpu")`` and
``npusim.amp.GradScaler("cpu")``; each warns with torch's FutureWarning and then behaves as the generic one."""
from __future__ import annotations

import warnings

from .. import amp as _amp
from ..core.autocast.state import autocast as _autocast
from ..core.c10.dtype import bfloat16

__all__ = ["autocast", "GradScaler"]


class autocast(_autocast):  # noqa: N801 - torch's name
    """See ``npusim.autocast``; ``npusim.cpu.amp.autocast(args...)`` is deprecated."""

    def __init__(self, enabled: bool = True, dtype=bfloat16, cache_enabled: bool = True):
        warnings.warn("`npusim.cpu.amp.autocast(args...)` is deprecated. "
                      "Please use `npusim.amp.autocast('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_amp.GradScaler):
    """See ``npusim.amp.GradScaler``; ``npusim.cpu.amp.GradScaler(args...)`` is deprecated."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        warnings.warn("`npusim.cpu.amp.GradScaler(args...)` is deprecated. "
                      "Please use `npusim.amp.GradScaler('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)
