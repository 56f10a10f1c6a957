"""CRC-32 (the ZIP checksum) of large buffers, computed on several threads.

``zlib.crc32`` runs at well under the speed of a file write and releases the
GIL for large inputs, so records are checksummed in chunks on a thread pool
while the writer thread writes them, and the chunk checksums are joined with
``combine`` (zlib's crc32_combine, which Python does not expose).
"""
from __future__ import annotations

import os
import zlib
from concurrent.futures import ThreadPoolExecutor

_POLY = 0xEDB88320  # CRC-32 polynomial, bit-reversed


def _mult_mod_p(a: int, b: int) -> int:
    """a * b modulo the CRC polynomial (bit-reversed representation)."""
    m = 1 << 31
    p = 0
    while True:
        if a & m:
            p ^= b
            if (a & (m - 1)) == 0:
                return p
        m >>= 1
        b = (b >> 1) ^ _POLY if b & 1 else b >> 1


def _x_to_2n_table():
    table = []
    p = 1 << 30  # x^1
    for _ in range(32):
        table.append(p)
        p = _mult_mod_p(p, p)
    return table


_X2N = _x_to_2n_table()


def _x_to_8n(nbytes: int) -> int:
    """x^(8 * nbytes) modulo the polynomial: the operator that shifts a CRC past ``nbytes`` zero bytes."""
    p = 1 << 31  # x^0
    k = 3
    while nbytes:
        if nbytes & 1:
            p = _mult_mod_p(_X2N[k & 31], p)
        nbytes >>= 1
        k += 1
    return p


def combine(crc1: int, crc2: int, len2: int) -> int:
    """CRC of A+B from crc(A), crc(B) and len(B)."""
    return _mult_mod_p(_x_to_8n(len2), crc1) ^ crc2


CHUNK = 8 << 20          # bytes per checksum task
PARALLEL_MIN = 4 * CHUNK  # smaller buffers are checksummed inline

_pool: ThreadPoolExecutor | None = None
_pool_pid = None


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _executor() -> ThreadPoolExecutor:
    global _pool, _pool_pid
    if _pool is None or _pool_pid != os.getpid():  # a forked child cannot use its parent's threads
        # one core stays with the thread that writes; up to four checksum the chunks
        _pool = ThreadPoolExecutor(max_workers=max(1, min(4, _usable_cpus() - 1)), thread_name_prefix="npusim-crc32")
        _pool_pid = os.getpid()
    return _pool


class ChunkedCrc:
    """The CRC-32 of a buffer, computed in the background chunk by chunk while the caller writes it.

    ``value()`` waits for the checksum tasks and joins them.
    """

    def __init__(self, view: memoryview):
        n = view.nbytes
        if n < PARALLEL_MIN:
            self._futures = None
            self._crc = zlib.crc32(view)
            return
        pool = _executor()
        self._futures = [(pool.submit(zlib.crc32, view[i:i + CHUNK]), min(CHUNK, n - i)) for i in range(0, n, CHUNK)]

    def value(self) -> int:
        if self._futures is None:
            return self._crc
        crc = 0
        full_op = None
        for fut, length in self._futures:
            if length == CHUNK:
                if full_op is None:
                    full_op = _x_to_8n(CHUNK)
                crc = _mult_mod_p(full_op, crc) ^ fut.result()
            else:
                crc = combine(crc, fut.result(), length)
        return crc
