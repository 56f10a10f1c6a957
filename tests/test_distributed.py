"""npusim.distributed: every collective across 2 and 4 ranks (real processes over MPI, loopback only), a rank
that leaves, hangs or crashes, the launcher, the backend registry, and the one-process paths.

The multi-rank jobs start together once per module (they spend most of their time starting Python) and each
test reads its lines from their output. Without mpi4py those tests skip; the rest still run.
"""
from __future__ import annotations

import importlib.util
import re
import time
import warnings
from datetime import timedelta

import numpy as np
import pytest

import npusim
import npusim.distributed as dist
from conftest import host, loopback_group_of_one
from distributed_scripts.harness import (
    Job, LoopbackBackend, check_lines, launcher_command, mpiexec_command, register_loopback,
)
from npusim.distributed import process_group, run

HAS_MPI = importlib.util.find_spec("mpi4py") is not None
needs_mpi = pytest.mark.skipif(not HAS_MPI, reason="mpi4py and an MPI library are not installed "
                                                   "(pip install 'npusim[distributed]')")

COLLECTIVE_CHECKS = ["all_reduce_ops", "all_reduce_dtypes", "all_reduce_layouts", "all_reduce_async", "broadcast",
                     "reduce", "all_gather", "reduce_scatter", "gather_scatter", "all_to_all", "point_to_point",
                     "point_to_point_mismatch", "objects", "groups", "mismatches", "bad_arguments",
                     "all_to_all_agreement", "barrier"]
FAILURE_TIMEOUT = 3


@pytest.fixture(scope="module")
def jobs():
    if not HAS_MPI:
        pytest.skip("mpi4py and an MPI library are not installed (pip install 'npusim[distributed]')")
    started = {
        "collectives-2": Job(launcher_command(2, "collectives_check.py"), 120),
        "collectives-4": Job(mpiexec_command(4, "collectives_check.py"), 120),
        **{f"{mode}-{device}": Job(mpiexec_command(2, "failure_check.py", mode, FAILURE_TIMEOUT, device), 90)
           for mode in ("early_exit", "hang") for device in ("cpu", "npu")},
        "crash": Job(launcher_command(2, "failure_check.py", "crash", 60), 90),
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
@pytest.mark.parametrize("ranks", [2, 4])
def test_every_rank_finishes(jobs, ranks):
    code, out, err, _ = jobs[f"collectives-{ranks}"].result()
    assert code == 0, err
    assert sorted(re.findall(r"^\[(\d+)\] DONE$", out, re.MULTILINE)) == [str(r) for r in range(ranks)]
    assert "FAIL" not in out


@needs_mpi
@pytest.mark.parametrize("check", COLLECTIVE_CHECKS)
@pytest.mark.parametrize("ranks", [2, 4])
def test_collective_matches_numpy(jobs, ranks, device, check):
    results = check_lines(jobs[f"collectives-{ranks}"].result()[1])
    for rank in range(ranks):
        assert results.get((rank, device, check)) == "PASS", results.get((rank, device, check), "no result line")


@needs_mpi
@pytest.mark.parametrize("ranks", [2, 4])
def test_init_checks_world_size_and_rank_against_mpi(jobs, ranks):
    results = check_lines(jobs[f"collectives-{ranks}"].result()[1])
    assert all(results.get((r, "cpu", "init_arguments")) == "PASS" for r in range(ranks)), results


@needs_mpi
def test_importing_the_package_does_not_start_mpi(jobs):
    out = jobs["collectives-4"].result()[1]
    assert out.count("mpi4py imported by `import npusim.distributed`: False") == 4


@needs_mpi
def test_launcher_sets_torchrun_environment(jobs):
    out = jobs["collectives-2"].result()[1]
    for rank in range(2):
        assert f"[{rank}] ENV RANK={rank} WORLD_SIZE=2 LOCAL_RANK={rank}" in out


@needs_mpi
@pytest.mark.parametrize("mode", ["early_exit", "hang"])
def test_missing_rank_gives_clear_error_within_timeout(jobs, mode, device):
    code, out, err, wall = jobs[f"{mode}-{device}"].result()
    m = re.search(r"\[0\] FAILED_AFTER ([0-9.]+) DistBackendError: all_reduce on rank 0 of group 0 \(ranks 0..1\) "
                  r"timed out after 3 s waiting for the other ranks: a rank may have exited", out)
    assert m, out + err
    # at the timeout, not before; the upper margin absorbs a loaded CI machine (no hang is what matters)
    assert FAILURE_TIMEOUT - 0.1 <= float(m.group(1)) < FAILURE_TIMEOUT + 30
    # the group is aborted: the next call fails at once, and the job ends instead of waiting for the missing rank
    m = re.search(r"\[0\] THEN_FAILED_AFTER ([0-9.]+) DistBackendError: .*was aborted after an earlier failure", out)
    assert m and float(m.group(1)) < 5, out
    assert code != 0
    assert "ending the MPI job" in err
    assert wall < 60     # the hanging rank sleeps 120 s: it was stopped


@needs_mpi
def test_crashed_rank_stops_the_job_at_once(jobs):
    code, out, err, wall = jobs["crash"].result()
    assert code != 0
    assert "npusim.distributed.run: the job failed with exit status" in err
    assert "UNEXPECTED" not in out
    assert wall < 45     # far below the ranks' 60 s timeout: the launcher stopped them


# --- the launcher (no processes) ------------------------------------------------------------------------------
def test_launcher_builds_mpiexec_command(capsys, monkeypatch):
    monkeypatch.setenv("NPUSIM_MPIEXEC", "/somewhere/bin/mpiexec")
    assert run.main(["--nproc-per-node", "2", "--nnodes", "3", "--hostfile", "hosts.txt", "--dry-run",
                     "train.py", "--lr", "0.1"]) == 0
    cmd = capsys.readouterr().out.split()
    assert cmd[:7] == ["/somewhere/bin/mpiexec", "-n", "6", "-ppn", "2", "-f", "hosts.txt"]
    assert cmd[-5:] == ["npusim.distributed.run", "--run-as-rank", "train.py", "--lr", "0.1"]
    run.main(["--dry-run", "--mpiexec", "/opt/mpi/bin/mpiexec", "-m", "pkg.train"])
    cmd = capsys.readouterr().out.split()
    assert cmd[:3] == ["/opt/mpi/bin/mpiexec", "-n", "1"] and cmd[-3:] == ["--run-as-rank", "-m", "pkg.train"]


def test_launcher_rejects_bad_counts():
    with pytest.raises(SystemExit, match="--nproc-per-node and --nnodes must be at least 1"):
        run.main(["--nproc-per-node", "0", "--dry-run", "train.py"])
    with pytest.raises(SystemExit, match="--nnodes > 1 needs the machines: pass --hostfile FILE or --hosts"):
        run.main(["--nnodes", "2", "--dry-run", "train.py"])


# --- before init ----------------------------------------------------------------------------------------------
NOT_INITIALIZED = "Default process group has not been initialized, please make sure to call init_process_group."


@pytest.mark.parametrize("call", [
    lambda: dist.all_reduce(npusim.ones(2)), lambda: dist.broadcast(npusim.ones(2), src=0), dist.get_rank,
    dist.get_world_size, dist.barrier, lambda: dist.new_group([0]), lambda: dist.all_gather_object([None], 1),
])
def test_collective_on_uninitialised_group_raises(call):
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match=re.escape(NOT_INITIALIZED)):
        call()


def test_destroy_before_init_raises():
    with pytest.raises(AssertionError, match="Process group cannot be None"):
        dist.destroy_process_group()


@pytest.mark.oracle
def test_uninitialised_errors_match_torch(torch):
    import torch.distributed as tdist
    for ours, theirs in ((lambda: dist.all_reduce(npusim.ones(2)), lambda: tdist.all_reduce(torch.ones(2))),
                         (dist.get_rank, tdist.get_rank)):
        with pytest.raises(ValueError) as a:
            ours()
        with pytest.raises(ValueError) as b:
            theirs()
        assert str(a.value) == str(b.value)


def test_init_without_mpi4py_says_how_to_install(monkeypatch):
    register_loopback()
    monkeypatch.setattr(process_group, "mpi_available", lambda: False)
    with pytest.raises(RuntimeError, match=re.escape("pip install 'npusim[distributed]'")):
        dist.init_process_group("mpi")
    with pytest.raises(RuntimeError, match="needs mpi4py"):
        dist.init_process_group("loopback", world_size=2)
    assert not dist.is_initialized()


@pytest.mark.parametrize("kwargs, error, message", [
    ({"timeout": 30}, TypeError, "Expected timeout argument to be of type datetime.timedelta, got 30"),
    ({"init_method": "tcp://10.0.0.1:23456"}, ValueError, "ranks rendezvous through the MPI launcher"),
    ({"backend": "nosuchbackend"}, ValueError, "Invalid backend: 'nosuchbackend'"),
    ({"backend": "cpu:nccl"}, ValueError, "backend 'nccl' does not support device type 'cpu'"),
    ({"backend": "cpu:mpi,npu"}, ValueError, "expected pairs such as 'cpu:mpi,npu:nccl'"),
    ({"backend": 3}, TypeError, "backend must be a string"),
])
def test_init_rejects_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=re.escape(message)):
        dist.init_process_group(**kwargs)
    assert not dist.is_initialized()


# --- the backend registry ---------------------------------------------------------------------------------------
def test_backend_names():
    assert dist.Backend("MPI") == "mpi" and dist.Backend("nccl") == dist.Backend.NCCL
    assert dist.Backend("SomethingNew") == "somethingnew"
    assert dist.Backend.backend_capability["mpi"] == ["cpu", "npu"]
    assert dist.Backend.backend_capability["nccl"] == ["npu"]
    assert dist.Backend.default_device_backend_map["cpu"] == "mpi"
    with pytest.raises(ValueError, match="Backend constructor parameter must be string-ish"):
        dist.Backend(3)


@pytest.mark.oracle
def test_backend_and_reduce_op_match_torch(torch):
    import torch.distributed as tdist
    assert dist.Backend("MPI") == tdist.Backend("MPI")
    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"):
        assert repr(getattr(dist.ReduceOp, name)) == repr(getattr(tdist.ReduceOp, name))
        assert int(getattr(dist.ReduceOp, name)) == int(getattr(tdist.ReduceOp, name))


def test_register_backend_without_devices_warns_and_assumes_cpu_and_npu():
    with pytest.warns(UserWarning, match="Device capability of probe_backend unspecified"):
        dist.Backend.register_backend("probe_backend", LoopbackBackend)
    assert dist.Backend.PROBE_BACKEND == "probe_backend"
    assert dist.Backend.backend_capability["probe_backend"] == ["cpu", "npu"]
    assert "probe_backend" in dist.Backend.backend_list


def test_factory_must_return_a_backend():
    dist.Backend.register_backend("not_a_backend", lambda *args: object(), devices=["cpu"])
    with pytest.raises(TypeError, match="returned object, not a npusim.distributed.CollectiveBackend"):
        dist.init_process_group("not_a_backend")
    assert not dist.is_initialized()


# --- a group of one, through a registered backend ----------------------------------------------------------------
def test_registered_backend_serves_collectives(loopback, device):
    assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
    assert dist.get_backend() == "loopback"
    t = npusim.tensor([1.0, 2.0], device=device)
    version = t._version
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    # AVG reaches the backend as SUM (then the layer divides by the group size)
    assert loopback.calls[-1][0] == "all_reduce" and loopback.last_op == dist.ReduceOp.SUM
    assert t._version > version
    np.testing.assert_array_equal(host(t), [1.0, 2.0])
    flags = npusim.tensor([True, False], device=device)
    dist.all_reduce(flags)
    assert loopback.calls[-1][1] == (np.dtype(np.uint8),) and loopback.last_op == dist.ReduceOp.MAX
    outputs = [npusim.zeros(2, device=device)]
    dist.all_gather(outputs, npusim.tensor([3.0, 4.0], device=device))
    np.testing.assert_array_equal(host(outputs[0]), [3.0, 4.0])
    box = npusim.zeros(3, dtype=npusim.int64, device=device)
    dist.isend(npusim.arange(3, device=device), dst=0, tag=5).wait()
    work = dist.irecv(box, tag=5)
    assert work.wait() and work.source_rank() == 0
    np.testing.assert_array_equal(host(box), [0, 1, 2])
    objs = [None]
    dist.all_gather_object(objs, {"a": 1})
    assert objs == [{"a": 1}]


def test_collectives_run_on_the_tensors_device_not_the_current_one(loopback):
    # ranks of one host use npu:rank without making it current; on a GPU an array op on a device that is not
    # current fails, so each collective runs on its tensors' device, completion included
    assert npusim.npu.device_count() >= 2 and npusim.npu.current_device() == 0
    t = npusim.tensor([1.0, 3.0], device="npu:1")
    dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True).wait()
    outputs = [npusim.zeros(2, 2, device="npu:1").t()]     # not contiguous: written back on completion
    dist.all_gather(outputs, npusim.tensor([[5.0, 6.0], [7.0, 8.0]], device="npu:1"))
    box = npusim.zeros(2, device="npu:1")
    dist.isend(npusim.tensor([9.0, 10.0], device="npu:1"), dst=0, tag=1).wait()
    dist.irecv(box, tag=1).wait()
    assert npusim.npu.current_device() == 0
    assert all(x.device == npusim.device("npu:1") for x in (t, outputs[0], box))
    np.testing.assert_array_equal(host(t), [1.0, 3.0])
    np.testing.assert_array_equal(host(outputs[0]), [[5.0, 6.0], [7.0, 8.0]])
    np.testing.assert_array_equal(host(box), [9.0, 10.0])


def test_work_api(loopback):
    t = npusim.ones(3)
    work = dist.all_reduce(t, async_op=True)
    assert isinstance(work, dist.Work)
    assert work.is_completed() and work.wait() and work.is_success() and work.exception() is None
    assert work.result() == [t]
    assert "completed" in repr(work)
    assert dist.barrier(async_op=True).is_completed()


def test_timed_out_work_aborts_the_group(loopback):
    loopback.stuck = True
    start = time.monotonic()
    with pytest.raises(dist.DistBackendError, match=r"all_reduce timed out after 2 s waiting for the other ranks"):
        dist.all_reduce(npusim.ones(2))
    assert 1.9 < time.monotonic() - start < 5
    loopback.stuck = False
    start = time.monotonic()
    with pytest.raises(dist.DistBackendError, match="was aborted after an earlier failure: all_reduce timed out"):
        dist.broadcast(npusim.ones(2), src=0)
    assert time.monotonic() - start < 0.5


def test_work_wait_takes_its_own_timeout(loopback):
    loopback.stuck = True
    work = dist.all_reduce(npusim.ones(2), async_op=True)
    assert not work.is_completed()
    start = time.monotonic()
    with pytest.raises(dist.DistBackendError, match="timed out after 0.2 s"):
        work.wait(timeout=timedelta(seconds=0.2))
    assert time.monotonic() - start < 1.5
    assert isinstance(work.exception(), dist.DistBackendError) and not work.is_success()


def test_group_without_backend_for_device(device):
    register_loopback()
    dist.init_process_group("cpu:loopback")
    try:
        if device == "npu":
            with pytest.raises(RuntimeError, match="No backend type associated with device type npu"):
                dist.all_reduce(npusim.ones(2, device="npu"))
        else:
            dist.all_reduce(npusim.ones(2))
        assert dist.get_backend() == "loopback"
    finally:
        dist.destroy_process_group()


def test_init_twice_raises(loopback):
    with pytest.raises(ValueError, match="trying to initialize the default process group twice!"):
        dist.init_process_group("loopback")


@pytest.mark.parametrize("call, error, message", [
    (lambda t: dist.all_reduce(3), TypeError, "Expected parameter `tensor` of type npusim.Tensor\n             but "
                                              "got <class 'int'> instead."),
    (lambda t: dist.all_gather(t, t), TypeError, "Expected parameter `tensor_list` of type List[npusim.Tensor]"),
    (lambda t: dist.all_reduce(t, op="max"), TypeError, "op must be a npusim.distributed.ReduceOp"),
    (lambda t: dist.all_reduce(t, op=dist.ReduceOp.PREMUL_SUM), ValueError, "does not support"),
    (lambda t: dist.all_reduce(t, op=dist.ReduceOp.BOR), ValueError,
     "all_reduce does not support <RedOpType.BOR: 6> on floating-point tensors"),
    (lambda t: dist.all_reduce(t.bool(), op=dist.ReduceOp.AVG), ValueError, "does not support <RedOpType.AVG: 1> "
                                                                            "on bool tensors"),
    (lambda t: dist.send(t, dst=0), ValueError, "Invalid destination rank: destination rank should not be the same "
                                                "as the rank of the current process."),
    (lambda t: dist.broadcast(t), ValueError, "Must specify global_rank or group_rank"),
    (lambda t: dist.broadcast(t, src=0, group_src=0), ValueError, "Can't specify both group_rank and global_rank"),
    (lambda t: dist.reduce(t, dst=3), ValueError, "Global rank 3 is not part of group"),
    (lambda t: dist.all_gather([t, t], t), RuntimeError, "all_gather: invalid output tensor list (expected length "
                                                          "1, got 2)"),
    (lambda t: dist.all_gather([npusim.ones(5)], t), RuntimeError, "all_gather: invalid tensor size at index 0 "
                                                                   "(expected (4,), got (5,))"),
    (lambda t: dist.all_gather_into_tensor(npusim.ones(4, dtype=npusim.int64), t), ValueError,
     "Invalid usage of tensors with different dtypesFound npusim.int64 and  npusim.float32"),
    (lambda t: dist.reduce_scatter_tensor(npusim.ones(3), t), RuntimeError,
     "reduce_scatter_tensor: input tensor size must be equal to world_size (1) times output tensor size (3), got 4"),
    (lambda t: dist.all_to_all_single(t, t, [3], [4]), RuntimeError, "Split sizes doesn't match total dim 0 size"),
    (lambda t: dist.all_to_all_single(t, t, [2, 2], [4]), RuntimeError,
     "output_split_sizes has 2 entries, the group has 1 ranks"),
    (lambda t: dist.all_to_all_single(npusim.ones(()), npusim.ones(())), RuntimeError,
     "the input tensor must have at least one dimension"),
    (lambda t: dist.gather(t, [], dst=0), ValueError, "Argument ``gather_list`` must be specified on destination "
                                                      "rank."),
    (lambda t: dist.gather(t, [t, t], dst=0), RuntimeError, "gather: Incorrect output list size 2. Output list size "
                                                           "should be 1, same as size of the process group."),
    (lambda t: dist.scatter(t, None, src=0), ValueError, "Argument ``scatter_list`` must be specified on source "
                                                         "rank."),
    (lambda t: dist.new_group([2]), ValueError, "Rank 2 is out of range. Valid ranks are 0 to 0 (world_size=1)"),
    (lambda t: dist.new_group([0, 2]), ValueError, "the new group's world size should be less or equal to the "
                                                   "world size set by init_process_group"),
    (lambda t: dist.new_group([0, 0]), ValueError, "ranks list must not contain duplicate entries, got [0, 0]"),
    (lambda t: dist.all_gather_object([], 1), ValueError, "object_list has 0 entries, but the group has 1 ranks"),
    (lambda t: dist.all_reduce(t, group="world"), TypeError, "group must be a npusim.distributed.ProcessGroup"),
])
def test_bad_arguments_raise(loopback, call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call(npusim.ones(4))


@pytest.mark.oracle
def test_bad_argument_messages_match_torch(loopback, torch):
    import torch.distributed as tdist
    tdist.init_process_group("gloo", store=tdist.HashStore(), rank=0, world_size=1)
    try:
        t, tt = npusim.ones(4), torch.ones(4)
        pairs = [
            (lambda: dist.send(t, dst=0), lambda: tdist.send(tt, dst=0)),
            (lambda: dist.broadcast(t), lambda: tdist.broadcast(tt)),
            (lambda: dist.new_group([0, 0]), lambda: tdist.new_group([0, 0])),
            (lambda: dist.new_group([0, 2]), lambda: tdist.new_group([0, 2])),
            (lambda: dist.new_group([3]), lambda: tdist.new_group([3])),
            (lambda: dist.gather(t, [], dst=0), lambda: tdist.gather(tt, [], dst=0)),
            (lambda: dist.scatter(t, None, src=0), lambda: tdist.scatter(tt, None, src=0)),
            (lambda: dist.all_to_all_single(t, t, [3], [4]), lambda: tdist.all_to_all_single(tt, tt, [3], [4])),
            (lambda: dist.init_process_group("loopback"), lambda: tdist.init_process_group("gloo")),
        ]
        for ours, theirs in pairs:
            with pytest.raises(Exception) as a:
                ours()
            with pytest.raises(Exception) as b:
                theirs()
            assert type(a.value) is type(b.value), (a.value, b.value)
            assert str(a.value).split(" of group ")[0] == str(b.value).split(" of group ")[0].replace("torch.", "")
    finally:
        tdist.destroy_process_group()


def test_subgroup_of_one_and_group_queries(loopback):
    g = dist.new_group([0])
    assert dist.get_rank(g) == 0 and dist.get_world_size(g) == 1
    assert dist.get_process_group_ranks(g) == [0]
    assert dist.get_global_rank(g, 0) == 0 and dist.get_group_rank(g, 0) == 0
    t = npusim.ones(2)
    dist.all_reduce(t, group=g)
    dist.destroy_process_group(g)
    with pytest.raises(ValueError, match="has been destroyed"):
        dist.all_reduce(t, group=g)
    assert dist.group.WORLD is dist.GroupMember.WORLD is not None


def test_non_member_group_warns_and_returns(loopback):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert dist.all_reduce(npusim.ones(2), group=dist.GroupMember.NON_GROUP_MEMBER) is None
        assert dist.get_rank(dist.GroupMember.NON_GROUP_MEMBER) == -1
    assert "Running all_reduce on global rank 0 which does not belong to the given group." in str(caught[0].message)


def test_destroy_ends_every_group(loopback):
    g = dist.new_group([0])
    dist.destroy_process_group()
    assert not dist.is_initialized() and dist.GroupMember.WORLD is None
    with pytest.raises(ValueError, match="has been destroyed"):
        dist.get_rank(g)


# --- NCCL (a GPU was lent) -------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.real_gpu
def test_nccl_group_of_one_on_the_gpu():
    from npusim.backend.distributed.nccl import nccl_usable
    assert nccl_usable()
    dist.init_process_group("nccl", timeout=timedelta(seconds=60))
    try:
        assert dist.get_backend() == "nccl"
        x = npusim.arange(6, dtype=npusim.float32, device="npu").reshape(2, 3)
        dist.all_reduce(x, op=dist.ReduceOp.AVG)
        np.testing.assert_array_equal(host(x), np.arange(6).reshape(2, 3))
        flags = npusim.tensor([True, False], device="npu")
        dist.all_reduce(flags)
        np.testing.assert_array_equal(host(flags), [True, False])
        dist.broadcast(x, src=0)
        out = npusim.zeros(6, device="npu")
        dist.all_gather_into_tensor(out, x)
        np.testing.assert_array_equal(host(out), np.arange(6))
        part = npusim.zeros(6, device="npu")
        dist.reduce_scatter_tensor(part, out)
        np.testing.assert_array_equal(host(part), np.arange(6))
        rows = npusim.zeros(2, 3, device="npu")
        dist.all_to_all_single(rows, x)
        np.testing.assert_array_equal(host(rows), host(x))
        gathered = [npusim.zeros(2, 3, device="npu")]
        dist.gather(x, gathered, dst=0)
        np.testing.assert_array_equal(host(gathered[0]), host(x))
        work = dist.all_reduce(x, async_op=True)
        assert work.wait() and work.is_completed()
        dist.barrier()
        with pytest.raises(RuntimeError, match="No backend type associated with device type cpu"):
            dist.all_reduce(npusim.ones(2))
    finally:
        dist.destroy_process_group()


@pytest.mark.gpu
@pytest.mark.real_gpu
def test_default_backend_picks_nccl_for_gpu_tensors():
    from npusim.distributed.backend import parse_backend_config
    assert parse_backend_config(None) == {"cpu": "mpi", "npu": "nccl"}
