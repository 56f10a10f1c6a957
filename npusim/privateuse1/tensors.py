"""Tensors and the arrays they hold, for a backend's kernels.

A backend's kernels compute on arrays (NumPy, CuPy, or any array module its
device hooks name) and hand results back as tensors. These are the only ways a
backend touches a tensor's data; they are plain functions and C-level attribute
getters, so a kernel pays no extra Python frame for them.
"""
from __future__ import annotations

from operator import attrgetter

from ..core.tensor import Tensor, make, make_view
from ..native.common import replace_array

__all__ = ["from_array", "view_of_array", "array_of", "device_of", "bump_version", "replace_array"]

#: ``from_array(array, device) -> Tensor``: a new tensor owning ``array`` (a fresh array of ``device``'s array
#: module) on ``device`` (an ``npusim.device`` with its index). Its storage comes from the device hooks'
#: ``storage_factory``, so memory statistics and out-of-memory checks see it.
from_array = make

#: ``view_of_array(array, base) -> Tensor``: a tensor viewing ``base``'s memory through ``array`` (an array over
#: ``base``'s storage): it shares ``base``'s storage and version counter, and no new memory is accounted.
view_of_array = make_view

#: ``array_of(tensor)``: the array holding the tensor's elements (a view of its storage). Writing into it
#: writes the tensor; an in-place kernel then calls ``bump_version(tensor)``.
array_of = attrgetter("_a")

#: ``device_of(tensor)``: the tensor's device (``tensor.device``, without the property call).
device_of = attrgetter("_device")

#: ``bump_version(tensor)``: record an in-place write, as an in-place kernel must (autograd checks versions).
bump_version = Tensor._bump_version

#: ``replace_array(tensor, array)``: give the tensor new memory (``resize_`` semantics), a fresh storage holding
#: ``array``; views of the old memory are left behind.
