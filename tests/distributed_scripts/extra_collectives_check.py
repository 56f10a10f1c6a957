"""gather_object, scatter_object_list, all_to_all, reduce_scatter, batch_isend_irecv and monitored_barrier across
ranks; run on each rank under mpiexec. Prints one ``[rank] PASS|FAIL device check`` line per check.

Usage: extra_collectives_check.py [MODE], MODE one of
  checks             (default) every check, on cpu and npu tensors where tensors are involved;
  monitored_failure  ranks that skip a monitored_barrier: rank 0 names them, the ranks that came are told
                     (needs 3 ranks; the failed groups are aborted, so the job ends with an error).
"""
from __future__ import annotations

import sys
import time
import warnings
from datetime import timedelta

import numpy as np

import npusim
import npusim.distributed as dist
from script_support import done, expect_error, report, set_rank

ReduceOp = dist.ReduceOp
DTYPES = {"float32": npusim.float32, "int64": npusim.int64, "bool": npusim.bool}


def tensor(values, device, dtype="float32"):
    return npusim.tensor(np.asarray(values), dtype=DTYPES[dtype], device=device)


def host(t):
    return t.detach().cpu().numpy()


def data(rank, shape):
    return np.random.default_rng(500 + rank).uniform(0.5, 2.0, shape).astype(np.float32)


def close(actual, expected):
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64),
                               rtol=1e-6, atol=1e-6)


def obj_of(rank):
    """A picklable object whose size depends on the rank."""
    return {"rank": rank, "payload": list(range(rank * 50)), "text": "x" * (1000 * rank)}


def still_works(device, n):
    t = tensor(np.ones(2, np.float32), device)
    dist.all_reduce(t)
    close(host(t), np.full(2, n))


# --- gather_object / scatter_object_list -------------------------------------------------------------------
def gather_object_(device, rank, n):
    for dst in (0, n - 1):
        out = [None] * n if rank == dst else None
        assert dist.gather_object(obj_of(rank), out, dst=dst) is None
        if rank == dst:
            assert out == [obj_of(r) for r in range(n)], out
    # group_dst; a longer list keeps its extra entries; an empty list is fine on the other ranks
    out = ["keep"] * (n + 2) if rank == 1 else []
    dist.gather_object(("t", rank), out, group_dst=1)
    if rank == 1:
        assert out == [("t", r) for r in range(n)] + ["keep", "keep"], out
    else:
        assert out == []
    # in a subgroup of ranks 1..n-1, gathering on global rank n-1
    sub = dist.new_group(list(range(1, n)))
    if rank == 0:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert dist.gather_object(rank, [None], group=sub) is None
        assert any("Running gather_object on global rank 0 which does not belong" in str(w.message) for w in caught)
    else:
        out = [None] * (n - 1) if rank == n - 1 else None
        dist.gather_object(rank * 10, out, dst=n - 1, group=sub)
        if rank == n - 1:
            assert out == [r * 10 for r in range(1, n)], out
    dist.destroy_process_group(sub)


def gather_object_errors(device, rank, n):
    # the destination's list is one short: it gets what fits, then IndexError (as torch); the others finish
    out = ["old"] * (n - 1) if rank == 0 else None
    if rank == 0:
        expect_error(IndexError, "list assignment index out of range", dist.gather_object, rank, out, dst=0)
        assert out == list(range(n - 1)), out
    else:
        dist.gather_object(rank, None, dst=0)
    # a non-destination rank passes a list: ValueError there, the others are told instead of waiting
    out = [None] * n if rank in (0, 1) else None
    if rank == 1:
        expect_error(ValueError, r"^Argument ``gather_list`` must NOT be specified on non-destination ranks.$",
                     dist.gather_object, rank, out, dst=0)
    else:
        expect_error(dist.DistError, r"rank 1 runs gather_object\(dst=0\) with bad arguments \(ValueError: "
                                     r"Argument ``gather_list`` must NOT be specified",
                     dist.gather_object, rank, out, dst=0)
    # the destination passes no list
    if rank == n - 1:
        expect_error(ValueError, "^Argument ``gather_list`` must be specified on destination rank.$",
                     dist.gather_object, rank, None, dst=n - 1)
    else:
        expect_error(dist.DistError, rf"rank {n - 1} runs gather_object\(dst={n - 1}\) with bad arguments",
                     dist.gather_object, rank, None, dst=n - 1)
    # an object that cannot be pickled
    thing = (lambda: 0) if rank == 1 else rank
    out = [None] * n if rank == 0 else None
    if rank == 1:
        expect_error(Exception, "lambda", dist.gather_object, thing, out, dst=0)
    else:
        expect_error(dist.DistError, r"rank 1 runs gather_object\(dst=0\) with bad arguments",
                     dist.gather_object, thing, out, dst=0)
    still_works(device, n)


def scatter_object_list_(device, rank, n):
    for src in (0, n - 1):
        inputs = [obj_of(r) for r in range(n)] if rank == src else ["ignored"] * (n + 3)
        out = [None, "second"]
        assert dist.scatter_object_list(out, inputs, src=src) is None
        assert out == [obj_of(rank), "second"], out
    out = [None]
    dist.scatter_object_list(out, [f"to {r}" for r in range(n)] if rank == 1 else None, group_src=1)
    assert out == [f"to {rank}"], out
    big = ["y" * (100_000 * (r + 1)) for r in range(n)]
    out = [None]
    dist.scatter_object_list(out, big if rank == 0 else None)
    assert out[0] == big[rank]


def scatter_object_list_errors(device, rank, n):
    # the source's list has the wrong size
    inputs = list(range(n + 1)) if rank == 0 else None
    if rank == 0:
        expect_error(RuntimeError, rf"Incorrect input list size {n + 1}. Input list size should be {n}, same as size "
                                   "of the process group.", dist.scatter_object_list, [None], inputs, src=0)
    else:
        expect_error(dist.DistError, r"rank 0 runs scatter_object_list\(src=0\) with bad arguments \(RuntimeError",
                     dist.scatter_object_list, [None], inputs, src=0)
    # the source gives no list
    if rank == 0:
        expect_error(ValueError, "^source rank must provide non-None scatter_object_input_list$",
                     dist.scatter_object_list, [None], None, src=0)
    else:
        expect_error(dist.DistError, "rank 0 runs scatter_object_list", dist.scatter_object_list, [None], None, src=0)
    # one rank's output list is empty
    out = [] if rank == n - 1 else [None]
    inputs = list(range(n)) if rank == 0 else None
    if rank == n - 1:
        expect_error(ValueError, "^Expected argument scatter_object_output_list to be a list of size at least 1.$",
                     dist.scatter_object_list, out, inputs, src=0)
    else:
        expect_error(dist.DistError, rf"rank {n - 1} runs scatter_object_list\(src=0\) with bad arguments",
                     dist.scatter_object_list, out, inputs, src=0)
    assert out in ([], [None])
    still_works(device, n)


# --- all_to_all / reduce_scatter ------------------------------------------------------------------------------
def all_to_all_(device, rank, n):
    inputs = [tensor([100 * rank + j, 100 * rank + j + 0.5], device) for j in range(n)]
    outputs = [tensor(np.zeros(2, np.float32), device) for _ in range(n)]
    assert dist.all_to_all(outputs, inputs) is None
    for i in range(n):
        close(host(outputs[i]), [100 * i + rank, 100 * i + rank + 0.5])
    # uneven: rank r sends r + j + 1 values to rank j, int64, output views of one base tensor
    inputs = [tensor(np.full(rank + j + 1, 10 * rank + j), device, "int64") for j in range(n)]
    base = tensor(np.zeros(sum(i + rank + 1 for i in range(n)), np.int64), device, "int64")
    outputs = list(base.split([i + rank + 1 for i in range(n)]))
    work = dist.all_to_all(outputs, inputs, async_op=True)
    assert isinstance(work, dist.Work) and work.wait()
    assert work.result() == outputs
    want = np.concatenate([np.full(i + rank + 1, 10 * i + rank) for i in range(n)])
    np.testing.assert_array_equal(host(base), want)
    # a 2-D output of another shape but the same count
    inputs = [tensor(data(rank, (6,)) + j, device) for j in range(n)]
    outputs = [tensor(np.zeros((2, 3), np.float32), device) for _ in range(n)]
    dist.all_to_all(outputs, inputs)
    for i in range(n):
        close(host(outputs[i]), (data(i, (6,)) + rank).reshape(2, 3))


def all_to_all_errors(device, rank, n):
    one = tensor(np.ones(1, np.float32), device)
    expect_error(RuntimeError, rf"^all_to_all: input tensor list size 1 does not match world size {n}$",
                 dist.all_to_all, [one] * n, [one])
    # only rank 0 has the wrong count: it raises, the others are told
    inputs = [tensor(np.ones(1), device) for _ in range(n + (1 if rank == 0 else 0))]
    outputs = [tensor(np.zeros(1), device) for _ in range(n)]
    if rank == 0:
        expect_error(RuntimeError, rf"input tensor list size {n + 1} does not match world size {n}",
                     dist.all_to_all, outputs, inputs)
    else:
        expect_error(dist.DistError, r"rank 0 runs all_to_all.*with bad arguments \(RuntimeError",
                     dist.all_to_all, outputs, inputs)
    # rank 0 expects two values from rank 1, rank 1 sends one: every rank refuses, nobody hangs
    outputs = [tensor(np.zeros(2 if (rank == 0 and i == 1) else 1), device) for i in range(n)]
    expect_error(RuntimeError, r"all_to_all: rank 1 sends 1 elements to rank 0, but rank 0 expects 2 from rank 1",
                 dist.all_to_all, outputs, [tensor(np.ones(1), device) for _ in range(n)])
    expect_error(ValueError, "Invalid usage of tensors with different dtypes", dist.all_to_all,
                 [tensor(np.zeros(1), device, "int64")] * n, [one] * n)
    still_works(device, n)


def reduce_scatter_(device, rank, n):
    everyone = np.stack([data(r, (n, 3, 2)) for r in range(n)])      # rank r's input_list[i] = everyone[r, i]
    for op, total in ((ReduceOp.SUM, everyone.sum(0)), (ReduceOp.AVG, everyone.mean(0)),
                      (ReduceOp.MAX, everyone.max(0)), (ReduceOp.PRODUCT, everyone.prod(0))):
        out = tensor(np.zeros((3, 2), np.float32), device)
        inputs = [tensor(everyone[rank, i], device) for i in range(n)]
        assert dist.reduce_scatter(out, inputs, op=op) is None
        close(host(out), total[rank])
    ints = [tensor(np.arange(4) * (rank + 1) + i, device, "int64") for i in range(n)]
    out = tensor(np.zeros(4, np.int64), device, "int64")
    work = dist.reduce_scatter(out, ints, async_op=True)
    assert work.wait() and work.result() == [out]
    np.testing.assert_array_equal(host(out), sum(np.arange(4) * (r + 1) + rank for r in range(n)))
    flags = [tensor(np.array([r == rank, False, True]), device, "bool") for r in range(n)]
    out = tensor(np.zeros(3, bool), device, "bool")
    dist.reduce_scatter(out, flags)                       # SUM of bools is "any"
    np.testing.assert_array_equal(host(out), [True, False, True])
    base = tensor(np.zeros((2, 3), np.float32), device)
    view = base.t()                                       # a non-contiguous output is written through
    dist.reduce_scatter(view, [tensor(np.full((3, 2), r + 1, np.float32), device) for r in range(n)])
    close(host(base), np.full((2, 3), n * (rank + 1)))


def reduce_scatter_errors(device, rank, n):
    out = tensor(np.zeros(2, np.float32), device)
    expect_error(RuntimeError, rf"reduce_scatter: invalid input tensor list size, must be world size \({n}\), got "
                               rf"{n + 1}", dist.reduce_scatter, out, [out] * (n + 1))
    inputs = [tensor(np.ones(3 if (rank == 1 and i == 0) else 2), device) for i in range(n)]
    if rank == 1:
        expect_error(RuntimeError, r"^reduce_scatter: invalid tensor size at index 0 \(expected \(2,\), got \(3,\)\)$",
                     dist.reduce_scatter, out, inputs)
    else:
        expect_error(dist.DistError, r"rank 1 runs reduce_scatter\(SUM, .*\) with bad arguments",
                     dist.reduce_scatter, out, inputs)
    expect_error(ValueError, "reduce_scatter does not support <RedOpType.BAND: 5> on floating-point tensors",
                 dist.reduce_scatter, out, [out] * n, op=ReduceOp.BAND)
    expect_error(TypeError, r"Expected parameter `input_list` of type List\[npusim.Tensor\]",
                 dist.reduce_scatter, out, out)
    still_works(device, n)


# --- batch_isend_irecv ----------------------------------------------------------------------------------------------
def batch_isend_irecv_(device, rank, n):
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    from_prev = tensor(np.zeros(3, np.float32), device)
    from_next = tensor(np.zeros(3, np.float32), device)
    # receives listed before the sends: a batch never deadlocks on its order
    ops = [dist.P2POp(dist.irecv, from_prev, prev), dist.P2POp(dist.irecv, from_next, nxt, tag=7),
           dist.P2POp(dist.isend, tensor(data(rank, (3,)), device), nxt),
           dist.P2POp(dist.isend, tensor(data(rank, (3,)) * 2, device), prev, tag=7)]
    works = dist.batch_isend_irecv(ops)
    assert len(works) == 4 and all(isinstance(w, dist.Work) for w in works)
    for w in works:
        w.wait()
    close(host(from_prev), data(prev, (3,)))
    close(host(from_next), data(nxt, (3,)) * 2)
    assert repr(ops[2]) == f"P2POp(isend pg=0, group_src={rank}, group_dst={nxt},  npusim.Size([3]), npusim.float32)"
    assert repr(ops[0]) == f"P2POp(irecv pg=0, group_src={prev}, group_dst={rank},  npusim.Size([3]), npusim.float32)"
    # two messages between the same pair, in list order; group_peer in a subgroup of ranks n-2, n-1
    sub = dist.new_group([n - 2, n - 1])
    if rank >= n - 2:
        me, other = rank - (n - 2), 1 - (rank - (n - 2))
        first, second = tensor(np.zeros(2, np.int64), device, "int64"), tensor(np.zeros(2, np.int64), device, "int64")
        ops = [dist.P2POp(dist.isend, tensor([me, 1], device, "int64"), group=sub, group_peer=other),
               dist.P2POp(dist.isend, tensor([me, 2], device, "int64"), group=sub, group_peer=other),
               dist.P2POp(dist.irecv, first, group=sub, group_peer=other),
               dist.P2POp(dist.irecv, second, group=sub, group_peer=other)]
        assert ops[0].peer == n - 2 + other and ops[0].group_peer == other
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        np.testing.assert_array_equal(host(first), [other, 1])
        np.testing.assert_array_equal(host(second), [other, 2])
    dist.barrier()
    dist.destroy_process_group(sub)


def batch_isend_irecv_errors(device, rank, n):
    t = tensor(np.ones(2, np.float32), device)
    expect_error(ValueError, r"^Invalid ``op``. Expected ``op`` to be of type ``npusim.distributed.isend`` or "
                             r"``npusim.distributed.irecv``.$", dist.P2POp, dist.broadcast, t, 0)
    expect_error(TypeError, "Expected parameter `tensor` of type npusim.Tensor", dist.P2POp, dist.isend, [1.0], 0)
    expect_error(ValueError, "Must specify global_rank or group_rank", dist.P2POp, dist.isend, t)
    expect_error(ValueError, "Can't specify both group_rank and global_rank", dist.P2POp, dist.isend, t, 1,
                 group_peer=1)
    expect_error(ValueError, f"Group rank {n} is not part of group", dist.P2POp, dist.isend, t, group_peer=n)
    expect_error(IndexError, "list index out of range", dist.batch_isend_irecv, [])
    expect_error(ValueError, "Each op is expected to to be of type ``npusim.distributed.P2POp``",
                 dist.batch_isend_irecv, [dist.P2POp(dist.isend, t, (rank + 1) % n), "op"])
    expect_error(ValueError, "Each op is expected", dist.batch_isend_irecv, (dist.P2POp(dist.isend, t, 0),))
    sub = dist.new_group(list(range(n)))
    expect_error(ValueError, "^All ops need to use the same group.$", dist.batch_isend_irecv,
                 [dist.P2POp(dist.isend, t, (rank + 1) % n), dist.P2POp(dist.irecv, t, (rank + 1) % n, group=sub)])
    dist.destroy_process_group(sub)
    # a receive of the wrong size fails loudly on the receiver; the sender completes
    if rank == 0:
        for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor(np.ones(4), device), 1)]):
            w.wait()
    elif rank == 1:
        work, = dist.batch_isend_irecv([dist.P2POp(dist.irecv, tensor(np.zeros(3), device), 0)])
        expect_error(dist.DistError, r"the sender sent float32\[4\]", work.wait)
    still_works(device, n)


# --- monitored_barrier and mismatches -----------------------------------------------------------------------------
def monitored_barrier_(device, rank, n):
    start = time.monotonic()
    assert dist.monitored_barrier(timeout=timedelta(seconds=20)) is None
    assert dist.monitored_barrier(timeout=timedelta(seconds=20), wait_all_ranks=True) is None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dist.monitored_barrier(timeout=20.0)
    assert any("Please specify timeout arg as a timedelta" in str(w.message) for w in caught)
    expect_error(TypeError, "^Expected timeout argument to be of type datetime.timedelta, got 5$",
                 dist.monitored_barrier, timeout=5)
    sub = dist.new_group([0, n - 1])
    if rank in (0, n - 1):
        dist.monitored_barrier(sub, timeout=timedelta(seconds=20))
    else:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert dist.monitored_barrier(sub) is None
        assert any("does not belong to the given group" in str(w.message) for w in caught)
    dist.destroy_process_group(sub)
    assert time.monotonic() - start < 15


def mismatches(device, rank, n):
    t = tensor(np.ones(n * 2, np.float32), device)
    pieces = [tensor(np.ones(2, np.float32), device) for _ in range(n)]
    calls = {0: lambda: dist.gather_object(rank, [None] * n, dst=0),
             1: lambda: dist.scatter_object_list([None], None, src=0)}
    expect_error(dist.DistError, r"rank 0 runs gather_object\(dst=0\), rank 1 runs scatter_object_list\(src=0\)",
                 calls.get(rank, calls[1]))
    call = (lambda: dist.all_to_all(pieces, pieces)) if rank == 0 else \
        (lambda: dist.reduce_scatter(pieces[0], pieces))
    expect_error(dist.DistError, rf"rank 0 runs all_to_all\({device} float32\), rank 1 runs reduce_scatter\(SUM",
                 call)
    call = (lambda: dist.reduce_scatter(pieces[0], pieces)) if rank == 0 else \
        (lambda: dist.reduce_scatter_tensor(pieces[0], t))
    expect_error(dist.DistError, r"rank 0 runs reduce_scatter\(SUM.*rank 1 runs reduce_scatter_tensor", call)
    call = (lambda: dist.reduce_scatter(pieces[0], pieces, op=ReduceOp.MAX)) if rank == 0 else \
        (lambda: dist.reduce_scatter(pieces[0], pieces))
    expect_error(dist.DistError, r"rank 0 runs reduce_scatter\(MAX.*rank 1 runs reduce_scatter\(SUM", call)
    still_works(device, n)


OBJECT_CHECKS = [("gather_object", gather_object_), ("gather_object_errors", gather_object_errors),
                 ("scatter_object_list", scatter_object_list_),
                 ("scatter_object_list_errors", scatter_object_list_errors),
                 ("monitored_barrier", monitored_barrier_)]
TENSOR_CHECKS = [("all_to_all", all_to_all_), ("all_to_all_errors", all_to_all_errors),
                 ("reduce_scatter", reduce_scatter_), ("reduce_scatter_errors", reduce_scatter_errors),
                 ("batch_isend_irecv", batch_isend_irecv_), ("batch_isend_irecv_errors", batch_isend_irecv_errors),
                 ("mismatches", mismatches)]


def run_checks(rank, n):
    for name, fn in OBJECT_CHECKS:
        report("cpu", name, fn, "cpu", rank, n)
    for device in ("cpu", "npu"):
        if device == "npu":
            npusim.npu.set_device(rank % npusim.npu.device_count())
        for name, fn in TENSOR_CHECKS:
            report(device, name, fn, device, rank, n)


# --- ranks that skip a monitored barrier ----------------------------------------------------------------------
def monitored_failure(rank, n):
    assert n >= 3, "needs 3 ranks"
    fail_fast, wait_all = dist.new_group(list(range(n))), dist.new_group(list(range(n)))
    limit = timedelta(seconds=1)

    def first_missing():
        start = time.monotonic()
        e = expect_error(RuntimeError, rf"^\[Rank 0\]: Rank {n - 1} failed to pass monitoredBarrier in 1000 ms",
                         dist.monitored_barrier, fail_fast, timeout=limit)
        assert isinstance(e, dist.DistBackendError)
        assert 0.9 < time.monotonic() - start < 10, time.monotonic() - start
        # the group is aborted: its later calls fail at once
        start = time.monotonic()
        expect_error(dist.DistBackendError, "was aborted after an earlier failure", dist.all_reduce, npusim.ones(2),
                     group=fail_fast)
        assert time.monotonic() - start < 1

    def told():
        start = time.monotonic()
        expect_error(RuntimeError, rf"^Rank {rank} successfully reached monitoredBarrier, but rank 0 reported: Rank "
                                   rf"{n - 1} failed to pass monitoredBarrier in 1000 ms",
                     dist.monitored_barrier, fail_fast, timeout=limit)
        assert time.monotonic() - start < 10

    def all_missing():
        e = expect_error(RuntimeError, r"^\[Rank 0\]: Ranks " + ", ".join(str(r) for r in range(1, n)) +
                         " failed to pass monitoredBarrier in 1000 ms",
                         dist.monitored_barrier, wait_all, timeout=limit, wait_all_ranks=True)
        assert isinstance(e, dist.DistBackendError)

    if rank == 0:
        report("cpu", "monitored_barrier_names_missing_rank", first_missing)
    elif rank < n - 1:
        report("cpu", "monitored_barrier_tells_the_others", told)
    dist.barrier()                      # the default group is not affected
    if rank == 0:
        report("cpu", "monitored_barrier_names_all_missing_ranks", all_missing)
    dist.barrier()
    report("cpu", "default_group_still_works", still_works, "cpu", n)
    dist.barrier()                      # every rank has printed its lines before the aborted groups end the job


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "checks"
    dist.init_process_group(backend="mpi", timeout=timedelta(seconds=30))
    rank, n = dist.get_rank(), dist.get_world_size()
    set_rank(rank)
    if mode == "checks":
        run_checks(rank, n)
    else:
        monitored_failure(rank, n)
    dist.destroy_process_group()
    done()


if __name__ == "__main__":
    main()
