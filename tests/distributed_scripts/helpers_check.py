"""init_process_group's stores and URLs, object p2p, the coalesced collectives, subgroups, split_group, the debug
level, breakpoint, the ProcessGroup methods and DeviceMesh across ranks; run on each rank under mpiexec. Prints
one ``[rank] PASS|FAIL device check`` line per check.

Usage: helpers_check.py WORKDIR (a directory every rank sees, for the FileStore files)
"""
from __future__ import annotations

import logging
import os
import sys
import warnings
from datetime import timedelta

import numpy as np

import npusim
import npusim.distributed as dist
from npusim.distributed import debugger
from script_support import done, expect_error, report, set_rank

TIMEOUT = timedelta(seconds=60)


def host(t):
    return t.detach().cpu().numpy()


def obj_of(rank):
    return {"rank": rank, "payload": list(range(rank * 50 + 3)), "text": "x" * (1000 * rank)}


def mpi_rank_and_size():
    return int(os.environ["PMI_RANK"]), int(os.environ["PMI_SIZE"])


# --- init_process_group with a store ------------------------------------------------------------------------------
def shared_store_works(rank, n, tag):
    """Every rank writes into the group's store and reads what the others wrote."""
    store = dist.group.WORLD.get_group_store()
    store.set(f"{tag}/{rank}", f"hello from {rank}")
    dist.barrier()
    for r in range(n):
        assert store.get(f"{tag}/{r}") == f"hello from {r}".encode()
    assert store.add(f"{tag}/count", 1) <= n
    dist.barrier()
    assert store.get(f"{tag}/count") == str(n).encode()


def init_with_url(rank, n, url, tag):
    dist.init_process_group("mpi", init_method=url, timeout=TIMEOUT)
    try:
        assert dist.get_rank() == rank and dist.get_world_size() == n
        shared_store_works(rank, n, tag)
        t = npusim.ones(3)
        dist.all_reduce(t)                   # MPI still moves the data
        assert host(t).tolist() == [n] * 3
    finally:
        dist.destroy_process_group()


def init_with_store(rank, n, workdir):
    store = dist.FileStore(os.path.join(workdir, "user_store"), n)
    store.set_timeout(timedelta(seconds=20))        # a missing key fails the check instead of waiting 5 minutes
    dist.init_process_group("mpi", store=store, rank=rank, world_size=n, timeout=TIMEOUT)
    try:
        assert dist.group.WORLD.get_group_store() is store      # a given store is the group's, as it is
        shared_store_works(rank, n, "given")
        sub = dist.new_group([0])
        if rank == 0:                        # a subgroup's keys live under its name
            sub.get_group_store().set("k", "v")
            assert store.get(f"{sub.group_name}/k") == b"v"
    finally:
        dist.destroy_process_group()


def init_with_unshared_store(rank, n):
    expect_error(dist.DistError, r"the store is not shared by every rank: ranks? 1(, \d+)* cannot read what rank 0 "
                                 r"wrote",
                 dist.init_process_group, "mpi", store=dist.HashStore(), rank=rank, world_size=n, timeout=TIMEOUT)
    assert not dist.is_initialized()


def init_with_wrong_rank_in_url(rank, n):
    expect_error(ValueError, f"says rank=7, but MPI gave this process rank {rank}", dist.init_process_group,
                 "mpi", init_method="tcp://127.0.0.1:0?rank=7", timeout=TIMEOUT)
    assert not dist.is_initialized()


def init_checks(workdir):
    rank, n = mpi_rank_and_size()
    set_rank(rank)
    report("cpu", "init_tcp_url", init_with_url, rank, n, "tcp://127.0.0.1:0", "tcp")
    report("cpu", "init_file_url", init_with_url, rank, n, "file://" + os.path.join(workdir, "url_store"), "file")
    report("cpu", "init_given_store", init_with_store, rank, n, workdir)
    report("cpu", "init_unshared_store", init_with_unshared_store, rank, n)
    report("cpu", "init_wrong_rank_in_url", init_with_wrong_rank_in_url, rank, n)


# --- after init (the MPI rendezvous) -------------------------------------------------------------------------------
def object_p2p(device, rank, n):
    if rank == 0:
        dist.send_object_list([obj_of(0), ("tuple", 1), None], dst=1, device=device)
        dist.send_object_list(["batched", obj_of(0)], group_dst=1, use_batch=True)
        got = [None]
        assert dist.recv_object_list(got, src=1, device=device) == 1
        assert got == [obj_of(1)], got
    elif rank == 1:
        got = [None, None, None]
        assert dist.recv_object_list(got, src=0, device=device) == 0
        assert got == [obj_of(0), ("tuple", 1), None], got
        got = [None, None]
        assert dist.recv_object_list(got, group_src=0, use_batch=True) == 0
        assert got == ["batched", obj_of(0)], got
        dist.send_object_list([obj_of(1)], dst=0, device=device)
    expect_error(ValueError, "Invalid destination rank", dist.send_object_list, [1], dst=rank)
    expect_error(ValueError, "Invalid source rank", dist.recv_object_list, [1], src=rank)


def coalesced(device, rank, n):
    a = npusim.tensor(np.arange(6, dtype=np.float32).reshape(2, 3) + rank, device=device)
    b = npusim.tensor(np.full(4, rank + 1, np.float32), device=device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert dist.all_reduce_coalesced([a, b]) is None
    assert any(issubclass(w.category, FutureWarning) and "all_reduce_coalesced" in str(w.message) for w in caught)
    total = sum(range(n))
    np.testing.assert_allclose(host(a), np.arange(6).reshape(2, 3) * n + total)
    np.testing.assert_allclose(host(b), np.full(4, total + n))
    f = npusim.tensor(np.array([rank], np.float32), device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        if hasattr(npusim, "complex64"):        # complex tensors travel as pairs of reals
            c = npusim.tensor(np.array([1 + 2j, rank * 1j], np.complex64), device=device)
            dist.all_reduce_coalesced([c, f], op=dist.ReduceOp.AVG, async_op=True).wait()
            np.testing.assert_allclose(host(c), [1 + 2j, total / n * 1j])
            expect_error(ValueError, "all_reduce does not support .*MAX.* on complex tensors",
                         dist.all_reduce_coalesced, [c], op=dist.ReduceOp.MAX)
        else:
            dist.all_reduce_coalesced([f], op=dist.ReduceOp.AVG, async_op=True).wait()
        np.testing.assert_allclose(host(f), [total / n])
        ints = npusim.tensor(np.array([rank + 1, 4], np.int64), device=device)
        dist.all_reduce_coalesced(ints, op=dist.ReduceOp.MAX)
        assert host(ints).tolist() == [n, 4]
        inputs = [npusim.tensor(np.full((2, 2), rank, np.float32), device=device),
                  npusim.tensor(np.array([rank * 10.0], np.float32), device=device)]
        outputs = [[npusim.zeros(2, 2, device=device), npusim.zeros(1, device=device)] for _ in range(n)]
        assert dist.all_gather_coalesced(outputs, inputs) is None
        for r in range(n):
            np.testing.assert_array_equal(host(outputs[r][0]), np.full((2, 2), r))
            np.testing.assert_array_equal(host(outputs[r][1]), [r * 10.0])
        expect_error(RuntimeError, "output lists should be equal to world size", dist.all_gather_coalesced,
                     outputs[:1], inputs)
        # the group is still usable after an argument error seen on every rank
        dist.all_gather_coalesced(outputs, inputs, async_op=True).wait()


def single(device, rank, n):
    """all_gather_single and reduce_scatter_single: torch 2.13's names of the one-tensor collectives."""
    out = npusim.zeros(n, 2, device=device)
    assert dist.all_gather_single(out, npusim.tensor([rank, rank + 0.5], device=device)) is None
    np.testing.assert_array_equal(host(out), [[r, r + 0.5] for r in range(n)])
    mine = npusim.zeros(2, device=device)
    work = dist.reduce_scatter_single(mine, npusim.arange(2 * n, dtype=npusim.float32, device=device),
                                      op=dist.ReduceOp.SUM, async_op=True)
    work.wait()
    np.testing.assert_array_equal(host(mine), [2 * rank * n, (2 * rank + 1) * n])
    expect_error(RuntimeError, r"reduce_scatter_single: input tensor size must be equal to world_size",
                 dist.reduce_scatter_single, mine, npusim.ones(3, device=device))


def subgroups(device, rank, n):
    before = dist.get_pg_count()
    mine, everyone = dist.new_subgroups(1)
    assert len(everyone) == n and dist.get_process_group_ranks(mine) == [rank]
    assert dist.get_pg_count() == before + n
    mine, everyone = dist.new_subgroups(group_size=n)
    assert len(everyone) == 1 and mine is everyone[0] and dist.get_world_size(mine) == n
    mine, everyone = dist.new_subgroups_by_enumeration([[r] for r in reversed(range(n))])
    assert dist.get_process_group_ranks(mine) == [rank] and everyone[n - 1 - rank] is mine
    t = npusim.tensor([float(rank + 1)], device=device)
    dist.all_reduce(t, group=mine)
    assert host(t).tolist() == [rank + 1]
    expect_error(ValueError, rf"The arg 'group_size' \({n + 1}\) must not exceed the world size \({n}\)",
                 dist.new_subgroups, n + 1)
    expect_error(ValueError, r"The arg 'group_size' \(0\) must be positive", dist.new_subgroups, 0)
    # split_group: one collective over the parent only
    halves = dist.split_group(split_ranks=[[0], list(range(1, n))])
    assert dist.get_process_group_ranks(halves) == ([0] if rank == 0 else list(range(1, n)))
    t = npusim.tensor([1.0], device=device)
    dist.all_reduce(t, group=halves)
    assert host(t).tolist() == [1.0 if rank == 0 else n - 1.0]
    only_last = dist.split_group(split_ranks=[[n - 1]])
    assert (only_last is None) == (rank != n - 1)
    whole = dist.split_group(split_ranks=[list(range(n))], group_desc="whole")
    assert whole.group_name == "whole" and dist.get_backend_config(whole) == dist.get_backend_config()
    # split of a subgroup: only its ranks take part (rank 0 is not a member of `rest`)
    if rank != 0:
        inner = dist.split_group(parent_pg=halves, split_ranks=[[0]])
        assert (inner is None) == (rank != 1)
        if inner is not None:
            assert dist.get_process_group_ranks(inner) == [1]


def debug_detail(device, rank, n):
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    logger = logging.getLogger("npusim.distributed")
    handler, old_level = Keep(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        dist.set_debug_level(dist.DebugLevel.OFF)     # whatever TORCH_DISTRIBUTED_DEBUG says
        dist.all_reduce(npusim.ones(3, device=device))
        assert not records
        dist.set_debug_level(dist.DebugLevel.DETAIL)
        dist.all_reduce(npusim.ones(3, device=device))
        assert any(f"all_reduce on rank {rank} of group 0" in r and f"all_reduce(SUM, {device} float32[3])" in r
                   for r in records), records
    finally:
        dist.set_debug_level(dist.DebugLevel.OFF)
        logger.removeHandler(handler)
        logger.setLevel(old_level)


def breakpoint_(device, rank, n):
    stops = []

    class FakePdb:
        def message(self, text):
            stops.append(text)

        def set_trace(self):
            stops.append("set_trace")

    real = debugger._make_distributed_pdb
    debugger._make_distributed_pdb = FakePdb
    try:
        dist.breakpoint(rank=n - 1, timeout_s=60)
        assert (stops[-1:] == ["set_trace"]) == (rank == n - 1), stops
        assert "Type 'up' to get to the frame that called dist.breakpoint(rank=%d)" % (n - 1) in "".join(stops) \
            or rank != n - 1
        stops.clear()
        for _ in range(2):
            dist.breakpoint(rank=0, skip=1)     # the first call passes without a barrier on every rank
        assert stops.count("set_trace") == (1 if rank == 0 else 0), stops
    finally:
        debugger._make_distributed_pdb = real


def process_group_methods(device, rank, n):
    pg = dist.group.WORLD
    t = npusim.tensor([rank + 1.0, 2.0], device=device)
    opts = dist.AllreduceOptions()
    opts.reduceOp = dist.ReduceOp.MAX
    work = pg.allreduce([t], opts)
    assert work.wait()
    assert host(t).tolist() == [float(n), 2.0]
    pg.allreduce(t, dist.ReduceOp.SUM).wait()
    assert host(t).tolist() == [float(n * n), 2.0 * n]
    b = npusim.tensor([float(rank)], device=device)
    bopts = dist.BroadcastOptions()
    bopts.rootRank = n - 1
    pg.broadcast([b], bopts).wait()
    assert host(b).tolist() == [n - 1.0]
    outs = [[npusim.zeros(1, device=device) for _ in range(n)]]
    pg.allgather(outs, [npusim.tensor([rank * 2.0], device=device)]).wait()
    assert [host(o).tolist() for o in outs[0]] == [[r * 2.0] for r in range(n)]
    c = [npusim.ones(2, device=device), npusim.ones(1, device=device)]
    pg.allreduce_coalesced(c, dist.AllreduceCoalescedOptions()).wait()
    assert host(c[0]).tolist() == [n, n] and host(c[1]).tolist() == [n]
    r = npusim.tensor([1.0], device=device)
    ropts = dist.ReduceOptions()
    ropts.rootRank = 0
    pg.reduce([r], ropts).wait()
    assert host(r).tolist() == ([float(n)] if rank == 0 else [1.0])
    pg.barrier(dist.BarrierOptions()).wait()
    assert pg.get_group_store is not None


def device_mesh(device, rank, n):
    from npusim.distributed.device_mesh import DeviceMesh, init_device_mesh
    mesh = init_device_mesh(device, (n,), mesh_dim_names=("dp",))
    assert isinstance(mesh, DeviceMesh) and mesh.size() == n and mesh.ndim == 1
    assert mesh.get_local_rank() == rank and mesh.get_local_rank("dp") == rank and mesh.mesh_dim_names == ("dp",)
    assert dist.get_process_group_ranks(mesh.get_group()) == list(range(n))
    assert mesh["dp"].mesh.tolist() == list(range(n))
    if n % 2 == 0:
        mesh2 = init_device_mesh(device, (2, n // 2), mesh_dim_names=("dp", "tp"))
        assert mesh2.shape == (2, n // 2) and mesh2.size() == n and mesh2.size(1) == n // 2
        coordinate = (rank // (n // 2), rank % (n // 2))
        assert mesh2.get_coordinate() == coordinate
        tp, dp = mesh2["tp"], mesh2["dp"]
        assert dist.get_process_group_ranks(tp.get_group()) == [coordinate[0] * (n // 2) + i for i in range(n // 2)]
        assert dist.get_process_group_ranks(mesh2.get_group("dp")) == [coordinate[1] + i * (n // 2) for i in range(2)]
        assert dp.get_local_rank() == coordinate[0] and mesh2.get_local_rank(1) == coordinate[1]
        t = npusim.tensor([float(rank)], device=device)
        dist.all_reduce(t, group=mesh2.get_group("dp"))
        assert host(t).tolist() == [float(coordinate[1] * 2 + n // 2)]
        assert len(mesh2.get_all_groups()) == 2
        expect_error(KeyError, "Invalid mesh_dim_names", mesh2.__getitem__, "pp")
        assert repr(mesh2).startswith("DeviceMesh((dp=2, tp=%d), '%s'" % (n // 2, device))


def queries(rank):
    assert dist.get_backend_config() == "cpu:mpi,npu:mpi", dist.get_backend_config()
    first = dist.new_group([0])
    if rank == 0:
        assert dist.get_backend_config(first) == "cpu:mpi,npu:mpi"
    else:
        expect_error(ValueError, "Invalid process group specified", dist.get_backend_config, first)
    expect_error(RuntimeError, "this process group has no key-value store", dist.group.WORLD.get_group_store)


def after_init_checks():
    dist.init_process_group(backend="mpi", timeout=TIMEOUT)
    rank, n = dist.get_rank(), dist.get_world_size()
    assert dist.get_pg_count() == 1
    report("cpu", "queries", queries, rank)
    for device in ("cpu", "npu"):
        report(device, "object_p2p", object_p2p, device, rank, n)
        report(device, "coalesced", coalesced, device, rank, n)
        report(device, "single", single, device, rank, n)
        report(device, "subgroups", subgroups, device, rank, n)
        report(device, "debug_detail", debug_detail, device, rank, n)
        report(device, "process_group_methods", process_group_methods, device, rank, n)
        report(device, "device_mesh", device_mesh, device, rank, n)
    report("cpu", "breakpoint", breakpoint_, "cpu", rank, n)
    dist.barrier()
    dist.destroy_process_group()
    assert dist.get_pg_count() == 0


def main():
    workdir = sys.argv[1]
    init_checks(workdir)
    after_init_checks()
    done()


if __name__ == "__main__":
    main()
