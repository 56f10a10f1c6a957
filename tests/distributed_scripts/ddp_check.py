"""DistributedDataParallel and DistributedSampler on each rank, on cpu and npu; run under mpiexec.

The reference for training is one process on the concatenated batch: every rank
computes it locally (same seed, all the data), then trains its DDP replica on its
share of each batch; the parameters must agree.
"""
from __future__ import annotations

from datetime import timedelta

import numpy as np

import npusim
import npusim.distributed as dist
from npusim import nn
from npusim.nn.parallel import DistributedDataParallel as DDP
from npusim.utils.data import DataLoader, TensorDataset
from npusim.utils.data.distributed import DistributedSampler
from script_support import done, expect_error, report, set_rank

F = nn.functional
LOCAL = 3          # samples per rank per step
STEPS = 4


def make_model(device, seed=0):
    npusim.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 16), nn.Tanh(), nn.Linear(16, 2)).to(device)


def batches(n):
    rng = np.random.default_rng(7)
    return [(rng.standard_normal((n * LOCAL, 6)).astype(np.float32),
             rng.standard_normal((n * LOCAL, 2)).astype(np.float32)) for _ in range(STEPS)]


def params_of(model):
    return [p.detach().cpu().numpy().copy() for p in model.parameters()]


def assert_params_close(a, b, tol=1e-5):
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=tol, atol=tol)


def equal_on_all_ranks(arrays):
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, [np.asarray(a) for a in arrays])
    for other in gathered[1:]:
        for x, y in zip(gathered[0], other):
            np.testing.assert_array_equal(x, y)


def train_like_single_process(device, rank, n, **ddp_kwargs):
    data = batches(n)
    reference = make_model(device)
    ref_opt = npusim.optim.SGD(reference.parameters(), lr=0.2, momentum=0.5)
    model = make_model(device, seed=100 + rank)          # different on every rank: DDP broadcasts rank 0's
    if rank == 0:
        model.load_state_dict(make_model(device).state_dict())
    ddp = DDP(model, device_ids=[npusim.device(device).index] if device != "cpu" else None, **ddp_kwargs)
    assert_params_close(params_of(model), params_of(reference), 0)
    opt = npusim.optim.SGD(ddp.parameters(), lr=0.2, momentum=0.5)
    share = slice(rank * LOCAL, (rank + 1) * LOCAL)
    for x, y in data:
        x, y = npusim.tensor(x, device=device), npusim.tensor(y, device=device)
        ref_opt.zero_grad()
        F.mse_loss(reference(x), y).backward()
        ref_opt.step()
        opt.zero_grad()
        F.mse_loss(ddp(x[share]), y[share]).backward()
        opt.step()
    assert_params_close(params_of(model), params_of(reference))
    equal_on_all_ranks(params_of(model))
    return ddp


def training_matches_single_process(device, rank, n):
    ddp = train_like_single_process(device, rank, n, bucket_cap_mb=0.0001)    # several buckets
    assert len(ddp._reducer.buckets) > 2
    train_like_single_process(device, rank, n)                               # one bucket
    ddp = train_like_single_process(device, rank, n, gradient_as_bucket_view=True)
    p = next(ddp.parameters())
    assert p.grad.data_ptr() != 0


def no_sync_accumulates(device, rank, n):
    data = batches(n)[:3]
    reference = make_model(device)
    ddp = DDP(make_model(device))
    for x, y in data:                                     # the reference: one backward over everything
        x, y = npusim.tensor(x, device=device), npusim.tensor(y, device=device)
        F.mse_loss(reference(x), y).backward()
    share = slice(rank * LOCAL, (rank + 1) * LOCAL)
    with ddp.no_sync():
        for x, y in data[:2]:
            x, y = npusim.tensor(x, device=device), npusim.tensor(y, device=device)
            F.mse_loss(ddp(x[share]), y[share]).backward()
    local = [p.grad.detach().cpu().numpy().copy() for p in ddp.parameters()]
    gathered = [None] * n
    dist.all_gather_object(gathered, local)
    assert any(not np.allclose(gathered[0][0], g[0]) for g in gathered[1:])   # not synchronised yet
    x, y = (npusim.tensor(a, device=device) for a in data[2])
    F.mse_loss(ddp(x[share]), y[share]).backward()                          # synchronises the sum
    for p, q in zip(ddp.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.cpu().numpy(), rtol=1e-5, atol=1e-6)


class Branchy(nn.Module):
    """``shared`` is used everywhere, ``odd`` only on odd ranks, ``never`` nowhere."""

    def __init__(self):
        super().__init__()
        self.shared = nn.Linear(4, 4)
        self.odd = nn.Linear(4, 4)
        self.never = nn.Linear(4, 4)

    def forward(self, x, use_odd):
        h = self.shared(x)
        return self.odd(h) if use_odd else h


def unused_parameters(device, rank, n):
    npusim.manual_seed(3)
    ddp = DDP(Branchy().to(device), find_unused_parameters=True)
    x = npusim.ones(2, 4, device=device) * (rank + 1)
    for _ in range(2):                                        # twice: the state resets between iterations
        ddp.zero_grad()
        loss = ddp(x, rank % 2 == 1).sum()
        dist.all_reduce(loss.detach().clone())                # a collective between forward and backward
        loss.backward()
    module = ddp.module
    assert module.never.weight.grad is None and module.never.bias.grad is None
    assert module.odd.weight.grad is not None               # used on some rank: averaged everywhere
    equal_on_all_ranks([p.grad.cpu().numpy() for p in (module.shared.weight, module.odd.weight)])
    # without detection, a parameter left out stalls its bucket: the next forward says so, on every rank
    npusim.manual_seed(3)
    strict = DDP(Branchy().to(device))
    strict(x, False).sum().backward()
    expect_error(RuntimeError, r"(?s)Expected to have finished reduction in the prior iteration.*"
                 r"find_unused_parameters=True.*did not receive grad for rank \d+: odd.weight odd.bias never.weight "
                 r"never.bias", strict, x, False)


class Scaled(nn.Module):
    def __init__(self, rank):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.register_buffer("scale", npusim.full((3,), float(rank + 1)))

    def forward(self, x):
        return self.lin(x) * self.scale


def buffers_follow_rank_zero(device, rank, n):
    ddp = DDP(Scaled(rank).to(device))
    np.testing.assert_array_equal(ddp.module.scale.cpu().numpy(), np.ones(3))   # broadcast at construction
    ddp.module.scale.fill_(float(rank + 5))
    ddp(npusim.ones(1, 3, device=device))
    np.testing.assert_array_equal(ddp.module.scale.cpu().numpy(), np.full(3, 5.0))
    assert list(ddp.state_dict())[0].startswith("module.")


def model_mismatch(device, rank, n):
    model = nn.Linear(3, 3 + (rank % 2)).to(device)
    expect_error(dist.DistError, r"Detected mismatch.*rank 0 runs a model of 2 parameters.*float32\[3, 3\]",
                 DDP, model)


def bad_arguments(device, rank, n):
    expect_error(RuntimeError, "DistributedDataParallel is not needed when a module doesn't have any parameter "
                 "that requires a gradient.", DDP, nn.Linear(2, 2).requires_grad_(False))
    expect_error(ValueError, "device_ids can only be None or contain a single element.",
                 DDP, nn.Linear(2, 2), device_ids=[0, 1])


def sampler_shares_dataset(device, rank, n):
    data = TensorDataset(npusim.arange(10))
    for drop_last in (False, True):
        sampler = DistributedSampler(data, shuffle=True, seed=5, drop_last=drop_last)
        assert sampler.num_replicas == n and sampler.rank == rank
        sampler.set_epoch(1)
        mine = [int(b[0]) for (b,) in DataLoader(data, batch_size=1, sampler=sampler)]
        everyone = [None] * n
        dist.all_gather_object(everyone, mine)
        lengths = {len(share) for share in everyone}
        assert lengths == {len(sampler)}, lengths
        covered = [i for share in everyone for i in share]
        if drop_last:
            assert len(set(covered)) == len(covered) == 10 // n * n
        else:
            assert set(covered) == set(range(10)) and len(covered) == -(-10 // n) * n


CHECKS = [("training_matches_single_process", training_matches_single_process),
          ("no_sync_accumulates", no_sync_accumulates), ("unused_parameters", unused_parameters),
          ("buffers_follow_rank_zero", buffers_follow_rank_zero), ("model_mismatch", model_mismatch),
          ("bad_arguments", bad_arguments), ("sampler_shares_dataset", sampler_shares_dataset)]


def main():
    # how long a rank waits for the others: no check expects a timeout, so it only has to outlast a rank that
    # a loaded machine leaves behind, and stay under the test's limit for the whole job
    dist.init_process_group("mpi", timeout=timedelta(seconds=120))
    rank, n = dist.get_rank(), dist.get_world_size()
    set_rank(rank)
    for device in ("cpu", f"npu:{rank % npusim.npu.device_count()}"):
        for name, fn in CHECKS:
            report(device.split(":")[0], name, fn, device, rank, n)
    dist.destroy_process_group()
    done()


if __name__ == "__main__":
    main()
