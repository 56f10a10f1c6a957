"""Tensor-level kernels of nn.functional's lookups: one_hot and embedding (forward, backward, renorm)."""
from __future__ import annotations

import numpy as np

from ..kernels import nn_embedding as K
from ..kernels import device_checks as DC
from ..kernels.array_api import namespace_of
from . import common as C


# --- one-hot ---------------------------------------------------------------------------------------------

def one_hot(self, num_classes=-1):
    a = self._a
    if a.dtype != np.dtype(np.int64):
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if a.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(a.max()) + 1   # the result's shape depends on it: a read, as in torch
    if a.size and DC.deferred(a):   # as torch's CUDA path: checked on the device, reported later
        if num_classes < 0:
            raise RuntimeError("Class values must be smaller than num_classes.")
        DC.record(((a < 0) | (a >= num_classes)).any(), DC.ONE_HOT)
    elif a.size:
        if int(a.min()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(a.max()) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    elif num_classes < 0:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return C.make(K.one_hot(a, num_classes), self._device)


# --- embedding ---------------------------------------------------------------------------------------------

_INDEX_TYPES = (np.dtype(np.int64), np.dtype(np.int32))


def _check_indices(indices, fname):
    if indices._a.dtype not in _INDEX_TYPES:
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {indices.type()} instead (while checking arguments for {fname})")


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` (num_embeddings, dim) picked by ``indices``; the result is indices.shape + (dim,)."""
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    _check_indices(indices, "embedding")
    dev = C.same_device(weight, indices)
    idx = indices._a
    n = weight._a.shape[0]
    if DC.deferred(idx):   # checked on the device, reported later (npusim.kernels.device_checks)
        idx = DC.clamp(idx, 0, n, DC.EMBEDDING, IndexError("index out of range in self"))
    elif idx.size and (int(idx.min()) < 0 or int(idx.max()) >= n):
        raise IndexError("index out of range in self")
    return C.make(K.embedding(weight._a, idx), dev)


def embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
    _check_indices(indices, "embedding_backward")
    dev = C.same_device(grad_output, indices)
    idx = indices._a
    if DC.deferred(idx) and idx.size and num_weights:   # the forward recorded bad indices; write in bounds
        idx = namespace_of(idx).clip(idx, 0, num_weights - 1)
    g = K.embedding_backward(grad_output._a, idx, num_weights, padding_idx, scale_grad_by_freq)
    return C.make(g, dev)


def embedding_renorm_(self, indices, max_norm, norm_type):
    _check_indices(indices, "embedding_renorm_")
    C.same_device(self, indices)
    if self.dim() != 2:
        raise RuntimeError("'self' must be 2-D")
    if indices._a.size:
        K.embedding_renorm_(self._a, indices._a, float(max_norm), float(norm_type))
    self._bump_version()
    return self


KERNELS = {
    "one_hot": one_hot, "embedding": embedding, "embedding_dense_backward": embedding_dense_backward,
    "embedding_renorm_": embedding_renorm_,
}
