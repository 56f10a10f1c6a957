"""The globals archives may name, and the npusim objects they load as.

The names are PyTorch's (what ``torch.save`` and ``npusim.save`` write). The
same table serves both loaders: the safe one allows only these (plus the
user's ``add_safe_globals``), the trusted one maps these and imports the rest.
"""
from __future__ import annotations

from collections import Counter, OrderedDict

from ..core.c10 import dtype as _dt
from ..core.c10 import limited_dtypes as _limited
from ..core.tensor import Tensor
from . import rebuild as R
from .torch_names import STORAGE_TYPES, UNSUPPORTED_DTYPE_NAMES, UNSUPPORTED_STORAGE_NAMES, UNTYPED_STORAGE_TYPE
from .errors import UnpicklingError

# modules no allow-list entry may come from (torch's blocklist)
BLOCKED_MODULES = ("sys", "os", "posix", "nt")

_table: dict | None = None


def _parameter(*args, **kwargs):
    """torch.nn.parameter.Parameter (NEWOBJ/REDUCE in older checkpoints)."""
    return R._parameter_class()(*args, **kwargs)


def builtin_globals() -> dict:
    """``{"module.name": object}`` for every global allowed without ``add_safe_globals``."""
    global _table
    if _table is None:
        table = {
            "collections.OrderedDict": OrderedDict,
            "collections.Counter": Counter,
            "torch._utils._rebuild_tensor": R.rebuild_tensor,
            "torch._utils._rebuild_tensor_v2": R.rebuild_tensor_v2,
            "torch._utils._rebuild_tensor_v3": R.rebuild_tensor_v3,
            "torch._utils._rebuild_parameter": R.rebuild_parameter,
            "torch._utils._rebuild_parameter_with_state": R.rebuild_parameter_with_state,
            "torch._tensor._rebuild_from_type_v2": R.rebuild_from_type_v2,
            "torch.nn.parameter.Parameter": _parameter,
            "torch.Tensor": Tensor,
            "torch.Size": R.make_size,
            "torch.device": R.make_device,
            "torch.UntypedStorage": UNTYPED_STORAGE_TYPE,
            "torch.storage.UntypedStorage": UNTYPED_STORAGE_TYPE,
            "_codecs.encode": R.codecs_encode,
            "builtins.bytearray": R.make_bytearray,
            "builtins.set": R.make_set,
            "builtins.frozenset": R.make_frozenset,
            "builtins.complex": R.make_complex,
        }
        for d in _dt.ALL_DTYPES + _limited.LIMITED_DTYPES:
            table[f"torch.{d.name}"] = d
        for name, st in STORAGE_TYPES.items():
            table[f"torch.{name}"] = st
        _table = table
    return _table


def unsupported_torch_global(full_path: str):
    """A clear error for torch dtypes and storage types npusim has no counterpart for, else None."""
    module, _, name = full_path.rpartition(".")
    if module == "torch" and name in UNSUPPORTED_DTYPE_NAMES:
        return UnpicklingError(f"the archive holds data of dtype torch.{name}, which npusim does not support "
                               f"(npusim dtypes: {', '.join(d.name for d in _dt.ALL_DTYPES)})")
    if module == "torch" and name in UNSUPPORTED_STORAGE_NAMES:
        return UnpicklingError(f"the archive holds a torch.{name} (dtype {UNSUPPORTED_STORAGE_NAMES[name]}), "
                               f"which npusim does not support (npusim dtypes: "
                               f"{', '.join(d.name for d in _dt.ALL_DTYPES)})")
    return None
