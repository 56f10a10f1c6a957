"""``LinearCrossEntropyOptions``: how ``F.linear_cross_entropy`` chunks its batch, as torch 2.13's dataclass (same
fields, defaults, checks and call-time resolution of the ``"auto"`` sentinels)."""
from __future__ import annotations

import dataclasses
from typing import Literal, NamedTuple

from ...core.c10 import dtype as D

__all__ = ["LinearCrossEntropyOptions"]


class _AutoDefault(NamedTuple):
    acc_policy: str
    chunking_method: str


# torch's picks for the "auto" sentinels per (device type, input dtype); other pairs (the npu's among them, as
# for any PrivateUse1 device in torch) take the fallback
_AUTO_DEFAULTS = {
    ("cuda", D.bfloat16): _AutoDefault("compact", "aspect_ratio:2"),
    ("cuda", D.float16): _AutoDefault("compact", "aspect_ratio:2"),
    ("cpu", D.bfloat16): _AutoDefault("accurate", "aspect_ratio"),
    ("cpu", D.float16): _AutoDefault("accurate", "aspect_ratio"),
}
_AUTO_FALLBACK = _AutoDefault("compact", "aspect_ratio:2")


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """Configuration of the chunked :func:`~npusim.nn.functional.linear_cross_entropy`: the batch is processed
    ``batch_chunk_size`` rows at a time (or as ``chunking_method`` sizes it), so the full (N, num_classes) logits
    are never materialised. ``acc_policy`` and ``acc_dtype`` choose the accumulation precision for 16-bit inputs;
    ``allow_retain_graph`` keeps the precomputed gradients for a second backward."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: Literal["accurate", "balanced", "compact", "auto"] = "auto"
    acc_dtype: D.dtype | None = None

    def __post_init__(self):
        if self.acc_policy not in {"auto", "accurate", "balanced", "compact"}:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            if not sep:
                factor = "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (self.batch_chunk_size is None
                or (isinstance(self.batch_chunk_size, int) and self.batch_chunk_size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {self.batch_chunk_size!r}")
        supported = {D.float16, D.bfloat16, D.float32, D.float64}
        if self.acc_dtype is not None and self.acc_dtype not in supported:
            raise ValueError(f"acc_dtype must be one of {{None, torch.float16, torch.bfloat16, torch.float32, "
                             f"torch.float64}}, got {self.acc_dtype!r}. Pass acc_dtype=None to let the op pick "
                             f"automatically.")

    @staticmethod
    def _ceil_div(a: int, b: int) -> int:
        return -(-a // b)

    @staticmethod
    def _resolve_auto_acc_dtype(dtype, device):
        """float32 for 16-bit input where torch has a mixed-precision mm (the CPU here); None otherwise."""
        if device is None or dtype not in (D.float16, D.bfloat16):
            return None
        if device.type == "cpu":
            return D.float32
        return None

    def _compute_batch_chunk_size(self, num_batches, in_features, num_classes, method=None) -> int:
        """``aspect_ratio[:N]``: chunks whose logits are about as large as the input, divided by N."""
        method = str(method if method is not None else self.chunking_method)
        if method.startswith("aspect_ratio"):
            factor = int(method.split(":", 1)[1]) if ":" in method else 1
            inc_factor = self._ceil_div(num_classes, in_features)
            target = self._ceil_div(num_batches, inc_factor)
            chunk_size = 1 << (target - 1).bit_length()   # the next power of 2 >= target
            return min(chunk_size // factor, num_batches)
        raise AssertionError(f"unhandled chunking_method: {method!r}")

    def _adjust(self, num_batches, in_features, num_classes, dtype, device=None):
        """These options with the "auto" sentinels and None defaults resolved for one call."""
        acc_policy = self.acc_policy
        chunking_method = self.chunking_method
        if chunking_method == "auto" and self.batch_chunk_size is not None:
            chunking_method = None   # an explicit size wins over the heuristic
        if acc_policy == "auto" or chunking_method == "auto":
            ap, cm = _AUTO_DEFAULTS.get((device.type, dtype), _AUTO_FALLBACK) if device is not None \
                else _AUTO_FALLBACK
            if acc_policy == "auto":
                acc_policy = ap
            if chunking_method == "auto":
                chunking_method = cm
        batch_chunk_size = num_batches if self.batch_chunk_size is None else min(self.batch_chunk_size, num_batches)
        if chunking_method is not None:
            batch_chunk_size = self._compute_batch_chunk_size(num_batches, in_features, num_classes,
                                                              chunking_method)
            if self.batch_chunk_size is not None and self.batch_chunk_size != batch_chunk_size:
                raise ValueError(f"batch_chunk_size (={self.batch_chunk_size}) and chunking_method "
                                 f"('{chunking_method}') give different chunk sizes ({self.batch_chunk_size} vs "
                                 f"{batch_chunk_size}); pass only one.")
        if self.acc_dtype is None:
            auto_acc = self._resolve_auto_acc_dtype(dtype, device) if self.acc_policy == "auto" else None
            acc_dtype = auto_acc if auto_acc is not None else dtype
        else:
            acc_dtype = self.acc_dtype
        return dataclasses.replace(self, acc_policy=acc_policy, chunking_method=chunking_method,
                                   batch_chunk_size=max(1, batch_chunk_size), acc_dtype=acc_dtype)
