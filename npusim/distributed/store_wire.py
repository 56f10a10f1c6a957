"""TCPStore's wire format: length-prefixed frames of tagged values, decoded as if from a stranger.

A frame is a 4-byte big-endian length and that many bytes. A request is an op name and its arguments; a
reply is a status and one value. Values are None, bools, 64-bit ints, floats, bytes, str and flat lists of
those; nothing is unpickled or evaluated, sizes are bounded, and any malformation is a ``WireError``.
"""
from __future__ import annotations

import struct

MAX_FRAME = 256 << 20          # a frame larger than this is refused before it is read
_LEN = struct.Struct(">I")
_INT = struct.Struct(">q")
_FLOAT = struct.Struct(">d")

OK, TIMEOUT, QUEUE_EMPTY, VALUE_ERROR, REFUSED = range(5)


class WireError(ValueError):
    """A frame that does not follow the format (or a peer that went away mid-frame)."""


def _encode(v, out: list, depth=0) -> None:
    if v is None:
        out.append(b"N")
    elif v is True or v is False:
        out.append(b"T" if v else b"F")
    elif isinstance(v, int):
        out.append(b"I" + _INT.pack(v))
    elif isinstance(v, float):
        out.append(b"D" + _FLOAT.pack(v))
    elif isinstance(v, bytes):
        out.append(b"B" + _LEN.pack(len(v)))
        out.append(v)
    elif isinstance(v, str):
        b = v.encode("utf-8", "surrogatepass")
        out.append(b"S" + _LEN.pack(len(b)))
        out.append(b)
    elif isinstance(v, (list, tuple)) and depth == 0:
        out.append(b"L" + _LEN.pack(len(v)))
        for item in v:
            _encode(item, out, 1)
    else:
        raise TypeError(f"cannot send {type(v).__name__} to a store")


def encode(*values) -> bytes:
    out: list = []
    for v in values:
        _encode(v, out)
    body = b"".join(out)
    if len(body) > MAX_FRAME:
        raise ValueError(f"a store message of {len(body)} bytes is larger than the {MAX_FRAME}-byte limit")
    return _LEN.pack(len(body)) + body


def _need(buf, pos, n):
    if pos + n > len(buf):
        raise WireError("truncated value")


def _decode(buf: bytes, pos: int, depth: int):
    _need(buf, pos, 1)
    tag = buf[pos:pos + 1]
    pos += 1
    if tag == b"N":
        return None, pos
    if tag in (b"T", b"F"):
        return tag == b"T", pos
    if tag == b"I":
        _need(buf, pos, 8)
        return _INT.unpack_from(buf, pos)[0], pos + 8
    if tag == b"D":
        _need(buf, pos, 8)
        return _FLOAT.unpack_from(buf, pos)[0], pos + 8
    if tag in (b"B", b"S"):
        _need(buf, pos, 4)
        n = _LEN.unpack_from(buf, pos)[0]
        pos += 4
        _need(buf, pos, n)
        raw = bytes(buf[pos:pos + n])
        if tag == b"B":
            return raw, pos + n
        try:
            return raw.decode("utf-8", "surrogatepass"), pos + n
        except UnicodeDecodeError:
            raise WireError("a key is not UTF-8") from None
    if tag == b"L" and depth == 0:
        _need(buf, pos, 4)
        n = _LEN.unpack_from(buf, pos)[0]
        pos += 4
        if n > len(buf) - pos:        # every item takes at least one byte
            raise WireError("a list longer than its frame")
        items = []
        for _ in range(n):
            item, pos = _decode(buf, pos, 1)
            items.append(item)
        return items, pos
    raise WireError(f"unknown tag {tag!r}")


def decode(body: bytes) -> list:
    """Every value of a frame's body."""
    values, pos = [], 0
    while pos < len(body):
        v, pos = _decode(body, pos, 0)
        values.append(v)
    return values


def _recv_exactly(sock, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the peer closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def recv_frame(sock) -> list:
    n = _LEN.unpack(_recv_exactly(sock, 4))[0]
    if n > MAX_FRAME:
        raise WireError(f"a frame of {n} bytes is larger than the {MAX_FRAME}-byte limit")
    return decode(_recv_exactly(sock, n))
