"""``npusim.autograd.function`` (torch.autograd.function's names)."""
from ..core.autograd.function import BackwardCFunction, Function, FunctionCtx, once_differentiable  # noqa: F401
