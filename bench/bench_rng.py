"""Throughput of random draws, in one run: npusim (cpu and emulated npu) vs NumPy and torch.

    python bench/bench_rng.py [--repeats N] [--size N] [--threads 1,2]

Rows: ``rand``, ``randn``, ``randint`` of 16M values, ``randperm`` of 4M and
``dropout(p=0.5)`` of a 16M float32 tensor (its mask is a Bernoulli draw).
NumPy's reference is its default generator (PCG64; for dropout a uniform draw,
a comparison and a multiplication); torch's is ``torch.rand`` etc. when torch is
importable. The table
shows the median milliseconds per draw and npusim's speed relative to torch and
to NumPy (higher is better: 1.0 means as fast). The table is printed once per
thread count of ``--threads`` (default 1 and 2), set on both sides
(``npusim.set_num_threads`` and ``torch.set_num_threads``). The whole run takes
about a minute.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import npusim  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


def median_ms(fn, repeats: int) -> float:
    fn()   # warm up (first-use costs: thread pool, runtime initialisation)
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1e3


def cases(n: int):
    rng = np.random.default_rng(0)
    perm_n = min(n, 1 << 22)
    ones_cpu, ones_npu, ones_np = npusim.ones(n), npusim.ones(n, device="npu"), np.ones(n, np.float32)
    ones_torch = torch.ones(n) if torch else None
    dropout = npusim.nn.functional.dropout
    rows = [
        ("rand float32", lambda: npusim.rand(n), lambda: npusim.rand(n, device="npu"),
         lambda: rng.random(n, dtype=np.float32), (lambda: torch.rand(n)) if torch else None),
        ("randn float32", lambda: npusim.randn(n), lambda: npusim.randn(n, device="npu"),
         lambda: rng.standard_normal(n, dtype=np.float32), (lambda: torch.randn(n)) if torch else None),
        ("randint int64", lambda: npusim.randint(0, 1000, (n,)), lambda: npusim.randint(0, 1000, (n,), device="npu"),
         lambda: rng.integers(0, 1000, n), (lambda: torch.randint(0, 1000, (n,))) if torch else None),
        (f"randperm {perm_n >> 20}M", lambda: npusim.randperm(perm_n), lambda: npusim.randperm(perm_n, device="npu"),
         lambda: rng.permutation(perm_n), (lambda: torch.randperm(perm_n)) if torch else None),
        ("dropout 0.5", lambda: dropout(ones_cpu, 0.5, True), lambda: dropout(ones_npu, 0.5, True),
         lambda: ones_np * (rng.random(n, dtype=np.float32) >= 0.5) * np.float32(2.0),
         (lambda: torch.nn.functional.dropout(ones_torch, 0.5, True)) if torch else None),
    ]
    return rows


def fmt(v, spec=".1f", width=10) -> str:
    return f"{'n/a':>{width}}" if v is None else f"{v:>{width}{spec}}"


def speed(ref, ours):
    return None if ref is None or ours is None else ref / ours


def set_threads(n: int) -> None:
    npusim.set_num_threads(n)   # the intra-op pool (large draws run in pieces on it) and BLAS
    if torch is not None:
        torch.set_num_threads(n)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="samples per measurement (the median is shown)")
    parser.add_argument("--size", type=int, default=16 * 1024 * 1024, help="values per draw (default 16M)")
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts, each run in turn")
    args = parser.parse_args(argv)
    torch_version = f", torch {torch.__version__}" if torch else ""
    print(f"npusim {npusim.__version__} (npu: {npusim.npu.runtime_mode()}), NumPy {np.__version__}{torch_version}; "
          f"os.cpu_count()={os.cpu_count()}")
    print(f"Draws of {args.size / 2 ** 20:g}M values, median ms per draw; speed = reference time / npusim time "
          f"(higher is better)")
    for n in (int(t) for t in args.threads.split(",")):
        set_threads(n)
        print()
        print(f"=== {n} thread{'s' if n > 1 else ''} (npusim and torch) ===")
        print(f"{'draw':<15}{'cpu':>10}{'npu':>10}{'numpy':>10}{'torch':>10}{'cpu/torch':>11}{'npu/torch':>11}"
              f"{'cpu/numpy':>11}")
        for name, ours_cpu, ours_npu, ref_np, ref_torch in cases(args.size):
            t_cpu = median_ms(ours_cpu, args.repeats)
            t_npu = median_ms(ours_npu, args.repeats)
            t_np = median_ms(ref_np, args.repeats)
            t_torch = median_ms(ref_torch, args.repeats) if ref_torch is not None else None
            print(f"{name:<15}{fmt(t_cpu)}{fmt(t_npu)}{fmt(t_np)}{fmt(t_torch)}"
                  f"{fmt(speed(t_torch, t_cpu), '.2f', 11)}{fmt(speed(t_torch, t_npu), '.2f', 11)}"
                  f"{fmt(speed(t_np, t_cpu), '.2f', 11)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
