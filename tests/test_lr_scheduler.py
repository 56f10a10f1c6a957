"""npusim.optim.lr_scheduler: lr sequences (against torch), the step-order warning, state dicts, errors."""
from __future__ import annotations

import math
import warnings

import pytest

import npusim
from npusim import optim
from npusim.optim import lr_scheduler as S


def make_optimizer(mod, lrs=(0.5,)):
    groups = [{"params": [mod.zeros(1, requires_grad=True)], "lr": lr} for lr in lrs]
    return mod.optim.SGD(groups, lr=0.1)


# each builder takes (lr_scheduler module, optimizer), so one body serves npusim and torch
SCHEDULES = {
    "StepLR": lambda m, o: m.StepLR(o, step_size=3, gamma=0.5),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=7, eta_min=0.01),
    "LambdaLR": lambda m, o: m.LambdaLR(o, lr_lambda=lambda epoch: 0.9 ** epoch),
    "LambdaLR-per-group": lambda m, o: m.LambdaLR(o, lr_lambda=[lambda e: 1.0 / (e + 1), lambda e: 0.5 ** e]),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=6),
    "LinearLR-decay": lambda m, o: m.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=4),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.9),
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=4),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=8, power=2.0),
    "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, lr_lambda=lambda epoch: 0.95),
    "SequentialLR": lambda m, o: m.SequentialLR(
        o, schedulers=[m.LinearLR(o, start_factor=0.1, total_iters=4), m.CosineAnnealingLR(o, T_max=10)],
        milestones=[4]),
}


def lr_sequence(mod, build, steps=30, lrs=(0.5, 0.2)):
    opt = make_optimizer(mod, lrs)
    sched = build(mod.optim.lr_scheduler, opt)
    seq = [sched.get_last_lr()]
    for _ in range(steps):
        opt.step()
        sched.step()
        seq.append(sched.get_last_lr())
        assert [g["lr"] for g in opt.param_groups] == seq[-1]
    return seq


@pytest.mark.oracle
@pytest.mark.parametrize("name", list(SCHEDULES))
def test_lr_sequence_matches_torch(torch, name):
    ours = lr_sequence(npusim, SCHEDULES[name])
    theirs = lr_sequence(torch, SCHEDULES[name])
    assert ours == theirs  # same recursive formulas: equal to the last bit


@pytest.mark.oracle
@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "CosineAnnealingLR", "LinearLR", "ExponentialLR"])
def test_step_with_epoch_uses_closed_form_like_torch(torch, name):
    def run(mod):
        opt = make_optimizer(mod)
        sched = SCHEDULES[name](mod.optim.lr_scheduler, opt)
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for epoch in (3, 7, 5):
                opt.step()
                sched.step(epoch)
                out.append(sched.get_last_lr())
        return out
    assert run(npusim) == run(torch)


def test_step_lr_by_hand():
    seq = [lrs[0] for lrs in lr_sequence(npusim, SCHEDULES["StepLR"], steps=7, lrs=(0.8,))]
    assert seq == [0.8, 0.8, 0.8, 0.4, 0.4, 0.4, 0.2, 0.2]


def test_cosine_reaches_eta_min_at_t_max_and_climbs_back():
    seq = [lrs[0] for lrs in lr_sequence(npusim, SCHEDULES["CosineAnnealingLR"], steps=14, lrs=(1.0,))]
    assert seq[0] == 1.0
    assert math.isclose(seq[7], 0.01, abs_tol=1e-12)
    assert math.isclose(seq[14], 1.0, rel_tol=1e-9)
    expected_3 = 0.01 + (1.0 - 0.01) * (1 + math.cos(math.pi * 3 / 7)) / 2
    assert math.isclose(seq[3], expected_3, rel_tol=1e-12)


def test_linear_warmup_by_hand():
    seq = [lrs[0] for lrs in lr_sequence(npusim, SCHEDULES["LinearLR"], steps=8, lrs=(1.0,))]
    expected = [0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0, 1.0, 1.0]
    assert all(math.isclose(a, b, rel_tol=1e-12) for a, b in zip(seq, expected))


def test_lambda_lr_by_hand():
    seq = [lrs[0] for lrs in lr_sequence(npusim, SCHEDULES["LambdaLR"], steps=3, lrs=(2.0,))]
    assert seq == [2.0, 2.0 * 0.9, 2.0 * 0.9 ** 2, 2.0 * 0.9 ** 3]


def test_scheduler_records_initial_lr_and_base_lrs():
    opt = make_optimizer(npusim, (0.5, 0.2))
    sched = S.StepLR(opt, step_size=2)
    assert [g["initial_lr"] for g in opt.param_groups] == [0.5, 0.2]
    assert sched.base_lrs == [0.5, 0.2] and sched.last_epoch == 0 and sched.get_last_lr() == [0.5, 0.2]


# --- warnings ----------------------------------------------------------------------------------------------

def test_stepping_scheduler_before_optimizer_warns():
    opt = make_optimizer(npusim)
    sched = S.StepLR(opt, step_size=1)
    with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler\.step\(\)` before `optimizer\.step\(\)`"):
        sched.step()


def test_right_order_does_not_warn():
    opt = make_optimizer(npusim)
    sched = S.StepLR(opt, step_size=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            opt.step()
            sched.step()


def test_overridden_optimizer_step_warns():
    opt = make_optimizer(npusim)
    sched = S.ExponentialLR(opt, gamma=0.5)
    opt.step = lambda closure=None: None
    with pytest.warns(UserWarning, match=r"Seems like `optimizer\.step\(\)` has been overridden after learning rate"):
        sched.step()


def test_step_with_epoch_warns_deprecation():
    opt = make_optimizer(npusim)
    sched = S.StepLR(opt, step_size=2, gamma=0.5)
    opt.step()
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not necessary"):
        sched.step(4)
    assert sched.get_last_lr() == [0.125] and sched.last_epoch == 4


def test_get_lr_outside_step_warns():
    sched = S.StepLR(make_optimizer(npusim), step_size=2)
    with pytest.warns(UserWarning, match=r"please use `get_last_lr\(\)`"):
        sched.get_lr()


# --- state dicts -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", [n for n in SCHEDULES if not n.startswith("LambdaLR") and n != "MultiplicativeLR"])
def test_state_dict_round_trip_continues_the_sequence(name):
    opt = make_optimizer(npusim, (0.5, 0.2))
    sched = SCHEDULES[name](S, opt)
    for _ in range(5):
        opt.step()
        sched.step()
    sd = sched.state_dict()
    assert "optimizer" not in sd and sd["last_epoch"] == 5
    opt_sd = opt.state_dict()

    opt2 = make_optimizer(npusim, (9.0, 9.0))
    sched2 = SCHEDULES[name](S, opt2)
    sched2.load_state_dict(sd)
    opt2.load_state_dict(opt_sd)
    for _ in range(6):
        opt.step()
        sched.step()
        opt2.step()
        sched2.step()
        assert sched2.get_last_lr() == sched.get_last_lr()
        assert [g["lr"] for g in opt2.param_groups] == [g["lr"] for g in opt.param_groups]


def test_lambda_lr_state_dict_saves_callable_objects_not_functions():
    class Decay:
        def __init__(self, rate):
            self.rate = rate

        def __call__(self, epoch):
            return self.rate ** epoch

    opt = make_optimizer(npusim, (1.0, 1.0))
    sched = S.LambdaLR(opt, [lambda e: 1.0, Decay(0.5)])
    sd = sched.state_dict()
    assert sd["lr_lambdas"] == [None, {"rate": 0.5}]
    sd["lr_lambdas"][1] = {"rate": 0.25}
    sched.load_state_dict(sd)
    assert sched.lr_lambdas[1].rate == 0.25
    opt.step()
    sched.step()
    assert sched.get_last_lr() == [1.0, 0.25]


@pytest.mark.oracle
def test_state_dict_keys_match_torch(torch):
    for name in ["StepLR", "CosineAnnealingLR", "LinearLR", "SequentialLR"]:
        ours = SCHEDULES[name](S, make_optimizer(npusim)).state_dict()
        theirs = SCHEDULES[name](torch.optim.lr_scheduler, make_optimizer(torch)).state_dict()
        assert sorted(ours) == sorted(theirs), name


def test_resuming_with_last_epoch():
    opt = make_optimizer(npusim, (1.0,))
    sched = S.StepLR(opt, step_size=2, gamma=0.5)
    for _ in range(3):
        opt.step()
        sched.step()
    resumed = S.StepLR(opt, step_size=2, gamma=0.5, last_epoch=sched.last_epoch)
    assert resumed.base_lrs == [1.0] and resumed.last_epoch == 4


# --- errors ------------------------------------------------------------------------------------------------

def _constructor_errors(mod):
    m = mod.optim.lr_scheduler
    opt = make_optimizer(mod, (0.5,))
    other = make_optimizer(mod, (0.5,))
    return [
        (lambda: m.StepLR("not an optimizer", step_size=2), TypeError, "str is not an Optimizer"),
        (lambda: m.LambdaLR(opt, [lambda e: 1.0, lambda e: 1.0]), ValueError, "Expected 1 lr_lambdas, but got 2"),
        (lambda: m.LinearLR(opt, start_factor=0), ValueError,
         "Starting multiplicative factor expected to be greater than 0 and less or equal to 1."),
        (lambda: m.LinearLR(opt, end_factor=1.5), ValueError,
         "Ending multiplicative factor expected to be between 0 and 1."),
        (lambda: m.ConstantLR(opt, factor=2.0), ValueError,
         "Constant multiplicative factor expected to be between 0 and 1."),
        (lambda: m.MultiplicativeLR(opt, lr_lambda=3), TypeError, "lr_lambda should be a function, but got int"),
        (lambda: m.SequentialLR(opt, schedulers=[], milestones=[]), ValueError,
         "SequentialLR expects at least one scheduler, but got no scheduler."),
        (lambda: m.SequentialLR(opt, schedulers=[m.StepLR(opt, 2), m.StepLR(opt, 3)], milestones=[]), ValueError,
         "Sequential Schedulers expects number of schedulers provided to be one more than the number of milestone "
         "points, but got number of schedulers 2 and the number of milestones to be equal to 0"),
        (lambda: m.SequentialLR(opt, schedulers=[1], milestones=[]), TypeError,
         "SequentialLR at index 0 should have `optimizer` as its attribute."),
    ]


@pytest.mark.parametrize("case", range(9))
def test_bad_constructions_raise(case):
    fn, exc, msg = _constructor_errors(npusim)[case]
    with pytest.raises(exc) as err:
        fn()
    assert str(err.value) == msg


@pytest.mark.oracle
@pytest.mark.parametrize("case", range(9))
def test_bad_constructions_match_torch(torch, case):
    fn, exc, msg = _constructor_errors(torch)[case]
    with pytest.raises(exc) as err:
        fn()
    assert str(err.value) == msg


def test_sequential_lr_rejects_schedulers_of_another_optimizer():
    opt, other = make_optimizer(npusim), make_optimizer(npusim)
    with pytest.raises(ValueError, match="SequentialLR expects all schedulers to belong to the same optimizer"):
        S.SequentialLR(opt, schedulers=[S.StepLR(other, 2)], milestones=[])


def test_resuming_without_initial_lr_raises():
    with pytest.raises(KeyError, match=r"param 'initial_lr' is not specified in param_groups\[0\] when resuming"):
        S.StepLR(make_optimizer(npusim), step_size=2, last_epoch=3)


def test_scheduler_works_with_adam_training(device):
    p = npusim.tensor([5.0], device=device, requires_grad=True)
    opt = optim.Adam([p], lr=0.5)
    sched = S.CosineAnnealingLR(opt, T_max=20)
    for _ in range(20):
        opt.zero_grad()
        (p * p).sum().backward()
        opt.step()
        sched.step()
    assert abs(p.item()) < 1.0 and sched.get_last_lr() == [0.0]
