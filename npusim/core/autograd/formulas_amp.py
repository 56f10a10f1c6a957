"""The gradient scaler's ops have no derivative: torch lists them as not requiring one (gen_variable_type's
DONT_REQUIRE_DERIVATIVE), so they write into gradients, even of leaves that require grad, without a graph."""
from __future__ import annotations

from .derivatives import NONDIFFERENTIABLE

NONDIFFERENTIABLE.update(("_amp_foreach_non_finite_check_and_unscale_", "_amp_update_scale_"))
