"""``npusim.utils``: backend registration helpers (and, later, data loading)."""
from .backend_registration import generate_methods_for_privateuse1_backend, rename_privateuse1_backend
from . import data  # noqa: F401

__all__ = ["rename_privateuse1_backend", "generate_methods_for_privateuse1_backend"]
