"""npusim.distributed's newer names: shrink_group (3 real ranks over MPI: one leaves, the others shrink the default
group and a subgroup) and the built-in DDP communication hooks (BuiltinCommHookType)."""
from __future__ import annotations

import importlib.util
from datetime import timedelta

import numpy as np
import pytest

import npusim
import npusim.distributed as dist
from conftest import host
from distributed_scripts.harness import Job, LoopbackBackend, check_lines, mpiexec_command, register_loopback
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


@pytest.fixture
def world_of_one():
    register_loopback()
    LoopbackBackend.instances.clear()
    dist.init_process_group("loopback", timeout=timedelta(seconds=5))
    yield LoopbackBackend.instances[0]
    if dist.is_initialized():
        dist.destroy_process_group()


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
