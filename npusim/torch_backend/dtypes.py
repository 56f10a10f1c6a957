"""torch's dtypes, devices, layouts and memory formats as NumPy and npusim name them."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import torch

import npusim

_NAMES = ("float16", "float32", "float64", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "uint16",
          "uint32", "uint64", "bool", "complex64", "complex128")

#: torch dtype -> NumPy dtype of the elements
NUMPY = {getattr(torch, n): (np.dtype(ml_dtypes.bfloat16) if n == "bfloat16" else np.dtype(n)) for n in _NAMES}
# float8 types, where both torch and ml_dtypes have them
for _name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"):
    if hasattr(torch, _name) and hasattr(ml_dtypes, _name):
        NUMPY[getattr(torch, _name)] = np.dtype(getattr(ml_dtypes, _name))

#: NumPy dtype -> torch dtype
TORCH_OF_NUMPY = {v: k for k, v in NUMPY.items()}
#: torch dtype -> npusim dtype
NPUSIM = {getattr(torch, n): getattr(npusim, n) for n in _NAMES if hasattr(npusim, n)}
#: npusim dtype -> torch dtype
TORCH = {v: k for k, v in NPUSIM.items()}

LAYOUT = {torch.strided: npusim.strided}
MEMORY_FORMAT = {getattr(torch, n): getattr(npusim, n) for n in
                 ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d")}
TORCH_MEMORY_FORMAT = {v: k for k, v in MEMORY_FORMAT.items()}
