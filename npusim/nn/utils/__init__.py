"""``npusim.nn.utils``: gradient clipping, parameter/vector conversion, packed sequences (``rnn``) and weight and
spectral normalisation (the legacy hooks here; ``parametrizations`` for the current ones)."""
from . import parametrizations, parametrize, rnn  # noqa: F401
from .clip_grad import (  # noqa: F401
    clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm,
)
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: F401
from .weight_norm import remove_weight_norm, weight_norm  # noqa: F401

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm",
           "parameters_to_vector", "vector_to_parameters", "remove_spectral_norm", "remove_weight_norm",
           "spectral_norm", "weight_norm"]
