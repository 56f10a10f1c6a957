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
import textwrap
import threading
import zipfile
import zlib
from collections import Counter, OrderedDict

import numpy as np
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
