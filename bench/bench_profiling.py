"""What op callbacks cost: a loop of tiny ops with no callback, one sampled global callback, one that
fires on every op, and inside ``npusim.profiler.profile()``; ratios to the loop with no callback.

    python bench/bench_profiling.py [--rounds N] [--device cpu|npu]

The loop runs add, mul, sum and matmul on 2x2 float32 tensors (the ops of
bench_tiny_ops.py). Times are the thread's CPU time (so that other processes on a busy
machine do not count). Each round measures every configuration once, in a
shuffled order; the ratio shown is the median over rounds of each round's ratio
to its own no-callback time.
Budgets (docs/architecture.md, "Figures we hold"): <= 1.05x with a 1%-sampled callback (aim 1.02x).
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import npusim  # noqa: E402
from npusim.profiler import (  # noqa: E402
    ProfilerActivity, RecordFunctionCallback, add_global_callback, profile, remove_callback,
)

OPS_PER_ITER = 4


def make_loop(device: str):
    a = np.arange(4, dtype=np.float32).reshape(2, 2)
    x = npusim.tensor(a, device=device)
    y = npusim.tensor(a + 1, device=device)

    def loop(n: int) -> None:
        for _ in range(n):
            x + y
            x * y
            x.sum()
            x @ y
    return loop


def _noop_enter(fn):
    return None


def _noop_exit(fn, ctx):
    pass


class Callback:
    """A global callback registered for the duration of the measurement."""

    def __init__(self, prob: float):
        self.prob = prob
        self.handle = None

    def __enter__(self):
        cb = RecordFunctionCallback(_noop_enter, _noop_exit).sampling_prob(self.prob)
        self.handle = add_global_callback(cb)
        return self

    def __exit__(self, *exc):
        remove_callback(self.handle)
        return False


class Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def per_op_ns(loop, context_factory, iters: int) -> float:
    with context_factory():
        loop(50)   # warm the memo and the callback tables
        t0 = time.thread_time_ns()
        loop(iters)
        t = time.thread_time_ns() - t0
    return t / (iters * OPS_PER_ITER)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--iters", type=int, default=1000, help="loop iterations per measurement")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    loop = make_loop(args.device)
    configs = {
        "no callback": Nothing,
        "1 global callback, p=1e-9": lambda: Callback(1e-9),
        "1 global callback, p=0.01": lambda: Callback(0.01),
        "1 global callback, p=1.0": lambda: Callback(1.0),
        "inside profile()": lambda: profile(activities=[ProfilerActivity.CPU, ProfilerActivity.NPU]),
    }
    best = {name: float("inf") for name in configs}
    ratios = {name: [] for name in configs}
    rng = random.Random(0)
    for _ in range(args.rounds):
        order = list(configs)
        rng.shuffle(order)   # no configuration always runs right after another
        now = {}
        for name in order:
            # profile() records every op: fewer iterations keep its memory bounded
            iters = args.iters // 5 if name == "inside profile()" else args.iters
            now[name] = per_op_ns(loop, configs[name], iters)
            best[name] = min(best[name], now[name])
        for name in configs:
            ratios[name].append(now[name] / now["no callback"])
    print(f"npusim {npusim.__version__}, tiny-op loop (add, mul, sum, matmul on 2x2 float32, {args.device}), "
          f"{args.rounds} rounds")
    print(f"{'configuration':<30}{'best ns/op':>12}{'median ratio':>14}")
    for name in configs:
        print(f"{name:<30}{best[name]:>12.0f}{statistics.median(ratios[name]):>13.3f}x")
    print("budgets: p=0.01 <= 1.05x (aim 1.02x)")


if __name__ == "__main__":
    main()
