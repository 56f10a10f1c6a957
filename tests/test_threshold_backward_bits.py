"""threshold_backward's large-input path (integer views of the bits, block by block) gives the masked copy's
bits for every dtype it takes: NaN inputs pass the gradient, inf and NaN gradients under the mask give +0."""
import numpy as np
import pytest

import npusim
from conftest import host

aten = npusim.ops.aten


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "int8", "int32", "uint8"])
def test_large_inputs_give_the_masked_copy_bits(device, dtype):
    rng = np.random.default_rng(1)
    n = 200_003
    dt = getattr(npusim, dtype)
    if dtype.startswith(("int", "uint")):
        g, x = rng.integers(0, 100, n), rng.integers(0, 100, n)
        threshold = 50
    else:
        g, x = rng.standard_normal(n), rng.standard_normal(n)
        g[:6] = [np.nan, np.inf, -np.inf, -0.0, -3.0, np.nan]
        x[:6] = [0.0, -1.0, 0.5, -1.0, 0.0, np.nan]
        x[6:20] = np.nan
        threshold = 0.1
    gt, xt = npusim.tensor(g, device=device).to(dt), npusim.tensor(x, device=device).to(dt)
    got = host(aten.threshold_backward(gt, xt, threshold).view(-1).cpu().to(npusim.float64))
    gh, xh = host(gt.cpu().to(npusim.float64)), host(xt.cpu().to(npusim.float64))
    # the comparison in the operands' dtype: the threshold rounds to it first
    t = host(npusim.tensor(threshold).to(dt).to(npusim.float64)).item()
    want = np.where(xh <= t, 0.0, gh)
    np.testing.assert_array_equal(got, want)
    assert not np.signbit(got[xh <= t]).any()     # masked entries are +0, whatever the gradient's sign


@pytest.mark.parametrize("threshold", [0, 0.5, -0.25, 0.1, 1e5, -70000.0])
def test_float16_inputs_compare_as_numpy_does(device, threshold):
    rng = np.random.default_rng(2)
    n = 150_001
    x = (rng.standard_normal(n) * 4).astype(np.float16)
    x[:8] = [0.5, -0.25, 0.0999755859375, 0.1, -0.0, np.nan, np.inf, -np.inf]
    g = rng.standard_normal(n).astype(np.float16)
    got = aten.threshold_backward(npusim.tensor(g, device=device), npusim.tensor(x, device=device), threshold)
    with np.errstate(all="ignore"):
        want = np.where(x <= threshold, np.float16(0), g)
    assert np.array_equal(got.cpu().numpy().view(np.uint16), want.view(np.uint16))
