"""``GradScaler``: dynamic loss scaling for mixed-precision training (torch.amp.GradScaler).

``scale(loss)`` multiplies the loss by the scale; ``step(optimizer)`` unscales the
gradients, checks them for inf/NaN and skips ``optimizer.step()`` if any are found;
``update()`` then halves the scale (``backoff_factor``) after a skipped step, or
doubles it (``growth_factor``) after ``growth_interval`` clean steps in a row.
The scale and the growth tracker are tensors on the loss's device.
"""
from __future__ import annotations

import warnings
from collections import abc, defaultdict
from enum import Enum

from ..core.autograd import no_grad
from ..core.c10.device import device as _device
from ..core.c10.dtype import float16, float32, int32
from ..api.factories import full
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor

__all__ = ["OptState", "GradScaler"]


class _MultiDeviceReplicator:
    """Serves copies of a tensor to the devices that ask for it, one copy per device."""

    def __init__(self, master_tensor: Tensor) -> None:
        self.master = master_tensor
        self._per_device_tensors: dict = {}

    def get(self, device) -> Tensor:
        t = self._per_device_tensors.get(device)
        if t is None:
            t = self.master.to(device=device, non_blocking=True, copy=True)
            self._per_device_tensors[device] = t
        return t


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


# torch's two ops, as torch's GradScaler calls them: one pass over each gradient unscales it and looks for infs
# and NaNs (found_inf stays on the device, no host sync); the scale's update is one op on one-element tensors
_non_finite_check_and_unscale_ = aten._amp_foreach_non_finite_check_and_unscale_.default
_amp_update_scale_ = aten._amp_update_scale_.default


class GradScaler:
    """Scale the loss, unscale and check the gradients, and adapt the scale (``torch.amp.GradScaler``).

    ``device`` is the device type of the loss: ``"npu"`` or ``"cpu"`` (``"cuda"``, torch's default,
    does not exist in npusim: the scaler warns and disables itself, as torch does without CUDA).
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if isinstance(device, str) and _device(device).type == "cuda" and enabled:
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None            # made on the loss's device by the first scale()
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname: str):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev) -> None:
        self._scale = full((), self._init_scale, dtype=float32, device=dev)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=int32, device=dev)

    def scale(self, outputs):
        """Multiply a tensor (or an iterable of tensors) by the scale factor."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device, non_blocking=True)

        stash = []  # one replicator of the scale, made when the first tensor is met

        def apply_scale(val):
            if isinstance(val, Tensor):
                if not stash:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(val.device)
                    stash.append(_MultiDeviceReplicator(self._scale))
                return val * stash[0].get(val.device)
            if isinstance(val, abc.Iterable):
                iterable = map(apply_scale, val)
                return type(val)(iterable) if isinstance(val, (list, tuple)) else iterable
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16: bool) -> dict:
        per_device_inv_scale = _MultiDeviceReplicator(inv_scale)
        per_device_found_inf = _MultiDeviceReplicator(found_inf)
        # one check-and-unscale per (device, dtype) group of gradients
        groups = defaultdict(lambda: defaultdict(list))
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if not isinstance(param, Tensor):
                        raise AssertionError(f"expected param to be npusim.Tensor, got {type(param).__name__}")
                    grad = param.grad
                    if grad is None:
                        continue
                    if not allow_fp16 and grad.dtype is float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    groups[grad.device][grad.dtype].append(grad)
            for dev, per_dtype in groups.items():
                for grads in per_dtype.values():
                    _non_finite_check_and_unscale_(grads, per_device_found_inf.get(dev), per_device_inv_scale.get(dev))
        return per_device_found_inf._per_device_tensors

    def unscale_(self, optimizer) -> None:
        """Divide the optimizer's gradients by the scale (once per step; ``step`` does it if you do not)."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # the reciprocal in float64, as torch does, so 1/scale is exact for powers of two and close otherwise
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = full((), 0.0, dtype=float32, device=self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, optimizer_state, *args, **kwargs):
        if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """Unscale the gradients (unless ``unscale_`` did) and run ``optimizer.step`` if they are all finite."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, state, *args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """Back off after a skipped step, grow after ``growth_interval`` clean ones; or set ``new_scale``."""
        if not self._enabled:
            return
        _scale, _growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                _scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element npusim.Tensor on the scaler's device "
                          "with requires_grad=False.")
                if not isinstance(new_scale, Tensor):
                    raise AssertionError(reason)
                if new_scale.device.type != _device(self._device).type:
                    raise AssertionError(reason)
                if new_scale.numel() != 1:
                    raise AssertionError(reason)
                if new_scale.requires_grad is True:
                    raise AssertionError(reason)
                _scale.copy_(new_scale.reshape(()))
        else:
            found_infs = [found_inf.to(device=_scale.device, non_blocking=True)
                          for state in self._per_optimizer_states.values()
                          for found_inf in state["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            found = found_infs[0]
            for f in found_infs[1:]:
                found = found + f
            # after an inf the scale backs off and the tracker restarts; after ``growth_interval`` clean steps the
            # scale grows, kept only if the grown float32 is finite
            _amp_update_scale_(_scale, _growth_tracker, found, self._growth_factor, self._backoff_factor,
                               self._growth_interval)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _get_scale_async(self):
        return self._scale

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale.item())
        return 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())
        return 0

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """scale, growth_factor, backoff_factor, growth_interval and _growth_tracker ({} when disabled)."""
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning "
                                     "of an iteration, or at the end after scaler.update().")
            # the unpickled scaler rebuilds its tensors lazily
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def _check_inf_per_device(self, optimizer) -> dict:
        _scale, _ = self._check_scale_growth_tracker("_check_inf_per_device")
        dummy_inv_scale = full((), 1.0, dtype=float32, device=_scale.device)
        found_inf = full((), 0.0, dtype=float32, device=_scale.device)
        self._per_optimizer_states[id(optimizer)]["found_inf_per_device"] = \
            self._unscale_grads_(optimizer, dummy_inv_scale, found_inf, True)
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]

    def _found_inf_per_device(self, optimizer) -> dict:
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]
