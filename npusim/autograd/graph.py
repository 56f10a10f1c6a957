"""``npusim.autograd.graph``: the graph's nodes and edges, and hooks on what backward saves (torch's names)."""
from __future__ import annotations

import contextlib
from typing import NamedTuple

from ..core.autograd import saved_tensor_hooks as _hooks
from ..core.autograd.node import Node, edge_of
from ..core.tensor import Tensor

__all__ = ["Node", "GradientEdge", "get_gradient_edge", "increment_version", "saved_tensors_hooks", "save_on_cpu",
           "disable_saved_tensors_hooks"]


class GradientEdge(NamedTuple):
    """A node of the graph and which of its inputs a gradient flows into."""
    node: Node
    output_nr: int


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The edge ``tensor``'s gradient flows along: its ``grad_fn`` and output number, or its accumulator."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require "
                           "gradients")
    node, nr = edge_of(tensor)
    return GradientEdge(node, nr)


def increment_version(tensor) -> None:
    """Bump the version counter of ``tensor`` (or of each tensor of an iterable), as an in-place write does."""
    for t in (tensor,) if isinstance(tensor, Tensor) else tensor:
        t._bump_version()


class saved_tensors_hooks:
    """Context manager: pass every tensor saved for backward through ``pack_hook``, and back through
    ``unpack_hook`` when backward needs it.

    ``pack_hook(tensor)`` runs under no_grad and must not modify its input in place; it may return any object.
    ``unpack_hook(packed)`` must return a tensor with the same contents. Nested pairs: the innermost wins.
    The hooks are per thread, like grad mode.
    """

    def __init__(self, pack_hook, unpack_hook) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        _hooks.push(self.pack_hook, self.unpack_hook)

    def __exit__(self, *exc) -> None:
        _hooks.pop()


class save_on_cpu(saved_tensors_hooks):
    """Context manager: tensors saved for backward are kept on the cpu and moved back to their device when
    backward needs them (trades transfers for device memory). ``pin_memory=True`` keeps them in pinned memory
    and copies back asynchronously; ``device_type`` names the device whose pinned memory is used.
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(tensor):
            if not pin_memory:
                return tensor.device, tensor.cpu()
            packed = tensor.new_empty(tensor.size(), device="cpu", pin_memory=True)
            packed.copy_(tensor)
            return tensor.device, packed

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        self.device_type = device_type
        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str):
    """Context manager: entering ``saved_tensors_hooks`` inside it raises RuntimeError(``error_message``)."""
    prev = _hooks.set_disabled(error_message)
    try:
        yield
    finally:
        _hooks.set_disabled(prev)
