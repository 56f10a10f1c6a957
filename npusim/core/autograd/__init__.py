"""The autograd engine: graph nodes, the backward pass, grad modes and derivative formulas."""
from . import api, formulas_elementwise, formulas_indexing, formulas_structure  # noqa: F401  (registers kernels)
from . import formulas_linalg, formulas_math, formulas_misc, formulas_nn_activation, formulas_nn_conv  # noqa: F401
from . import formulas_pool3d, formulas_scans  # noqa: F401
from . import formulas_linalg_lu, formulas_special  # noqa: F401
from .derivatives import register_nondifferentiable
from .anomaly_mode import detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly
from .api import backward, grad
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                        set_grad_enabled)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .node import Node

register_nondifferentiable()

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "gradcheck",
           "gradgradcheck", "GradcheckError", "Node", "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]
