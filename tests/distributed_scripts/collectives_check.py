"""Every collective, on cpu and npu tensors, against a NumPy reference; run on each rank under mpiexec.

Each rank makes its data from its rank number, so any rank can compute what every
collective must give. Prints one ``[rank] PASS|FAIL device check`` line per check.
"""
from __future__ import annotations

import os
import sys
import warnings
from datetime import timedelta

mpi_loaded_at_import = "mpi4py" in sys.modules

import numpy as np  # noqa: E402

import npusim  # noqa: E402
import npusim.distributed as dist  # noqa: E402
from npusim.distributed.rendezvous import launcher_env  # noqa: E402
from script_support import done, expect_error, report, say, set_rank  # noqa: E402

mpi_loaded_by_import = "mpi4py.MPI" in sys.modules and not mpi_loaded_at_import
ReduceOp = dist.ReduceOp
DTYPES = {"float32": npusim.float32, "float64": npusim.float64, "float16": npusim.float16,
          "bfloat16": npusim.bfloat16, "int64": npusim.int64, "int32": npusim.int32, "uint8": npusim.uint8,
          "bool": npusim.bool}


def data(rank, shape, dtype="float32"):
    """Rank ``rank``'s values (NumPy), the same on every rank that asks."""
    rng = np.random.default_rng(1000 + rank)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in ("int64", "int32", "uint8"):
        return rng.integers(1, 7, shape).astype(dtype)
    values = rng.uniform(0.5, 2.0, shape).astype(np.float32)
    return values.astype(np.float64) if dtype == "float64" else values


def tensor(values, device, dtype="float32"):
    return npusim.tensor(values, dtype=DTYPES[dtype], device=device)


def host(t):
    t = t.detach().cpu()
    return (t.float() if t.dtype is npusim.bfloat16 else t).numpy()


def close(actual, expected, dtype="float32"):
    tol = {"float16": 2e-3, "bfloat16": 2e-2}.get(dtype, 1e-6)
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64),
                               rtol=tol, atol=tol)


def rounded(values, dtype):
    """``values`` as the tensor of ``dtype`` would hold them (for float16/bfloat16 inputs)."""
    return host(npusim.tensor(values, dtype=DTYPES[dtype]))


# --- the checks ----------------------------------------------------------------------------------------------
def all_reduce_ops(device, rank, n):
    everyone = np.stack([data(r, (3, 4)) for r in range(n)])
    expected = {ReduceOp.SUM: everyone.sum(0), ReduceOp.AVG: everyone.mean(0),
                ReduceOp.PRODUCT: everyone.prod(0), ReduceOp.MIN: everyone.min(0), ReduceOp.MAX: everyone.max(0)}
    for op, want in expected.items():
        t = tensor(data(rank, (3, 4)), device)
        assert dist.all_reduce(t, op=op) is None
        close(host(t), want)


def all_reduce_dtypes(device, rank, n):
    for dtype in ("float64", "float16", "bfloat16"):
        everyone = np.stack([rounded(data(r, (5,)), dtype) for r in range(n)])
        t = tensor(data(rank, (5,)), device, dtype)
        dist.all_reduce(t)
        close(host(t), everyone.sum(0), dtype)
        assert t.dtype is DTYPES[dtype]
    ints = np.stack([data(r, (6,), "int64") for r in range(n)])
    for op, want in ((ReduceOp.SUM, ints.sum(0)), (ReduceOp.AVG, ints.sum(0) // n), (ReduceOp.BAND,
                     np.bitwise_and.reduce(ints)), (ReduceOp.BOR, np.bitwise_or.reduce(ints)),
                     (ReduceOp.BXOR, np.bitwise_xor.reduce(ints)), (ReduceOp.MAX, ints.max(0))):
        t = tensor(data(rank, (6,), "int64"), device, "int64")
        dist.all_reduce(t, op=op)
        np.testing.assert_array_equal(host(t), want)
    small = np.stack([data(r, (6,), "int32") for r in range(n)])
    t = tensor(data(rank, (6,), "int32"), device, "int32")
    dist.all_reduce(t, op=ReduceOp.PRODUCT)
    np.testing.assert_array_equal(host(t), small.prod(0))
    flags = np.stack([data(r, (8,), "bool") for r in range(n)])
    for op, want in ((ReduceOp.SUM, flags.any(0)), (ReduceOp.PRODUCT, flags.all(0)), (ReduceOp.MIN, flags.all(0)),
                     (ReduceOp.MAX, flags.any(0))):
        t = tensor(data(rank, (8,), "bool"), device, "bool")
        dist.all_reduce(t, op=op)
        np.testing.assert_array_equal(host(t), want)
        assert t.dtype is npusim.bool


def all_reduce_layouts(device, rank, n):
    everyone = np.stack([data(r, (3, 4)).T for r in range(n)])
    base = tensor(data(rank, (3, 4)), device)
    t = base.t()                                                # a non-contiguous view
    assert not t.is_contiguous()
    version = t._version
    dist.all_reduce(t)
    close(host(t), everyone.sum(0))
    close(host(base), everyone.sum(0).T)                        # written through the view
    assert t._version > version
    scalar = tensor(np.float32(rank + 1), device)
    dist.all_reduce(scalar)
    close(host(scalar), n * (n + 1) / 2)
    empty = tensor(np.zeros((0, 3), np.float32), device)
    dist.all_reduce(empty)
    assert tuple(empty.shape) == (0, 3)


def all_reduce_async(device, rank, n):
    t = tensor(data(rank, (1000,)), device)
    work = dist.all_reduce(t, async_op=True)
    assert isinstance(work, dist.Work)
    assert work.wait() is True
    assert work.is_completed() and work.is_success() and work.exception() is None
    assert work.result()[0] is t
    close(host(t), np.stack([data(r, (1000,)) for r in range(n)]).sum(0))
    works = [dist.all_reduce(tensor(np.full(4, r, np.float32), device), async_op=True) for r in range(3)]
    for w in works:
        w.wait()


def broadcast_(device, rank, n):
    for src in (0, n - 1):
        t = tensor(data(rank, (2, 5), "int32"), device, "int32")
        dist.broadcast(t, src=src)
        np.testing.assert_array_equal(host(t), data(src, (2, 5), "int32"))
    t = tensor(data(rank, (7,)), device, "bfloat16")
    dist.broadcast(t, group_src=1)
    close(host(t), rounded(data(1, (7,)), "bfloat16"), "bfloat16")


def reduce_(device, rank, n):
    everyone = np.stack([data(r, (4,)) for r in range(n)])
    for dst, op, want in ((n - 1, ReduceOp.SUM, everyone.sum(0)), (0, ReduceOp.MAX, everyone.max(0)),
                          (1, ReduceOp.AVG, everyone.mean(0))):
        t = tensor(data(rank, (4,)), device)
        dist.reduce(t, dst=dst, op=op)
        if rank == dst:
            close(host(t), want)


def all_gather_(device, rank, n):
    outputs = [tensor(np.zeros((2, 3), np.float32), device) for _ in range(n)]
    dist.all_gather(outputs, tensor(data(rank, (2, 3)), device))
    for r in range(n):
        close(host(outputs[r]), data(r, (2, 3)))
    flat = tensor(np.zeros((n * 2, 3), np.float32), device)
    dist.all_gather_into_tensor(flat, tensor(data(rank, (2, 3)), device))
    close(host(flat), np.concatenate([data(r, (2, 3)) for r in range(n)]))
    stacked = tensor(np.zeros((n, 2, 3), np.int64), device, "int64")
    dist.all_gather_into_tensor(stacked, tensor(data(rank, (2, 3), "int64"), device, "int64"))
    np.testing.assert_array_equal(host(stacked), np.stack([data(r, (2, 3), "int64") for r in range(n)]))


def reduce_scatter_(device, rank, n):
    everyone = np.stack([data(r, (n * 3, 2)) for r in range(n)])
    for op, total in ((ReduceOp.SUM, everyone.sum(0)), (ReduceOp.AVG, everyone.mean(0)),
                      (ReduceOp.MIN, everyone.min(0))):
        out = tensor(np.zeros((3, 2), np.float32), device)
        dist.reduce_scatter_tensor(out, tensor(data(rank, (n * 3, 2)), device), op=op)
        close(host(out), total[rank * 3:(rank + 1) * 3])


def gather_scatter(device, rank, n):
    for dst in (0, n - 1):
        outputs = [tensor(np.zeros(4, np.float32), device) for _ in range(n)] if rank == dst else None
        dist.gather(tensor(data(rank, (4,)), device), outputs, dst=dst)
        if rank == dst:
            for r in range(n):
                close(host(outputs[r]), data(r, (4,)))
    pieces = [tensor(data(100 + r, (2, 2)), device) for r in range(n)] if rank == 1 else None
    out = tensor(np.zeros((2, 2), np.float32), device)
    dist.scatter(out, pieces, src=1)
    close(host(out), data(100 + rank, (2, 2)))


def all_to_all(device, rank, n):
    even_in = tensor(np.arange(n * 2, dtype=np.float32) + 100 * rank, device)
    even_out = tensor(np.zeros(n * 2, np.float32), device)
    dist.all_to_all_single(even_out, even_in)
    close(host(even_out), np.concatenate([np.arange(rank * 2, rank * 2 + 2) + 100 * r for r in range(n)]))
    # uneven: rank r sends r + j + 1 rows to rank j
    send_rows = [rank + j + 1 for j in range(n)]
    recv_rows = [j + rank + 1 for j in range(n)]
    rows = np.concatenate([np.full((k, 2), 10 * rank + j) for j, k in enumerate(send_rows)]).astype(np.int64)
    out = tensor(np.zeros((sum(recv_rows), 2), np.int64), device, "int64")
    dist.all_to_all_single(out, tensor(rows, device, "int64"), recv_rows, send_rows)
    want = np.concatenate([np.full((k, 2), 10 * j + rank) for j, k in enumerate(recv_rows)])
    np.testing.assert_array_equal(host(out), want)


def point_to_point(device, rank, n):
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    box = tensor(np.zeros(5, np.float32), device)
    works = [dist.isend(tensor(data(rank, (5,)), device), dst=nxt, tag=3), dist.irecv(box, src=prev, tag=3)]
    for w in works:
        w.wait()
    close(host(box), data(prev, (5,)))
    # blocking, from any rank: rank 0 hears from everyone else
    if rank == 0:
        senders = set()
        for _ in range(n - 1):
            t = tensor(np.zeros(3, np.int64), device, "int64")
            src = dist.recv(t)
            np.testing.assert_array_equal(host(t), np.full(3, src))
            senders.add(src)
        assert senders == set(range(1, n)), senders
    else:
        dist.send(tensor(np.full(3, rank), device, "int64"), dst=0)
    # two messages on one tag arrive in order
    if rank == 0:
        dist.send(tensor(np.ones(2, np.float32), device), dst=1)
        dist.send(tensor(np.full(2, 2.0, np.float32), device), dst=1)
    elif rank == 1:
        a, b = tensor(np.zeros(2, np.float32), device), tensor(np.zeros(2, np.float32), device)
        wa, wb = dist.irecv(a, src=0), dist.irecv(b, src=0)
        wb.wait()
        wa.wait()
        close(host(a), np.ones(2))
        close(host(b), np.full(2, 2.0))


def point_to_point_mismatch(device, rank, n):
    if rank == 0:
        dist.send(tensor(np.ones(4, np.float32), device), dst=1)      # completes: the receiver drains it
    elif rank == 1:
        box = tensor(np.zeros(3, np.float32), device)
        expect_error(dist.DistError, r"the sender sent float32\[4\] \(16 bytes\), but this rank receives into "
                                     r"float32\[3\]", dist.recv, box, src=0)
        close(host(box), np.zeros(3))
    dist.barrier()
    t = tensor(np.ones(2, np.float32), device)
    dist.all_reduce(t)                                                   # the group still works
    close(host(t), np.full(2, n))


def objects(device, rank, n):
    items = [{"rank": rank}, "x" * rank, None] if rank == 0 else [None, None, None]
    dist.broadcast_object_list(items, src=0)
    assert items == [{"rank": 0}, "", None], items
    gathered = [None] * n
    dist.all_gather_object(gathered, ("hello", rank, list(range(rank))))
    assert gathered == [("hello", r, list(range(r))) for r in range(n)], gathered


def groups(device, rank, n):
    evens = [r for r in range(n) if r % 2 == 0]
    g = dist.new_group(evens)
    if rank in evens:
        assert dist.get_rank(g) == evens.index(rank) and dist.get_world_size(g) == len(evens)
        assert dist.get_process_group_ranks(g) == evens
        t = tensor(np.full(2, rank, np.float32), device)
        dist.all_reduce(t, group=g)
        close(host(t), np.full(2, sum(evens)))
        t = tensor(np.full(2, rank, np.float32), device)
        dist.broadcast(t, src=evens[-1], group=g)
        close(host(t), np.full(2, evens[-1]))
    else:
        assert g is dist.GroupMember.NON_GROUP_MEMBER
        assert dist.get_rank(g) == -1 and dist.get_world_size(g) == -1
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert dist.all_reduce(tensor(np.ones(2, np.float32), device), group=g) is None
        assert any("does not belong to the given group" in str(w.message) for w in caught)
    dist.barrier()
    dist.destroy_process_group(g)


def mismatches(device, rank, n):
    expect_error(dist.DistError, r"Detected mismatch between collectives on ranks.*rank 0 runs all_reduce\(SUM, "
                 rf"{device} float32\[3\]\).*rank 1 runs all_reduce\(SUM, {device} float32\[4\]\)",
                 dist.all_reduce, tensor(np.ones(3 + min(rank, 1), np.float32), device))
    expect_error(dist.DistError, r"Detected mismatch.*float32.*int64",
                 dist.broadcast, tensor(np.ones(2), device, "float32" if rank == 0 else "int64"), src=0)
    call = (lambda: dist.all_reduce(tensor(np.ones(2), device))) if rank % 2 == 0 else \
        (lambda: dist.broadcast(tensor(np.ones(2), device), src=0))
    expect_error(dist.DistError, r"rank 0 runs all_reduce.*rank 1 runs broadcast", call)
    t = tensor(np.ones(2, np.float32), device)
    dist.all_reduce(t)                    # nothing was sent: the group still works
    close(host(t), np.full(2, n))


def bad_arguments(device, rank, n):
    t = tensor(np.ones(4, np.float32), device)
    expect_error(TypeError, r"Expected parameter `tensor` of type npusim.Tensor\n\s+but got <class 'int'>",
                 dist.all_reduce, 3)
    expect_error(TypeError, "op must be a npusim.distributed.ReduceOp", dist.all_reduce, t, op="sum")
    expect_error(ValueError, r"all_reduce does not support <RedOpType.BAND: 5> on floating-point tensors",
                 dist.all_reduce, t, op=ReduceOp.BAND)
    expect_error(ValueError, "Must specify global_rank or group_rank", dist.broadcast, t)
    expect_error(ValueError, f"Global rank {n + 3} is not part of group", dist.broadcast, t, src=n + 3)
    expect_error(ValueError, "Invalid destination rank: destination rank should not be the same as the rank of "
                 "the current process.", dist.send, t, dst=rank)
    expect_error(RuntimeError, rf"all_gather: invalid output tensor list \(expected length {n}, got 1\)",
                 dist.all_gather, [t], t)
    expect_error(ValueError, "Invalid usage of tensors with different dtypes",
                 dist.all_gather_into_tensor, tensor(np.zeros(4 * n), device, "int64"), t)
    expect_error(RuntimeError, "output tensor size must be equal to world_size",
                 dist.all_gather_into_tensor, tensor(np.zeros(4 * n + 1), device), t)
    expect_error(RuntimeError, "input tensor size must be equal to world_size",
                 dist.reduce_scatter_tensor, tensor(np.zeros(3), device), t)
    expect_error(RuntimeError, "Split sizes doesn't match total dim 0 size",
                 dist.all_to_all_single, t, t, [4] + [1] * (n - 1), [1] * n)
    gather_list = [tensor(np.zeros(4), device) for _ in range(n)] if rank != 0 else []
    role = "must be specified on destination rank" if rank == 0 else "must NOT be specified on non-destination"
    expect_error(ValueError, role, dist.gather, t, gather_list, dst=0)
    expect_error(ValueError, "tag must be an int", dist.isend, t, dst=(rank + 1) % n, tag=-1)


def uneven_all_to_all_agreement(device, rank, n):
    # rank 0 believes it receives one row too many from rank 1: every rank refuses, nobody hangs
    send = [1] * n
    recv = [1] * n
    if rank == 0:
        recv[1] = 2
    out = tensor(np.zeros(sum(recv), np.float32), device)
    expect_error(RuntimeError, r"all_to_all_single: rank 1 sends 1 elements to rank 0, but rank 0 expects 2",
                 dist.all_to_all_single, out, tensor(np.ones(n), device), recv, send)


def barrier_(device, rank, n):
    assert dist.barrier() is None
    work = dist.barrier(async_op=True)
    assert work.wait() and work.is_completed()


CHECKS = [("all_reduce_ops", all_reduce_ops), ("all_reduce_dtypes", all_reduce_dtypes),
          ("all_reduce_layouts", all_reduce_layouts), ("all_reduce_async", all_reduce_async),
          ("broadcast", broadcast_), ("reduce", reduce_), ("all_gather", all_gather_),
          ("reduce_scatter", reduce_scatter_), ("gather_scatter", gather_scatter), ("all_to_all", all_to_all),
          ("point_to_point", point_to_point), ("point_to_point_mismatch", point_to_point_mismatch),
          ("objects", objects), ("groups", groups), ("mismatches", mismatches), ("bad_arguments", bad_arguments),
          ("all_to_all_agreement", uneven_all_to_all_agreement), ("barrier", barrier_)]


def init_arguments_checked(device, rank, n):
    expect_error(ValueError, rf"init_process_group\(world_size={n + 5}\), but MPI started {n} processes",
                 dist.init_process_group, "mpi", world_size=n + 5)
    expect_error(ValueError, r"init_process_group\(rank=\d+\), but MPI gave this process rank",
                 dist.init_process_group, "mpi", rank=(rank + 1) % n)
    assert not dist.is_initialized()


def main():
    launched = launcher_env()
    set_rank(launched["rank"])
    say(f"mpi4py imported by `import npusim.distributed`: {mpi_loaded_by_import}")
    say(f"ENV RANK={os.environ.get('RANK')} WORLD_SIZE={os.environ.get('WORLD_SIZE')} "
        f"LOCAL_RANK={os.environ.get('LOCAL_RANK')}")
    report("cpu", "init_arguments", init_arguments_checked, "cpu", launched["rank"], launched["world_size"])
    dist.init_process_group(backend="mpi", timeout=timedelta(seconds=30))
    rank, n = dist.get_rank(), dist.get_world_size()
    assert rank == launched["rank"]
    assert dist.is_initialized() and dist.get_backend() == "mpi"
    for device in ("cpu", "npu"):
        if device == "npu":
            npusim.npu.set_device(rank % npusim.npu.device_count())
        for name, fn in CHECKS:
            report(device, name, fn, device, rank, n)
    dist.destroy_process_group()
    assert not dist.is_initialized()
    done()


if __name__ == "__main__":
    main()
