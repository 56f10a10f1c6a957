"""autograd.graph: saved_tensors_hooks, save_on_cpu, disable_saved_tensors_hooks, gradient edges, versions."""
import numpy as np
import pytest

import npusim
from npusim.autograd.graph import (
    GradientEdge, disable_saved_tensors_hooks, get_gradient_edge, increment_version, save_on_cpu,
    saved_tensors_hooks,
)
from conftest import host


def _assert_grad_of_x_exp_x(grad, x):
    """d/dx sum(x * exp(x)) = exp(x) * x + exp(x), summed in float32 from two backward paths: each term is
    within an ulp or two, so the error is a few ulp of exp(x) * (1 + |x|) (not of the sum, which may cancel)."""
    x = host(x.detach()).astype(np.float64)
    e = np.exp(x)
    err = np.abs(host(grad).astype(np.float64) - e * (1 + x))
    assert np.all(err <= 4 * np.finfo(np.float32).eps * e * (1 + np.abs(x))), err.max()


def _leaf(device, n=6, seed=0):
    return npusim.tensor(np.random.default_rng(seed).standard_normal(n).astype(np.float32), device=device,
                         requires_grad=True)


def test_pack_sees_each_saved_tensor_under_no_grad_and_unpack_gives_it_back(device):
    a = _leaf(device)
    packed, unpacked = [], []

    def pack(t):
        packed.append((t.is_leaf, npusim.is_grad_enabled()))
        return ("box", t)

    def unpack(box):
        unpacked.append(box[0])
        return box[1]

    with saved_tensors_hooks(pack, unpack):
        z = (a * a.exp()).sum()      # exp saves its result; mul saves both operands
    assert len(packed) == 3 and sorted(leaf for leaf, _ in packed) == [False, False, True]
    assert not any(grad_on for _, grad_on in packed)
    assert unpacked == []
    z.backward()
    assert unpacked == ["box"] * 3
    _assert_grad_of_x_exp_x(a.grad, a)


def test_the_innermost_pair_wins_and_no_grad_saves_nothing(device):
    a = _leaf(device)
    seen = []
    with saved_tensors_hooks(lambda t: seen.append("outer") or t, lambda t: t):
        with saved_tensors_hooks(lambda t: seen.append("inner") or t, lambda t: t):
            a.exp()
        with npusim.no_grad():
            a.exp()
    assert seen == ["inner"]


def test_custom_functions_save_through_the_hooks(device):
    class Square(npusim.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x

    a = _leaf(device)
    seen = []
    with saved_tensors_hooks(lambda t: seen.append("pack") or t.clone(), lambda t: seen.append("unpack") or t):
        y = Square.apply(a)
    y.sum().backward()
    assert seen == ["pack", "unpack"]
    np.testing.assert_array_equal(host(a.grad), 2 * host(a.detach()))


def test_hooks_own_the_data_so_no_version_check(device):
    # the pack hook copies, so a later in-place change of the saved tensor does not reach backward
    b = _leaf(device)
    with saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        c = b * 1
        d = c.sin()
    c.mul_(2)
    d.sum().backward()
    np.testing.assert_allclose(host(b.grad), np.cos(host(b.detach())), rtol=1e-6)


def test_hook_errors_are_torchs(device):
    a = _leaf(device)
    with saved_tensors_hooks(lambda t: 1, lambda t: "not a tensor"):
        y = a.exp()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor but got result of type str"):
        y.sum().backward()
    x = a * 1
    with saved_tensors_hooks(lambda t: t.mul_(2), lambda t: t):
        with pytest.raises(RuntimeError, match="pack hook is modifying its input in place"):
            x.exp()
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        z = a.exp().sum()
    z.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        z.backward()


def test_disable_saved_tensors_hooks_refuses_new_hooks_with_its_message():
    with disable_saved_tensors_hooks("no hooks in this region"):
        with pytest.raises(RuntimeError, match="no hooks in this region"):
            with saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    with saved_tensors_hooks(lambda t: t, lambda t: t):   # allowed again outside
        pass


def test_save_on_cpu_keeps_saved_tensors_off_the_device():
    w = npusim.randn(256, 256, device="npu", requires_grad=True)
    devices = []
    plain_graph = (w.exp() * w).sum()
    held_plain = npusim.npu.memory_allocated()
    del plain_graph
    with save_on_cpu():
        with saved_tensors_hooks(lambda t: devices.append(t.device.type) or t, lambda t: t):
            pass
        loss = (w.exp() * w).sum()
    held_on_cpu = npusim.npu.memory_allocated()
    # exp's result (256 KiB) is kept by the graph on the npu without save_on_cpu, on the cpu with it
    assert held_plain - held_on_cpu >= 256 * 256 * 4
    loss.backward()
    assert w.grad.device.type == "npu"
    _assert_grad_of_x_exp_x(w.grad, w)


def test_save_on_cpu_with_pinned_memory(device):
    a = _leaf(device)
    with save_on_cpu(pin_memory=True):
        z = (a * a.exp()).sum()
    z.backward()
    _assert_grad_of_x_exp_x(a.grad, a)


def test_hooks_follow_a_forked_task():
    a = _leaf("cpu")
    seen = []

    def work(x):
        return x.exp().sum()

    with saved_tensors_hooks(lambda t: seen.append("pack") or t, lambda t: t):
        fut = npusim.jit.fork(work, a)
        z = npusim.jit.wait(fut)
    assert seen == ["pack"]
    z.backward()


def test_gradient_edges_and_versions(device):
    a = _leaf(device)
    y = a.exp()
    edge = get_gradient_edge(y)
    assert isinstance(edge, GradientEdge) and edge.node is y.grad_fn and edge.output_nr == 0
    assert get_gradient_edge(a).node is y.grad_fn.next_functions[0][0]      # the leaf's accumulator
    with pytest.raises(RuntimeError, match="does not require gradients"):
        get_gradient_edge(npusim.ones(2, device=device))
    v = a._version
    increment_version(a)
    increment_version([a, y])
    assert a._version == v + 2 and y._version == 1


@pytest.mark.oracle
def test_gradients_through_hooks_match_torch(torch, device):
    x = np.random.default_rng(3).standard_normal((4, 5)).astype(np.float32)
    w = np.random.default_rng(4).standard_normal((5, 3)).astype(np.float32)
    ours = [npusim.tensor(v, device=device, requires_grad=True) for v in (x, w)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (x, w)]
    with save_on_cpu():
        (npusim.tanh(ours[0] @ ours[1]) ** 2).sum().backward()
    with torch.autograd.graph.save_on_cpu():
        (torch.tanh(theirs[0] @ theirs[1]) ** 2).sum().backward()
    for o, t in zip(ours, theirs):
        # float32 matmul of length 5 then tanh: a few ulp of the largest term
        np.testing.assert_allclose(host(o.grad), t.grad.numpy(), rtol=1e-5, atol=1e-6)
