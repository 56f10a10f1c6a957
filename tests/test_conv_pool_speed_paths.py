"""Convolution and pooling kernels split over the intra-op threads (the im2col gather by input channels, the
unit-stride input gradient's shifted adds by input channels, the weight gradient's pieces a gather per thread)
and max-pool backward's reused index buffer give the bits of one thread: signed zeros, NaN and infinities
included (a NaN's sign is BLAS's), over groups, dilation, padding and 1-3 dims."""
import numpy as np
import pytest

import npusim
from npusim.core.runtime import parallel_config
from npusim.kernels import nn_conv as KC
from npusim.kernels import nn_pooling as KP

CASES = [  # input shape, weight shape, stride, padding, dilation, groups
    ((4, 32, 14, 14), (16, 32, 3, 3), (1, 1), (0, 0), (1, 1), 1),
    ((5, 6, 11, 9), (4, 3, 3, 2), (1, 1), (1, 2), (2, 1), 2),
    ((3, 4, 10, 10), (6, 4, 3, 3), (2, 1), (1, 0), (1, 1), 1),
    ((2, 8, 17), (8, 2, 3), (1,), (1,), (1,), 4),
    ((2, 3, 5, 6, 7), (4, 3, 2, 3, 2), (1, 1, 1), (1, 0, 1), (1, 2, 1), 1),
    ((3, 12, 9, 9), (18, 4, 3, 3), (1, 1), (1, 1), (1, 1), 3),
    ((25, 16, 20, 20), (8, 16, 3, 3), (1, 1), (0, 0), (1, 1), 1),   # several weight-gradient pieces per gather
]


@pytest.fixture
def two_threads_small_grain():
    """Two threads with a grain small enough that every pass of these small convolutions splits."""
    previous, grain = npusim.get_num_threads(), parallel_config.GRAIN_SIZE
    parallel_config.GRAIN_SIZE = 64
    npusim.set_num_threads(2)
    yield
    parallel_config.GRAIN_SIZE = grain
    npusim.set_num_threads(previous)


def _values(shape, dtype, rng):
    x = rng.standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    flat[::7] = -0.0
    flat[3::53] = np.nan
    flat[5::71] = -np.inf
    return x


def _all_three(case, dtype, seed):
    xs, ws, stride, padding, dilation, groups = case
    rng = np.random.default_rng(seed)
    x, w, b = _values(xs, dtype, rng), _values(ws, dtype, rng), rng.standard_normal(ws[0]).astype(dtype)
    y = KC.forward(x, w, b, stride, padding, dilation, groups)
    g = _values(y.shape, dtype, rng)
    return (y, KC.backward_input(g, w, xs[2:], stride, padding, dilation, groups),
            KC.backward_weight(g, x, ws[2:], stride, padding, dilation, groups))


def _same_bits(a, b):
    """Equal bits, except that a NaN may differ in sign (BLAS's threads make NaNs in another order)."""
    assert a.dtype == b.dtype and a.shape == b.shape
    nan = np.isnan(a)
    np.testing.assert_array_equal(nan, np.isnan(b))
    a, b = np.where(nan, 0, a), np.where(nan, 0, b)
    np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("case", CASES, ids=[str(c[0]) for c in CASES])
def test_conv_kernels_split_over_threads_give_one_threads_bits(case, dtype, two_threads_small_grain):
    split = _all_three(case, dtype, 1)
    previous = npusim.get_num_threads()
    npusim.set_num_threads(1)
    try:
        serial = _all_three(case, dtype, 1)
    finally:
        npusim.set_num_threads(previous)
    for a, b in zip(split, serial):
        _same_bits(a, b)


def test_unit_stride_input_gradient_sums_from_zero():
    """The first tap starts each sum as 0 + value, as a zeroed accumulator did: an all -0.0 gradient gives +0.0."""
    g = np.full((2, 3, 4, 4), -0.0, np.float32)
    w = np.ones((3, 2, 3, 3), np.float32)
    dx = KC.backward_input(g, w, (6, 6), (1, 1), (0, 0), (1, 1), 1)
    assert not np.signbit(dx).any()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool_backward_matches_a_scatter_add(dtype):
    rng = np.random.default_rng(2)
    x = _values((3, 5, 8, 10), dtype, rng)
    g = _values((3, 5, 4, 5), dtype, rng)
    _, idx = KP.max_pool(x, (2, 2), (2, 2), (0, 0), (1, 1), (4, 5))
    expected = np.zeros(x.size, dtype)
    np.add.at(expected, (idx + (np.arange(15) * 80).reshape(3, 5, 1, 1)).ravel(), g.ravel())
    for _ in range(2):   # the second call reuses the index buffer
        _same_bits(KP.max_pool_backward(g, idx, (8, 10)), expected.reshape(x.shape))
