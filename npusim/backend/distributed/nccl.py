"""The ``nccl`` backend: collectives through NCCL (CuPy's ``cupy.cuda.nccl``) for npu tensors on NVIDIA GPUs.

One NCCL communicator per GPU the group uses, made at its first collective: rank 0
makes the unique id, the group's Store (MPI) hands it to the others. Collectives
are queued on the device's current stream; a CUDA event recorded after them tells
the ``Work`` when they are done. A timed-out wait aborts the communicators
(``ncclCommAbort``), which also frees a GPU stuck in a collective.
Gather, scatter and all-to-all are grouped point-to-point calls, as NCCL has none.
"""
from __future__ import annotations

import importlib.util

import ml_dtypes
import numpy as np

from ..runtime import runtime

from ...privateuse1.distributed import (
    Backend, BackendOptions, CollectiveBackend, DistBackendError, RedOpType, Work, seconds_of,
)

_BF16 = np.dtype(ml_dtypes.bfloat16)


def _nccl_module():
    """``cupy.cuda.nccl`` when CuPy was built with NCCL, else None."""
    if importlib.util.find_spec("cupy") is None:
        return None
    try:
        from cupy.cuda import nccl
    except ImportError:
        return None
    return nccl if getattr(nccl, "available", False) else None


def _npu_mode() -> str:
    return runtime.probe()


def nccl_available() -> bool:
    """CuPy has NCCL (``npusim.distributed.is_nccl_available``)."""
    return _nccl_module() is not None


def nccl_usable() -> bool:
    """NCCL can serve npu tensors in this process: the npu runs on a GPU and CuPy has NCCL."""
    return importlib.util.find_spec("cupy") is not None and _npu_mode() == "cuda" and _nccl_module() is not None


def _nccl_dtype(nccl, dtype):
    table = {"b": nccl.NCCL_INT8, "B": nccl.NCCL_UINT8, "i": nccl.NCCL_INT32, "I": nccl.NCCL_UINT32,
             "l": nccl.NCCL_INT64, "L": nccl.NCCL_UINT64, "q": nccl.NCCL_INT64, "Q": nccl.NCCL_UINT64,
             "e": nccl.NCCL_FLOAT16, "f": nccl.NCCL_FLOAT32, "d": nccl.NCCL_FLOAT64}
    if dtype == _BF16 and hasattr(nccl, "NCCL_BFLOAT16"):
        return nccl.NCCL_BFLOAT16
    code = table.get(np.dtype(dtype).char) if dtype != _BF16 else None
    if code is None:
        raise TypeError(f"the nccl backend cannot reduce {dtype} tensors")
    return code


def _nccl_op(nccl, op):
    table = {RedOpType.SUM: nccl.NCCL_SUM, RedOpType.PRODUCT: nccl.NCCL_PROD, RedOpType.MIN: nccl.NCCL_MIN,
             RedOpType.MAX: nccl.NCCL_MAX}
    if op not in table:
        raise ValueError(f"the nccl backend does not support {op!r}")
    return table[op]


def _ptr(array, byte_offset: int = 0) -> int:
    return array.data.ptr + byte_offset


class NcclWork(Work):
    """Complete once the CUDA event recorded after its NCCL calls has fired."""

    def __init__(self, what, backend, event, comm, keep=()):
        super().__init__(what, backend.timeout_s, backend=backend)
        self._event = event
        self._comm = comm
        self._keep = keep

    def _test(self) -> bool:
        if self._event.done:
            self._keep = ()
            return True
        self._comm.check_async_error()      # surfaces a failed peer instead of waiting for the timeout
        return False


class NcclBackend(CollectiveBackend):
    """Collectives of one process group over NCCL communicators (one per GPU used)."""

    name = Backend.NCCL

    def __init__(self, options: BackendOptions):
        super().__init__(options.group_rank, options.group_size, seconds_of(options.timeout))
        self._nccl = _nccl_module()
        if self._nccl is None:
            raise RuntimeError("the nccl backend needs CuPy built with NCCL (pip install -e '.[gpu]': CuPy 14 for CUDA 13) and an "
                               "NVIDIA GPU; use backend='mpi' otherwise")
        if _npu_mode() != "cuda":
            raise RuntimeError("ProcessGroupNCCL is only supported with GPUs, no GPUs found! The npu runs in "
                               "emulation mode here: use backend='mpi' for its tensors")
        self._store = options.store
        self._comms = {}

    # --- communicators and launching ------------------------------------------------------------------------
    def _what(self, op: str) -> str:
        return f"{op} on rank {self._rank} of {self._store.describe}"

    def _comm_for(self, array):
        import cupy
        if not isinstance(array, cupy.ndarray):
            raise TypeError(f"the nccl backend moves CuPy arrays (npu tensors on a GPU), got "
                            f"{type(array).__name__}")
        device = array.device.id
        comm = self._comms.get(device)
        if comm is None:
            uid = self._nccl.get_unique_id() if self._rank == 0 else None
            uid = self._store.broadcast_object(uid, 0, "nccl communicator setup")
            with cupy.cuda.Device(device):
                comm = self._nccl.NcclCommunicator(self._size, uid, self._rank)
            self._comms[device] = comm
        return comm, device

    def _launch(self, op, array, issue, keep=(), before=None):
        """Run ``before()`` (a local copy) and ``issue(comm, stream_ptr)`` on ``array``'s GPU; return the work
        that waits for them."""
        import cupy
        if self.aborted is not None:
            raise DistBackendError(f"{self._what(op)}: the process group was aborted earlier: {self.aborted}")
        comm, device = self._comm_for(array)
        with cupy.cuda.Device(device):
            stream = cupy.cuda.get_current_stream()
            if before is not None:
                before()
            issue(comm, stream.ptr)
            event = cupy.cuda.Event(block=False, disable_timing=True)
            event.record(stream)
        return NcclWork(self._what(op), self, event, comm, keep)

    def _grouped(self, calls):
        """NCCL calls issued as one group (point-to-point patterns)."""
        nccl = self._nccl

        def issue(comm, stream):
            nccl.groupStart()
            try:
                for call in calls:
                    call(comm, stream)
            finally:
                nccl.groupEnd()
        return issue

    def abort(self, reason: str) -> None:
        super().abort(reason)
        for comm in self._comms.values():
            comm.abort()
        self._comms = {}
        self._store.abort(reason)

    def shutdown(self) -> None:
        if self.aborted is None:
            for comm in self._comms.values():
                comm.destroy()
        self._comms = {}

    # --- collectives ----------------------------------------------------------------------------------------
    def allreduce(self, array, op):
        dtype, nop, n = _nccl_dtype(self._nccl, array.dtype), _nccl_op(self._nccl, op), array.size
        return self._launch("all_reduce", array,
                            lambda c, s: c.allReduce(_ptr(array), _ptr(array), n, dtype, nop, s))

    def broadcast(self, array, root):
        n = array.nbytes
        u8 = self._nccl.NCCL_UINT8
        return self._launch("broadcast", array, lambda c, s: c.broadcast(_ptr(array), _ptr(array), n, u8, root, s))

    def reduce(self, array, root, op):
        dtype, nop, n = _nccl_dtype(self._nccl, array.dtype), _nccl_op(self._nccl, op), array.size
        return self._launch("reduce", array,
                            lambda c, s: c.reduce(_ptr(array), _ptr(array), n, dtype, nop, root, s))

    def allgather(self, output, input):
        n, u8 = input.nbytes, self._nccl.NCCL_UINT8
        return self._launch("all_gather", output, lambda c, s: c.allGather(_ptr(input), _ptr(output), n, u8, s),
                            (input,))

    def reduce_scatter(self, output, input, op):
        dtype, nop, n = _nccl_dtype(self._nccl, input.dtype), _nccl_op(self._nccl, op), output.size
        return self._launch("reduce_scatter", output,
                            lambda c, s: c.reduceScatter(_ptr(input), _ptr(output), n, dtype, nop, s), (input,))

    def gather(self, output, input, root):
        n, u8 = input.nbytes, self._nccl.NCCL_UINT8
        if self._rank != root:
            return self._launch("gather", input,
                                self._grouped([lambda c, s: c.send(_ptr(input), n, u8, root, s)]))
        calls = [lambda c, s, r=r: c.recv(_ptr(output, r * n), n, u8, r, s) for r in range(self._size) if r != root]

        def own_part():
            output.reshape(-1).view(np.uint8)[root * n:(root + 1) * n] = input.reshape(-1).view(np.uint8)
        return self._launch("gather", output, self._grouped(calls), (input,), before=own_part)

    def scatter(self, output, input, root):
        n, u8 = output.nbytes, self._nccl.NCCL_UINT8
        if self._rank != root:
            return self._launch("scatter", output,
                                self._grouped([lambda c, s: c.recv(_ptr(output), n, u8, root, s)]))
        calls = [lambda c, s, r=r: c.send(_ptr(input, r * n), n, u8, r, s) for r in range(self._size) if r != root]

        def own_part():
            output.reshape(-1).view(np.uint8)[:] = input.reshape(-1).view(np.uint8)[root * n:(root + 1) * n]
        return self._launch("scatter", output, self._grouped(calls), (input,), before=own_part)

    def alltoall(self, output, input, output_counts, input_counts):
        size, u8 = input.itemsize, self._nccl.NCCL_UINT8
        send = [int(c) * size for c in input_counts]
        recv = [int(c) * size for c in output_counts]
        send_at = np.concatenate([[0], np.cumsum(send)[:-1]]).astype(int).tolist()
        recv_at = np.concatenate([[0], np.cumsum(recv)[:-1]]).astype(int).tolist()
        me = self._rank

        def own_part():
            if recv[me]:
                out_bytes, in_bytes = output.reshape(-1).view(np.uint8), input.reshape(-1).view(np.uint8)
                out_bytes[recv_at[me]:recv_at[me] + recv[me]] = in_bytes[send_at[me]:send_at[me] + send[me]]
        calls = []
        for r in range(self._size):
            if r == me:
                continue
            if send[r]:
                calls.append(lambda c, s, r=r: c.send(_ptr(input, send_at[r]), send[r], u8, r, s))
            if recv[r]:
                calls.append(lambda c, s, r=r: c.recv(_ptr(output, recv_at[r]), recv[r], u8, r, s))
        return self._launch("all_to_all", output, self._grouped(calls), (input,), before=own_part)

    def send(self, array, dst, tag):
        n, u8 = array.nbytes, self._nccl.NCCL_UINT8
        return self._launch("send", array, self._grouped([lambda c, s: c.send(_ptr(array), n, u8, dst, s)]))

    def recv(self, array, src, tag):
        if src is None:
            raise ValueError("the nccl backend cannot receive from any rank: pass src")
        n, u8 = array.nbytes, self._nccl.NCCL_UINT8
        work = self._launch("recv", array, self._grouped([lambda c, s: c.recv(_ptr(array), n, u8, src, s)]))
        work._source = src
        return work

    def barrier(self):
        import cupy
        token = cupy.zeros(1, dtype=cupy.int32)
        return self.allreduce(token, RedOpType.SUM)


def create_nccl_backend(options: BackendOptions) -> NcclBackend:
    return NcclBackend(options)
