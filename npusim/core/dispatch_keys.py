"""Dispatch keys as bits of an int, in PyTorch's priority order.

A higher bit is a higher priority: the dispatcher serves the highest key of a
call's key set first, and a kernel that wants the keys below it masks itself off
(``keyset & below(key)``) before redispatching.
"""
from __future__ import annotations

import enum


class DispatchKey(enum.IntEnum):
    # backend keys (lowest priority)
    CPU = 0
    CUDA = 1
    Meta = 2
    PrivateUse1 = 3
    # autograd keys, one per backend
    AutogradOther = 4
    AutogradCPU = 5
    AutogradCUDA = 6
    AutogradMeta = 7
    AutogradPrivateUse1 = 8
    # autocast keys, one per backend that has autocast
    AutocastCPU = 9
    AutocastCUDA = 10
    AutocastPrivateUse1 = 11
    # alias keys: names used at registration time only, never in a key set
    Autograd = 100
    CompositeImplicitAutograd = 101
    CompositeExplicitAutograd = 102
    CompositeExplicitAutogradNonFunctional = 103


BACKEND_KEYS = (DispatchKey.CPU, DispatchKey.CUDA, DispatchKey.Meta, DispatchKey.PrivateUse1)
AUTOGRAD_KEYS = (DispatchKey.AutogradOther, DispatchKey.AutogradCPU, DispatchKey.AutogradCUDA,
                 DispatchKey.AutogradMeta, DispatchKey.AutogradPrivateUse1)
AUTOCAST_KEYS = (DispatchKey.AutocastCPU, DispatchKey.AutocastCUDA, DispatchKey.AutocastPrivateUse1)
RUNTIME_KEYS = BACKEND_KEYS + AUTOGRAD_KEYS + AUTOCAST_KEYS

# backend key -> its autograd key and its autocast key (None where torch has none)
AUTOGRAD_OF = {
    DispatchKey.CPU: DispatchKey.AutogradCPU,
    DispatchKey.CUDA: DispatchKey.AutogradCUDA,
    DispatchKey.Meta: DispatchKey.AutogradMeta,
    DispatchKey.PrivateUse1: DispatchKey.AutogradPrivateUse1,
}
AUTOCAST_OF = {
    DispatchKey.CPU: DispatchKey.AutocastCPU,
    DispatchKey.CUDA: DispatchKey.AutocastCUDA,
    DispatchKey.PrivateUse1: DispatchKey.AutocastPrivateUse1,
}

# alias key -> the runtime keys it stands for
ALIAS_KEYS = {
    DispatchKey.Autograd: AUTOGRAD_KEYS,
    DispatchKey.CompositeImplicitAutograd: BACKEND_KEYS + AUTOGRAD_KEYS,
    DispatchKey.CompositeExplicitAutograd: BACKEND_KEYS,
    DispatchKey.CompositeExplicitAutogradNonFunctional: BACKEND_KEYS,
}


def bit(key: DispatchKey) -> int:
    return 1 << key


def mask(keys) -> int:
    m = 0
    for k in keys:
        m |= 1 << k
    return m


BACKEND_MASK = mask(BACKEND_KEYS)
AUTOGRAD_MASK = mask(AUTOGRAD_KEYS)
AUTOCAST_MASK = mask(AUTOCAST_KEYS)
# everything strictly below the autograd keys: what an autograd kernel redispatches to
BELOW_AUTOGRAD = (1 << DispatchKey.AutogradOther) - 1
BELOW_AUTOCAST = (1 << DispatchKey.AutocastCPU) - 1


def below(key: DispatchKey) -> int:
    """The mask of all keys of lower priority than ``key``."""
    return (1 << key) - 1


def parse_key(name) -> DispatchKey:
    """``"PrivateUse1"`` or a DispatchKey -> DispatchKey; torch's error otherwise."""
    if isinstance(name, DispatchKey):
        return name
    try:
        return DispatchKey[name]
    except (KeyError, TypeError):
        raise RuntimeError(f"could not parse dispatch key: {name}") from None


def highest_key(keyset: int) -> DispatchKey:
    return DispatchKey(keyset.bit_length() - 1)


class DispatchKeySet(int):
    """An immutable set of runtime dispatch keys (what ``with_keyset`` kernels receive)."""

    __slots__ = ()

    def __new__(cls, keys=0):
        if isinstance(keys, DispatchKey):
            return int.__new__(cls, 1 << keys)
        if isinstance(keys, int):
            return int.__new__(cls, keys)
        return int.__new__(cls, mask(parse_key(k) for k in keys))

    def has(self, key) -> bool:
        return bool(self & (1 << parse_key(key)))

    def add(self, key) -> "DispatchKeySet":
        return DispatchKeySet(self | (1 << parse_key(key)))

    def remove(self, key) -> "DispatchKeySet":
        return DispatchKeySet(self & ~(1 << parse_key(key)))

    def __or__(self, other):
        return DispatchKeySet(int(self) | int(other))

    def __and__(self, other):
        return DispatchKeySet(int(self) & int(other))

    def __sub__(self, other):
        return DispatchKeySet(int(self) & ~int(other))

    def highestPriorityTypeId(self) -> DispatchKey:  # noqa: N802 - torch's name
        return highest_key(self)

    def keys(self):
        return [k for k in RUNTIME_KEYS if self & (1 << k)]

    def __repr__(self):
        return "DispatchKeySet(" + ", ".join(k.name for k in reversed(self.keys())) + ")"
