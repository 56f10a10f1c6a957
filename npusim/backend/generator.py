"""The npu's random generators, registered for PrivateUse1 (REGISTER_GENERATOR_PRIVATEUSE1).

They share the cpu's Philox engine, so a seed gives the same numbers on both;
the draw runs in the device's array module (NumPy emulation, or the CuPy
Philox kernel on a GPU).
"""
from __future__ import annotations

from .. import device
from ..privateuse1 import DEFAULT_SEED, Generator
from .runtime import runtime


class NpuGenerator(Generator):
    """A Philox generator bound to one npu device."""


def make_generator(index: int) -> NpuGenerator:
    return NpuGenerator(device("npu", index))


class DefaultGenerators:
    """One default generator per device, created when the runtime initialises."""

    def __init__(self):
        self.generators: tuple = ()

    def init(self, rt) -> None:
        self.generators = tuple(make_generator(i).manual_seed(DEFAULT_SEED) for i in range(rt.device_count()))

    def get(self, index: int) -> NpuGenerator:
        runtime.lazy_init()
        return self.generators[index]


defaults = DefaultGenerators()
