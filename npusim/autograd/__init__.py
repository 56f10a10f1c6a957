"""``npusim.autograd``: automatic differentiation (torch.autograd's API)."""
from ..core.autograd import (  # noqa: F401
    Function, FunctionCtx, GradcheckError, Node, backward, detect_anomaly, enable_grad, grad, gradcheck,
    gradgradcheck, inference_mode, is_anomaly_check_nan_enabled, is_anomaly_enabled, is_grad_enabled,
    is_inference_mode_enabled, no_grad, once_differentiable, set_detect_anomaly, set_grad_enabled,
)
from . import function, functional, graph  # noqa: F401

__all__ = ["backward", "grad", "Function", "gradcheck", "gradgradcheck", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "detect_anomaly", "set_detect_anomaly"]
