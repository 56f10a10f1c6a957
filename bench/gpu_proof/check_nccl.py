"""npusim.distributed over NCCL with one rank: init, all_reduce (sum, max, async), broadcast, barrier, destroy.

A group of one process needs no MPI launcher. Skipped, with the reason, where CuPy
has no NCCL or where the process group cannot load MPI.
"""
from __future__ import annotations

import numpy as np

from .cuda_mode import load_npusim
from .results import PASS, Result, Skip, expect

MPI_WORDS = ("mpi4py", "libmpi", "MPI library", "mpich")


def _why_nccl_cannot_load() -> str:
    try:
        from cupy.cuda import nccl
    except Exception as e:
        return f"cupy.cuda.nccl cannot be imported ({type(e).__name__}: {e})"
    if not getattr(nccl, "available", False):
        return "CuPy was built without NCCL (cupy.cuda.nccl.available is False)"
    return ""


def _init_group(dist) -> None:
    try:
        dist.init_process_group("nccl", world_size=1, rank=0)
    except Exception as e:
        if any(w.lower() in str(e).lower() for w in MPI_WORDS):
            raise Skip(f"the process group cannot load MPI: {type(e).__name__}: {e}") from e
        raise


def run(ctx) -> Result:
    npusim = load_npusim()
    import npusim.distributed as dist
    why = _why_nccl_cannot_load()
    if why or not dist.is_nccl_available():
        raise Skip(why or "npusim.distributed.is_nccl_available() is False")
    _init_group(dist)
    steps = {}
    try:
        expect(dist.get_backend() == "nccl", f"the group's backend is {dist.get_backend()!r}")
        values = np.arange(1000, dtype=np.float32)
        t = npusim.from_numpy(values.copy()).to("npu")
        dist.all_reduce(t)
        steps["all_reduce sum"] = bool(np.array_equal(t.cpu().numpy(), values))
        work = dist.all_reduce(t, op=dist.ReduceOp.MAX, async_op=True)
        work.wait()
        steps["all_reduce max async"] = bool(work.is_completed() and np.array_equal(t.cpu().numpy(), values))
        h = npusim.full((64,), 2.5, dtype=npusim.float16, device="npu")
        dist.all_reduce(h)
        steps["all_reduce float16"] = bool((h == 2.5).all().item())
        dist.broadcast(t, src=0)
        steps["broadcast"] = bool(np.array_equal(t.cpu().numpy(), values))
        dist.barrier()
        steps["barrier"] = True
    finally:
        dist.destroy_process_group()
    failed = [k for k, ok in steps.items() if not ok]
    expect(not failed, f"wrong results: {', '.join(failed)}", {"steps": steps})
    return Result("nccl_single_rank", PASS, figure=f"{len(steps)} collectives", note="world size 1",
                  details={"steps": steps})
