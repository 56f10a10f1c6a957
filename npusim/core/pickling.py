"""Plain ``pickle`` support for tensors (copy.deepcopy, multiprocessing).

Tensors pickle as host data plus device and requires_grad; ``npusim.save``
uses its own archive format with shared storages instead.
"""
from __future__ import annotations

import numpy as np


def reduce_tensor(t):
    host = t.detach().cpu()._a
    return (_rebuild_tensor, (np.array(host, copy=True), str(t._device), t.requires_grad, type(t)))


def _rebuild_tensor(array, device, requires_grad, cls=None):
    from .factories import from_numpy
    t = from_numpy(array)
    if device != "cpu":
        t = t.to(device)
    if cls is not None and cls is not type(t):
        t = cls._rebuild_from_tensor(t) if hasattr(cls, "_rebuild_from_tensor") else t
    if requires_grad:
        t.requires_grad_(True)
    return t
