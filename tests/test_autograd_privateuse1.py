"""AutogradPrivateUse1 overrides: the npu's own forward and backward for selu and gelu.

The npu backend registers kernels for the AutogradPrivateUse1 key (as the
PrivateUse1 tutorial does): selu as a custom autograd.Function, gelu with a
fused array backward. npu tensors that need a gradient take them; cpu tensors
keep the generic derivative formulas. Both must give the same gradients.
"""
from __future__ import annotations

import numpy as np
import pytest

import npusim
import npusim.nn.functional as F
from conftest import host
from npusim.autograd import gradcheck, gradgradcheck
from npusim.backend import autograd_overrides

pytestmark = [
    pytest.mark.skipif(not (hasattr(npusim, "npu") and npusim.npu.is_available()), reason="no npu device"),
    pytest.mark.filterwarnings(r"ignore::RuntimeWarning:npusim\.(kernels|native)"),
]

RNG = np.random.default_rng(11)
X = RNG.uniform(-3, 3, (4, 5))
aten = npusim.ops.aten

OPS = {
    "selu": (F.selu, "SeluFunctionBackward", "EluBackward0"),
    "gelu": (F.gelu, "GeluFunctionBackward", "GeluBackward0"),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), "GeluFunctionBackward", "GeluBackward0"),
}


def leaf(values, device, dtype=npusim.float64):
    return npusim.tensor(values, dtype=dtype, device=device).requires_grad_()


def test_the_overrides_are_registered_for_the_npu_autograd_key_only():
    for op in (aten.selu.default, aten.gelu.default):
        assert op.has_kernel_for_dispatch_key("AutogradPrivateUse1")
        assert not op.has_kernel_for_dispatch_key("AutogradCPU")


@pytest.mark.parametrize("name", sorted(OPS))
def test_npu_tensors_take_the_override_and_cpu_tensors_the_generic_formula(name):
    fn, npu_node, cpu_node = OPS[name]
    assert type(fn(leaf(X, "npu")).grad_fn).__name__ == npu_node
    assert type(fn(leaf(X, "cpu")).grad_fn).__name__ == cpu_node


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(OPS))
def test_override_values_and_gradients_match_the_cpu(name, dtype):
    fn = OPS[name][0]
    dt = getattr(npusim, dtype)
    g = RNG.standard_normal(X.shape)
    results = {}
    for device in ("cpu", "npu"):
        x = leaf(X, device, dt)
        y = fn(x)
        y.backward(npusim.tensor(g, dtype=dt, device=device))
        assert y.device.type == device and y.dtype is dt and x.grad.dtype is dt
        results[device] = (host(y), host(x.grad))
    rtol = 1e-12 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(results["npu"][0], results["cpu"][0], rtol=rtol, atol=1e-7)
    np.testing.assert_allclose(results["npu"][1], results["cpu"][1], rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("name", sorted(OPS))
def test_override_gradients_pass_gradcheck_and_gradgradcheck(name):
    fn = OPS[name][0]
    x = np.array([[-2.5, -0.7, 0.4], [1.1, 2.2, -1.6]])
    assert gradcheck(fn, (leaf(x, "npu"),))
    assert gradgradcheck(fn, (leaf(x, "npu"),))   # create_graph builds the derivative from dispatched ops


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_backward_runs_as_one_fused_kernel(monkeypatch, approximate):
    calls = []
    fused = autograd_overrides.K.gelu_backward

    def counted(*args):
        calls.append(args[2])
        return fused(*args)

    monkeypatch.setattr(autograd_overrides.K, "gelu_backward", counted)
    x = leaf(X, "npu")
    F.gelu(x, approximate=approximate).sum().backward()
    assert calls == [approximate]
    F.gelu(leaf(X, "cpu"), approximate=approximate).sum().backward()
    assert calls == [approximate]   # the cpu keeps the generic formula


def test_the_override_is_not_involved_without_a_gradient():
    x = npusim.tensor(X, device="npu")
    assert F.selu(x).grad_fn is None and F.gelu(x).grad_fn is None
    with npusim.no_grad():
        y = F.selu(leaf(X, "npu"))
    assert y.grad_fn is None and not y.requires_grad


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_override_keeps_16_bit_dtypes(dtype):
    dt = getattr(npusim, dtype)
    x = npusim.tensor(X, device="npu").to(dt).requires_grad_()
    y = F.gelu(x)
    y.sum().backward()
    assert y.dtype is dt and x.grad.dtype is dt
    ref = leaf(host(x.detach()).astype(np.float64), "cpu")
    F.gelu(ref).sum().backward()
    np.testing.assert_allclose(host(x.grad).astype(np.float64), host(ref.grad), rtol=2e-2, atol=2e-2)


def test_override_errors_match_the_generic_path():
    for device in ("cpu", "npu"):
        with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh."):
            F.gelu(leaf(X, device), approximate="exact")


def test_inplace_selu_on_npu_keeps_the_generic_formula():
    x = leaf(X, "npu")
    y = F.selu(x * 1.0, inplace=True)
    assert type(y.grad_fn).__name__.startswith("EluBackward")
    y.sum().backward()
    expected = np.where(X > 0, 1.0507009873554804934, 1.0507009873554804934 * 1.6732632423543772848 * np.exp(X))
    np.testing.assert_allclose(host(x.grad), expected, rtol=1e-12)


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(OPS))
def test_override_gradients_match_torch(torch, name):
    fn = OPS[name][0]
    t_fn = {"selu": torch.nn.functional.selu, "gelu": torch.nn.functional.gelu,
            "gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh")}[name]
    x32 = X.astype(np.float32)
    a = leaf(x32, "npu", npusim.float32)
    b = torch.tensor(x32, requires_grad=True)
    fn(a).sum().backward()
    t_fn(b).sum().backward()
    np.testing.assert_allclose(host(a.grad), b.grad.numpy(), rtol=1e-5, atol=1e-6)
    # second derivatives too, through create_graph
    a2, b2 = leaf(X, "npu"), torch.tensor(X, requires_grad=True)
    (ga,) = npusim.autograd.grad(fn(a2).sum(), a2, create_graph=True)
    (gb,) = torch.autograd.grad(t_fn(b2).sum(), b2, create_graph=True)
    ga.sum().backward()
    gb.sum().backward()
    np.testing.assert_allclose(host(a2.grad), b2.grad.numpy(), rtol=1e-10, atol=1e-12)
