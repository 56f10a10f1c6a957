"""``npusim.autograd``: automatic differentiation (torch.autograd's API)."""
from ..core.autograd import (  # noqa: F401
    Function, FunctionCtx, GradcheckError, Node, backward, detect_anomaly, enable_grad, grad, gradcheck,
    gradgradcheck, inference_mode, is_anomaly_check_nan_enabled, is_anomaly_enabled, is_grad_enabled,
    is_inference_mode_enabled, no_grad, once_differentiable, set_detect_anomaly, set_grad_enabled,
)
from . import forward_ad, function, functional, graph  # noqa: F401
from .engine_modes import (  # noqa: F401
    enforce_grad_layout_policy, is_multithreading_enabled, is_view_replay_enabled, set_multithreading_enabled,
)
from .tensor_like import is_tensor_like  # noqa: F401
from .profiler_types import ProfilerConfig, ProfilerState  # noqa: F401
from ..core.autograd.node import SavedTensor  # noqa: F401  (grad_fn._raw_saved_<name>'s class)

# torch.autograd's profiler names are torch.profiler's; npusim.profiler loads after autograd, so they resolve on use
_PROFILER_NAMES = {"DeviceType": "events", "ProfilerActivity": "profiler", "kineto_available": "kineto"}


def __getattr__(name):
    if name == "profiler":                      # torch.autograd.profiler, the older profiler API
        import importlib
        return importlib.import_module(".profiler", __name__)
    if name in _PROFILER_NAMES:
        import importlib
        return getattr(importlib.import_module(f"..profiler.{_PROFILER_NAMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["backward", "grad", "Function", "gradcheck", "gradgradcheck", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "detect_anomaly", "set_detect_anomaly"]
