"""Lazy modules: shapes inferred on the first forward, the class swap, state dicts, uninitialized-tensor errors.

Oracle tests build the same lazy module in PyTorch, load one set of weights into both
and compare outputs, state-dict shapes and reprs; the rest checks the mechanics by hand.
"""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import npusim
import npusim.nn as nn
import npusim.nn.functional as F
from conftest import host
from npusim.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy


def rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# (lazy class name, eager class name, constructor args, input shape)
CASES = [
    ("LazyLinear", "Linear", (3,), (2, 5)),
    ("LazyConv1d", "Conv1d", (4, 3), (2, 3, 8)),
    ("LazyConv2d", "Conv2d", (4, 3), (2, 2, 6, 6)),
    ("LazyConv3d", "Conv3d", (2, 2), (1, 3, 4, 4, 4)),
    ("LazyConvTranspose1d", "ConvTranspose1d", (2, 3), (2, 3, 5)),
    ("LazyConvTranspose2d", "ConvTranspose2d", (2, 3), (3, 4, 4)),   # unbatched: channels from dim 0
    ("LazyConvTranspose3d", "ConvTranspose3d", (2, 2), (1, 2, 3, 3, 3)),
    ("LazyBatchNorm1d", "BatchNorm1d", (), (4, 3)),
    ("LazyBatchNorm2d", "BatchNorm2d", (), (2, 3, 4, 4)),
    ("LazyBatchNorm3d", "BatchNorm3d", (), (2, 3, 2, 2, 2)),
    ("LazyInstanceNorm1d", "InstanceNorm1d", (), (2, 3, 5)),
    ("LazyInstanceNorm2d", "InstanceNorm2d", (), (2, 3, 4, 4)),
    ("LazyInstanceNorm3d", "InstanceNorm3d", (), (2, 3, 2, 2, 2)),
]


@pytest.mark.oracle
@pytest.mark.parametrize("lazy_name, eager_name, args, shape", CASES, ids=[c[0] for c in CASES])
def test_lazy_matches_torch(torch, device, lazy_name, eager_name, args, shape):
    m, tm = getattr(nn, lazy_name)(*args, device=device), getattr(torch.nn, lazy_name)(*args)
    assert repr(m) == repr(tm)
    assert list(m.state_dict()) == list(tm.state_dict())
    x = rand(shape)
    with torch.no_grad():
        tm(torch.tensor(x))   # materialise torch's, then give ours the same weights
    sd = {k: npusim.tensor(v.numpy(), device=device) for k, v in tm.state_dict().items()}
    m(npusim.tensor(x, device=device))
    assert type(m) is getattr(nn, eager_name)
    assert not hasattr(m, "_initialize_hook") and repr(m) == repr(tm)
    assert {k: tuple(v.shape) for k, v in m.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in tm.state_dict().items()}
    m.load_state_dict(sd)
    tm.load_state_dict(tm.state_dict())
    x2 = rand(shape, seed=1)
    np.testing.assert_allclose(host(m(npusim.tensor(x2, device=device))), tm(torch.tensor(x2)).detach().numpy(),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.oracle
def test_uninitialized_errors_as_torch(torch, device):
    m, tm = nn.LazyLinear(3, device=device), torch.nn.LazyLinear(3)
    with pytest.raises(ValueError, match="^Attempted to use an uninitialized parameter in ") as e:
        m.weight + 1
    with pytest.raises(ValueError) as te:
        tm.weight + 1
    # all but the operator's name and the package name agree
    assert e.value.args[0].split(". ", 1)[1].replace("npusim", "torch") == te.value.args[0].split(". ", 1)[1]
    with pytest.raises(ValueError, match="uninitialized parameter"):
        F.linear(npusim.ones(2, 4, device=device), m.weight)
    messages = []
    for mod in (m, tm):
        with pytest.raises(RuntimeError) as e:
            mod.weight.shape
        with pytest.raises(RuntimeError) as e2:
            mod.weight.share_memory_()
        messages.append((str(e.value), str(e2.value)))
    assert messages[0] == messages[1]
    # a lazy state dict into an eager module fails on the uninitialized tensor's shape, in both
    with pytest.raises(RuntimeError, match="^Can't access the shape of an uninitialized parameter"):
        nn.Linear(4, 3, device=device).load_state_dict(m.state_dict())
    # wrong input rank for a lazy conv, and channels not divisible by groups
    with pytest.raises(RuntimeError) as e:
        nn.LazyConv2d(4, 3)(npusim.ones(3, 5, device=device))
    with pytest.raises(RuntimeError) as te:
        torch.nn.LazyConv2d(4, 3)(torch.ones(3, 5))
    assert str(e.value).replace("npusim", "torch") == str(te.value)
    with pytest.raises(ValueError, match="^in_channels must be divisible by groups$"):
        nn.LazyConv2d(4, 3, groups=2)(npusim.ones(1, 3, 5, 5, device=device))
    with pytest.raises(TypeError, match=r"initialize_parameters\(\) takes 2 positional arguments but 3 were given"):
        nn.LazyLinear(3)(npusim.ones(2, 4), npusim.ones(1))


@pytest.mark.oracle
def test_uninitialized_tensor_reprs_and_flags(torch):
    for ours, theirs in ((UninitializedParameter(), torch.nn.UninitializedParameter()),
                         (UninitializedBuffer(), torch.nn.UninitializedBuffer())):
        assert repr(ours) == repr(theirs)
        assert ours.requires_grad == theirs.requires_grad
        assert tuple(ours.size()) == tuple(theirs.size()) == (0,)
        assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    assert nn.UninitializedParameter is UninitializedParameter and nn.UninitializedBuffer is UninitializedBuffer
    assert UninitializedBuffer(persistent=False).persistent is False


def test_materialize_turns_into_parameter_and_tensor(device):
    p = UninitializedParameter(device=device, dtype=npusim.float64)
    assert isinstance(p, nn.Parameter) and is_lazy(p)
    p.materialize((2, 3))
    assert type(p) is nn.Parameter and p.shape == (2, 3) and p.dtype is npusim.float64 and p.requires_grad
    assert p.device.type == device and not is_lazy(p)
    b = UninitializedBuffer()
    b.materialize((4,), dtype=npusim.float16)
    assert type(b) is npusim.Tensor and b.shape == (4,) and b.dtype is npusim.float16 and not b.requires_grad


def test_state_dict_round_trip_before_and_after(device):
    m = nn.LazyLinear(3, device=device)
    sd = m.state_dict()
    assert all(is_lazy(v) for v in sd.values())   # saved as they are: they cannot be detached
    other = nn.LazyLinear(3, device=device)
    other.load_state_dict(sd)                     # lazy into lazy: nothing to copy, stays lazy
    assert other.has_uninitialized_params() and type(other) is nn.LazyLinear
    # initialized weights into a lazy module materialise it to their shapes (the class swap waits for forward)
    eager = nn.Linear(5, 3, device=device)
    m.load_state_dict(eager.state_dict())
    assert type(m) is nn.LazyLinear and not m.has_uninitialized_params() and type(m.weight) is nn.Parameter
    assert m.weight.shape == (3, 5)
    x = npusim.tensor(rand((2, 5)), device=device)
    np.testing.assert_array_equal(host(m(x)), host(eager(x)))
    assert type(m) is nn.Linear and m.in_features == 5
    # and after materialisation the state dict is an ordinary one
    again = nn.Linear(5, 3, device=device)
    again.load_state_dict(m.state_dict())
    np.testing.assert_array_equal(host(again.weight), host(eager.weight))


def test_forward_materialises_once_and_trains(device):
    m = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(2)).to(device)
    assert m[0].has_uninitialized_params()
    y = m(npusim.tensor(rand((3, 6)), device=device))
    assert y.shape == (3, 2)
    assert [type(c).__name__ for c in m] == ["Linear", "ReLU", "Linear"]
    assert m[0].weight.shape == (4, 6) and m[2].weight.shape == (2, 4)
    assert len(m[0]._forward_pre_hooks) == 0   # the materialising hook removed itself
    opt = npusim.optim.SGD(m.parameters(), lr=0.1)
    before = host(m[2].bias).copy()
    y.sum().backward()
    opt.step()
    np.testing.assert_allclose(host(m[2].bias), before - 0.1 * 3, rtol=1e-6)


def test_dtype_and_device_changes_before_materialisation(device):
    m = nn.LazyLinear(3).double().to(device)
    assert is_lazy(m.weight) and m.weight.dtype is npusim.float64 and m.weight.device.type == device
    m(npusim.ones(2, 4, dtype=npusim.float64, device=device))
    assert m.weight.dtype is npusim.float64 and m.weight.device.type == device
    c = copy.deepcopy(nn.LazyBatchNorm1d().double())
    assert is_lazy(c.running_mean) and c.running_mean.dtype is npusim.float64
    assert repr(pickle.loads(pickle.dumps(UninitializedParameter()))) == "<UninitializedParameter>"


def test_lazy_norm_without_affine_or_stats_stays_empty():
    # nothing is lazy, so nothing is inferred (num_features stays 0), as in torch
    m = nn.LazyBatchNorm1d(affine=False, track_running_stats=False)
    y = m(npusim.tensor(rand((4, 3))))
    assert type(m) is nn.BatchNorm1d and m.num_features == 0 and y.shape == (4, 3)
    assert list(m.state_dict()) == []


def test_mixin_without_initialize_parameters():
    class Half(nn.modules.lazy.LazyModuleMixin, nn.Module):
        def __init__(self):
            super().__init__()
            self.w = UninitializedParameter()

    with pytest.raises(NotImplementedError, match="^initialize_parameters is not implemented for Half$"):
        Half()(npusim.ones(1))

    class Forgetful(Half):
        def initialize_parameters(self, x):
            pass

    with pytest.raises(RuntimeError, match="^module Forgetful has not been fully initialized$"):
        Forgetful()(npusim.ones(1))
