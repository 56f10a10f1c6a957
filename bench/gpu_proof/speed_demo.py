"""Step time of the demo model on the npu against the same model and step in torch on CUDA.

The ratio is npusim's step time over torch's (lower is better); there is no pass
bar, but the losses of the first steps must be finite.
"""
from __future__ import annotations

import math

from .demo_step import npusim_step, torch_step
from .results import PASS, SKIP, Result, expect
from .speed_common import prepare
from .timing import median_seconds_per_call


def run(ctx) -> Result:
    s = prepare(ctx)
    step, vocab_size, train_ids = npusim_step(s.npusim)
    first = [step() for _ in range(3)]      # warm-up; also the model must train
    expect(all(math.isfinite(v) for v in first), f"the demo step gave losses {first}")
    contenders = {"npusim": (step, s.npu_sync)}
    if s.torch is not None:
        contenders["torch"] = (torch_step(s.torch, s.torch_device, vocab_size, train_ids), s.torch_sync)
    seconds = median_seconds_per_call(contenders, ctx.size(5, 3, 2), ctx.size(0.5, 0.2, 0.01), warmup=3)
    details = {"ms_per_step": {k: t * 1e3 for k, t in seconds.items()}, "first_losses": first}
    figure = f"{seconds['npusim'] * 1e3:.1f} ms/step"
    if s.torch is None:
        return Result("speed_demo_step", SKIP, figure=figure, note=f"no torch reference: {s.why_no_torch}",
                      details=details)
    details["npusim_over_torch"] = seconds["npusim"] / seconds["torch"]
    return Result("speed_demo_step", PASS, figure=figure,
                  note=f"{details['npusim_over_torch']:.1f}x torch ({seconds['torch'] * 1e3:.1f} ms/step)",
                  details=details)
