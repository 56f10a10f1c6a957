"""A rank that leaves, hangs or crashes: the others must fail loudly within the timeout, never hang.

Usage: failure_check.py MODE TIMEOUT_SECONDS [DEVICE], with MODE one of
  early_exit  rank 1 exits normally before the collective,
  hang        rank 1 sleeps through it,
  crash       rank 1 dies abruptly (os._exit) before it.
Rank 0 reports how long the collective (on DEVICE's tensors, cpu by default) took to fail, and that later
calls fail at once.
"""
from __future__ import annotations

import os
import sys
import time
from datetime import timedelta

import npusim
import npusim.distributed as dist
from script_support import say, set_rank


def main():
    mode, timeout = sys.argv[1], float(sys.argv[2])
    device = sys.argv[3] if len(sys.argv) > 3 else "cpu"
    dist.init_process_group("mpi", timeout=timedelta(seconds=timeout))
    rank = dist.get_rank()
    set_rank(rank)
    dist.barrier()
    say("READY")
    if rank == 1:
        if mode == "early_exit":
            say("LEAVING")
            sys.exit(0)
        if mode == "hang":
            time.sleep(120)
        if mode == "crash":
            os._exit(3)
    start = time.monotonic()
    try:
        dist.all_reduce(npusim.ones(4, device=device))
    except dist.DistBackendError as e:
        say(f"FAILED_AFTER {time.monotonic() - start:.2f} {type(e).__name__}: {e}")
    else:
        say("UNEXPECTED the collective completed")
        return
    start = time.monotonic()
    try:
        dist.broadcast(npusim.ones(4, device=device), src=0)
    except dist.DistBackendError as e:
        say(f"THEN_FAILED_AFTER {time.monotonic() - start:.2f} {type(e).__name__}: {e}")
    raise SystemExit(1)


if __name__ == "__main__":
    main()
