"""``GradBucket``: what a DistributedDataParallel communication hook gets (``torch.distributed.GradBucket``)."""
from __future__ import annotations

__all__ = ["GradBucket"]


class GradBucket:
    """The flat gradient buffer of one DDP bucket, with the parameters whose gradients it holds.

    ``buffer()`` is the bucket itself (not a copy): a hook may reduce it in place and return it. The
    gradients are not divided by the world size: the hook decides (``allreduce_hook`` averages).
    """

    def __init__(self, index, bucket_count, tensor, offsets, lengths, sizes_list, parameters):
        self._index = index
        self._bucket_count = bucket_count
        self._buffer = tensor
        self._offsets = list(offsets)
        self._lengths = list(lengths)
        self._sizes = [tuple(s) for s in sizes_list]
        self._parameters = list(parameters)

    def index(self) -> int:
        """The index of the bucket (buckets hold parameters in reverse order: bucket 0 the last layers)."""
        return self._index

    def buffer(self):
        """The flat 1-D buffer of the bucket's gradients."""
        return self._buffer

    def gradients(self) -> list:
        """One tensor per parameter: views of ``buffer()`` shaped like the parameters."""
        return [self._buffer[o:o + n].view(s) for o, n, s in zip(self._offsets, self._lengths, self._sizes)]

    def parameters(self) -> list:
        """The model parameters whose gradients the bucket holds, in the order of ``gradients()``."""
        return list(self._parameters)

    def is_last(self) -> bool:
        """Whether this is the last bucket reduced in an iteration (the one of the first layers)."""
        return self._index == self._bucket_count - 1

    def set_buffer(self, buffer) -> None:
        """Replace the bucket's buffer with ``buffer`` (``buffer()`` and ``gradients()`` then use it)."""
        self._buffer = buffer

    def __repr__(self):
        return f"<npusim.distributed.GradBucket {self._index} of {self._bucket_count}: {self._buffer.numel()} values>"
