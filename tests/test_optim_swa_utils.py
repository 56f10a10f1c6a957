"""``optim.swa_utils``: AveragedModel's averages, SWALR's learning rates and update_bn's statistics as torch's
from the same weights, and torch's errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import host

import npusim
import npusim.nn as nn
from npusim.optim import swa_utils


def _models(lib, device=None):
    m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2))
    return m if device is None else m.to(device)


def _load(torch_model, model, device):
    model.load_state_dict({k: npusim.tensor(v.detach().numpy()).to(device)
                           for k, v in torch_model.state_dict().items()})


def _perturb(torch_model, model, device, seed):
    # the same new weights and batch statistics in both models, as a training step would leave them
    rng = np.random.default_rng(seed)
    new = {k: (rng.standard_normal(v.shape).astype(np.float32) if v.is_floating_point()
               else v.numpy() + rng.integers(1, 5)) for k, v in torch_model.state_dict().items()}
    import torch
    torch_model.load_state_dict({k: torch.tensor(v) for k, v in new.items()})
    model.load_state_dict({k: npusim.tensor(v).to(device) for k, v in new.items()})


AVERAGES = {
    "swa": lambda lib: {},
    "swa_avg_fn": lambda lib: {"avg_fn": lib.optim.swa_utils.get_swa_avg_fn()},
    "swa_multi": lambda lib: {"multi_avg_fn": lib.optim.swa_utils.get_swa_multi_avg_fn()},
    "ema_avg_fn": lambda lib: {"avg_fn": lib.optim.swa_utils.get_ema_avg_fn(0.9)},
    "ema_multi": lambda lib: {"multi_avg_fn": lib.optim.swa_utils.get_ema_multi_avg_fn(0.75)},
}


@pytest.mark.oracle
@pytest.mark.parametrize("average", list(AVERAGES))
@pytest.mark.parametrize("use_buffers", [False, True])
def test_averaged_model_matches_torch(torch, device, average, use_buffers):
    if use_buffers and average == "swa_multi" or (use_buffers and average == "swa" and device != "cpu"):
        pytest.skip("integer buffers meet addcdiv_: test_swa_multi_avg_over_integer_buffers_refuses_as_torch")
    tm = _models(torch)
    nm = _models(npusim, device)
    _load(tm, nm, device)
    t_avg = torch.optim.swa_utils.AveragedModel(tm, use_buffers=use_buffers, **AVERAGES[average](torch))
    n_avg = swa_utils.AveragedModel(nm, use_buffers=use_buffers, **AVERAGES[average](npusim))
    assert list(n_avg.state_dict()) == list(t_avg.state_dict())
    for step in range(4):
        t_avg.update_parameters(tm)
        n_avg.update_parameters(nm)
        _perturb(tm, nm, device, step)
    t_sd, n_sd = t_avg.state_dict(), n_avg.state_dict()
    assert list(n_sd) == list(t_sd)
    for k, v in t_sd.items():
        assert str(n_sd[k].dtype).split(".")[1] == str(v.dtype).split(".")[1], k
        # on the npu the default average is a lerp (torch's foreach path there), on the cpu a division; torch's
        # vectorised cpu kernels (lerp, addcdiv) fuse multiply-adds on some CPUs and not on others, so even the
        # cpu agrees only to an ulp or two of float32 (2.4e-7)
        np.testing.assert_allclose(host(n_sd[k]), v.numpy(), rtol=2.4e-7 if device == "cpu" else 2e-6, atol=1e-7,
                                   err_msg=k)
    x = np.random.default_rng(9).standard_normal((5, 3)).astype(np.float32)
    t_avg.eval()
    n_avg.eval()
    np.testing.assert_allclose(host(n_avg(npusim.tensor(x, device=device))), t_avg(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.oracle
def test_swa_multi_avg_over_integer_buffers_refuses_as_torch(torch, device):
    # num_batches_tracked (int64) goes through addcdiv_, which refuses integer division: in torch with
    # get_swa_multi_avg_fn anywhere, and with the default average where torch has foreach kernels (cuda, npu)
    cases = [(torch, None, "multi"), (npusim, "cpu", "multi"), (npusim, device, "multi")]
    if device != "cpu":
        cases.append((npusim, device, "default"))
    for lib, dev, how in cases:
        m = _models(lib, dev)
        kw = {"multi_avg_fn": lib.optim.swa_utils.get_swa_multi_avg_fn()} if how == "multi" else {}
        avg = lib.optim.swa_utils.AveragedModel(m, use_buffers=True, **kw)
        avg.update_parameters(m)
        with pytest.raises(RuntimeError, match="^Integer division with addcdiv is no longer supported"):
            avg.update_parameters(m)


def test_averaged_model_copies_to_device_and_keeps_the_source_untouched(device):
    m = nn.Linear(2, 2)
    avg = swa_utils.AveragedModel(m, device=device)
    assert avg.module.weight.device.type == device and avg.n_averaged.device.type == device
    assert avg.n_averaged.dtype == npusim.long and avg.module is not m
    before = host(m.weight).copy()
    avg.update_parameters(m)
    with npusim.no_grad():
        m.weight.add_(2.0)
    avg.update_parameters(m)
    np.testing.assert_allclose(host(avg.module.weight), before + 1.0, rtol=1e-6)
    np.testing.assert_array_equal(host(m.weight), before + 2.0)
    assert int(avg.n_averaged) == 2


@pytest.mark.oracle
@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("anneal_epochs", [0, 1, 3])
def test_swalr_learning_rates_match_torch(torch, strategy, anneal_epochs):
    def lrs(lib):
        p1 = lib.nn.Parameter(lib.zeros(2))
        p2 = lib.nn.Parameter(lib.zeros(2))
        opt = lib.optim.SGD([{"params": [p1]}, {"params": [p2], "lr": 0.5}], lr=0.1)
        sched = lib.optim.swa_utils.SWALR(opt, swa_lr=[0.05, 0.02], anneal_epochs=anneal_epochs,
                                          anneal_strategy=strategy)
        out = [sched.get_last_lr()]
        for _ in range(6):
            opt.step()
            sched.step()
            out.append(sched.get_last_lr())
        return out, [g["swa_lr"] for g in opt.param_groups], sorted(sched.state_dict())

    assert lrs(npusim) == lrs(torch)


@pytest.mark.oracle
def test_swalr_after_another_scheduler_and_state_dict_round_trip_as_torch(torch):
    def run(lib):
        p = lib.nn.Parameter(lib.zeros(2))
        opt = lib.optim.SGD([p], lr=1.0)
        cos = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
        out = []
        for _ in range(3):
            opt.step()
            cos.step()
        swa = lib.optim.swa_utils.SWALR(opt, swa_lr=0.1, anneal_epochs=4)
        for _ in range(2):
            opt.step()
            swa.step()
            out.append(swa.get_last_lr()[0])
        sd = swa.state_dict()
        swa2 = lib.optim.swa_utils.SWALR(opt, swa_lr=0.3, anneal_strategy="linear")
        swa2.load_state_dict(sd)
        for _ in range(3):
            opt.step()
            swa2.step()
            out.append(swa2.get_last_lr()[0])
        return out, swa2.anneal_func(0.5)

    assert run(npusim) == run(torch)


@pytest.mark.oracle
def test_update_bn_matches_torch(torch, device):
    tm, nm = _models(torch), _models(npusim, device)
    _load(tm, nm, device)
    tm.eval()
    nm.eval()
    rng = np.random.default_rng(3)
    batches = [rng.standard_normal((n, 3)).astype(np.float32) for n in (4, 6, 5)]
    # a batch may be (input, target): only the input is fed
    torch.optim.swa_utils.update_bn([(torch.tensor(b), 0) for b in batches], tm)
    swa_utils.update_bn([(npusim.tensor(b), 0) for b in batches], nm, device=device)
    assert not nm.training and nm[1].momentum == 0.1
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(host(nm.state_dict()[k]), v.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)
    plain = nn.Linear(2, 2)
    swa_utils.update_bn([npusim.ones(1, 2)], plain)  # nothing to do without BatchNorm


@pytest.mark.oracle
def test_errors_as_torch(torch):
    for lib in (torch, npusim):
        su = lib.optim.swa_utils
        with pytest.raises(ValueError, match=r"^Invalid decay value 1.5 provided. Please provide a value in \[0,1\] "
                                             r"range.$"):
            su.get_ema_avg_fn(1.5)
        with pytest.raises(ValueError, match="^Invalid decay value -0.1 provided"):
            su.get_ema_multi_avg_fn(-0.1)
        with pytest.raises(AssertionError, match="^Only one of avg_fn and multi_avg_fn should be provided$"):
            su.AveragedModel(lib.nn.Linear(1, 1), avg_fn=su.get_swa_avg_fn(), multi_avg_fn=su.get_swa_multi_avg_fn())
        opt = lib.optim.SGD([lib.nn.Parameter(lib.zeros(1))], lr=0.1)
        with pytest.raises(ValueError, match="^anneal_strategy must be one of 'cos' or 'linear', instead got "
                                             "exp$"):
            su.SWALR(opt, 0.05, anneal_strategy="exp")
        with pytest.raises(ValueError, match="^anneal_epochs must be equal or greater than 0, got -1$"):
            su.SWALR(opt, 0.05, anneal_epochs=-1)
        with pytest.raises(ValueError, match="^swa_lr must have the same length as optimizer.param_groups. swa_lr "
                                             "has 2 values, param_groups has 1.$"):
            su.SWALR(opt, [0.05, 0.01])
        sched = su.SWALR(opt, 0.05)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            sched.get_lr()
        assert "please use `get_last_lr()`" in str(w[0].message)
