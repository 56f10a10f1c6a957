"""Backward formula of unsafe_split_with_sizes: a split's (its pieces join back along dim)."""
from __future__ import annotations

from .derivatives import derivative
from .formulas_views import split_backward

derivative("unsafe_split_with_sizes", save=("self_meta", "dim"), save_result=True,
           name="UnsafeSplitWithSizesBackward0")(split_backward)
