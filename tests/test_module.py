"""``nn.Module`` itself: registration by assignment, traversal, state dicts, modes, hooks, device/dtype moves
and printing, compared with torch where torch has an answer (names, orders, error types and messages)."""
from __future__ import annotations

import copy
from collections import OrderedDict

import numpy as np
import pytest
from conftest import host

import npusim
import npusim.nn as nn
from npusim.nn.modules import module as module_mod


def same_error(torch, fn, exc):
    """``fn(lib, lib.nn)`` raises ``exc`` with torch's message (its 'torch' read as 'npusim') in both libraries."""
    with pytest.raises(exc) as t_err:
        fn(torch, torch.nn)
    with pytest.raises(exc) as n_err:
        fn(npusim, nn)
    assert str(n_err.value) == str(t_err.value).replace("torch", "npusim")
    return n_err.value


def make_net(lib_nn):
    """A small net with a shared submodule, a tied parameter and both kinds of buffer."""

    class Net(lib_nn.Module):
        def __init__(self):
            super().__init__()
            self.shared = lib_nn.Linear(3, 3)
            self.body = lib_nn.Sequential(lib_nn.Linear(3, 3), lib_nn.ReLU(), self.shared)
            self.head = lib_nn.Linear(3, 2)
            self.head2 = lib_nn.Linear(3, 2)
            self.head2.weight = self.head.weight
            self.register_buffer("steps", _lib(lib_nn).zeros(1))
            self.register_buffer("scratch", _lib(lib_nn).ones(2), persistent=False)

        def forward(self, x):
            return self.head(self.shared(self.body(x)))

    return Net()


def _lib(lib_nn):
    return npusim if lib_nn is nn else __import__("torch")


# --- registration --------------------------------------------------------------------------------------------

def test_assignment_registers_each_kind():
    m = nn.Module()
    m.w = nn.Parameter(npusim.zeros(2))
    m.b = nn.Buffer(npusim.ones(2))
    m.sub = nn.Linear(2, 2)
    m.plain = 3
    assert list(m._parameters) == ["w"] and list(m._buffers) == ["b"] and list(m._modules) == ["sub"]
    assert m.plain == 3 and "plain" in m.__dict__
    # Re-assigning a name moves it to the store of its new kind.
    m.sub = nn.Parameter(npusim.zeros(1))
    assert "sub" in m._parameters and "sub" not in m._modules
    m.w = None
    assert m._parameters["w"] is None and m.w is None
    assert [n for n, _ in m.named_parameters()] == ["sub"]
    m.b = npusim.zeros(3)
    assert m.b.shape == (3,) and "b" in m._buffers
    del m.b, m.sub
    assert not m._buffers and "sub" not in m._parameters
    with pytest.raises(AttributeError, match="^'Module' object has no attribute 'b'$"):
        m.b


@pytest.mark.oracle
def test_buffer_marks_a_plain_tensor_like_torch(torch):
    for T, N in ((torch, torch.nn), (npusim, nn)):
        data = T.ones(2, requires_grad=True)
        b = N.Buffer(data, persistent=False)
        assert type(b) is T.Tensor and isinstance(b, N.Buffer) and not isinstance(data, N.Buffer)
        assert b.persistent is False and b.requires_grad and b.grad_fn is None
        assert b.data_ptr() == data.data_ptr()
        m = N.Module()
        m.b = b
        assert m.b is b and list(m.state_dict()) == []
        m.b = T.zeros(3)  # a plain tensor keeps the buffer's persistence
        assert list(m.state_dict()) == []


def test_non_persistent_buffer_kept_out_of_state_dict():
    m = nn.Module()
    m.a = nn.Buffer(npusim.ones(1), persistent=False)
    m.register_buffer("b", npusim.ones(1))
    assert [n for n, _ in m.named_buffers()] == ["a", "b"]
    assert list(m.state_dict()) == ["b"]
    m.register_buffer("a", npusim.zeros(1))  # registering again as persistent
    assert list(m.state_dict()) == ["a", "b"]


REGISTRATION_ERRORS = [
    (TypeError, lambda T, N: setattr(_with(N, b=N.Buffer(T.ones(2))), "b", 3)),
    (TypeError, lambda T, N: setattr(_with(N, w=N.Parameter(T.ones(2))), "w", T.ones(2))),
    (TypeError, lambda T, N: setattr(_with(N, c=N.ReLU()), "c", 3)),
    (TypeError, lambda T, N: N.Module().register_buffer("x", [1])),
    (TypeError, lambda T, N: N.Module().register_buffer(1, None)),
    (KeyError, lambda T, N: N.Module().register_buffer("a.b", None)),
    (KeyError, lambda T, N: N.Module().register_buffer("", None)),
    (KeyError, lambda T, N: _with(N, x=3).register_buffer("x", None)),
    (TypeError, lambda T, N: N.Module().register_parameter("y", T.ones(2))),
    (TypeError, lambda T, N: N.Module().register_parameter(2, None)),
    (KeyError, lambda T, N: N.Module().register_parameter("a.b", None)),
    (KeyError, lambda T, N: N.Module().register_parameter("", None)),
    (KeyError, lambda T, N: _with(N, x=3).register_parameter("x", None)),
    (TypeError, lambda T, N: N.Module().add_module("z", 3)),
    (TypeError, lambda T, N: N.Module().add_module("z", T.ones(1))),
    (TypeError, lambda T, N: N.Module().add_module(3, N.ReLU())),
    (KeyError, lambda T, N: N.Module().add_module("a.b", N.ReLU())),
    (KeyError, lambda T, N: N.Module().add_module("", N.ReLU())),
    (KeyError, lambda T, N: _with(N, x=3).add_module("x", N.ReLU())),
    (AttributeError, lambda T, N: _uninitialised(N, lambda self: setattr(self, "w", N.Parameter(T.ones(1))))),
    (AttributeError, lambda T, N: _uninitialised(N, lambda self: setattr(self, "m", N.ReLU()))),
    (AttributeError, lambda T, N: _uninitialised(N, lambda self: self.register_buffer("x", None))),
    (AttributeError, lambda T, N: _uninitialised(N, lambda self: self.register_parameter("x", None))),
    (AttributeError, lambda T, N: N.Module().missing),
    (AttributeError, lambda T, N: N.Sequential(N.Linear(2, 2)).get_submodule("0.q")),
    (AttributeError, lambda T, N: N.Sequential(N.Linear(2, 2)).get_submodule("0.weight")),
    (AttributeError, lambda T, N: N.Sequential(N.Linear(2, 2)).get_parameter("0.foo")),
    (AttributeError, lambda T, N: N.Sequential(N.Linear(2, 2)).get_parameter("0")),
    (AttributeError, lambda T, N: N.Sequential(N.Linear(2, 2)).get_buffer("0.weight")),
    (AssertionError, lambda T, N: N.Sequential().insert(0, 3)),
    (RuntimeError, lambda T, N: N.Parameter(T.zeros(2, dtype=T.long))),
    (IndexError, lambda T, N: N.Sequential(N.ReLU()).insert(2, N.ReLU())),
    (TypeError, lambda T, N: N.Module(3)),
    (TypeError, lambda T, N: N.Module(a=1)),
    (NotImplementedError, lambda T, N: N.Module()(3)),
]


def _with(N, **attrs):
    m = N.Module()
    for k, v in attrs.items():
        setattr(m, k, v)
    return m


def _uninitialised(N, action):
    class Early(N.Module):
        def __init__(self):
            action(self)

    return Early()


@pytest.mark.oracle
@pytest.mark.parametrize("index", range(len(REGISTRATION_ERRORS)))
def test_registration_errors_match_torch(torch, index):
    exc, fn = REGISTRATION_ERRORS[index]
    same_error(torch, fn, exc)


@pytest.mark.oracle
def test_computed_tensor_is_refused_as_parameter(torch):
    same_error(torch, lambda T, N: N.Module().register_parameter("q", N.Parameter(T.ones(2)) * 2), TypeError)
    same_error(torch, lambda T, N: N.Module().register_parameter("q", N.Parameter(T.ones(2)).double()), TypeError)


def test_get_submodule_parameter_buffer():
    net = make_net(nn)
    assert net.get_submodule("") is net and net.get_submodule("body.2") is net.shared
    assert net.get_parameter("body.0.bias") is net.body[0].bias
    assert net.get_buffer("steps") is net.steps


# --- traversal -----------------------------------------------------------------------------------------------

@pytest.mark.oracle
def test_named_traversals_match_torch_with_shared_members(torch):
    t_net, n_net = make_net(torch.nn), make_net(nn)

    def names(gen):
        return [n for n, _ in gen]

    for getter in (lambda m: m.named_parameters(), lambda m: m.named_parameters(remove_duplicate=False),
                   lambda m: m.named_parameters(prefix="net", recurse=False),
                   lambda m: m.named_parameters(recurse=False),
                   lambda m: m.named_buffers(), lambda m: m.named_buffers(prefix="p"),
                   lambda m: m.named_modules(), lambda m: m.named_modules(remove_duplicate=False),
                   lambda m: m.named_modules(prefix="root"), lambda m: m.named_children(),
                   lambda m: m.body.named_parameters(prefix="body")):
        assert names(getter(n_net)) == names(getter(t_net))
    assert len(list(n_net.parameters())) == len(list(t_net.parameters())) == 7
    assert len(list(n_net.modules())) == len(list(t_net.modules()))
    assert [type(c).__name__ for c in n_net.children()] == [type(c).__name__ for c in t_net.children()]
    params = dict(n_net.named_parameters(remove_duplicate=False))
    assert params["head2.weight"] is params["head.weight"]
    assert params["body.2.weight"] is params["shared.weight"]


def test_deep_models_traverse_without_recursion_limit():
    deep = nn.Identity()
    for _ in range(3000):
        outer = nn.Sequential()
        outer.append(deep)
        deep = outer
    assert len(list(deep.named_modules())) == 3001
    assert list(deep.state_dict()) == []
    assert deep.load_state_dict({}) is not None
    deep.eval()
    assert not any(m.training for m in deep.modules())


# --- state dicts -----------------------------------------------------------------------------------------------

@pytest.mark.oracle
def test_state_dict_matches_torch(torch):
    t_net, n_net = make_net(torch.nn), make_net(nn)
    t_sd, n_sd = t_net.state_dict(), n_net.state_dict()
    assert list(n_sd) == list(t_sd)
    assert dict(n_sd._metadata) == dict(t_sd._metadata)
    assert list(n_net.state_dict(prefix="m.")) == list(t_net.state_dict(prefix="m."))
    w = n_sd["head.weight"]
    assert not w.requires_grad and type(w) is npusim.Tensor
    assert w.data_ptr() == n_net.head.weight.data_ptr()  # detached, not copied
    kept = n_net.state_dict(keep_vars=True)
    assert kept["head.weight"] is n_net.head.weight


@pytest.mark.oracle
def test_load_state_dict_strict_errors_match_torch(torch):
    def broken(lib, N, edit):
        net = make_net(N)
        sd = net.state_dict()
        edit(lib, sd)
        net.load_state_dict(sd)

    edits = [
        lambda T, sd: sd.pop("head.bias"),
        lambda T, sd: sd.update({"head.extra": T.zeros(1), "nothere.weight": T.zeros(1), "steps.x": T.zeros(1)}),
        lambda T, sd: sd.update({"head.weight": T.zeros(5, 5)}),
        lambda T, sd: sd.update({"head.bias": [1.0, 2.0]}),
        lambda T, sd: (sd.pop("body.0.weight"), sd.update({"body.9.weight": T.zeros(1), "steps": T.zeros(2)})),
        lambda T, sd: sd.update({"scratch": T.zeros(2)}),
    ]
    for edit in edits:
        same_error(torch, lambda T, N: broken(T, N, edit), RuntimeError)


@pytest.mark.oracle
def test_load_state_dict_non_strict_reports_keys_like_torch(torch):
    results = []
    for T, N in ((torch, torch.nn), (npusim, nn)):
        net = make_net(N)
        sd = net.state_dict()
        sd.pop("body.0.bias")
        sd["body.0.extra"] = T.zeros(1)
        sd["unknown"] = T.zeros(1)
        results.append(net.load_state_dict(sd, strict=False))
    assert results[1].missing_keys == results[0].missing_keys == ["body.0.bias"]
    assert results[1].unexpected_keys == results[0].unexpected_keys
    assert repr(results[1]) == repr(results[0])
    assert repr(make_net(nn).load_state_dict(make_net(nn).state_dict())) == "<All keys matched successfully>"
    with pytest.raises(TypeError, match=r"^Expected state_dict to be dict-like, got <class 'list'>\.$"):
        make_net(nn).load_state_dict([])


def test_load_state_dict_copies_into_existing_tensors(device):
    src, dst = nn.Linear(3, 2), nn.Linear(3, 2).to(device)
    weight = dst.weight
    dst.load_state_dict({"weight": src.weight.double(), "bias": src.bias})
    assert dst.weight is weight and dst.weight.dtype is npusim.float32 and dst.weight.device.type == device
    np.testing.assert_allclose(host(dst.weight), host(src.weight), rtol=1e-7)
    assert dst.weight.requires_grad


def test_load_state_dict_assign_takes_the_given_tensors():
    src, dst = nn.Linear(3, 2), nn.Linear(3, 2)
    dst.bias.requires_grad_(False)
    sd = {"weight": src.weight.detach().double(), "bias": src.bias.detach()}
    dst.load_state_dict(sd, assign=True)
    assert isinstance(dst.weight, nn.Parameter) and dst.weight.dtype is npusim.float64
    assert dst.weight.data_ptr() == sd["weight"].data_ptr()
    assert dst.weight.requires_grad and not dst.bias.requires_grad
    bn = nn.BatchNorm1d(2)
    new_mean = npusim.tensor([1.0, 2.0])
    bn.load_state_dict({**bn.state_dict(), "running_mean": new_mean}, assign=True)
    assert bn.running_mean is new_mean


def test_scalar_parameter_loads_from_one_element_vector():
    m = nn.Module()
    m.s = nn.Parameter(npusim.tensor(1.0))
    m.load_state_dict({"s": npusim.tensor([4.0])})
    assert m.s.item() == 4.0 and m.s.shape == ()


def test_state_dict_and_load_hooks():
    m = nn.Linear(2, 2)
    seen = []
    m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: seen.append(("pre", prefix, keep_vars)))
    m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: seen.append(("post", list(sd), meta)))
    sd = m.state_dict()
    assert seen == [("pre", "", False), ("post", ["weight", "bias"], {"version": 1})]
    bad = m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: {})
    with pytest.raises(RuntimeError, match="^state_dict post-hook must return None$"):
        m.state_dict()
    bad.remove()

    def pre(mod, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
        state_dict[prefix + "bias"] = npusim.zeros(2)  # fill a key the checkpoint lacks

    def post(mod, incompatible):
        seen.append(("load-post", list(incompatible.missing_keys)))

    m.register_load_state_dict_pre_hook(pre)
    handle = m.register_load_state_dict_post_hook(post)
    m.load_state_dict({"weight": sd["weight"]})
    assert host(m.bias).tolist() == [0.0, 0.0] and seen[-1] == ("load-post", [])
    handle.remove()
    m.load_state_dict(sd)
    assert seen[-1] == ("load-post", [])


def test_extra_state_round_trip():
    class WithExtra(nn.Module):
        def __init__(self):
            super().__init__()
            self.counter = 0

        def get_extra_state(self):
            return {"counter": self.counter}

        def set_extra_state(self, state):
            self.counter = state["counter"]

    a, b = WithExtra(), WithExtra()
    a.counter = 7
    sd = a.state_dict()
    assert list(sd) == ["_extra_state"]
    b.load_state_dict(sd)
    assert b.counter == 7
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "_extra_state"'):
        b.load_state_dict({})
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "_extra_state"'):
        nn.Module().load_state_dict(sd)


# --- modes, apply, zero_grad ------------------------------------------------------------------------------------

def test_train_eval_reach_every_submodule_through_train():
    calls = []

    class Tracking(nn.Module):
        def train(self, mode=True):
            calls.append(mode)
            return super().train(mode)

    net = nn.Sequential(nn.Linear(2, 2), nn.Sequential(Tracking(), nn.Dropout()))
    assert net.eval() is net
    assert not any(m.training for m in net.modules()) and calls == [False]
    net.train()
    assert all(m.training for m in net.modules()) and calls == [False, True]
    with pytest.raises(ValueError, match="^training mode is expected to be boolean$"):
        net.train(1)


@pytest.mark.oracle
def test_apply_visits_children_first_like_torch(torch):
    orders = []
    for N in (torch.nn, nn):
        order = []
        net = N.Sequential(N.Linear(2, 2), N.Sequential(N.ReLU(), N.Tanh()))
        assert net.apply(lambda m: order.append(type(m).__name__)) is net
        orders.append(order)
    assert orders[1] == orders[0] == ["Linear", "ReLU", "Tanh", "Sequential", "Sequential"]


def test_apply_can_reinitialise():
    net = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 1))
    net.apply(lambda m: nn.init.zeros_(m.weight) if isinstance(m, nn.Linear) else None)
    assert all(not host(p).any() for n, p in net.named_parameters() if n.endswith("weight"))


def test_zero_grad(device):
    net = nn.Linear(3, 2).to(device)
    net(npusim.ones(4, 3, device=device)).sum().backward()
    grad = net.weight.grad
    net.zero_grad(set_to_none=False)
    assert net.weight.grad is grad and not host(grad).any()
    net.zero_grad()
    assert net.weight.grad is None and net.bias.grad is None
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


# --- hooks ----------------------------------------------------------------------------------------------------------

def test_forward_pre_and_post_hooks():
    lin = nn.Linear(2, 2)
    nn.init.eye_(lin.weight)
    nn.init.zeros_(lin.bias)
    log = []
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
    h2 = lin.register_forward_pre_hook(lambda m, args: log.append("first"), prepend=True)
    h3 = lin.register_forward_hook(lambda m, args, out: out + 1)
    x = npusim.ones(1, 2)
    assert host(lin(x)).tolist() == [[3.0, 3.0]] and log == ["first"]
    for h in (h1, h2, h3):
        h.remove()
    assert host(lin(x)).tolist() == [[1.0, 1.0]]


def test_hooks_with_kwargs():
    class Scale(nn.Module):
        def forward(self, x, *, factor=1.0):
            return x * factor

    m = Scale()
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {**kwargs, "factor": 3.0}), with_kwargs=True)
    seen = {}

    def post(mod, args, kwargs, out):
        seen.update(kwargs)
        return out - 1

    m.register_forward_hook(post, with_kwargs=True)
    assert host(m(npusim.ones(2), factor=2.0)).tolist() == [2.0, 2.0]
    assert seen == {"factor": 3.0}


@pytest.mark.oracle
def test_bad_pre_hook_return_matches_torch(torch):
    def fn(T, N):
        m = N.Identity()
        m.register_forward_pre_hook(lambda mod, args, kwargs: 5, with_kwargs=True)
        m(T.ones(1))

    same_error(torch, fn, RuntimeError)


def test_always_call_hook_runs_when_forward_raises():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m = Boom()
    called = []
    m.register_forward_hook(lambda mod, args, out: called.append(out), always_call=True)
    m.register_forward_hook(lambda mod, args, out: called.append("never"))
    with pytest.raises(ValueError, match="^boom$"):
        m(npusim.ones(1))
    assert called == [None]


def test_global_forward_hook_sees_every_module():
    seen = []
    handle = module_mod.register_module_forward_hook(lambda m, args, out: seen.append(type(m).__name__))
    try:
        nn.Sequential(nn.Linear(2, 2), nn.ReLU())(npusim.ones(1, 2))
    finally:
        handle.remove()
    assert seen == ["Linear", "ReLU", "Sequential"]
    nn.ReLU()(npusim.ones(1))
    assert len(seen) == 3


# --- device and dtype -----------------------------------------------------------------------------------------

def test_to_device_keeps_parameter_objects_and_moves_grads(device):
    net = make_net(nn)
    net(npusim.ones(1, 3)).sum().backward()
    weight, grad = net.head.weight, net.head.weight.grad
    assert net.to(device) is net
    assert net.head.weight is weight and net.head.weight.grad is grad
    for name, t in list(net.named_parameters()) + list(net.named_buffers()):
        assert t.device.type == device, name
    assert weight.grad.device.type == device
    assert net.head2.weight is net.head.weight  # ties survive
    out = net(npusim.ones(1, 3, device=device))
    assert out.device.type == device
    assert net.cpu() is net and weight.device.type == "cpu"


def test_npu_method_is_generated_for_modules():
    net = nn.Linear(2, 2)
    assert net.npu() is net and net.weight.device == npusim.device("npu", 0)
    assert net.cpu().weight.device.type == "cpu"


@pytest.mark.oracle
def test_dtype_casts_touch_only_floating_tensors(torch):
    net = nn.BatchNorm1d(3)
    net.double()
    assert net.weight.dtype is npusim.float64 and net.running_mean.dtype is npusim.float64
    assert net.num_batches_tracked.dtype is npusim.int64
    net.half()
    assert net.weight.dtype is npusim.float16
    net.float()
    assert net.weight.dtype is npusim.float32
    net.bfloat16()
    assert net.running_var.dtype is npusim.bfloat16
    net.to(npusim.float64)
    assert net.weight.dtype is npusim.float64 and net.num_batches_tracked.dtype is npusim.int64
    net.to(npusim.zeros(1, dtype=npusim.float32))
    assert net.weight.dtype is npusim.float32
    net.to("cpu", npusim.float16)
    assert net.bias.dtype is npusim.float16
    same_error(torch, lambda T, N: N.Linear(2, 2).to(T.int64), TypeError)


def test_deepcopy_is_independent():
    net = make_net(nn)
    net.register_load_state_dict_pre_hook(lambda mod, sd, *rest: sd.setdefault("seen_by", mod))
    clone = copy.deepcopy(net)
    assert clone.head.weight is not net.head.weight
    assert clone.head2.weight is clone.head.weight  # ties are kept inside the copy
    np.testing.assert_array_equal(host(clone.head.weight), host(net.head.weight))
    with npusim.no_grad():
        clone.head.weight.fill_(0)
    assert host(net.head.weight).any()
    # The copied hook is handed the copy, not the original.
    seen = {}
    clone._load_state_dict_pre_hooks[next(iter(clone._load_state_dict_pre_hooks))](seen, "", {}, True, [], [], [])
    assert seen["seen_by"] is clone


# --- printing --------------------------------------------------------------------------------------------------

@pytest.mark.oracle
def test_repr_matches_torch(torch):
    def build(N):
        class Custom(N.Module):
            def extra_repr(self):
                return "line one\nline two"

        return N.Sequential(OrderedDict([
            ("features", N.Sequential(N.Conv2d(1, 2, 3), N.ReLU(inplace=True), N.MaxPool2d(2))),
            ("blocks", N.ModuleList([N.Linear(2, 2) for _ in range(3)] + [N.Dropout(0.2)])),
            ("table", N.ModuleDict({"a": N.Identity(), "b": Custom()})),
            ("empty", N.ModuleList()),
            ("custom", Custom()),
        ]))

    assert repr(build(nn)) == repr(build(torch.nn))
    assert repr(nn.Module()) == "Module()"
    p = nn.Parameter(npusim.ones(2))
    assert repr(p) == repr(torch.nn.Parameter(torch.ones(2)))


def test_a_whole_module_checkpoint_names_only_classes_a_user_can_allow(tmp_path):
    import pickletools
    import zipfile
    from npusim import nn
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    handle = model.register_forward_hook(lambda *args: None)
    handle.remove()
    npusim.save(model, tmp_path / "whole.pt")
    with zipfile.ZipFile(tmp_path / "whole.pt") as z:
        pickled = z.read(next(n for n in z.namelist() if n.endswith("data.pkl")))
    names = {arg for op, arg, _ in pickletools.genops(pickled) if op.name == "GLOBAL"}
    # the module classes, torch's containers and rebuild functions: nothing private to npusim
    assert not any(name.startswith("npusim") and " _" in name for name in names), names
    with npusim.serialization.safe_globals([nn.Sequential, nn.Linear, nn.ReLU]):
        loaded = npusim.load(tmp_path / "whole.pt", weights_only=True)
    x = npusim.ones(1, 2)
    np.testing.assert_array_equal(host(loaded(x)), host(model(x)))
    loaded.register_forward_hook(lambda *args: None).remove()   # the loaded hook dicts still take handles
