"""Per-call cost of tiny ops, and throughput of two large ones, in one run.

    python bench/bench_tiny_ops.py [--repeats N]

Tiny ops run on 2x2 float32 tensors on the npusim cpu device, in NumPy and in
torch (when importable); the table shows the median time per call in
microseconds and the ratios npusim/torch and npusim/numpy (lower is better).
The last row is a tiny forward and backward pass (mul, sum, backward). The
same tiny ops on the npu are in bench_npu.py.
Large ops (a 16M-float add, a 2048x2048 float32 matmul) are reported as
throughput relative to NumPy (higher is better). An op npusim cannot run yet
shows "n/a". The whole run takes well under a minute.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import timeit

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import npusim  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


def per_call_us(fn, repeats: int, budget_s: float = 0.05) -> float | None:
    """Median time of one call in microseconds, or None if ``fn`` cannot run (or is None)."""
    if fn is None:
        return None
    try:
        fn()
    except Exception:
        return None
    timer = timeit.Timer(fn)
    number, elapsed = 1, 0.0
    while True:  # calls per sample: enough to fill the budget
        elapsed = timer.timeit(number)
        if elapsed >= budget_s / 5 or number >= 1_000_000:
            break
        number *= 4
    samples = timer.repeat(repeat=repeats, number=number)
    return statistics.median(samples) / number * 1e6


def tiny_cases():
    a = np.arange(4, dtype=np.float32).reshape(2, 2)
    b = a + 1
    x, y = npusim.from_numpy(a.copy()), npusim.from_numpy(b.copy())
    cases = {
        "add": (lambda: x + y, lambda: a + b),
        "mul": (lambda: x * y, lambda: a * b),
        "matmul": (lambda: x @ y, lambda: a @ b),
        "sum": (lambda: x.sum(), lambda: a.sum()),
        "x[0]": (lambda: x[0], lambda: a[0]),
        "view (4,)": (lambda: x.view(4), lambda: a.reshape(4)),
        # forward and backward: two leaves, (p * q).sum().backward(); NumPy has no counterpart
        "fwd+bwd": (forward_backward(x, y), None),
    }
    torch_cases = {}
    if torch is not None:
        tx, ty = torch.from_numpy(a.copy()), torch.from_numpy(b.copy())
        torch_cases = {
            "add": lambda: tx + ty, "mul": lambda: tx * ty, "matmul": lambda: tx @ ty,
            "sum": lambda: tx.sum(), "x[0]": lambda: tx[0], "view (4,)": lambda: tx.view(4),
            "fwd+bwd": forward_backward(tx, ty),
        }
    return cases, torch_cases


def forward_backward(x, y):
    """One tiny forward and backward pass (mul, sum, backward) on fresh leaves, in npusim or torch."""
    def run():
        p, q = x.detach().requires_grad_(), y.detach().requires_grad_()
        (p * q).sum().backward()
    return run


def fmt(v, spec=".2f", width=9) -> str:
    return f"{'n/a':>{width}}" if v is None else f"{v:>{width}{spec}}"


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def run_tiny(repeats: int) -> None:
    cases, torch_cases = tiny_cases()
    print("Tiny ops on 2x2 float32, median microseconds per call (ratios: lower is better)")
    print(f"{'op':<11}{'npusim':>9}{'numpy':>9}{'torch':>9}{'npusim/torch':>14}{'npusim/numpy':>14}")
    for name, (ours, ref) in cases.items():
        t_ours = per_call_us(ours, repeats)
        t_np = per_call_us(ref, repeats)
        t_torch = per_call_us(torch_cases[name], repeats) if name in torch_cases else None
        print(f"{name:<11}{fmt(t_ours)}{fmt(t_np)}{fmt(t_torch)}"
              f"{fmt(ratio(t_ours, t_torch), width=14)}{fmt(ratio(t_ours, t_np), width=14)}")


def run_large(repeats: int) -> None:
    rng = np.random.default_rng(0)
    n = 16 * 1024 * 1024
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    m1, m2 = rng.random((2048, 2048), dtype=np.float32), rng.random((2048, 2048), dtype=np.float32)
    x, y = npusim.from_numpy(a), npusim.from_numpy(b)
    mx, my = npusim.from_numpy(m1), npusim.from_numpy(m2)
    rows = [
        ("add 16M float32", lambda: x + y, lambda: a + b, n * 4 * 3 / 1e9, "GB/s"),
        ("matmul 2048^2", lambda: mx @ my, lambda: m1 @ m2, 2 * 2048 ** 3 / 1e9, "GFLOP/s"),
    ]
    torch_fns = {}
    if torch is not None:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        tm1, tm2 = torch.from_numpy(m1), torch.from_numpy(m2)
        torch_fns = {"add 16M float32": lambda: ta + tb, "matmul 2048^2": lambda: tm1 @ tm2}
    print()
    print("Large ops, throughput (ratios: higher is better)")
    print(f"{'op':<17}{'npusim':>10}{'numpy':>10}{'torch':>10}{'unit':>9}{'npusim/numpy':>14}"
          f"{'npusim/torch':>14}")
    for name, ours, ref, work, unit in rows:
        t_ours = per_call_us(ours, repeats, budget_s=0.3)
        t_np = per_call_us(ref, repeats, budget_s=0.3)
        t_torch = per_call_us(torch_fns[name], repeats, budget_s=0.3) if name in torch_fns else None
        rate = [None if t is None else work / (t / 1e6) for t in (t_ours, t_np, t_torch)]
        print(f"{name:<17}{fmt(rate[0], '.1f', 10)}{fmt(rate[1], '.1f', 10)}{fmt(rate[2], '.1f', 10)}{unit:>9}"
              f"{fmt(ratio(rate[0], rate[1]), width=14)}{fmt(ratio(rate[0], rate[2]), width=14)}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="samples per measurement (median is shown)")
    args = parser.parse_args(argv)
    threads = ""
    if torch is not None:
        threads = f", torch {torch.__version__} with {torch.get_num_threads()} threads"
    print(f"npusim {npusim.__version__}, NumPy {np.__version__}{threads}; os.cpu_count()={os.cpu_count()}")
    print()
    run_tiny(args.repeats)
    run_large(args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
