"""Dispatch keys as bits of an int, in PyTorch's priority order.

A higher bit is a higher priority: the dispatcher serves the highest key of a
call's key set first, and a kernel that wants the keys below it masks itself off
(``keyset & below(key)``) before redispatching.
"""
from __future__ import annotations

import enum


class DispatchKey(enum.IntEnum):
    # backend keys (lowest priority), in torch's BackendComponent order: Meta ranks last
    CPU = 0
    CUDA = 1
    PrivateUse1 = 2
    Meta = 3
    # functorch's vmap level (torch's FuncTorchBatched): BatchedTensors carry it. npusim places it below the
    # autograd keys (torch orders transforms with its DynamicLayer stack instead): a grad transform inside vmap
    # records on the BatchedTensors themselves, and a grad outside vmap records on the tensors the batching
    # rules compute with (docs/func.md)
    FuncTorchBatched = 4
    # autograd keys, one per backend, in the same order
    AutogradOther = 5
    AutogradCPU = 6
    AutogradCUDA = 7
    AutogradPrivateUse1 = 8
    AutogradMeta = 9
    # autocast keys, one per backend that has autocast
    AutocastCPU = 10
    AutocastCUDA = 11
    AutocastPrivateUse1 = 12
    # alias keys: names used at registration time only, never in a key set
    Autograd = 100
    CompositeImplicitAutograd = 101
    CompositeExplicitAutograd = 102
    CompositeExplicitAutogradNonFunctional = 103


BACKEND_KEYS = (DispatchKey.CPU, DispatchKey.CUDA, DispatchKey.PrivateUse1, DispatchKey.Meta)
AUTOGRAD_KEYS = (DispatchKey.AutogradOther, DispatchKey.AutogradCPU, DispatchKey.AutogradCUDA,
                 DispatchKey.AutogradPrivateUse1, DispatchKey.AutogradMeta)
AUTOCAST_KEYS = (DispatchKey.AutocastCPU, DispatchKey.AutocastCUDA, DispatchKey.AutocastPrivateUse1)
FUNCTORCH_KEYS = (DispatchKey.FuncTorchBatched,)
RUNTIME_KEYS = BACKEND_KEYS + FUNCTORCH_KEYS + AUTOGRAD_KEYS + AUTOCAST_KEYS

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
    """An immutable set of runtime dispatch keys (what ``with_keyset`` kernels receive).

    ``DispatchKeySet(DispatchKey.CPU)``, ``DispatchKeySet("CPU")`` or from several
    keys; ``|``, ``&`` and ``-`` combine sets, as torch's DispatchKeySet does.
    """

    __slots__ = ()

    def __new__(cls, keys=0):
        if isinstance(keys, DispatchKey):
            return int.__new__(cls, 1 << _runtime_key(keys))
        if isinstance(keys, int):
            return int.__new__(cls, keys)
        if isinstance(keys, str):
            return int.__new__(cls, 1 << _runtime_key(keys))
        return int.__new__(cls, mask(_runtime_key(k) for k in keys))

    def has(self, key) -> bool:
        return bool(self & (1 << parse_key(key)))

    def add(self, key) -> "DispatchKeySet":
        return DispatchKeySet(int(self) | (1 << _runtime_key(key)))

    def remove(self, key) -> "DispatchKeySet":
        return DispatchKeySet(int(self) & ~(1 << _runtime_key(key)))

    def __or__(self, other):
        return DispatchKeySet(int(self) | int(other))

    __ror__ = __or__

    def __and__(self, other):
        return DispatchKeySet(int(self) & int(other))

    __rand__ = __and__

    def __sub__(self, other):
        return DispatchKeySet(int(self) & ~int(other))

    def __invert__(self):
        return DispatchKeySet(~int(self) & ALL_RUNTIME_MASK)

    def highestPriorityTypeId(self) -> DispatchKey:  # noqa: N802 - torch's name
        return highest_key(self)

    def keys(self):
        """The keys in the set, lowest priority first."""
        return [k for k in RUNTIME_KEYS if self & (1 << k)]

    def __iter__(self):
        return iter(self.keys())

    def __repr__(self):
        return "DispatchKeySet(" + ", ".join(k.name for k in self.keys()) + ")"

    __str__ = __repr__


def _runtime_key(key) -> DispatchKey:
    k = parse_key(key)
    if k in ALIAS_KEYS:
        raise RuntimeError(f"{k.name} is an alias key and cannot be part of a DispatchKeySet")
    return k


ALL_RUNTIME_MASK = mask(RUNTIME_KEYS)
# torch._C's names for the sets a kernel redispatches to after handling its key
_after_autograd_keyset = DispatchKeySet(BELOW_AUTOGRAD)
_after_autocast_keyset = DispatchKeySet(BELOW_AUTOCAST)
