"""npusim.optim.lr_scheduler: ReduceLROnPlateau, OneCycleLR, CosineAnnealingWarmRestarts, CyclicLR and
ChainedScheduler. Hand-checked sequences, lr/momentum sequences against torch, state dicts, errors."""
from __future__ import annotations

import math
import warnings

import pytest

import npusim
from npusim.optim import lr_scheduler as S


def make_optimizer(mod, lrs=(0.5, 0.2), kind="sgd"):
    groups = [{"params": [mod.zeros(1, requires_grad=True)], "lr": lr} for lr in lrs]
    if kind == "adam":
        return mod.optim.Adam(groups, lr=0.1)
    return mod.optim.SGD(groups, lr=0.1, momentum=0.9)


def plain_optimizer(mod):
    """An optimizer with neither ``momentum`` nor ``betas``."""
    class Plain(mod.optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": 0.1})

        def step(self, closure=None):
            return None

    return Plain([mod.zeros(1, requires_grad=True)])


def momenta(opt):
    return [g["betas"][0] if "betas" in g else g["momentum"] for g in opt.param_groups]


def trace(mod, build, steps, lrs=(0.5, 0.2), kind="sgd", metrics=None):
    """[(last lrs, momenta)] after construction and after each step; checks the groups hold the reported lr."""
    opt = make_optimizer(mod, lrs, kind)
    sched = build(mod.optim.lr_scheduler, opt)
    out = [(sched.get_last_lr(), momenta(opt))]
    for i in range(steps):
        opt.step()
        if metrics is None:
            sched.step()
        else:
            sched.step(metrics[i])
        assert [g["lr"] for g in opt.param_groups] == sched.get_last_lr()
        out.append((sched.get_last_lr(), momenta(opt)))
    return out


def lrs_of(seq, group=0):
    return [lrs[group] for lrs, _ in seq]


def momenta_of(seq, group=0):
    return [m[group] for _, m in seq]


def close(a, b):
    return len(a) == len(b) and all(math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-15) for x, y in zip(a, b))


# (builder, steps, optimizer kind); each builder takes (lr_scheduler module, optimizer)
SCHEDULES = {
    "OneCycleLR-cos": (lambda m, o: m.OneCycleLR(o, max_lr=1.0, total_steps=40), 40, "sgd"),
    "OneCycleLR-linear-lists": (lambda m, o: m.OneCycleLR(
        o, max_lr=[1.0, 0.3], total_steps=30, pct_start=0.25, anneal_strategy="linear",
        base_momentum=[0.8, 0.7], max_momentum=[0.9, 0.95], div_factor=10.0, final_div_factor=100.0), 30, "sgd"),
    "OneCycleLR-three-phase": (lambda m, o: m.OneCycleLR(o, max_lr=0.8, epochs=5, steps_per_epoch=7,
                                                         three_phase=True), 35, "sgd"),
    "OneCycleLR-adam-betas": (lambda m, o: m.OneCycleLR(o, max_lr=0.01, total_steps=25), 25, "adam"),
    "OneCycleLR-no-momentum": (lambda m, o: m.OneCycleLR(o, max_lr=0.5, total_steps=12,
                                                         cycle_momentum=False), 12, "sgd"),
    "CosineAnnealingWarmRestarts": (lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=5, eta_min=0.01), 40, "sgd"),
    "CosineAnnealingWarmRestarts-mult": (lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2,
                                                                                    eta_min=0.001), 50, "sgd"),
    "CyclicLR-triangular": (lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4,
                                                    step_size_down=6), 45, "sgd"),
    "CyclicLR-triangular2": (lambda m, o: m.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=[0.1, 0.3],
                                                     step_size_up=3, mode="triangular2"), 40, "sgd"),
    "CyclicLR-exp-range": (lambda m, o: m.CyclicLR(o, base_lr=0.001, max_lr=0.1, step_size_up=5,
                                                   mode="exp_range", gamma=0.97), 40, "sgd"),
    "CyclicLR-scale-fn-iterations": (lambda m, o: m.CyclicLR(
        o, base_lr=0.01, max_lr=0.1, step_size_up=3, scale_fn=lambda x: 1 / (1 + 0.1 * x),
        scale_mode="iterations"), 30, "sgd"),
    "CyclicLR-adam-betas": (lambda m, o: m.CyclicLR(o, base_lr=0.001, max_lr=0.01, step_size_up=4,
                                                    base_momentum=0.85, max_momentum=0.95), 30, "adam"),
    # the optimizer already has an initial_lr: torch starts from it for the first step, then cycles from base_lr
    "CyclicLR-after-another-scheduler": (lambda m, o: (m.StepLR(o, step_size=3), m.CyclicLR(
        o, base_lr=0.01, max_lr=0.1, step_size_up=3))[1], 20, "sgd"),
    "CyclicLR-no-momentum": (lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2,
                                                     cycle_momentum=False), 20, "sgd"),
    "ChainedScheduler": (lambda m, o: m.ChainedScheduler([m.ConstantLR(o, factor=0.1, total_iters=5),
                                                          m.ExponentialLR(o, gamma=0.9)]), 30, "sgd"),
    "ChainedScheduler-cyclic": (lambda m, o: m.ChainedScheduler(
        [m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3), m.MultiStepLR(o, milestones=[4, 9], gamma=0.5)],
        optimizer=o), 20, "sgd"),
}

PLATEAU_METRICS = [5.0, 4.0, 4.0, 3.9999, 4.1, 4.0, 3.0, 3.0, 3.0, 3.0, 2.9, 2.99, 3.5, 3.5, 3.5, 3.5, 1.0, 1.0,
                   1.0, 1.0, 1.0, 1.0, 0.9999, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
PLATEAUS = {
    "min-rel": lambda m, o: m.ReduceLROnPlateau(o, patience=1, factor=0.5),
    "min-abs-cooldown": lambda m, o: m.ReduceLROnPlateau(o, patience=0, threshold=0.05, threshold_mode="abs",
                                                         cooldown=2, min_lr=[0.01, 0.05]),
    "max-rel": lambda m, o: m.ReduceLROnPlateau(o, mode="max", patience=2, factor=0.3, min_lr=0.02),
    "max-abs": lambda m, o: m.ReduceLROnPlateau(o, mode="max", threshold=0.5, threshold_mode="abs", patience=1),
}


# --- against torch ------------------------------------------------------------------------------------------

@pytest.mark.oracle
@pytest.mark.parametrize("name", list(SCHEDULES))
def test_lr_and_momentum_sequences_match_torch(torch, name):
    build, steps, kind = SCHEDULES[name]
    ours = trace(npusim, build, steps, kind=kind)
    theirs = trace(torch, build, steps, kind=kind)
    assert ours == theirs  # same float operations in the same order: equal to the last bit


@pytest.mark.oracle
@pytest.mark.parametrize("name", list(PLATEAUS))
def test_reduce_on_plateau_matches_torch(torch, name):
    ours = trace(npusim, PLATEAUS[name], len(PLATEAU_METRICS), metrics=PLATEAU_METRICS)
    theirs = trace(torch, PLATEAUS[name], len(PLATEAU_METRICS), metrics=PLATEAU_METRICS)
    assert ours == theirs
    assert len({tuple(lrs) for lrs, _ in ours}) > 2  # the metrics really do trigger reductions


@pytest.mark.oracle
@pytest.mark.parametrize("T_mult", [1, 2, 3])
def test_warm_restarts_fractional_epochs_match_torch(torch, T_mult):
    def run(mod):
        opt = make_optimizer(mod)
        sched = mod.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=T_mult, eta_min=0.05)
        out = []
        for epoch in range(12):
            for batch in range(4):
                opt.step()
                sched.step(epoch + batch / 4)
                out.append((sched.get_last_lr(), sched.last_epoch, sched.T_i, sched.T_cur))
        return out
    assert run(npusim) == run(torch)


@pytest.mark.oracle
@pytest.mark.parametrize("name", list(SCHEDULES) + ["ReduceLROnPlateau"])
def test_state_dict_keys_match_torch(torch, name):
    def sd(mod):
        opt = make_optimizer(mod, kind=SCHEDULES.get(name, (None, None, "sgd"))[2])
        m = mod.optim.lr_scheduler
        sched = PLATEAUS["min-rel"](m, opt) if name == "ReduceLROnPlateau" else SCHEDULES[name][0](m, opt)
        return sched.state_dict()
    ours, theirs = sd(npusim), sd(torch)
    assert sorted(ours) == sorted(theirs)
    if "_schedulers" in ours:  # ChainedScheduler: the chained schedulers' states too
        assert [sorted(s) for s in ours["_schedulers"]] == [sorted(s) for s in theirs["_schedulers"]]


@pytest.mark.oracle
def test_one_cycle_sets_the_same_group_keys_as_torch(torch):
    def keys(mod, kind):
        opt = make_optimizer(mod, kind=kind)
        mod.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10)
        return [sorted(k for k in g if k != "params") for g in opt.param_groups]
    for kind in ("sgd", "adam"):
        assert keys(npusim, kind) == keys(torch, kind)


# --- ReduceLROnPlateau by hand ------------------------------------------------------------------------------

def plateau_lrs(metrics, lrs=(1.0,), **kwargs):
    seq = trace(npusim, lambda m, o: m.ReduceLROnPlateau(o, **kwargs), len(metrics), lrs=lrs, metrics=metrics)
    return [lrs for lrs, _ in seq[1:]]


def test_plateau_reduces_after_patience_bad_epochs():
    got = plateau_lrs([10, 9, 9, 9, 9, 9, 9, 9, 9], patience=2, factor=0.5)
    # 9 stops improving at epoch 3; the third bad epoch in a row (> patience) halves the lr, then counting restarts
    assert [g[0] for g in got] == [1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25]


def test_plateau_improvement_must_beat_the_relative_threshold():
    # 9.9995 is not below 10 * (1 - 1e-4) = 9.999, so it is a bad epoch; 9.998 is an improvement
    assert [g[0] for g in plateau_lrs([10, 9.9995, 9.998, 9.998], patience=1, factor=0.5)] == [1.0, 1.0, 1.0, 1.0]
    assert [g[0] for g in plateau_lrs([10, 9.9995, 9.9995], patience=1, factor=0.5)] == [1.0, 1.0, 0.5]


def test_plateau_cooldown_ignores_bad_epochs():
    got = plateau_lrs([5.0] * 8, patience=0, factor=0.5, cooldown=2)
    assert [g[0] for g in got] == [1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.125]


def test_plateau_max_mode_with_absolute_threshold():
    # max mode: better means > best + 0.5; 1.4 and 2.0 fall short (reductions), 1.6 and 2.2 improve
    got = plateau_lrs([1.0, 1.4, 1.6, 2.0, 2.2], mode="max", threshold=0.5, threshold_mode="abs", patience=0,
                      factor=0.1)
    assert close([g[0] for g in got], [1.0, 0.1, 0.1, 0.01, 0.01])


def test_plateau_min_lr_per_group_floors_the_lr():
    got = plateau_lrs([1.0] * 5, lrs=(1.0, 1.0), patience=0, factor=0.5, min_lr=[0.3, 0.0])
    assert got == [[1.0, 1.0], [0.5, 0.5], [0.3, 0.25], [0.3, 0.125], [0.3, 0.0625]]


def test_plateau_skips_reductions_smaller_than_eps():
    got = plateau_lrs([1.0, 1.0, 1.0], lrs=(1e-8,), patience=0, factor=0.5, eps=1e-8)
    assert got == [[1e-8], [1e-8], [1e-8]]
    got = plateau_lrs([1.0, 1.0], lrs=(1e-8,), patience=0, factor=0.5, eps=1e-9)
    assert got == [[1e-8], [5e-9]]


def test_plateau_takes_a_tensor_metric_and_leaves_lr_alone_until_then():
    opt = make_optimizer(npusim, (0.4,))
    sched = S.ReduceLROnPlateau(opt, patience=0)
    assert sched.get_last_lr() == [0.4] and sched._last_lr == [0.4] and sched.last_epoch == 0
    sched.step(npusim.tensor(2.0))
    sched.step(npusim.tensor(3.0))
    assert sched.best == 2.0 and sched.last_epoch == 2
    assert math.isclose(sched.get_last_lr()[0], 0.04) and opt.param_groups[0]["lr"] == sched.get_last_lr()[0]


def test_plateau_step_with_epoch_warns_and_sets_last_epoch():
    sched = S.ReduceLROnPlateau(make_optimizer(npusim))
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not necessary"):
        sched.step(1.0, epoch=7)
    assert sched.last_epoch == 7


def test_plateau_new_param_group_with_list_min_lr_raises_and_scalar_min_lr_extends():
    opt = make_optimizer(npusim, (1.0,))
    sched = S.ReduceLROnPlateau(opt, patience=0, min_lr=[0.0])
    opt.add_param_group({"params": [npusim.zeros(1, requires_grad=True)], "lr": 1.0})
    sched.step(1.0)
    with pytest.raises(RuntimeError, match=r"The number of param groups in the `optimizer` \(2\) differs from when "
                                           r"`ReduceLROnPlateau` was initialized \(1\)"):
        sched.step(2.0)

    opt = make_optimizer(npusim, (1.0,))
    sched = S.ReduceLROnPlateau(opt, patience=0, min_lr=0.6)
    opt.add_param_group({"params": [npusim.zeros(1, requires_grad=True)], "lr": 1.0})
    sched.step(1.0)
    sched.step(2.0)
    assert sched.min_lrs == [0.6, 0.6] and sched.get_last_lr() == [0.6, 0.6]


# --- OneCycleLR by hand -------------------------------------------------------------------------------------

def one_cycle(steps, kind="sgd", lrs=(0.5,), **kwargs):
    return trace(npusim, lambda m, o: m.OneCycleLR(o, **kwargs), steps, lrs=lrs, kind=kind)


def test_one_cycle_linear_by_hand():
    # initial 1.0/10 = 0.1, min 0.1/100 = 0.001; warm-up ends at step 0.3*10 - 1 = 2, annealing at step 9
    seq = one_cycle(9, max_lr=1.0, total_steps=10, anneal_strategy="linear", div_factor=10.0,
                    final_div_factor=100.0)
    expected = [0.1, 0.55, 1.0] + [1.0 + (0.001 - 1.0) * (k - 2) / 7 for k in range(3, 10)]
    assert close(lrs_of(seq), expected)
    assert close(momenta_of(seq), [0.95, 0.9, 0.85] + [0.85 + 0.1 * (k - 2) / 7 for k in range(3, 10)])


def test_one_cycle_cos_by_hand():
    seq = one_cycle(10, max_lr=2.0, total_steps=10, pct_start=0.5)  # phases end at steps 4 and 9
    initial, final = 2.0 / 25, 2.0 / 25 / 1e4
    assert close(lrs_of(seq)[:5], [initial + (2.0 - initial) * (1 - math.cos(math.pi * k / 4)) / 2
                                   for k in range(5)])
    assert math.isclose(lrs_of(seq)[9], final, rel_tol=1e-12)
    assert math.isclose(lrs_of(seq)[6], final + (2.0 - final) * (1 + math.cos(math.pi * 2 / 5)) / 2)
    assert momenta_of(seq)[4] == 0.85 and math.isclose(momenta_of(seq)[9], 0.95)


def test_one_cycle_three_phase_comes_back_down_symmetrically():
    seq = one_cycle(10, max_lr=1.0, total_steps=10, three_phase=True, anneal_strategy="linear")
    lrs = lrs_of(seq)
    # phase ends: 2 (up to max), 4 (back down to initial), 9 (down to initial / 1e4)
    assert close([lrs[0], lrs[2], lrs[4], lrs[9]], [0.04, 1.0, 0.04, 0.04 / 1e4])
    assert math.isclose(lrs[1], lrs[3])
    assert close([momenta_of(seq)[k] for k in (0, 2, 4, 9)], [0.95, 0.85, 0.95, 0.95])


def test_one_cycle_epochs_times_steps_per_epoch_is_total_steps():
    by_epochs = one_cycle(12, max_lr=1.0, epochs=3, steps_per_epoch=4)
    assert by_epochs == one_cycle(12, max_lr=1.0, total_steps=12)


def test_one_cycle_cycles_adam_beta1_and_keeps_beta2():
    opt = make_optimizer(npusim, (0.5,), kind="adam")
    sched = S.OneCycleLR(opt, max_lr=0.1, total_steps=10, base_momentum=0.8, max_momentum=0.9)
    assert opt.param_groups[0]["betas"] == (0.9, 0.999) and "momentum" not in opt.param_groups[0]
    for _ in range(2):
        opt.step()
        sched.step()
    assert opt.param_groups[0]["betas"] == (0.8, 0.999)


def test_one_cycle_without_momentum_cycling_leaves_momentum():
    seq = one_cycle(5, max_lr=1.0, total_steps=5, cycle_momentum=False)
    assert momenta_of(seq) == [0.9] * 6


def test_one_cycle_stepping_past_total_steps_raises():
    opt = make_optimizer(npusim, (0.5,))
    sched = S.OneCycleLR(opt, max_lr=1.0, total_steps=4)
    for _ in range(4):  # the step that reaches total_steps is still allowed
        opt.step()
        sched.step()
    opt.step()
    with pytest.raises(ValueError) as err:
        sched.step()
    assert str(err.value) == "Tried to step 5 times. The specified number of total steps is 4"


@pytest.mark.oracle
def test_one_cycle_past_total_steps_error_matches_torch(torch):
    opt = make_optimizer(torch, (0.5,))
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=4)
    for _ in range(4):
        opt.step()
        sched.step()
    with pytest.raises(ValueError) as err:
        sched.step()
    assert str(err.value) == "Tried to step 5 times. The specified number of total steps is 4"


# --- CosineAnnealingWarmRestarts by hand --------------------------------------------------------------------

def test_warm_restarts_by_hand():
    seq = lrs_of(trace(npusim, lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2), 14, lrs=(1.0,)))
    # periods of 2, 4, 8 epochs; each restart jumps back to the initial lr
    cos = [(1 + math.cos(math.pi * t / n)) / 2 for n in (2, 4, 8) for t in range(n)]
    assert close(seq, cos + [1.0])
    assert [seq[0], seq[2], seq[6], seq[14]] == [1.0, 1.0, 1.0, 1.0]


def test_warm_restarts_fractional_epoch_by_hand():
    opt = make_optimizer(npusim, (1.0,))
    sched = S.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2, eta_min=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # stepping by epoch is supported here: no deprecation warning
        sched.step(2.5)  # 2 epochs of the first period done, 0.5 into the second (length 4)
    assert sched.T_i == 4 and sched.T_cur == 0.5 and sched.last_epoch == 2
    assert math.isclose(sched.get_last_lr()[0], 0.1 + 0.9 * (1 + math.cos(math.pi * 0.5 / 4)) / 2)
    sched.step(1.25)  # back inside the first period
    assert sched.T_i == 2 and math.isclose(sched.get_last_lr()[0], 0.1 + 0.9 * (1 + math.cos(math.pi * 1.25 / 2)) / 2)


# --- CyclicLR by hand ---------------------------------------------------------------------------------------

def cyclic(steps, lrs=(0.5,), kind="sgd", **kwargs):
    return trace(npusim, lambda m, o: m.CyclicLR(o, **kwargs), steps, lrs=lrs, kind=kind)


def test_cyclic_triangular_by_hand():
    seq = cyclic(10, base_lr=0.1, max_lr=1.1, step_size_up=2, step_size_down=3)
    one_cycle_lrs = [0.1, 0.6, 1.1, 0.1 + 2 / 3, 0.1 + 1 / 3]
    assert close(lrs_of(seq), one_cycle_lrs * 2 + [0.1])
    # momentum moves the other way, between 0.8 and 0.9
    assert close(momenta_of(seq)[:5], [0.9, 0.85, 0.8, 0.9 - 0.1 * 2 / 3, 0.9 - 0.1 / 3])


def test_cyclic_triangular2_halves_each_cycle():
    lrs = lrs_of(cyclic(12, base_lr=0.0, max_lr=1.0, step_size_up=2, mode="triangular2"))
    assert close([lrs[2], lrs[6], lrs[10]], [1.0, 0.5, 0.25])
    assert close([lrs[0], lrs[4], lrs[8]], [0.0, 0.0, 0.0])


def test_cyclic_exp_range_scales_by_gamma_per_iteration():
    lrs = lrs_of(cyclic(6, base_lr=0.0, max_lr=1.0, step_size_up=2, mode="exp_range", gamma=0.5))
    assert close(lrs, [0.0, 0.5 * 0.5, 1.0 * 0.25, 0.5 * 0.125, 0.0, 0.5 * 0.5 ** 5, 1.0 * 0.5 ** 6])


def test_cyclic_custom_scale_fn_per_cycle():
    lrs = lrs_of(cyclic(6, base_lr=0.0, max_lr=1.0, step_size_up=1, scale_fn=lambda c: 1.0 / c))
    assert close(lrs, [0.0, 1.0, 0.0, 0.5, 0.0, 1 / 3, 0.0])


def test_cyclic_overwrites_lr_and_sets_base_lrs():
    opt = make_optimizer(npusim, (0.5, 0.2))
    sched = S.CyclicLR(opt, base_lr=[0.01, 0.02], max_lr=0.1, step_size_up=2)
    assert sched.base_lrs == [0.01, 0.02] and sched.max_lrs == [0.1, 0.1]
    assert [g["lr"] for g in opt.param_groups] == [0.01, 0.02]
    assert [g["momentum"] for g in opt.param_groups] == [0.9, 0.9]


def test_cyclic_state_dict_saves_callable_objects_not_functions():
    class Halving:
        def __init__(self, rate):
            self.rate = rate

        def __call__(self, x):
            return self.rate ** x

    opt = make_optimizer(npusim, (0.5,))
    with_lambda = S.CyclicLR(opt, base_lr=0.0, max_lr=1.0, step_size_up=1, scale_fn=lambda c: 1.0)
    assert with_lambda.state_dict()["_scale_fn_custom"] is None and "_scale_fn_ref" not in with_lambda.state_dict()

    sched = S.CyclicLR(opt, base_lr=0.0, max_lr=1.0, step_size_up=1, scale_fn=Halving(0.5))
    sd = sched.state_dict()
    assert sd["_scale_fn_custom"] == {"rate": 0.5}
    sd["_scale_fn_custom"] = {"rate": 0.25}
    sched.load_state_dict(sd)
    opt.step()
    sched.step()
    assert sched.get_last_lr() == [0.25]


# --- ChainedScheduler by hand -------------------------------------------------------------------------------

def test_chained_scheduler_composes_the_factors():
    lrs = lrs_of(trace(npusim, lambda m, o: m.ChainedScheduler(
        [m.ConstantLR(o, factor=0.1, total_iters=3), m.ExponentialLR(o, gamma=0.9)]), 5, lrs=(1.0,)))
    assert close(lrs, [0.1, 0.09, 0.081, 0.729, 0.6561, 0.59049])


def test_chained_scheduler_takes_optimizer_from_first_scheduler():
    opt = make_optimizer(npusim, (1.0,))
    step_lr = S.StepLR(opt, step_size=1, gamma=0.5)
    sched = S.ChainedScheduler([step_lr])
    assert sched.optimizer is opt and sched.get_last_lr() == [1.0]
    opt.step()
    sched.step()
    assert sched.get_last_lr() == [0.5] and step_lr.last_epoch == 1


# --- state dicts --------------------------------------------------------------------------------------------

def _round_trip(build, kind="sgd", metrics=None):
    """Save after 5 steps, load into a fresh optimizer and scheduler, and check both continue identically."""
    metrics = metrics or [None] * 12

    def advance(opt, sched, metric):
        opt.step()
        sched.step() if metric is None else sched.step(metric)

    opt = make_optimizer(npusim, (0.5, 0.2), kind)
    sched = build(S, opt)
    for i in range(5):
        advance(opt, sched, metrics[i])
    sd, opt_sd = sched.state_dict(), opt.state_dict()
    assert "optimizer" not in sd

    opt2 = make_optimizer(npusim, (9.0, 9.0), kind)
    sched2 = build(S, opt2)
    sched2.load_state_dict(sd)
    opt2.load_state_dict(opt_sd)
    assert sched2.get_last_lr() == sched.get_last_lr()
    for i in range(5, 12):
        advance(opt, sched, metrics[i])
        advance(opt2, sched2, metrics[i])
        assert sched2.get_last_lr() == sched.get_last_lr()
        assert [g["lr"] for g in opt2.param_groups] == [g["lr"] for g in opt.param_groups]
        assert momenta(opt2) == momenta(opt)
    return sched2


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_state_dict_round_trip_continues_the_sequence(name):
    build, _, kind = SCHEDULES[name]
    _round_trip(build, kind)


@pytest.mark.parametrize("name", list(PLATEAUS))
def test_plateau_state_dict_round_trip_continues_the_sequence(name):
    metrics = [3.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.5, 2.0, 2.0, 2.5, 3.0, 3.0]
    sched = _round_trip(PLATEAUS[name], metrics=metrics)
    assert sched.last_epoch == 12


def test_plateau_state_dict_holds_the_progress():
    opt = make_optimizer(npusim, (1.0,))
    sched = S.ReduceLROnPlateau(opt, mode="max", patience=3, cooldown=1)
    for metric in (1.0, 2.0, 1.5):
        sched.step(metric)
    sd = sched.state_dict()
    assert (sd["best"], sd["num_bad_epochs"], sd["last_epoch"], sd["mode"], sd["mode_worse"]) == \
        (2.0, 1, 3, "max", -math.inf)


# --- errors -------------------------------------------------------------------------------------------------

def _constructor_errors(mod):
    m = mod.optim.lr_scheduler
    opt = make_optimizer(mod, (0.5,))
    plain = plain_optimizer(mod)
    return [
        # ReduceLROnPlateau
        (lambda: m.ReduceLROnPlateau(opt, factor=1.0), ValueError, "Factor should be < 1.0."),
        (lambda: m.ReduceLROnPlateau("opt"), TypeError, "str is not an Optimizer"),
        (lambda: m.ReduceLROnPlateau(opt, min_lr=[0.0, 0.1]), ValueError, "expected 1 min_lrs, got 2"),
        (lambda: m.ReduceLROnPlateau(opt, mode="up"), ValueError, "mode up is unknown!"),
        (lambda: m.ReduceLROnPlateau(opt, threshold_mode="pct"), ValueError, "threshold mode pct is unknown!"),
        # OneCycleLR
        (lambda: m.OneCycleLR(3, max_lr=1.0, total_steps=5), TypeError, "int is not an Optimizer"),
        (lambda: m.OneCycleLR(opt, max_lr=1.0, total_steps=0), ValueError,
         "Expected positive integer total_steps, but got 0"),
        (lambda: m.OneCycleLR(opt, max_lr=1.0, total_steps=10.0), ValueError,
         "Expected positive integer total_steps, but got 10.0"),
        (lambda: m.OneCycleLR(opt, max_lr=1.0, epochs=0, steps_per_epoch=5), ValueError,
         "Expected positive integer epochs, but got 0"),
        (lambda: m.OneCycleLR(opt, max_lr=1.0, epochs=2, steps_per_epoch=1.5), ValueError,
         "Expected positive integer steps_per_epoch, but got 1.5"),
        (lambda: m.OneCycleLR(opt, max_lr=1.0, epochs=2), ValueError,
         "You must define either total_steps OR (epochs AND steps_per_epoch)"),
        (lambda: m.OneCycleLR(opt, max_lr=1.0, total_steps=5, pct_start=1.5), ValueError,
         "Expected float between 0 and 1 pct_start, but got 1.5"),
        (lambda: m.OneCycleLR(opt, max_lr=1.0, total_steps=5, pct_start=1), ValueError,
         "Expected float between 0 and 1 pct_start, but got 1"),
        (lambda: m.OneCycleLR(opt, max_lr=1.0, total_steps=5, anneal_strategy="exp"), ValueError,
         "anneal_strategy must be one of 'cos' or 'linear', instead got exp"),
        (lambda: m.OneCycleLR(opt, max_lr=[1.0, 2.0], total_steps=5), ValueError,
         "max_lr must have the same length as optimizer.param_groups. max_lr has 2 values, param_groups has 1."),
        (lambda: m.OneCycleLR(opt, max_lr=1.0, total_steps=5, max_momentum=[0.9, 0.9]), ValueError,
         "max_momentum must have the same length as optimizer.param_groups. max_momentum has 2 values, "
         "param_groups has 1."),
        (lambda: m.OneCycleLR(plain, max_lr=1.0, total_steps=5), ValueError,
         "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"),
        # CosineAnnealingWarmRestarts
        (lambda: m.CosineAnnealingWarmRestarts(opt, T_0=0), ValueError, "Expected positive integer T_0, but got 0"),
        (lambda: m.CosineAnnealingWarmRestarts(opt, T_0=2.0), ValueError,
         "Expected positive integer T_0, but got 2.0"),
        (lambda: m.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=0), ValueError,
         "Expected integer T_mult >= 1, but got 0"),
        (lambda: m.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=1.5), ValueError,
         "Expected integer T_mult >= 1, but got 1.5"),
        (lambda: m.CosineAnnealingWarmRestarts(opt, T_0=2, eta_min="0"), ValueError,
         "Expected float or int eta_min, but got 0 of type <class 'str'>"),
        (lambda: m.CosineAnnealingWarmRestarts(opt, T_0=2).step(-1), ValueError,
         "Expected non-negative epoch, but got -1"),
        (lambda: m.CosineAnnealingWarmRestarts(None, T_0=2), TypeError, "NoneType is not an Optimizer"),
        # CyclicLR
        (lambda: m.CyclicLR(opt, base_lr=0.01, max_lr=0.1, mode="sine"), ValueError,
         "mode is invalid and scale_fn is None"),
        (lambda: m.CyclicLR(opt, base_lr=[0.01, 0.02], max_lr=0.1), ValueError,
         "base_lr must have the same length as optimizer.param_groups. base_lr has 2 values, param_groups has 1."),
        (lambda: m.CyclicLR(opt, base_lr=0.01, max_lr=(0.1, 0.2)), ValueError,
         "max_lr must have the same length as optimizer.param_groups. max_lr has 2 values, param_groups has 1."),
        (lambda: m.CyclicLR(plain, base_lr=0.01, max_lr=0.1), ValueError,
         "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"),
        (lambda: m.CyclicLR("opt", base_lr=0.01, max_lr=0.1), TypeError, "str is not an Optimizer"),
        # ChainedScheduler
        (lambda: m.ChainedScheduler([]), ValueError,
         "ChainedScheduler expects at least one scheduler to be chained, but got no scheduler."),
        (lambda: m.ChainedScheduler([m.ReduceLROnPlateau(opt)]), ValueError,
         "ChainedScheduler does not support `ReduceLROnPlateau` scheduler as it requires additional kwargs to be "
         "specified when calling `step`, but got one at index 0 in the given schedulers sequence."),
        (lambda: m.ChainedScheduler([m.StepLR(opt, 2), 1], optimizer=opt), TypeError,
         "ChainedScheduler at index 1 should have `optimizer` as its attribute."),
    ]


N_ERRORS = len(_constructor_errors(npusim))


@pytest.mark.parametrize("case", range(N_ERRORS))
def test_bad_arguments_raise(case):
    fn, exc, msg = _constructor_errors(npusim)[case]
    with pytest.raises(exc) as err:
        fn()
    assert type(err.value) is exc and str(err.value) == msg


@pytest.mark.oracle
@pytest.mark.parametrize("case", range(N_ERRORS))
def test_bad_arguments_match_torch(torch, case):
    fn, exc, msg = _constructor_errors(torch)[case]
    with pytest.raises(exc) as err:
        fn()
    assert type(err.value) is exc and str(err.value) == msg


def test_chained_scheduler_rejects_schedulers_of_another_optimizer():
    opt, other = make_optimizer(npusim), make_optimizer(npusim)
    with pytest.raises(ValueError, match="ChainedScheduler expects all schedulers to belong to the same optimizer, "
                                         "but got scheduler StepLR at index 1 has"):
        S.ChainedScheduler([S.StepLR(opt, 2), S.StepLR(other, 2)])


def test_new_schedulers_are_exported():
    names = ["ReduceLROnPlateau", "OneCycleLR", "CosineAnnealingWarmRestarts", "CyclicLR", "ChainedScheduler"]
    assert all(name in S.__all__ and issubclass(getattr(S, name), S.LRScheduler) for name in names)


def test_sequential_lr_refuses_reduce_on_plateau():
    opt = npusim.optim.SGD([npusim.nn.Parameter(npusim.zeros(2))], lr=0.1)
    plateau = npusim.optim.lr_scheduler.ReduceLROnPlateau(opt)
    step = npusim.optim.lr_scheduler.StepLR(opt, step_size=2)
    with pytest.raises(ValueError, match=r"^SequentialLR does not support `ReduceLROnPlateau` scheduler as it requires "
                                         r"additional kwargs to be specified when calling `step`, but got one at "
                                         r"index 1 in the given schedulers sequence\.$"):
        npusim.optim.lr_scheduler.SequentialLR(opt, [step, plateau], milestones=[2])
