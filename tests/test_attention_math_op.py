"""scaled_dot_product_attention's common case is torch's math op ``_scaled_dot_product_attention_math`` (one
kernel, one node) with the values, bit for bit, of the composition of ops it replaces; its gradient uses torch's
``_softmax_backward_data``. Both ops are also checked against torch's."""
import math

import numpy as np
import pytest

import npusim
import npusim.native.nn_attention as NA
from npusim.profiler import ProfilerActivity, profile

F = npusim.nn.functional


def _bits(t):
    return np.ascontiguousarray(t.detach().cpu().numpy()).view(np.uint8)


def _qkv(device, shape, kshape=None, dtype=np.float32, seed=0, transposed=False):
    rng = np.random.default_rng(seed)
    out = []
    for s in (shape, kshape or shape, kshape or shape):
        a = rng.standard_normal(s).astype(dtype)
        t = npusim.from_numpy(a).to(device)
        if transposed:   # the heads as multi-head attention lays them out: a strided view
            t = npusim.from_numpy(np.ascontiguousarray(a.swapaxes(-3, -2))).to(device).transpose(-3, -2)
        out.append(t.requires_grad_())
    return out


CASES = {
    "4-d strided": dict(shape=(2, 3, 5, 4), transposed=True),
    "3-d longer keys": dict(shape=(3, 5, 4), kshape=(3, 6, 4)),
    "float64": dict(shape=(2, 4, 6, 8), dtype=np.float64),
    "2-d scaled": dict(shape=(5, 3), scale=0.3),
}


def _run(device, case, create_graph=False):
    q, k, v = _qkv(device, case["shape"], case.get("kshape"), case.get("dtype", np.float32),
                   transposed=case.get("transposed", False))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=case.get("scale"))
    g = npusim.from_numpy(np.random.default_rng(9).standard_normal(tuple(out.shape)).astype(
        case.get("dtype", np.float32))).to(device)
    grads = npusim.autograd.grad(out, (q, k, v), g, create_graph=create_graph)
    if create_graph:
        grads = grads + npusim.autograd.grad(sum((x * x).sum() for x in grads), (q, k, v))
    return (out,) + tuple(grads)


@pytest.mark.parametrize("name", list(CASES))
def test_the_math_op_has_the_composition_values_bit_for_bit(device, monkeypatch, name):
    fused = _run(device, CASES[name])
    assert fused[0].grad_fn.name() == "ScaledDotProductAttentionMathBackward0"
    monkeypatch.setattr(NA, "_one_kernel", lambda *a: False)
    composed = _run(device, CASES[name])
    assert composed[0].grad_fn.name() != "ScaledDotProductAttentionMathBackward0"
    for a, b in zip(fused, composed):
        assert a.shape == b.shape and a.dtype == b.dtype
        assert np.array_equal(_bits(a), _bits(b))


@pytest.mark.parametrize("name", ["4-d strided", "3-d longer keys"])
def test_double_backward_through_the_math_op_matches_the_composition(device, monkeypatch, name):
    fused = _run(device, CASES[name], create_graph=True)
    monkeypatch.setattr(NA, "_one_kernel", lambda *a: False)
    composed = _run(device, CASES[name], create_graph=True)
    for a, b in zip(fused, composed):
        np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy(), rtol=1e-5, atol=1e-6)


def test_profilers_see_one_attention_op_and_softmax_backward_data(device):
    q, k, v = _qkv(device, (2, 2, 4, 3))
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
    names = [e.name for e in prof.events()]
    assert "aten::_scaled_dot_product_attention_math" in names
    assert "aten::_softmax_backward_data" in names
    assert "aten::masked_fill" not in names and "aten::_safe_softmax" not in names


def test_other_masks_and_dropout_keep_the_composition(device):
    q, k, v = _qkv(device, (2, 3, 4))
    bias = npusim.zeros(3, 3, device=device, requires_grad=True)
    keep = npusim.tensor([[True, False, True]] * 3, device=device)
    for mask in (None, bias, keep):
        out = F.scaled_dot_product_attention(q, k, v, mask)
        assert out.grad_fn.name() != "ScaledDotProductAttentionMathBackward0"
    F.scaled_dot_product_attention(q, k, v, bias).sum().backward()
    assert bias.grad is not None and bias.grad.shape == (3, 3)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=0.5)
    assert out.grad_fn.name() != "ScaledDotProductAttentionMathBackward0"
    with pytest.raises(NotImplementedError, match="dropout"):
        npusim.ops.aten._scaled_dot_product_attention_math(q, k, v, None, 0.5)


@pytest.mark.oracle
@pytest.mark.parametrize("mask_kind", ["causal", "bool", "float"])
def test_math_op_values_and_gradients_are_torchs(device, torch, mask_kind):
    # torch's op adds the mask it is given (a bool one as 0 / 1) and masks the causal scores with -inf
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal((2, 3, 5, 4)).astype(np.float32) for _ in range(3)]
    mask = {"causal": None, "bool": rng.random((5, 5)) > 0.3,
            "float": rng.standard_normal((3, 5, 5)).astype(np.float32)}[mask_kind]
    ours = [npusim.from_numpy(a).to(device).requires_grad_() for a in arrays]
    theirs = [torch.from_numpy(a).requires_grad_() for a in arrays]
    om = None if mask is None else npusim.from_numpy(mask).to(device)
    tm = None if mask is None else torch.from_numpy(mask)
    if mask_kind == "float":
        om.requires_grad_(), tm.requires_grad_()
        ours.append(om), theirs.append(tm)
    causal = mask_kind == "causal"
    o, w = npusim.ops.aten._scaled_dot_product_attention_math(*ours[:3], om, is_causal=causal, scale=0.7)
    to, tw = torch.ops.aten._scaled_dot_product_attention_math(*theirs[:3], tm, is_causal=causal, scale=0.7)
    np.testing.assert_allclose(o.detach().cpu().numpy(), to.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w.detach().cpu().numpy(), tw.detach().numpy(), rtol=1e-5, atol=1e-6)
    g = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    gw = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    npusim.autograd.backward([o, w], [npusim.from_numpy(g).to(device), npusim.from_numpy(gw).to(device)])
    torch.autograd.backward([to, tw], [torch.from_numpy(g), torch.from_numpy(gw)])
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.cpu().numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.oracle
def test_softmax_backward_data_and_its_gradients_are_torchs(device, torch):
    rng = np.random.default_rng(5)
    x, g, gg = (rng.standard_normal((3, 6)).astype(np.float64) for _ in range(3))
    out_ours = npusim.from_numpy(x).to(device).softmax(-1).requires_grad_()
    out_theirs = torch.from_numpy(x).softmax(-1).requires_grad_()
    go_ours = npusim.from_numpy(g).to(device).requires_grad_()
    go_theirs = torch.from_numpy(g).requires_grad_()
    r = npusim.ops.aten._softmax_backward_data(go_ours, out_ours, -1, npusim.float64)
    tr = torch.ops.aten._softmax_backward_data(go_theirs, out_theirs, -1, torch.float64)
    np.testing.assert_allclose(r.detach().cpu().numpy(), tr.detach().numpy(), rtol=1e-12, atol=1e-14)
    r.backward(npusim.from_numpy(gg).to(device))
    tr.backward(torch.from_numpy(gg))
    np.testing.assert_allclose(go_ours.grad.cpu().numpy(), go_theirs.grad.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(out_ours.grad.cpu().numpy(), out_theirs.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_attention_scale_is_the_square_root_split_over_q_and_k(device):
    q, k, v = _qkv(device, (1, 3, 2))
    out = F.scaled_dot_product_attention(q, k, v, scale=0.25)
    s = (q.detach().cpu().numpy() * math.sqrt(0.25)) @ (k.detach().cpu().numpy() * math.sqrt(0.25)).swapaxes(-1, -2)
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    np.testing.assert_allclose(out.detach().cpu().numpy(), w @ v.detach().cpu().numpy(), rtol=1e-5)


def test_two_threads_split_large_attention_with_the_same_bits(device, monkeypatch):
    # scores of 1.2M elements: the elementwise steps split over the intra-op threads, as the separate ops do
    before = npusim.get_num_threads()
    npusim.set_num_threads(2)
    try:
        case = dict(shape=(2, 4, 384, 16))
        fused = _run(device, case)
        monkeypatch.setattr(NA, "_one_kernel", lambda *a: False)
        composed = _run(device, case)
    finally:
        npusim.set_num_threads(before)
    for a, b in zip(fused, composed):
        assert np.array_equal(_bits(a), _bits(b))
