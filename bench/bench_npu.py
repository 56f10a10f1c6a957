"""Speed of the npu device, in one run: tiny-op overhead, the CPU fallback's cost, large-op throughput.

    python bench/bench_npu.py [--rounds N] [--threads 1,2]

1. Tiny ops (2x2 float32: add, mul, matmul, sum, x[0]) on the npu, against torch CPU eager and
   against the same op on the npusim cpu device. Budget: npu/torch <= 3x; aim 1.5x.
2. The CPU fallback: an op the npu leaves to it (sort) on npu vs on cpu; the difference is the
   fallback's extra cost per call (two copies, the boxing, the bookkeeping).
3. Large ops on the npu: a 16M-float add and a 2048x2048 float32 matmul, against the same NumPy
   work. Budget: >= 0.9x NumPy.
4. ``out=`` on 16M float32 (add, mul, exp, sigmoid, clamp, where, reciprocal, rsqrt, add/sub with alpha, pow,
   addcmul, addcdiv, lerp) on the cpu and the npu against torch's ``out=``: the result is
   computed into ``out``'s own array, so the budget is npusim/torch <= 1.0x.
5. In-place ops on 16M float32, the updates optimizers write (lerp_, div_, add_/sub_ with alpha, addcmul_,
   addcdiv_), on the cpu and the npu against torch's: computed in ``self``'s own memory, no temporary and copy.
   Their operands keep the values finite and normal however many calls run (no subnormal slow path).

Every table is printed once per thread count of ``--threads`` (default 1 and 2); the count is set on both
sides (``npusim.set_num_threads``: the intra-op pool and BLAS; ``torch.set_num_threads``).
Timings interleave the contenders round by round and keep each one's best round, so a busy
machine slows all of them alike instead of skewing one ratio. The mode (emulation or cuda) is
printed; in cuda mode the large ops include a synchronisation.
"""
from __future__ import annotations

import argparse
import os
import sys
import timeit
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import npusim  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


def best_per_call_us(fns: dict, rounds: int, budget_s: float) -> dict:
    """Best round's time per call (microseconds) of each function, the functions interleaved round by round."""
    timers, numbers = {}, {}
    for name, fn in fns.items():
        fn()    # warm up (and fail early)
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


def ratio(a, b):
    return "n/a" if a is None or b is None else f"{a / b:.2f}"


def tiny_ops(rounds: int) -> None:
    a = np.arange(4, dtype=np.float32).reshape(2, 2)
    b = a + 1
    xn, yn = npusim.from_numpy(a.copy()).npu(), npusim.from_numpy(b.copy()).npu()
    xc, yc = npusim.from_numpy(a.copy()), npusim.from_numpy(b.copy())
    ops = {"add": lambda x, y: x + y, "mul": lambda x, y: x * y, "matmul": lambda x, y: x @ y,
           "sum": lambda x, y: x.sum(), "x[0]": lambda x, y: x[0]}
    if torch is not None:
        tx, ty = torch.from_numpy(a.copy()), torch.from_numpy(b.copy())
    print("Tiny ops on 2x2 float32, best microseconds per call (npu/torch budget 3x, aim 1.5x)")
    print(f"{'op':<8}{'npu':>8}{'cpu':>8}{'torch':>8}{'npu/torch':>11}{'npu/cpu':>9}{'npu - cpu':>11}")
    for name, op in ops.items():
        fns = {"npu": lambda op=op: op(xn, yn), "cpu": lambda op=op: op(xc, yc)}
        if torch is not None:
            fns["torch"] = lambda op=op: op(tx, ty)
        t = best_per_call_us(fns, rounds, budget_s=0.4)
        tt = t.get("torch")
        print(f"{name:<8}{t['npu']:>8.2f}{t['cpu']:>8.2f}{tt if tt is not None else float('nan'):>8.2f}"
              f"{ratio(t['npu'], tt):>11}{ratio(t['npu'], t['cpu']):>9}{t['npu'] - t['cpu']:>11.2f}")


def fallback_cost(rounds: int) -> None:
    print()
    print("The CPU fallback (sort is left to it on the npu), best microseconds per call")
    print(f"{'input':<10}{'npu':>9}{'cpu':>9}{'extra per call':>16}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for shape in ((2, 2), (256, 256)):
            a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
            xn, xc = npusim.from_numpy(a.copy()).npu(), npusim.from_numpy(a)
            t = best_per_call_us({"npu": lambda: npusim.sort(xn), "cpu": lambda: npusim.sort(xc)}, rounds,
                                 budget_s=0.4)
            label = "x".join(map(str, shape))
            print(f"{label:<10}{t['npu']:>9.2f}{t['cpu']:>9.2f}{t['npu'] - t['cpu']:>16.2f}")


def large_ops(rounds: int) -> None:
    rng = np.random.default_rng(0)
    n = 16 * 1024 * 1024
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    m1, m2 = rng.random((2048, 2048), dtype=np.float32), rng.random((2048, 2048), dtype=np.float32)
    xa, xb = npusim.from_numpy(a).npu(), npusim.from_numpy(b).npu()
    xm1, xm2 = npusim.from_numpy(m1).npu(), npusim.from_numpy(m2).npu()
    sync = npusim.npu.synchronize
    rows = [
        ("add 16M float32", lambda: (xa + xb, sync()), lambda: a + b, n * 4 * 3 / 1e9, "GB/s"),
        ("matmul 2048^2", lambda: (xm1 @ xm2, sync()), lambda: m1 @ m2, 2 * 2048 ** 3 / 1e9, "GFLOP/s"),
    ]
    print()
    print("Large ops on the npu, throughput (npu/numpy budget >= 0.9x)")
    print(f"{'op':<17}{'npu':>9}{'numpy':>9}{'unit':>9}{'npu/numpy':>11}")
    for name, ours, ref, work, unit in rows:
        t = best_per_call_us({"npu": ours, "numpy": ref}, max(3, rounds // 4), budget_s=1.0)
        rate = {k: work / (v / 1e6) for k, v in t.items()}
        print(f"{name:<17}{rate['npu']:>9.1f}{rate['numpy']:>9.1f}{unit:>9}{rate['npu'] / rate['numpy']:>11.2f}")


def out_ops(rounds: int) -> None:
    """``op(x, y, out=z)`` on 16M float32 against torch's: the result lands in ``z``, no temporary and copy."""
    rng = np.random.default_rng(0)
    n = 16 * 1024 * 1024
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    xc, yc, zc = npusim.from_numpy(a.copy()), npusim.from_numpy(b.copy()), npusim.empty(n)
    xn, yn, zn = xc.npu(), yc.npu(), zc.npu()
    sync = npusim.npu.synchronize
    ops = {"add(x, y, out=z)": lambda m, x, y, z: m.add(x, y, out=z),
           "mul(x, y, out=z)": lambda m, x, y, z: m.mul(x, y, out=z),
           "exp(x, out=z)": lambda m, x, y, z: m.exp(x, out=z),
           "sigmoid(x, out=z)": lambda m, x, y, z: m.sigmoid(x, out=z),
           "clamp(x, .2, .8, out=z)": lambda m, x, y, z: m.clamp(x, 0.2, 0.8, out=z),
           "clamp(x, min=.2, out=z)": lambda m, x, y, z: m.clamp(x, min=0.2, out=z),
           "reciprocal(x, out=z)": lambda m, x, y, z: m.reciprocal(x, out=z),
           "rsqrt(x, out=z)": lambda m, x, y, z: m.rsqrt(x, out=z),
           "add(x, y, alpha=2, out=z)": lambda m, x, y, z: m.add(x, y, alpha=2, out=z),
           "sub(x, y, alpha=2, out=z)": lambda m, x, y, z: m.sub(x, y, alpha=2, out=z),
           "pow(x, 3, out=z)": lambda m, x, y, z: m.pow(x, 3, out=z),
           "addcmul(x, x, y, out=z)": lambda m, x, y, z: m.addcmul(x, x, y, value=0.5, out=z),
           "addcdiv(x, x, y, out=z)": lambda m, x, y, z: m.addcdiv(x, x, y, value=0.5, out=z),
           "lerp(x, y, .3, out=z)": lambda m, x, y, z: m.lerp(x, y, 0.3, out=z),
           "where(x < y, x, y, out=z)": lambda m, x, y, z: m.where(x < y, x, y, out=z)}
    if torch is not None:
        tx, ty, tz = torch.from_numpy(a.copy()), torch.from_numpy(b.copy()), torch.empty(n)
    print()
    print("out= on 16M float32, best milliseconds per call (npusim/torch budget <= 1.0x)")
    print(f"{'op':<27}{'cpu':>9}{'npu':>9}{'torch':>9}{'cpu/torch':>11}{'npu/torch':>11}")
    for name, op in ops.items():
        fns = {"cpu": lambda op=op: op(npusim, xc, yc, zc), "npu": lambda op=op: (op(npusim, xn, yn, zn), sync())}
        if torch is not None:
            fns["torch"] = lambda op=op: op(torch, tx, ty, tz)
        t = {k: v / 1e3 for k, v in best_per_call_us(fns, max(3, rounds // 4), budget_s=1.0).items()}
        tt = t.get("torch")
        print(f"{name:<27}{t['cpu']:>9.2f}{t['npu']:>9.2f}{tt if tt is not None else float('nan'):>9.2f}"
              f"{ratio(t['cpu'], tt):>11}{ratio(t['npu'], tt):>11}")


def inplace_ops(rounds: int) -> None:
    """``z.op_(...)`` on 16M float32 against torch's: the optimizers' in-place updates."""
    rng = np.random.default_rng(1)
    n = 16 * 1024 * 1024
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32) + 1
    sides = {"cpu": [npusim.from_numpy(x.copy()) for x in (a, b, np.ones(n, np.float32))]}
    sides["npu"] = [t.npu() for t in sides["cpu"]]
    if torch is not None:
        sides["torch"] = [torch.from_numpy(x.copy()) for x in (a, b, np.ones(n, np.float32))]
    sync = npusim.npu.synchronize
    ops = {"z.lerp_(y, .1)": lambda z, y, one: z.lerp_(y, 0.1),
           "z.div_(one)": lambda z, y, one: z.div_(one),
           "z.div_(1.0)": lambda z, y, one: z.div_(1.0),
           "z.add_(y, alpha=-.5)": lambda z, y, one: z.add_(y, alpha=-0.5),
           "z.sub_(y, alpha=.5)": lambda z, y, one: z.sub_(y, alpha=0.5),
           "z.addcmul_(y, y, value=.5)": lambda z, y, one: z.addcmul_(y, y, value=0.5),
           "z.addcdiv_(y, y, value=.5)": lambda z, y, one: z.addcdiv_(y, y, value=0.5)}
    print()
    print("in-place on 16M float32, best milliseconds per call (npusim/torch budget <= 1.0x)")
    print(f"{'op':<27}{'cpu':>9}{'npu':>9}{'torch':>9}{'cpu/torch':>11}{'npu/torch':>11}")
    for name, op in ops.items():
        fns = {"cpu": lambda op=op: op(*sides["cpu"]), "npu": lambda op=op: (op(*sides["npu"]), sync())}
        if torch is not None:
            fns["torch"] = lambda op=op: op(*sides["torch"])
        t = {k: v / 1e3 for k, v in best_per_call_us(fns, max(3, rounds // 4), budget_s=1.0).items()}
        tt = t.get("torch")
        print(f"{name:<27}{t['cpu']:>9.2f}{t['npu']:>9.2f}{tt if tt is not None else float('nan'):>9.2f}"
              f"{ratio(t['cpu'], tt):>11}{ratio(t['npu'], tt):>11}")


def set_threads(n: int) -> None:
    npusim.set_num_threads(n)   # the intra-op pool and BLAS (threadpoolctl)
    if torch is not None:
        torch.set_num_threads(n)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20, help="interleaved rounds per measurement (best is kept)")
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts, each run in turn")
    args = parser.parse_args(argv)
    torch_version = f", torch {torch.__version__}" if torch is not None else ""
    print(f"npusim {npusim.__version__} (npu mode: {npusim.npu.runtime_mode()}), NumPy {np.__version__}"
          f"{torch_version}; os.cpu_count()={os.cpu_count()}")
    for n in (int(t) for t in args.threads.split(",")):
        set_threads(n)
        print()
        print(f"=== {n} thread{'s' if n > 1 else ''} (npusim and torch) ===")
        print()
        tiny_ops(args.rounds)
        fallback_cost(args.rounds)
        large_ops(args.rounds)
        out_ops(args.rounds)
        inplace_ops(args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
