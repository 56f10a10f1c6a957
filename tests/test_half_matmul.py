"""16-bit float matrix products: float32 products rounded once (torch's numerics), also when large
enough for the conversions to be split over the intra-op threads."""
import numpy as np
import pytest

import npusim

torch = pytest.importorskip("torch")



def _np(t):
    return t.cpu().float().numpy()


def _inputs(shape, dtype_name, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape, dtype=np.float32)
    ours = npusim.from_numpy(a).to(getattr(npusim, dtype_name))
    theirs = torch.from_numpy(a).to(getattr(torch, dtype_name))
    return ours, theirs


def _rounded_once(ref32, dtype_name):
    """A float32 result rounded once to the 16-bit type, read back as float32."""
    return torch.from_numpy(ref32).to(getattr(torch, dtype_name)).float().numpy()


@pytest.fixture(params=[1, 2])
def threads(request):
    saved = npusim.get_num_threads()
    npusim.set_num_threads(request.param)
    yield request.param
    npusim.set_num_threads(saved)


@pytest.mark.oracle
@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
@pytest.mark.parametrize("n", [8, 1024])
def test_mm_and_addmm_are_float32_products_rounded_once(device, dtype_name, n, threads):
    (a, ta), (b, tb), (c, tc) = (_inputs(s, dtype_name, i) for i, s in enumerate([(n, 64), (64, n), (n,)]))
    a, b, c = a.to(device), b.to(device), c.to(device)
    ref = _np(a) @ _np(b)
    np.testing.assert_array_equal(_np(npusim.mm(a, b)), _rounded_once(ref, dtype_name))
    np.testing.assert_array_equal(_np(npusim.addmm(c, a, b)), _rounded_once(ref + _np(c), dtype_name))
    # against torch's CPU kernels: float32 accumulation in another order, at most one rounding step apart
    tol = 8e-3 if dtype_name == "float16" else 6e-2
    np.testing.assert_allclose(_np(npusim.mm(a, b)), torch.mm(ta, tb).float().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(_np(npusim.addmm(c, a, b)), torch.addmm(tc, ta, tb).float().numpy(),
                               rtol=tol, atol=tol)


@pytest.mark.oracle
@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
def test_bmm_matmul_linear_match_torch(device, dtype_name, threads):
    (a, ta), (b, tb), (w, tw), (bias, tbias) = (
        _inputs(s, dtype_name, 10 + i) for i, s in enumerate([(4, 300, 96), (4, 96, 300), (200, 96), (200,)]))
    a, b, w, bias = a.to(device), b.to(device), w.to(device), bias.to(device)
    tol = 8e-3 if dtype_name == "float16" else 6e-2
    pairs = [
        (npusim.bmm(a, b), torch.bmm(ta, tb)),
        (npusim.matmul(a, b), torch.matmul(ta, tb)),
        (npusim.nn.functional.linear(a, w, bias), torch.nn.functional.linear(ta, tw, tbias)),
    ]
    for ours, theirs in pairs:
        assert ours.dtype == getattr(npusim, dtype_name)
        np.testing.assert_allclose(_np(ours), theirs.float().numpy(), rtol=tol, atol=tol)
    np.testing.assert_array_equal(_np(npusim.bmm(a, b)), _rounded_once(_np(a) @ _np(b), dtype_name))
