"""relu's and threshold's gradient is torch's ``threshold_backward`` op: one dispatched op, a masked copy of the
incoming gradient (an inf or NaN gradient under the mask gives 0, as in torch, not NaN as a product would)."""
import math

import numpy as np
import pytest

import npusim
from conftest import host, op_names_seen

aten = npusim.ops.aten
INF, NAN = math.inf, math.nan


def test_values_follow_the_mask_not_a_product(device):
    g = npusim.tensor([1.0, INF, NAN, -2.0, 3.0, -4.0], device=device)
    x = npusim.tensor([1.0, -1.0, 0.0, NAN, 0.5, 0.0], device=device)
    got = host(aten.threshold_backward(g, x, 0))
    np.testing.assert_array_equal(got, [1.0, 0.0, 0.0, -2.0, 3.0, 0.0])
    assert not np.signbit(got[5])           # a masked-out negative gradient is +0, not -0
    np.testing.assert_array_equal(host(aten.threshold_backward(g, x, 0.75)), [1.0, 0, 0, -2.0, 0, 0])


def test_large_inputs_split_into_blocks_give_the_same_values(device):
    rng = np.random.default_rng(0)
    g, x = rng.standard_normal(300_001).astype(np.float32), rng.standard_normal(300_001).astype(np.float32)
    x[::7] = 0.0
    got = host(aten.threshold_backward(npusim.tensor(g, device=device), npusim.tensor(x, device=device), 0))
    np.testing.assert_array_equal(got, np.where(x <= 0, np.float32(0), g))


def test_broadcasting_promotion_and_errors(device):
    got = aten.threshold_backward(npusim.ones(2, 3, device=device), npusim.tensor([1.0, -1.0, 2.0], device=device), 0)
    assert got.tolist() == [[1.0, 0.0, 1.0]] * 2
    mixed = aten.threshold_backward(npusim.ones(2, dtype=npusim.float16, device=device),
                                    npusim.tensor([1.0, -1.0], device=device), 0)
    assert mixed.dtype == npusim.float32 and mixed.tolist() == [1.0, 0.0]
    with pytest.raises(RuntimeError, match="must match the size"):
        aten.threshold_backward(npusim.ones(3, device=device), npusim.ones(2, device=device), 0)


def test_relu_backward_is_one_threshold_backward(device):
    x = npusim.tensor([-1.0, 2.0, 0.0], device=device, requires_grad=True)
    y = npusim.relu(x)
    seen = op_names_seen(lambda: y.backward(npusim.tensor([INF, 5.0, 1.0], device=device)))
    assert "aten::threshold_backward" in seen and "aten::mul" not in seen
    assert x.grad.tolist() == [0.0, 5.0, 0.0]


def test_threshold_gradient_and_double_backward(device):
    x = npusim.tensor([-1.0, 0.5, 2.0], device=device, requires_grad=True)
    y = npusim.nn.functional.threshold(x, 0.75, -3.0)
    (g,) = npusim.autograd.grad(y.sum() * 2, x, create_graph=True)
    assert g.tolist() == [0.0, 0.0, 2.0]
    w = npusim.tensor([1.0, 1.0, 3.0], device=device, requires_grad=True)
    h = aten.threshold_backward(w, x, 0.75)
    gw, gx = npusim.autograd.grad(h.sum(), (w, x))
    assert gw.tolist() == [0.0, 0.0, 1.0] and gx.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.oracle
def test_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    g = rng.standard_normal((4, 70_000)).astype(np.float32)
    x = rng.standard_normal((4, 70_000)).astype(np.float32)
    g[0, :5] = [INF, -INF, NAN, 0.0, -0.0]
    x[1, :3] = [NAN, 0.0, -0.0]
    for thr in (0, 0.5, -1):
        ours = aten.threshold_backward(npusim.tensor(g), npusim.tensor(x), thr).numpy()
        theirs = torch.ops.aten.threshold_backward(torch.tensor(g), torch.tensor(x), thr).numpy()
        np.testing.assert_array_equal(ours, theirs)
        np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))
    xt = torch.tensor([-1.0, 2.0], requires_grad=True)
    torch.relu(xt).backward(torch.tensor([INF, 1.0]))
    xo = npusim.tensor([-1.0, 2.0], requires_grad=True)
    npusim.relu(xo).backward(npusim.tensor([INF, 1.0]))
    assert xo.grad.tolist() == xt.grad.tolist()
