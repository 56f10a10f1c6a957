"""Writing the ZIP container, laid out as PyTorch's writer (miniz) lays it out.

Records are stored uncompressed; each one's data starts on a 64-byte boundary
(padding goes in an ``FB`` extra field, as torch writes it), so archives can be
memory-mapped. The CRC of a record is computed while it is written and stored
in a data descriptor after it, so nothing is written twice and the output
stream never seeks (when saving to a path, the CRCs are patched in at the end
so that computing them overlaps the file's writeback, which starts while the
records are still being written). Archives past 4 GiB use ZIP64 records.
"""
from __future__ import annotations

import os
import struct
import threading
import zlib

from .crc32 import CHUNK, ChunkedCrc

ALIGNMENT = 64
U32_MAX = 0xFFFFFFFF
U16_MAX = 0xFFFF
_FLAGS = 0x0808          # bit 3: sizes and CRC in a data descriptor; bit 11: UTF-8 names
_DOS_DATE = 0x0021       # 1980-01-01: archives do not depend on the clock
_LOCAL = struct.Struct("<IHHHHHIIIHH")
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
_EOCD = struct.Struct("<IHHHHIIH")
_EOCD64 = struct.Struct("<IQHHIIQQQQ")
_EOCD64_LOCATOR = struct.Struct("<IIQI")


_compute_crc32 = True


def get_crc32_options() -> bool:
    """Whether ``npusim.save`` computes the CRC-32 of each record (torch.serialization.get_crc32_options)."""
    return _compute_crc32


def set_crc32_options(compute_crc32: bool) -> None:
    """Compute (default) or skip the CRC-32 of each record (torch.serialization.set_crc32_options).

    Skipping saves the checksum's time on large tensors; ``npusim.load`` and
    ``torch.load`` read such archives, but zip tools report their records as corrupt.
    """
    global _compute_crc32
    if not isinstance(compute_crc32, bool):
        raise TypeError(f"compute_crc32 must be a bool, got {type(compute_crc32).__name__}")
    _compute_crc32 = compute_crc32


def _fsync_quietly(fd: int) -> None:
    try:
        os.fsync(fd)
    except OSError:
        pass  # an early, best-effort sync: the caller's final fsync reports real errors


class _Entry:
    __slots__ = ("name", "offset", "size", "crc")

    def __init__(self, name, offset, size, crc):
        self.name, self.offset, self.size, self.crc = name, offset, size, crc


class ZipWriter:
    """Writes records ``<archive_name>/<name>`` to a binary stream, then the central directory.

    ``sync_file``: the stream is a seekable file this writer starts at offset 0
    of. Checksums of large records are then not waited for while writing: the
    data goes to the file at once, its writeback to disk (fsyncs on a helper
    thread, from the first large record on) overlaps the writing and the checksum
    threads, and the CRCs are patched into the data descriptors at the end. Other
    streams are written strictly in order.
    """

    def __init__(self, out, archive_name: str, *, sync_file: bool = False):
        self._out = out
        self._prefix = archive_name + "/"
        self._pos = 0
        self._entries: list[_Entry] = []
        self._names: set[str] = set()
        self._sync_file = sync_file
        self._pending: list = []  # (entry, ChunkedCrc, offset of the descriptor's CRC field)
        self._syncer: threading.Thread | None = None    # the fsync under way (sync_file only)

    def _write(self, data) -> None:
        n = data.nbytes if isinstance(data, memoryview) else len(data)
        written = self._out.write(data)
        if written is not None and written != n:  # raw streams may write part of a buffer
            view = memoryview(data)[written:]
            while view.nbytes:
                k = self._out.write(view)
                if not k:
                    raise OSError("short write: the output stream accepted no more bytes")
                view = view[k:]
        self._pos += n

    def write_record(self, name: str, data) -> None:
        """Store ``data`` (bytes or any C-contiguous buffer) as ``<archive>/<name>``."""
        full = self._prefix + name
        if full in self._names:
            raise RuntimeError(f"record '{name}' is written twice")
        self._names.add(full)
        view = memoryview(data).cast("B") if not isinstance(data, bytes) else memoryview(data)
        size = view.nbytes
        name_bytes = full.encode("utf-8")
        offset = self._pos
        big_size, big_offset = size >= U32_MAX, offset >= U32_MAX
        zip64 = b""
        if big_size or big_offset:
            fields = (struct.pack("<QQ", size, size) if big_size else b"") + \
                     (struct.pack("<Q", offset) if big_offset else b"")
            zip64 = struct.pack("<HH", 1, len(fields)) + fields
        # data starts after header, name, zip64 field and the FB padding field, on an aligned offset
        start = offset + _LOCAL.size + len(name_bytes) + len(zip64) + 4
        pad = -start % ALIGNMENT
        extra = zip64 + b"FB" + struct.pack("<H", pad) + b"Z" * pad
        self._write(_LOCAL.pack(0x04034B50, 45 if zip64 else 20, _FLAGS, 0, 0, _DOS_DATE, 0, 0, 0,
                                len(name_bytes), len(extra)) + name_bytes + extra)
        if size < (1 << 20):
            crc = zlib.crc32(view)
            if size:
                self._write(view)
        else:
            summer = ChunkedCrc(view) if _compute_crc32 else None
            for i in range(0, size, CHUNK):
                self._write(view[i:i + CHUNK])
                if self._sync_file:
                    self._write_back()
            crc = 0 if summer is None else None if self._sync_file else summer.value()
        entry = _Entry(name_bytes, offset, size, crc)
        if crc is None:
            self._pending.append((entry, summer, self._pos + 4))
            crc = 0  # patched in finish()
        if big_size or big_offset:
            self._write(struct.pack("<IIQQ", 0x08074B50, crc, size, size))
        else:
            self._write(struct.pack("<IIII", 0x08074B50, crc, size, size))
        self._entries.append(entry)

    def _write_back(self) -> None:
        """Start an fsync of what is written so far on a helper thread, unless one is under way.

        The disk then writes the data while this thread writes more (and the checksums are computed),
        instead of all of it waiting for one fsync at the end.
        """
        if self._syncer is None or not self._syncer.is_alive():
            self._syncer = threading.Thread(target=_fsync_quietly, args=(self._out.fileno(),), daemon=True)
            self._syncer.start()

    def _settle_checksums(self) -> None:
        """Wait for the writeback under way and the deferred CRCs, then patch the CRCs in."""
        if self._syncer is None:    # no large record was written to a file
            return
        out = self._out
        self._syncer.join()
        if not self._pending:
            return
        out.flush()
        self._syncer = None
        self._write_back()     # the rest of the data goes to disk while the checksums finish
        try:
            for entry, summer, _ in self._pending:
                entry.crc = summer.value()
        finally:
            self._syncer.join()
        for entry, _, at in self._pending:
            out.seek(at)
            out.write(struct.pack("<I", entry.crc))
        out.seek(self._pos)
        self._pending.clear()

    def finish(self) -> None:
        """Write the central directory and the end records."""
        self._settle_checksums()
        cd_start = self._pos
        parts = []
        for e in self._entries:
            big_size, big_offset = e.size >= U32_MAX, e.offset >= U32_MAX
            fields = (struct.pack("<QQ", e.size, e.size) if big_size else b"") + \
                     (struct.pack("<Q", e.offset) if big_offset else b"")
            extra = struct.pack("<HH", 1, len(fields)) + fields if fields else b""
            size32 = U32_MAX if big_size else e.size
            parts.append(_CENTRAL.pack(0x02014B50, 45 if fields else 20, 45 if fields else 20, _FLAGS, 0, 0,
                                       _DOS_DATE, e.crc, size32, size32, len(e.name), len(extra), 0, 0, 0, 0,
                                       U32_MAX if big_offset else e.offset) + e.name + extra)
        cd = b"".join(parts)
        self._write(cd)
        cd_size, count = len(cd), len(self._entries)
        if count >= U16_MAX or cd_start >= U32_MAX or cd_size >= U32_MAX:
            eocd64_at = self._pos
            self._write(_EOCD64.pack(0x06064B50, _EOCD64.size - 12, 45, 45, 0, 0, count, count, cd_size, cd_start))
            self._write(_EOCD64_LOCATOR.pack(0x07064B50, 0, eocd64_at, 1))
            self._write(_EOCD.pack(0x06054B50, 0, 0, U16_MAX, U16_MAX, U32_MAX, U32_MAX, 0))
        else:
            self._write(_EOCD.pack(0x06054B50, 0, 0, count, count, cd_size, cd_start, 0))
