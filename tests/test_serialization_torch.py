"""Checkpoints interchange with PyTorch 2.13: npusim.save -> torch.load(weights_only=True) and
torch.save -> npusim.load, for tensors of every shared dtype, views, state dicts of modules and
optimizers, and the error messages of the safe loader."""
from __future__ import annotations

import io
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import npusim
from conftest import host
from npusim._utils import set_tensor_metadata
from npusim.serialization import ArchiveError, UnpicklingError

pytestmark = pytest.mark.oracle

DTYPE_NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def npusim_bytes(obj, **kw) -> bytes:
    buf = io.BytesIO()
    npusim.save(obj, buf, **kw)
    return buf.getvalue()


def torch_bytes(torch, obj, **kw) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf, **kw)
    return buf.getvalue()


def torch_values(t):
    return t.detach().float().numpy() if t.dtype.is_floating_point else t.detach().numpy()


# --- npusim.save -> torch.load ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_torch_loads_npusim_tensors_of_every_dtype(torch, name):
    values = np.arange(12).reshape(3, 4) % (2 if name == "bool" else 7)
    x = npusim.tensor(values.tolist(), dtype=getattr(npusim, name))
    obj = {"x": x, "col": x[:, 1], "t": x.t(), "zero_dim": x[1, 2], "empty": x[:0]}
    r = torch.load(io.BytesIO(npusim_bytes(obj)), weights_only=True)
    for key, want in obj.items():
        got = r[key]
        assert got.dtype == getattr(torch, name), key
        assert tuple(got.shape) == tuple(want.shape) and got.stride() == want.stride(), key
        assert got.storage_offset() == want.storage_offset(), key
        np.testing.assert_array_equal(torch_values(got), host(want), err_msg=key)
    assert r["col"].untyped_storage().data_ptr() == r["x"].untyped_storage().data_ptr()  # still one storage


def test_torch_loads_npu_tensors_with_backend_metadata_onto_the_cpu(torch):
    x = npusim.arange(6.0, device="npu:1").reshape(2, 3)
    set_tensor_metadata(x, {"npu_format": 29})
    r = torch.load(io.BytesIO(npusim_bytes({"x": x, "row": x[1]})), weights_only=True, map_location="cpu")
    assert r["x"].device.type == "cpu"
    np.testing.assert_array_equal(r["x"].numpy(), host(x))
    np.testing.assert_array_equal(r["row"].numpy(), [3, 4, 5])


def test_torch_loads_npusim_containers_dtypes_sizes_and_parameters(torch):
    p = npusim.nn.Parameter(npusim.ones(2, 2))
    obj = OrderedDict(p=p, size=npusim.Size([2, 3]), dtype=npusim.bfloat16, dev=npusim.device("cpu"),
                      items=[1, 2.5, "s", None, (True, b"xy")], s={1, 2}, frozen=npusim.ones(1, requires_grad=True))
    r = torch.load(io.BytesIO(npusim_bytes(obj, _extra_files={"info.txt": "extra files do not bother torch"})),
                   weights_only=True)
    assert isinstance(r, OrderedDict) and list(r) == list(obj)
    assert isinstance(r["p"], torch.nn.Parameter) and r["p"].requires_grad
    assert r["size"] == torch.Size([2, 3]) and isinstance(r["size"], torch.Size)
    assert r["dtype"] is torch.bfloat16 and r["dev"] == torch.device("cpu")
    assert r["items"] == [1, 2.5, "s", None, (True, b"xy")] and r["s"] == {1, 2}
    assert r["frozen"].requires_grad


def test_npusim_archives_hold_only_globals_torch_deems_safe(torch):
    m = npusim.nn.Linear(3, 2)
    data = npusim_bytes({"model": m.state_dict(), "p": m.weight, "dt": npusim.float16})
    assert torch.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data)) == []


def test_torch_modules_and_optimizers_load_npusim_state_dicts(torch):
    npusim.manual_seed(0)
    m = npusim.nn.Sequential(npusim.nn.Linear(3, 4), npusim.nn.BatchNorm1d(4))
    opt = npusim.optim.Adam(m.parameters(), lr=0.01)
    m(npusim.randn(5, 3)).sum().backward()
    opt.step()
    r = torch.load(io.BytesIO(npusim_bytes({"model": m.state_dict(), "opt": opt.state_dict()})), weights_only=True)
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    tm.load_state_dict(r["model"])
    topt = torch.optim.Adam(tm.parameters(), lr=0.01)
    topt.load_state_dict(r["opt"])
    for (k, a), b in zip(m.state_dict().items(), tm.state_dict().values()):
        np.testing.assert_array_equal(host(a), torch_values(b), err_msg=k)
    assert topt.state_dict()["param_groups"][0]["lr"] == 0.01
    np.testing.assert_array_equal(torch_values(topt.state_dict()["state"][0]["exp_avg"]),
                                  host(opt.state_dict()["state"][0]["exp_avg"]))


def test_torch_loads_archives_written_without_checksums(torch):
    npusim.serialization.set_crc32_options(False)
    try:
        data = npusim_bytes(npusim.arange(1 << 19, dtype=npusim.int32))
    finally:
        npusim.serialization.set_crc32_options(True)
    assert torch.load(io.BytesIO(data), weights_only=True)[-1].item() == (1 << 19) - 1


# --- torch.save -> npusim.load -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_npusim_loads_torch_tensors_of_every_dtype(torch, name):
    x = (torch.arange(12).reshape(3, 4) % (2 if name == "bool" else 7)).to(getattr(torch, name))
    obj = {"x": x, "col": x[:, 1], "t": x.t(), "zero_dim": x[1, 2], "empty": x[:0], "strided": x[::2, 1::2]}
    r = npusim.load(io.BytesIO(torch_bytes(torch, obj)))
    for key, want in obj.items():
        got = r[key]
        assert got.dtype is getattr(npusim, name), key
        assert tuple(got.shape) == tuple(want.shape) and got.stride() == want.stride(), key
        assert got.storage_offset() == want.storage_offset(), key
        np.testing.assert_array_equal(host(got), torch_values(want), err_msg=key)
    assert r["col"].untyped_storage().data_ptr() == r["x"].untyped_storage().data_ptr()


def test_npusim_modules_and_optimizers_load_torch_state_dicts(torch):
    def build(nn):  # every parameter gets a well-conditioned gradient (no bias right before a batch norm)
        return nn.Sequential(nn.BatchNorm1d(3), nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))

    torch.manual_seed(0)
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    w = np.random.default_rng(1).standard_normal((5, 2)).astype(np.float32)
    tm = build(torch.nn)
    topt = torch.optim.Adam(tm.parameters(), lr=0.01)
    (tm(torch.from_numpy(x)) * torch.from_numpy(w)).sum().backward()
    topt.step()
    data = torch_bytes(torch, {"model": tm.state_dict(), "opt": topt.state_dict()})
    r = npusim.load(io.BytesIO(data))
    assert isinstance(r["model"], OrderedDict) and r["model"]._metadata == tm.state_dict()._metadata
    m = build(npusim.nn)
    m.load_state_dict(r["model"])
    opt = npusim.optim.Adam(m.parameters(), lr=0.01)
    opt.load_state_dict(r["opt"])
    for (k, a), b in zip(m.state_dict().items(), tm.state_dict().values()):
        np.testing.assert_array_equal(host(a), torch_values(b), err_msg=k)
    for model, o, lib in ((tm, topt, torch), (m, opt, npusim)):  # the same next step
        o.zero_grad()
        (model(lib.from_numpy(x)) * lib.from_numpy(w)).sum().backward()
        o.step()
    for (k, a), b in zip(m.state_dict().items(), tm.state_dict().values()):
        np.testing.assert_allclose(host(a), torch_values(b), rtol=1e-5, atol=1e-6, err_msg=k)


def test_npusim_loads_torch_parameters_storages_and_tensor_attributes(torch):
    p = torch.nn.Parameter(torch.ones(2))
    t = torch.arange(3.0)
    t.note = "kept"
    s = torch.arange(5, dtype=torch.uint8).untyped_storage()
    r = npusim.load(io.BytesIO(torch_bytes(torch, [p, t, s, torch.Size([4]), torch.float64, torch.device("cpu")])))
    assert isinstance(r[0], npusim.nn.Parameter) and r[0].requires_grad
    assert host(r[1]).tolist() == [0, 1, 2] and r[1].note == "kept"
    assert isinstance(r[2], npusim.UntypedStorage) and r[2].tolist() == [0, 1, 2, 3, 4]
    assert r[3] == npusim.Size([4]) and r[4] is npusim.float64 and r[5] == npusim.device("cpu")


def test_npusim_maps_torch_checkpoints_onto_the_npu_and_memory_maps_them(torch, tmp_path):
    path = tmp_path / "t.pt"
    torch.save({"w": torch.arange(6.0).reshape(2, 3)}, path)
    on_npu = npusim.load(path, map_location="npu:1")["w"]
    assert str(on_npu.device) == "npu:1" and host(on_npu).tolist() == [[0, 1, 2], [3, 4, 5]]
    mapped = npusim.load(path, mmap=True)["w"]  # torch aligns its records too
    assert host(mapped).tolist() == [[0, 1, 2], [3, 4, 5]]


def test_torch_dtypes_npusim_lacks_are_clear_errors(torch):
    for value, message in ((torch.bits16, "dtype torch.bits16"), (torch.qint32, "dtype torch.qint32")):
        with pytest.raises(UnpicklingError, match=message + ", which npusim does not support"):
            npusim.load(io.BytesIO(torch_bytes(torch, value)))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.jit.script/save are deprecated in torch 2.13
def test_torch_legacy_and_torchscript_files_are_refused_clearly(torch):
    legacy = torch_bytes(torch, torch.ones(2), _use_new_zipfile_serialization=False)
    with pytest.raises(ArchiveError, match="uses torch's legacy format"):
        npusim.load(io.BytesIO(legacy))
    buf = io.BytesIO()
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), buf)
    with pytest.raises(ArchiveError, match="this is a TorchScript archive"):
        npusim.load(io.BytesIO(buf.getvalue()))


def test_unsupported_global_message_is_torchs_adapted(torch):
    data = torch_bytes(torch, {"c": zipfile.ZipInfo("x")})
    with pytest.raises(Exception) as torch_error:
        torch.load(io.BytesIO(data), weights_only=True)
    with pytest.raises(UnpicklingError) as npusim_error:
        npusim.load(io.BytesIO(data))
    want = str(torch_error.value)
    sentence = want[want.index("Unsupported global"):want.index("if you trust this class/function.")]
    assert sentence.replace("torch.serialization", "npusim.serialization") in str(npusim_error.value)
    assert str(npusim_error.value).startswith("Weights only load failed.")
