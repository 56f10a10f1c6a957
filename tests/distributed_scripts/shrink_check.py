"""shrink_group across 3 ranks: the last rank leaves, the other two shrink the default group, then a subgroup;
run on each rank under mpiexec. Prints one ``[rank] PASS|FAIL device check`` line per check.

Usage: shrink_check.py DEVICE
"""
from __future__ import annotations

import sys
from datetime import timedelta

import npusim
import npusim.distributed as dist
from script_support import done, expect_error, report, say, set_rank


def host(t):
    return t.detach().cpu().numpy()


def bad_arguments(rank):
    expect_error(TypeError, "ranks_to_exclude must be a list", dist.shrink_group, 2)
    expect_error(ValueError, "ranks_to_exclude cannot be empty", dist.shrink_group, [])
    expect_error(ValueError, "Invalid shrink_flags value: 7", dist.shrink_group, [2], shrink_flags=7)
    expect_error(ValueError, "Rank 5 at index 0 is out of bounds for group size 3", dist.shrink_group, [5])
    expect_error(ValueError, "Duplicate rank 2 found in ranks_to_exclude at index 1", dist.shrink_group, [2, 2])
    expect_error(ValueError, "Cannot exclude all 3 ranks", dist.shrink_group, [0, 1, 2])
    expect_error(RuntimeError, f"Current rank {rank} is in the exclusion list", dist.shrink_group, [rank])


def shrink_default(rank, device, sub):
    new = dist.shrink_group([2])
    assert dist.group.WORLD is new and dist.get_world_size() == 2 and dist.get_rank() == rank
    assert dist.get_process_group_ranks(new) == [0, 1]
    assert sub._destroyed, "shrinking the default group drops the other groups"
    t = npusim.full((4,), float(rank + 1), device=device)
    dist.all_reduce(t)
    assert host(t).tolist() == [3.0] * 4
    both = dist.new_group([0, 1])
    pair = dist.shrink_group([1], group=both) if rank == 0 else None     # a subgroup: rank 1 stays out
    if rank == 0:
        assert pair.size() == 1 and dist.get_process_group_ranks(pair) == [0] and both._destroyed
        assert dist.group.WORLD is new and not new._destroyed
        u = npusim.ones(2, device=device)
        dist.all_reduce(u, group=pair)
        assert host(u).tolist() == [1.0, 1.0]
        expect_error(ValueError, "Cannot shrink a process group with size 1", dist.shrink_group, [0], group=pair)
    dist.barrier()


def main():
    device = sys.argv[1]
    dist.init_process_group("mpi", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    set_rank(rank)
    if device == "npu":
        npusim.npu.set_device(rank % npusim.npu.device_count())
    sub = dist.new_group([0, 1])          # every rank takes part in making it
    if rank < 2:
        report(device, "bad_arguments", bad_arguments, rank)
    if rank == 2:
        say("LEFT")        # the excluded rank stops taking part; it ends without destroying anything
        done()
        return
    report(device, "shrink_default", shrink_default, rank, device, sub)
    dist.destroy_process_group()
    done()


if __name__ == "__main__":
    main()
