"""``nn.DataParallel`` (and ``nn.parallel``'s scatter, gather, replicate, parallel_apply, data_parallel) across the
npu devices of one process, and ``nn.SyncBatchNorm``.

DataParallel's output and gradients must be those of the module on the whole batch, with the gradients summed on
``device_ids[0]``. SyncBatchNorm is plain batch norm without a process group or in a group of one, and across 2
ranks (real processes over MPI) gives each rank the statistics of the whole batch. Oracle tests compare with
torch's module (DataParallel's values against torch's module on the whole batch, SyncBatchNorm's as torch's is
without a process group, and ``convert_sync_batchnorm``'s result).
"""
from __future__ import annotations

import importlib.util
import re

import numpy as np
import pytest

import npusim
import npusim.distributed as dist
from conftest import host
from distributed_scripts.harness import Job, check_lines, mpiexec_command
from npusim import nn
from npusim.nn import parallel

HAS_MPI = importlib.util.find_spec("mpi4py") is not None
RNG = np.random.default_rng(0)


def _needs_two_npus():
    if not npusim.npu.is_available() or npusim.npu.device_count() < 2:
        pytest.skip("needs two npu devices")


def _model(seed=0):
    npusim.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 3))


# --- scatter, gather, replicate -------------------------------------------------------------------------------------
def test_scatter_splits_tensors_and_copies_other_objects():
    _needs_two_npus()
    x = npusim.arange(10.0).reshape(5, 2)
    parts = parallel.scatter((x, "tag", {"y": x}), [0, 1])
    assert len(parts) == 2
    (a, tag_a, kw_a), (b, tag_b, kw_b) = parts
    assert a.device == npusim.device("npu", 0) and b.device == npusim.device("npu", 1)
    assert a.shape == (3, 2) and b.shape == (2, 2) and tag_a == tag_b == "tag"
    np.testing.assert_array_equal(host(kw_b["y"]), host(x[3:]))
    inputs, kwargs = parallel.scatter_gather.scatter_kwargs((x,), {"scale": 2}, [0, 1])
    assert len(inputs) == len(kwargs) == 2 and kwargs[1] == {"scale": 2}


def test_a_batch_smaller_than_the_devices_uses_fewer_devices():
    _needs_two_npus()
    assert len(parallel.scatter((npusim.ones(1, 3),), [0, 1])) == 1


def test_gather_concatenates_on_the_target_and_is_differentiable():
    _needs_two_npus()
    a = npusim.ones(2, 3, device="npu:0", requires_grad=True)
    b = npusim.full((1, 3), 2.0, device="npu:1", requires_grad=True)
    out = parallel.gather([(a, {"k": a}), (b, {"k": b})], 0)
    assert out[0].device == npusim.device("npu", 0) and out[0].shape == (3, 3)
    assert out[1]["k"].shape == (3, 3)
    (out[0] * 3).sum().backward()
    assert b.grad.device == npusim.device("npu", 1)
    np.testing.assert_array_equal(host(b.grad), np.full((1, 3), 3.0))
    assert parallel.gather([npusim.ones(2), npusim.ones(2)], -1).device.type == "cpu"
    with pytest.warns(UserWarning, match="all input tensors were scalars"):
        assert parallel.gather([npusim.tensor(1.0), npusim.tensor(2.0)], -1).shape == (2,)


def test_replicas_share_the_original_graph():
    _needs_two_npus()
    model = _model().to("npu:0")
    replicas = parallel.replicate(model, [0, 1])
    assert replicas[0][0].weight is model[0].weight                 # the source device uses the originals
    assert replicas[1][0].weight.device == npusim.device("npu", 1)
    assert list(replicas[1].parameters()) == []                      # as torch's replicas: plain attributes
    x = npusim.randn(2, 5)
    outs = parallel.parallel_apply(replicas, [(x.to("npu:0"),), (x.to("npu:1"),)])
    np.testing.assert_allclose(host(outs[0]), host(outs[1]), rtol=1e-6)
    outs[1].sum().backward()
    assert model[0].weight.grad is not None and model[0].weight.grad.device == npusim.device("npu", 0)


def test_parallel_apply_raises_a_replicas_error_in_the_caller():
    _needs_two_npus()

    class Fails(nn.Module):
        def forward(self, x):
            if x.device.index == 1:
                raise KeyError("bad replica")
            return x

    with pytest.raises(KeyError, match="in replica 1 on device npu:1"):
        parallel.parallel_apply([Fails(), Fails()], [(npusim.ones(1, device="npu:0"),),
                                                     (npusim.ones(1, device="npu:1"),)], None, [0, 1])


# --- DataParallel ---------------------------------------------------------------------------------------------------
def test_data_parallel_equals_the_module_on_the_whole_batch():
    _needs_two_npus()
    reference, model = _model(), _model()
    dp = nn.DataParallel(model.to("npu:0"))
    assert dp.device_ids == [0, 1] and dp.output_device == 0
    x = npusim.randn(7, 5)
    w = npusim.randn(7, 3)
    out = dp(x.to("npu:0"))
    assert out.device == npusim.device("npu", 0) and out.shape == (7, 3)
    (out * w.to("npu:0")).sum().backward()
    expected = reference(x)
    (expected * w).sum().backward()
    # float32 matmuls of the same rows in the same order: equal up to the last bit or two
    np.testing.assert_allclose(host(out), host(expected), rtol=1e-6, atol=1e-6)
    for p, q in zip(model.parameters(), reference.parameters()):
        assert p.grad.device == npusim.device("npu", 0)
        np.testing.assert_allclose(host(p.grad), host(q.grad), rtol=1e-5, atol=1e-6)   # two partial sums added


def test_data_parallel_trains_with_an_optimizer_and_keeps_device_zero_buffers():
    _needs_two_npus()
    npusim.manual_seed(1)
    model = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 1)).to("npu:0")
    dp = nn.DataParallel(model, device_ids=["npu:0", "npu:1"], output_device=npusim.device("npu:1"))
    opt = npusim.optim.SGD(dp.parameters(), lr=0.1)
    x, y = npusim.randn(8, 4, device="npu:0"), npusim.randn(8, 1, device="npu:1")
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = nn.functional.mse_loss(dp(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert int(model[1].num_batches_tracked) == 5            # replica 0 updates the module's own buffers
    assert model[0].weight.device == npusim.device("npu", 0)


def test_data_parallel_kwargs_tuple_outputs_and_functional_form():
    _needs_two_npus()

    class Pair(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 2)

        def forward(self, x, scale=1.0):
            y = self.lin(x) * scale
            return y, {"sum": y.sum(1)}

    module = Pair().to("npu:0")
    x = npusim.randn(5, 3, device="npu:0")
    out, extra = nn.DataParallel(module)(x, scale=2.0)
    np.testing.assert_allclose(host(out), host(module(x, 2.0)[0]), rtol=1e-6, atol=1e-6)
    assert extra["sum"].shape == (5,)
    functional = parallel.data_parallel(module, (x,), [0, 1], module_kwargs={"scale": 2.0})
    np.testing.assert_allclose(host(functional[0]), host(out), rtol=1e-6, atol=1e-6)


def test_data_parallel_refuses_a_module_off_device_zero_and_one_device_moves_it():
    _needs_two_npus()
    with pytest.raises(RuntimeError, match=r"module must have its parameters and buffers on device npu:0"):
        nn.DataParallel(_model())(npusim.randn(2, 5))
    single = nn.DataParallel(_model(), device_ids=[1])
    assert next(single.module.parameters()).device == npusim.device("npu", 1)
    assert single(npusim.randn(2, 5, device="npu:1")).device == npusim.device("npu", 1)


def test_data_parallel_state_dict_has_the_module_prefix():
    dp = nn.DataParallel(_model().to("npu:0"))
    assert list(dp.state_dict()) == ["module." + key for key in dp.module.state_dict()]


# --- SyncBatchNorm --------------------------------------------------------------------------------------------------
def test_sync_batch_norm_without_a_process_group_is_batch_norm(device):
    x = npusim.tensor(RNG.standard_normal((4, 3, 5)).astype(np.float32), device=device)
    plain, synced = nn.BatchNorm1d(3).to(device), nn.SyncBatchNorm(3).to(device)
    np.testing.assert_array_equal(host(synced(x)), host(plain(x)))
    np.testing.assert_array_equal(host(synced.running_var), host(plain.running_var))
    with pytest.raises(ValueError, match="expected at least 2D input"):
        synced(npusim.ones(3, device=device))
    with pytest.raises(ValueError, match="number of input channels should be non-zero"):
        nn.SyncBatchNorm(0)(npusim.ones(2, 0))


def test_convert_sync_batchnorm_keeps_parameters_buffers_and_mode():
    model = nn.Sequential(nn.Conv2d(1, 2, 1), nn.BatchNorm2d(2), nn.Sequential(nn.BatchNorm1d(2, affine=False)))
    model[1].eval()
    weight = model[1].weight
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert isinstance(converted[1], nn.SyncBatchNorm) and isinstance(converted[2][0], nn.SyncBatchNorm)
    assert converted[1].weight is weight and not converted[1].training
    assert converted[2][0].weight is None and isinstance(converted[0], nn.Conv2d)


def test_sync_batch_norm_in_a_group_of_one(world_of_one):
    x = npusim.randn(4, 3, device="npu")
    plain, synced = nn.BatchNorm1d(3).to("npu"), nn.SyncBatchNorm(3).to("npu")
    np.testing.assert_array_equal(host(synced(x)), host(plain(x)))
    assert world_of_one.calls == []                        # a group of one has nothing to synchronise
    with pytest.raises(ValueError, match="SyncBatchNorm expected input tensor to be on GPU"):
        nn.SyncBatchNorm(3)(npusim.randn(4, 3))


@pytest.mark.skipif(not HAS_MPI, reason="mpi4py and an MPI library are not installed")
def test_sync_batch_norm_across_two_ranks():
    job = Job(mpiexec_command(2, "sync_batchnorm_check.py"), 600)
    try:
        code, out, err, _ = job.result()
    finally:
        job.kill()
    assert code == 0, err
    assert sorted(re.findall(r"^\[(\d+)\] DONE$", out, re.MULTILINE)) == ["0", "1"]
    results = check_lines(out)
    for check in ("matches_batch_norm_of_the_whole_batch", "eval_mode_uses_running_statistics"):
        for rank in range(2):
            assert results.get((rank, "npu", check)) == "PASS", results.get((rank, "npu", check), "no line")


# --- oracle ---------------------------------------------------------------------------------------------------------
@pytest.mark.oracle
def test_data_parallel_matches_torch(torch):
    _needs_two_npus()
    model = _model().to("npu:0")
    t_model = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3)).double()
    t_model.load_state_dict({k: torch.tensor(host(v)) for k, v in model.state_dict().items()})
    model = model.double()
    x, w = RNG.standard_normal((6, 5)), RNG.standard_normal((6, 3))
    out = nn.DataParallel(model)(npusim.tensor(x, device="npu:0"))
    (out * npusim.tensor(w, device="npu:0")).sum().backward()
    t_out = t_model(torch.tensor(x))
    (t_out * torch.tensor(w)).sum().backward()
    # float64: the gradients are the sum of two partial sums instead of one, a few ulps apart
    np.testing.assert_allclose(host(out), t_out.detach().numpy(), rtol=1e-12, atol=1e-13)
    for p, q in zip(model.parameters(), t_model.parameters()):
        np.testing.assert_allclose(host(p.grad), q.grad.numpy(), rtol=1e-11, atol=1e-12)


@pytest.mark.oracle
@pytest.mark.parametrize("momentum", [0.1, None])
def test_sync_batch_norm_matches_torch_without_a_process_group(torch, device, momentum):
    x = RNG.standard_normal((4, 3, 2, 2))
    w = RNG.standard_normal((4, 3, 2, 2))
    t_bn = torch.nn.SyncBatchNorm(3, momentum=momentum).double()
    n_bn = nn.SyncBatchNorm(3, momentum=momentum).double().to(device)
    tx, nx = torch.tensor(x, requires_grad=True), npusim.tensor(x, device=device, requires_grad=True)
    for _ in range(2):
        t_out, n_out = t_bn(tx), n_bn(nx)
    (t_out * torch.tensor(w)).sum().backward()
    (n_out * npusim.tensor(w, device=device)).sum().backward()
    # float64 batch norm over 16 values per channel
    np.testing.assert_allclose(host(n_out), t_out.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(host(nx.grad), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(host(n_bn.weight.grad), t_bn.weight.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(host(n_bn.running_var), t_bn.running_var.numpy(), rtol=1e-12)
    assert int(n_bn.num_batches_tracked) == int(t_bn.num_batches_tracked)


@pytest.mark.oracle
def test_convert_sync_batchnorm_matches_torch(torch):
    t_model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(
        torch.nn.Sequential(torch.nn.BatchNorm2d(2), torch.nn.Sequential(torch.nn.BatchNorm3d(4, momentum=None))))
    n_model = nn.SyncBatchNorm.convert_sync_batchnorm(
        nn.Sequential(nn.BatchNorm2d(2), nn.Sequential(nn.BatchNorm3d(4, momentum=None))))
    t_mods = [(type(m).__name__, getattr(m, "momentum", "-")) for m in t_model.modules()]
    n_mods = [(type(m).__name__, getattr(m, "momentum", "-")) for m in n_model.modules()]
    assert n_mods == t_mods
    assert list(n_model.state_dict()) == list(t_model.state_dict())
    assert repr(n_model[0]) == repr(t_model[0])
