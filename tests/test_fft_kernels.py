"""The array-level FFT kernels (npusim.kernels.fft) on NumPy arrays, against the DFT's definition.

Each transform is checked against an explicit DFT matrix product in float64 / complex128. A float32
signal transforms in single precision (complex64 out, as torch's): the error of an FFT of length n is
bounded by about eps * log2(n) * sum|x| (eps = 2**-23), so for the lengths here (n <= 12, log2 n < 4)
``atol = 8 * eps * log2(n) * max|x| * n`` with ``rtol = 0`` holds with room to spare.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from npusim.kernels import fft as K

RNG = np.random.default_rng(3)
EPS32 = 2.0 ** -23


def _dft_matrix(n, inverse=False):
    k = np.arange(n)
    return np.exp((2j if inverse else -2j) * np.pi * np.outer(k, k) / n)


def _dft(x, axes, inverse=False):
    """The unscaled DFT over ``axes``, one matrix product per axis."""
    r = np.asarray(x, np.complex128)
    for ax in axes:
        r = np.moveaxis(np.tensordot(r, _dft_matrix(r.shape[ax], inverse), axes=([ax], [1])), -1, ax)
    return r


def _scale(mode, n):
    return {K.NONE: 1.0, K.BY_ROOT_N: 1 / math.sqrt(n), K.BY_N: 1 / n}[mode]


def _f32_tol(x, n):
    return 8 * EPS32 * max(math.log2(n), 1) * float(np.abs(x).max()) * n


@pytest.mark.parametrize("mode", [K.NONE, K.BY_ROOT_N, K.BY_N])
@pytest.mark.parametrize("onesided", [True, False])
def test_r2c_matches_dft(mode, onesided):
    x = RNG.standard_normal((3, 5, 6))
    dims = (1, 2)
    r = K.r2c(x, dims, mode, onesided)
    want = _dft(x, dims) * _scale(mode, 30)
    if onesided:
        want = want[..., :4]
    assert r.dtype == np.complex128 and r.shape == want.shape
    np.testing.assert_allclose(r, want, rtol=0, atol=1e-12)
    r32 = K.r2c(x.astype(np.float32), dims, mode, onesided)
    assert r32.dtype == np.complex64
    np.testing.assert_allclose(r32, want, rtol=0, atol=_f32_tol(x, 30) * _scale(mode, 30))


@pytest.mark.parametrize("mode", [K.NONE, K.BY_ROOT_N, K.BY_N])
@pytest.mark.parametrize("forward", [True, False])
def test_c2c_matches_dft(mode, forward):
    x = RNG.standard_normal((4, 7)) + 1j * RNG.standard_normal((4, 7))
    r = K.c2c(x, (0, 1), mode, forward)
    np.testing.assert_allclose(r, _dft(x, (0, 1), inverse=not forward) * _scale(mode, 28), rtol=0, atol=1e-12)
    r32 = K.c2c(x.astype(np.complex64), [1], mode, forward)
    assert r32.dtype == np.complex64
    np.testing.assert_allclose(r32, _dft(x, (1,), inverse=not forward) * _scale(mode, 7), rtol=0,
                               atol=_f32_tol(x, 7))


@pytest.mark.parametrize("mode", [K.NONE, K.BY_ROOT_N, K.BY_N])
@pytest.mark.parametrize("n", [8, 9])
def test_c2r_inverts_r2c(mode, n):
    x = RNG.standard_normal((2, n))
    half = K.r2c(x, [1], K.NONE, True)
    back = K.c2r(half, [1], mode, n)
    assert back.dtype == np.float64 and back.shape == (2, n)
    np.testing.assert_allclose(back, x * n * _scale(mode, n), rtol=1e-12, atol=1e-12)
    back32 = K.c2r(half.astype(np.complex64), [1], K.BY_N, n)
    assert back32.dtype == np.float32
    np.testing.assert_allclose(back32, x, rtol=0, atol=_f32_tol(x, n))


def test_c2r_over_several_dims_keeps_the_other_sizes():
    x = RNG.standard_normal((3, 4, 10))
    half = K.r2c(x, (0, 2), K.NONE, True)
    assert half.shape == (3, 4, 6)
    np.testing.assert_allclose(K.c2r(half, (0, 2), K.BY_N, 10), x, atol=1e-12)


def test_empty_batches_and_empty_dims():
    assert K.r2c(np.zeros((0, 4)), [1], K.NONE, True).shape == (0, 3)
    assert K.c2r(np.zeros((0, 3), np.complex64), [1], K.NONE, 4).dtype == np.float32
    x = np.arange(3) + 0j
    r = K.c2c(x, [], K.BY_N, True)
    np.testing.assert_array_equal(r, x)
    assert r is not x
