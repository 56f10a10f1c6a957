"""The two ops ``torch.amp.GradScaler("npu")`` calls, on the npu's arrays: unscaling gradients while checking them
for inf/NaN, and the scale update (npusim's own ops of these names, kernels/amp.py, are left out of the adapter:
kernels.py's HANDLED_ELSEWHERE)."""
from __future__ import annotations

from npusim.privateuse1 import get_device_hooks

from .adoption import NPUSIM_DEVICE, array_view

_xp = get_device_hooks("npu").array_namespace(NPUSIM_DEVICE)


def _amp_foreach_non_finite_check_and_unscale_(self, found_inf, inv_scale):
    inv = array_view(inv_scale).reshape(())
    found = array_view(found_inf)
    for grad in self:
        a = array_view(grad)
        if not bool(_xp.isfinite(a).all()):
            found[...] = 1.0
        _xp.multiply(a, inv, out=a, casting="unsafe")


def _amp_update_scale_(self, growth_tracker, found_inf, scale_growth_factor, scale_backoff_factor,
                       growth_interval):
    scale, tracker = array_view(self), array_view(growth_tracker)
    if float(array_view(found_inf).reshape(())) > 0:
        scale *= scale_backoff_factor
        tracker[...] = 0
    else:
        grown = int(tracker.reshape(())) + 1
        if grown == growth_interval:
            scale *= scale_growth_factor
            grown = 0
        tracker[...] = grown
    return self


def register(lib) -> None:
    for fn in (_amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_):
        lib.impl(fn.__name__, fn, "PrivateUse1")
