"""npusim.distributed's newer names: shrink_group (3 real ranks over MPI: one leaves, the others shrink the default
group and a subgroup) and the built-in DDP communication hooks (BuiltinCommHookType)."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import npusim
import npusim.distributed as dist
from conftest import host
from distributed_scripts.harness import Job, LoopbackBackend, check_lines, mpiexec_command
from npusim import nn
from npusim.nn.parallel import DistributedDataParallel as DDP

HAS_MPI = importlib.util.find_spec("mpi4py") is not None
RANKS = 3


@pytest.fixture(scope="module")
def jobs():
    if not HAS_MPI:
        pytest.skip("mpi4py and an MPI library are not installed (pip install 'npusim[distributed]')")
    started = {d: Job(mpiexec_command(RANKS, "shrink_check.py", d), 120) for d in ("cpu", "npu")}
    yield started
    for job in started.values():
        job.kill()


@pytest.mark.parametrize("check", ["bad_arguments", "shrink_default"])
def test_shrink_group_across_ranks(jobs, device, check):
    code, out, err, _ = jobs[device].result()
    assert code == 0, err
    results = check_lines(out)
    for rank in range(RANKS - 1):                     # the last rank left before the others shrank
        assert results.get((rank, device, check)) == "PASS", results.get((rank, device, check), "no result line")
    assert "[2] LEFT" in out


def test_shrink_group_checks_its_arguments_in_one_process(world_of_one):
    with pytest.raises(TypeError, match="ranks_to_exclude must be a list"):
        dist.shrink_group((0,))
    with pytest.raises(ValueError, match="Invalid shrink_flags value: 3"):
        dist.shrink_group([0], shrink_flags=3)
    with pytest.raises(ValueError, match="Cannot shrink a process group with size 1"):
        dist.shrink_group([0])


def _model(device="cpu"):
    npusim.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)


def test_builtin_comm_hooks(world_of_one, device):
    x = npusim.randn(5, 4, device=device)
    plain = _model(device)
    plain(x).pow(2).mean().backward()
    for hook_type, sent, tol in ((dist.BuiltinCommHookType.ALLREDUCE, "float32", 1e-7),
                                 (dist.BuiltinCommHookType.FP16_COMPRESS, "float16", 1e-3)):
        ddp = DDP(_model(device))
        ddp._register_builtin_comm_hook(hook_type)
        world_of_one.calls.clear()
        ddp(x).pow(2).mean().backward()
        assert [(op, [str(d) for d in dtypes]) for op, dtypes in world_of_one.calls] == [("all_reduce", [sent])]
        for p, q in zip(ddp.parameters(), plain.parameters()):
            assert p.grad.dtype is npusim.float32
            np.testing.assert_allclose(host(p.grad), host(q.grad), rtol=tol, atol=tol)
        with pytest.raises(RuntimeError, match="can only be called once"):
            ddp._register_builtin_comm_hook(hook_type)
    with pytest.raises(TypeError, match="must be a BuiltinCommHookType"):
        DDP(_model(device))._register_builtin_comm_hook(1)


@pytest.mark.oracle
def test_as_torch(torch):
    tdist = torch.distributed
    assert {k: int(v) for k, v in tdist.BuiltinCommHookType.__members__.items()} == \
        {k.name: int(k) for k in dist.BuiltinCommHookType}
    assert str(dist.BuiltinCommHookType.FP16_COMPRESS) == str(tdist.BuiltinCommHookType.FP16_COMPRESS)
    import inspect
    assert list(inspect.signature(dist.shrink_group).parameters) == \
        list(inspect.signature(tdist.shrink_group).parameters)
    for bad in ((2,), ([],), ([1], None, 9)):
        errors = []
        for mod in (dist, tdist):
            with pytest.raises(Exception) as info:
                mod.shrink_group(*bad)
            errors.append((type(info.value).__name__, str(info.value)))
        assert errors[0] == errors[1]


def _collective_events(prof):
    return [e.name for e in prof.events() if not e.name.startswith(("aten::", "npu::", "ProfilerStep"))]


def test_collectives_are_profiler_events_named_by_record_comm(world_of_one, device):
    t = npusim.ones(4, device=device)
    with npusim.profiler.profile() as prof:
        dist.all_reduce(t)
        with dist.record_comm("FSDP::all_gather (layer1)"):
            out = [npusim.empty(4, device=device)]
            dist.all_gather(out, t)
            with dist.record_comm("inner"):
                dist.all_reduce(t)
            dist.all_reduce(t)
        dist.reduce(t, 0)
    assert _collective_events(prof) == ["loopback:all_reduce", "FSDP::all_gather (layer1)", "inner",
                                        "FSDP::all_gather (layer1)", "loopback:reduce"]
    dist.all_reduce(t)                       # no profiler: the backend is handed out as it is
    assert type(dist.group.WORLD._get_backend(t.device)) is LoopbackBackend


@pytest.mark.oracle
def test_record_comm_as_torch(torch):
    import inspect
    assert list(inspect.signature(dist.record_comm).parameters) == \
        list(inspect.signature(torch.distributed.record_comm).parameters)


def test_reducer_averages_in_the_buckets_given(world_of_one, device):
    model = _model(device)
    params = list(model.parameters())
    reducer = dist.Reducer(params, [[3, 2], [1, 0]], [1 << 20, 1 << 20], dist.group.WORLD)
    logger = dist.Logger(reducer)
    reducer.set_logger(logger)
    logger.set_construction_data_and_log("Sequential", [], -1, True, False, False)
    x = npusim.randn(5, 4, device=device)
    plain = _model(device)
    plain(x).pow(2).mean().backward()
    for _ in range(2):
        for p in params:
            p.grad = None
        world_of_one.calls.clear()
        reducer.prepare_for_forward()
        out = model(x).pow(2).mean()
        reducer.prepare_for_backward([out])
        out.backward()
        logger.set_runtime_stats_and_log()
        assert [op for op, _ in world_of_one.calls] == ["all_reduce", "all_reduce"]      # one per bucket
        for p, q in zip(params, plain.parameters()):
            np.testing.assert_allclose(host(p.grad), host(q.grad), rtol=1e-6)
    stats = reducer.get_backward_stats()
    assert len(stats) == 4 and all(s > 0 for s in stats)
    data = logger._get_ddp_logging_data()
    assert data["iteration"] == 2 and data["module_name"] == "Sequential" and data["world_size"] == 1
    assert data["num_parameter_tensors"] == 4 and data["backend_name"] == "loopback" and data["dtypes"] == "float"
    assert data["total_parameter_size_bytes"] == sum(p.numel() * 4 for p in params)
    logger.set_error_and_log("boom")
    assert logger._get_ddp_logging_data()["has_error"] == 1
    with pytest.raises(RuntimeError, match="every parameter exactly once"):
        dist.Reducer(params, [[0, 1]], [1 << 20], dist.group.WORLD)


@pytest.mark.oracle
def test_reducer_and_logger_as_torch(torch):
    import inspect
    tdist = torch.distributed
    ours = [n for n in inspect.signature(dist.Reducer.__init__).parameters][1:]
    theirs = ["params", "bucket_indices", "per_bucket_size_limits", "process_group", "expect_sparse_gradients",
              "bucket_bytes_cap", "find_unused_parameters", "gradient_as_bucket_view", "param_to_name_mapping",
              "first_bucket_bytes_cap", "skip_all_reduce_unused_params", "use_python_reducer",
              "bucket_bytes_cap_list", "batched_grad_copy"]
    assert ours == theirs and theirs[0] + ":" in tdist.Reducer.__init__.__doc__.replace(" ", "")
    for name in ("get_backward_stats", "prepare_for_backward", "prepare_for_forward", "set_logger"):
        assert hasattr(tdist.Reducer, name) and hasattr(dist.Reducer, name)
    for name in ("set_construction_data_and_log", "set_error_and_log", "set_runtime_stats_and_log",
                 "_get_ddp_logging_data", "_set_comm_hook_name", "_set_static_graph", "_set_uneven_input_join"):
        assert hasattr(tdist.Logger, name) and hasattr(dist.Logger, name)
