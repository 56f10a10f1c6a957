"""npusim.optim: optimizer base class, SGD, Adam, AdamW, RMSprop — behaviour, errors, state dicts, torch parity."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import npusim
from npusim import optim
from conftest import host

RNG = np.random.default_rng(1234)
P0 = RNG.standard_normal((6, 5)).astype(np.float32)
GRADS = [RNG.standard_normal((6, 5)).astype(np.float32) for _ in range(5)]

# (class name, kwargs): every branch of each update rule
CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1, amsgrad=True, maximize=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.2, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, centered=True, momentum=0.5, weight_decay=0.1, maximize=True)),
]
CASE_IDS = [f"{name}-{'-'.join(kw)}" for name, kw in CASES]


def leaf(values, device="cpu"):
    return npusim.tensor(values, device=device, requires_grad=True)


def run_steps(name, kw, device, grads=GRADS):
    p = leaf(P0, device)
    opt = getattr(optim, name)([p], **kw)
    for g in grads:
        p.grad = npusim.tensor(g, device=device)
        opt.step()
    return p, opt


def torch_steps(torch, name, kw, grads=GRADS):
    p = torch.tensor(P0, requires_grad=True)
    opt = getattr(torch.optim, name)([p], foreach=False, **kw)
    for g in grads:
        p.grad = torch.tensor(g)
        opt.step()
    return p, opt


# --- update math against torch -------------------------------------------------------------------------

@pytest.mark.oracle
@pytest.mark.parametrize("name,kw", CASES, ids=CASE_IDS)
def test_updates_match_torch(torch, device, name, kw):
    p, opt = run_steps(name, kw, device)
    tp, topt = torch_steps(torch, name, kw)
    # torch's vectorised cpu kernels fuse multiply-adds, so agreement is to about one float32 ulp
    np.testing.assert_allclose(host(p), tp.detach().numpy(), rtol=1e-6, atol=1e-6)
    state, tstate = opt.state[p], topt.state[tp]
    assert sorted(state) == sorted(tstate)
    for key, value in tstate.items():
        assert state[key].dtype.itemsize == value.dtype.itemsize
        np.testing.assert_allclose(host(state[key]), value.detach().numpy(), rtol=1e-5, atol=1e-6)


# the torch optimizers' single-tensor updates take sqrt as a method, out of place or in place
IEEE_SQRT_FOR_TORCH = ("torch.Tensor.sqrt = lambda t: torch.from_numpy(np.asarray(np.sqrt(t.detach().numpy())))"
                       "; torch.Tensor.sqrt_ = lambda t: t.copy_(t.sqrt())")


@pytest.mark.oracle
def test_same_operation_order_as_torch_bit_for_bit(torch):
    """Against torch's scalar (non-fused) kernels the results are identical bit for bit.

    torch's cpu sqrt is MKL's, within an ulp but not correctly rounded (and its code path is picked per CPU);
    NumPy's is correctly rounded. torch gets a correctly rounded sqrt here, so only the operations and their
    order are compared.
    """
    script = textwrap.dedent(f"""
        import numpy as np, torch, npusim
        from npusim import optim
        {IEEE_SQRT_FOR_TORCH}
        rng = np.random.default_rng(7)
        p0 = rng.standard_normal((9, 4)).astype(np.float32)
        grads = [rng.standard_normal((9, 4)).astype(np.float32) for _ in range(4)]
        cases = {CASES!r}
        for name, kw in cases:
            tp = torch.tensor(p0, requires_grad=True)
            to = getattr(torch.optim, name)([tp], foreach=False, **kw)
            p = npusim.tensor(p0, requires_grad=True)
            o = getattr(optim, name)([p], **kw)
            for g in grads:
                tp.grad = torch.tensor(g); to.step()
                p.grad = npusim.tensor(g); o.step()
            assert np.array_equal(tp.detach().numpy(), p.detach().numpy()), (name, kw)
        print("identical")
    """)
    env = dict(os.environ, ATEN_CPU_CAPABILITY="default")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "identical" in r.stdout


@pytest.mark.oracle
def test_param_groups_with_own_options_match_torch(torch, device):
    a0, b0 = P0[:2], P0[2:]
    a, b = leaf(a0, device), leaf(b0, device)
    opt = optim.Adam([{"params": [a]}, {"params": [b], "lr": 0.1, "amsgrad": True}], lr=0.01)
    ta, tb = torch.tensor(a0, requires_grad=True), torch.tensor(b0, requires_grad=True)
    topt = torch.optim.Adam([{"params": [ta]}, {"params": [tb], "lr": 0.1, "amsgrad": True}], lr=0.01,
                            foreach=False)
    for g in GRADS[:3]:
        a.grad, b.grad = npusim.tensor(g[:2], device=device), npusim.tensor(g[2:], device=device)
        ta.grad, tb.grad = torch.tensor(g[:2]), torch.tensor(g[2:])
        opt.step()
        topt.step()
    np.testing.assert_allclose(host(a), ta.detach().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(host(b), tb.detach().numpy(), rtol=1e-6, atol=1e-6)
    assert opt.param_groups[1]["lr"] == 0.1 and opt.param_groups[0]["amsgrad"] is False


@pytest.mark.oracle
@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop"])
def test_defaults_and_state_dict_layout_match_torch(torch, name):
    kw = {"momentum": 0.9} if name in ("SGD", "RMSprop") else {}
    p, opt = run_steps(name, kw, "cpu", GRADS[:2])
    tp, topt = torch_steps(torch, name, kw, GRADS[:2])
    tdefaults = dict(topt.defaults)
    tdefaults["foreach"] = None  # the oracle ran with foreach=False
    assert opt.defaults == tdefaults
    sd, tsd = opt.state_dict(), topt.state_dict()
    tsd["param_groups"][0]["foreach"] = None
    assert sd["param_groups"] == tsd["param_groups"]
    assert list(sd["state"]) == list(tsd["state"]) == [0]
    assert sorted(sd["state"][0]) == sorted(tsd["state"][0])


# --- update mechanics ------------------------------------------------------------------------------------

def test_sgd_plain_step_by_hand(device):
    p = leaf([1.0, 2.0], device)
    p.grad = npusim.tensor([0.5, -1.0], device=device)
    opt = optim.SGD([p], lr=0.1)
    opt.step()
    np.testing.assert_allclose(host(p), [0.95, 2.1], rtol=1e-6)
    assert len(opt.state) == 0  # no momentum: no state


def test_sgd_momentum_buffer_by_hand(device):
    p = leaf([0.0], device)
    opt = optim.SGD([p], lr=1.0, momentum=0.5)
    for _ in range(3):
        p.grad = npusim.tensor([1.0], device=device)
        opt.step()
    # buffers 1, 1.5, 1.75 -> p = -(1 + 1.5 + 1.75)
    np.testing.assert_allclose(host(p), [-4.25])
    np.testing.assert_allclose(host(opt.state[p]["momentum_buffer"]), [1.75])


def test_adam_first_step_moves_each_weight_by_lr(device):
    p = leaf([1.0, -1.0, 3.0], device)
    p.grad = npusim.tensor([0.2, -5.0, 1e-3], device=device)
    optim.Adam([p], lr=0.1).step()
    np.testing.assert_allclose(host(p), [0.9, -0.9, 2.9], rtol=1e-5)


def test_adamw_decays_weights_without_gradient_signal(device):
    p = leaf([2.0], device)
    p.grad = npusim.tensor([0.0], device=device)
    optim.AdamW([p], lr=0.1, weight_decay=0.5).step()
    np.testing.assert_allclose(host(p), [2.0 * (1 - 0.1 * 0.5)], rtol=1e-6)


def test_step_updates_in_place_on_the_parameter_device(device):
    for name, kw in CASES:
        p = leaf(P0, device)
        version = p._version
        opt = getattr(optim, name)([p], **kw)
        p.grad = npusim.tensor(GRADS[0], device=device)
        opt.step()
        assert p._version > version, name
        assert p.device.type == device and p.is_leaf and p.requires_grad and p.grad_fn is None
        for key, value in opt.state[p].items():
            expected = "cpu" if key == "step" else device
            assert value.device.type == expected, (name, key)
            assert not value.requires_grad


def test_parameters_without_grad_are_skipped(device):
    a, b = leaf([1.0], device), leaf([1.0], device)
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = npusim.tensor([1.0], device=device)
    opt.step()
    assert host(b).tolist() == [1.0] and b not in opt.state
    assert opt.state[a]["step"].item() == 1.0


def test_closure_is_evaluated_with_grad_enabled_and_its_loss_returned(device):
    p = leaf([3.0], device)
    opt = optim.SGD([p], lr=0.25)

    def closure():
        opt.zero_grad()
        assert npusim.is_grad_enabled()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with npusim.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 9.0
    np.testing.assert_allclose(host(p), [3.0 - 0.25 * 6.0])


def test_zero_grad(device):
    p = leaf([1.0, 2.0], device)
    opt = optim.SGD([p], lr=0.1)
    p.grad = npusim.tensor([1.0, 1.0], device=device)
    grad = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is grad and host(p.grad).tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None
    opt.zero_grad()  # nothing to reset is fine


def test_add_param_group_fills_defaults():
    a, b = leaf([1.0]), leaf([2.0])
    opt = optim.SGD([a], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": b, "lr": 0.5})
    assert opt.param_groups[1]["params"] == [b]
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["momentum"] == 0.9


def test_named_parameters_are_kept_as_param_names():
    a, b = leaf([1.0]), leaf([2.0])
    opt = optim.SGD([("w", a), ("b", b)], lr=0.1)
    assert opt.param_groups[0]["params"] == [a, b]
    assert opt.param_groups[0]["param_names"] == ["w", "b"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["w", "b"]


def test_duplicate_parameter_in_a_group_warns():
    a = leaf([1.0])
    with pytest.warns(UserWarning, match="optimizer contains a parameter group with duplicate parameters"):
        optim.SGD([a, a], lr=0.1)


def test_step_hooks_run_in_order_and_can_be_removed():
    p = leaf([1.0])
    p.grad = npusim.tensor([1.0])
    opt = optim.SGD([p], lr=0.1)
    calls = []
    pre = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append(("pre", o is opt)))
    post = opt.register_step_post_hook(lambda o, args, kwargs: calls.append(("post", o is opt)))
    glob = optim.optimizer.register_optimizer_step_pre_hook(lambda o, args, kwargs: calls.append(("global", True)))
    try:
        opt.step()
    finally:
        glob.remove()
    assert calls == [("global", True), ("pre", True), ("post", True)]
    pre.remove()
    post.remove()
    opt.step()
    assert len(calls) == 3
    np.testing.assert_allclose(host(p), [0.8])


def test_pre_hook_can_replace_the_closure():
    p = leaf([1.0])
    opt = optim.SGD([p], lr=0.1)
    opt.register_step_pre_hook(lambda o, args, kwargs: ((o,), {"closure": lambda: "replaced"}))
    assert opt.step() == "replaced"


def test_pre_hook_returning_garbage_raises():
    p = leaf([1.0])
    opt = optim.SGD([p], lr=0.1)
    opt.register_step_pre_hook(lambda o, args, kwargs: 5)
    with pytest.raises(RuntimeError, match=r"must return None or a tuple of \(new_args, new_kwargs\), but got 5"):
        opt.step()


def test_repr_lists_group_options():
    text = repr(optim.SGD([leaf([1.0])], lr=0.1))
    assert text.startswith("SGD (\nParameter Group 0\n") and "    lr: 0.1\n" in text and "params" not in text


def test_custom_optimizer_with_required_option():
    class Plain(optim.Optimizer):
        def __init__(self, params, lr=optim.optimizer.required):
            super().__init__(params, {"lr": lr})

        def step(self, closure=None):
            with npusim.no_grad():
                for group in self.param_groups:
                    for p in group["params"]:
                        p.add_(p.grad, alpha=-group["lr"])

    p = leaf([1.0])
    with pytest.raises(ValueError, match="parameter group didn't specify a value of required optimization "
                                         "parameter lr"):
        Plain([p])
    opt = Plain([{"params": [p], "lr": 0.5}])
    p.grad = npusim.tensor([1.0])
    opt.step()
    assert host(p).tolist() == [0.5]


# --- training ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,kw,steps", [
    ("SGD", dict(lr=0.1, momentum=0.9), 80),
    ("Adam", dict(lr=0.05), 150),
    ("AdamW", dict(lr=0.05, weight_decay=1e-4), 150),
    ("RMSprop", dict(lr=0.01, momentum=0.5), 150),
])
def test_linear_regression_trains_to_low_loss(device, name, kw, steps):
    g = npusim.Generator().manual_seed(0)
    x = npusim.randn(64, 3, generator=g).to(device)
    y = x @ npusim.tensor([[1.5], [-2.0], [0.5]], device=device) + 0.3
    w = npusim.zeros(3, 1, device=device, requires_grad=True)
    b = npusim.zeros(1, device=device, requires_grad=True)
    opt = getattr(optim, name)([w, b], **kw)
    for _ in range(steps):
        opt.zero_grad()
        loss = ((x @ w + b - y) ** 2).mean()
        loss.backward()
        opt.step()
    assert loss.item() < 1e-3
    np.testing.assert_allclose(host(w).ravel(), [1.5, -2.0, 0.5], atol=0.05)


# --- state dicts -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,kw", CASES, ids=CASE_IDS)
def test_state_dict_round_trip_continues_identically(device, name, kw):
    p, opt = run_steps(name, kw, device, GRADS[:2])
    sd = opt.state_dict()
    assert sd["param_groups"][0]["params"] == [0]
    q = leaf(host(p), device)
    opt2 = getattr(optim, name)([q], lr=123.0)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == kw["lr"] and opt2.param_groups[0]["params"] == [q]
    for key, value in opt2.state[q].items():
        assert value is not opt.state[p][key]  # loaded state never aliases the source
    for g in GRADS[2:]:
        p.grad = npusim.tensor(g, device=device)
        q.grad = npusim.tensor(g, device=device)
        opt.step()
        opt2.step()
    assert np.array_equal(host(p), host(q))


def test_load_state_dict_moves_state_to_param_device_and_dtype(device):
    p, opt = run_steps("Adam", dict(lr=0.01), "cpu", GRADS[:2])
    sd = opt.state_dict()
    q = npusim.tensor(P0, dtype=npusim.float64, device=device, requires_grad=True)
    opt2 = optim.Adam([q])
    opt2.load_state_dict(sd)
    state = opt2.state[q]
    assert state["exp_avg"].device.type == device and state["exp_avg"].dtype == npusim.float64
    assert state["step"].device.type == "cpu" and state["step"].dtype == npusim.float32
    np.testing.assert_allclose(host(state["exp_avg_sq"]), host(opt.state[p]["exp_avg_sq"]), rtol=1e-7)
    q.grad = npusim.ones_like(q)
    opt2.step()
    assert state["step"].item() == 3.0 and opt.state[p]["step"].item() == 2.0


def test_state_dict_numbers_params_across_groups():
    a, b, c = leaf([1.0]), leaf([2.0]), leaf([3.0])
    opt = optim.SGD([{"params": [a, b]}, {"params": [c], "lr": 0.5}], lr=0.1, momentum=0.9)
    for t in (a, c):
        t.grad = npusim.tensor([1.0])
    opt.step()
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert sorted(sd["state"]) == [0, 2]
    assert sd["state"][2]["momentum_buffer"] is opt.state[c]["momentum_buffer"]


def test_pickled_optimizer_is_usable():
    import pickle
    p, opt = run_steps("Adam", dict(lr=0.01), "cpu", GRADS[:1])
    restored = pickle.loads(pickle.dumps(opt))
    (q,) = restored.param_groups[0]["params"]
    q.grad = npusim.tensor(GRADS[1])
    restored.step()
    assert restored.state[q]["step"].item() == 2.0



@pytest.mark.parametrize("name", ["Adam", "AdamW", "RMSprop"])
def test_state_dict_with_a_number_step_loads_as_a_tensor(name):
    """Checkpoints from before step counters were tensors keep ``step`` as a Python number."""
    p, opt = run_steps(name, dict(lr=0.01), "cpu", GRADS[:2])
    sd = opt.state_dict()
    sd["state"][0] = dict(sd["state"][0], step=2)   # state_dict() shares the live state dicts
    q = leaf(host(p))
    opt2 = getattr(optim, name)([q], lr=0.01)
    opt2.load_state_dict(sd)
    step = opt2.state[q]["step"]
    assert isinstance(step, npusim.Tensor) and step.dtype == npusim.float32 and step.item() == 2.0
    p.grad = npusim.tensor(GRADS[2])
    q.grad = npusim.tensor(GRADS[2])
    opt.step()
    opt2.step()
    assert np.array_equal(host(p), host(q))


# --- errors ------------------------------------------------------------------------------------------------

BAD_CONSTRUCTIONS = [
    ("SGD", dict(lr=-1), ValueError, "Invalid learning rate: -1"),
    ("SGD", dict(lr=0.1, momentum=-0.5), ValueError, "Invalid momentum value: -0.5"),
    ("SGD", dict(lr=0.1, weight_decay=-1e-3), ValueError, "Invalid weight_decay value: -0.001"),
    ("SGD", dict(lr=0.1, nesterov=True), ValueError, "Nesterov momentum requires a momentum and zero dampening"),
    ("SGD", dict(lr=0.1, nesterov=True, momentum=0.9, dampening=0.1), ValueError,
     "Nesterov momentum requires a momentum and zero dampening"),
    ("Adam", dict(lr=-0.5), ValueError, "Invalid learning rate: -0.5"),
    ("Adam", dict(eps=-1.0), ValueError, "Invalid epsilon value: -1.0"),
    ("Adam", dict(betas=(1.0, 0.999)), ValueError, "Invalid beta parameter at index 0: 1.0"),
    ("Adam", dict(betas=(0.9, -0.1)), ValueError, "Invalid beta parameter at index 1: -0.1"),
    ("Adam", dict(betas=(0, 0.9)), ValueError, "betas must be either both floats or both Tensors"),
    ("Adam", dict(weight_decay=-1), ValueError, "Invalid weight_decay value: -1"),
    ("AdamW", dict(betas=(0.9, 1.5)), ValueError, "Invalid beta parameter at index 1: 1.5"),
    ("RMSprop", dict(alpha=-0.1), ValueError, "Invalid alpha value: -0.1"),
    ("RMSprop", dict(momentum=-1), ValueError, "Invalid momentum value: -1"),
    ("RMSprop", dict(eps=-1e-8), ValueError, "Invalid epsilon value: -1e-08"),
]


@pytest.mark.parametrize("name,kw,exc,msg", BAD_CONSTRUCTIONS)
def test_bad_hyperparameters_raise(name, kw, exc, msg):
    with pytest.raises(exc, match=f"^{msg.replace('(', '[(]').replace(')', '[)]')}$"):
        getattr(optim, name)([leaf([1.0])], **kw)


@pytest.mark.oracle
@pytest.mark.parametrize("name,kw,exc,msg", BAD_CONSTRUCTIONS)
def test_bad_hyperparameters_match_torch(torch, name, kw, exc, msg):
    with pytest.raises(exc) as theirs:
        getattr(torch.optim, name)([torch.ones(1, requires_grad=True)], **kw)
    assert str(theirs.value) == msg


def _param_errors(mod):
    """(callable, error type) pairs for bad parameter lists, built from ``mod`` (npusim or torch)."""
    a = mod.ones(2, requires_grad=True)
    nonleaf = a * 2
    return [
        (lambda: mod.optim.SGD([], lr=0.1), ValueError),
        (lambda: mod.optim.SGD(a, lr=0.1), TypeError),
        (lambda: mod.optim.SGD([{"params": {a}}], lr=0.1), TypeError),
        (lambda: mod.optim.SGD([a, 3], lr=0.1), TypeError),
        (lambda: mod.optim.SGD([nonleaf], lr=0.1), ValueError),
        (lambda: mod.optim.SGD([{"params": [a]}, {"params": [a]}], lr=0.1), ValueError),
        (lambda: mod.optim.SGD([("w", a), mod.ones(1, requires_grad=True)], lr=0.1), ValueError),
        (lambda: mod.optim.SGD([a], lr=0.1).add_param_group([a]), TypeError),
    ]


PARAM_ERROR_MESSAGES = [
    "optimizer got an empty parameter list",
    "params argument given to the optimizer should be an iterable of Tensors or dicts, but got npusim.FloatTensor",
    "optimizer parameters need to be organized in ordered collections, but the ordering of tensors in sets will "
    "change between runs. Please use a list instead.",
    "optimizer can only optimize Tensors, but one of the params is int",
    "can't optimize a non-leaf Tensor",
    "some parameters appear in more than one parameter group",
    "all optimizer params should be with/without names. Some param names are missing",
    "param_group must be a dict, but got <class 'list'>",
]


@pytest.mark.parametrize("case", range(len(PARAM_ERROR_MESSAGES)))
def test_bad_parameter_lists_raise(case):
    fn, exc = _param_errors(npusim)[case]
    with pytest.raises(exc) as err:
        fn()
    assert str(err.value) == PARAM_ERROR_MESSAGES[case]


@pytest.mark.oracle
@pytest.mark.parametrize("case", range(len(PARAM_ERROR_MESSAGES)))
def test_bad_parameter_lists_match_torch(torch, case):
    fn, exc = _param_errors(torch)[case]
    with pytest.raises(exc) as err:
        fn()
    assert str(err.value) == PARAM_ERROR_MESSAGES[case].replace("npusim.", "torch.")


def _load_errors(mod):
    a, b, c = (mod.ones(1, requires_grad=True) for _ in range(3))
    one_group = mod.optim.SGD([a, b], lr=0.1).state_dict()
    two_groups = mod.optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).state_dict()
    return [
        (lambda: mod.optim.SGD([c], lr=0.1).load_state_dict(two_groups),
         "loaded state dict has a different number of parameter groups"),
        (lambda: mod.optim.SGD([c], lr=0.1).load_state_dict(one_group),
         "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"),
    ]


@pytest.mark.parametrize("case", [0, 1])
def test_load_state_dict_with_mismatched_layout_raises(case):
    fn, msg = _load_errors(npusim)[case]
    with pytest.raises(ValueError, match=f"^{msg}$"):
        fn()


@pytest.mark.oracle
@pytest.mark.parametrize("case", [0, 1])
def test_load_state_dict_errors_match_torch(torch, case):
    fn, msg = _load_errors(torch)[case]
    with pytest.raises(ValueError, match=f"^{msg}$"):
        fn()


@pytest.mark.parametrize("kw,exc,msg", [
    (dict(fused=True), NotImplementedError, "fused=True is not supported"),
    (dict(fused=True, foreach=True), RuntimeError, "`fused` and `foreach` cannot be `True` together."),
    (dict(capturable=True), NotImplementedError, "capturable=True is not supported"),
    (dict(differentiable=True), NotImplementedError, "differentiable=True is not supported"),
])
def test_unsupported_implementation_switches_raise(kw, exc, msg):
    with pytest.raises(exc, match=msg):
        optim.Adam([leaf([1.0])], **kw)


def test_foreach_flag_is_accepted_and_runs_the_same_math():
    p, _ = run_steps("Adam", dict(lr=0.01), "cpu", GRADS[:2])
    q, opt = run_steps("Adam", dict(lr=0.01, foreach=True), "cpu", GRADS[:2])
    assert np.array_equal(host(p), host(q)) and opt.defaults["foreach"] is True


def test_tensor_lr_is_accepted():
    p, _ = run_steps("SGD", dict(lr=0.1, momentum=0.9), "cpu", GRADS[:2])
    q, _ = run_steps("SGD", dict(lr=npusim.tensor(0.1), momentum=0.9), "cpu", GRADS[:2])
    np.testing.assert_allclose(host(p), host(q), rtol=1e-7)
    with pytest.raises(ValueError, match="^Tensor lr must be 1-element$"):
        optim.SGD([leaf([1.0])], lr=npusim.tensor([0.1, 0.2]))


def test_no_warnings_during_a_normal_step(device):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name, kw in CASES:
            run_steps(name, kw, device, GRADS[:2])
