"""The transformer step's faster paths compute what the plain ones do: gelu in blocks, the flat embedding
gradient, linear over a folded batch, and attention's _safe_softmax (torch's op, its values and gradients)."""
import math

import numpy as np
import pytest

import npusim
from npusim.kernels import nn_activation as A
from npusim.kernels import nn_embedding as E


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint8)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("n", [1 << 17, (1 << 17) + 13])
def test_gelu_in_blocks_is_bit_identical_to_the_whole_array_expression(monkeypatch, approximate, n):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(n) * 3).astype(np.float32)
    x[::1001] = np.nan
    x[1], x[2], x[3], x[4] = np.inf, -np.inf, -0.0, 1e-40
    g = rng.standard_normal(n).astype(np.float32)
    assert A._blockwise(x)
    blocks = A.gelu(x, approximate), A.gelu_backward(g, x, approximate)
    monkeypatch.setattr(A, "_blockwise", lambda x: False)
    whole = A.gelu(x, approximate), A.gelu_backward(g, x, approximate)
    for b, w in zip(blocks, whole):
        assert b.shape == w.shape and b.dtype == w.dtype
        assert np.array_equal(_bits(b), _bits(w))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_embedding_gradient_sums_each_row_in_lookup_order(dtype):
    rng = np.random.default_rng(1)
    grad = (rng.standard_normal((40, 7, 5)) * 10.0 ** rng.integers(-20, 20, (40, 7, 1))).astype(dtype)
    grad[3, 2] = -0.0
    idx = rng.integers(0, 9, (40, 7))
    expected = np.zeros((9, 5), dtype)
    np.add.at(expected, idx.reshape(-1), grad.reshape(-1, 5))
    got = E.embedding_backward(grad, idx, 9, -1, False)
    assert np.array_equal(_bits(got), _bits(expected))


def test_linear_over_a_folded_batch_equals_the_batched_product(device):
    # a transposed (strided) 3-D input: folded by a copying reshape, as torch folds it
    rng = np.random.default_rng(2)
    x = npusim.from_numpy(rng.standard_normal((6, 5, 8), dtype=np.float32)).to(device)
    w = npusim.from_numpy(rng.standard_normal((3, 8), dtype=np.float32)).to(device).requires_grad_()
    b = npusim.from_numpy(rng.standard_normal(3, dtype=np.float32)).to(device)
    xt = x.transpose(0, 1).requires_grad_()
    out = npusim.nn.functional.linear(xt, w, b)
    expected = np.matmul(xt.detach().cpu().numpy(), w.detach().cpu().numpy().T) + b.cpu().numpy()
    assert out.shape == (5, 6, 3)
    np.testing.assert_allclose(out.detach().cpu().numpy(), expected, rtol=1e-5, atol=1e-5)
    out.sum().backward()
    assert xt.grad.shape == xt.shape and w.grad.shape == w.shape


@pytest.mark.oracle
def test_safe_softmax_values_and_gradients_are_torchs(device, torch):
    x = [[0.0, 1.0, -math.inf], [-math.inf, -math.inf, -math.inf], [2.0, -1.0, 0.5]]
    ours = npusim.tensor(x, device=device, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    y, ty = npusim.ops.aten._safe_softmax(ours, -1), torch.ops.aten._safe_softmax(theirs, -1)
    assert y.grad_fn.name() == ty.grad_fn.name() == "SafeSoftmaxBackward0"
    np.testing.assert_allclose(y.detach().cpu().numpy(), ty.detach().numpy(), rtol=1e-6)
    g = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [-1.0, 0.5, 2.0]]
    y.backward(npusim.tensor(g, device=device))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(ours.grad.cpu().numpy(), theirs.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_attention_rows_with_every_key_masked_are_zero_without_nans(device):
    rng = np.random.default_rng(3)
    q, k, v = (npusim.from_numpy(rng.standard_normal((1, 2, 4, 3), dtype=np.float32)).to(device).requires_grad_()
               for _ in range(3))
    mask = npusim.tensor([[True, False, False, False], [False] * 4, [True, True, False, False], [True] * 4],
                         device=device)
    out = npusim.nn.functional.scaled_dot_product_attention(q, k, v, mask)
    assert np.all(out.detach().cpu().numpy()[:, :, 1] == 0)
    out.sum().backward()
    for t in (q, k, v):
        assert np.isfinite(t.grad.cpu().numpy()).all()
