"""DLPack exchange of npu tensors with CuPy and with torch on CUDA, both ways: equal values, shared memory.

Memory is shown shared twice: the data pointers are equal, and a write through one
side is read back through the other.
"""
from __future__ import annotations

import numpy as np

from .cuda_mode import load_npusim, torch_cuda
from .results import PASS, Result, expect

REQUIRED_DTYPES = ("float32", "float16", "int64")
# Reported but not required: whether they cross depends on the DLPack support of the CuPy and torch installed.
EXTRA_DTYPES = ("bool", "bfloat16")
DTYPES = REQUIRED_DTYPES + EXTRA_DTYPES


def _host(npusim, t) -> np.ndarray:
    t = t.detach().cpu()
    return (t.float() if t.dtype is npusim.bfloat16 else t).numpy()


def _sample(npusim, dtype_name: str):
    """A 3x4 npu tensor of ``dtype_name`` with distinct values (a pattern for bool)."""
    base = npusim.arange(12, device="npu").reshape(3, 4)
    if dtype_name == "bool":
        return base % 3 == 0
    return base.to(getattr(npusim, dtype_name))


def _npu_to_cupy(npusim, cupy, dtype_name: str, transposed: bool) -> str:
    x = _sample(npusim, dtype_name)
    if transposed:
        x = x.t()
    c = cupy.from_dlpack(x)
    expect(tuple(c.shape) == tuple(x.shape), f"cupy shape {c.shape} != npu {tuple(x.shape)}")
    expect(c.data.ptr == x.data_ptr(), "cupy.from_dlpack copied the npu tensor instead of sharing it")
    host_c = cupy.asnumpy(c.astype(cupy.float32) if dtype_name == "bfloat16" else c)
    expect(np.array_equal(host_c, _host(npusim, x)), f"{dtype_name}: cupy values differ from the npu tensor's")
    if dtype_name != "bool":
        c[0, 1] = 5
        cupy.cuda.Device().synchronize()    # DLPack leaves ordering to the user: the write is on CuPy's stream
        expect(_host(npusim, x)[0, 1] == 5, f"{dtype_name}: a write through CuPy is not seen by the npu tensor")
    back = npusim.from_dlpack(c)
    expect(back.device.type == "npu" and back.data_ptr() == x.data_ptr(),
           f"{dtype_name}: npusim.from_dlpack(cupy array) does not share the array's memory")
    return "ok"


def _cupy_to_npu(npusim, cupy) -> str:
    c = cupy.arange(6, dtype=cupy.float32)
    t = npusim.from_dlpack(c)
    expect(t.device.type == "npu", f"npusim.from_dlpack(cupy array) is on {t.device}")
    expect(t.data_ptr() == c.data.ptr, "npusim.from_dlpack copied the CuPy array")
    t.add_(1)
    npusim.npu.synchronize()
    expect(np.array_equal(cupy.asnumpy(c), np.arange(1, 7, dtype=np.float32)),
           "an in-place npu op is not seen by the CuPy array it came from")
    return "ok"


def _torch_both_ways(npusim, torch, dtype_name: str) -> str:
    x = _sample(npusim, dtype_name)
    tt = torch.from_dlpack(x)
    expect(tt.is_cuda, f"torch.from_dlpack(npu tensor) is on {tt.device}")
    expect(tt.data_ptr() == x.data_ptr(), f"{dtype_name}: torch copied the npu tensor instead of sharing it")
    theirs = (tt.float() if dtype_name == "bfloat16" else tt).cpu().numpy()
    expect(np.array_equal(theirs, _host(npusim, x)), f"{dtype_name}: torch values differ from the npu tensor's")
    if dtype_name != "bool":
        tt[0, 1] = 7
        torch.cuda.synchronize()
        expect(_host(npusim, x)[0, 1] == 7, f"{dtype_name}: a write through torch is not seen by the npu tensor")
    source = torch.arange(6, device="cuda").to(getattr(torch, dtype_name))
    back = npusim.from_dlpack(source)
    expect(back.device.type == "npu" and back.data_ptr() == source.data_ptr(),
           f"{dtype_name}: npusim.from_dlpack(torch cuda tensor) does not share its memory")
    expect(np.array_equal(_host(npusim, back), (source.float() if dtype_name == "bfloat16" else source).cpu().numpy()),
           f"{dtype_name}: npusim.from_dlpack(torch cuda tensor) has other values")
    return "ok"


def _attempt(fn, *args) -> str:
    try:
        return fn(*args)
    except Exception as e:
        return f"FAILED: {type(e).__name__}: {e}"


def run(ctx) -> Result:
    npusim = load_npusim()
    import cupy
    cases = {f"npu->cupy {d}": _attempt(_npu_to_cupy, npusim, cupy, d, False) for d in DTYPES}
    cases["npu->cupy float32 transposed"] = _attempt(_npu_to_cupy, npusim, cupy, "float32", True)
    cases["cupy->npu float32"] = _attempt(_cupy_to_npu, npusim, cupy)
    torch, why_not = torch_cuda()
    if torch is None:
        torch_note = f"torch part skipped: {why_not}"
    else:
        torch_note = ""
        for d in DTYPES:
            cases[f"npu<->torch {d}"] = _attempt(_torch_both_ways, npusim, torch, d)
    failed = {k: v for k, v in cases.items() if v != "ok" and k.split()[-1] not in EXTRA_DTYPES}
    expect(not failed, "; ".join(f"{k}: {v}" for k, v in failed.items()), {"cases": cases})
    extra_failed = [k for k, v in cases.items() if v != "ok"]
    notes = [torch_note] + ([f"not supported (optional): {', '.join(extra_failed)}"] if extra_failed else [])
    ok = sum(v == "ok" for v in cases.values())
    return Result("dlpack", PASS, figure=f"{ok}/{len(cases)} exchanges", note="; ".join(n for n in notes if n),
                  details={"cases": cases})
