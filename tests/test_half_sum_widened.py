"""A float16 sum that keeps the last axis (a Linear bias gradient's sum over rows) widens the whole array to float32
first: the same bits as NumPy's per-element cast inside the reduction, at one intra-op thread and at two."""
import itertools

import numpy as np
import pytest

import npusim
from npusim.kernels import parallel as P
from npusim.kernels import reductions as R

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)


def _old(a, axes, keepdims):
    with np.errstate(over="ignore"):
        return P.reduce(np.add, "sum", a, axes, keepdims, F32).astype(F16)


@pytest.mark.parametrize("threads", [1, 2])
def test_outer_sums_keep_numpys_bits(threads):
    rng = np.random.default_rng(3)
    before = npusim.get_num_threads()
    npusim.set_num_threads(threads)
    try:
        for shape in [(256, 1024), (256, 10), (3000, 7), (64, 33, 17), (16, 64, 128), (4, 3, 5, 700)]:
            # a wide dynamic range, so that another order of additions would show in the bits
            a = (rng.standard_normal(shape) * np.exp(rng.uniform(-5, 5, shape))).astype(F16)
            a.reshape(-1)[::97] = 0
            nd = len(shape)
            for k in range(1, nd):
                for axes in itertools.combinations(range(nd - 1), k):
                    for keepdims in (False, True):
                        got = R.sum_(a, axes, keepdims, F16)
                        want = _old(a, axes, keepdims)
                        assert got.dtype == F16 and got.shape == want.shape
                        assert np.array_equal(got.view(np.uint16), want.view(np.uint16)), (shape, axes, keepdims)
    finally:
        npusim.set_num_threads(before)


def test_specials_and_the_bias_gradient(device):
    g = np.ones((300, 8), F16)
    g[0, 0], g[1, 1], g[2, 2], g[3, 3] = np.inf, np.nan, -np.inf, 65504
    g[4, 3] = 65504
    got = npusim.tensor(g, device=device).sum(0)
    want = _old(g, (0,), False)
    assert np.array_equal(np.asarray(got.cpu().numpy()).view(np.uint16), want.view(np.uint16))
    x = npusim.randn(256, 64, device=device, dtype=npusim.float16, requires_grad=False)
    lin = npusim.nn.Linear(64, 32).to(device)
    with npusim.autocast(npusim.device(device).type, dtype=npusim.float16):
        lin(x).float().sum().backward()
    assert lin.bias.grad.tolist() == [256.0] * 32
