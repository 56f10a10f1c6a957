"""``npusim.autograd.graph``: the Node type of ``grad_fn`` objects."""
from ..core.autograd.node import Node  # noqa: F401
