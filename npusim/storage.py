"""``npusim.storage``: the storage classes, where torch keeps them (``torch.storage``)."""
from __future__ import annotations

from .api.typed_storage import (  # noqa: F401
    TypedStorage, _get_always_warn_typed_storage_removal, _reset_warn_typed_storage_removal,
    _set_always_warn_typed_storage_removal, _warn_typed_storage_removal,
)
from .core.c10.storage import UntypedStorage

__all__ = ["TypedStorage", "UntypedStorage"]
