"""masked_fill's values, layout and errors (a copy of the input, then the value written where the mask is true): NaN,
inf, -0.0, broadcast masks, 16-bit, 0-dim and non-contiguous inputs; the gradient flows where the mask is false."""
import math

import numpy as np
import pytest

import npusim
from conftest import host


def _reference(a, m, value):
    r = np.array(np.broadcast_to(a, np.broadcast_shapes(a.shape, m.shape)), copy=True)
    np.copyto(r, np.asarray(value).astype(r.dtype), where=m)
    return r


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("value", [-math.inf, math.nan, -0.0, 1e-3, 7])
def test_values_equal_a_copy_then_a_fill(device, dtype, value):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 3, 5, 5)).astype(dtype)
    a[0, 0, 0, :2] = [np.nan, -0.0]
    m = np.triu(np.ones((5, 5), bool), 1)       # an attention mask, broadcast over batch and heads
    got = host(npusim.tensor(a, device=device).masked_fill(npusim.tensor(m, device=device), value))
    want = _reference(a, m, value)
    assert got.dtype == want.dtype and got.flags.c_contiguous
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))


def test_tensor_value_zero_dim_and_non_contiguous_inputs(device):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    m = a % 3 == 0
    t, mt = npusim.tensor(a, device=device), npusim.tensor(m, device=device)
    np.testing.assert_array_equal(host(t.masked_fill(mt, npusim.tensor(-1.0))), np.where(m, -1, a))
    np.testing.assert_array_equal(host(t.t().masked_fill(mt.t(), 5.0)), np.where(m, 5, a).T)
    z = npusim.tensor(2.0, device=device).masked_fill(npusim.tensor(True, device=device), 3.0)
    assert z.dim() == 0 and z.item() == 3.0
    r = t.masked_fill(mt, 0.5)
    r.add_(1)                                   # a new tensor: the input is unchanged
    np.testing.assert_array_equal(host(t), a)


def test_errors_are_kept(device):
    t = npusim.ones(2, 3, device=device)
    with pytest.raises(RuntimeError, match="only supports boolean masks"):
        t.masked_fill(npusim.ones(2, 3, dtype=npusim.int64, device=device), 0.0)
    with pytest.raises(RuntimeError, match="0-dimensional value tensor"):
        t.masked_fill(npusim.ones(2, 3, dtype=npusim.bool, device=device), npusim.ones(2))
    with pytest.raises(RuntimeError):
        t.masked_fill(npusim.ones(4, dtype=npusim.bool, device=device), 0.0)


def test_gradient_flows_where_the_mask_is_false(device):
    x = npusim.ones(2, 3, device=device, requires_grad=True)
    m = npusim.tensor([[True, False, False], [False, True, False]], device=device)
    x.masked_fill(m, -math.inf).exp().sum().backward()
    np.testing.assert_array_equal(host(x.grad), np.where(host(m), np.float32(0), np.exp(np.float32(1))))
