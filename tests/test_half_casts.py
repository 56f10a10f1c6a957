"""float16 <-> float32 conversions through ml_dtypes' complex32 (kernels/half_casts.py): NumPy's bits exactly."""
import numpy as np
import pytest

from npusim.kernels import half_casts as HC
from npusim.kernels import parallel as P

pytestmark = pytest.mark.skipif(HC._COMPLEX32 is None, reason="ml_dtypes without complex32: NumPy's casts run")


def _specials_f32():
    bits = np.array([0, 0x80000000, 1, 0x80000001, 0x007fffff, 0x00800000, 0x33000000, 0x33000001, 0x337fffff,
                     0x38800000, 0x387fe000, 0x387ff000, 0x387ff001, 0x3f800000, 0x3f801000, 0x3f803000,
                     0x477fe000, 0x477fefff, 0x477ff000, 0x47800000, 0x7f7fffff, 0x7f800000, 0xff800000,
                     0x7fc00000, 0xffc00000, 0x7f800001, 0x7fa00000, 0x7fbfffff, 0xffffffff, 0x7f802000],
                    dtype=np.uint32)
    rng = np.random.default_rng(0)
    rand = rng.integers(0, 1 << 32, 50_000, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([bits, rand]).view(np.float32)


@pytest.mark.parametrize("n", [1 << 16, (1 << 16) - 1, 1025])
def test_every_float16_widens_to_numpys_bits(n):
    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)[-n:]
    got = HC.astype(h, np.float32)
    assert got is not None and got.dtype == np.float32
    np.testing.assert_array_equal(got.view(np.uint32), h.astype(np.float32).view(np.uint32))


def test_relu_like_halves_widen_to_numpys_bits():
    """Half zeros, the rest normal, a few subnormals and one infinity: the branch-free widening and its fix-up."""
    x = np.maximum(np.random.default_rng(5).standard_normal(5000), 0).astype(np.float16)
    x[:7] = np.array([6e-8, -6e-8, 1e-5, np.inf, -np.inf, np.nan, -0.0], np.float16)
    np.testing.assert_array_equal(HC.astype(x, np.float32).view(np.uint32), x.astype(np.float32).view(np.uint32))


@pytest.mark.parametrize("n", [1024, 1025, 4097, 50_030])
def test_float32_rounds_to_numpys_float16_bits(n):
    x = _specials_f32()[:n]
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)
    got = HC.astype(x, np.float16)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_layouts_and_fallbacks():
    a = np.random.default_rng(1).standard_normal((64, 48)).astype(np.float32)
    t = a.T                                          # F-contiguous: the result keeps the layout
    r = HC.astype(t, np.float16)
    assert r.flags.f_contiguous and np.array_equal(r, t.astype(np.float16))
    assert HC.astype(a[:, ::2], np.float16) is None   # strided: NumPy's cast
    assert HC.astype(a[:4], np.float16) is None       # small
    assert HC.astype(a, np.float64) is None           # not a float16/float32 pair
    assert np.array_equal(P.astype(t, np.float16), t.astype(np.float16))


def test_copyto_writes_numpys_bits_and_declines_what_it_cannot_do():
    x = _specials_f32()[:3001]
    dst = np.empty(x.shape, np.float16)
    assert HC.copyto(dst, x, "unsafe")
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(dst.view(np.uint16), x.astype(np.float16).view(np.uint16))
    assert not HC.copyto(dst, x, "safe")             # float32 -> float16 is not a safe cast
    assert not HC.copyto(dst[::2], x[::2], "unsafe")
    back = np.empty(x.shape, np.float32)
    assert HC.copyto(back, dst, "same_kind")
    np.testing.assert_array_equal(back, dst.astype(np.float32))


def test_relu_like_floats_round_to_numpys_float16_bits():
    """Half zeros (the branch-free path, chunk by chunk), with subnormal results, the edge of infinity, NaNs."""
    x = np.maximum(np.random.default_rng(6).standard_normal(200_000), 0).astype(np.float32)
    x[::7] *= np.float32(1e-4)                                       # some subnormal results
    specials = _specials_f32()[:30]
    with np.errstate(over="ignore"):
        for chunk_has in (specials[:20], specials, np.array([65519.0, 65520.0, -65520.0, 65535.9], np.float32)):
            y = x.copy()
            y[70_000:70_000 + len(chunk_has)] = chunk_has            # one chunk falls back to the exact cast
            got = HC.astype(y, np.float16)
            np.testing.assert_array_equal(got.view(np.uint16), y.astype(np.float16).view(np.uint16))
    y = _specials_f32()
    got = np.empty(y.shape, np.float16)
    HC._narrow_in_chunks(got, y)                                     # the path itself, on every kind of value
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got.view(np.uint16), y.astype(np.float16).view(np.uint16))
