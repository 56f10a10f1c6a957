"""The shortcuts the hot paths take give what the general paths give.

Adam's update over raw arrays, gradients computed in their parameter's layout and stored without a
copy, dispatch functions generated on first use, shared parsed schemas, and the direct stride-0
view behind ``expand``.
"""
from __future__ import annotations

import traceback

import numpy as np
import pytest

import npusim
from npusim.core.dispatch.schema import parse_schema
from npusim.optim import adam as adam_module

from conftest import host

SHAPES = [(40, 33), (5,), (), (0, 3), (300, 517)]   # the last is large enough to be split over threads


def _adam_run(cls, kw, dtype, device, threads, by_arrays):
    """Parameters, states and version counters after three steps, through the array update or the tensor ops."""
    saved_fit = adam_module._arrays_fit
    if not by_arrays:
        adam_module._arrays_fit = lambda *args: False
    saved_threads = npusim.get_num_threads()
    npusim.set_num_threads(threads)
    try:
        rng = np.random.default_rng(3)
        params = [npusim.tensor(rng.standard_normal(s).astype(dtype), device=device).requires_grad_()
                  for s in SHAPES]
        opt = cls(params, **kw)
        for _ in range(3):
            for p in params:
                p.grad = npusim.tensor(rng.standard_normal(p.shape).astype(dtype), device=device)
            opt.step()
        out = []
        for p in params:
            st = opt.state[p]
            out.append((host(p), host(st["exp_avg"]), host(st["exp_avg_sq"]),
                        (p._version, st["exp_avg"]._version, st["exp_avg_sq"]._version)))
        return out
    finally:
        adam_module._arrays_fit = saved_fit
        npusim.set_num_threads(saved_threads)


@pytest.mark.parametrize("cls,kw", [
    (npusim.optim.Adam, {}),
    (npusim.optim.Adam, {"lr": 0.1, "betas": (0.3, 0.0), "maximize": True}),   # lerp's other formula
    (npusim.optim.AdamW, {"weight_decay": 0.1, "eps": 1e-3}),
    (npusim.optim.AdamW, {"lr": 0.0, "weight_decay": 0.1}),
], ids=["adam", "adam-low-beta-maximize", "adamw", "adamw-lr0"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [1, 2])
def test_adam_array_update_is_bit_identical_to_the_tensor_ops(device, cls, kw, dtype, threads):
    fast = _adam_run(cls, kw, dtype, device, threads, by_arrays=True)
    slow = _adam_run(cls, kw, dtype, device, threads, by_arrays=False)
    for (p, m, v, versions), (p2, m2, v2, versions2) in zip(fast, slow):
        assert p.tobytes() == p2.tobytes()
        assert m.tobytes() == m2.tobytes() and v.tobytes() == v2.tobytes()
        assert versions == versions2


def _adam_step_both_ways(setup):
    """[result with the array update allowed, result with it refused]: ``setup()`` gives (param, what to read)."""
    results = []
    for by_arrays in (True, False):
        saved_fit = adam_module._arrays_fit
        if not by_arrays:
            adam_module._arrays_fit = lambda *args: False
        try:
            p, read = setup()
            npusim.optim.Adam([p], lr=0.5).step()
            results.append(host(read))
        finally:
            adam_module._arrays_fit = saved_fit
    return results


def test_adam_takes_the_tensor_ops_for_overlapping_arrays():
    """A gradient that shares memory with its parameter is updated as the op-by-op loop would."""
    def setup():
        p = npusim.arange(6.0).requires_grad_()
        p.grad = p.detach()   # the gradient is the parameter itself
        return p, p
    fast, slow = _adam_step_both_ways(setup)
    np.testing.assert_array_equal(fast, slow)


def test_adam_takes_the_tensor_ops_for_views_of_one_buffer():
    """A parameter and a gradient that are overlapping views of one buffer (arrays that own no memory) are
    updated as the op-by-op loop would; disjoint views of one buffer take the array update with the same bits."""
    for grad_start in (2, 6):       # overlapping, then disjoint
        def setup():
            buf = npusim.arange(12.0)
            p = buf[:6].detach().requires_grad_()
            p.grad = buf[grad_start:grad_start + 6].detach()
            return p, buf
        fast, slow = _adam_step_both_ways(setup)
        np.testing.assert_array_equal(fast, slow)


def _linear_grads(device, bias=True):
    rng = np.random.default_rng(0)
    x = npusim.tensor(rng.standard_normal((4, 5)).astype(np.float32), device=device)
    lin = npusim.nn.Linear(5, 3, bias=bias).to(device)
    lin(x).square().sum().backward()
    return lin, x


def test_linear_weight_gradient_is_contiguous_and_owned(device):
    lin, x = _linear_grads(device)
    for p in (lin.weight, lin.bias):
        g = p.grad
        assert g.is_contiguous() and not g._is_view() and g.stride() == p.stride()
    y = x @ lin.weight.detach().t() + lin.bias.detach()
    np.testing.assert_allclose(host(lin.weight.grad), host((2 * y).t() @ x), rtol=1e-5, atol=1e-5)
    # a second backward accumulates into the stored gradient in place
    before = host(lin.weight.grad).copy()
    lin(x).square().sum().backward()
    np.testing.assert_allclose(host(lin.weight.grad), 2 * before, rtol=1e-5, atol=1e-5)


def test_gradient_seen_by_a_hook_is_not_stolen(device):
    """The weight gradient's temporary is copied, not kept, when a hook still holds a view of it."""
    w = npusim.ones(3, 5, device=device).requires_grad_()
    x = npusim.ones(4, 5, device=device)
    wt = w.t()
    kept = []
    wt.register_hook(kept.append)
    (x @ wt).sum().backward()
    seen = host(kept[0]).copy()
    w.grad.add_(100)
    np.testing.assert_array_equal(host(kept[0]), seen)


@pytest.mark.oracle
def test_matmul_with_a_transposed_weight_matches_torch(torch, device):
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((2, 4, 5)).astype(np.float32), rng.standard_normal((3, 5)).astype(np.float32)
    nx, nw = npusim.tensor(x, device=device), npusim.tensor(w, device=device).requires_grad_()
    tx, tw = torch.tensor(x), torch.tensor(w, requires_grad=True)
    (nx @ nw.t()).sum().backward()
    (tx @ tw.t()).sum().backward()
    np.testing.assert_allclose(host(nw.grad), tw.grad.numpy(), rtol=1e-5, atol=1e-5)
    assert nw.grad.is_contiguous()


def test_dispatch_frames_are_named_after_their_operator():
    """An error inside a kernel shows the operator's own frame in the traceback."""
    lib = npusim.library.Library("fastpathtest", "DEF")
    try:
        lib.define("explode(Tensor x) -> Tensor")

        def kernel(x):
            raise ValueError("boom")

        lib.impl("explode", kernel, "CPU")
        with pytest.raises(ValueError, match="boom") as info:
            npusim.ops.fastpathtest.explode.default(npusim.ones(1))
        frames = traceback.extract_tb(info.value.__traceback__)
        assert any(f.name == "explode" and f.filename.startswith("<dispatch fastpathtest::explode") for f in frames)
    finally:
        lib._destroy()


def test_overloads_sharing_a_signature_keep_their_own_names():
    a = npusim.ops.aten.neg.default
    b = npusim.ops.aten.abs.default
    assert a.fn.__name__ == "neg" and b.fn.__name__ == "abs"
    assert a.fn.__code__ is not b.fn.__code__
    np.testing.assert_array_equal(host(a(npusim.tensor([-1.0, 2.0]))), [1.0, -2.0])


def test_schemas_with_the_same_argument_list_parse_alike():
    first = parse_schema("fast_a.x(Tensor self, int[1] dim=[], *, Scalar alpha=1) -> Tensor")
    second = parse_schema("fast_b(Tensor self, int[1] dim=[], *, Scalar alpha=1) -> Tensor")
    assert (first.name, first.overload_name) == ("fast_a", "x")
    assert (second.name, second.overload_name) == ("fast_b", "")
    assert str(second) == "fast_b(Tensor self, int[1] dim=[], *, Scalar alpha=1) -> Tensor"
    assert second.arguments == first.arguments


def test_a_bad_name_before_a_known_argument_list_is_still_refused():
    parse_schema("fast_c(Tensor self) -> Tensor")
    with pytest.raises(RuntimeError, match="expected eof but found 'ident'"):
        parse_schema("fast c(Tensor self) -> Tensor")


@pytest.mark.parametrize("shape,size", [((1, 3), (4, 3)), ((), (2, 2)), ((3, 1), (3, 5)), ((2, 1, 3), (4, 2, 6, 3)),
                                        ((1, 1), (1, 1)), ((1, 3), (2, 0, 3)), ((1, 3), (2, -1, -1))])
@pytest.mark.parametrize("dtype", [npusim.float32, npusim.int64, npusim.bool, npusim.bfloat16])
def test_expand_is_numpys_read_only_broadcast(device, shape, size, dtype):
    x = npusim.ones(shape, dtype=dtype, device=device)
    e = x.expand(*size)
    want = np.broadcast_to(host(x), tuple(e.shape))
    # torch's strides: 0 where a dim is new or broadcast; a size-1 dim kept at size 1 keeps its stride
    # (numpy's broadcast_to gives it 0, so its strides are not the reference there)
    lead = len(size) - len(shape)
    strides = [0] * lead + [0 if n == 1 and e.shape[lead + i] != 1 else s for i, (n, s) in
                            enumerate(zip(shape, x.stride()))]
    assert e.stride() == tuple(strides)
    np.testing.assert_array_equal(host(e), want)
    assert e._base is x


def test_expanded_tensor_refuses_in_place_writes_as_before():
    e = npusim.zeros(1, 3).expand(2, 3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        e.add_(1)
