"""``npusim.utils``: backend registration helpers and data loading (``npusim.utils.data``)."""
from .backend_registration import generate_methods_for_privateuse1_backend, rename_privateuse1_backend
from ..core.dispatch.api_usage import log_api_usage_once  # noqa: F401
from . import checkpoint, data, hooks  # noqa: F401

__all__ = ["rename_privateuse1_backend", "generate_methods_for_privateuse1_backend", "log_api_usage_once"]
