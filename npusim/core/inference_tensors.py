"""Inference tensors: the tensors made under ``inference_mode``, and what they may not do outside it.

As in torch, such a tensor tracks no versions: its version counter is the shared ``INFERENCE_VC``, which
never counts (a view of it shares it, so views are inference tensors too). Outside inference mode it
refuses in-place updates (the dispatcher checks before an op writes), being saved for backward,
``requires_grad=True`` and a read of ``_version``. Only identity checks against ``INFERENCE_VC`` touch the
paths of ordinary tensors.
"""
from __future__ import annotations


class _NoVersions(list):
    """A version counter that stays at 0: in-place updates inside inference mode are not counted."""

    __slots__ = ()


INFERENCE_VC = _NoVersions([0])

# the grad-mode thread-local (``inference`` says whether this thread is in inference mode), installed by
# core.autograd.grad_mode, which this module cannot import (it sits below autograd)
grad_tls = None

INPLACE_MESSAGE = ("Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone "
                   "to get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 "
                   "for more details.")
SAVE_MESSAGE = ("Inference tensors cannot be saved for backward. Please do not use Tensors created in inference "
                "mode in computation tracked by autograd. To work around this, you can make a clone to get a normal "
                "tensor and use it in autograd, or use `npusim.no_grad()` instead of `npusim.inference_mode()`.")
VERSION_MESSAGE = "Inference tensors do not track version counter."
REQUIRES_GRAD_MESSAGE = "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed."


def in_inference_mode() -> bool:
    return grad_tls is not None and grad_tls.inference


def check_write(t) -> None:
    """Refuse an in-place update of the inference tensor ``t`` outside inference mode (before any write)."""
    if not in_inference_mode():
        raise RuntimeError(INPLACE_MESSAGE)
