"""What autocast costs: per-op overhead, and an MLP training step with and without it.

    python bench/bench_autocast.py [--repeats N] [--device npu|cpu]

Per-op table: the median time of one call of a tiny op (2x2 tensors) outside and inside an
autocast region, and the ratio (budget: <= 1.5x). The "torch cpu" column is torch's own ratio for
the same op under its cpu autocast (bfloat16), whose lists differ from the npu's. An op that
needs casts (float32 inputs to a lower-precision op) is also compared with doing the same casts
by hand, which isolates the machinery's own cost. Tiny ops are timed in thread CPU time, so
that other work on a busy machine does not blur the figures; the training steps in wall time.

MLP table: one training step (forward, loss, backward, optimizer step) of a 3-layer MLP,
without autocast, and with autocast + GradScaler. On the emulated npu, float16 math runs
on the host (NumPy computes half-precision matmuls in float32 and rounds), so autocast
saves no time there: the figure shows what host-side half precision and the casts cost.
BLAS threads compete on a busy machine; OPENBLAS_NUM_THREADS=1 gives steadier step times.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import timeit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import npusim  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


def per_call_us(fn, repeats: int, timer=time.thread_time, budget_s: float = 0.02) -> float:
    fn()
    t = timeit.Timer(fn, timer=timer)
    number = 1
    while t.timeit(number) < budget_s / 5 and number < 1_000_000:
        number *= 4
    return statistics.median(t.repeat(repeat=repeats, number=number)) / number * 1e6


def tiny_cases(mod, device, low):
    x = mod.randn(2, 2, device=device)
    y = mod.randn(2, 2, device=device)
    xl, yl = x.to(low), y.to(low)
    # on the npu: add has no policy, exp is fp32, sum fp32_set_opt_dtype, mm lower_precision_fp;
    # on the cpu (torch's cpu lists) only mm has a policy
    return {
        "add": (lambda: x + y, None),
        "exp (float32 input)": (lambda: mod.exp(x), None),
        "sum (float32 input)": (lambda: x.sum(), None),
        "mm (inputs already low precision)": (lambda: xl @ yl, None),
        "mm (float32 inputs: two casts)": (lambda: x @ y, lambda: x.to(low) @ y.to(low)),
    }


def autocast_ratios(mod, device, low, repeats):
    """{case: (outside us, inside us, by-hand us or None)} for ``mod`` (npusim or torch)."""
    out = {}
    for name, (fn, by_hand) in tiny_cases(mod, device, low).items():
        outside = per_call_us(fn, repeats)
        with mod.autocast(device, dtype=low):
            inside = per_call_us(fn, repeats)
        out[name] = (outside, inside, per_call_us(by_hand, repeats) if by_hand else None)
    return out


def mlp_step_ms(mod, device, use_autocast, low, repeats, steps=5):
    """Best wall time of one training step of the same MLP in ``mod`` (npusim or torch)."""
    mod.manual_seed(0)
    nn = mod.nn
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10)).to(device)
    opt = mod.optim.SGD(model.parameters(), lr=0.01)
    scaler = mod.amp.GradScaler(device, enabled=use_autocast)
    x = mod.randn(64, 256, device=device)
    target = mod.randint(0, 10, (64,), device=device)

    def step():
        opt.zero_grad()
        with mod.autocast(device, dtype=low, enabled=use_autocast):
            loss = nn.functional.cross_entropy(model(x), target)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    step()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        times.append((time.perf_counter() - t0) / steps * 1e3)
    return min(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--device", default="npu", choices=["npu", "cpu"])
    args = ap.parse_args(argv)
    dev = args.device
    low = npusim.float16 if dev == "npu" else npusim.bfloat16
    print(f"npusim {npusim.__version__}, device {dev}"
          + (f" ({npusim.npu.runtime_mode()})" if dev == "npu" else "") + f", autocast dtype {low}")

    ours = autocast_ratios(npusim, dev, low, args.repeats)
    theirs = autocast_ratios(torch, "cpu", torch.bfloat16, args.repeats) if torch is not None else {}
    print("\nper-op cost (us per call, thread CPU time)")
    print(f"{'op':36s} {'outside':>8s} {'inside':>8s} {'ratio':>6s} {'by hand':>8s} {'vs hand':>8s} "
          f"{'torch cpu':>9s}")
    for name, (outside, inside, by_hand) in ours.items():
        hand = f"{by_hand:8.2f} {inside / by_hand:7.2f}x" if by_hand else f"{'':8s} {'':8s}"
        ref = theirs.get(name)
        ref_s = f"{ref[1] / ref[0]:8.2f}x" if ref else f"{'n/a':>9s}"
        print(f"{name:36s} {outside:8.2f} {inside:8.2f} {inside / outside:5.2f}x {hand} {ref_s}")

    print("\nMLP training step, 64x256 -> 512 -> 512 -> 10, SGD (ms, wall time, best of repeats)")
    plain = mlp_step_ms(npusim, dev, False, low, args.repeats)
    mixed = mlp_step_ms(npusim, dev, True, low, args.repeats)
    print(f"{'npusim without autocast':36s} {plain:8.2f}")
    print(f"{'npusim autocast + GradScaler':36s} {mixed:8.2f}   ratio {mixed / plain:.2f}x")
    if torch is not None:
        t_plain = mlp_step_ms(torch, "cpu", False, torch.bfloat16, args.repeats)
        t_mixed = mlp_step_ms(torch, "cpu", True, torch.bfloat16, args.repeats)
        print(f"{'torch cpu without autocast':36s} {t_plain:8.2f}")
        print(f"{'torch cpu bf16 autocast + GradScaler':36s} {t_mixed:8.2f}   ratio {t_mixed / t_plain:.2f}x")


if __name__ == "__main__":
    main()
