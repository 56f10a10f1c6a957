"""Backward formula of attention's ``_safe_softmax``: softmax's own (a zeroed row's result is 0, so it sends
nothing back), as torch's derivative of that op."""
from __future__ import annotations

from .derivatives import derivative
from .formulas_reductions import softmax_backward

safe_softmax_backward = derivative("_safe_softmax", save=("dim", "self_meta"), save_result=True,
                                   name="SafeSoftmaxBackward0")(softmax_backward)
