"""``npusim.cuda``: what torch.cuda is in a build without CUDA, with directions to the npu.

Programs probe CUDA before choosing a device (``"cuda" if torch.cuda.is_available() else "cpu"``) and
seed it unconditionally, so those answer as torch's CPU build does: not available, no devices, seeding
does nothing. Anything that needs a CUDA device raises torch's ``AssertionError("Torch not compiled
with CUDA enabled")``, followed by how to run the program on the npu instead
(``python -m npusim run --device-map cuda=npu``, under which ``torch.cuda`` is the npu's device module).
"""
from __future__ import annotations

import types

from .core.c10.device_hooks import no_backend_hint

__all__ = ["is_available", "device_count", "is_initialized", "manual_seed", "manual_seed_all", "seed", "seed_all",
           "amp"]


def _not_compiled(name: str):
    def unavailable(*args, **kwargs):
        raise AssertionError("Torch not compiled with CUDA enabled" + no_backend_hint("cuda"))
    unavailable.__name__ = unavailable.__qualname__ = name
    unavailable.__doc__ = f"torch.cuda.{name}: needs a CUDA device, which npusim does not have."
    return unavailable


def is_available() -> bool:
    """False: npusim has no CUDA device (its accelerator is the npu)."""
    return False


def device_count() -> int:
    """0: npusim has no CUDA device."""
    return 0


def is_initialized() -> bool:
    """False: there is no CUDA state to initialise."""
    return False


def manual_seed(seed) -> None:
    """Does nothing, as torch.cuda.manual_seed does where CUDA is not available."""


def manual_seed_all(seed) -> None:
    """Does nothing, as torch.cuda.manual_seed_all does where CUDA is not available."""


def seed() -> None:
    """Does nothing where CUDA is not available."""


def seed_all() -> None:
    """Does nothing where CUDA is not available."""


def _amp_autocast(enabled=True, dtype=None, cache_enabled=True):
    """torch.cuda.amp.autocast: autocast for "cuda", which warns and stays off without CUDA, as in torch."""
    from .core.autocast.state import autocast
    import npusim
    return autocast("cuda", dtype=npusim.float16 if dtype is None else dtype, enabled=enabled,
                    cache_enabled=cache_enabled)


def _amp_grad_scaler(*args, **kwargs):
    """torch.cuda.amp.GradScaler: a scaler for "cuda", which warns and stays off without CUDA, as in torch."""
    from .amp import GradScaler
    return GradScaler("cuda", *args, **kwargs)


amp = types.ModuleType("npusim.cuda.amp", "torch.cuda.amp where CUDA is not available: autocast and GradScaler "
                                          "warn and stay off.")
amp.autocast = _amp_autocast
amp.GradScaler = _amp_grad_scaler


def __getattr__(name: str):
    # every other torch.cuda function exists and needs a device: calling it raises torch's error
    if name.startswith("__"):
        raise AttributeError(name)
    return _not_compiled(name)
