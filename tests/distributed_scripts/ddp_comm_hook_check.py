"""DistributedDataParallel communication hooks on each rank, on cpu and npu; run under mpiexec.

Every rank feeds its own data, so the local gradients differ; after backward each
rank's gradients must be the mean of all ranks' local gradients (computed here from
a plain copy of the model on every rank and exchanged as objects).
"""
from __future__ import annotations

from datetime import timedelta

import numpy as np

import npusim
import npusim.distributed as dist
from npusim import nn
from npusim.distributed.algorithms.ddp_comm_hooks import DDPCommHookType, default_hooks, register_ddp_comm_hook
from npusim.futures import Future
from npusim.nn.parallel import DistributedDataParallel as DDP
from script_support import done, report, set_rank

F = nn.functional
TOLERANCE = {"allreduce": 1e-6, "fp16": 2e-3, "bf16": 2e-2}   # relative to the largest gradient


def make_model(device, seed=0):
    npusim.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 2)).to(device)


def local_data(device, rank, step=0):
    rng = np.random.default_rng(100 * step + rank)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    y = rng.standard_normal((4, 2)).astype(np.float32)
    return npusim.tensor(x, device=device), npusim.tensor(y, device=device)


def grads_of(model):
    return [p.grad.detach().cpu().float().numpy().copy() for p in model.parameters()]


def gather(value):
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, value)
    return everyone


def mean_local_grads(device, rank, steps=(0,)):
    """The mean over ranks of the gradients a plain model accumulates on this rank's data."""
    plain = make_model(device)
    for step in steps:
        x, y = local_data(device, rank, step)
        F.mse_loss(plain(x), y).backward()
    return [np.mean(gs, axis=0) for gs in zip(*gather(grads_of(plain)))]


def equal_on_all_ranks(arrays):
    everyone = gather([np.asarray(a) for a in arrays])
    for other in everyone[1:]:
        for a, b in zip(everyone[0], other):
            np.testing.assert_array_equal(a, b)


def assert_grads_close(got, want, kind):
    scale = max(float(np.abs(w).max()) for w in want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=0, atol=TOLERANCE[kind] * scale)


def default_hooks_average(device, rank, n):
    want = mean_local_grads(device, rank)
    hooks = [("allreduce", "hook", default_hooks.allreduce_hook),
             ("fp16", "hook", default_hooks.fp16_compress_hook),
             ("bf16", "hook", default_hooks.bf16_compress_hook),
             ("fp16", "hook", default_hooks.fp16_compress_wrapper(default_hooks.allreduce_hook)),
             ("bf16", "hook", default_hooks.bf16_compress_wrapper(default_hooks.allreduce_hook)),
             ("allreduce", "type", DDPCommHookType.ALLREDUCE),
             ("fp16", "type", DDPCommHookType.FP16_COMPRESS),
             ("bf16", "type", DDPCommHookType.BF16_COMPRESS)]
    for kind, how, hook in hooks:
        for as_view in (False, True):
            ddp = DDP(make_model(device), bucket_cap_mb=0.0006, gradient_as_bucket_view=as_view)   # 2 buckets
            assert len(ddp._reducer.buckets) == 2
            if how == "hook":
                ddp.register_comm_hook(None if kind == "allreduce" else dist.group.WORLD, hook)
            else:
                register_ddp_comm_hook(hook, ddp)
            x, y = local_data(device, rank)
            F.mse_loss(ddp(x), y).backward()
            got = grads_of(ddp)
            assert all(p.grad.dtype is npusim.float32 for p in ddp.parameters())
            assert_grads_close(got, want, kind)
            equal_on_all_ranks(got)
    # the compressed hooks really are less precise than the plain one (they compress)
    ddp = DDP(make_model(device))
    ddp.register_comm_hook(None, default_hooks.bf16_compress_hook)
    x, y = local_data(device, rank)
    F.mse_loss(ddp(x), y).backward()
    assert any(not np.allclose(g, w, rtol=1e-6, atol=0) for g, w in zip(grads_of(ddp), want))


def custom_hook_calls(device, rank, n):
    calls = []

    def doubled_sum(state, bucket):
        calls.append((state, bucket.index(), bucket.is_last(), [id(p) for p in bucket.parameters()],
                      [g.detach().cpu().numpy().copy() for g in bucket.gradients()]))
        assert bucket.buffer().dim() == 1
        assert [tuple(g.shape) for g in bucket.gradients()] == [tuple(p.shape) for p in bucket.parameters()]
        fut = dist.all_reduce(bucket.buffer(), async_op=True).get_future()
        return fut.then(lambda f: f.value()[0] * 2)

    model = make_model(device)
    ddp = DDP(model, bucket_cap_mb=0.00005)
    buckets = len(ddp._reducer.buckets)
    assert buckets >= 3, buckets
    ddp.register_comm_hook("state", doubled_sum)
    plain = make_model(device)
    x, y = local_data(device, rank)
    F.mse_loss(plain(x), y).backward()
    local = {id(q): g for q, g in zip(model.parameters(), grads_of(plain))}
    for _ in range(2):
        calls.clear()
        ddp.zero_grad()
        F.mse_loss(ddp(x), y).backward()
        assert [c[1] for c in calls] == list(range(buckets)), [c[1] for c in calls]
        assert [c[2] for c in calls] == [False] * (buckets - 1) + [True]
        assert all(c[0] == "state" for c in calls)
        seen = [i for c in calls for i in c[3]]
        assert sorted(seen) == sorted(id(p) for p in model.parameters())    # each parameter in one bucket
        for c in calls:                                    # the hook gets this rank's undivided gradients
            for pid, g in zip(c[3], c[4]):
                np.testing.assert_allclose(g, local[pid], rtol=1e-6, atol=1e-7)
    want = mean_local_grads(device, rank)
    assert_grads_close(grads_of(ddp), [2 * n * w for w in want], "allreduce")
    equal_on_all_ranks(grads_of(ddp))


def fp16_training_keeps_replicas_identical(device, rank, n):
    model = make_model(device, seed=10 + rank)        # DDP broadcasts rank 0's
    ddp = DDP(model, bucket_cap_mb=0.0006)
    ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    opt = npusim.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    first = [p.detach().cpu().numpy().copy() for p in model.parameters()]
    for step in range(4):
        x, y = local_data(device, rank, step)
        opt.zero_grad()
        F.mse_loss(ddp(x), y).backward()
        opt.step()
        equal_on_all_ranks([p.detach().cpu().numpy() for p in model.parameters()])
    assert any(not np.allclose(a, p.detach().cpu().numpy()) for a, p in zip(first, model.parameters()))


def no_sync_skips_the_hook(device, rank, n):
    calls = []

    def counting(state, bucket):
        calls.append(bucket.index())
        return default_hooks.allreduce_hook(state, bucket)

    ddp = DDP(make_model(device), bucket_cap_mb=0.0006)
    ddp.register_comm_hook(None, counting)
    with ddp.no_sync():
        for step in (0, 1):
            x, y = local_data(device, rank, step)
            F.mse_loss(ddp(x), y).backward()
    assert calls == []
    x, y = local_data(device, rank, 2)
    F.mse_loss(ddp(x), y).backward()
    assert calls == [0, 1], calls
    assert_grads_close(grads_of(ddp), mean_local_grads(device, rank, steps=(0, 1, 2)), "allreduce")


class Branchy(nn.Module):
    """``odd`` is used only on odd ranks, ``never`` nowhere."""

    def __init__(self):
        super().__init__()
        self.shared = nn.Linear(4, 4)
        self.odd = nn.Linear(4, 4)
        self.never = nn.Linear(4, 4)

    def forward(self, x, use_odd):
        h = self.shared(x)
        return self.odd(h) if use_odd else h


def unused_parameters_with_a_hook(device, rank, n):
    npusim.manual_seed(3)
    ddp = DDP(Branchy().to(device), find_unused_parameters=True)
    ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    x = npusim.ones(2, 4, device=device) * (rank + 1)
    for _ in range(2):
        ddp.zero_grad()
        ddp(x, rank % 2 == 1).sum().backward()
    module = ddp.module
    assert module.never.weight.grad is None and module.never.bias.grad is None
    assert module.odd.weight.grad is not None
    equal_on_all_ranks([p.grad.cpu().numpy() for p in (module.shared.weight, module.odd.weight)])


def noop_hook_keeps_local_gradients(device, rank, n):
    def noop(state, bucket):
        fut = Future()
        fut.set_result(bucket.buffer())
        return fut

    ddp = DDP(make_model(device))
    ddp.register_comm_hook(None, noop)
    plain = make_model(device)
    x, y = local_data(device, rank)
    F.mse_loss(plain(x), y).backward()
    F.mse_loss(ddp(x), y).backward()
    assert_grads_close(grads_of(ddp), grads_of(plain), "allreduce")      # no communication, no division


CHECKS = [("default_hooks_average", default_hooks_average), ("custom_hook_calls", custom_hook_calls),
          ("fp16_training_keeps_replicas_identical", fp16_training_keeps_replicas_identical),
          ("no_sync_skips_the_hook", no_sync_skips_the_hook),
          ("unused_parameters_with_a_hook", unused_parameters_with_a_hook),
          ("noop_hook_keeps_local_gradients", noop_hook_keeps_local_gradients)]


def main():
    dist.init_process_group("mpi", timeout=timedelta(seconds=30))
    rank, n = dist.get_rank(), dist.get_world_size()
    set_rank(rank)
    for device in ("cpu", f"npu:{rank % npusim.npu.device_count()}"):
        for name, fn in CHECKS:
            report(device.split(":")[0], name, fn, device, rank, n)
    dist.destroy_process_group()
    done()


if __name__ == "__main__":
    main()
