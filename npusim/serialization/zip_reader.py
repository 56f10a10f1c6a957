"""Reading the ZIP container, checking every size and offset against the file before using it.

Only what archives need: the end records (ZIP64 included), the central
directory, local headers, stored records (deflated ones too, with their output
bounded). Anything inconsistent raises ``ArchiveError`` saying what is wrong;
no allocation is made from a size that the file cannot back.
"""
from __future__ import annotations

import struct
import zlib

from .errors import ArchiveError

_EOCD = struct.Struct("<IHHHHIIH")
_EOCD64 = struct.Struct("<IQHHIIQQQQ")
_EOCD64_LOCATOR = struct.Struct("<IIQI")
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
_LOCAL = struct.Struct("<IHHHHHIIIHH")
U32_MAX = 0xFFFFFFFF
U16_MAX = 0xFFFF
_MAX_COMMENT = 0xFFFF
_DEFLATE_MAX_RATIO = 1032  # deflate cannot expand more than this: larger claims are corrupt or hostile
# All records together may hold at most this many times the file's size, plus the allowance (compressed
# records of zeros can legitimately go past the ratio; raise these to load such a file you trust)
MAX_EXPANSION_RATIO = 100
EXPANSION_ALLOWANCE = 256 << 20
# torch's legacy (non-zip) format starts with a pickled magic number
_LEGACY_MAGIC = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19."


class Record:
    __slots__ = ("name", "header_offset", "method", "flags", "compressed_size", "size", "crc", "_data_offset",
                 "name_len", "_end_limit")

    def __init__(self, name, header_offset, method, flags, compressed_size, size, crc, name_len=0):
        self.name = name
        self.header_offset = header_offset
        self.method = method
        self.flags = flags
        self.compressed_size = compressed_size
        self.size = size
        self.crc = crc
        self._data_offset = None
        self.name_len = name_len      # bytes of the full name, as the local header must repeat it
        self._end_limit = None        # where the next record (or the central directory) starts


class ZipReader:
    """The records of one archive in a seekable binary stream ``f`` (never closed here)."""

    def __init__(self, f, description: str = "the file"):
        self._f = f
        self._what = description
        try:
            f.seek(0, 2)
            self.file_size = f.tell()
        except (OSError, ValueError) as e:
            raise ArchiveError(f"cannot determine the size of {description}: {e}") from None
        self._records: dict[str, Record] = {}
        self.archive_name = ""
        self._parse()

    # --- low-level reads --------------------------------------------------------------------------------
    def _read_at(self, offset: int, n: int, what: str) -> bytes:
        if offset < 0 or n < 0 or offset + n > self.file_size:
            raise ArchiveError(f"{what} lies outside the file ({n} bytes at offset {offset}, but {self._what} "
                               f"holds {self.file_size} bytes): the archive is truncated or corrupt")
        self._f.seek(offset)
        data = self._f.read(n)
        if len(data) != n:
            raise ArchiveError(f"{what} is truncated: expected {n} bytes at offset {offset}, read {len(data)}")
        return data

    # --- the directory --------------------------------------------------------------------------------------
    def _parse(self):
        size = self.file_size
        if size == 0:
            raise ArchiveError(f"{self._what} is empty: it is not an archive written by npusim.save or torch.save")
        tail_len = min(size, _EOCD.size + _MAX_COMMENT)
        tail = self._read_at(size - tail_len, tail_len, "the end of the file")
        eocd_pos = self._find_eocd(tail, size - tail_len)
        sig, disk, cd_disk, n_disk, n_total, cd_size, cd_offset, _ = _EOCD.unpack_from(tail, eocd_pos - (size - tail_len))
        end_of_cd = eocd_pos
        if disk != 0 or cd_disk != 0 or n_disk != n_total:
            raise ArchiveError("multi-disk zip archives are not supported")
        if n_total == U16_MAX or cd_size == U32_MAX or cd_offset == U32_MAX or self._has_zip64_locator(eocd_pos):
            n_total, cd_size, cd_offset, end_of_cd = self._read_zip64_end(eocd_pos)
        # bytes before the archive (a prefix) shift every offset by the same amount, as zipfile allows
        self._concat = end_of_cd - cd_size - cd_offset
        if self._concat < 0 or cd_size > end_of_cd:
            raise ArchiveError(f"the central directory ({cd_size} bytes at offset {cd_offset}) does not fit before "
                               f"its end record at offset {end_of_cd}: the archive is corrupt")
        if n_total * _CENTRAL.size > cd_size:
            raise ArchiveError(f"the central directory claims {n_total} entries but holds only {cd_size} bytes")
        cd = self._read_at(cd_offset + self._concat, cd_size, "the central directory")
        self._parse_central_directory(cd, n_total)
        self._check_layout(cd_offset + self._concat)

    def _find_eocd(self, tail: bytes, tail_start: int) -> int:
        pos = len(tail)
        while True:
            pos = tail.rfind(b"PK\x05\x06", 0, pos)
            if pos < 0:
                raise ArchiveError(self._not_a_zip_message())
            if pos + _EOCD.size <= len(tail):
                comment_len = struct.unpack_from("<H", tail, pos + 20)[0]
                if tail_start + pos + _EOCD.size + comment_len == self.file_size:
                    return tail_start + pos
            pos += 3  # look for an earlier signature (it cannot overlap this one)

    def _not_a_zip_message(self) -> str:
        head = self._read_at(0, min(self.file_size, len(_LEGACY_MAGIC)), "the start of the file")
        if head == _LEGACY_MAGIC:
            return (f"{self._what} uses torch's legacy format (torch.save with _use_new_zipfile_serialization="
                    "False), which npusim.load does not read: re-save it with torch.save's default format")
        if head.startswith(b"PK\x03\x04"):
            return (f"{self._what} starts like a zip archive but has no end-of-central-directory record: it is "
                    "truncated or corrupt")
        return (f"{self._what} is not a zip archive (no end-of-central-directory record): npusim.load reads "
                "archives written by npusim.save or torch.save")

    def _has_zip64_locator(self, eocd_pos: int) -> bool:
        if eocd_pos < _EOCD64_LOCATOR.size:
            return False
        return self._read_at(eocd_pos - _EOCD64_LOCATOR.size, 4, "the zip64 locator") == b"PK\x06\x07"

    def _read_zip64_end(self, eocd_pos: int):
        loc_pos = eocd_pos - _EOCD64_LOCATOR.size
        if loc_pos < 0:
            raise ArchiveError("the end record asks for zip64 sizes but the zip64 locator is missing")
        sig, disk, eocd64_offset, disks = _EOCD64_LOCATOR.unpack(self._read_at(loc_pos, _EOCD64_LOCATOR.size,
                                                                                "the zip64 locator"))
        if sig != 0x07064B50:
            raise ArchiveError("the end record asks for zip64 sizes but the zip64 locator is missing")
        if disk != 0 or disks > 1:
            raise ArchiveError("multi-disk zip archives are not supported")
        eocd64_pos = loc_pos - _EOCD64.size  # the record sits right before its locator (prefix-independent)
        raw = self._read_at(eocd64_pos, _EOCD64.size, "the zip64 end record")
        sig, _, _, _, d1, d2, n_disk, n_total, cd_size, cd_offset = _EOCD64.unpack(raw)
        if sig != 0x06064B50:
            raise ArchiveError("the zip64 end record is missing or corrupt")
        if d1 != 0 or d2 != 0 or n_disk != n_total:
            raise ArchiveError("multi-disk zip archives are not supported")
        return n_total, cd_size, cd_offset, eocd64_pos

    def _parse_central_directory(self, cd: bytes, count: int):
        pos = 0
        n = len(cd)
        first = None
        for i in range(count):
            if pos + _CENTRAL.size > n:
                raise ArchiveError(f"the central directory ends inside entry {i} of {count}")
            (sig, _, _, flags, method, _, _, crc, csize, usize, name_len, extra_len, comment_len, disk, _, _,
             offset) = _CENTRAL.unpack_from(cd, pos)
            if sig != 0x02014B50:
                raise ArchiveError(f"central directory entry {i} has a bad signature: the archive is corrupt")
            end = pos + _CENTRAL.size + name_len + extra_len + comment_len
            if end > n:
                raise ArchiveError(f"central directory entry {i} runs past the end of the directory")
            raw_name = cd[pos + _CENTRAL.size: pos + _CENTRAL.size + name_len]
            try:
                name = raw_name.decode("utf-8" if flags & 0x800 else "cp437")
            except UnicodeDecodeError:
                raise ArchiveError(f"central directory entry {i} has a name that is not valid UTF-8") from None
            extra = cd[pos + _CENTRAL.size + name_len: pos + _CENTRAL.size + name_len + extra_len]
            if csize == U32_MAX or usize == U32_MAX or offset == U32_MAX:
                usize, csize, offset = self._zip64_fields(extra, name, usize, csize, offset)
            if disk not in (0, U16_MAX):
                raise ArchiveError("multi-disk zip archives are not supported")
            pos = end
            if first is None:
                first = name
                slash = name.find("/")
                if slash <= 0:
                    raise ArchiveError(f"file in archive is not in a subdirectory: {name!r}")
                self.archive_name = name[:slash]
            prefix = self.archive_name + "/"
            if not name.startswith(prefix):
                continue  # torch ignores entries outside the archive's folder
            rel = name[len(prefix):]
            if rel in self._records:
                raise ArchiveError(f"the archive holds record '{rel}' twice")
            self._records[rel] = Record(rel, offset + self._concat, method, flags, csize, usize, crc, name_len)

    def _check_layout(self, cd_start: int) -> None:
        """Refuse records that overlap, and archives whose records expand far beyond the file.

        Overlapping records are how zip bombs multiply one block of compressed data. Each record spans at
        least its local header, its name and its compressed data; ``data_offset`` checks the rest of it (the
        local extra field) against the start of the next record once its header is read.
        """
        recs = sorted(self._records.values(), key=lambda r: r.header_offset)
        total = 0
        prev = None
        prev_end = 0
        for rec in recs:
            if prev is not None and rec.header_offset < prev_end:
                raise self._overlap_error(prev, prev_end, rec.name, rec.header_offset)
            if prev is not None:
                prev._end_limit = rec.header_offset
            prev, prev_end = rec, rec.header_offset + _LOCAL.size + rec.name_len + rec.compressed_size
            total += rec.size
        if prev is not None:
            if prev_end > cd_start:
                raise self._overlap_error(prev, prev_end, "the central directory", cd_start)
            prev._end_limit = cd_start
        limit = self.file_size * MAX_EXPANSION_RATIO + EXPANSION_ALLOWANCE
        if total > limit:
            raise ArchiveError(f"the archive's records expand to {total} bytes from a file of {self.file_size} "
                               f"bytes, more than npusim.load allows ({MAX_EXPANSION_RATIO} times the file's size "
                               f"plus {EXPANSION_ALLOWANCE >> 20} MiB): it is a zip bomb or corrupt. If you trust "
                               "it, raise npusim.serialization.zip_reader.MAX_EXPANSION_RATIO")

    @staticmethod
    def _overlap_error(rec: Record, end: int, other: str, other_start: int) -> ArchiveError:
        what = other if other == "the central directory" else f"record '{other}'"
        return ArchiveError(f"record '{rec.name}' (offsets {rec.header_offset} to {end}) overlaps {what} at offset "
                            f"{other_start}: zip records must not share data (overlapping records are how zip "
                            "bombs multiply their size), the archive is corrupt or hostile")

    def _zip64_fields(self, extra: bytes, name: str, usize: int, csize: int, offset: int):
        pos = 0
        while pos + 4 <= len(extra):
            tag, length = struct.unpack_from("<HH", extra, pos)
            body = extra[pos + 4: pos + 4 + length]
            if len(body) != length:
                break
            if tag == 1:
                vals = []
                want = (usize == U32_MAX) + (csize == U32_MAX) + (offset == U32_MAX)
                if length < 8 * want:
                    break
                for j in range(want):
                    vals.append(struct.unpack_from("<Q", body, 8 * j)[0])
                it = iter(vals)
                if usize == U32_MAX:
                    usize = next(it)
                if csize == U32_MAX:
                    csize = next(it)
                if offset == U32_MAX:
                    offset = next(it)
                return usize, csize, offset
            pos += 4 + length
        raise ArchiveError(f"record {name!r} needs zip64 sizes but has no valid zip64 extra field")

    # --- records -----------------------------------------------------------------------------------------
    def names(self):
        return list(self._records)

    def has(self, name: str) -> bool:
        return name in self._records

    def record(self, name: str) -> Record:
        try:
            return self._records[name]
        except KeyError:
            raise ArchiveError(f"the archive has no record '{name}' (it holds: "
                               f"{', '.join(sorted(self._records)) or 'nothing'})") from None

    def data_offset(self, rec: Record) -> int:
        """Absolute offset of ``rec``'s data in the file, after checking its local header."""
        if rec._data_offset is not None:
            return rec._data_offset
        head = self._read_at(rec.header_offset, _LOCAL.size, f"the local header of record '{rec.name}'")
        sig, _, flags, method, _, _, _, _, _, name_len, extra_len = _LOCAL.unpack(head)
        if sig != 0x04034B50:
            raise ArchiveError(f"record '{rec.name}' has a bad local header signature: the archive is corrupt")
        name = self._read_at(rec.header_offset + _LOCAL.size, name_len, f"the name of record '{rec.name}'")
        if name.decode("utf-8", "replace") != self.archive_name + "/" + rec.name:
            raise ArchiveError(f"record '{rec.name}': its local header names a different file: the archive is "
                               "corrupt")
        if rec.flags & 1 or flags & 1:
            raise ArchiveError(f"record '{rec.name}' is encrypted, which is not supported")
        start = rec.header_offset + _LOCAL.size + name_len + extra_len
        if start + rec.compressed_size > self.file_size:
            raise ArchiveError(f"record '{rec.name}' is truncated: it needs {rec.compressed_size} bytes at offset "
                               f"{start}, but {self._what} holds {self.file_size} bytes")
        if rec._end_limit is not None and start + rec.compressed_size > rec._end_limit:
            following = min((r for r in self._records.values() if r.header_offset == rec._end_limit),
                            key=lambda r: r.name, default=None)
            raise self._overlap_error(rec, start + rec.compressed_size,
                                      following.name if following is not None else "the central directory",
                                      rec._end_limit)
        if rec.method == 0 and rec.compressed_size != rec.size:
            raise ArchiveError(f"record '{rec.name}' is stored uncompressed but its sizes differ "
                               f"({rec.compressed_size} vs {rec.size}): the archive is corrupt")
        rec._data_offset = start
        return start

    def check_readable(self, rec: Record) -> int:
        """Check that ``rec``'s data can be read (before anything is allocated for it); return its offset."""
        start = self.data_offset(rec)
        if rec.method == 8:
            if rec.size > rec.compressed_size * _DEFLATE_MAX_RATIO + 1024:
                raise ArchiveError(f"record '{rec.name}' claims {rec.size} bytes from {rec.compressed_size} "
                                   "compressed bytes, more than deflate can produce: the archive is corrupt")
        elif rec.method != 0:
            raise ArchiveError(f"record '{rec.name}' uses zip compression method {rec.method}; only stored (0) and "
                               "deflated (8) records can be read")
        return start

    def read(self, name: str, *, verify: bool = True) -> bytes:
        """A small record's bytes (its CRC checked when the writer recorded one)."""
        rec = self.record(name)
        start = self.check_readable(rec)
        if rec.method == 0:
            data = self._read_at(start, rec.size, f"record '{name}'")
        else:
            data = self._inflate(rec, start)
        if verify and rec.crc != 0 and zlib.crc32(data) != rec.crc:
            raise ArchiveError(f"record '{name}' fails its CRC-32 check: the archive is corrupt")
        return data

    def read_into(self, rec: Record, out: memoryview) -> None:
        """Fill ``out`` (exactly ``rec.size`` bytes, allocated after ``check_readable``) with the record's data."""
        if out.nbytes != rec.size:
            raise ArchiveError(f"record '{rec.name}' holds {rec.size} bytes, expected {out.nbytes}")
        start = self.check_readable(rec)
        if rec.method == 8:
            out[:] = self._inflate(rec, start)
            return
        f = self._f
        f.seek(start)
        done = 0
        readinto = getattr(f, "readinto", None)
        while done < rec.size:
            if readinto is not None:
                k = readinto(out[done:])
            else:
                chunk = f.read(rec.size - done)
                k = len(chunk)
                out[done:done + k] = chunk
            if not k:
                raise ArchiveError(f"record '{rec.name}' is truncated: read {done} of {rec.size} bytes")
            done += k

    def _inflate(self, rec: Record, start: int) -> bytes:
        raw = self._read_at(start, rec.compressed_size, f"record '{rec.name}'")
        d = zlib.decompressobj(-15)
        try:
            data = d.decompress(raw, rec.size + 1)
        except zlib.error as e:
            raise ArchiveError(f"record '{rec.name}' cannot be inflated ({e}): the archive is corrupt") from None
        if len(data) != rec.size or not d.eof:
            raise ArchiveError(f"record '{rec.name}' inflates to a different size than its header says "
                               f"({rec.size} bytes): the archive is corrupt")
        return data
