"""The option holders torch's ``ProcessGroup`` methods take (``AllreduceOptions`` and the rest): plain objects
with torch's fields and defaults. ``timeout`` defaults to torch's "unset" (-1 ms): the group's own timeout."""
from __future__ import annotations

from datetime import timedelta

from .reduce_op import ReduceOp

UNSET_TIMEOUT = timedelta(milliseconds=-1)


class _Options:
    _fields: tuple = ()

    def __init__(self):
        self.timeout = UNSET_TIMEOUT
        self.asyncOp = True

    def __repr__(self):
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in ("timeout", "asyncOp") + self._fields)
        return f"{type(self).__name__}({fields})"


class AllreduceOptions(_Options):
    """``reduceOp`` (SUM), ``timeout``, ``asyncOp``."""

    _fields = ("reduceOp",)

    def __init__(self):
        super().__init__()
        self.reduceOp = ReduceOp(ReduceOp.SUM)


class AllreduceCoalescedOptions(AllreduceOptions):
    """As ``AllreduceOptions``, for ``allreduce_coalesced``."""


class BroadcastOptions(_Options):
    """``rootRank`` and ``rootTensor`` (0), ``timeout``, ``asyncOp``."""

    _fields = ("rootRank", "rootTensor")

    def __init__(self):
        super().__init__()
        self.rootRank = 0
        self.rootTensor = 0


class ReduceOptions(_Options):
    """``reduceOp`` (SUM), ``rootRank`` and ``rootTensor`` (0), ``timeout``, ``asyncOp``."""

    _fields = ("reduceOp", "rootRank", "rootTensor")

    def __init__(self):
        super().__init__()
        self.reduceOp = ReduceOp(ReduceOp.SUM)
        self.rootRank = 0
        self.rootTensor = 0


class GatherOptions(_Options):
    """``rootRank`` (0), ``timeout``, ``asyncOp``."""

    _fields = ("rootRank",)

    def __init__(self):
        super().__init__()
        self.rootRank = 0


class ScatterOptions(_Options):
    """``rootRank`` (0), ``timeout``, ``asyncOp``."""

    _fields = ("rootRank",)

    def __init__(self):
        super().__init__()
        self.rootRank = 0


class ReduceScatterOptions(_Options):
    """``reduceOp`` (SUM), ``timeout``, ``asyncOp``."""

    _fields = ("reduceOp",)

    def __init__(self):
        super().__init__()
        self.reduceOp = ReduceOp(ReduceOp.SUM)


class AllToAllOptions(_Options):
    """``timeout``, ``asyncOp``."""


class BarrierOptions(_Options):
    """``device_ids`` ([]), ``device`` (None), ``timeout``, ``asyncOp``."""

    _fields = ("device_ids", "device")

    def __init__(self):
        super().__init__()
        self.device_ids = []
        self.device = None


class AllgatherOptions(_Options):
    """``timeout``, ``asyncOp`` (for ``allgather`` and ``allgather_coalesced``)."""
