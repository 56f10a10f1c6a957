"""npusim.save / npusim.load: round trips, the archive layout, map_location, backend metadata, extra files,
safe loading, malformed archives, atomic writes and mmap.

PyTorch interop lives in test_serialization_torch.py, the fuzz test in test_serialization_fuzz.py.
"""
from __future__ import annotations

import copy
import io
import mmap
import os
import pathlib
import signal
import struct
import subprocess
import sys
import textwrap
import time
import zipfile
from collections import Counter, OrderedDict

import numpy as np
import pytest

import npusim
from conftest import host
from npusim._utils import get_tensor_metadata, set_tensor_metadata
from npusim.serialization import ArchiveError, UnpicklingError

ROOT = pathlib.Path(__file__).resolve().parents[1]
ALL_DTYPES = [npusim.bool, npusim.uint8, npusim.int8, npusim.int16, npusim.int32, npusim.int64, npusim.float16,
              npusim.bfloat16, npusim.float32, npusim.float64]


def save_bytes(obj, **kw) -> bytes:
    buf = io.BytesIO()
    npusim.save(obj, buf, **kw)
    return buf.getvalue()


def load_bytes(data: bytes, **kw):
    return npusim.load(io.BytesIO(data), **kw)


def round_trip(obj, **kw):
    return load_bytes(save_bytes(obj), **kw)


def records(data: bytes) -> dict:
    z = zipfile.ZipFile(io.BytesIO(data))
    return {n: z.read(n) for n in z.namelist()}


def rezip(recs: dict, compression=zipfile.ZIP_STORED) -> bytes:
    """An archive holding ``recs`` written by Python's zipfile (a second, independent writer)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression) as z:
        for name, data in recs.items():
            z.writestr(name, data)
    return out.getvalue()


def storages_share_memory(a, b) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


class Point:
    """A plain user class: not loadable with weights_only until allowed."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __eq__(self, other):
        return isinstance(other, Point) and (self.x, self.y) == (other.x, other.y)


POINT_PATH = f"{Point.__module__}.{Point.__qualname__}"


@pytest.fixture(autouse=True)
def no_leftover_safe_globals():
    yield
    npusim.serialization.clear_safe_globals()
    npusim.serialization.set_extra_files_hook(None)


# --- round trips --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_every_dtype_round_trips_with_its_values_and_device(device, dtype):
    values = np.array([[0, 1, 2], [3, 4, 5]]) % (2 if dtype is npusim.bool else 6)
    t = npusim.tensor(values.tolist(), dtype=dtype, device=device)
    r = round_trip(t)
    assert r.dtype is dtype and r.device == t.device and r.shape == (2, 3)
    np.testing.assert_array_equal(host(r), host(t))


def test_views_share_one_storage_after_load(device):
    base = npusim.arange(24.0, device=device).reshape(4, 6)
    obj = {"base": base, "row": base[1], "col": base[:, 2], "t": base.t(), "flat": base.view(24)[5:11]}
    data = save_bytes(obj)
    assert [n for n in records(data) if "/data/" in n] == ["archive/data/0"]  # stored once
    r = load_bytes(data)
    for k, v in obj.items():
        np.testing.assert_array_equal(host(r[k]), host(v))
        assert r[k].stride() == v.stride() and r[k].storage_offset() == v.storage_offset()
        assert storages_share_memory(r[k], r["base"])
    r["base"][1, 2] = -1.0  # one allocation: the change shows through every view
    assert r["row"][2].item() == -1.0 and r["col"][1].item() == -1.0 and r["t"][2, 1].item() == -1.0


def test_non_contiguous_zero_dim_and_empty_tensors(device):
    x = npusim.arange(30, dtype=npusim.int32, device=device).reshape(5, 6)
    obj = [x[::2, 1::3], x.t(), npusim.tensor(3.5, device=device), npusim.empty(0, 4, device=device),
           npusim.zeros(2, 0, 3, dtype=npusim.bfloat16, device=device), x.expand(2, 5, 6)]
    r = round_trip(obj)
    for got, want in zip(r, obj):
        assert got.shape == want.shape and got.dtype is want.dtype and got.stride() == want.stride()
        np.testing.assert_array_equal(host(got), host(want))
    assert not r[0].is_contiguous() and r[2].dim() == 0 and r[3].numel() == 0


def test_requires_grad_and_parameters_round_trip(device):
    p = npusim.nn.Parameter(npusim.randn(3, 2, device=device))
    frozen = npusim.nn.Parameter(npusim.ones(2, device=device), requires_grad=False)
    nonleaf = npusim.ones(2, device=device, requires_grad=True) * 2
    r = round_trip({"p": p, "frozen": frozen, "nonleaf": nonleaf, "same": p})
    assert isinstance(r["p"], npusim.nn.Parameter) and r["p"].requires_grad
    assert isinstance(r["frozen"], npusim.nn.Parameter) and not r["frozen"].requires_grad
    assert r["nonleaf"].requires_grad and r["nonleaf"].is_leaf
    assert r["same"] is r["p"]  # one object saved twice is one object after load
    np.testing.assert_array_equal(host(r["p"]), host(p))


def test_nested_containers_of_everything():
    t = npusim.arange(4)
    obj = {"list": [1, 2.5, "s", None, True, 2 ** 80, -7], "tuple": (t, (t[1:], [t])),
           "od": OrderedDict(b=1, a=npusim.ones(2)), "set": {1, 2}, "frozen": frozenset({3}),
           "bytes": b"\x00\xff", "bytearray": bytearray(b"ab"), "complex": 1 + 2j, "counter": Counter("aab"),
           "dtype": npusim.bfloat16, "device": npusim.device("npu", 1), "size": npusim.Size([2, 3]), 7: "int key"}
    r = round_trip(obj)
    assert r["list"] == obj["list"] and r["set"] == {1, 2} and r["frozen"] == frozenset({3})
    assert r["bytes"] == b"\x00\xff" and r["bytearray"] == bytearray(b"ab") and r["complex"] == 1 + 2j
    assert isinstance(r["od"], OrderedDict) and list(r["od"]) == ["b", "a"] and r["counter"] == Counter("aab")
    assert r["dtype"] is npusim.bfloat16 and r["device"] == npusim.device("npu:1")
    assert isinstance(r["size"], npusim.Size) and r["size"] == (2, 3) and r[7] == "int key"
    assert storages_share_memory(r["tuple"][0], r["tuple"][1][1][0])


def test_strings_that_look_like_pickled_names_survive():
    """Names are written by renaming pickled globals; text holding the same bytes must not be renamed."""
    tricky = {"dtype_text": "cnpusim.core.dtype\nfloat32\n", "dtype": npusim.float32,
              "name_text": "cnpusim.serialization.torch_names\ntorch_global__torch__Size\n", "size": npusim.Size([2])}
    r = round_trip(tricky)
    assert r == tricky and r["dtype"] is npusim.float32


def test_storages_round_trip_and_stay_shared_with_their_tensors(device):
    t = npusim.arange(6, dtype=npusim.uint8, device=device)
    st = round_trip(t.untyped_storage())
    assert isinstance(st, npusim.UntypedStorage) and st.tolist() == list(range(6)) and st.device == t.device
    r_t, r_st = round_trip([t, t.untyped_storage()])
    assert r_st.data_ptr() == r_t.untyped_storage().data_ptr()


def test_storage_viewed_as_two_dtypes_cannot_be_saved():
    t = npusim.arange(4.0)
    with pytest.raises(RuntimeError, match="Cannot save multiple tensors or storages that view the same data as "
                                           "different types"):
        save_bytes([t, t.view(npusim.int32)])


def test_module_and_optimizer_state_dicts_round_trip(device):
    def build():
        npusim.manual_seed(0)
        m = npusim.nn.Sequential(npusim.nn.Linear(3, 4), npusim.nn.BatchNorm1d(4)).to(device)
        return m, npusim.optim.Adam(m.parameters(), lr=0.1)

    m, opt = build()
    x = npusim.randn(5, 3, device=device)
    m(x).sum().backward()
    opt.step()
    r = round_trip({"model": m.state_dict(), "opt": opt.state_dict()})
    assert r["model"]._metadata == m.state_dict()._metadata
    m2, opt2 = build()
    m2.load_state_dict(r["model"])
    opt2.load_state_dict(r["opt"])
    for o, model in ((opt, m), (opt2, m2)):  # the same next step from the original and the loaded pair
        o.zero_grad()
        model(x).sum().backward()
        o.step()
    for (k, a), b in zip(m.state_dict().items(), m2.state_dict().values()):
        np.testing.assert_allclose(host(a), host(b), rtol=1e-6, err_msg=k)


def test_f_may_be_a_path_a_pathlike_or_a_binary_file(tmp_path):
    t = npusim.arange(3.0)
    npusim.save(t, str(tmp_path / "a.pt"))
    npusim.save(t, tmp_path / "b.pt")
    with open(tmp_path / "c.pt", "wb") as f:
        npusim.save(t, f)
    for name in ("a.pt", "b.pt", "c.pt"):
        np.testing.assert_array_equal(host(npusim.load(tmp_path / name)), [0, 1, 2])
        with open(tmp_path / name, "rb") as f:
            np.testing.assert_array_equal(host(npusim.load(f)), [0, 1, 2])
    np.testing.assert_array_equal(host(npusim.load(str(tmp_path / "a.pt"))), [0, 1, 2])


def test_bad_f_arguments():
    with pytest.raises(AttributeError, match="expected 'f' to be string, path, or a file-like object with a 'write' "
                                             "attribute"):
        npusim.save(npusim.ones(1), 3)
    with pytest.raises(AttributeError, match="You can only npusim.load from a file that is seekable"):
        npusim.load(3)
    with pytest.raises(FileNotFoundError):
        npusim.load("/nonexistent/x.pt")


# --- the archive layout -------------------------------------------------------------------------------------

def test_archive_layout_is_torchs(tmp_path):
    t = npusim.arange(10.0)
    path = tmp_path / "ckpt.pt"
    big = npusim.arange(700_000, dtype=npusim.float32)  # large records are checksummed in the background
    npusim.save({"a": t, "b": npusim.ones(3, dtype=npusim.int64), "big": big, "big2": big + 1}, path,
                _extra_files={"meta.txt": "hi"})
    z = zipfile.ZipFile(path)
    assert z.namelist() == ["ckpt/data.pkl", "ckpt/.format_version", "ckpt/.storage_alignment", "ckpt/byteorder",
                            "ckpt/data/0", "ckpt/data/1", "ckpt/data/2", "ckpt/data/3", "ckpt/extra/meta.txt",
                            "ckpt/version"]
    assert z.testzip() is None  # every CRC-32 is right
    assert save_bytes(big) == save_bytes(big)  # to a file object, checksums are written in order
    assert z.read("ckpt/byteorder") == sys.byteorder.encode() and z.read("ckpt/version") == b"3\n"
    assert z.read("ckpt/data/0") == np.arange(10, dtype=np.float32).tobytes()
    raw = path.read_bytes()
    for info in z.infolist():  # every record's data starts on a 64-byte boundary
        assert info.compress_type == zipfile.ZIP_STORED
        name_len, extra_len = struct.unpack_from("<HH", raw, info.header_offset + 26)
        assert (info.header_offset + 30 + name_len + extra_len) % 64 == 0, info.filename
    assert save_bytes(t) == save_bytes(t)  # no clock or randomness in the bytes


def test_zip64_records_past_the_32_bit_limits(monkeypatch):
    """Archives past 4 GiB use ZIP64 sizes and offsets; lowering the limit exercises that path on small data."""
    from npusim.serialization import zip_reader, zip_writer
    monkeypatch.setattr(zip_writer, "U32_MAX", 100)
    monkeypatch.setattr(zip_reader, "U32_MAX", 100)
    obj = {"w": npusim.arange(64.0), "small": npusim.ones(2), "tail": npusim.arange(3)}
    data = save_bytes(obj, _extra_files={"x": "y" * 150})
    assert b"PK\x06\x06" in data[-200:]  # the zip64 end record
    r = load_bytes(data, _extra_files={"x": ""})
    assert host(r["w"]).tolist() == list(range(64)) and host(r["tail"]).tolist() == [0, 1, 2]


def test_crc_can_be_skipped_like_torch(tmp_path):
    big = npusim.ones(1 << 19)  # 2 MiB: checksummed in the background unless disabled
    assert npusim.serialization.get_crc32_options() is True
    npusim.serialization.set_crc32_options(False)
    try:
        data = save_bytes(big)
    finally:
        npusim.serialization.set_crc32_options(True)
    assert zipfile.ZipFile(io.BytesIO(data)).getinfo("archive/data/0").CRC == 0
    np.testing.assert_array_equal(host(load_bytes(data)), 1.0)
    assert zipfile.ZipFile(io.BytesIO(save_bytes(big))).testzip() is None
    with pytest.raises(TypeError, match="compute_crc32 must be a bool"):
        npusim.serialization.set_crc32_options(0)


def test_npu_storages_are_tagged_with_their_device_and_load_back_there():
    seen = []
    obj = {"a": npusim.ones(2, device="npu:0"), "b": npusim.ones(2, device="npu:1"), "c": npusim.ones(2)}
    data = save_bytes(obj)
    load_bytes(data, map_location=lambda storage, loc: seen.append((loc, storage.device.type)) or storage)
    assert sorted(seen) == [("cpu", "cpu"), ("npu:0", "cpu"), ("npu:1", "cpu")]  # callables get cpu storages
    r = load_bytes(data)
    assert [str(r[k].device) for k in "abc"] == ["npu:0", "npu:1", "cpu"]


# --- map_location ---------------------------------------------------------------------------------------------

def test_map_location_forms():
    data = save_bytes({"a": npusim.arange(3.0, device="npu:1"), "b": npusim.arange(3.0)})
    assert {str(t.device) for t in load_bytes(data, map_location="cpu").values()} == {"cpu"}
    assert {str(t.device) for t in load_bytes(data, map_location=npusim.device("npu", 0)).values()} == {"npu:0"}
    r = load_bytes(data, map_location={"npu:1": "npu:0"})
    assert (str(r["a"].device), str(r["b"].device)) == ("npu:0", "cpu")
    r = load_bytes(data, map_location={"cpu": npusim.device("npu:1")})
    assert (str(r["a"].device), str(r["b"].device)) == ("npu:1", "npu:1")
    r = load_bytes(data, map_location=lambda storage, loc: storage.npu(0) if loc == "cpu" else None)
    assert (str(r["a"].device), str(r["b"].device)) == ("npu:1", "npu:0")
    r = load_bytes(data, map_location="npu")  # no index: the current device
    assert str(r["b"].device) == "npu:0"
    np.testing.assert_array_equal(host(r["a"]), [0, 1, 2])


def test_bad_map_locations():
    data = save_bytes(npusim.ones(1, device="npu:1"))
    with pytest.raises(TypeError, match="map_location must be a str, an npusim.device, a dict or a callable, got int"):
        load_bytes(data, map_location=0)
    with pytest.raises(TypeError, match="map_location returned list for a storage tagged 'npu:1'"):
        load_bytes(data, map_location=lambda s, loc: [])
    with pytest.raises(RuntimeError, match=r"Attempting to deserialize object on NPU device 5 but "
                                           r"npusim.npu.device_count\(\) is 2. Please use npusim.load with "
                                           "map_location"):
        load_bytes(data, map_location="npu:5")
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device but npusim has no cuda "
                                           "backend.*map_location=npusim.device"):
        load_bytes(data, map_location="cuda:0")
    with pytest.raises(RuntimeError, match="don't know how to restore data location of npusim.UntypedStorage "
                                           r"\(tagged with 'tpu:0'\)"):
        load_bytes(data, map_location={"npu:1": "tpu:0"})


def test_loading_onto_a_device_index_that_does_not_exist_suggests_map_location(tmp_path):
    path = tmp_path / "on_npu1.pt"
    npusim.save({"w": npusim.arange(4.0, device="npu:1")}, path)
    script = textwrap.dedent(f"""
        import npusim
        try:
            npusim.load({str(path)!r})
        except RuntimeError as e:
            print("ERROR", e)
        r = npusim.load({str(path)!r}, map_location={{"npu:1": "npu:0"}})
        print("MAPPED", r["w"].device, r["w"].cpu().tolist())
    """)
    env = dict(os.environ, NPUSIM_DEVICE_COUNT="1", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert ("ERROR Attempting to deserialize object on NPU device 1 but npusim.npu.device_count() is 1. Please use "
            "npusim.load with map_location to map your storages to an existing device.") in out.stdout
    assert "MAPPED npu:0 [0.0, 1.0, 2.0, 3.0]" in out.stdout


# --- backend metadata ----------------------------------------------------------------------------------------

def test_backend_metadata_survives_a_round_trip_on_the_npu_and_is_dropped_on_the_cpu():
    x = npusim.ones(2, 3, device="npu:1")
    assert get_tensor_metadata(x) == {}
    set_tensor_metadata(x, {"npu_format": 29})
    assert get_tensor_metadata(x) == {"npu_format": 29, "npu_meta_version": 1}
    data = save_bytes({"x": x, "plain": npusim.ones(1, device="npu")})
    r = load_bytes(data)
    assert str(r["x"].device) == "npu:1" and get_tensor_metadata(r["x"]) == {"npu_format": 29, "npu_meta_version": 1}
    assert get_tensor_metadata(r["plain"]) == {}
    assert get_tensor_metadata(load_bytes(data, map_location="npu:0")["x"])["npu_format"] == 29
    on_cpu = load_bytes(data, map_location="cpu")["x"]
    assert on_cpu.device.type == "cpu" and get_tensor_metadata(on_cpu) == {} and on_cpu._backend_meta is None


def test_plain_tensors_carry_no_metadata_in_the_archive():
    pkl = records(save_bytes(npusim.ones(2, device="npu")))["archive/data.pkl"]
    assert b"npu_format" not in pkl and b"npu_meta_version" not in pkl


def test_backend_metadata_is_kept_where_torch_keeps_it():
    x = npusim.ones(4, device="npu")
    set_tensor_metadata(x, {"npu_format": 3})
    kept = {"detach": x.detach(), "data": x.data, "parameter": npusim.nn.Parameter(x), "copy": copy.copy(x)}
    for name, t in kept.items():
        assert get_tensor_metadata(t).get("npu_format") == 3, name
    dropped = {"view": x[1:], "reshape": x.view(2, 2), "clone": x.clone(), "to npu:1": x.to("npu:1"),
               "cpu": x.cpu()}
    for name, t in dropped.items():
        assert get_tensor_metadata(t) == {}, name
    y = npusim.zeros(4, device="npu")
    y.data = x  # set_data takes the new data's metadata...
    assert get_tensor_metadata(y)["npu_format"] == 3
    y.data = npusim.zeros(4, device="npu")  # ...and drops it with data that has none
    assert get_tensor_metadata(y) == {}


def test_bad_backend_metadata():
    x = npusim.ones(1, device="npu")
    with pytest.raises(RuntimeError, match="'npu_format' must be one of the format codes NCHW=0, NHWC=1, ND=2"):
        set_tensor_metadata(x, {"npu_format": 7})
    with pytest.raises(RuntimeError, match="'npu_format' must be one of the format codes.*got 'ND'"):
        set_tensor_metadata(x, {"npu_format": "ND"})
    with pytest.raises(RuntimeError, match="npu backend metadata has version 2, but this npusim reads versions up "
                                           "to 1"):
        set_tensor_metadata(x, {"npu_format": 2, "npu_meta_version": 2})
    with pytest.raises(AssertionError, match="expected dict, got list"):
        set_tensor_metadata(x, [])
    with pytest.raises(AssertionError, match="expected npusim.Tensor, got int"):
        get_tensor_metadata(3)
    set_tensor_metadata(npusim.ones(1), {"npu_format": 7})  # a cpu tensor has no deserializer: ignored, as in torch


def test_backend_meta_registry_is_one_pair_per_device_type():
    from npusim.serialization.backend_meta import _unregister_backend_meta_serialization
    register = npusim.serialization.register_backend_meta_serialization
    with pytest.raises(RuntimeError, match="The tensor BackendMeta serialization function pointer for npu has been "
                                           "registered."):
        register("npu", lambda t, m: None, lambda t, m: None)
    with pytest.raises(RuntimeError, match="It is not allowed to register the serialization method of backendMeta "
                                           "data for cpu"):
        register("cpu", lambda t, m: None, lambda t, m: None)
    calls = []
    original = _unregister_backend_meta_serialization("npu")
    try:
        with pytest.raises(TypeError, match="expects two callables"):
            register("npu", 1, 2)
        register("npu", lambda t, m: m.update(tag=True), lambda t, m: calls.append((t.device.type, dict(m))))
        r = round_trip(npusim.ones(1, device="npu"))
        assert calls == [("npu", {"tag": True})] and r.device.type == "npu"
    finally:
        _unregister_backend_meta_serialization("npu")
        register("npu", *original)


# --- extra files ---------------------------------------------------------------------------------------------------

def test_extra_files_are_stored_and_read_back(tmp_path):
    path = tmp_path / "m.pt"
    npusim.save(npusim.ones(1), path, _extra_files={"producer_info.json": '{"user": "me"}', "blob.bin": b"\x00\x01",
                                                    "dir/nested.txt": "n"})
    assert zipfile.ZipFile(path).read("m/extra/producer_info.json") == b'{"user": "me"}'
    wanted = {"producer_info.json": "", "blob.bin": "", "dir/nested.txt": ""}
    npusim.load(path, _extra_files=wanted)
    assert wanted == {"producer_info.json": b'{"user": "me"}', "blob.bin": b"\x00\x01", "dir/nested.txt": b"n"}
    with pytest.raises(ArchiveError, match=r"the archive has no extra file 'missing.json' \(its extra files: "
                                           r"blob.bin, dir/nested.txt, producer_info.json\)"):
        npusim.load(path, _extra_files={"missing.json": ""})


def test_extra_files_hook_adds_files_to_every_archive_and_explicit_files_win():
    seen = []

    def hook(obj):
        seen.append(type(obj).__name__)
        return {"producer_info.json": '{"from": "hook"}', "host.txt": b"box"}

    assert npusim.serialization.set_extra_files_hook(hook) is None
    a = records(save_bytes({"x": 1}))
    b = records(save_bytes([1], _extra_files={"producer_info.json": "explicit"}))
    assert npusim.serialization.set_extra_files_hook(None) is hook
    c = records(save_bytes([1]))
    assert seen == ["dict", "list"]
    assert a["archive/extra/producer_info.json"] == b'{"from": "hook"}' and a["archive/extra/host.txt"] == b"box"
    assert b["archive/extra/producer_info.json"] == b"explicit" and b["archive/extra/host.txt"] == b"box"
    assert not any("/extra/" in n for n in c)


def test_bad_extra_files(tmp_path):
    with pytest.raises(TypeError, match="_extra_files must be a dict of name -> str or bytes, got list"):
        save_bytes(1, _extra_files=["a"])
    with pytest.raises(TypeError, match="extra file 'a' must be str or bytes, got int"):
        save_bytes(1, _extra_files={"a": 3})
    for bad in ("", "../up", "/abs", "a//b", "a\\b"):
        with pytest.raises(ValueError, match="invalid extra file name"):
            save_bytes(1, _extra_files={bad: "x"})
    with pytest.raises(TypeError, match="extra file names must be str, got int"):
        save_bytes(1, _extra_files={1: "x"})
    npusim.serialization.set_extra_files_hook(lambda obj: ["not", "a", "dict"])
    with pytest.raises(TypeError, match="the extra-files hook must return a dict of name -> str or bytes, got list"):
        npusim.save(1, tmp_path / "never.pt")
    assert not list(tmp_path.iterdir())  # a failed save writes nothing
    npusim.serialization.set_extra_files_hook(None)
    with pytest.raises(TypeError, match="set_extra_files_hook expects a callable or None, got str"):
        npusim.serialization.set_extra_files_hook("hook")
    with pytest.raises(TypeError, match="_extra_files must be a dict whose keys name the files to read, got list"):
        load_bytes(save_bytes(1), _extra_files=["a"])


# --- safe loading ------------------------------------------------------------------------------------------------

def test_weights_only_refuses_other_globals_and_says_how_to_allow_them():
    data = save_bytes({"p": Point(1, 2)})
    with pytest.raises(UnpicklingError) as info:
        load_bytes(data)
    msg = str(info.value)
    assert msg.startswith("Weights only load failed.")
    assert "Re-running `npusim.load` with `weights_only` set to `False` will likely succeed" in msg
    assert (f"Unsupported global: GLOBAL {POINT_PATH} was not an allowed global by default. Please use "
            f"`npusim.serialization.add_safe_globals([{POINT_PATH}])` or the "
            f"`npusim.serialization.safe_globals([{POINT_PATH}])` context manager") in msg
    assert load_bytes(data, weights_only=False) == {"p": Point(1, 2)}
    with pytest.raises(UnpicklingError, match="Unsupported global"):
        load_bytes(data, weights_only=None)  # torch's "not given": the safe default
    with pytest.raises(TypeError, match="weights_only must be a bool, got str"):
        load_bytes(data, weights_only="no")


def test_safe_globals_api():
    data = save_bytes([Point(3, 4)])
    ser = npusim.serialization
    with ser.safe_globals([Point]):
        assert ser.get_safe_globals() == [Point]
        assert load_bytes(data) == [Point(3, 4)]
    assert ser.get_safe_globals() == []
    with pytest.raises(UnpicklingError, match="Unsupported global"):
        load_bytes(data)
    ser.add_safe_globals([(Point, POINT_PATH)])
    assert load_bytes(data) == [Point(3, 4)]
    ser.clear_safe_globals()
    assert ser.get_safe_globals() == []
    ser.add_safe_globals([Point])
    with ser.safe_globals([Point]):  # already allowed: leaving the context keeps it
        pass
    assert ser.get_safe_globals() == [Point]


def test_bad_safe_globals():
    ser = npusim.serialization
    with pytest.raises(TypeError, match="add_safe_globals expects a list of globals, got str"):
        ser.add_safe_globals("Point")
    with pytest.raises(ValueError, match="Expected tuple of length 2"):
        ser.add_safe_globals([(Point,)])
    with pytest.raises(TypeError, match="Expected second item in tuple to be str of callable full path"):
        ser.add_safe_globals([(Point, 3)])
    with pytest.raises(TypeError, match="add_safe_globals expects classes, functions or"):
        ser.add_safe_globals([3])


def crafted_pickle_archive(pkl: bytes) -> bytes:
    """A well-formed archive around a hand-written data.pkl."""
    recs = records(save_bytes(0))
    recs["archive/data.pkl"] = pkl
    return rezip(recs)


def test_blocked_modules_stay_blocked_even_when_allowed():
    import os as os_module
    npusim.serialization.add_safe_globals([(os_module.system, "os.system")])
    pkl = b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00trueq\x00\x85R."
    with pytest.raises(UnpicklingError, match="Trying to load unsupported GLOBAL os.system whose module os is "
                                              "blocked"):
        load_bytes(crafted_pickle_archive(pkl))


def test_restricted_operations():
    cases = {  # hand-written pickles that only an unrestricted unpickler would run
        b"\x80\x02cbuiltins\neval\nX\x01\x00\x00\x001\x85R.": "Unsupported global: GLOBAL eval was not an allowed",
        b"\x80\x02ccollections\nOrderedDict\n)R}b.": None,  # OrderedDict state: allowed
        b"\x80\x02X\x01\x00\x00\x00a]a.": "Can only append to lists, but got str",
        b"\x80\x02]X\x01\x00\x00\x00aK\x01s.": "Can only SETITEM for dict, collections.OrderedDict",
        b"\x80\x02K\x01}b.": "Can only build Tensor, Parameter, OrderedDict or types allowlisted",
        b"\x80\x02(X\x03\x00\x00\x00fooK\x01K\x01K\x01K\x01tQ.": "Only persistent_load of storage is allowed",
        b"\x80\x02K\x05Q.": "persistent_load id must be a tuple, but got int",
        b"\x80\x02c__builtin__\nbytearray\nJ\x00\x00\x00\x40\x85R.": "bytearray may only be built from bytes",
        b"\x80\x02ctorch\nTensor\nJ\x00\x00\x00\x40\x85R.": "archives rebuild tensors from their storages, never",
        b"\x80\x02ctorch._tensor\n_rebuild_from_type_v2\n(ctorch\nTensor\nctorch\nTensor\nJ\x00\x00\x00\x40\x85NtR.":
            "_rebuild_from_type_v2 can only call a tensor rebuild function",
        b"\x80\x02\xff.": "Unsupported operand 255 at byte 2",
        b"\x80\x02K\x01": "data.pkl is truncated: it ends before its STOP opcode",
        b"\x80\x02X\xff\xff\xff\x00ab.": "data.pkl is truncated: 16777215 bytes are needed at byte 7, but only 3 remain",
        b"\x80\x02h\x07.": "data.pkl is malformed",
    }
    for pkl, message in cases.items():
        data = crafted_pickle_archive(pkl)
        if message is None:
            assert load_bytes(data) == OrderedDict()
            continue
        with pytest.raises(UnpicklingError, match=message):
            load_bytes(data)


# --- malformed archives -----------------------------------------------------------------------------------------

def crafted_tensor_archive(base, offset, size, stride) -> bytes:
    """An archive whose one tensor has the given geometry over ``base``'s storage."""
    from npusim.serialization import saving, torch_names
    from npusim.serialization.pickler import SavedStorages, _PortablePickler, _StorageRef

    class Crafted:
        def __reduce__(self):
            return (torch_names.REBUILD_TENSOR_V2, (_StorageRef(base.untyped_storage(), base.dtype), offset, size,
                                                    stride, False, OrderedDict()))

    buf, storages = io.BytesIO(), SavedStorages()
    _PortablePickler(buf, storages).dump(Crafted())
    out = io.BytesIO()
    saving._write_archive(out, "archive", buf.getvalue(), storages, {})
    return out.getvalue()


def test_tensor_geometry_is_checked_against_its_storage():
    base = npusim.arange(4.0)
    assert host(load_bytes(crafted_tensor_archive(base, 1, (3,), (1,)))).tolist() == [1, 2, 3]
    cases = [
        ((1, (4,), (1,)), r"tensor of size \[4\], stride \[1\] and storage offset 1 needs 5 float32 elements, but its "
                          r"storage \(data/0\) holds 4"),
        ((0, (2 ** 40, 2 ** 40), (0, 0)), "has 1208925819614629174706176 elements, more than any tensor can hold"),
        ((0, (2,), (-1,)), "tensor stride must hold non-negative ints, got -1"),
        ((0, (2, 2), (1,)), r"tensor size \[2, 2\] and stride \[1\] have different lengths"),
        ((-3, (1,), (1,)), "tensor storage offset must be a non-negative int, got -3"),
        ((0, (1.5,), (1,)), "tensor size must hold non-negative ints, got float"),
        ((0, (1,) * 65, (1,) * 65), "tensor size has 65 dimensions; at most 64 are supported"),
    ]
    for (offset, size, stride), message in cases:
        with pytest.raises(UnpicklingError, match=message):
            load_bytes(crafted_tensor_archive(base, offset, size, stride))


def test_malformed_containers_are_clear_errors():
    good = save_bytes({"w": npusim.arange(4.0)})
    recs = records(good)

    def without(name):
        return rezip({k: v for k, v in recs.items() if k != name})

    def replaced(name, value):
        return rezip({**recs, name: value})

    legacy = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19." + b"\x00" * 40
    cases = [
        (b"", ArchiveError, "is empty: it is not an archive written by npusim.save or torch.save"),
        (b"definitely not a zip file", ArchiveError, r"is not a zip archive \(no end-of-central-directory record\)"),
        (legacy, ArchiveError, "uses torch's legacy format"),
        (good[:len(good) - 30], ArchiveError, "starts like a zip archive but has no end-of-central-directory record"),
        (good[:40] + good[200:], ArchiveError, "corrupt|truncated|lies outside the file"),
        (without("archive/data.pkl"), ArchiveError, "the archive has no 'data.pkl' record"),
        (without("archive/version"), ArchiveError, "the archive has no 'version' record"),
        (without("archive/data/0"), ArchiveError, r"the archive has no record 'data/0' \(it holds: "),
        (replaced("archive/version", b"99\n"), ArchiveError, "the archive has format version 99; npusim.load reads "
                                                             "versions 1 to 10"),
        (replaced("archive/version", b"three"), ArchiveError, "the archive's version record is not a number"),
        (replaced("archive/byteorder", b"middle"), ArchiveError, "Unknown endianness type: 'middle'"),
        (replaced("archive/data/0", b"\x00" * 20), ArchiveError, r"record data/0 holds 20 bytes, but the pickle "
                                                                 r"describes a storage of 4 float32 elements \(16 "
                                                                 r"bytes\)"),
        (replaced("archive/data.pkl", recs["archive/data.pkl"].replace(b"FloatStorage", b"QInt8Storage")),
         UnpicklingError, "torch.QInt8Storage \\(dtype qint8\\), which npusim does not support"),
        (replaced("archive/data.pkl", recs["archive/data.pkl"].replace(b"FloatStorage", b"bits16")),
         UnpicklingError, "dtype torch.bits16, which npusim does not support"),
        (replaced("archive/constants.pkl", b""), ArchiveError, "TorchScript archive"),
    ]
    for data, error, message in cases:
        with pytest.raises(error, match=message):
            load_bytes(data)


def test_corrupted_pickle_fails_its_checksum():
    data = bytearray(save_bytes({"w": npusim.arange(4.0)}))
    at = bytes(data).index(b"_rebuild_tensor_v2")
    data[at] ^= 0x20
    with pytest.raises(ArchiveError, match="record 'data.pkl' fails its CRC-32 check"):
        load_bytes(bytes(data))


def test_deflated_archives_load_and_big_endian_data_is_swapped():
    t = {"f": npusim.arange(5.0), "i": npusim.arange(5, dtype=npusim.int64), "h": npusim.arange(3).to(npusim.bfloat16)}
    recs = records(save_bytes(t))
    r = load_bytes(rezip(recs, zipfile.ZIP_DEFLATED))
    assert host(r["f"]).tolist() == [0, 1, 2, 3, 4] and host(r["h"]).tolist() == [0, 1, 2]
    swapped = dict(recs, **{"archive/byteorder": b"big"})
    for key, arr in (("0", np.arange(5.0, dtype=np.float32)), ("1", np.arange(5, dtype=np.int64)),
                     ("2", np.arange(3, dtype=np.uint16) * 0 + np.array([0, 16256, 16384], np.uint16))):
        swapped[f"archive/data/{key}"] = arr.astype(arr.dtype.newbyteorder(">")).tobytes()
    r = load_bytes(rezip(swapped))
    assert host(r["f"]).tolist() == [0, 1, 2, 3, 4] and host(r["i"]).tolist() == [0, 1, 2, 3, 4]
    assert host(r["h"]).tolist() == [0, 1, 2]


# --- atomic writes --------------------------------------------------------------------------------------------------

SLOW_SAVE = """
import sys, time
import npusim
from npusim.serialization import atomic_file

path, marker = sys.argv[1], sys.argv[2]
real_open = atomic_file._open_temp


class SlowFile:
    def __init__(self, f):
        self._f = f

    def write(self, data):
        open(marker, "w").close()  # the save is under way
        time.sleep(0.2)
        return self._f.write(data)

    def __getattr__(self, name):
        return getattr(self._f, name)


def slow_open(p):
    tmp, f = real_open(p)
    return tmp, SlowFile(f)


atomic_file._open_temp = slow_open
npusim.save({"w": npusim.full((1 << 20,), 7.0)}, path)
print("finished")
"""


def test_a_save_killed_midway_leaves_the_previous_file_intact(tmp_path):
    path, marker = tmp_path / "ckpt.pt", tmp_path / "started"
    npusim.save({"w": npusim.arange(3.0)}, path)
    before = path.read_bytes()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    child = subprocess.Popen([sys.executable, "-c", SLOW_SAVE, str(path), str(marker)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert child.poll() is None, child.stderr.read().decode()
            assert time.monotonic() < deadline, "the child never started writing"
            time.sleep(0.01)
        time.sleep(0.3)
        child.send_signal(signal.SIGKILL)
        out, _ = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == -signal.SIGKILL and b"finished" not in out
    assert path.read_bytes() == before
    assert host(npusim.load(path)["w"]).tolist() == [0, 1, 2]
    leftovers = [p.name for p in tmp_path.iterdir() if p.name not in ("ckpt.pt", "started")]
    assert all(n.startswith(".ckpt.pt.") and n.endswith(".tmp") for n in leftovers)  # only the unfinished temp


def test_a_failed_save_leaves_the_previous_file_and_no_temporary(tmp_path):
    path = tmp_path / "ckpt.pt"
    npusim.save(npusim.arange(3.0), path)
    before = path.read_bytes()
    with pytest.raises(Exception):
        npusim.save({"fn": lambda: 0}, path)  # not picklable
    npusim.serialization.set_extra_files_hook(lambda obj: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        npusim.save(npusim.ones(1), path)
    npusim.serialization.set_extra_files_hook(None)
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.pt"]


def test_saving_over_a_file_keeps_its_mode_and_follows_symlinks(tmp_path):
    target = tmp_path / "real.pt"
    npusim.save(npusim.ones(1), target)
    os.chmod(target, 0o640)
    link = tmp_path / "link.pt"
    link.symlink_to(target)
    npusim.save(npusim.zeros(2), link)
    assert link.is_symlink() and (target.stat().st_mode & 0o777) == 0o640
    assert host(npusim.load(target)).tolist() == [0, 0]


def test_save_path_errors(tmp_path):
    with pytest.raises(RuntimeError, match="Parent directory .*nowhere does not exist."):
        npusim.save(1, tmp_path / "nowhere" / "x.pt")
    with pytest.raises(IsADirectoryError):
        npusim.save(1, tmp_path)


# --- mmap ----------------------------------------------------------------------------------------------------------

def test_mmap_maps_tensor_data_from_the_file(tmp_path):
    path = tmp_path / "m.pt"
    npusim.save({"a": npusim.arange(6.0).reshape(2, 3), "b": npusim.arange(4, dtype=npusim.int16)}, path)
    r = npusim.load(path, mmap=True)
    np.testing.assert_array_equal(host(r["a"]), np.arange(6.0).reshape(2, 3))
    owner = r["a"].numpy()
    while isinstance(owner, (np.ndarray, memoryview)):
        owner = owner.base if isinstance(owner, np.ndarray) else owner.obj
    assert isinstance(owner, mmap.mmap)  # no copy: the array is the file mapping
    r["a"][0, 0] = 100.0  # private mapping: the file does not change
    assert host(npusim.load(path)["a"])[0, 0] == 0.0
    on_npu = npusim.load(path, mmap=True, map_location="npu:1")
    assert str(on_npu["b"].device) == "npu:1" and host(on_npu["b"]).tolist() == [0, 1, 2, 3]


def test_mmap_errors(tmp_path):
    with pytest.raises(ValueError, match="f must be a file path in order to use the mmap argument"):
        npusim.load(io.BytesIO(save_bytes(1)), mmap=True)
    path = tmp_path / "deflated.pt"
    path.write_bytes(rezip(records(save_bytes(npusim.ones(64))), zipfile.ZIP_DEFLATED))
    with pytest.raises(ArchiveError, match="mmap=True needs uncompressed records, but record data/0 is compressed"):
        npusim.load(path, mmap=True)
    path.write_bytes(rezip(records(save_bytes(npusim.ones(64)))))  # zipfile does not align records
    with pytest.raises(ArchiveError, match="mmap=True needs records aligned to 64 bytes"):
        npusim.load(path, mmap=True)


# --- torch's environment switches for weights_only ---------------------------------------------------------------

class _Plain:
    """A class a weights_only load refuses."""


def test_force_no_weights_only_load_applies_when_weights_only_is_not_given(tmp_path, monkeypatch):
    path = tmp_path / "obj.pt"
    npusim.save({"obj": _Plain()}, path)
    for prefix in ("TORCH_", "NPUSIM_"):
        monkeypatch.setenv(prefix + "FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
        with pytest.warns(UserWarning, match="forcing weights_only=False"):
            assert isinstance(npusim.load(path)["obj"], _Plain)
        with pytest.raises(UnpicklingError, match="Weights only load failed"):
            npusim.load(path, weights_only=True)          # an explicit argument wins
        monkeypatch.delenv(prefix + "FORCE_NO_WEIGHTS_ONLY_LOAD")
    with pytest.raises(UnpicklingError):
        npusim.load(path)


def test_force_weights_only_load_overrides_even_an_explicit_false(tmp_path, monkeypatch):
    path = tmp_path / "obj.pt"
    npusim.save({"obj": _Plain()}, path)
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "true")
    with pytest.raises(UnpicklingError):
        npusim.load(path, weights_only=False)
    monkeypatch.setenv("NPUSIM_FORCE_NO_WEIGHTS_ONLY_LOAD", "yes")
    with pytest.raises(RuntimeError, match="Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or"):
        npusim.load(path)
