"""The gradient scaler's ops, torch's: ``_amp_foreach_non_finite_check_and_unscale_`` (unscale a list of gradients
in place, flag infs and NaNs in ``found_inf``) and ``_amp_update_scale_`` (back off or grow the scale), with the
checks and messages of torch's CPU kernels; the array work is in ``kernels/amp.py``."""
from __future__ import annotations

from ..core.c10 import dtype as D
from ..kernels import amp as K
from . import common as C

_UNSCALABLE = frozenset(d.np for d in (D.float16, D.bfloat16, D.float32, D.float64))


def _device_name(dev) -> str:
    return "CPU" if dev.type == "cpu" else dev.type.upper()


def _check_flag(t, name, dev, dtype=D.float32, dtype_name="float"):
    if t._device != dev:
        raise RuntimeError(f"{name} must be a {_device_name(dev)} tensor.")
    if t._a.size != 1:
        raise RuntimeError(f"{name} must be a 1-element tensor.")
    if C.FROM_NP.get(t._a.dtype) is not dtype:
        raise RuntimeError(f"{name} must be a {dtype_name} tensor.")


def _amp_foreach_non_finite_check_and_unscale_(self, found_inf, inv_scale):
    if not self:
        return None
    dev = self[0]._device
    _check_flag(inv_scale, "inv_scale", dev)
    _check_flag(found_inf, "found_inf", dev)
    for t in self:
        if t._device != dev:
            raise RuntimeError(f"one of scaled_grads was not a {_device_name(dev)} tensor.")
        if t._a.dtype not in _UNSCALABLE:
            C.not_implemented(f"_amp_foreach_non_finite_check_and_unscale_{dev.type}", t._a.dtype)
        C.check_writable(t)
    C.check_writable(found_inf)
    K.non_finite_check_and_unscale_([t._a for t in self], found_inf._a, inv_scale._a)
    for t in self:
        t._bump_version()
    found_inf._bump_version()
    return None


def _amp_update_scale_(self, growth_tracker, found_inf, scale_growth_factor, scale_backoff_factor,
                       growth_interval):
    dev = self._device
    for t, name in ((growth_tracker, "growth_tracker"), (self, "current_scale"), (found_inf, "found_inf")):
        if t._device != dev:
            raise RuntimeError(f"{name} must be a {_device_name(dev)} tensor.")
    for t, name in ((growth_tracker, "growth_tracker"), (self, "current_scale"), (found_inf, "found_inf")):
        if t._a.size != 1:
            raise RuntimeError(f"{name} must be a 1-element tensor.")
    if C.FROM_NP.get(growth_tracker._a.dtype) is not D.int32:
        raise RuntimeError("growth_tracker must be an int tensor.")
    if C.FROM_NP.get(self._a.dtype) is not D.float32:
        raise RuntimeError("current_scale must be a float tensor.")
    if C.FROM_NP.get(found_inf._a.dtype) is not D.float32:
        raise RuntimeError("found_inf must be a float tensor.")
    C.check_writable(self)
    C.check_writable(growth_tracker)
    K.update_scale_(self._a, growth_tracker._a, found_inf._a, float(scale_growth_factor),
                    float(scale_backoff_factor), int(growth_interval))
    self._bump_version()
    growth_tracker._bump_version()
    return self


KERNELS = {
    "_amp_foreach_non_finite_check_and_unscale_": _amp_foreach_non_finite_check_and_unscale_,
    "_amp_update_scale_": _amp_update_scale_,
}
