"""Hostile archives and save targets that torch itself does not survive: they fail cleanly instead.

Million-deep nesting that crashes the interpreter when hashed, zip records that share one compressed block
(zip bombs), pickled state that replaces an object's methods; saves to FIFOs, devices and directories, and
extra-file names the zip format cannot hold.
"""
from __future__ import annotations

import dataclasses
import io
import os
import pathlib
import stat
import struct
import subprocess
import sys
import threading
import zipfile
import zlib
from collections import Counter, OrderedDict

import pytest

import npusim
from conftest import host
from npusim.serialization import ArchiveError, UnpicklingError

ROOT = pathlib.Path(__file__).resolve().parents[1]


def save_bytes(obj, **kw) -> bytes:
    buf = io.BytesIO()
    npusim.save(obj, buf, **kw)
    return buf.getvalue()


def load_bytes(data: bytes, **kw):
    return npusim.load(io.BytesIO(data), **kw)


def records(data: bytes) -> dict:
    z = zipfile.ZipFile(io.BytesIO(data))
    return {n: z.read(n) for n in z.namelist()}


def crafted_pickle_archive(pkl: bytes) -> bytes:
    """A well-formed archive around a hand-written data.pkl."""
    recs = records(save_bytes(0))
    recs["archive/data.pkl"] = pkl
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in recs.items():
            z.writestr(name, data)
    return out.getvalue()


@pytest.fixture(autouse=True)
def no_leftover_safe_globals():
    yield
    npusim.serialization.clear_safe_globals()


# --- nesting depth ---------------------------------------------------------------------------------------------

DEEP_CHILD = r'''
import io, zipfile, sys
import npusim
from npusim.serialization import UnpicklingError

n = 1_000_000
pickles = {
    "dict key": b"\x80\x02}" + b"N" + b"\x85" * n + b"K\x01s.",
    "set item": b"\x80\x02\x8f(" + b"N" + b"\x85" * n + b"\x90.",
    "frozenset item": b"\x80\x02(" + b"N" + b"\x85" * n + b"\x91.",
}
buf = io.BytesIO()
npusim.save(0, buf)
z = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
recs = {name: z.read(name) for name in z.namelist()}
for what, pkl in pickles.items():
    recs["archive/data.pkl"] = pkl
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zz:
        for name, data in recs.items():
            zz.writestr(name, data)
    try:
        npusim.load(io.BytesIO(out.getvalue()))
        print(what, "LOADED")
    except UnpicklingError as e:
        print(what, "REFUSED:", e)
    sys.stdout.flush()
'''


def test_a_million_nested_tuples_used_as_a_key_are_refused_instead_of_crashing():
    # torch.load dies with SIGSEGV here (the tuple hash recurses on the C stack): run it in a child process
    env = dict(os.environ, PYTHONPATH=str(ROOT), NPUSIM_FALLBACK="silent")
    out = subprocess.run([sys.executable, "-c", DEEP_CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"the loader crashed (exit {out.returncode}): {out.stdout}{out.stderr[-2000:]}"
    lines = out.stdout.splitlines()
    assert len(lines) == 3
    for line in lines:
        assert "REFUSED: data.pkl nests containers more than 1000 levels deep" in line, line
        assert "MAX_NESTING_DEPTH" in line


def test_nesting_past_the_limit_is_an_unpickling_error_naming_the_limit(monkeypatch):
    deep = b"\x80\x02" + b"N" + b"\x85" * 1500 + b"."
    with pytest.raises(UnpicklingError, match="nests containers more than 1000 levels deep"):
        load_bytes(crafted_pickle_archive(deep))
    # lists, dicts and sets count too, however they are filled
    lists = b"\x80\x02" + b"(" * 1200 + b"K\x01" + b"l" * 1200 + b"."
    with pytest.raises(UnpicklingError, match="more than 1000 levels deep"):
        load_bytes(crafted_pickle_archive(lists))
    appended = b"\x80\x02" + b"]" * 1200 + b"K\x01a" + b"a" * 1199 + b"."
    with pytest.raises(UnpicklingError, match="more than 1000 levels deep"):
        load_bytes(crafted_pickle_archive(appended))
    dicts = b"\x80\x02" + b"}X\x01\x00\x00\x00k" * 1200 + b"K\x01" + b"s" * 1200 + b"."
    with pytest.raises(UnpicklingError, match="more than 1000 levels deep"):
        load_bytes(crafted_pickle_archive(dicts))
    # the limit is a module setting a user may raise for a file they trust
    monkeypatch.setattr(npusim.serialization.restricted_unpickler, "MAX_NESTING_DEPTH", 2000)
    value = load_bytes(crafted_pickle_archive(deep))
    for _ in range(1500):
        (value,) = value
    assert value is None


def test_deep_but_sane_objects_still_load(device):
    chain = 1
    for _ in range(800):  # nearly as deep as Python's pickler can write at its default recursion limit
        chain = (chain,)
    nested = {"w": npusim.arange(3.0, device=device)}
    for i in range(200):
        nested = {f"level{i}": [nested]}
    model = npusim.nn.Sequential(npusim.nn.Linear(3, 4), npusim.nn.ReLU(), npusim.nn.Linear(4, 2)).to(device)
    opt = npusim.optim.Adam(model.parameters())
    model(npusim.ones(2, 3, device=device)).sum().backward()
    opt.step()
    obj = {"chain": chain, "nested": nested, "model": model.state_dict(), "opt": opt.state_dict(),
           "keys": {chain: 1}, "frozen": frozenset([chain])}
    r = load_bytes(save_bytes(obj))
    assert r["chain"] == chain and r["keys"] == {chain: 1} and r["frozen"] == frozenset([chain])
    inner = r["nested"]
    for i in reversed(range(200)):
        (inner,) = inner[f"level{i}"]
    assert host(inner["w"]).tolist() == [0, 1, 2]
    assert r["model"].keys() == model.state_dict().keys() and r["model"]._metadata == model.state_dict()._metadata
    assert r["opt"]["state"].keys() == opt.state_dict()["state"].keys()


@pytest.mark.oracle
def test_deep_objects_written_by_torch_still_load(torch):
    chain = 1
    for _ in range(900):
        chain = (chain,)
    buf = io.BytesIO()
    torch.save({"chain": chain, "w": torch.arange(3.0), "set": {chain}}, buf)
    r = load_bytes(buf.getvalue())
    assert r["chain"] == chain and r["set"] == {chain} and host(r["w"]).tolist() == [0, 1, 2]


# --- zip bombs -------------------------------------------------------------------------------------------------

_LOCAL = struct.Struct("<IHHHHHIIIHH")
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
_EOCD = struct.Struct("<IHHHHIIH")


class RawZip:
    """Writes a ZIP byte by byte, so that records may point wherever a test wants."""

    def __init__(self):
        self.out = bytearray()
        self.entries = []

    def header(self, name: str, method=0, crc=0, csize=0, usize=0, extra_len=0, extra=None) -> int:
        """A local header; its extra field is ``extra_len`` zeros unless ``extra`` says what it covers."""
        at = len(self.out)
        nb = name.encode()
        self.out += _LOCAL.pack(0x04034B50, 20, 0x800, method, 0, 0x21, crc, csize, usize, len(nb),
                                extra_len if extra is None else extra) + nb
        self.out += b"\x00" * extra_len
        return at

    def entry(self, name: str, offset: int, method: int, crc: int, csize: int, usize: int) -> None:
        self.entries.append((name.encode(), offset, method, crc, csize, usize))

    def record(self, name: str, data: bytes) -> None:
        crc = zlib.crc32(data)
        at = self.header(name, 0, crc, len(data), len(data))
        self.out += data
        self.entry(name, at, 0, crc, len(data), len(data))

    def finish(self) -> bytes:
        cd_start = len(self.out)
        for nb, offset, method, crc, csize, usize in self.entries:
            self.out += _CENTRAL.pack(0x02014B50, 20, 20, 0x800, method, 0, 0x21, crc, csize, usize, len(nb), 0, 0,
                                      0, 0, 0, offset) + nb
        n = len(self.entries)
        self.out += _EOCD.pack(0x06054B50, 0, 0, n, n, len(self.out) - cd_start, cd_start, 0)
        return bytes(self.out)


def deflated(size: int) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = bytes(min(size, 1 << 20))
    parts = [c.compress(chunk[:min(len(chunk), size - i)]) for i in range(0, size, len(chunk))]
    return b"".join(parts) + c.flush()


def storages_pickle(count: int, size: int) -> bytes:
    """The data.pkl of ``count`` uint8 tensors of ``size`` elements, in records data/0, data/1, ..."""
    return records(save_bytes([npusim.zeros(size, dtype=npusim.uint8) for _ in range(count)]))["archive/data.pkl"]


def archive_start(z: RawZip, pkl: bytes) -> None:
    z.record("archive/data.pkl", pkl)
    z.record("archive/byteorder", b"little")
    z.record("archive/version", b"3\n")


def test_records_sharing_one_compressed_block_are_refused():
    count, size = 8, 4 << 20
    block = deflated(size)
    z = RawZip()
    archive_start(z, storages_pickle(count, size))
    names = [f"archive/data/{i}" for i in range(count)]
    # the local headers follow each other; each one's extra field covers the rest, up to the shared block
    block_at = len(z.out) + sum(_LOCAL.size + len(n) for n in names)
    crc = zlib.crc32(bytes(size))
    for name in names:
        at = z.header(name, 8, crc, len(block), size, extra=block_at - len(z.out) - _LOCAL.size - len(name))
        z.entry(name, at, 8, crc, len(block), size)
    assert len(z.out) == block_at
    z.out += block
    data = z.finish()
    assert len(data) < 20_000  # 20 KB that would expand to 32 MiB of storages
    with pytest.raises(ArchiveError, match=r"record 'data/0' \(offsets \d+ to \d+\) overlaps record 'data/1' at "
                                           r"offset \d+: zip records must not share data"):
        load_bytes(data)


def test_a_record_whose_extra_field_jumps_over_another_record_is_refused():
    pkl = storages_pickle(2, 8 << 10)
    block = deflated(8 << 10)
    crc = zlib.crc32(bytes(8 << 10))
    z = RawZip()
    archive_start(z, pkl)
    # data/0's header, a gap as long as its compressed data, data/1 complete, then data/0's data
    h0 = len(z.out)
    gap = len(block) + 8
    data1_len = _LOCAL.size + len("archive/data/1") + (8 << 10)
    extra = gap + data1_len
    z.header("archive/data/0", 8, crc, len(block), 8 << 10, extra_len=gap, extra=extra)
    z.entry("archive/data/0", h0, 8, crc, len(block), 8 << 10)
    z.record("archive/data/1", bytes(8 << 10))
    z.out += block
    data = z.finish()
    with pytest.raises(ArchiveError, match="record 'data/0' .* overlaps record 'data/1' at offset"):
        load_bytes(data)


def test_an_archive_expanding_far_beyond_its_size_is_refused_before_inflating():
    size = 400 << 20
    block = deflated(size)
    z = RawZip()
    archive_start(z, _uint8_storage_pickle(size))
    at = z.header("archive/data/0", 8, 0, len(block), size)
    z.out += block
    z.entry("archive/data/0", at, 8, 0, len(block), size)
    data = z.finish()
    assert len(data) < 1 << 20
    with pytest.raises(ArchiveError, match=r"the archive's records expand to \d+ bytes from a file of \d+ bytes, more "
                                           r"than npusim.load allows \(100 times the file's size plus 256 MiB\): it "
                                           r"is a zip bomb or corrupt. If you trust it, raise "
                                           r"npusim.serialization.zip_reader.MAX_EXPANSION_RATIO"):
        load_bytes(data)


def _uint8_storage_pickle(size: int) -> bytes:
    """data.pkl of one uint8 tensor of ``size`` elements in record data/0 (without saving that much)."""
    pkl = records(save_bytes(npusim.zeros(7, dtype=npusim.uint8)))["archive/data.pkl"]
    assert pkl.count(b"K\x07") == 2  # numel in the persistent id and the size
    return pkl.replace(b"K\x07", b"J" + struct.pack("<i", size))


def test_the_expansion_limit_can_be_raised_for_trusted_files(monkeypatch):
    from npusim.serialization import zip_reader
    recs = records(save_bytes({"zeros": npusim.zeros(1 << 20, dtype=npusim.uint8)}))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in recs.items():
            z.writestr(name, data)
    data = out.getvalue()
    assert host(load_bytes(data)["zeros"]).sum() == 0  # well within the default limit
    monkeypatch.setattr(zip_reader, "EXPANSION_ALLOWANCE", 0)
    with pytest.raises(ArchiveError, match="more than npusim.load allows"):
        load_bytes(data)
    monkeypatch.setattr(zip_reader, "MAX_EXPANSION_RATIO", 2000)
    assert host(load_bytes(data)["zeros"]).shape == (1 << 20,)


def test_archives_written_by_the_savers_pass_the_layout_checks(tmp_path):
    obj = {f"w{i}": npusim.arange(float(i + 1)) for i in range(50)}
    obj["big"] = npusim.zeros(1 << 18)
    path = tmp_path / "many.pt"
    npusim.save(obj, path, _extra_files={"a.txt": "x" * 1000})
    r = npusim.load(path, mmap=True)
    assert host(r["w9"]).tolist() == list(range(10))
    data = path.read_bytes()
    prefixed = b"\x00" * 100 + data  # bytes before the archive shift every offset
    assert host(load_bytes(prefixed)["w3"]).tolist() == [0, 1, 2, 3]


# --- state that shadows methods --------------------------------------------------------------------------------

@dataclasses.dataclass
class Config:
    lr: float = 0.1
    name: str = "sgd"

    def describe(self):
        return f"{self.name}@{self.lr}"


class Slotted:
    __slots__ = ("a", "b")

    def total(self):
        return self.a + self.b


CONFIG_PATH = f"{Config.__module__}\n{Config.__qualname__}\n".encode()
SLOTTED_PATH = f"{Slotted.__module__}\n{Slotted.__qualname__}\n".encode()


def _str(s: str) -> bytes:
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def test_ordered_dict_state_cannot_replace_its_methods():
    for cls, global_ in ((OrderedDict, b"ccollections\nOrderedDict\n"), (Counter, b"ccollections\nCounter\n")):
        pkl = b"\x80\x02" + global_ + b")R}(" + _str("keys") + b"K\x00" + _str("items") + b"K\x00ub."
        with pytest.raises(UnpicklingError, match=f"Invalid serialized state: attribute 'keys' of {cls.__name__} "
                                                  f"cannot be set from an archive: it would replace "
                                                  f"{cls.__name__}.keys"):
            load_bytes(crafted_pickle_archive(pkl))
    # state_dict metadata is the OrderedDict state that archives do carry
    pkl = b"\x80\x02ccollections\nOrderedDict\n)R}" + _str("_metadata") + b"K\x05sb."
    assert load_bytes(crafted_pickle_archive(pkl))._metadata == 5


def test_allowed_classes_cannot_have_their_methods_replaced_by_state():
    npusim.serialization.add_safe_globals([Config, Slotted])
    bad = b"\x80\x02c" + CONFIG_PATH + b")\x81}" + _str("describe") + b"K\x01sb."
    with pytest.raises(UnpicklingError, match="attribute 'describe' of Config cannot be set from an archive: it "
                                              "would replace Config.describe"):
        load_bytes(crafted_pickle_archive(bad))
    dunder = b"\x80\x02c" + CONFIG_PATH + b")\x81}" + _str("__class__") + b"K\x01sb."
    with pytest.raises(UnpicklingError, match="attribute '__class__' of Config cannot be set"):
        load_bytes(crafted_pickle_archive(dunder))
    slot_method = b"\x80\x02c" + SLOTTED_PATH + b")\x81N}" + _str("total") + b"K\x01s\x86b."
    with pytest.raises(UnpicklingError, match="attribute 'total' of Slotted cannot be set"):
        load_bytes(crafted_pickle_archive(slot_method))
    # instance values over class-level defaults, and slots, are what such state is for
    r = load_bytes(save_bytes({"c": Config(lr=0.5), "s": _slotted(1, 2)}))
    assert r["c"] == Config(lr=0.5) and r["c"].describe() == "sgd@0.5"
    assert r["s"].total() == 3


def _slotted(a, b):
    s = Slotted()
    s.a, s.b = a, b
    return s


# --- saves -----------------------------------------------------------------------------------------------------

def test_saving_to_a_fifo_writes_through_it(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    npusim.save({"w": npusim.arange(4.0)}, fifo)
    reader.join(30)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO was replaced by a regular file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]
    assert host(load_bytes(got[0])["w"]).tolist() == [0, 1, 2, 3]


def test_saving_to_dev_null_keeps_it_a_character_device():
    before = os.stat("/dev/null")
    try:
        npusim.save({"w": npusim.arange(4.0)}, "/dev/null")
        after = os.stat("/dev/null")
        assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    finally:
        if not stat.S_ISCHR(os.stat("/dev/null").st_mode) and os.geteuid() == 0:  # repair what a failure broke
            os.unlink("/dev/null")
            os.mknod("/dev/null", stat.S_IFCHR | 0o666, before.st_rdev)
            os.chmod("/dev/null", 0o666)


def test_saving_to_a_directory_is_the_runtime_error_torch_raises(tmp_path):
    with pytest.raises(RuntimeError, match="Is a directory") as info:
        npusim.save(npusim.ones(1), tmp_path)
    assert isinstance(info.value, IsADirectoryError)
    assert sorted(tmp_path.iterdir()) == []


@pytest.mark.oracle
def test_torch_raises_a_runtime_error_for_a_directory_too(torch, tmp_path):
    with pytest.raises(RuntimeError, match="Is a directory"):
        torch.save(torch.ones(1), tmp_path)


def test_an_extra_file_name_longer_than_zip_allows_is_refused_before_writing(tmp_path):
    name = "n" * 65_536
    buf = io.BytesIO()
    with pytest.raises(RuntimeError, match="zip record names are limited to 65535 bytes"):
        npusim.save(npusim.ones(2), buf, _extra_files={name: "x"})
    assert buf.getvalue() == b""
    with pytest.raises(RuntimeError, match="extra file name 'nnnn.*is too long"):
        npusim.save(npusim.ones(2), tmp_path / "x.pt", _extra_files={name: "x"})
    assert sorted(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="cannot be encoded as UTF-8"):
        npusim.save(npusim.ones(2), buf, _extra_files={"bad\udc80name": "x"})
    assert buf.getvalue() == b""
    # the longest name that fits still round-trips
    fits = "m" * (65_535 - len("archive/extra/"))
    data = save_bytes(npusim.ones(2), _extra_files={fits: "ok"})
    files = {fits: ""}
    load_bytes(data, _extra_files=files)
    assert files[fits] == b"ok"
