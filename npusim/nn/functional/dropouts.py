"""torch.nn.functional's dropout family: element-wise, alpha and channel-wise (feature) dropout."""
from __future__ import annotations

import warnings

from ...core.dispatch.ops_namespace import aten
from .arguments import _check_tensor

__all__ = [
    "dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d", "dropout3d",
]


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by 1 / (1 - p), in training only."""
    _check_tensor(input, "dropout")
    _check_p(p)
    return aten.dropout_.default(input, p, training) if inplace else aten.dropout.default(input, p, training)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU activations' mean and variance (dropped units take SELU's saturation value)."""
    _check_tensor(input, "alpha_dropout")
    _check_p(p)
    op = aten.alpha_dropout_.default if inplace else aten.alpha_dropout.default
    return op(input, p, training)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_tensor(input, "feature_alpha_dropout")
    _check_p(p)
    op = aten.feature_alpha_dropout_.default if inplace else aten.feature_alpha_dropout.default
    return op(input, p, training)


def _feature_dropout(input, p, training, inplace, unbatched):
    """Channel-wise dropout; an unbatched input gets a batch dim for the call."""
    if unbatched:
        input = input.unsqueeze_(0) if inplace else input.unsqueeze(0)
    op = aten.feature_dropout_.default if inplace else aten.feature_dropout.default
    result = op(input, p, training)
    if unbatched:
        result = result.squeeze_(0) if inplace else result.squeeze(0)
    return result


def dropout1d(input, p=0.5, training=True, inplace=False):
    _check_tensor(input, "dropout1d")
    _check_p(p)
    ndim = input.dim()
    if ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {ndim}D input. Note that dropout1d "
                           "exists to provide channel-wise dropout on inputs with 1 spatial dimension, a channel "
                           "dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _feature_dropout(input, p, training, inplace, ndim == 2)


def dropout2d(input, p=0.5, training=True, inplace=False):
    _check_tensor(input, "dropout2d")
    _check_p(p)
    ndim = input.dim()
    if ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {ndim}-D input to dropout2d, which is deprecated and will result in an "
                      "error in a future release. To retain the behavior and silence this warning, please use dropout "
                      "instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 spatial "
                      "dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D inputs).",
                      stacklevel=2)
    if ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior "
                      "will change in a future release to interpret the input as one without a batch dimension, i.e. "
                      "shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using "
                      "dropout1d instead.", stacklevel=2)
    return _feature_dropout(input, p, training, inplace, False)


def dropout3d(input, p=0.5, training=True, inplace=False):
    _check_tensor(input, "dropout3d")
    _check_p(p)
    ndim = input.dim()
    if ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {ndim}-D input to dropout3d, which is deprecated and will result in an "
                      "error in a future release. To retain the behavior and silence this warning, please use dropout "
                      "instead. Note that dropout3d exists to provide channel-wise dropout on inputs with 3 spatial "
                      "dimensions, a channel dimension, and an optional batch dimension (i.e. 4D or 5D inputs).",
                      stacklevel=2)
    return _feature_dropout(input, p, training, inplace, ndim != 5)
