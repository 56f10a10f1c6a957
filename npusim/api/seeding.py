"""Process-wide seeding and RNG state (``npusim.manual_seed``, ``npusim.random.fork_rng``).

``manual_seed`` seeds the cpu generator and every device of the renamed
PrivateUse1 backend through its device module's ``manual_seed_all``, as torch
does; a backend module without it gets a warning instead of a silently
ignored seed.
"""
from __future__ import annotations

import contextlib
import sys
import warnings

from ..core.c10.device import PRIVATEUSE1, device, privateuse1_backend_name
from ..core.c10.generator import Generator, default_generator, seed_value

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng"]

_fork_rng_warned_already = False


def _device_module(name):
    return getattr(sys.modules.get("npusim"), name, None)


def _seed_custom_device(seed: int) -> None:
    """Seed every device of the PrivateUse1 backend (torch's ``_seed_custom_device``)."""
    name = privateuse1_backend_name()
    mod = _device_module(name) if name != PRIVATEUSE1 else None
    if mod is None:
        return
    if hasattr(mod, "_is_in_bad_fork") and hasattr(mod, "manual_seed_all"):
        if not mod._is_in_bad_fork():
            mod.manual_seed_all(seed)
        return
    warnings.warn(f"Set seed for `{name}` device does not take effect, please add API's `_is_in_bad_fork` and "
                  f"`manual_seed_all` to `{name}` device module.", UserWarning, stacklevel=3)


def manual_seed(seed) -> Generator:
    """Seed the cpu and every npu generator; returns the cpu generator."""
    s = seed_value(int(seed))
    _seed_custom_device(s)
    return default_generator.manual_seed(s)


def seed() -> int:
    """Seed every generator non-deterministically; returns the seed."""
    s = default_generator.seed()
    _seed_custom_device(s)
    return s


def initial_seed() -> int:
    """The seed of the cpu generator."""
    return default_generator.initial_seed()


def get_rng_state():
    """The cpu generator's state as a uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type=None):
    """Restore the RNG states of the cpu and of ``devices`` (default: all of ``device_type``) on exit.

    ``device_type`` defaults to the current accelerator (the npu).
    """
    global _fork_rng_warned_already
    if device_type == "meta":
        yield
        return
    if device_type is None:
        name = privateuse1_backend_name()
        device_type = name if name != PRIVATEUSE1 and _device_module(name) is not None else "cuda"
    device_type = device(device_type).type
    mod = None if device_type == "cpu" else _device_module(device_type)
    if mod is None and device_type != "cpu":
        raise RuntimeError(f"npusim has no module of `{device_type}`, you should register a module by "
                           f"`npusim._register_device_module`.")
    if not enabled:
        yield
        return
    if mod is None:
        devices = []
    elif devices is None:
        num_devices = mod.device_count()
        if num_devices > 1 and not _fork_rng_warned_already:
            up = device_type.upper()
            warnings.warn(
                f"{up} reports that you have {num_devices} available devices, and you have used {_caller} without "
                f"explicitly specifying which devices are being used. For safety, we initialize *every* {up} device "
                f"by default, which can be quite slow if you have a lot of {up}s. If you know that you are only "
                f"making use of a few {up} devices, set the environment variable {up}_VISIBLE_DEVICES or the "
                f"'{_devices_kw}' keyword argument of {_caller} with the set of devices you are actually using. For "
                f"example, if you are using CPU only, set device.upper()_VISIBLE_DEVICES= or devices=[]; if you are "
                f"using device 0 only, set {up}_VISIBLE_DEVICES=0 or devices=[0].  To initialize all devices and "
                f"suppress this warning, set the '{_devices_kw}' keyword argument to "
                f"`range(npusim.{device_type}.device_count())`.", stacklevel=3)
            _fork_rng_warned_already = True
        devices = list(range(num_devices))
    else:
        devices = list(devices)   # a generator argument would be exhausted by the first pass
    cpu_rng_state = get_rng_state()
    device_rng_states = [mod.get_rng_state(d) for d in devices]
    try:
        yield
    finally:
        set_rng_state(cpu_rng_state)
        for d, state in zip(devices, device_rng_states):
            mod.set_rng_state(state, d)
