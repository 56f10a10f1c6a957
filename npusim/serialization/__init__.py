"""``npusim.save`` / ``npusim.load``: checkpoints in PyTorch's archive format.

An archive is a ZIP holding ``<name>/data.pkl`` (the pickled object tree, whose
tensors point at storages by persistent id), ``<name>/data/<key>`` (each
storage's raw bytes, 64-byte aligned), ``<name>/byteorder``,
``<name>/version`` and ``<name>/extra/<file>`` for extra files. Loading is safe
by default (an allow-listed unpickler); backend metadata rides with each tensor
through the hooks its backend registered; writes to a path are atomic; archives
interchange with ``torch.save`` / ``torch.load(weights_only=True)``.
See docs/serialization.md.
"""
from __future__ import annotations

from .backend_meta import register_backend_meta_serialization
from .errors import ArchiveError, UnpicklingError
from .extra_files import get_extra_files_hook, set_extra_files_hook
from .loading import load
from .pickler import location_tag
from .safe_globals import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals
from .saving import save
from .zip_writer import get_crc32_options, set_crc32_options

__all__ = [
    "save", "load", "ArchiveError", "UnpicklingError", "register_backend_meta_serialization",
    "set_extra_files_hook", "get_extra_files_hook", "add_safe_globals", "safe_globals", "get_safe_globals",
    "clear_safe_globals", "location_tag", "get_crc32_options", "set_crc32_options",
]
