"""npusim.distributed: gather_object, scatter_object_list, all_to_all, reduce_scatter, P2POp/batch_isend_irecv and
monitored_barrier, across 2 and 3 ranks (real processes over MPI) and in a group of one process.

The multi-rank jobs start together once per module and each test reads its lines from their output. Without
mpi4py those tests skip; the one-process tests still run.
"""
from __future__ import annotations

import importlib.util
import re
import warnings
from datetime import timedelta

import numpy as np
import pytest

import npusim
import npusim.distributed as dist
from conftest import host, loopback_group_of_one
from distributed_scripts.harness import Job, check_lines, mpiexec_command

HAS_MPI = importlib.util.find_spec("mpi4py") is not None
needs_mpi = pytest.mark.skipif(not HAS_MPI, reason="mpi4py and an MPI library are not installed "
                                                   "(pip install 'npusim[distributed]')")

OBJECT_CHECKS = ["gather_object", "gather_object_errors", "scatter_object_list", "scatter_object_list_errors",
                 "monitored_barrier"]
TENSOR_CHECKS = ["all_to_all", "all_to_all_errors", "reduce_scatter", "reduce_scatter_errors", "batch_isend_irecv",
                 "batch_isend_irecv_errors", "mismatches"]
JOB_LIMIT_S = 90


@pytest.fixture(scope="module")
def jobs():
    if not HAS_MPI:
        pytest.skip("mpi4py and an MPI library are not installed (pip install 'npusim[distributed]')")
    started = {
        "extra-2": Job(mpiexec_command(2, "extra_collectives_check.py"), JOB_LIMIT_S),
        "extra-3": Job(mpiexec_command(3, "extra_collectives_check.py"), JOB_LIMIT_S),
        "monitored-3": Job(mpiexec_command(3, "extra_collectives_check.py", "monitored_failure"), JOB_LIMIT_S),
    }
    yield started
    for job in started.values():
        job.kill()


@pytest.fixture
def loopback():
    """A default group of one process on a backend registered through ``Backend.register_backend``."""
    with loopback_group_of_one(2) as backend:
        yield backend


# --- many ranks ---------------------------------------------------------------------------------------------
@needs_mpi
@pytest.mark.parametrize("ranks", [2, 3])
def test_every_rank_finishes(jobs, ranks):
    code, out, err, _ = jobs[f"extra-{ranks}"].result()
    assert code == 0, out + err
    assert sorted(re.findall(r"^\[(\d+)\] DONE$", out, re.MULTILINE)) == [str(r) for r in range(ranks)]
    assert "FAIL" not in out, out


@needs_mpi
@pytest.mark.parametrize("check", OBJECT_CHECKS)
@pytest.mark.parametrize("ranks", [2, 3])
def test_object_collective_on_every_rank(jobs, ranks, check):
    results = check_lines(jobs[f"extra-{ranks}"].result()[1])
    for rank in range(ranks):
        assert results.get((rank, "cpu", check)) == "PASS", results.get((rank, "cpu", check), "no result line")


@needs_mpi
@pytest.mark.parametrize("check", TENSOR_CHECKS)
@pytest.mark.parametrize("ranks", [2, 3])
def test_tensor_collective_on_every_rank(jobs, ranks, device, check):
    results = check_lines(jobs[f"extra-{ranks}"].result()[1])
    for rank in range(ranks):
        assert results.get((rank, device, check)) == "PASS", results.get((rank, device, check), "no result line")


@needs_mpi
def test_monitored_barrier_names_ranks_that_did_not_come(jobs):
    code, out, err, wall = jobs["monitored-3"].result()
    results = check_lines(out)
    expected = {(0, "cpu", "monitored_barrier_names_missing_rank"), (1, "cpu", "monitored_barrier_tells_the_others"),
                (0, "cpu", "monitored_barrier_names_all_missing_ranks")}
    expected |= {(r, "cpu", "default_group_still_works") for r in range(3)}
    for key in sorted(expected):
        assert results.get(key) == "PASS", (key, results.get(key, "no result line"), out + err)
    # the failed groups were aborted: the job ends with an error instead of waiting for the missing rank
    assert code != 0 and "ending the MPI job" in err
    assert wall < 60


# --- before init ----------------------------------------------------------------------------------------------
NOT_INITIALIZED = "Default process group has not been initialized, please make sure to call init_process_group."


@pytest.mark.parametrize("call", [
    lambda: dist.gather_object(1, [None]), lambda: dist.scatter_object_list([None], [1]),
    lambda: dist.all_to_all([npusim.ones(1)], [npusim.ones(1)]),
    lambda: dist.reduce_scatter(npusim.ones(1), [npusim.ones(1)]), lambda: dist.P2POp(dist.isend, npusim.ones(1), 0),
    dist.monitored_barrier,
])
def test_uninitialised_group_raises(call):
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match=re.escape(NOT_INITIALIZED)):
        call()


# --- a group of one process ------------------------------------------------------------------------------------
def test_object_collectives_in_a_group_of_one(loopback):
    out = [None, "extra"]
    assert dist.gather_object({"a": [1, 2]}, out) is None
    assert out == [{"a": [1, 2]}, "extra"]
    out = [None]
    assert dist.scatter_object_list(out, [("only", 0)]) is None
    assert out == [("only", 0)]
    out = ["x", "y"]
    dist.scatter_object_list(out, [3], group_src=0)
    assert out == [3, "y"]


def test_list_collectives_in_a_group_of_one(loopback, device):
    outputs = [npusim.zeros(2, 2, device=device)]
    assert dist.all_to_all(outputs, [npusim.arange(4, dtype=npusim.float32, device=device)]) is None
    np.testing.assert_array_equal(host(outputs[0]), [[0, 1], [2, 3]])
    out = npusim.zeros(3, device=device)
    work = dist.reduce_scatter(out, [npusim.tensor([1.0, 2.0, 3.0], device=device)], op=dist.ReduceOp.AVG,
                               async_op=True)
    assert work.wait() and work.result() == [out]
    np.testing.assert_array_equal(host(out), [1.0, 2.0, 3.0])
    assert loopback.calls[-1][0] == "reduce_scatter" and loopback.calls[-2][0] == "all_to_all"


def test_batch_isend_irecv_in_a_group_of_one(loopback, device):
    box = npusim.zeros(3, dtype=npusim.int64, device=device)
    ops = [dist.P2POp(dist.isend, npusim.arange(3, device=device), 0, tag=4),
           dist.P2POp(dist.irecv, box, group_peer=0, tag=4)]
    works = dist.batch_isend_irecv(ops)
    assert len(works) == 2 and all(w.wait() for w in works)
    np.testing.assert_array_equal(host(box), [0, 1, 2])
    assert repr(ops[1]) == "P2POp(irecv pg=0, group_src=0, group_dst=0,  npusim.Size([3]), npusim.int64)"
    assert ops[0].peer == 0 and ops[0].group_peer == 0 and ops[0].group is dist.group.WORLD


def test_monitored_barrier_in_a_group_of_one(loopback):
    assert dist.monitored_barrier() is None
    assert dist.monitored_barrier(timeout=timedelta(seconds=1), wait_all_ranks=True) is None
    with pytest.warns(UserWarning, match="Please specify timeout arg as a timedelta. Converting current value of "
                                         "1.5 assuming it represents seconds"):
        dist.monitored_barrier(timeout=1.5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert dist.monitored_barrier(dist.GroupMember.NON_GROUP_MEMBER) is None
    assert "Running monitored_barrier on global rank 0 which does not belong to the given group." in \
        str(caught[0].message)


@pytest.mark.parametrize("call, error, message", [
    (lambda t: dist.gather_object(1, None), ValueError, "Argument ``gather_list`` must be specified on destination "
                                                        "rank."),
    (lambda t: dist.gather_object(1, [], dst=0), ValueError, "Argument ``gather_list`` must be specified on "
                                                             "destination rank."),
    (lambda t: dist.gather_object(1, [None], dst=1), ValueError, "Global rank 1 is not part of group"),
    (lambda t: dist.gather_object(1, [None], dst=0, group_dst=0), ValueError,
     "Can't specify both group_rank and global_rank"),
    (lambda t: dist.gather_object(lambda: 0, [None]), Exception, "lambda"),
    (lambda t: dist.scatter_object_list([None], [1, 2]), RuntimeError,
     "scatter_object_list: Incorrect input list size 2. Input list size should be 1, same as size of the process "
     "group."),
    (lambda t: dist.scatter_object_list([None], []), RuntimeError, "Incorrect input list size 0."),
    (lambda t: dist.scatter_object_list([None], None), ValueError, "source rank must provide non-None "
                                                                   "scatter_object_input_list"),
    (lambda t: dist.scatter_object_list([], [1]), ValueError, "Expected argument scatter_object_output_list to be a "
                                                              "list of size at least 1."),
    (lambda t: dist.scatter_object_list(None, [1]), ValueError, "Expected argument scatter_object_output_list"),
    (lambda t: dist.all_to_all([t], [t, t]), RuntimeError, "all_to_all: input tensor list size 2 does not match "
                                                           "world size 1"),
    (lambda t: dist.all_to_all([t, t], [t]), RuntimeError, "all_to_all: output tensor list size 2 does not match "
                                                           "world size 1"),
    (lambda t: dist.all_to_all([npusim.ones(5)], [t]), RuntimeError, "all_to_all: rank 0 sends 4 elements to rank "
                                                                     "0, but rank 0 expects 5 from rank 0"),
    (lambda t: dist.all_to_all(t, [t]), TypeError, "Expected parameter `output_tensor_list` of type "
                                                   "List[npusim.Tensor]"),
    (lambda t: dist.all_to_all([t], [3]), TypeError, "Expected parameter `input_tensor_list` of type "
                                                     "List[npusim.Tensor]"),
    (lambda t: dist.all_to_all([t.long()], [t]), ValueError, "Invalid usage of tensors with different dtypes"),
    (lambda t: dist.reduce_scatter(t, [t, t]), RuntimeError, "reduce_scatter: invalid input tensor list size, must "
                                                             "be world size (1), got 2"),
    (lambda t: dist.reduce_scatter(t, [npusim.ones(3)]), RuntimeError, "reduce_scatter: invalid tensor size at index "
                                                                       "0 (expected (4,), got (3,))"),
    (lambda t: dist.reduce_scatter(t, [t], op=dist.ReduceOp.BOR), ValueError,
     "reduce_scatter does not support <RedOpType.BOR: 6> on floating-point tensors"),
    (lambda t: dist.reduce_scatter(t, [t], op="sum"), TypeError, "op must be a npusim.distributed.ReduceOp"),
    (lambda t: dist.reduce_scatter([t], [t]), TypeError, "Expected parameter `output` of type npusim.Tensor"),
    (lambda t: dist.reduce_scatter(t, [t.long()]), ValueError, "Invalid usage of tensors with different dtypes"),
    (lambda t: dist.P2POp(dist.send, t, 0), ValueError, "Invalid ``op``. Expected ``op`` to be of type "
                                                        "``npusim.distributed.isend`` or "
                                                        "``npusim.distributed.irecv``."),
    (lambda t: dist.P2POp(dist.isend, "t", 0), TypeError, "Expected parameter `tensor` of type npusim.Tensor"),
    (lambda t: dist.P2POp(dist.isend, t), ValueError, "Must specify global_rank or group_rank"),
    (lambda t: dist.P2POp(dist.irecv, t, 0, group_peer=0), ValueError, "Can't specify both group_rank and "
                                                                       "global_rank"),
    (lambda t: dist.P2POp(dist.isend, t, 2), ValueError, "Global rank 2 is not part of group"),
    (lambda t: dist.batch_isend_irecv([]), IndexError, "list index out of range"),
    (lambda t: dist.batch_isend_irecv([dist.isend]), ValueError, "Invalid ``p2p_op_list``. Each op is expected to "
                                                                 "to be of type ``npusim.distributed.P2POp``."),
    (lambda t: dist.batch_isend_irecv([dist.P2POp(dist.isend, t, 0),
                                       dist.P2POp(dist.irecv, t, 0, group=dist.new_group([0]))]),
     ValueError, "All ops need to use the same group."),
    (lambda t: dist.monitored_barrier(timeout=5), TypeError, "Expected timeout argument to be of type "
                                                             "datetime.timedelta, got 5"),
    (lambda t: dist.monitored_barrier(group="world"), TypeError, "group must be a npusim.distributed.ProcessGroup"),
])
def test_bad_arguments_raise(loopback, call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call(npusim.ones(4))


def test_bad_gather_object_list_leaves_the_group_usable(loopback):
    with pytest.raises(ValueError):
        dist.gather_object(1, None)
    out = [None]
    dist.gather_object(2, out)
    assert out == [2]


@pytest.mark.oracle
def test_bad_argument_messages_match_torch(loopback, torch):
    import torch.distributed as tdist
    tdist.init_process_group("gloo", store=tdist.HashStore(), rank=0, world_size=1)
    try:
        t, tt = npusim.ones(4), torch.ones(4)
        same_text = [
            (lambda: dist.gather_object(1, None), lambda: tdist.gather_object(1, None)),
            (lambda: dist.scatter_object_list([], [1]), lambda: tdist.scatter_object_list([], [1])),
            (lambda: dist.scatter_object_list([None], None), lambda: tdist.scatter_object_list([None], None)),
            (lambda: dist.P2POp(dist.broadcast, t, 0), lambda: tdist.P2POp(tdist.broadcast, tt, 0)),
            (lambda: dist.P2POp(dist.isend, 1, 0), lambda: tdist.P2POp(tdist.isend, 1, 0)),
            (lambda: dist.batch_isend_irecv([]), lambda: tdist.batch_isend_irecv([])),
            (lambda: dist.batch_isend_irecv([1]), lambda: tdist.batch_isend_irecv([1])),
            (lambda: dist.monitored_barrier(timeout=5), lambda: tdist.monitored_barrier(timeout=5)),
        ]
        # torch's backend prefixes these with its own name, and says less about the sizes
        same_core = [
            (lambda: dist.all_to_all([t], [t, t]), lambda: tdist.all_to_all([tt], [tt, tt]),
             "input tensor list size 2 does not match world size 1"),
            (lambda: dist.reduce_scatter(t, [t, t]), lambda: tdist.reduce_scatter(tt, [tt, tt]),
             "invalid input tensor list size, must be world size"),
        ]
        for ours, theirs, *core in same_text + same_core:
            with pytest.raises(Exception) as a:
                ours()
            with pytest.raises(Exception) as b:
                theirs()
            assert type(a.value) is type(b.value), (a.value, b.value)
            if core:
                assert core[0] in str(a.value) and core[0] in str(b.value), (a.value, b.value)
            else:
                mine = str(a.value).replace("npusim.distributed", "torch.distributed").replace("npusim.", "torch.")
                assert mine == str(b.value), (a.value, b.value)
        out, tout = [None, None], [None, None]
        dist.gather_object("o", out)
        tdist.gather_object("o", tout)
        assert out == tout == ["o", None]
    finally:
        tdist.destroy_process_group()
