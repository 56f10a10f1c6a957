"""NVML figures through npusim.npu: device name, free/total memory, utilisation (idle and busy), temperature.

On a real GPU every figure must come from NVML and agree with CUDA's own view; on the
stand-in there is no NVML library, so the name and memory come from the CUDA runtime
fallback and utilisation must fail with NVML's "unavailable" error, not another one.
"""
from __future__ import annotations

import threading
import time

from .cuda_mode import load_npusim
from .results import FAIL, PASS, Result, expect

# NVML counts memory the driver reserves that CUDA does not hand out: the totals differ by a little.
TOTAL_MEMORY_TOLERANCE = 0.05
# NVML's sensors through npusim.npu (torch.cuda's names): reported, not judged (their values vary by GPU).
OPTIONAL_FIGURES = ("temperature", "power_draw", "clock_rate", "memory_usage")
SAMPLE_EVERY_S = 0.05
MATMULS_PER_SYNC = 20       # keeps the queue short, so the work stops soon after the time is up


def _busy_utilization(npusim, seconds: float) -> int:
    """The highest utilisation NVML reports while the GPU runs matmuls for about ``seconds``.

    A second thread samples while the work runs: NVML averages over its last sample
    period, so a reading taken after the work could already see an idle GPU.
    """
    a = npusim.randn(4096, 4096, device="npu")
    samples, done = [], threading.Event()

    def sample():
        while not done.is_set():
            samples.append(npusim.npu.utilization())
            time.sleep(SAMPLE_EVERY_S)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            for _ in range(MATMULS_PER_SYNC):
                a @ a
            npusim.npu.synchronize()
    finally:
        done.set()
        sampler.join()
    return max(samples, default=0)


def _optional_figure(npusim, name: str):
    fn = getattr(npusim.npu, name, None)
    if fn is None:
        return "not in npusim.npu"
    try:
        return fn()
    except Exception as e:
        return f"{type(e).__name__}: {e}"


def run(ctx) -> Result:
    npusim = load_npusim()
    from npusim.backend import nvml
    import cupy
    details = {}
    name = npusim.npu.get_device_name()
    free, total = npusim.npu.mem_get_info()
    details.update(name=name, free_bytes=free, total_bytes=total)
    expect(isinstance(name, str) and name, f"get_device_name() gave {name!r}")
    expect(0 < free <= total, f"mem_get_info() gave free={free}, total={total}")
    _, cuda_total = cupy.cuda.runtime.memGetInfo()
    details["cuda_total_bytes"] = int(cuda_total)
    expect(abs(total - cuda_total) <= TOTAL_MEMORY_TOLERANCE * cuda_total,
           f"mem_get_info() total {total} is far from CUDA's {cuda_total}")
    details["optional"] = {f: _optional_figure(npusim, f) for f in OPTIONAL_FIGURES}
    try:
        nvml_name = nvml.device_name(0)
    except nvml.NvmlUnavailable as e:
        expect(ctx.standin, f"NVML is unavailable on a real GPU: {e}")
        try:
            npusim.npu.utilization()
        except nvml.NvmlUnavailable as e2:
            details["utilization"] = f"unavailable: {e2}"
        else:
            raise AssertionError("utilization() answered although NVML is unavailable")
        return Result("nvml", PASS, figure=name,
                      note="no NVML library: name and memory from the CUDA runtime, utilization raises "
                           "NvmlUnavailable", details=details)
    expect(nvml_name == name, f"get_device_name() {name!r} is not NVML's {nvml_name!r}")
    idle = npusim.npu.utilization()
    busy = _busy_utilization(npusim, ctx.pick(2.0, 1.0))
    details.update(utilization_idle=idle, utilization_busy=busy)
    expect(0 <= idle <= 100 and 0 <= busy <= 100, f"utilization out of range: idle {idle}, busy {busy}")
    missing = [f for f, v in details["optional"].items() if v == "not in npusim.npu"]
    status = PASS if busy > 0 else FAIL
    note = "busy GPU read as 0% utilization" if busy == 0 else ""
    if missing:
        note = (note + "; " if note else "") + f"npusim.npu has no {', '.join(missing)}"
    return Result("nvml", status, figure=f"{name}, {total / 2**30:.1f} GiB, util {idle}%->{busy}%", note=note,
                  details=details)
