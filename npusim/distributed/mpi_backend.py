"""The ``mpi`` backend: collectives through mpi4py, for cpu and npu tensors.

NumPy buffers (cpu tensors and the emulated npu's) go to MPI as they are, with no
copy. CuPy buffers (the npu on a GPU) are staged through host memory: the MPI of
the wheels is not CUDA-aware (the ``nccl`` backend serves GPU tensors). Every
transfer starts non-blocking so that waits stay bounded by the group's timeout.

Point-to-point messages carry a small header (byte count and shape) on a
communicator of their own, so a receive of the wrong shape fails loudly instead of
truncating or hanging; a mismatched payload is drained so the sender finishes too.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from .backend import Backend, BackendOptions, CollectiveBackend
from .errors import DistError
from .reduce_op import RedOpType
from .rendezvous import load_mpi
from .work import Work, seconds_of

_BF16 = np.dtype(ml_dtypes.bfloat16)
_HEADER_BYTES = 128
_COMBINE = {RedOpType.SUM: np.add, RedOpType.PRODUCT: np.multiply, RedOpType.MIN: np.minimum,
            RedOpType.MAX: np.maximum}
_bf16_ops = {}


def _mpi_op(MPI, op):
    return {RedOpType.SUM: MPI.SUM, RedOpType.PRODUCT: MPI.PROD, RedOpType.MIN: MPI.MIN, RedOpType.MAX: MPI.MAX,
            RedOpType.BAND: MPI.BAND, RedOpType.BOR: MPI.BOR, RedOpType.BXOR: MPI.BXOR}[op]


def _bf16_op(MPI, op):
    """MPI knows no bfloat16: a user-defined reduction over the raw 16-bit words, built once per op."""
    mop = _bf16_ops.get(op)
    if mop is None:
        ufunc = _COMBINE[op]

        def combine(inbuf, inoutbuf, datatype):
            ufunc(np.frombuffer(inbuf, dtype=_BF16), np.frombuffer(inoutbuf, dtype=_BF16),
                  out=np.frombuffer(inoutbuf, dtype=_BF16))

        mop = _bf16_ops[op] = MPI.Op.Create(combine, commute=True)
    return mop


def _staged(array):
    """A NumPy buffer for ``array`` and the copy-back to run on completion (None when it is the array itself)."""
    if isinstance(array, np.ndarray):
        return array, None
    host = array.get()          # a CuPy array: MPI reads and writes host memory
    return host, lambda: array.set(host)


def _describe(array) -> str:
    return f"{array.dtype}{list(array.shape)}"


def _header(array) -> np.ndarray:
    h = np.zeros(_HEADER_BYTES, dtype=np.uint8)
    h[:8] = np.frombuffer(np.int64(array.nbytes).tobytes(), dtype=np.uint8)
    text = _describe(array).encode()[:_HEADER_BYTES - 8]
    h[8:8 + len(text)] = np.frombuffer(text, dtype=np.uint8)
    return h


def _read_header(h) -> tuple:
    nbytes = int(h[:8].view(np.int64)[0])
    return nbytes, h[8:].tobytes().rstrip(b"\0").decode(errors="replace")


class MpiWork(Work):
    """Complete once all its MPI requests are."""

    def __init__(self, what, backend, requests, keep=()):
        super().__init__(what, backend.timeout_s, backend=backend)
        self._requests = requests
        self._keep = keep           # buffers MPI uses until the requests complete

    def _test(self) -> bool:
        if self._backend._MPI.Request.Testall(self._requests):
            self._keep = ()
            return True
        return False


class _RecvWork(Work):
    """A receive: its header first (from ``src``, or from any rank), then the payload from the header's sender.

    Payloads are posted in the order the receives were made (see ``MpiBackend._advance_receives``), so
    several receives from one rank with one tag match their messages in order.
    """

    def __init__(self, what, backend, array, src, tag):
        super().__init__(what, backend.timeout_s, backend=backend)
        MPI = backend._MPI
        self._array = array
        self._buf, self._copy_back = _staged(array)
        self._tag = tag
        self._header = np.zeros(_HEADER_BYTES, dtype=np.uint8)
        self._status = MPI.Status()
        source = MPI.ANY_SOURCE if src is None else src
        self._header_req = backend._headers.Irecv([self._header, MPI.BYTE], source=source, tag=tag)
        self._payload_req = None
        self._mismatch = None
        if self._copy_back is not None:
            self.then(self._copy_back)
        self.then(self._check)

    def _advance(self, backend) -> bool:
        """Post the payload receive once the header is in; False while it is not."""
        if self._payload_req is not None:
            return True
        if not self._header_req.Test(self._status):
            return False
        MPI = backend._MPI
        self._source = self._status.Get_source()
        nbytes, described = _read_header(self._header)
        target = self._buf.reshape(-1).view(np.uint8)
        if nbytes != target.size:
            self._mismatch = (f"recv from rank {self._source} (tag {self._tag}): the sender sent {described} "
                              f"({nbytes} bytes), but this rank receives into {_describe(self._array)} "
                              f"({target.size} bytes)")
            target = np.empty(nbytes, dtype=np.uint8)     # drain it, so the sender completes
            self._drain = target
        self._payload_req = backend._comm.Irecv([target, MPI.BYTE], source=self._source, tag=self._tag)
        return True

    def _test(self) -> bool:
        self._backend._advance_receives()
        return self._payload_req is not None and self._payload_req.Test()

    def _check(self) -> None:
        if self._mismatch is not None:
            raise DistError(self._mismatch)


class MpiBackend(CollectiveBackend):
    """Collectives of one process group over MPI communicators of its own."""

    name = Backend.MPI

    def __init__(self, options: BackendOptions):
        super().__init__(options.group_rank, options.group_size, seconds_of(options.timeout))
        self._MPI = load_mpi()
        self._store = options.store
        if self._store.comm is None:
            raise RuntimeError("the mpi backend needs the MPI rendezvous of its process group")
        self._comm = self._store.comm.Dup()        # collectives and payloads
        self._headers = self._store.comm.Dup()     # point-to-point headers, never confused with payloads
        self._receives = []
        self._tag_ub = self._comm.Get_attr(self._MPI.TAG_UB)

    # --- bookkeeping --------------------------------------------------------------------------------------
    def _what(self, op: str) -> str:
        return f"{op} on rank {self._rank} of {self._store.describe}"

    def _work(self, op, requests, keep=(), copy_back=None) -> MpiWork:
        work = MpiWork(self._what(op), self, requests, keep)
        if copy_back is not None:
            work.then(copy_back)
        return work

    def _reduction(self, buf, op):
        """The MPI buffer spec and MPI op to reduce ``buf`` with ``op``."""
        MPI = self._MPI
        flat = buf.reshape(-1)
        if flat.dtype == _BF16:
            return [flat.view(np.uint16), MPI.UINT16_T], _bf16_op(MPI, op)
        return flat, _mpi_op(MPI, op)

    def _bytes(self, buf):
        return [buf.reshape(-1).view(np.uint8), self._MPI.BYTE]

    def abort(self, reason: str) -> None:
        super().abort(reason)
        self._store.abort(reason)

    def shutdown(self) -> None:
        if self.aborted is None and self._comm is not None:
            self._comm.Free()
            self._headers.Free()
        self._comm = self._headers = None

    # --- collectives ----------------------------------------------------------------------------------------
    def allreduce(self, array, op):
        buf, back = _staged(array)
        spec, mop = self._reduction(buf, op)
        return self._work("all_reduce", [self._comm.Iallreduce(self._MPI.IN_PLACE, spec, mop)], (buf,), back)

    def broadcast(self, array, root):
        buf, back = _staged(array)
        return self._work("broadcast", [self._comm.Ibcast(self._bytes(buf), root=root)], (buf,), back)

    def reduce(self, array, root, op):
        buf, back = _staged(array)
        spec, mop = self._reduction(buf, op)
        if self._rank == root:
            req = self._comm.Ireduce(self._MPI.IN_PLACE, spec, mop, root=root)
        else:
            req = self._comm.Ireduce(spec, None, mop, root=root)
            back = None
        return self._work("reduce", [req], (buf,), back)

    def allgather(self, output, input):
        src, _ = _staged(input)
        out, back = _staged(output)
        req = self._comm.Iallgather(self._bytes(src), self._bytes(out))
        return self._work("all_gather", [req], (src, out), back)

    def reduce_scatter(self, output, input, op):
        src, _ = _staged(input)
        out, back = _staged(output)
        send, mop = self._reduction(src, op)
        recv, _ = self._reduction(out, op)
        return self._work("reduce_scatter", [self._comm.Ireduce_scatter_block(send, recv, mop)], (src, out), back)

    def gather(self, output, input, root):
        src, _ = _staged(input)
        if self._rank == root:
            out, back = _staged(output)
            req = self._comm.Igather(self._bytes(src), self._bytes(out), root=root)
            return self._work("gather", [req], (src, out), back)
        return self._work("gather", [self._comm.Igather(self._bytes(src), None, root=root)], (src,))

    def scatter(self, output, input, root):
        out, back = _staged(output)
        if self._rank == root:
            src, _ = _staged(input)
            req = self._comm.Iscatter(self._bytes(src), self._bytes(out), root=root)
            return self._work("scatter", [req], (src, out), back)
        return self._work("scatter", [self._comm.Iscatter(None, self._bytes(out), root=root)], (out,), back)

    def alltoall(self, output, input, output_counts, input_counts):
        src, _ = _staged(input)
        out, back = _staged(output)
        size = src.itemsize
        send_counts = [int(c) * size for c in input_counts]
        recv_counts = [int(c) * size for c in output_counts]
        send_displs = np.concatenate([[0], np.cumsum(send_counts)[:-1]]).astype(int).tolist()
        recv_displs = np.concatenate([[0], np.cumsum(recv_counts)[:-1]]).astype(int).tolist()
        MPI = self._MPI
        req = self._comm.Ialltoallv([src.reshape(-1).view(np.uint8), (send_counts, send_displs), MPI.BYTE],
                                    [out.reshape(-1).view(np.uint8), (recv_counts, recv_displs), MPI.BYTE])
        return self._work("all_to_all", [req], (src, out), back)

    def barrier(self):
        return self._work("barrier", [self._comm.Ibarrier()])

    # --- point to point ------------------------------------------------------------------------------------
    def _check_tag(self, tag) -> int:
        if not isinstance(tag, int) or isinstance(tag, bool) or not 0 <= tag <= self._tag_ub:
            raise ValueError(f"tag must be an int in [0, {self._tag_ub}], got {tag!r}")
        return tag

    def send(self, array, dst, tag):
        tag = self._check_tag(tag)
        buf, _ = _staged(array)
        header = _header(buf)
        MPI = self._MPI
        reqs = [self._headers.Isend([header, MPI.BYTE], dest=dst, tag=tag),
                self._comm.Isend(self._bytes(buf), dest=dst, tag=tag)]
        return self._work("send", reqs, (header, buf))

    def recv(self, array, src, tag):
        tag = self._check_tag(tag)
        work = _RecvWork(self._what("recv"), self, array, src, tag)
        self._receives.append(work)
        self._advance_receives()
        return work

    def _advance_receives(self) -> None:
        """Post payload receives in the order the receives were made (MPI matches them in posting order)."""
        # a later receive's header can only be in before an earlier one's when they wait on different ranks
        for work in self._receives:
            work._advance(self)
        self._receives = [w for w in self._receives if w._payload_req is None]


def create_mpi_backend(options: BackendOptions) -> MpiBackend:
    return MpiBackend(options)
