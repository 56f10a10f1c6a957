"""``import npusim.torch_backend``: npusim's npu as a PrivateUse1 backend of real PyTorch 2.13, from Python.

After the import, ``torch.randn(2, device="npu")``, ``model.to("npu")``, autograd, optimizers,
``torch.autocast("npu")``, ``torch.npu.*`` and ``torch.save``/``torch.load`` run on npusim's npu: its kernels
(NumPy in emulation, CuPy on a GPU), allocator accounting, capacity and RNG. See docs/torch_backend.md.

Registering into torch is process-wide and happens once, at the first import. Only this package imports torch.
"""
from __future__ import annotations

from ._version import require_torch

torch = require_torch()

from . import registration  # noqa: E402

registration.install()

from . import device_module  # noqa: E402,F401

__all__ = ["device_module"]
