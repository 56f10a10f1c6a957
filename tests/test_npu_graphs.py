"""npu graphs: ``npusim.npu.CUDAGraph``, ``graph``, ``graph_pool_handle``, ``make_graphed_callables`` and
``npusim.accelerator.Graph``, as torch.cuda's: work captured on a side stream replays on the same memory,
capture leaves earlier memory and the generator alone, synchronizing operations are refused."""
from __future__ import annotations

import copy
import inspect

import pytest

import npusim
from npusim import nn

npu = npusim.npu
pytestmark = pytest.mark.skipif(not npu.is_available(), reason="needs the npu")
AcceleratorError = npusim.AcceleratorError


def _eager_step(model, opt, loss_fn, x, t):
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), t)
    loss.backward()
    opt.step()
    return loss


def test_whole_network_capture_matches_eager_training():
    """torch's whole-network example: warm up on a side stream, capture forward, backward and the optimizer
    step, then refill the static inputs and replay; the weights follow an eager copy exactly."""
    npusim.manual_seed(0)
    N, D_in, H, D_out = 16, 8, 32, 4
    model = nn.Sequential(nn.Linear(D_in, H), nn.ReLU(), nn.Linear(H, D_out)).npu()
    ref = copy.deepcopy(model)
    loss_fn = nn.MSELoss()
    opt = npusim.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_opt = npusim.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    static_input = npusim.randn(N, D_in, device="npu")
    static_target = npusim.randn(N, D_out, device="npu")

    s = npu.Stream()
    s.wait_stream(npu.current_stream())
    with npu.stream(s):
        for _ in range(3):
            _eager_step(model, opt, loss_fn, static_input, static_target)
            _eager_step(ref, ref_opt, loss_fn, static_input, static_target)
    npu.current_stream().wait_stream(s)

    g = npu.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with npu.graph(g):
        static_y_pred = model(static_input)
        static_loss = loss_fn(static_y_pred, static_target)
        static_loss.backward()
        opt.step()
    # capturing ran no step: the weights are the warmed-up ones
    for a, b in zip(model.parameters(), ref.parameters()):
        assert npusim.equal(a, b)

    for _ in range(4):
        data, target = npusim.randn(N, D_in, device="npu"), npusim.randn(N, D_out, device="npu")
        static_input.copy_(data)
        static_target.copy_(target)
        g.replay()
        ref_pred = ref(data).detach()      # before the step, as the graph's prediction
        loss = _eager_step(ref, ref_opt, loss_fn, data, target)
        assert static_loss.item() == pytest.approx(loss.item(), rel=1e-6)
        for a, b in zip(model.parameters(), ref.parameters()):
            assert npusim.allclose(a, b, atol=1e-6)
        assert npusim.allclose(static_y_pred, ref_pred, atol=1e-6)


def test_replay_reads_refilled_inputs_and_writes_the_same_outputs():
    x = npusim.zeros(4, device="npu")
    w = npusim.full((4,), 2.0, device="npu")
    g = npu.CUDAGraph()
    with npu.graph(g):
        y = x * w + 1
        x.add_(1)
    assert x.tolist() == [0.0] * 4          # capture issued no work on earlier memory
    x.fill_(10.0)
    out_ptr = y.data_ptr()
    g.replay()
    assert y.tolist() == [21.0] * 4 and x.tolist() == [11.0] * 4
    g.replay()
    assert y.tolist() == [23.0] * 4 and x.tolist() == [12.0] * 4
    assert y.data_ptr() == out_ptr


def test_views_made_during_capture_see_replays():
    x = npusim.arange(6.0, device="npu")
    g = npu.CUDAGraph()
    with npu.graph(g):
        y = (x * 2).reshape(2, 3)
        col = y.t()[0]
    x.copy_(npusim.ones(6, device="npu"))
    g.replay()
    assert col.tolist() == [2.0, 2.0]


def test_random_ops_draw_fresh_values_per_replay_as_eager_would():
    gen_state = npu.get_rng_state()
    g = npu.CUDAGraph()
    with npu.graph(g):
        r = npusim.rand(5, device="npu")
        d = npusim.nn.functional.dropout(npusim.ones(8, device="npu"), 0.5)
    assert npusim.equal(npu.get_rng_state(), gen_state)    # capturing drew nothing
    g.replay()
    first, first_mask = r.cpu(), d.cpu()
    g.replay()
    assert not npusim.equal(first, r.cpu())
    # the first replay drew what eager code drawing from the same state draws
    npu.set_rng_state(gen_state)
    assert npusim.equal(first, npusim.rand(5, device="npu").cpu())
    assert npusim.equal(first_mask, npusim.nn.functional.dropout(npusim.ones(8, device="npu"), 0.5).cpu())


@pytest.mark.parametrize("sync", [lambda x: x.sum().item(), lambda x: x.cpu(), lambda x: npu.synchronize(),
                                  lambda x: x.nonzero(), lambda x: print(x)],
                         ids=["item", "cpu", "synchronize", "nonzero", "print"])
def test_synchronizing_operations_are_refused_and_invalidate_the_capture(sync):
    x = npusim.ones(3, device="npu")
    g = npu.CUDAGraph()
    with pytest.raises(AcceleratorError, match="operation failed due to a previous error during capture") as info:
        with npu.graph(g):
            y = x * 2
            sync(y)
    assert isinstance(info.value.__context__, AcceleratorError)
    assert "operation not permitted when stream is capturing" in str(info.value.__context__)
    assert not npu.is_current_stream_capturing()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()
    assert (x * 2).sum().item() == 6.0      # the device works on after the failed capture


def test_capture_rules():
    g = npu.CUDAGraph()
    with pytest.raises(RuntimeError, match="graphs must be captured on a non-default stream"):
        g.capture_begin()
    before = npu.current_stream()
    with pytest.raises(RuntimeError, match="graphs must be captured on a non-default stream"):
        with npu.graph(g, stream=npu.default_stream()):
            pass
    assert npu.current_stream() == before
    with pytest.raises(RuntimeError, match="Called CUDAGraph::replay without a preceding successful capture."):
        g.replay()
    with pytest.raises(RuntimeError, match=r"Called CUDAGraph::pool\(\) without a preceding successful capture."):
        g.pool()
    x = npusim.ones(2, device="npu")
    assert not npu.is_current_stream_capturing()
    with npu.graph(g):
        assert npu.is_current_stream_capturing()
        x + 1
    assert not npu.is_current_stream_capturing()
    with pytest.raises(RuntimeError, match="already owns a captured graph"):
        with npu.graph(g):
            pass
    g.reset()
    with npu.graph(g):
        y = x + 2
    g.replay()
    assert y.tolist() == [3.0, 3.0]


def test_cpu_work_during_capture_runs_once(device):
    a = npusim.ones(2, device=device)
    g = npu.CUDAGraph()
    with npu.graph(g):
        b = a + 1
    a.fill_(5.0)
    g.replay()
    # npu work replays; cpu work ran when issued and is not part of the graph, as in torch
    assert b.tolist() == ([6.0, 6.0] if device == "npu" else [2.0, 2.0])


def test_pools_are_shared_by_handle(tmp_path):
    handle = npu.graph_pool_handle()
    assert isinstance(handle, tuple) and len(handle) == 2 and handle != npu.graph_pool_handle()
    x = npusim.ones(2, device="npu")
    g1, g2 = npu.CUDAGraph(), npu.CUDAGraph()
    with npu.graph(g1, pool=handle):
        y = x * 3
    with npu.graph(g2, pool=g1.pool()):
        z = y + 1
    assert g1.pool() == g2.pool() == handle
    x.fill_(2.0)
    g1.replay()
    g2.replay()
    assert z.tolist() == [7.0, 7.0]
    g1.enable_debug_mode()
    g1.debug_dump(str(tmp_path / "g.dot"))
    assert "mul.Tensor" in (tmp_path / "g.dot").read_text()
    with pytest.warns(UserWarning, match="debug not enabled"):
        g2.debug_dump(str(tmp_path / "h.dot"))


def test_make_graphed_callables_forward_and_backward_match_eager():
    npusim.manual_seed(0)
    m1, m2 = nn.Sequential(nn.Linear(8, 16), nn.Tanh()).npu(), nn.Linear(16, 4).npu()
    r1, r2 = copy.deepcopy(m1), copy.deepcopy(m2)
    x = npusim.randn(5, 8, device="npu", requires_grad=True)
    h = npusim.randn(5, 16, device="npu", requires_grad=True)
    g1, g2 = npu.make_graphed_callables((m1, m2), ((x,), (h,)))
    assert g1 is m1 and g2 is m2
    params = list(m1.parameters()) + list(m2.parameters())
    ref_params = list(r1.parameters()) + list(r2.parameters())
    opt, ref_opt = npusim.optim.SGD(params, lr=0.1), npusim.optim.SGD(ref_params, lr=0.1)
    for _ in range(3):
        d = npusim.randn(5, 8, device="npu", requires_grad=True)
        loss = (g2(g1(d)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        d_ref = d.detach().clone().requires_grad_(True)
        ref_loss = (r2(r1(d_ref)) ** 2).mean()
        ref_opt.zero_grad()
        ref_loss.backward()
        ref_opt.step()
        assert loss.item() == pytest.approx(ref_loss.item(), rel=1e-6)
        assert npusim.allclose(d.grad, d_ref.grad, atol=1e-6)
    for a, b in zip(params, ref_params):
        assert npusim.allclose(a, b, atol=1e-6)
    m1.eval()       # another training state runs the original forward
    assert npusim.allclose(m1(x), r1(x), atol=1e-6)


def test_make_graphed_function():
    w = npusim.randn(3, 3, device="npu", requires_grad=True)

    def f(a):
        return (a @ w).sin()

    a = npusim.randn(2, 3, device="npu", requires_grad=True)
    gf = npu.make_graphed_callables(f, (a,))
    b = npusim.randn(2, 3, device="npu", requires_grad=True)
    out = gf(b)
    assert npusim.allclose(out, f(b), atol=1e-6)
    out.sum().backward()
    b2 = b.detach().clone().requires_grad_(True)
    f(b2).sum().backward()
    assert npusim.allclose(b.grad, b2.grad, atol=1e-6)
    with pytest.raises(AssertionError, match="sample_args for each callable must contain only Tensors"):
        npu.make_graphed_callables(f, (1.0,))


def test_accelerator_graph():
    x = npusim.zeros(3, device="npu")
    g = npusim.accelerator.Graph()
    assert g.capture_error_mode == "default" and g.graph_pool is None
    with npu.stream(npu.Stream()), g:
        x += 1
    assert x.tolist() == [0.0] * 3
    g.replay()
    g.replay()
    assert x.tolist() == [2.0] * 3
    shared = npusim.accelerator.Graph(pool=g.pool())
    with npu.stream(npu.Stream()), shared:
        x.mul_(3)
    shared.replay()
    assert x.tolist() == [6.0] * 3 and shared.pool() == g.pool()


@pytest.mark.oracle
def test_signatures_match_torch(torch):
    def params(fn):
        return [(p.name, p.default, p.kind) for p in inspect.signature(fn).parameters.values()]
    for name in ("make_graphed_callables", "graph_pool_handle", "is_current_stream_capturing"):
        assert params(getattr(npu, name)) == params(getattr(torch.cuda, name)), name
    assert params(npu.graph.__init__) == params(torch.cuda.graph.__init__)
    for method in ("capture_begin", "capture_end", "replay", "reset", "pool", "instantiate", "enable_debug_mode",
                   "debug_dump"):
        assert params(getattr(npu.CUDAGraph, method)) == params(getattr(torch.cuda.CUDAGraph, method)), method
    for method in ("__init__", "capture_begin", "capture_end", "replay", "reset", "pool", "debug_dump"):
        assert params(getattr(npusim.accelerator.Graph, method)) == params(getattr(torch.accelerator.Graph, method))
    assert params(npu.CUDAGraph.__init__)[1:] == params(torch.cuda.CUDAGraph.__new__)[1:]


def test_optimizers_with_host_state_refuse_capture():
    """As torch's health check: Adam keeps its step count on the host (capturable=False), so capturing its
    step raises; SGD's step is all device work and captures."""
    m = nn.Linear(4, 2).npu()
    x = npusim.randn(3, 4, device="npu")
    opt = npusim.optim.Adam(m.parameters(), lr=0.1)
    m(x).sum().backward()
    opt.step()
    with pytest.raises(RuntimeError, match="Attempting NPU graph capture of step\\(\\) for an instance of Adam but "
                                           "param_groups' capturable is False."):
        with npu.graph(npu.CUDAGraph()):
            opt.step()
    assert opt.state[m.weight]["step"].item() == 1.0
    opt.step()      # outside a capture it steps as before
    assert opt.state[m.weight]["step"].item() == 2.0


def _setitem(x):
    y = x.clone()
    y[0] = 5.0
    y[:, 1] = x[:, 2]
    y[y > 4] = 0.0
    return y


_TARGET = [0, 2, 1]


@pytest.mark.parametrize("fn", [
    _setitem, lambda x: x.half().float(), lambda x: x.argmax(1).float(),
    lambda x: npusim.nn.functional.softmax(x, -1),
    lambda x: npusim.nn.functional.cross_entropy(x, npusim.tensor(_TARGET, device="npu")),
    lambda x: npusim.where(x > 0, x, -x), lambda x: x @ x.t(), lambda x: x.cumsum(1),
    lambda x: npusim.cat([x, x * 2]), lambda x: npusim.nn.functional.pad(x, (1, 1)),
    lambda x: x.masked_fill(x > 0, 1.0).tril(), lambda x: npusim.einsum("ij,kj->ik", x, x),
    lambda x: x.gather(1, npusim.tensor(_TARGET, device="npu")[:, None]), lambda x: x.to("npu", copy=True),
], ids=["setitem", "casts", "argmax", "softmax", "cross_entropy", "where", "matmul", "cumsum", "cat", "pad",
        "masked_fill", "einsum", "gather", "copy"])
def test_replay_equals_eager_for_common_ops(fn):
    x = npusim.randn(3, 4, device="npu")
    g = npu.CUDAGraph()
    with npu.graph(g):
        y = fn(x)
    x.copy_(npusim.randn(3, 4, device="npu"))
    g.replay()
    assert npusim.allclose(y, fn(x), atol=1e-6)


def test_registered_generators_are_left_as_they_were():
    gen = npusim.Generator(device="npu")
    gen.manual_seed(7)
    state = gen.get_state()
    g = npu.CUDAGraph()
    g.register_generator_state(gen)
    with npu.graph(g):
        assert npu.CUDAGraph.get_currently_capturing_graph() is g
        r = npusim.rand(4, device="npu", generator=gen)
    assert npusim.equal(gen.get_state(), state)
    g.replay()
    first = r.cpu()
    g.replay()
    assert not npusim.equal(first, r.cpu())
    with pytest.raises(RuntimeError):
        npu.CUDAGraph.get_currently_capturing_graph()
