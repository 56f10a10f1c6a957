"""All-reduce throughput against raw mpi4py, and the DDP step time against one process, in one run.

    python bench/bench_distributed.py [--ranks 2] [--repeats 10] [--mib 64]

Started without an MPI launcher, the script starts itself through ``python -m npusim.distributed.run``
(which gives each rank one BLAS/OpenMP thread unless OMP_NUM_THREADS is set).
Rank 0 prints:
- the median time of an all_reduce (SUM) of a float32 buffer of ``--mib`` MiB: raw mpi4py ``Allreduce`` on
  NumPy arrays (out of place, and in place), and ``npusim.distributed.all_reduce`` of a cpu and of an npu
  tensor; "vs mpi4py" is the raw out-of-place time over ours (higher is better; the budget is >= 0.9);
- the time of one training step (forward, backward, SGD step) of an MLP: plain in one process, and under
  DistributedDataParallel on every rank (each with the same per-rank batch); "vs single" is DDP's time over
  the single process's (lower is better; the gap is the gradient all-reduce).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from datetime import timedelta

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import npusim  # noqa: E402
import npusim.distributed as dist  # noqa: E402
from npusim.distributed.rendezvous import launcher_env  # noqa: E402
from npusim.nn.parallel import DistributedDataParallel  # noqa: E402


def median_times(fns: dict, repeats: int, comm) -> dict:
    """Median seconds of each ``fn()``, all ranks starting each run together (rank 0's clock). The functions
    take turns, so drift in the machine's speed affects them alike."""
    samples = {name: [] for name in fns}
    for fn in fns.values():
        fn()
    for _ in range(repeats):
        for name, fn in fns.items():
            comm.Barrier()
            start = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(v) for name, v in samples.items()}


def bench_all_reduce(comm, mib: int, repeats: int) -> dict:
    from mpi4py import MPI
    n = mib * 1024 * 1024 // 4
    source = np.random.default_rng(comm.Get_rank()).random(n, dtype=np.float32) * 1e-3
    out = np.empty_like(source)
    inplace = source.copy()
    cpu = npusim.from_numpy(source.copy())
    npu = cpu.to("npu")
    return median_times({
        "mpi4py Allreduce (out of place)": lambda: comm.Allreduce(source, out, MPI.SUM),
        "mpi4py Allreduce (in place)": lambda: comm.Allreduce(MPI.IN_PLACE, inplace, MPI.SUM),
        "npusim all_reduce, cpu tensor": lambda: dist.all_reduce(cpu),
        "npusim all_reduce, npu tensor": lambda: dist.all_reduce(npu),
    }, repeats, comm)


def mlp(device):
    npusim.manual_seed(0)
    nn = npusim.nn
    return nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                         nn.Linear(1024, 10)).to(device)


def training_step(model, device):
    opt = npusim.optim.SGD(model.parameters(), lr=0.01)
    x = npusim.randn(64, 256, device=device)
    y = npusim.randint(0, 10, (64,), device=device)

    def step():
        opt.zero_grad()
        npusim.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return step


def bench_ddp(comm, repeats: int, device) -> tuple:
    times = median_times({"single": training_step(mlp(device), device),
                          "ddp": training_step(DistributedDataParallel(mlp(device)), device)}, repeats, comm)
    return times["single"], times["ddp"]


def run_ranks(args) -> None:
    dist.init_process_group("mpi", timeout=timedelta(minutes=5))
    comm = dist.group.WORLD._store.comm
    rank, size = dist.get_rank(), dist.get_world_size()
    reduce_times = bench_all_reduce(comm, args.mib, args.repeats)
    ddp_times = {device: bench_ddp(comm, args.repeats, device) for device in ("cpu", "npu")}
    if rank == 0:
        raw = reduce_times["mpi4py Allreduce (out of place)"]
        print(f"all_reduce of {args.mib} MiB float32 over {size} ranks (median of {args.repeats})")
        print(f"{'':34s} {'ms':>8s} {'GB/s':>7s} {'vs mpi4py':>10s}")
        for name, seconds in reduce_times.items():
            print(f"{name:34s} {seconds * 1e3:8.1f} {args.mib / 1024 / seconds:7.2f} {raw / seconds:10.2f}x")
        print(f"\nMLP training step (256-1024-1024-10, batch 64 per rank), median of {args.repeats}")
        print(f"{'':10s} {'single ms':>10s} {'DDP ms':>8s} {'vs single':>10s}")
        for device, (single, ddp) in ddp_times.items():
            print(f"{device:10s} {single * 1e3:10.1f} {ddp * 1e3:8.1f} {ddp / single:9.2f}x")
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--mib", type=int, default=64)
    args = parser.parse_args()
    if launcher_env() is None:     # start the ranks as users do, through the launcher
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
        cmd = [sys.executable, "-m", "npusim.distributed.run", "--nproc-per-node", str(args.ranks),
               os.path.abspath(__file__), *sys.argv[1:]]
        raise SystemExit(subprocess.call(cmd, env=env))
    run_ranks(args)


if __name__ == "__main__":
    main()
