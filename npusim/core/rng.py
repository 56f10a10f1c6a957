"""Process-wide seeding and RNG state (``npusim.manual_seed``, ``npusim.random.fork_rng``).

``manual_seed`` seeds the cpu generator and every device of the renamed
PrivateUse1 backend through its device module's ``manual_seed_all``, as torch
does; a backend without one gets a warning instead of a silently ignored seed.
"""
from __future__ import annotations

import contextlib
import sys
import warnings

from .device import PRIVATEUSE1, privateuse1_backend_name
from .generator import Generator, default_generator, seed_value

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng"]


def _backend_module():
    name = privateuse1_backend_name()
    if name == PRIVATEUSE1:
        return None, name
    return getattr(sys.modules.get("npusim"), name, None), name


def _seed_backend(seed: int) -> None:
    mod, name = _backend_module()
    if mod is None:
        return
    fn = getattr(mod, "manual_seed_all", None)
    if fn is None:
        warnings.warn(f"Set seed for `{name}` device does not take effect, please add API's `manual_seed_all` "
                      f"to `{name}` device module.", UserWarning, stacklevel=3)
        return
    fn(seed)


def manual_seed(seed) -> Generator:
    """Seed the cpu and every npu generator; returns the cpu generator."""
    s = seed_value(seed)
    _seed_backend(s)
    return default_generator.manual_seed(s)


def seed() -> int:
    """Seed every generator non-deterministically; returns the seed."""
    s = default_generator.seed()
    _seed_backend(s)
    return s


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type=None):
    """Restore the RNG states of the cpu and of ``devices`` (default: all) on exit."""
    if not enabled:
        yield
        return
    mod, name = _backend_module()
    device_type = name if device_type is None else device_type
    if device_type not in (name, "cpu") and device_type != PRIVATEUSE1:
        raise RuntimeError(f"{_caller}: device_type {device_type!r} has no random number generator in npusim")
    cpu_state = get_rng_state()
    dev_states = []
    if mod is not None and device_type != "cpu":
        if devices is None:
            devices = list(range(mod.device_count()))
        devices = [d if isinstance(d, int) else getattr(d, "index", d) for d in devices]
        dev_states = [(d, mod.get_rng_state(d)) for d in devices]
    try:
        yield
    finally:
        set_rng_state(cpu_state)
        for d, st in dev_states:
            mod.set_rng_state(st, d)
