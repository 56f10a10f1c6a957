"""Random number generators: one Philox (seed, offset) state per generator.

``npusim.Generator(device)`` builds the implementation registered for the device
type (the analogue of ``REGISTER_GENERATOR_PRIVATEUSE1``); the cpu's is built in.
A generator's state is its 64-bit seed and the counter offset its draws have
reached; the same seed and the same calls give the same numbers on every device.
State tensors are 16 bytes: seed then offset, little-endian.
"""
from __future__ import annotations

import contextlib
import os
import threading

import numpy as np

from .device import CPU, device as _device

DEFAULT_SEED = 67280421310721   # torch's default_rng_seed_val
_MASK64 = 0xFFFFFFFFFFFFFFFF
_STATE_BYTES = 16

_FACTORIES: dict = {}
# per thread, callables told of every draw before it happens (npusim.func.vmap's randomness modes)
_draw_watchers = threading.local()
_DEFAULTS: dict = {}             # device-type name -> function(index) -> default generator


def register_generator(device_type: str, factory) -> None:
    """Register ``factory(device_index) -> Generator`` for a device type (once)."""
    typ = _device(device_type)._type
    if typ in _FACTORIES:
        raise RuntimeError(f"a generator is already registered for device type '{device_type}'")
    _FACTORIES[typ] = factory


def register_default_generators(device_type: str, getter) -> None:
    """Register ``getter(device_index) -> Generator``: the default generator of each device."""
    _DEFAULTS[_device(device_type)._type] = getter


@contextlib.contextmanager
def watch_draws(watch):
    """Call ``watch(generator)`` before every draw this thread makes inside the block; it may raise."""
    stack = getattr(_draw_watchers, "stack", None)
    if stack is None:
        stack = _draw_watchers.stack = []
    stack.append(watch)
    try:
        yield
    finally:
        stack.remove(watch)


def seed_value(seed) -> int:
    """torch's seed check: an int in [-2**63, 2**64); negatives wrap to unsigned."""
    if isinstance(seed, bool) or not hasattr(seed, "__index__"):
        raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
    seed = seed.__index__()
    if not -0x8000_0000_0000_0000 <= seed <= _MASK64:
        raise ValueError("Overflow when unpacking long long")
    return seed & _MASK64


class Generator:
    """A Philox random generator bound to a device."""

    def __new__(cls, device="cpu"):
        dev = _device(device)
        if cls is Generator and dev is not CPU and dev._type != "cpu":
            factory = _FACTORIES.get(dev._type)
            if factory is None:
                raise RuntimeError(f"{dev.type.upper()} device type not an accelerator.")
            from .device_hooks import resolve_device
            return factory(resolve_device(dev).index)
        return object.__new__(cls)

    def __init__(self, device="cpu"):
        if getattr(self, "_initialised", False):
            return
        dev = _device(device)
        self.device = CPU if dev._type == "cpu" else dev
        self._lock = threading.Lock()
        self._seed = DEFAULT_SEED
        self._offset = 0
        self._initialised = True

    # --- seeding -------------------------------------------------------------------------------
    def manual_seed(self, seed) -> "Generator":
        with self._lock:
            self._seed = seed_value(seed)
            self._offset = 0
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy and return the seed."""
        s = int.from_bytes(os.urandom(8), "little") & 0x7FFF_FFFF_FFFF_FFFF
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    # --- state ---------------------------------------------------------------------------------------
    def get_state(self):
        from ..tensor import make
        with self._lock:
            raw = np.array([self._seed, self._offset], dtype="<u8").view(np.uint8).copy()
        return make(raw, CPU)

    def set_state(self, new_state) -> "Generator":
        from .device import CPU as _cpu
        from ..tensor import Tensor
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a npusim.ByteTensor, but got {type(new_state).__name__}")
        if new_state.dtype.name != "uint8" or new_state.device is not _cpu:
            raise TypeError("RNG state must be a npusim.ByteTensor")
        if new_state.numel() != _STATE_BYTES:
            raise RuntimeError(f"Expected a Philox generator state of size {_STATE_BYTES} but found the input RNG "
                               f"state size to be {new_state.numel()}")
        raw = np.ascontiguousarray(new_state.detach()._a).reshape(-1).view("<u8")
        with self._lock:
            self._seed, self._offset = int(raw[0]), int(raw[1])
        return self

    def get_offset(self) -> int:
        return self._offset

    def set_offset(self, offset: int) -> "Generator":
        if isinstance(offset, bool) or not hasattr(offset, "__index__"):
            raise TypeError(f"set_offset(): argument 'offset' (position 1) must be int, not {type(offset).__name__}")
        offset = offset.__index__()
        if offset < 0:
            raise RuntimeError(f"offset must be non-negative, got {offset}")
        with self._lock:
            self._offset = int(offset)
        return self

    def clone_state(self) -> "Generator":
        g = Generator(self.device)
        g._seed, g._offset = self._seed, self._offset
        return g

    # --- drawing (used by the random kernels) -------------------------------------------------------
    def draw(self, fn):
        """Run ``fn(key, counter) -> (result, blocks)`` at the current offset, then advance past it."""
        watchers = getattr(_draw_watchers, "stack", None)
        if watchers:
            for watch in watchers:
                watch(self)
        with self._lock:
            result, blocks = fn(self._seed, self._offset)
            self._offset += blocks
        return result

    def __repr__(self):
        return f"<npusim.Generator object on {self.device} with seed {self._seed}>"

    def __reduce__(self):
        return (_rebuild_generator, (str(self.device), self._seed, self._offset))


def _rebuild_generator(device, seed, offset):
    g = Generator(device)
    g._seed, g._offset = seed, offset
    return g


default_generator = Generator("cpu")


def default_generator_for(dev) -> Generator:
    """The default generator of a device (cpu's, or the one its backend registered)."""
    if dev is CPU:
        return default_generator
    getter = _DEFAULTS.get(dev._type)
    if getter is None:
        raise RuntimeError(f"no default generator is registered for device type '{dev.type}'")
    return getter(dev.index)


def generator_for(generator, dev) -> Generator:
    """``generator`` checked against the op's device, or the device's default generator."""
    if generator is None:
        return default_generator_for(dev)
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be a npusim.Generator, not {type(generator).__name__}")
    if generator.device._type != dev._type:
        raise RuntimeError(f"Expected a '{dev.type}' device type for generator but found "
                           f"'{generator.device.type}'")
    return generator
