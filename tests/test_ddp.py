"""DistributedDataParallel and DistributedSampler.

Across 2 and 4 ranks (real processes over MPI): training gives the parameters of one process training on the
concatenated batch, on cpu and npu; no_sync, unused parameters, buffers, mismatched models. In one process (a
group of one on a backend registered through the public API): the module's own behaviour. The sampler's
partition is checked against torch's.
"""
from __future__ import annotations

import importlib.util
import re
from datetime import timedelta

import numpy as np
import pytest

import npusim
import npusim.distributed as dist
from conftest import host
from distributed_scripts.harness import Job, check_lines, mpiexec_command
from npusim import nn
from npusim.nn.parallel import DistributedDataParallel as DDP
from npusim.utils.data import DataLoader, DistributedSampler, TensorDataset

HAS_MPI = importlib.util.find_spec("mpi4py") is not None
DDP_CHECKS = ["training_matches_single_process", "no_sync_accumulates", "unused_parameters",
              "buffers_follow_rank_zero", "model_mismatch", "bad_arguments", "sampler_shares_dataset"]


@pytest.fixture(scope="module")
def jobs():
    if not HAS_MPI:
        pytest.skip("mpi4py and an MPI library are not installed (pip install 'npusim[distributed]')")
    # a liveness bound only: the two jobs' six ranks start together and share the cores with whatever else
    # runs, so their wall time grows with the load (a few seconds idle, about 20 under heavy load); a hang
    # inside a collective is reported sooner, by the ranks' own group timeout
    started = {n: Job(mpiexec_command(n, "ddp_check.py"), 600) for n in (2, 4)}
    yield started
    for job in started.values():
        job.kill()


# --- many ranks ---------------------------------------------------------------------------------------------
@pytest.mark.skipif(not HAS_MPI, reason="mpi4py and an MPI library are not installed")
@pytest.mark.parametrize("ranks", [2, 4])
def test_ddp_job_finishes(jobs, ranks):
    code, out, err, _ = jobs[ranks].result()
    assert code == 0, err
    assert sorted(re.findall(r"^\[(\d+)\] DONE$", out, re.MULTILINE)) == [str(r) for r in range(ranks)]


@pytest.mark.skipif(not HAS_MPI, reason="mpi4py and an MPI library are not installed")
@pytest.mark.parametrize("check", DDP_CHECKS)
@pytest.mark.parametrize("ranks", [2, 4])
def test_ddp_across_ranks(jobs, ranks, device, check):
    results = check_lines(jobs[ranks].result()[1])
    for rank in range(ranks):
        assert results.get((rank, device, check)) == "PASS", results.get((rank, device, check), "no result line")


# --- one process --------------------------------------------------------------------------------------------
def _model(device, seed=0):
    npusim.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)


def test_ddp_of_one_trains_like_the_module(world_of_one, device):
    plain, wrapped = _model(device), _model(device)
    ddp = DDP(wrapped, bucket_cap_mb=1e-6)   # a bucket per parameter
    assert len(ddp._reducer.buckets) == 4
    opt_a = npusim.optim.SGD(plain.parameters(), lr=0.1)
    opt_b = npusim.optim.SGD(ddp.parameters(), lr=0.1)
    x = npusim.randn(5, 4, device=device)
    for _ in range(3):
        for model, opt in ((plain, opt_a), (ddp, opt_b)):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
    for p, q in zip(plain.parameters(), wrapped.parameters()):
        np.testing.assert_allclose(host(p), host(q), rtol=1e-6, atol=1e-7)
    # one average per bucket per step, each through the registered backend
    assert sum(1 for op, _ in world_of_one.calls if op == "all_reduce") == 3 * 4


def test_no_sync_skips_the_reduction(world_of_one):
    ddp = DDP(_model("cpu"))
    x = npusim.randn(3, 4)
    with ddp.no_sync():
        ddp(x).sum().backward()
    assert all(op != "all_reduce" for op, _ in world_of_one.calls)
    assert ddp.require_backward_grad_sync
    grads = [host(p.grad).copy() for p in ddp.parameters()]
    ddp(x).sum().backward()
    for p, g in zip(ddp.parameters(), grads):
        np.testing.assert_allclose(host(p.grad), 2 * g, rtol=1e-6)


def test_forward_without_grad_does_not_arm_the_reducer(world_of_one):
    ddp = DDP(_model("cpu"))
    with npusim.no_grad():
        ddp(npusim.randn(2, 4))
    assert not ddp._reducer.expecting
    ddp(npusim.randn(2, 4))            # an armed reducer would complain about the unfinished prior iteration
    assert ddp._reducer.expecting


def test_unused_parameter_without_detection_is_reported(world_of_one):
    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2)
            self.b = nn.Linear(2, 2)

        def forward(self, x):
            return self.a(x)

    ddp = DDP(TwoHeads())
    ddp(npusim.ones(1, 2)).sum().backward()
    with pytest.raises(RuntimeError, match=r"(?s)Expected to have finished reduction in the prior iteration.*"
                                           r"did not receive grad for rank 0: b.weight b.bias"):
        ddp(npusim.ones(1, 2))
    detecting = DDP(TwoHeads(), find_unused_parameters=True)
    for _ in range(2):
        detecting(npusim.ones(1, 2)).sum().backward()
    assert detecting.module.b.weight.grad is None and detecting.module.a.weight.grad is not None


def test_gradient_as_bucket_view(world_of_one):
    ddp = DDP(_model("cpu"), gradient_as_bucket_view=True)
    x = npusim.randn(3, 4)
    ddp(x).sum().backward()
    bucket = ddp._reducer.buckets[0].buffer
    grad = next(p.grad for p in ddp.parameters())
    assert grad.untyped_storage().data_ptr() == bucket.untyped_storage().data_ptr()
    first = host(grad).copy()
    ddp(x).sum().backward()                   # accumulates in place, in the bucket
    np.testing.assert_allclose(host(grad), 2 * first, rtol=1e-6)


def test_ddp_module_interface(world_of_one):
    ddp = DDP(_model("cpu"))
    assert list(ddp.state_dict()) == ["module." + k for k in ddp.module.state_dict()]
    assert ddp.train(False) is ddp and not ddp.module.training
    assert ddp.process_group is dist.group.WORLD and ddp.device == npusim.device("cpu")


@pytest.mark.parametrize("kwargs, error, message", [
    ({"device_ids": [0, 1]}, ValueError, "device_ids can only be None or contain a single element."),
    ({"process_group": dist.GroupMember.NON_GROUP_MEMBER}, ValueError, "not a member of the given process group"),
])
def test_ddp_bad_arguments(world_of_one, kwargs, error, message):
    with pytest.raises(error, match=re.escape(message)):
        DDP(_model("cpu"), **kwargs)


def test_ddp_needs_trainable_parameters(world_of_one):
    with pytest.raises(RuntimeError, match="DistributedDataParallel is not needed when a module doesn't have any "
                                           "parameter that requires a gradient."):
        DDP(nn.Linear(2, 2).requires_grad_(False))


def test_ddp_needs_one_device_type(world_of_one):
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2).to("npu"))
    with pytest.raises(ValueError, match="must be on the same type of devices"):
        DDP(model)


def test_ddp_needs_an_initialised_group():
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DDP(_model("cpu"))


# --- DistributedSampler ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("size, replicas, drop_last", [(10, 3, False), (10, 3, True), (7, 4, False), (2, 4, False),
                                                       (12, 4, True)])
def test_sampler_splits_the_dataset(size, replicas, drop_last):
    data = list(range(size))
    shares = [list(DistributedSampler(data, num_replicas=replicas, rank=r, shuffle=True, seed=3,
                                      drop_last=drop_last)) for r in range(replicas)]
    assert len({len(s) for s in shares}) == 1
    flat = [i for s in shares for i in s]
    if drop_last:
        assert len(set(flat)) == len(flat) == size // replicas * replicas
    else:
        assert set(flat) == set(data) and len(flat) == -(-size // replicas) * replicas


def test_sampler_epochs_reshuffle_the_same_way_on_every_rank():
    data = list(range(20))
    a, b = (DistributedSampler(data, num_replicas=2, rank=r) for r in range(2))
    first = list(a)
    a.set_epoch(1)
    b.set_epoch(1)
    assert list(a) != first
    assert sorted(list(a) + list(b)) == data
    c = DistributedSampler(data, num_replicas=2, rank=0)
    c.set_epoch(1)
    assert list(c) == list(a)


def test_sampler_with_dataloader():
    data = TensorDataset(npusim.arange(8))
    sampler = DistributedSampler(data, num_replicas=2, rank=1, shuffle=False)
    got = [int(v) for (batch,) in DataLoader(data, batch_size=2, sampler=sampler) for v in batch]
    assert got == [1, 3, 5, 7]


def test_sampler_defaults_to_the_group(world_of_one):
    sampler = DistributedSampler(list(range(5)))
    assert (sampler.num_replicas, sampler.rank, len(sampler)) == (1, 0, 5)


@pytest.mark.parametrize("rank", [-1, 3])
def test_sampler_rejects_bad_rank(rank):
    with pytest.raises(ValueError, match=re.escape(f"Invalid rank {rank}, rank should be in the interval [0, 2]")):
        DistributedSampler(list(range(4)), num_replicas=3, rank=rank)


@pytest.mark.oracle
@pytest.mark.parametrize("size, replicas, drop_last", [(10, 3, False), (10, 3, True), (5, 4, False)])
def test_sampler_matches_torch_without_shuffle(torch, size, replicas, drop_last):
    from torch.utils.data.distributed import DistributedSampler as TorchSampler
    for rank in range(replicas):
        ours = DistributedSampler(list(range(size)), replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = TorchSampler(list(range(size)), replicas, rank, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
    with pytest.raises(ValueError) as a:
        DistributedSampler([1], 2, 5)
    with pytest.raises(ValueError) as b:
        TorchSampler([1], 2, 5)
    assert str(a.value) == str(b.value)


# --- NCCL (a GPU was lent) -------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.real_gpu
def test_ddp_on_a_one_rank_nccl_group():
    dist.init_process_group("nccl", timeout=timedelta(seconds=60))
    try:
        plain, wrapped = _model("npu"), _model("npu")
        ddp = DDP(wrapped, device_ids=[0])
        x = npusim.randn(5, 4, device="npu")
        for model in (plain, ddp):
            model(x).pow(2).mean().backward()
        for p, q in zip(plain.parameters(), wrapped.parameters()):
            np.testing.assert_allclose(host(p.grad), host(q.grad), rtol=1e-5, atol=1e-6)
    finally:
        dist.destroy_process_group()
