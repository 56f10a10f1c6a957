"""One training step of an MLP (forward, cross-entropy loss, backward, Adam step), npusim vs torch CPU.

    python bench/bench_training.py [--threads N] [--rounds N] [--steps N] [--batch N]

The model is 784-1024-1024-10 with ReLU, batch 256, float32, Adam (lr 1e-3):
the same weights and data on torch's CPU, npusim's cpu and npusim's npu (the
emulated device on a machine without a GPU). torch and npusim are limited to
the same thread count (intra-op threads and BLAS). Rounds are interleaved (each
runs ``--steps`` steps of every side), so a busy neighbour on the machine slows
all sides alike; the table shows the median per-step time over the rounds, as
wall time and as this process's CPU time, and the ratio of each npusim side to
torch with its range over the rounds (budget <= 1.5x, aim <= 1.0x; lower is
better). The whole run takes about a minute with the defaults.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

# BLAS reads its thread count when it loads: fix it before NumPy or torch is imported
_pre = argparse.ArgumentParser(add_help=False)
_pre.add_argument("--threads", type=int, default=1)
_THREADS = _pre.parse_known_args()[0].threads
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = str(_THREADS)

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import npusim  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

SIZES = (784, 1024, 1024, 10)


def make_data(batch: int):
    """Weights, biases, inputs and labels as NumPy arrays (torch's Linear initialisation ranges)."""
    rng = np.random.default_rng(0)
    params = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        bound = 1.0 / np.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32))
        params.append(rng.uniform(-bound, bound, fan_out).astype(np.float32))
    x = rng.standard_normal((batch, SIZES[0]), dtype=np.float32)
    y = rng.integers(0, SIZES[-1], batch)
    return params, x, y


def build_step(lib, params, x, y, device=None):
    """A closure running one training step of ``lib`` (torch or npusim) on ``device``."""
    nn = lib.nn
    layers = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        layers += [nn.Linear(fan_in, fan_out), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    with lib.no_grad():
        linears = [m for m in model if isinstance(m, nn.Linear)]
        for i, m in enumerate(linears):
            m.weight.copy_(lib.from_numpy(params[2 * i]))
            m.bias.copy_(lib.from_numpy(params[2 * i + 1]))
    xs, ys = lib.from_numpy(x), lib.from_numpy(y)
    if device is not None:
        model = model.to(device)
        xs, ys = xs.to(device), ys.to(device)
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.functional.cross_entropy
    sync = (lambda: npusim.npu.synchronize()) if device == "npu" else (lambda: None)

    def step():
        opt.zero_grad()
        loss = loss_fn(model(xs), ys)
        loss.backward()
        opt.step()
        sync()
        return loss

    return step


def run(args) -> int:
    params, x, y = make_data(args.batch)
    npusim.set_num_threads(args.threads)
    sides = {"npusim cpu": build_step(npusim, params, x, y), "npusim npu": build_step(npusim, params, x, y, "npu")}
    if torch is not None:
        torch.set_num_threads(args.threads)
        sides = {"torch cpu": build_step(torch, params, x, y), **sides}
    losses = {name: float(step().item()) for name, step in sides.items()}   # warm-up step, and a sanity check
    wall = {name: [] for name in sides}
    cpu = {name: [] for name in sides}
    for _ in range(args.rounds):
        for name, step in sides.items():
            w0, c0 = time.perf_counter(), time.process_time()
            for _ in range(args.steps):
                step()
            wall[name].append((time.perf_counter() - w0) / args.steps * 1e3)
            cpu[name].append((time.process_time() - c0) / args.steps * 1e3)

    print(f"npusim {npusim.__version__}, NumPy {np.__version__}"
          + (f", torch {torch.__version__}" if torch is not None else ", torch not importable")
          + f"; {args.threads} thread(s); os.cpu_count()={os.cpu_count()}")
    print(f"MLP {'-'.join(map(str, SIZES))}, batch {args.batch}, Adam; {args.rounds} rounds of {args.steps} steps")
    print("first-step losses: " + ", ".join(f"{k} {v:.5f}" for k, v in losses.items()))
    print()
    print(f"{'side':<12}{'wall ms':>9}{'cpu ms':>9}   {'wall / torch (range)':<24}cpu / torch (range)")
    for name in sides:
        row = f"{name:<12}{statistics.median(wall[name]):9.2f}{statistics.median(cpu[name]):9.2f}   "
        if torch is not None and name != "torch cpu":
            for series in (wall, cpu):
                ratios = sorted(a / b for a, b in zip(series[name], series["torch cpu"]))
                row += f"{statistics.median(ratios):5.2f} ({ratios[0]:.2f}-{ratios[-1]:.2f})".ljust(24)
        print(row.rstrip())
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="intra-op and BLAS threads for every side")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (the median is shown)")
    parser.add_argument("--steps", type=int, default=5, help="training steps per side and round")
    parser.add_argument("--batch", type=int, default=256)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
