"""SyncBatchNorm on each rank, on the npu; run under mpiexec.

The reference is plain batch norm on the concatenated batch, computed by every rank on all the data: each rank's
SyncBatchNorm output and input gradient must equal the reference's rows for its share, its running statistics the
reference's, and its weight and bias gradients summed over the ranks the reference's.
"""
from __future__ import annotations

from datetime import timedelta

import numpy as np

import npusim
import npusim.distributed as dist
from npusim import nn
from script_support import done, report, set_rank

LOCAL = 3          # samples per rank


def matches_batch_norm_of_the_whole_batch(device, rank, n):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((n * LOCAL, 4, 5, 2)).astype(np.float32)
    w = rng.standard_normal((n * LOCAL, 4, 5, 2)).astype(np.float32)
    npusim.manual_seed(0)
    reference = nn.BatchNorm2d(4).to(device)
    with npusim.no_grad():
        reference.weight.uniform_(0.5, 1.5)
        reference.bias.uniform_(-0.5, 0.5)
    synced = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.BatchNorm2d(4))).to(device)
    synced[0].load_state_dict(reference.state_dict())
    share = slice(rank * LOCAL, (rank + 1) * LOCAL)
    xr = npusim.tensor(x, device=device, requires_grad=True)
    xs = npusim.tensor(x[share], device=device, requires_grad=True)
    for step in range(2):
        xr.grad = xs.grad = None
        reference.zero_grad()
        synced.zero_grad()
        out_ref = reference(xr)
        out = synced(xs)
        (out_ref * npusim.tensor(w, device=device)).sum().backward()
        (out * npusim.tensor(w[share], device=device)).sum().backward()
        # float32 statistics over n * 30 values: the two summation orders differ by a few ulps
        np.testing.assert_allclose(out.detach().cpu().numpy(), out_ref.detach().cpu().numpy()[share],
                                   rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(xs.grad.cpu().numpy(), xr.grad.cpu().numpy()[share], rtol=1e-4, atol=1e-5)
        for name in ("weight", "bias"):
            total = getattr(synced[0], name).grad.clone()
            dist.all_reduce(total)
            np.testing.assert_allclose(total.cpu().numpy(), getattr(reference, name).grad.cpu().numpy(),
                                       rtol=1e-4, atol=1e-5)
        for name in ("running_mean", "running_var"):
            np.testing.assert_allclose(getattr(synced[0], name).cpu().numpy(),
                                       getattr(reference, name).cpu().numpy(), rtol=1e-5, atol=1e-6)
    assert int(synced[0].num_batches_tracked) == 2


def eval_mode_uses_running_statistics(device, rank, n):
    bn = nn.SyncBatchNorm(3).to(device)
    with npusim.no_grad():
        bn.running_mean.fill_(1.0)
        bn.running_var.fill_(4.0)
    bn.eval()
    x = npusim.full((2, 3), 3.0, device=device) + rank      # different on each rank: no syncing in eval
    np.testing.assert_allclose(bn(x).detach().cpu().numpy(), np.full((2, 3), (2.0 + rank) / np.sqrt(4.0 + 1e-5)),
                               rtol=1e-6)


CHECKS = [("matches_batch_norm_of_the_whole_batch", matches_batch_norm_of_the_whole_batch),
          ("eval_mode_uses_running_statistics", eval_mode_uses_running_statistics)]


def main():
    dist.init_process_group("mpi", timeout=timedelta(seconds=120))
    rank, n = dist.get_rank(), dist.get_world_size()
    set_rank(rank)
    device = f"npu:{rank % npusim.npu.device_count()}"
    for name, fn in CHECKS:
        report("npu", name, fn, device, rank, n)
    dist.destroy_process_group()
    done()


if __name__ == "__main__":
    main()
