"""Intra-op and inter-op threading: speedup from a second thread, and npusim vs torch at the same thread count.

    python bench/bench_threading.py [--repeats N] [--size N]

Large ops (16M float32 elements by default) run on the cpu device and on the
npu with 1 and with 2 intra-op threads; the table shows the best time per call
over interleaved rounds (each round runs every configuration once, so a busy
neighbour on the machine slows all of them alike), the speedup of 2 threads over 1 (budget >= 1.5x on 2 cores) and, when
torch is importable, torch's time at the same thread count divided by npusim's
(budget >= 0.8x, aim >= 1.0x; higher is better). Then two 1024x1024 matmuls
forked onto the inter-op pool against the same two run one after the other.
The whole run takes well under a minute.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import npusim  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


def once_s(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def best_of_rounds(configs: dict, repeats: int) -> dict:
    """{key: best seconds} for ``configs`` {key: (setup, fn)}, run once per round, rounds interleaved."""
    best = {}
    for r in range(repeats + 1):
        for key, (setup, fn) in configs.items():
            setup()
            t = once_s(fn)
            if r:   # round 0 warms up: pools started, first-touch of memory
                best[key] = min(best.get(key, t), t)
    return best


def op_cases(x, y):
    return {
        "add": lambda: x + y,
        "mul": lambda: x * y,
        "exp": lambda: x.exp(),
        "sum": lambda: x.sum(),
    }


def bench_ops(size: int, repeats: int, device: str):
    gen = npusim.Generator().manual_seed(0)
    x = npusim.rand(size, generator=gen).to(device)
    y = npusim.rand(size, generator=gen).to(device)
    ours = op_cases(x, y)
    configs = {(name, threads): (lambda n=threads: npusim.set_num_threads(n), ours[name])
               for name in ours for threads in (1, 2)}
    best = best_of_rounds(configs, repeats)
    tbest = {}
    if torch is not None and device == "cpu":
        # a phase of its own: torch's idle OpenMP threads spin for a while after each op and would take
        # the core npusim's second thread needs if the two libraries alternated
        time.sleep(0.5)
        tx, ty = torch.from_numpy(x.numpy()), torch.from_numpy(y.numpy())
        theirs = op_cases(tx, ty)
        tbest = best_of_rounds({(name, threads): (lambda n=threads: torch.set_num_threads(n), theirs[name])
                                for name in theirs for threads in (1, 2)}, repeats)
        time.sleep(0.5)
    return [(name, {n: best[(name, n)] for n in (1, 2)}, {n: tbest[(name, n)] for n in (1, 2)} if tbest else {})
            for name in ours]


def bench_fork(repeats: int):
    gen = npusim.Generator().manual_seed(1)
    a, b = npusim.rand(1024, 1024, generator=gen), npusim.rand(1024, 1024, generator=gen)
    c, d = npusim.rand(1024, 1024, generator=gen), npusim.rand(1024, 1024, generator=gen)

    def sequential():
        return npusim.mm(a, b) + npusim.mm(c, d)

    def forked():
        fut = npusim.jit.fork(npusim.mm, c, d)
        y = npusim.mm(a, b)
        return y + npusim.jit.wait(fut)

    out = []
    for threads in (1, 2):
        # the intra-op count also sets the BLAS threads of each matmul; the thread counts are not
        # interleaved because idle BLAS threads spin for a while after a call and take a core
        npusim.set_num_threads(threads)
        time.sleep(0.5)
        best = best_of_rounds({"sequential": (lambda: None, sequential), "forked": (lambda: None, forked)}, repeats)
        out.append((threads, best["sequential"], best["forked"]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--size", type=int, default=16 * 1024 * 1024)
    args = parser.parse_args()
    default = npusim.get_num_threads()
    print(f"cores usable: {len(os.sched_getaffinity(0))}; npusim default threads: {default}; "
          f"torch: {torch.__version__ if torch is not None else 'not importable'}")
    print(f"\n{args.size / 2**20:.0f}M float32, best ms per call; speedup = 1 thread / 2 threads; "
          f"vs torch = torch time / npusim time (same threads)")
    header = f"{'device':7} {'op':5} {'1 thr':>8} {'2 thr':>8} {'speedup':>8}"
    if torch is not None:
        header += f" {'torch 1':>8} {'torch 2':>8} {'vs torch 1':>10} {'vs torch 2':>10}"
    print(header)
    for device in ("cpu", "npu"):
        for name, t, tt in bench_ops(args.size, args.repeats, device):
            line = f"{device:7} {name:5} {t[1] * 1e3:8.2f} {t[2] * 1e3:8.2f} {t[1] / t[2]:7.2f}x"
            if tt:
                line += (f" {tt[1] * 1e3:8.2f} {tt[2] * 1e3:8.2f} {tt[1] / t[1]:9.2f}x {tt[2] / t[2]:9.2f}x")
            print(line)
    print("\ntwo 1024x1024 float32 matmuls then an add, best ms: sequential vs one of them forked")
    print(f"{'threads':>7} {'sequential':>10} {'forked':>8} {'speedup':>8}")
    for threads, seq, forked in bench_fork(args.repeats):
        print(f"{threads:7d} {seq * 1e3:10.2f} {forked * 1e3:8.2f} {seq / forked:7.2f}x")
    npusim.set_num_threads(default)


if __name__ == "__main__":
    main()
