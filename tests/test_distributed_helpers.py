"""npusim.distributed: init_process_group's store= and init_method URLs, send/recv_object_list, the coalesced
collectives, new_subgroups*, split_group, the debug level, breakpoint, the options holders with the ProcessGroup
methods that take them, DeviceMesh, and the small queries (is_backend_available, get_pg_count, ...).

One 2-rank job (real processes over MPI) covers what needs several ranks; each test reads its lines. Without
mpi4py those tests skip; the one-process tests still run.
"""
from __future__ import annotations

import importlib.util
import inspect
import logging
import re
from datetime import timedelta

import numpy as np
import pytest

import npusim
import npusim.distributed as dist
from conftest import host, loopback_group_of_one
from distributed_scripts.harness import Job, check_lines, mpiexec_command, register_loopback
from npusim.distributed import debug, debugger

HAS_MPI = importlib.util.find_spec("mpi4py") is not None
needs_mpi = pytest.mark.skipif(not HAS_MPI, reason="mpi4py and an MPI library are not installed "
                                                   "(pip install 'npusim[distributed]')")

INIT_CHECKS = ["init_tcp_url", "init_file_url", "init_given_store", "init_unshared_store", "init_wrong_rank_in_url",
               "queries", "breakpoint"]
DEVICE_CHECKS = ["object_p2p", "coalesced", "single", "subgroups", "debug_detail", "process_group_methods", "device_mesh"]
RANKS = 2


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    if not HAS_MPI:
        pytest.skip("mpi4py and an MPI library are not installed (pip install 'npusim[distributed]')")
    started = Job(mpiexec_command(RANKS, "helpers_check.py", tmp_path_factory.mktemp("stores")), 150)
    yield started
    started.kill()


@pytest.fixture
def loopback():
    """A default group of one process on a backend registered through ``Backend.register_backend``."""
    with loopback_group_of_one(5) as backend:
        yield backend


@pytest.fixture
def debug_level():
    """Leaves the debug level as it found it (unread: the environment's at the next use)."""
    yield
    debug._level = None


# --- many ranks ---------------------------------------------------------------------------------------------
@needs_mpi
def test_every_rank_finishes(job):
    code, out, err, _ = job.result()
    assert code == 0, out + err
    assert sorted(re.findall(r"^\[(\d+)\] DONE$", out, re.MULTILINE)) == [str(r) for r in range(RANKS)]
    assert "FAIL" not in out, out


@needs_mpi
@pytest.mark.parametrize("check", INIT_CHECKS)
def test_across_ranks(job, check):
    results = check_lines(job.result()[1])
    for rank in range(RANKS):
        assert results.get((rank, "cpu", check)) == "PASS", results.get((rank, "cpu", check), "no result line")


@needs_mpi
@pytest.mark.parametrize("check", DEVICE_CHECKS)
def test_across_ranks_on_each_device(job, device, check):
    results = check_lines(job.result()[1])
    for rank in range(RANKS):
        assert results.get((rank, device, check)) == "PASS", results.get((rank, device, check), "no result line")


# --- queries ---------------------------------------------------------------------------------------------------
def test_backend_availability():
    assert dist.is_backend_available("mpi") == dist.is_mpi_available()
    assert dist.is_backend_available("MPI") == dist.is_mpi_available()
    assert dist.is_backend_available("nccl") == dist.is_nccl_available()
    assert not dist.is_gloo_available() and not dist.is_backend_available("gloo")
    assert not dist.is_backend_available("nosuchbackend")
    assert dist.is_backend_available("cpu:mpi") == dist.is_mpi_available()
    assert not dist.is_backend_available("cpu:mpi,npu:gloo")
    register_loopback()
    assert dist.is_backend_available("loopback")
    dist.Backend.availability["loopback"] = lambda: False       # a plugin that says it cannot run here
    try:
        assert not dist.is_backend_available("loopback")
    finally:
        del dist.Backend.availability["loopback"]


def test_torchelastic_launched(monkeypatch):
    monkeypatch.delenv("TORCHELASTIC_RUN_ID", raising=False)
    assert dist.is_torchelastic_launched() is False
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "job-7")
    assert dist.is_torchelastic_launched() is True


def test_default_backend_for_device():
    assert dist.get_default_backend_for_device("cpu") == "mpi"
    assert dist.get_default_backend_for_device(npusim.device("cpu")) == "mpi"
    assert dist.get_default_backend_for_device("npu:1") == "mpi"
    with pytest.raises(ValueError, match="Default backend not registered for device : meta"):
        dist.get_default_backend_for_device("meta")


def test_backend_config():
    assert repr(dist.BackendConfig("mpi")) == "cpu:mpi,npu:mpi"
    assert dist.BackendConfig("cpu:mpi").get_device_backend_map() == {"cpu": "mpi"}
    assert str(dist.BackendConfig(dist.Backend.UNDEFINED)).startswith("cpu:mpi")


def test_supports_complex():
    assert dist.supports_complex(dist.ReduceOp.SUM) and dist.supports_complex(dist.ReduceOp.AVG)
    assert dist.supports_complex(dist.ReduceOp(dist.ReduceOp.SUM))
    for op in ("MAX", "MIN", "PRODUCT", "BAND", "BOR", "BXOR"):
        assert not dist.supports_complex(getattr(dist.ReduceOp, op))
        assert not dist.supports_complex(dist.ReduceOp(getattr(dist.ReduceOp, op)))


def test_pg_count_and_backend_config(loopback):
    assert dist.get_pg_count() == 1
    assert dist.get_backend_config() == "cpu:loopback,npu:loopback"
    sub = dist.new_group([0])
    assert dist.get_pg_count() == 2 and dist.get_backend_config(sub) == "cpu:loopback,npu:loopback"
    assert dist.get_backend_config(dist.new_group([0], backend="cpu:loopback")) == "cpu:loopback"
    with pytest.raises(ValueError, match="Invalid process group specified"):
        dist.get_backend_config(dist.GroupMember.NON_GROUP_MEMBER)
    dist.destroy_process_group()
    assert dist.get_pg_count() == 0


def test_uninitialised_queries_raise():
    assert dist.get_pg_count() == 0
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_backend_config()


# --- debug level -------------------------------------------------------------------------------------------------
def test_debug_level_from_environment(monkeypatch, debug_level):
    assert [level.name for level in dist.DebugLevel] == ["OFF", "INFO", "DETAIL"]
    assert int(dist.DebugLevel.DETAIL) == 2 and dist.DebugLevel(1) is dist.DebugLevel.INFO
    monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "detail")
    debug._level = None
    assert dist.get_debug_level() is dist.DebugLevel.DETAIL
    monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "INFO")
    dist.set_debug_level_from_env()
    assert dist.get_debug_level() is dist.DebugLevel.INFO
    monkeypatch.delenv("TORCH_DISTRIBUTED_DEBUG")
    dist.set_debug_level_from_env()
    assert dist.get_debug_level() is dist.DebugLevel.OFF
    monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "LOUD")
    with pytest.raises(ValueError, match="The value of TORCH_DISTRIBUTED_DEBUG must be OFF, INFO, or DETAIL."):
        dist.set_debug_level_from_env()
    dist.set_debug_level(dist.DebugLevel.INFO)
    assert dist.get_debug_level() is dist.DebugLevel.INFO
    with pytest.raises(TypeError):
        dist.set_debug_level(2)


def test_detail_logs_each_agreed_collective(loopback, debug_level, caplog, device):
    dist.set_debug_level(dist.DebugLevel.OFF)
    with caplog.at_level(logging.INFO, logger="npusim.distributed"):
        dist.all_reduce(npusim.ones(2, device=device))
        assert not caplog.records
        dist.set_debug_level(dist.DebugLevel.DETAIL)
        dist.broadcast(npusim.ones(2, 3, device=device), src=0)
    assert [r.getMessage() for r in caplog.records] == [
        f"broadcast on rank 0 of group 0 (rank 0): broadcast(src=0, {device} float32[2, 3])"]


# --- breakpoint ---------------------------------------------------------------------------------------------------
def test_breakpoint_stops_on_the_chosen_rank_only(loopback, monkeypatch):
    stops = []

    class FakePdb:
        def message(self, text):
            stops.append(text)

        def set_trace(self):
            stops.append("set_trace")

    monkeypatch.setattr(debugger, "_make_distributed_pdb", FakePdb)
    dist.breakpoint()
    assert stops[-1] == "set_trace"
    assert "Type 'up' to get to the frame that called dist.breakpoint(rank=0)" in stops[0]
    stops.clear()
    dist.breakpoint(rank=1)
    assert stops == []
    for _ in range(3):
        dist.breakpoint(skip=2)
    assert stops.count("set_trace") == 1


def test_distributed_pdb_reads_the_terminal():
    import pdb
    assert isinstance(debugger._make_distributed_pdb(), pdb.Pdb)


# --- init_process_group: store= and init_method ------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, error, message", [
    ({"store": dist.HashStore(), "init_method": "env://"}, AssertionError,
     "Cannot specify both init_method and store."),
    ({"store": dist.HashStore(), "rank": 0}, AssertionError, "world_size must be positive if using store"),
    ({"store": dist.HashStore(), "world_size": 1}, AssertionError, "rank must be non-negative if using store"),
    ({"init_method": "nosuch://x"}, RuntimeError, "No rendezvous handler for nosuch://"),
    ({"init_method": "tcp://10.0.0.1:23456"}, ValueError, "is not an address of this machine"),
    ({"init_method": "tcp://127.0.0.1:0?rank=3"}, ValueError, "says rank=3, but MPI gave this process rank 0"),
    ({"init_method": 5}, RuntimeError, "`url` must be a string"),
])
def test_init_rejects_bad_store_arguments(kwargs, error, message):
    register_loopback()
    with pytest.raises(error, match=re.escape(message)):
        dist.init_process_group("loopback", **kwargs)
    assert not dist.is_initialized()


def _check_group_store(kv):
    kv.set("greeting", "hello")
    assert kv.get("greeting") == b"hello" and kv.add("n", 2) == 2
    sub = dist.new_group([0])
    sub.get_group_store().set("k", b"v")
    assert kv.get(f"{sub.group_name}/k") == b"v"


@pytest.mark.parametrize("url", ["tcp://127.0.0.1:0", "file://{tmp}/store", "env://"])
def test_init_with_a_url_gives_the_group_a_store(url, tmp_path, monkeypatch):
    register_loopback()
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "0")
    dist.init_process_group("loopback", init_method=url.format(tmp=tmp_path), timeout=timedelta(seconds=10))
    try:
        kv = dist.group.WORLD.get_group_store()
        assert isinstance(kv, dist.PrefixStore)
        _check_group_store(kv)
        assert kv.underlying_store.get("default_pg/greeting") == b"hello"
    finally:
        dist.destroy_process_group()


def test_init_with_a_given_store(tmp_path):
    register_loopback()
    store = dist.FileStore(str(tmp_path / "given"), 1)
    dist.init_process_group("loopback", store=store, rank=0, world_size=1)
    try:
        assert dist.group.WORLD.get_group_store() is store
        _check_group_store(store)
    finally:
        dist.destroy_process_group()


def test_env_without_master_address_needs_no_store(monkeypatch):
    register_loopback()
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    dist.init_process_group("loopback", init_method="env://")
    try:
        with pytest.raises(RuntimeError, match="this process group has no key-value store"):
            dist.group.WORLD.get_group_store()
    finally:
        dist.destroy_process_group()


def test_custom_rendezvous_handler():
    register_loopback()
    shared = dist.HashStore()
    seen = []

    def handler(url, **kwargs):
        seen.append((url, sorted(kwargs)))
        yield shared, 0, 1

    if "probe" not in dist.url_rendezvous._rendezvous_handlers:
        dist.register_rendezvous_handler("probe", handler)
    with pytest.raises(RuntimeError, match=re.escape("Rendezvous handler for probe:// already registered")):
        dist.register_rendezvous_handler("probe", handler)
    dist.init_process_group("loopback", init_method="probe://somewhere")
    try:
        assert seen and seen[-1] == ("probe://somewhere?rank=0&world_size=1", ["timeout"])
        dist.group.WORLD.get_group_store().set("x", "1")
        assert shared.get("default_pg/x") == b"1"
    finally:
        dist.destroy_process_group()


def test_rendezvous_argument_checks():
    from npusim.distributed.url_rendezvous import rendezvous
    with pytest.raises(RuntimeError, match="`rank` must be an integer"):
        rendezvous("tcp://127.0.0.1:0", rank="0")
    with pytest.raises(AssertionError, match="has node-specific arguments"):
        rendezvous("tcp://127.0.0.1:0?rank=0", rank=0, world_size=1)
    with pytest.raises(ValueError, match="tcp:// rendezvous: port number missing"):
        next(rendezvous("tcp://127.0.0.1", rank=0, world_size=1))
    with pytest.raises(ValueError, match="file:// rendezvous: world size parameter missing"):
        next(dist.url_rendezvous._file_rendezvous_handler("file:///tmp/x?rank=0"))


# --- object p2p, coalesced, subgroups, ProcessGroup methods, DeviceMesh in a group of one ------------------------
def test_object_p2p_refuses_self(loopback):
    with pytest.raises(ValueError, match="Invalid destination rank: destination rank should not be the same"):
        dist.send_object_list([1], dst=0)
    with pytest.raises(ValueError, match="Invalid source rank: source rank should not be the same"):
        dist.recv_object_list([None], src=0)
    with pytest.raises(ValueError, match="Global rank 3 is not part of group"):
        dist.send_object_list([1], dst=3)


def test_coalesced_in_a_group_of_one(loopback, device):
    a, b = npusim.ones(2, 3, device=device), npusim.full((4,), 2.0, device=device)
    with pytest.warns(FutureWarning, match="all_reduce_coalesced` will be deprecated"):
        assert dist.all_reduce_coalesced([a, b], op=dist.ReduceOp.AVG) is None
    np.testing.assert_array_equal(host(a), np.ones((2, 3)))
    np.testing.assert_array_equal(host(b), np.full(4, 2.0))
    assert loopback.calls[-1][0] == "all_reduce"
    outputs = [[npusim.zeros(2, 3, device=device), npusim.zeros(4, device=device)]]
    with pytest.warns(FutureWarning, match="all_gather_coalesced` will be deprecated"):
        future = dist.all_gather_coalesced(outputs, [a, b], async_op=True)
    assert isinstance(future, npusim.futures.Future)
    future.wait()
    np.testing.assert_array_equal(host(outputs[0][0]), np.ones((2, 3)))
    np.testing.assert_array_equal(host(outputs[0][1]), np.full(4, 2.0))


@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("call, error, message", [
    (lambda t: dist.all_reduce_coalesced([t, 3]), TypeError,
     "Expected parameter `tensor` of type List[npusim.Tensor]"),
    (lambda t: dist.all_reduce_coalesced([t, t.long()]), ValueError,
     "Invalid usage of tensors with different dtypes"),
    (lambda t: dist.all_reduce_coalesced([t], op=dist.ReduceOp.BOR), ValueError, "on floating-point tensors"),
    (lambda t: dist.all_gather_coalesced((t,), [t]), TypeError, "output_tensor_lists should be a list"),
    (lambda t: dist.all_gather_coalesced([[t], [t]], [t]), RuntimeError,
     "output lists should be equal to world size"),
    (lambda t: dist.all_gather_coalesced([[npusim.ones(5)]], [t]), RuntimeError,
     "output_tensor_lists[0] must hold tensors of the sizes of input_tensor_list"),
    (lambda t: dist.all_gather_coalesced([[t]], t), TypeError, "Expected parameter `input_tensor_list`"),
])
def test_coalesced_bad_arguments(loopback, call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call(npusim.ones(4))


def test_single_collectives_in_a_group_of_one(loopback, device):
    out = npusim.zeros(1, 3, device=device)
    assert dist.all_gather_single(out, npusim.arange(3, dtype=npusim.float32, device=device)) is None
    np.testing.assert_array_equal(host(out), [[0.0, 1.0, 2.0]])
    mine = npusim.zeros(3, device=device)
    assert dist.reduce_scatter_single(mine, npusim.full((3,), 4.0, device=device), op=dist.ReduceOp.AVG) is None
    np.testing.assert_array_equal(host(mine), [4.0, 4.0, 4.0])
    with pytest.raises(RuntimeError, match=re.escape("all_gather_single: output tensor size must be equal to "
                                                     "world_size (1) times input tensor size (3), got 4")):
        dist.all_gather_single(npusim.zeros(4, device=device), npusim.zeros(3, device=device))
    with pytest.raises(TypeError, match="Expected parameter `output` of type npusim.Tensor"):
        dist.reduce_scatter_single([mine], mine)
    assert dist.GroupName("pg") == "pg"


def test_subgroups_in_a_group_of_one(loopback):
    mine, everyone = dist.new_subgroups(1)
    assert everyone == [mine] and dist.get_process_group_ranks(mine) == [0]
    mine, everyone = dist.new_subgroups_by_enumeration([[0]])
    assert everyone == [mine]
    split = dist.split_group(split_ranks=[[0]], group_desc="solo")
    assert split.group_name == "solo" and dist.get_world_size(split) == 1
    assert dist.split_group(split, split_ranks=[[0]], backend="cpu:loopback") is not None


@pytest.mark.parametrize("call, error, message", [
    (lambda: dist.new_subgroups(0), ValueError, "The arg 'group_size' (0) must be positive"),
    (lambda: dist.new_subgroups(2), ValueError, "The arg 'group_size' (2) must not exceed the world size (1)"),
    (lambda: dist.new_subgroups_by_enumeration([]), ValueError, "The arg 'ranks_per_subgroup_list' cannot be empty"),
    (lambda: dist.new_subgroups_by_enumeration([[0], [0]]), ValueError,
     "Rank 0 has appeared in both subgroup [0] and [0]"),
    (lambda: dist.split_group(split_ranks=[]), ValueError, "split_ranks cannot be None or empty"),
    (lambda: dist.split_group(split_ranks=[[]]), ValueError, "the split group cannot be empty"),
    (lambda: dist.split_group(split_ranks=[[0, 1]]), ValueError, "the split group's size should be less or equal to "
                                                                 "the world_size set by init_process_group"),
    (lambda: dist.split_group(split_ranks=[[0]], backend="cpu:mpi"), ValueError, "Backend mismatch for device 'cpu'"),
    (lambda: dist.split_group(split_ranks=[[0]], timeout=5), TypeError, "Expected timeout argument to be of type "
                                                                        "datetime.timedelta"),
])
def test_subgroup_bad_arguments(loopback, call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call()


def test_options_hold_torchs_defaults():
    unset = timedelta(milliseconds=-1)
    for cls in (dist.AllreduceOptions, dist.AllreduceCoalescedOptions, dist.ReduceScatterOptions):
        opts = cls()
        assert opts.reduceOp == dist.ReduceOp.SUM and opts.timeout == unset and opts.asyncOp is True
    opts = dist.BroadcastOptions()
    assert (opts.rootRank, opts.rootTensor, opts.timeout) == (0, 0, unset)
    opts = dist.ReduceOptions()
    assert (opts.rootRank, opts.rootTensor) == (0, 0) and opts.reduceOp == dist.ReduceOp.SUM
    assert dist.GatherOptions().rootRank == 0 and dist.ScatterOptions().rootRank == 0
    opts = dist.BarrierOptions()
    assert opts.device_ids == [] and opts.device is None
    opts.timeout = timedelta(seconds=3)
    assert "timeout=datetime.timedelta(seconds=3)" in repr(opts)
    assert dist.AllToAllOptions().asyncOp is True


def test_process_group_methods_in_a_group_of_one(loopback, device):
    pg = dist.group.WORLD
    t = npusim.tensor([1.0, 2.0], device=device)
    opts = dist.AllreduceOptions()
    opts.reduceOp = dist.ReduceOp.MAX
    assert pg.allreduce([t], opts).wait() and loopback.last_op == dist.ReduceOp.MAX
    assert pg.allreduce(t, dist.ReduceOp.MIN).wait() and loopback.last_op == dist.ReduceOp.MIN
    assert pg.broadcast([t], dist.BroadcastOptions()).wait()
    assert pg.broadcast(t, 0).wait()
    assert pg.reduce([t], dist.ReduceOptions()).wait()
    outputs = [[npusim.zeros(2, device=device)]]
    pg.allgather(outputs, [t]).wait()
    np.testing.assert_array_equal(host(outputs[0][0]), [1.0, 2.0])
    gathered = [[npusim.zeros(2, device=device)]]
    pg.gather(gathered, [t], dist.GatherOptions()).wait()
    np.testing.assert_array_equal(host(gathered[0][0]), [1.0, 2.0])
    out = npusim.zeros(2, device=device)
    pg.scatter([out], [[t]], dist.ScatterOptions()).wait()
    np.testing.assert_array_equal(host(out), [1.0, 2.0])
    out = npusim.zeros(2, device=device)
    pg.reduce_scatter([out], [[t]], dist.ReduceScatterOptions()).wait()
    np.testing.assert_array_equal(host(out), [1.0, 2.0])
    out = npusim.zeros(2, device=device)
    pg.alltoall_base(out, t, [], [], dist.AllToAllOptions()).wait()
    np.testing.assert_array_equal(host(out), [1.0, 2.0])
    outs = [npusim.zeros(2, device=device)]
    pg.alltoall(outs, [t]).wait()
    np.testing.assert_array_equal(host(outs[0]), [1.0, 2.0])
    pg.allreduce_coalesced([t, npusim.ones(3, device=device)], dist.AllreduceCoalescedOptions()).wait()
    out = npusim.zeros(2, device=device)
    pg._allgather_base(out, t).wait()
    np.testing.assert_array_equal(host(out), [1.0, 2.0])
    pg._reduce_scatter_base(out, t).wait()
    barrier_opts = dist.BarrierOptions()
    barrier_opts.timeout = timedelta(seconds=1)
    assert pg.barrier(barrier_opts).is_completed()
    box = npusim.zeros(2, device=device)
    pg.send([t], 0, 3).wait()
    pg.recv([box], 0, 3).wait()
    np.testing.assert_array_equal(host(box), [1.0, 2.0])
    with pytest.raises(ValueError, match="ProcessGroup.allreduce takes a list of one tensor, got 2"):
        pg.allreduce([t, t])
    assert pg.monitored_barrier(timedelta(seconds=1), wait_all_ranks=True) is None
    assert pg.bound_device_id is None


def test_device_mesh_in_a_group_of_one(loopback, device):
    mesh = dist.init_device_mesh(device, (1,), mesh_dim_names=("dp",))
    assert mesh.get_group() is dist.group.WORLD and mesh.get_local_rank() == 0 and mesh.get_coordinate() == (0,)
    assert mesh.mesh.tolist() == [0] and mesh.mesh.dtype == npusim.int32 and mesh.ndim == 1 and mesh.shape == (1,)
    assert repr(mesh) == f"DeviceMesh((dp=1), '{device}', stride=((),))"
    assert mesh["dp"] is mesh and mesh.get_group("dp") is dist.group.WORLD
    mesh2 = dist.init_device_mesh(device, (1, 1), mesh_dim_names=("dp", "tp"))
    assert mesh2.get_all_groups() == [dist.group.WORLD, dist.group.WORLD] and mesh2.size() == 1
    assert mesh2["tp"].mesh_dim_names == ("tp",) and mesh2["tp"].get_local_rank() == 0
    assert mesh2 == dist.DeviceMesh(device, [[0]], mesh_dim_names=("dp", "tp")) and hash(mesh2)
    assert repr(dist.init_device_mesh(device, (1,))) == f"DeviceMesh((1,), '{device}', stride=((),))"


@pytest.mark.parametrize("call, error, message", [
    (lambda: dist.init_device_mesh("cpu", (2,)), RuntimeError, "Mesh should not be bigger than default world size 1, "
                                                               "but found 2 ranks!"),
    (lambda: dist.init_device_mesh("cpu:0", (1,)), RuntimeError, "Device type with index is not supported but got "
                                                                 "cpu:0. "),
    (lambda: dist.init_device_mesh("cpu", (1,), mesh_dim_names=("a", "b")), RuntimeError,
     "mesh_shape and mesh_dim_names should have same length! Found len(mesh_dim_names): 2 and len(mesh_shape):1."),
    (lambda: dist.init_device_mesh("cpu", (1, 1), mesh_dim_names=("a", "a")), RuntimeError,
     "Each mesh_dim_name must be unique."),
    (lambda: dist.init_device_mesh("cpu", (1, 1)).get_group(), RuntimeError,
     "Found the DeviceMesh have 2 dimensions"),
    (lambda: dist.init_device_mesh("cpu", (1, 1)).get_local_rank(), RuntimeError, "Found the DeviceMesh have 2 "
                                                                                   "dimensions"),
    (lambda: dist.init_device_mesh("cpu", (1,))["dp"], RuntimeError, "Cannot slice a DeviceMesh without "
                                                                      "mesh_dim_names!"),
    (lambda: dist.init_device_mesh("cpu", (1, 1), mesh_dim_names=("a", "b"))["c"], KeyError,
     "Invalid mesh_dim_names ('c',) specified. Valid mesh_dim_names are ['a', 'b']."),
    (lambda: dist.init_device_mesh("cpu", (1, 1), mesh_dim_names=("a", "b"))["b", "a"], KeyError,
     "Mesh dim indices should be in ascending order."),
    (lambda: dist.init_device_mesh("cpu", (1,), mesh_dim_names=("a",)).get_group("z"), KeyError,
     "Mesh dimension 'z' does not exist."),
])
def test_device_mesh_bad_arguments(loopback, call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call()


# --- against torch ------------------------------------------------------------------------------------------------
ADDED = ["is_backend_available", "is_gloo_available", "is_torchelastic_launched", "get_default_backend_for_device",
         "get_backend_config", "get_pg_count", "supports_complex", "breakpoint", "send_object_list",
         "recv_object_list", "all_gather_coalesced", "all_reduce_coalesced", "new_subgroups",
         "new_subgroups_by_enumeration", "split_group", "register_rendezvous_handler", "init_device_mesh",
         "init_process_group", "all_gather_single", "reduce_scatter_single"]


def _parameters(fn):
    return [(p.name, p.kind, repr(p.default) if p.default is not p.empty else None)
            for p in inspect.signature(fn).parameters.values() if not p.name.startswith("_")]


@pytest.mark.oracle
@pytest.mark.parametrize("name", ADDED)
def test_signatures_match_torch(torch, name):
    import torch.distributed as tdist
    ours, theirs = _parameters(getattr(dist, name)), _parameters(getattr(tdist, name))
    assert ours == theirs


@pytest.mark.oracle
@pytest.mark.parametrize("method", ["get_group", "get_all_groups", "size", "get_rank", "get_local_rank",
                                    "get_coordinate", "__getitem__"])
def test_device_mesh_methods_match_torch(torch, method):
    from torch.distributed.device_mesh import DeviceMesh as TorchDeviceMesh
    assert _parameters(getattr(dist.DeviceMesh, method)) == _parameters(getattr(TorchDeviceMesh, method))


@pytest.mark.oracle
def test_options_and_debug_level_match_torch(torch):
    import torch.distributed as tdist
    for name in ("AllreduceOptions", "BroadcastOptions", "ReduceOptions", "GatherOptions", "ScatterOptions",
                 "ReduceScatterOptions", "AllToAllOptions", "BarrierOptions", "AllreduceCoalescedOptions"):
        ours, theirs = getattr(dist, name)(), getattr(tdist, name)()
        fields = sorted(a for a in dir(theirs) if not a.startswith("_"))
        assert sorted(a for a in vars(ours)) == fields, name
        for field in fields:
            mine, torchs = getattr(ours, field), getattr(theirs, field)
            if field == "reduceOp":
                assert mine.op == torchs.op
            else:
                assert mine == torchs, (name, field)
    assert [(m.name, int(m)) for m in dist.DebugLevel] == [(m, int(tdist.DebugLevel.__members__[m]))
                                                           for m in tdist.DebugLevel.__members__]
    for op in ("SUM", "AVG", "MAX", "MIN", "PRODUCT", "BAND", "BOR", "BXOR", "PREMUL_SUM"):
        expected = tdist.supports_complex(getattr(tdist.ReduceOp, op))
        assert dist.supports_complex(getattr(dist.ReduceOp, op)) == expected, op
    assert dist.is_torchelastic_launched() == tdist.is_torchelastic_launched()
    assert dist.get_pg_count() == tdist.get_pg_count() == 0


@pytest.mark.oracle
def test_error_messages_match_torch(loopback, torch):
    import torch.distributed as tdist
    tdist.init_process_group("gloo", store=tdist.HashStore(), rank=0, world_size=1)
    try:
        pairs = [
            (lambda: dist.new_subgroups(0), lambda: tdist.new_subgroups(0)),
            (lambda: dist.new_subgroups(2), lambda: tdist.new_subgroups(2)),
            (lambda: dist.new_subgroups_by_enumeration([]), lambda: tdist.new_subgroups_by_enumeration([])),
            (lambda: dist.split_group(split_ranks=[]), lambda: tdist.split_group(split_ranks=[])),
            (lambda: dist.send_object_list([1], dst=0), lambda: tdist.send_object_list([1], dst=0)),
            (lambda: dist.recv_object_list([1], src=0), lambda: tdist.recv_object_list([1], src=0)),
            (lambda: dist.get_default_backend_for_device("meta"),
             lambda: tdist.get_default_backend_for_device("meta")),
            (lambda: dist.register_rendezvous_handler("tcp", None),
             lambda: tdist.register_rendezvous_handler("tcp", None)),
        ]
        for ours, theirs in pairs:
            with pytest.raises(Exception) as a:
                ours()
            with pytest.raises(Exception) as b:
                theirs()
            assert type(a.value) is type(b.value), (a.value, b.value)
            assert str(a.value).replace("npusim", "torch") == str(b.value), (a.value, b.value)
    finally:
        tdist.destroy_process_group()
