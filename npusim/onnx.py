"""``npusim.onnx``: importable, as programs import torch.onnx at the top; export is out of scope.

ONNX export traces a program into a graph (torch.export / TorchScript), which npusim deliberately does not
implement (see docs/running_torch_programs.md). ``export`` raises ``OnnxExporterError`` saying so before it
touches the file; the rest answers as torch does outside an export.
"""
from __future__ import annotations

import enum

__all__ = ["export", "is_in_onnx_export", "OnnxExporterError", "TrainingMode", "OperatorExportTypes",
           "register_custom_op_symbolic", "unregister_custom_op_symbolic", "select_model_mode_for_export"]

producer_name = "npusim"


class OnnxExporterError(RuntimeError):
    """Raised by ``export``: torch's error class for a failed ONNX export."""


class TrainingMode(enum.IntEnum):
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


_OUT_OF_SCOPE = ("npusim does not export to ONNX: export traces the program into a graph (torch.export or "
                 "TorchScript), which npusim deliberately leaves out. Export with PyTorch itself, from the same "
                 "code and a checkpoint saved with npusim.save (torch.load reads it).")


def export(model, args=(), f=None, *rest, **kwargs):
    """Refuses: see the module docstring. Nothing is written to ``f``."""
    raise OnnxExporterError(_OUT_OF_SCOPE)


def is_in_onnx_export() -> bool:
    """False: no export is ever running here."""
    return False


def register_custom_op_symbolic(symbolic_name, symbolic_fn, opset_version):
    """Refuses, as export does: there is no exporter to register with."""
    raise OnnxExporterError(_OUT_OF_SCOPE)


def unregister_custom_op_symbolic(symbolic_name, opset_version):
    """Refuses, as export does: there is no exporter to register with."""
    raise OnnxExporterError(_OUT_OF_SCOPE)


def select_model_mode_for_export(model, mode):
    """Refuses, as export does."""
    raise OnnxExporterError(_OUT_OF_SCOPE)
