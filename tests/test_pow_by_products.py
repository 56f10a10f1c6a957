"""pow by the numbers 3, -2 and -0.5 computes as torch's CPU kernel does: (x * x) * x, 1 / (x * x) and
1 / sqrt(x), each step rounded in the tensor's dtype (bfloat16 too, for 3 and -2), whatever the form of the call
(function, method, in place, out=, the out= array aliasing the base), in pieces over one or two threads."""
import ml_dtypes
import numpy as np
import pytest

import npusim
from npusim.kernels import parallel

N = 2 * parallel.BLOCK + 11     # blocks and a short last one


def _values(dtype, n=N):
    x = (np.random.default_rng(0).standard_normal(n) * 4).astype(np.float32)
    x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -3e-39, 7e18]
    return x.astype(dtype)


def _expected(x, exponent):
    with np.errstate(all="ignore"):
        if exponent == 3:
            return (x * x) * x
        if exponent == -2:
            return x.dtype.type(1) / (x * x)
        return x.dtype.type(1) / np.sqrt(x)


def _same_bits(t, expect):
    """``t`` holds ``expect``'s bits (compared as integers: bfloat16 has no numpy())."""
    bits = f"int{8 * expect.dtype.itemsize}"
    assert t.dtype == npusim.tensor(expect.reshape(-1)[:0]).dtype and tuple(t.shape) == expect.shape
    np.testing.assert_array_equal(t.cpu().view(getattr(npusim, bits)).numpy(), expect.view(bits))


@pytest.mark.parametrize("dtype,exponent", [(np.float32, 3), (np.float32, -2), (np.float32, -0.5),
                                            (np.float64, 3), (np.float64, -2.0), (np.float64, -0.5),
                                            (ml_dtypes.bfloat16, 3), (ml_dtypes.bfloat16, -2)])
def test_every_form_rounds_each_product(device, intra_op_threads, dtype, exponent):
    x = _values(dtype)
    expect = _expected(x, exponent)
    base = npusim.tensor(x, device=device)
    _same_bits(npusim.pow(base, exponent), expect)
    _same_bits(base ** exponent, expect)
    out = npusim.empty_like(base)
    assert npusim.pow(base, exponent, out=out) is out
    _same_bits(out, expect)
    inplace = base.clone()
    inplace.pow_(exponent)
    _same_bits(inplace, expect)
    aliased = base.clone()
    npusim.pow(aliased, exponent, out=aliased)      # out= is the base: the second pass must read the base
    _same_bits(aliased, expect)
    _same_bits(base, x)


def test_strided_and_small_bases(device):
    x = _values(np.float32, 64).reshape(8, 8)
    _same_bits(npusim.pow(npusim.tensor(x, device=device).t(), 3), _expected(x.T.copy(), 3))
    _same_bits(npusim.pow(npusim.tensor(x[0, 0], device=device), -2), _expected(x[0, 0:1], -2).reshape(()))


def test_other_exponents_and_float16_keep_pow(device):
    """Exponents torch sends to the library's pow, and float16 (pow in float32, rounded once), are unchanged."""
    x = np.abs(_values(np.float32, 1000))
    with np.errstate(all="ignore"):
        _same_bits(npusim.pow(npusim.tensor(x, device=device), 4), np.power(x, np.float32(4)))
        h = x.astype(np.float16)
        _same_bits(npusim.pow(npusim.tensor(h, device=device), 3), np.power(h.astype(np.float32), 3).astype(np.float16))


def test_gradient_unchanged(device):
    x = npusim.tensor([0.5, -2.0, 3.0], device=device, requires_grad=True)
    npusim.pow(x, 3).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 3 * np.array([0.5, -2.0, 3.0]) ** 2, rtol=1e-6)


@pytest.mark.oracle
@pytest.mark.parametrize("exponent", [2, 3, -2, -0.5, -1])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_equals_torch(exponent, dtype):
    torch = pytest.importorskip("torch")
    if dtype == "bfloat16" and exponent == -0.5:
        pytest.skip("torch's bfloat16 1 / sqrt is not the float32 one rounded")
    x = _values(np.float32, 5000)
    t = torch.pow(torch.from_numpy(x).to(getattr(torch, dtype)), exponent).float().numpy()
    ours = npusim.pow(npusim.tensor(x).to(getattr(npusim, dtype)), exponent).float().numpy()
    np.testing.assert_array_equal(ours, t)
