"""The autograd engine: graph nodes, the backward pass and grad modes."""
