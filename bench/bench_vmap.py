"""vmap through batching rules against the per-sample loop and torch.func.vmap, at one and two threads.

    python bench/bench_vmap.py [--threads N] [--rounds N]

Three workloads over a batch of 64: per-sample gradients of an MLP (32-128-10, tanh, cross-entropy;
``vmap(grad(loss), in_dims=(None, 0, 0))``), a batched matmul (64 pairs of 32x32 matrices) and an elementwise chain
on 64 rows of 1024. For each: npusim's vmap, npusim's per-sample loop (what vmap did before it had batching rules),
and torch.func.vmap, in milliseconds per call (median over the rounds), plus the ratios. Without ``--threads`` the
script runs itself at 1 and then 2 threads (BLAS reads its thread count when it loads).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

_pre = argparse.ArgumentParser(add_help=False)
_pre.add_argument("--threads", type=int, default=None)
_THREADS = _pre.parse_known_args()[0].threads
if _THREADS is not None:
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = str(_THREADS)

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

BATCH = 64


def _median_ms(fn, rounds):
    fn()     # warm up (first calls generate dispatch code)
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def workloads(lib, func):
    """{name: (vmapped call, per-sample loop)} for ``lib`` (npusim or torch) and its ``func`` namespace."""
    rng = np.random.default_rng(0)
    t = lambda a: lib.tensor(a)   # noqa: E731
    w1, b1 = t(rng.standard_normal((128, 32), dtype=np.float32) * 0.2), t(np.zeros(128, np.float32))
    w2, b2 = t(rng.standard_normal((10, 128), dtype=np.float32) * 0.1), t(np.zeros(10, np.float32))
    params = {"w1": w1, "b1": b1, "w2": w2, "b2": b2}
    x = t(rng.standard_normal((BATCH, 32), dtype=np.float32))
    y = lib.tensor(rng.integers(0, 10, BATCH))
    nnf = lib.nn.functional

    def loss(p, xs, ys):
        h = nnf.linear(xs.unsqueeze(0), p["w1"], p["b1"]).tanh()
        return nnf.cross_entropy(nnf.linear(h, p["w2"], p["b2"]), ys.unsqueeze(0))

    per_sample = func.vmap(func.grad(loss), in_dims=(None, 0, 0))
    g = func.grad(loss)
    a = t(rng.standard_normal((BATCH, 32, 32), dtype=np.float32))
    b = t(rng.standard_normal((BATCH, 32, 32), dtype=np.float32))
    mm = func.vmap(lambda p, q: p @ q)
    e = t(rng.standard_normal((BATCH, 1024), dtype=np.float32))
    chain = lambda r: ((r.sin() * r + 1).exp() / 3).tanh() - r   # noqa: E731
    ew = func.vmap(chain)
    return {
        "per-sample grads (MLP)": (lambda: per_sample(params, x, y),
                                   lambda: [g(params, x[i], y[i]) for i in range(BATCH)]),
        "batched matmul": (lambda: mm(a, b), lambda: lib.stack([a[i] @ b[i] for i in range(BATCH)])),
        "elementwise chain": (lambda: ew(e), lambda: lib.stack([chain(e[i]) for i in range(BATCH)])),
    }


def run(threads, rounds):
    import npusim
    import npusim.func
    npusim.set_num_threads(threads)
    ours = workloads(npusim, npusim.func)
    try:
        import torch
        import torch.func
        torch.set_num_threads(threads)
        theirs = workloads(torch, torch.func)
    except ImportError:
        theirs = None
    print(f"\nthreads={threads}, batch {BATCH}, ms per call (median of {rounds})")
    print(f"{'workload':24s} {'npusim vmap':>12s} {'npusim loop':>12s} {'torch vmap':>11s} {'loop/vmap':>10s} "
          f"{'vmap/torch':>11s}")
    for name, (vm, loop) in ours.items():
        v = _median_ms(vm, rounds)
        lp = _median_ms(loop, max(3, rounds // 4))
        tv = _median_ms(theirs[name][0], rounds) if theirs else float("nan")
        print(f"{name:24s} {v:12.3f} {lp:12.3f} {tv:11.3f} {lp / v:9.1f}x {v / tv:10.1f}x")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    if args.threads is None:
        for n in (1, 2):
            subprocess.run([sys.executable, os.path.abspath(__file__), "--threads", str(n), "--rounds",
                            str(args.rounds)], check=True)
        return
    run(args.threads, args.rounds)


if __name__ == "__main__":
    main()
