"""Square matmuls on the npu (float16, bfloat16, float32) against torch on CUDA, in one run.

Ratio = torch's time / npusim's time: 1.0 is as fast as torch, the aim is 0.9 or more
for every dtype. Both sides run float32 without TF32 (torch's and CuPy's default).
"""
from __future__ import annotations

from .results import FAIL, PASS, SKIP, Result
from .speed_common import batch_s, prepare, rounds
from .timing import median_seconds_per_call

AIM = 0.9
DTYPES = ("float16", "bfloat16", "float32")


def run(ctx) -> Result:
    s = prepare(ctx)
    npusim, torch = s.npusim, s.torch
    n = ctx.size(8192, 4096, 128)
    flops = 2 * n ** 3
    details = {"n": n, "aim": AIM, "dtypes": {}}
    if torch is not None:
        torch.backends.cuda.matmul.allow_tf32 = False
    for name in DTYPES:
        dt = getattr(npusim, name)
        a, b = npusim.randn(n, n, device="npu").to(dt), npusim.randn(n, n, device="npu").to(dt)
        contenders = {"npusim": (lambda a=a, b=b: a @ b, s.npu_sync)}
        if torch is not None:
            ta = torch.randn(n, n, device=s.torch_device).to(getattr(torch, name))
            tb = torch.randn(n, n, device=s.torch_device).to(getattr(torch, name))
            contenders["torch"] = (lambda ta=ta, tb=tb: ta @ tb, s.torch_sync)
        seconds = median_seconds_per_call(contenders, rounds(ctx), batch_s(ctx))
        row = {"seconds": seconds, "tflops": {k: flops / t / 1e12 for k, t in seconds.items()}}
        if "torch" in seconds:
            row["ratio"] = seconds["torch"] / seconds["npusim"]
        details["dtypes"][name] = row
        del a, b
    if torch is None:
        tflops = ", ".join(f"{k} {v['tflops']['npusim']:.0f}" for k, v in details["dtypes"].items())
        return Result("speed_matmul", SKIP, figure=f"TFLOPS {tflops}", note=f"no torch reference: {s.why_no_torch}",
                      details=details)
    ratios = {k: v["ratio"] for k, v in details["dtypes"].items()}
    below = [k for k, r in ratios.items() if r < AIM]
    figure = ", ".join(f"{k} {r:.2f}x" for k, r in ratios.items())
    note = f"{n}x{n} vs torch; aim >= {AIM}x" + (f": below aim for {', '.join(below)}" if below else "")
    return Result("speed_matmul", FAIL if below else PASS, figure=figure, note=note, details=details)
