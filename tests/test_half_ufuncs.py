"""float16 ufuncs through float32 arrays (kernels/half_ufuncs.py): NumPy's float16 loops' bits exactly."""
import numpy as np
import pytest

from npusim.kernels import half_casts as HC
from npusim.kernels import half_ufuncs as HU
from npusim.kernels import parallel as P

pytestmark = pytest.mark.skipif(HC._COMPLEX32 is None, reason="ml_dtypes without complex32: NumPy's loops run")

EVERY = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
SPECIALS = np.array([0, 0x8000, 1, 0x8001, 0x3ff, 0x400, 0x3c00, 0xbc00, 0x3c01, 0x7bff, 0xfbff, 0x7c00, 0xfc00,
                     0x7e00, 0xfe00, 0x7c01, 0x7e05, 0xfd00, 0x0200, 0x1400, 0x5bff], dtype=np.uint16).view(np.float16)


def _others():
    rng = np.random.default_rng(0)
    return np.concatenate([SPECIALS, rng.integers(0, 1 << 16, 40, dtype=np.uint32).astype(np.uint16).view(np.float16)])


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype == np.float16:
        np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("ufunc", sorted(HU._ARITHMETIC | HU._COMPARISONS, key=lambda u: u.__name__))
def test_every_float16_against_others_as_numpy(ufunc):
    with np.errstate(all="ignore"):
        for v in _others():
            other = np.full(EVERY.shape, v)
            for a, b in ((EVERY, other), (other, EVERY), (EVERY, v), (v, EVERY)):
                got = HU.binary(ufunc, a, b)
                if ufunc in HU._ARITHMETIC and np.isnan(v) and (a is v or b is v):
                    assert got is None      # a NaN scalar stays with NumPy's loop
                    continue
                _same(got, ufunc(a, b))


@pytest.mark.parametrize("ufunc", [np.maximum, np.minimum])
def test_extrema_against_a_scalar_keep_numpys_zero_signs_and_nans(ufunc):
    for v in SPECIALS[~np.isnan(SPECIALS)]:
        for a, b in ((EVERY, v), (v, EVERY)):
            _same(HU.binary(ufunc, a, b), ufunc(a, b))
    assert HU.binary(ufunc, EVERY, EVERY) is None                 # two arrays: NaN payloads could differ
    assert HU.binary(ufunc, EVERY, np.float16("nan")) is None


def test_layouts_out_and_declines():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((96, 64)).astype(np.float16)
    bias = rng.standard_normal(64).astype(np.float16)
    _same(HU.binary(np.add, a, bias), a + bias)                  # broadcasting over leading axes
    _same(HU.binary(np.add, bias, a), bias + a)
    assert HU.binary(np.add, a, a[:, :1].copy()) is None          # a broadcast last axis: NumPy's scalar loop
    t = a.T
    r = HU.binary(np.multiply, t, t)
    assert r.flags.f_contiguous
    _same(r, t * t)
    out = np.empty_like(a)
    assert HU.binary(np.subtract, a, a[::-1].copy(), out=out) is out
    _same(out, a - a[::-1])
    x = a.copy()
    HU.binary(np.maximum, x, np.float16(0), out=x)                # in place, as relu_
    _same(x, np.maximum(a, np.float16(0)))
    assert HU.binary(np.add, a[:, ::2], a[:, ::2]) is None        # strided
    assert HU.binary(np.add, a[:2], a[:2]) is None                # small
    assert HU.binary(np.add, a, 1.5) is None                      # a Python scalar: NumPy's rules for it
    for v in (0, 1.5, -2, 65504.0):                               # ... but compared exactly when float16 holds it
        _same(HU.binary(np.greater, a, v), a > v)
        _same(HU.binary(np.less_equal, v, a), v <= a)
    assert HU.binary(np.greater, a, 0.1) is None and HU.binary(np.equal, a, 70000) is None
    assert HU.binary(np.add, a, a.astype(np.float32)) is None     # promotes to float32
    assert HU.binary(np.divide, a, a) is None


def test_parallel_binary_takes_it_with_the_same_bits():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((256, 64)).astype(np.float16)
    g = rng.standard_normal((256, 64)).astype(np.float16)
    _same(P.binary(np.maximum, a, np.float16(0)), np.maximum(a, np.float16(0)))
    _same(P.binary(np.multiply, g, (a > 0).astype(np.float16)), g * (a > 0).astype(np.float16))


@pytest.mark.emulation_only
def test_split_over_two_threads_with_the_serial_bits():
    """Conversions and float16 ufuncs weigh their elements (WORK) when splitting; the bits stay the serial ones."""
    import npusim
    from npusim.core.runtime import parallel_config, thread_pool
    rng = np.random.default_rng(4)
    a = rng.standard_normal((300, 70)).astype(np.float16)
    g = rng.standard_normal((300, 70)).astype(np.float16)
    w = rng.standard_normal((300, 70)).astype(np.float32)
    ops = [lambda: P.binary(np.multiply, g, a), lambda: P.binary(np.maximum, a, np.float16(0)),
           lambda: P.binary(np.greater, a, 0), lambda: P.astype(w, np.float16), lambda: P.astype(a, np.float32)]
    want = [op() for op in ops]
    previous, grain, run = npusim.get_num_threads(), parallel_config.GRAIN_SIZE, thread_pool.run_intraop
    calls = []
    thread_pool.run_intraop = lambda fn, items: (calls.append(len(items)), run(fn, items))[1]
    parallel_config.GRAIN_SIZE = a.size     # unweighted, nothing this size would split
    npusim.set_num_threads(2)
    try:
        for op, expected in zip(ops, want):
            calls.clear()
            _same(op(), expected)
            assert calls, "not split"
    finally:
        thread_pool.run_intraop = run
        parallel_config.GRAIN_SIZE = grain
        npusim.set_num_threads(previous)
