"""The autograd engine: graph nodes, the backward pass, grad modes and derivative formulas."""
import importlib as _importlib
import pkgutil as _pkgutil

from . import api  # noqa: F401
from .derivatives import register_nondifferentiable
from .anomaly_mode import detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly
from .api import backward, grad
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                        set_grad_enabled)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .node import Node


def _import_formulas():
    """Import every ``formulas_<family>`` module here: each registers its derivative formulas as it loads."""
    for info in _pkgutil.iter_modules(__path__):
        if info.name.startswith("formulas_"):
            _importlib.import_module(f"{__name__}.{info.name}")


_import_formulas()
register_nondifferentiable()

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "gradcheck",
           "gradgradcheck", "GradcheckError", "Node", "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]
