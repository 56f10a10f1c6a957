"""npusim.optim: Adagrad, Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop and LBFGS — update rules, state dicts,
errors, and parity with torch's single-tensor (for-loop) algorithms."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import host

import npusim
from npusim import optim

RNG = np.random.default_rng(4321)
P0 = RNG.standard_normal((5, 4)).astype(np.float32)
GRADS = [RNG.standard_normal((5, 4)).astype(np.float32) for _ in range(6)]

# (class name, kwargs): every branch of each update rule
CASES = [
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, weight_decay=0.1, initial_accumulator_value=0.2, eps=1e-6,
                     maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1, maximize=True)),
    ("Adamax", dict(lr=0.01)),
    ("Adamax", dict(lr=0.01, betas=(0.8, 0.9), eps=1e-4, weight_decay=0.1, maximize=True)),
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, betas=(0.8, 0.95), weight_decay=0.1, momentum_decay=0.01, maximize=True)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01)),
    # beta2=0.5 reaches rho_t > 5 from the third step, so both branches of the rectification run
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.5), weight_decay=0.1, maximize=True)),
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.5), weight_decay=0.1, decoupled_weight_decay=True)),
    ("ASGD", dict(lr=0.05)),
    # t0=2 starts the averaging (mu != 1) within the run
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=2, weight_decay=0.1, maximize=True)),
    ("Rprop", dict(lr=0.01)),
    ("Rprop", dict(lr=0.01, etas=(0.3, 1.5), step_sizes=(1e-3, 0.02), maximize=True)),
]
CASE_IDS = [f"{name}-{'-'.join(kw) or 'defaults'}" for name, kw in CASES]


def leaf(values, device="cpu"):
    return npusim.tensor(values, device=device, requires_grad=True)


def run_steps(name, kw, device, grads=GRADS, p0=P0):
    p = leaf(p0, device)
    opt = getattr(optim, name)([p], **kw)
    for g in grads:
        p.grad = npusim.tensor(g, device=device)
        opt.step()
    return p, opt


def torch_steps(torch, name, kw, grads=GRADS, p0=P0):
    p = torch.tensor(p0, requires_grad=True)
    opt = getattr(torch.optim, name)([p], foreach=False, **kw)
    for g in grads:
        p.grad = torch.tensor(g)
        opt.step()
    return p, opt


# --- update math against torch -------------------------------------------------------------------------

@pytest.mark.oracle
@pytest.mark.parametrize("name,kw", CASES, ids=CASE_IDS)
def test_updates_and_state_match_torch(torch, device, name, kw):
    p, opt = run_steps(name, kw, device)
    tp, topt = torch_steps(torch, name, kw)
    # torch's vectorised cpu kernels fuse multiply-adds and its sqrt is not correctly rounded: about one ulp
    np.testing.assert_allclose(host(p), tp.detach().numpy(), rtol=2e-6, atol=2e-6)
    state, tstate = opt.state[p], topt.state[tp]
    assert sorted(state) == sorted(tstate)
    for key, value in tstate.items():
        assert state[key].dtype.itemsize == value.dtype.itemsize and state[key].shape == tuple(value.shape)
        # where torch keeps each state tensor: scalars on the cpu, except ASGD's on the parameter's device
        expected = device if value.dim() or name == "ASGD" else "cpu"
        assert state[key].device.type == expected, key
        np.testing.assert_allclose(host(state[key]), value.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted({n for n, _ in CASES}))
def test_tensor_lr_matches_torch(torch, name):
    """A tensor lr keeps torch's float32 scalar arithmetic (lr / bias correction etc. round in float32)."""
    p, _ = run_steps(name, dict(lr=npusim.tensor(0.01)), "cpu", GRADS[:3])
    tp, _ = torch_steps(torch, name, dict(lr=torch.tensor(0.01)), GRADS[:3])
    np.testing.assert_allclose(host(p), tp.detach().numpy(), rtol=2e-6, atol=2e-6)


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted({n for n, _ in CASES}))
def test_defaults_and_state_dict_layout_match_torch(torch, name):
    _, opt = run_steps(name, {}, "cpu", GRADS[:2])
    _, topt = torch_steps(torch, name, {}, GRADS[:2])
    tdefaults = dict(topt.defaults)
    tdefaults["foreach"] = None   # the oracle ran with foreach=False
    assert opt.defaults == tdefaults
    sd, tsd = opt.state_dict(), topt.state_dict()
    tsd["param_groups"][0]["foreach"] = None
    assert sd["param_groups"] == tsd["param_groups"]
    assert list(sd["state"]) == list(tsd["state"]) == [0]
    assert sorted(sd["state"][0]) == sorted(tsd["state"][0])
    assert repr(opt).replace("npusim", "torch") == repr(topt).replace("foreach: False", "foreach: None")


@pytest.mark.oracle
def test_param_groups_with_own_options_match_torch(torch, device):
    a0, b0 = P0[:2], P0[2:]
    a, b = leaf(a0, device), leaf(b0, device)
    opt = optim.NAdam([{"params": [a]}, {"params": [b], "lr": 0.1, "decoupled_weight_decay": True}],
                      lr=0.01, weight_decay=0.1)
    ta, tb = torch.tensor(a0, requires_grad=True), torch.tensor(b0, requires_grad=True)
    topt = torch.optim.NAdam([{"params": [ta]}, {"params": [tb], "lr": 0.1, "decoupled_weight_decay": True}],
                             lr=0.01, weight_decay=0.1, foreach=False)
    for g in GRADS[:3]:
        a.grad, b.grad = npusim.tensor(g[:2], device=device), npusim.tensor(g[2:], device=device)
        ta.grad, tb.grad = torch.tensor(g[:2]), torch.tensor(g[2:])
        opt.step()
        topt.step()
    np.testing.assert_allclose(host(a), ta.detach().numpy(), rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(host(b), tb.detach().numpy(), rtol=2e-6, atol=2e-6)


# --- one step by hand, from the published update rules ----------------------------------------------------

def _one_step(name, kw, device, p0, g):
    p = leaf(p0, device)
    p.grad = npusim.tensor(g, device=device)
    opt = getattr(optim, name)([p], **kw)
    opt.step()
    return host(p).astype(np.float64), opt, p


P1 = np.array([1.0, -2.0, 0.5], np.float32)
G1 = np.array([0.5, 0.25, -4.0], np.float32)


def test_adagrad_step_by_hand(device):
    got, opt, p = _one_step("Adagrad", dict(lr=0.1, initial_accumulator_value=0.5, weight_decay=0.1), device,
                            P1, G1)
    g = G1 + 0.1 * P1
    s = 0.5 + g * g
    np.testing.assert_allclose(got, P1 - 0.1 * g / (np.sqrt(s) + 1e-10), rtol=1e-6)
    np.testing.assert_allclose(host(opt.state[p]["sum"]), s, rtol=1e-6)


def test_adadelta_step_by_hand(device):
    got, _, _ = _one_step("Adadelta", dict(lr=1.0, rho=0.9, eps=1e-6), device, P1, G1)
    v = 0.1 * G1.astype(np.float64) ** 2
    delta = np.sqrt(1e-6) / np.sqrt(v + 1e-6) * G1
    np.testing.assert_allclose(got, P1 - delta, rtol=1e-5)


def test_adamax_first_step_moves_each_weight_by_lr(device):
    # m = (1 - b1) g, u = |g| + eps, step = lr / (1 - b1) * m / u = lr * sign(g)
    got, _, _ = _one_step("Adamax", dict(lr=0.01), device, P1, G1)
    np.testing.assert_allclose(got, P1 - 0.01 * np.sign(G1), rtol=1e-5)


def test_nadam_step_by_hand(device):
    b1, b2, lr, psi = 0.9, 0.999, 0.01, 4e-3
    got, opt, p = _one_step("NAdam", dict(lr=lr), device, P1, G1)
    mu1 = b1 * (1 - 0.5 * 0.96 ** (1 * psi))
    mu2 = b1 * (1 - 0.5 * 0.96 ** (2 * psi))
    g = G1.astype(np.float64)
    m, v = (1 - b1) * g, (1 - b2) * g * g
    denom = np.sqrt(v / (1 - b2)) + 1e-8
    expected = P1 - lr * (1 - mu1) / (1 - mu1) * g / denom - lr * mu2 / (1 - mu1 * mu2) * m / denom
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    assert opt.state[p]["mu_product"].item() == pytest.approx(mu1, rel=1e-7)


def test_radam_early_steps_are_sgd_with_momentum(device):
    # rho_t <= 5 for the first steps with beta2=0.999: the update is lr times the bias-corrected momentum
    got, _, _ = _one_step("RAdam", dict(lr=0.01), device, P1, G1)
    np.testing.assert_allclose(got, P1 - 0.01 * G1, rtol=1e-6)


def test_asgd_step_by_hand(device):
    lr, lambd, alpha = 0.05, 0.01, 0.75
    got, opt, p = _one_step("ASGD", dict(lr=lr, lambd=lambd, alpha=alpha), device, P1, G1)
    expected = P1 * (1 - lambd * lr) - lr * G1
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    state = opt.state[p]
    np.testing.assert_allclose(host(state["ax"]), expected, rtol=1e-6)   # mu == 1: ax copies the parameter
    assert state["eta"].item() == pytest.approx(lr / (1 + lambd * lr) ** alpha, rel=1e-7)
    assert state["mu"].item() == 1.0 and state["step"].item() == 1.0


def test_rprop_step_sizes_follow_the_gradient_signs(device):
    p = leaf([0.0, 0.0, 0.0], device)
    opt = optim.Rprop([p], lr=0.1, etas=(0.5, 2.0), step_sizes=(0.01, 0.3))
    for g in ([1.0, 1.0, 1.0], [1.0, -1.0, 0.0], [1.0, 1.0, 1.0]):
        p.grad = npusim.tensor(g, device=device)
        opt.step()
    # coordinate 0: same sign three times, steps 0.1, 0.2, 0.3 (capped); coordinate 1: the sign change
    # halves the step and skips the move, then a zeroed prev leaves it; coordinate 2: a zero gradient keeps it
    np.testing.assert_allclose(host(p), [-0.6, -0.1 - 0.05, -0.1 - 0.1], rtol=1e-6)
    np.testing.assert_allclose(host(opt.state[p]["step_size"]), [0.3, 0.05, 0.1], rtol=1e-6)


# --- training ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,kw,steps", [
    ("Adagrad", dict(lr=0.5), 150),
    ("Adadelta", dict(lr=10.0), 150),
    ("Adamax", dict(lr=0.1), 150),
    ("NAdam", dict(lr=0.05), 150),
    ("RAdam", dict(lr=0.1), 150),
    ("ASGD", dict(lr=0.1), 150),
    ("Rprop", dict(lr=0.01), 150),
])
def test_quadratic_is_minimised(device, name, kw, steps):
    target = npusim.tensor([1.5, -2.0, 0.5], device=device)
    w = npusim.zeros(3, device=device, requires_grad=True)
    opt = getattr(optim, name)([w], **kw)
    for _ in range(steps):
        opt.zero_grad()
        loss = ((w - target) ** 2).sum()
        loss.backward()
        opt.step()
    assert loss.item() < 1e-3
    np.testing.assert_allclose(host(w), [1.5, -2.0, 0.5], atol=0.03)


# --- state dicts -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,kw", CASES, ids=CASE_IDS)
def test_state_dict_round_trip_continues_identically(device, name, kw):
    p, opt = run_steps(name, kw, device, GRADS[:3])
    sd = opt.state_dict()
    assert sd["param_groups"][0]["params"] == [0]
    assert isinstance(sd["state"][0]["step"], npusim.Tensor) and sd["state"][0]["step"].item() == 3.0
    q = leaf(host(p), device)
    opt2 = getattr(optim, name)([q], lr=123.0)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == kw.get("lr", opt.defaults["lr"])
    for key, value in opt2.state[q].items():
        assert value is not opt.state[p][key]   # loaded state never aliases the source
    for g in GRADS[3:]:
        p.grad = npusim.tensor(g, device=device)
        q.grad = npusim.tensor(g, device=device)
        opt.step()
        opt2.step()
    assert np.array_equal(host(p), host(q))


@pytest.mark.parametrize("name", ["Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop"])
def test_state_dict_with_number_scalars_loads_as_tensors(name):
    """Checkpoints from before the step counters were tensors keep them as Python numbers."""
    p, opt = run_steps(name, dict(lr=0.01), "cpu", GRADS[:2])
    sd = opt.state_dict()
    numbers = {k: v.item() for k, v in sd["state"][0].items() if v.dim() == 0}
    sd["state"][0] = dict(sd["state"][0], **numbers)
    q = leaf(host(p))
    opt2 = getattr(optim, name)([q], lr=0.01)
    opt2.load_state_dict(sd)
    for key in numbers:
        value = opt2.state[q][key]
        assert isinstance(value, npusim.Tensor) and value.dtype == npusim.float32, key
    p.grad = npusim.tensor(GRADS[2])
    q.grad = npusim.tensor(GRADS[2])
    opt.step()
    opt2.step()
    assert np.array_equal(host(p), host(q))


def test_adagrad_fills_state_at_construction():
    a, b = leaf([1.0]), leaf([2.0])
    opt = optim.Adagrad([a], lr=0.1, initial_accumulator_value=0.3)
    assert opt.state[a]["step"].item() == 0.0 and host(opt.state[a]["sum"]).tolist() == [pytest.approx(0.3)]
    opt.add_param_group({"params": [b]})
    b.grad = npusim.tensor([1.0])
    opt.step()   # a group added later gets its state on its first step
    assert opt.state[b]["step"].item() == 1.0 and opt.state[a]["step"].item() == 0.0


def test_foreach_flag_is_accepted_and_runs_the_same_math():
    for name, kw in CASES[::2]:
        p, _ = run_steps(name, kw, "cpu", GRADS[:2])
        q, opt = run_steps(name, dict(kw, foreach=True), "cpu", GRADS[:2])
        assert np.array_equal(host(p), host(q)) and opt.defaults["foreach"] is True, name


# --- LBFGS ---------------------------------------------------------------------------------------------------

def rosenbrock(xy):
    x, y = xy[0], xy[1]
    return (1 - x) ** 2 + 100 * (y - x ** 2) ** 2


def run_lbfgs(mod, kw, steps, device="cpu"):
    xy = mod.tensor([-1.5, 2.0], requires_grad=True)
    if device != "cpu":
        xy = npusim.tensor([-1.5, 2.0], device=device, requires_grad=True)
    opt = mod.optim.LBFGS([xy], **kw)
    losses = []

    def closure():
        opt.zero_grad()
        loss = rosenbrock(xy)
        loss.backward()
        return loss

    for _ in range(steps):
        losses.append(float(opt.step(closure)))
    return xy, opt, losses


LBFGS_CASES = [
    dict(lr=1, line_search_fn="strong_wolfe"),
    dict(lr=1, history_size=3, max_iter=10, line_search_fn="strong_wolfe"),
    dict(lr=0.1, history_size=5),
]


@pytest.mark.oracle
@pytest.mark.parametrize("kw", LBFGS_CASES, ids=["wolfe", "wolfe-history3", "fixed-step"])
def test_lbfgs_on_rosenbrock_matches_torch(torch, device, kw):
    # Rosenbrock amplifies the one-ulp differences of torch's fused multiply-adds over many iterations, so
    # the close comparison covers the first 8 iterations (the bit-for-bit one below covers whole runs)
    kw8 = dict(kw, max_iter=8)
    xy, opt, losses = run_lbfgs(npusim, kw8, 1, device)
    txy, topt, tlosses = run_lbfgs(torch, kw8, 1)
    np.testing.assert_allclose(host(xy), txy.detach().numpy(), rtol=1e-5, atol=1e-6)
    state, tstate = opt.state[xy], topt.state[txy]
    assert sorted(state) == sorted(tstate)
    assert state["func_evals"] == tstate["func_evals"] and state["n_iter"] == tstate["n_iter"]
    assert len(state["old_dirs"]) == len(tstate["old_dirs"])
    np.testing.assert_allclose([float(r) for r in state["ro"]], [float(r) for r in tstate["ro"]], rtol=1e-5)
    # whole runs end where torch's do
    xy, _, losses = run_lbfgs(npusim, kw, 4, device)
    txy, _, tlosses = run_lbfgs(torch, kw, 4)
    assert losses[0] == tlosses[0]
    if "line_search_fn" in kw:
        np.testing.assert_allclose(host(xy), txy.detach().numpy(), atol=1e-3)


@pytest.mark.oracle
def test_same_operation_order_as_torch_bit_for_bit(torch):
    """Against torch's scalar (non-fused) kernels, whole runs give identical bits, LBFGS included.

    As in test_optim, torch's sqrt (MKL's, not correctly rounded) is replaced by a correctly rounded one.
    """
    script = textwrap.dedent(f"""
        import sys, warnings
        warnings.simplefilter("ignore")
        sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
        import numpy as np, torch, npusim
        from test_optim import IEEE_SQRT_FOR_TORCH
        from test_optim_adaptive_and_lbfgs import CASES, LBFGS_CASES, run_lbfgs, run_steps, torch_steps
        exec(IEEE_SQRT_FOR_TORCH)
        for name, kw in CASES:
            p, _ = run_steps(name, kw, "cpu")
            tp, _ = torch_steps(torch, name, kw)
            assert np.array_equal(tp.detach().numpy(), p.detach().numpy()), (name, kw)
        for kw in LBFGS_CASES:
            xy, _, losses = run_lbfgs(npusim, kw, 6)
            txy, _, tlosses = run_lbfgs(torch, kw, 6)
            assert losses == tlosses and np.array_equal(xy.detach().numpy(), txy.detach().numpy()), kw
        print("identical")
    """)
    env = dict(os.environ, ATEN_CPU_CAPABILITY="default")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "identical" in r.stdout


@pytest.mark.parametrize("kw", LBFGS_CASES[:2], ids=["wolfe", "wolfe-history3"])
def test_lbfgs_with_line_search_minimises_rosenbrock(device, kw):
    xy, opt, losses = run_lbfgs(npusim, kw, 5, device)
    np.testing.assert_allclose(host(xy), [1.0, 1.0], atol=1e-3)
    assert losses[0] == pytest.approx(rosenbrock(np.array([-1.5, 2.0])), rel=1e-6)
    assert len(opt.state[xy]["old_dirs"]) <= kw.get("history_size", 100)


def test_lbfgs_fixed_step_on_a_quadratic_converges(device):
    # on a separable quadratic BFGS finds the exact Hessian within a few iterations
    target = npusim.tensor([3.0, -1.0, 2.0], device=device)
    w = npusim.zeros(3, device=device, requires_grad=True)
    opt = optim.LBFGS([w], lr=1, max_iter=50)

    def closure():
        opt.zero_grad()
        loss = (((w - target) ** 2) * npusim.tensor([1.0, 4.0, 0.5], device=device)).sum()
        loss.backward()
        return loss

    first = opt.step(closure)
    assert first.item() == pytest.approx(9 + 4 + 2, rel=1e-6)   # step returns the loss before the update
    np.testing.assert_allclose(host(w), [3.0, -1.0, 2.0], atol=1e-4)
    assert opt.state[w]["func_evals"] <= 50 * 5 // 4


def test_lbfgs_state_dict_round_trip_continues_identically():
    xy, opt, _ = run_lbfgs(npusim, LBFGS_CASES[1], 1)
    sd = opt.state_dict()
    other = npusim.tensor(host(xy), requires_grad=True)
    opt2 = optim.LBFGS([other], lr=5.0)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 1 and opt2.param_groups[0]["history_size"] == 3

    def closure_for(t, o):
        def closure():
            o.zero_grad()
            loss = rosenbrock(t)
            loss.backward()
            return loss
        return closure

    opt.step(closure_for(xy, opt))
    opt2.step(closure_for(other, opt2))
    assert np.array_equal(host(xy), host(other))


def test_lbfgs_stops_at_once_when_the_gradient_is_zero():
    w = npusim.tensor([1.0, 1.0], requires_grad=True)
    opt = optim.LBFGS([w])
    calls = []

    def closure():
        calls.append(1)
        opt.zero_grad()
        loss = rosenbrock(w)
        loss.backward()
        return loss

    assert opt.step(closure).item() == 0.0
    assert len(calls) == 1 and host(w).tolist() == [1.0, 1.0] and opt.state[w]["n_iter"] == 0


def test_lbfgs_unknown_line_search_raises():
    w = npusim.tensor([0.0, 0.0], requires_grad=True)
    opt = optim.LBFGS([w], line_search_fn="backtracking")

    def closure():
        opt.zero_grad()
        loss = rosenbrock(w)
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="^only 'strong_wolfe' is supported$"):
        opt.step(closure)


def test_lbfgs_default_max_eval():
    opt = optim.LBFGS([leaf([1.0])], max_iter=8)
    assert opt.defaults["max_eval"] == 10 and opt.defaults["history_size"] == 100


# --- errors ------------------------------------------------------------------------------------------------

BAD_CONSTRUCTIONS = [
    ("Adagrad", dict(lr=-1.0), ValueError, "Invalid learning rate: -1.0"),
    ("Adagrad", dict(lr_decay=-0.1), ValueError, "Invalid lr_decay value: -0.1"),
    ("Adagrad", dict(weight_decay=-1), ValueError, "Invalid weight_decay value: -1"),
    ("Adagrad", dict(initial_accumulator_value=-0.5), ValueError,
     "Invalid initial_accumulator_value value: -0.5"),
    ("Adagrad", dict(eps=-1e-10), ValueError, "Invalid epsilon value: -1e-10"),
    ("Adadelta", dict(lr=-0.5), ValueError, "Invalid learning rate: -0.5"),
    ("Adadelta", dict(rho=1.5), ValueError, "Invalid rho value: 1.5"),
    ("Adadelta", dict(eps=-1.0), ValueError, "Invalid epsilon value: -1.0"),
    ("Adadelta", dict(weight_decay=-0.1), ValueError, "Invalid weight_decay value: -0.1"),
    ("Adamax", dict(betas=(1.0, 0.999)), ValueError, "Invalid beta parameter at index 0: 1.0"),
    ("Adamax", dict(betas=(0.9, -0.1)), ValueError, "Invalid beta parameter at index 1: -0.1"),
    ("Adamax", dict(eps=-1.0), ValueError, "Invalid epsilon value: -1.0"),
    ("NAdam", dict(momentum_decay=-1e-3), ValueError, "Invalid momentum_decay value: -0.001"),
    ("NAdam", dict(betas=(0.9, 1.0)), ValueError, "Invalid beta parameter at index 1: 1.0"),
    ("NAdam", dict(weight_decay=-1), ValueError, "Invalid weight_decay value: -1"),
    ("RAdam", dict(lr=-1e-3), ValueError, "Invalid learning rate: -0.001"),
    ("RAdam", dict(betas=(-0.1, 0.9)), ValueError, "Invalid beta parameter at index 0: -0.1"),
    ("ASGD", dict(lr=-0.01), ValueError, "Invalid learning rate: -0.01"),
    ("ASGD", dict(weight_decay=-0.01), ValueError, "Invalid weight_decay value: -0.01"),
    ("Rprop", dict(etas=(1.5, 1.2)), ValueError, "Invalid eta values: 1.5, 1.2"),
    ("Rprop", dict(etas=(0.5, 0.9)), ValueError, "Invalid eta values: 0.5, 0.9"),
    ("Rprop", dict(lr=-1.0), ValueError, "Invalid learning rate: -1.0"),
    ("LBFGS", dict(lr=-1.0), ValueError, "Invalid learning rate: -1.0"),
]


@pytest.mark.parametrize("name,kw,exc,msg", BAD_CONSTRUCTIONS)
def test_bad_hyperparameters_raise(name, kw, exc, msg):
    with pytest.raises(exc) as err:
        getattr(optim, name)([leaf([1.0])], **kw)
    assert str(err.value) == msg


@pytest.mark.oracle
@pytest.mark.parametrize("name,kw,exc,msg", BAD_CONSTRUCTIONS)
def test_bad_hyperparameters_match_torch(torch, name, kw, exc, msg):
    with pytest.raises(exc) as theirs:
        getattr(torch.optim, name)([torch.ones(1, requires_grad=True)], **kw)
    assert str(theirs.value) == msg


def _more_errors(mod):
    a, b = mod.ones(1, requires_grad=True), mod.ones(1, requires_grad=True)
    return [
        (lambda: mod.optim.LBFGS([{"params": [a]}, {"params": [b]}]), ValueError,
         "LBFGS doesn't support per-parameter options (parameter groups)"),
        (lambda: mod.optim.NAdam([a], lr=mod.tensor([0.1, 0.2])), ValueError, "Tensor lr must be 1-element"),
        (lambda: mod.optim.Adagrad([a], fused=True, foreach=True), RuntimeError,
         "`fused` and `foreach` cannot be `True` together."),
    ]


@pytest.mark.parametrize("case", range(3))
def test_other_construction_errors(case):
    fn, exc, msg = _more_errors(npusim)[case]
    with pytest.raises(exc) as err:
        fn()
    assert str(err.value) == msg


@pytest.mark.oracle
@pytest.mark.parametrize("case", range(3))
def test_other_construction_errors_match_torch(torch, case):
    fn, exc, msg = _more_errors(torch)[case]
    with pytest.raises(exc) as err:
        fn()
    assert str(err.value) == msg


@pytest.mark.parametrize("name", ["Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop"])
def test_capturable_and_differentiable_are_not_supported(name):
    for kw in (dict(capturable=True), dict(differentiable=True)):
        with pytest.raises(NotImplementedError, match=f"{next(iter(kw))}=True is not supported"):
            getattr(optim, name)([leaf([1.0])], **kw)
    with pytest.raises(NotImplementedError, match="fused=True is not supported"):
        optim.Adagrad([leaf([1.0])], fused=True)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam",
                                  "ASGD", "Rprop"])
def test_an_older_state_dict_gets_the_missing_options_and_tensor_step_counters(name):
    # what an older version saved: no `maximize` option, and step counters as plain numbers
    p = npusim.nn.Parameter(npusim.ones(3))
    opt = getattr(npusim.optim, name)([p], lr=0.1)
    p.grad = npusim.full((3,), 0.5)
    opt.step()
    saved = opt.state_dict()
    del saved["param_groups"][0]["maximize"]
    for per_param in saved["state"].values():
        if "step" in per_param:
            per_param["step"] = float(per_param["step"])
    fresh = getattr(npusim.optim, name)([p], lr=0.1)
    fresh.load_state_dict(saved)
    assert fresh.param_groups[0]["maximize"] is False
    for per_param in fresh.state.values():
        if "step" in per_param:
            assert isinstance(per_param["step"], npusim.Tensor) and per_param["step"].item() == 1.0
    fresh.step()    # and it keeps working
