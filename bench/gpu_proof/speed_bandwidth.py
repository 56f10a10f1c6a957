"""Bandwidth of a large float32 add on the npu against the device's own copy bandwidth, in one run.

The add reads two arrays and writes one (3 x size bytes moved); a device-to-device
copy reads one and writes one (2 x size). The reference is the faster of cudaMemcpy
and CuPy's copy kernel on the same buffers. Aim: the add reaches 85% of it.
"""
from __future__ import annotations

from .results import FAIL, PASS, Result
from .speed_common import batch_s, prepare, rounds
from .timing import median_seconds_per_call

AIM = 0.85


def _copies(cupy, dst, src, nbytes: int) -> dict:
    """The device-to-device copies this CuPy offers: cudaMemcpyAsync when it has it, its copy kernel always."""
    copies = {"copy kernel": lambda: cupy.copyto(dst, src)}
    rt = cupy.cuda.runtime
    if hasattr(rt, "memcpyAsync"):
        copies["cudaMemcpy D2D"] = lambda: rt.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes,
                                                          rt.memcpyDeviceToDevice,
                                                          cupy.cuda.get_current_stream().ptr)
    return copies


def run(ctx) -> Result:
    s = prepare(ctx)
    npusim = s.npusim
    import cupy
    nbytes = ctx.size(1 << 30, 256 << 20, 4 << 20)
    n = nbytes // 4
    a, b = npusim.rand(n, device="npu"), npusim.rand(n, device="npu")
    src = cupy.ones(n, dtype=cupy.float32)
    dst = cupy.empty_like(src)
    device_sync = cupy.cuda.Device().synchronize
    contenders = {name: (fn, device_sync) for name, fn in _copies(cupy, dst, src, nbytes).items()}
    contenders["npusim a + b"] = (lambda: a + b, s.npu_sync)
    if s.torch is not None:
        ta, tb = s.torch.rand(n, device=s.torch_device), s.torch.rand(n, device=s.torch_device)
        contenders["torch a + b"] = (lambda: ta + tb, s.torch_sync)
    seconds = median_seconds_per_call(contenders, rounds(ctx), batch_s(ctx))
    moved = {name: (3 if "+" in name else 2) * nbytes for name in seconds}
    gbps = {name: moved[name] / t / 1e9 for name, t in seconds.items()}
    copy_gbps = max(v for k, v in gbps.items() if "+" not in k)
    ratio = gbps["npusim a + b"] / copy_gbps
    details = {"bytes_per_array": nbytes, "seconds_per_call": seconds, "gb_per_s": gbps,
               "reference_copy_gb_per_s": copy_gbps, "ratio": ratio, "aim": AIM}
    if "torch a + b" in gbps:
        details["torch_ratio"] = gbps["torch a + b"] / copy_gbps
    figure = f"{ratio:.0%} of copy ({gbps['npusim a + b']:.0f} of {copy_gbps:.0f} GB/s)"
    met = ratio >= AIM
    note = f"{nbytes / 2**20:.0f} MiB float32 add; aim >= {AIM:.0%}" + ("" if met else ": below aim")
    if "torch_ratio" in details:
        note += f"; torch reaches {details['torch_ratio']:.0%}"
    return Result("speed_elementwise_bandwidth", PASS if met else FAIL, figure=figure, note=note, details=details)
