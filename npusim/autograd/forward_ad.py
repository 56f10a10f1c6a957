"""``npusim.autograd.forward_ad``: forward-mode automatic differentiation (torch.autograd.forward_ad's API).

Inside ``with dual_level():``, ``make_dual(x, t)`` gives a tensor that carries the tangent ``t``; every
differentiable op propagates it (``core/autograd/forward_mode.py``), and ``unpack_dual(y)`` returns
``(primal, tangent)`` with the Jacobian-vector product ``J t`` as tangent. One level exists at a time, as in
torch; leaving it deletes every tangent made in it.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Optional

from ..core.autograd import forward_mode as _fw
from ..core.autograd.grad_mode import _DecoratorContextManager
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]


def enter_dual_level():
    """Enter a new forward grad level (the one used by default by the other functions here); returns it."""
    return _fw.enter_level()


def exit_dual_level(*, level=None):
    """Exit a forward grad level, deleting every tangent of that level; only the latest level may be exited."""
    _fw.exit_level(_fw.current_level() if level is None else level)


def _check_level(level, fn_name):
    if level != _fw.current_level():
        raise RuntimeError(f"Invalid level given to {fn_name}")


def make_dual(tensor, tangent, *, level=None):
    """A new tensor aliasing ``tensor`` with ``tangent`` as its forward gradient at ``level`` (the tangent as is
    when its layout is ``tensor``'s, a copy with that layout otherwise). Backward differentiable."""
    if level is None:
        level = _fw.current_level()
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    _check_level(level, "_make_dual")
    if getattr(tensor, "is_sparse", False) or getattr(tangent, "is_sparse", False):
        raise NotImplementedError("Cannot access storage of SparseTensorImpl")
    if _fw.own_tangent(tensor, level) is not None:
        raise RuntimeError(f"Making a dual Tensor based on a Tensor that already has a forward gradient at the "
                           f"same level {level} is not supported.")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    if tangent.device != tensor.device:
        raise RuntimeError(f"Trying to set a forward gradient that has a different device than that of the "
                           f"original Tensor, this is not supported. Tensor is on {tensor.device} while the given "
                           f"forward gradient is on {tangent.device}.")
    with _fw.disabled():
        # a differentiable view of tensor, recorded as torch records _make_dual (ViewBackward0)
        dual = aten.view.default(tensor, list(tensor.shape))
    if not _fw._same_layout(tangent, tensor) or _fw._is_expanded(tangent):
        with _fw.disabled():
            copy = aten.empty_strided.default(list(tensor.shape), list(tensor.stride()), dtype=tangent.dtype,
                                              device=tangent.device)
            copy.copy_(tangent)
        tangent = copy
    _fw.put_tangent(dual, tangent, level)
    return dual


class UnpackedDualTensor(NamedTuple):
    """Namedtuple returned by :func:`unpack_dual`: the primal and tangent of a dual tensor."""

    primal: Tensor
    tangent: Optional[Tensor]


def unpack_dual(tensor, *, level=None):
    """``(primal, tangent)`` of ``tensor``: a view of its primal without the tangent, and the tangent as is
    (None when it has none at ``level``). Backward differentiable."""
    if level is None:
        level = _fw.current_level()
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    _check_level(level, "_fw_primal")
    tangent = _fw.tangent_of(tensor, level) if _fw.is_enabled() else None
    with _fw.disabled():
        primal = aten.alias.default(tensor)   # a view without the tangent, as torch's _fw_primal
    return UnpackedDualTensor(primal, tangent)


class _set_fwd_grad_enabled(_DecoratorContextManager):
    """Turn the propagation of tangents off (or back on) for a region, as torch's private helper does."""

    def __init__(self, mode: bool) -> None:
        self.prev = _fw.is_enabled()
        _fw.set_enabled(bool(mode))

    def __enter__(self) -> None:
        pass

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        _fw.set_enabled(self.prev)


def _is_fwd_grad_enabled() -> bool:
    return _fw.is_enabled()


class dual_level(_DecoratorContextManager):
    """Context manager for forward AD: enters a level on entry (``as`` gives it) and exits it, deleting its
    tangents, on exit. Only one level may be open at a time, as in torch."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        exit_dual_level()
