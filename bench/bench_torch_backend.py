"""Per-op overhead of npusim.torch_backend: torch ops on device="npu" served by npusim's npu kernels.

    python bench/bench_torch_backend.py [--rounds N] [--threads 1 2]

Tiny ops (2x2 float32) on torch's npu, against the same op in torch on the CPU and in npusim on its own npu:
an op with a new result (add), an in-place op (add_), a matmul and a view (x[0]). Aim: <= 10 us for a tiny op
with a new result. The gap to npusim's own npu is the adapter: torch's dispatcher entering Python, npusim views
of torch's tensors, and adopting the result array as a torch tensor.

Timings interleave the contenders round by round and keep each one's best round, so a busy machine slows all
of them alike instead of skewing one ratio.
"""
from __future__ import annotations

import argparse
import os
import sys
import timeit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import npusim  # noqa: E402

try:
    import torch

    import npusim.torch_backend  # noqa: F401
except ImportError as exc:
    print(f"needs torch 2.13: {exc}")
    sys.exit(0)


def best_per_call_us(fns: dict, rounds: int, budget_s: float = 0.2) -> dict:
    timers, numbers = {}, {}
    for name, fn in fns.items():
        fn()
        timer = timeit.Timer(fn)
        number = 1
        while timer.timeit(number) < budget_s / rounds and number < 1 << 20:
            number *= 2
        timers[name], numbers[name] = timer, number
    best = {name: float("inf") for name in fns}
    for _ in range(rounds):
        for name, timer in timers.items():
            best[name] = min(best[name], timer.timeit(numbers[name]) / numbers[name] * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2],
                        help="intra-op thread counts to run at (torch's and npusim's alike)")
    args = parser.parse_args()
    for threads in args.threads:
        torch.set_num_threads(threads)
        npusim.set_num_threads(threads)
        run(args.rounds, threads)


def run(rounds: int, threads: int) -> None:
    xc = torch.arange(4.0).reshape(2, 2)
    yc = xc + 1
    xt, yt = xc.to("npu"), yc.to("npu")
    xn, yn = npusim.arange(4.0).reshape(2, 2).npu(), (npusim.arange(4.0).reshape(2, 2) + 1).npu()
    cases = {
        "add (new result)": (lambda: xc + yc, lambda: xt + yt, lambda: xn + yn),
        "add_ (in place)": (lambda: xc.add_(yc), lambda: xt.add_(yt), lambda: xn.add_(yn)),
        "matmul": (lambda: xc @ yc, lambda: xt @ yt, lambda: xn @ yn),
        "x[0] (view)": (lambda: xc[0], lambda: xt[0], lambda: xn[0]),
    }
    print(f"npusim.torch_backend per-op overhead, 2x2 float32, best of {rounds} rounds, "
          f"npu mode {npusim.npu.runtime_mode()}, {threads} thread(s)")
    print(f"{'op':20s} {'torch cpu':>10s} {'torch npu':>10s} {'npusim npu':>11s} {'npu/cpu':>8s} {'npu/npusim':>11s}")
    for name, (cpu, npu, own) in cases.items():
        t = best_per_call_us({"cpu": cpu, "npu": npu, "own": own}, rounds)
        print(f"{name:20s} {t['cpu']:9.2f}us {t['npu']:9.2f}us {t['own']:10.2f}us {t['npu'] / t['cpu']:8.1f} "
              f"{t['npu'] / t['own']:11.1f}")


if __name__ == "__main__":
    main()
