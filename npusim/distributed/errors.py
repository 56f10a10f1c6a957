"""The errors of ``npusim.distributed`` (``torch.distributed.DistError`` and its kin)."""
from __future__ import annotations


class DistError(RuntimeError):
    """A failure of the distributed package."""


class DistBackendError(DistError):
    """A backend failed or timed out; the process group it belongs to is no longer usable."""


class DistStoreError(DistError):
    """The ranks could not agree or exchange setup data (the rendezvous failed or timed out)."""


class DistNetworkError(DistError):
    """The transport between ranks failed."""
