"""Set module-level switches for a block and put them back after it (the ``flags()`` of torch.backends.*)."""
from __future__ import annotations

import contextlib


@contextlib.contextmanager
def switched(module, **values):
    """Within the block the module's attributes named in ``values`` hold those values; after it, the old ones."""
    old = {name: getattr(module, name) for name in values}
    for name, value in values.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in old.items():
            setattr(module, name, value)
