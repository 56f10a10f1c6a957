"""Convolution, pooling and resampling in npusim.nn.functional: values, shapes, dtypes, gradients, errors.

Values are checked against direct NumPy references (window loops, independent of
the im2col kernels); gradients against finite differences (gradcheck in float64,
gradgradcheck for double backward); oracle tests compare values, dtypes and
gradients with PyTorch on realistic shapes, and every bad input's error type and
message with PyTorch's.
"""
from __future__ import annotations

import itertools
import re
import warnings

import numpy as np
import pytest

import npusim
import npusim.nn.functional as F
from conftest import host
from npusim.autograd import gradcheck, gradgradcheck


def rand(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def tensor(a, device, grad=False):
    return npusim.tensor(a, device=device, requires_grad=grad)


# --- NumPy references ---------------------------------------------------------------------------------------------

def np_conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Direct N-d cross-correlation: one einsum per kernel tap and group."""
    nd = x.ndim - 2
    s, p, d = ([v] * nd if isinstance(v, int) else list(v) for v in (stride, padding, dilation))
    x = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(q, q) for q in p])
    o, cg = w.shape[:2]
    og = o // groups
    out_sizes = [(n - di * (k - 1) - 1) // st + 1 for n, k, st, di in zip(x.shape[2:], w.shape[2:], s, d)]
    out = np.zeros((x.shape[0], o, *out_sizes))
    for tap in itertools.product(*(range(k) for k in w.shape[2:])):
        win = x[(slice(None), slice(None)) + tuple(slice(t * di, t * di + st * (m - 1) + 1, st)
                                                   for t, di, st, m in zip(tap, d, s, out_sizes))]
        for g in range(groups):
            wt = w[(slice(g * og, (g + 1) * og), slice(None)) + tap]
            out[:, g * og:(g + 1) * og] += np.einsum("nc...,oc->no...", win[:, g * cg:(g + 1) * cg], wt)
    if b is not None:
        out += b.reshape((1, -1) + (1,) * nd)
    return out


def np_conv_transpose2d(x, w, stride, padding, output_padding):
    """Scatter each input value times the kernel into the output (groups=1, dilation=1)."""
    n, c, h, wd = x.shape
    _, o, kh, kw = w.shape
    oh = (h - 1) * stride - 2 * padding + kh + output_padding
    ow = (wd - 1) * stride - 2 * padding + kw + output_padding
    full = np.zeros((n, o, oh + 2 * padding + kh, ow + 2 * padding + kw))
    for i, j in itertools.product(range(h), range(wd)):
        full[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw] += np.einsum("nc,cokl->nokl", x[:, :, i, j],
                                                                                    w)
    return full[:, :, padding:padding + oh, padding:padding + ow]


def _out_size(n, k, s, p, d, ceil):
    out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (out - 1) * s >= n + p:
        out -= 1
    return out


def np_max_pool2d(x, k, s, p, d=1, ceil=False):
    """Max and flat index per window, visiting the window's input positions in order (first maximum wins)."""
    h, w = x.shape[-2:]
    oh, ow = _out_size(h, k, s, p, d, ceil), _out_size(w, k, s, p, d, ceil)
    vals = np.full(x.shape[:-2] + (oh, ow), -np.inf)
    idx = np.zeros(x.shape[:-2] + (oh, ow), np.int64)
    for i, j in itertools.product(range(oh), range(ow)):
        rows = [r for r in range(i * s - p, i * s - p + d * k, d) if 0 <= r < h]
        cols = [c for c in range(j * s - p, j * s - p + d * k, d) if 0 <= c < w]
        flat = np.array([r * w + c for r in rows for c in cols])
        window = x.reshape(x.shape[:-2] + (h * w,))[..., flat]
        best = window.argmax(axis=-1)
        vals[..., i, j] = np.take_along_axis(window, best[..., None], -1)[..., 0]
        idx[..., i, j] = flat[best]
    return vals, idx


def np_avg_pool2d(x, k, s, p, ceil=False, count_include_pad=True, divisor_override=None):
    h, w = x.shape[-2:]
    oh, ow = _out_size(h, k, s, p, 1, ceil), _out_size(w, k, s, p, 1, ceil)
    out = np.zeros(x.shape[:-2] + (oh, ow))
    for i, j in itertools.product(range(oh), range(ow)):
        r0, c0 = i * s - p, j * s - p
        r1, c1 = min(r0 + k, h + p), min(c0 + k, w + p)
        pool = (r1 - r0) * (c1 - c0)
        r0, c0, r1, c1 = max(r0, 0), max(c0, 0), min(r1, h), min(c1, w)
        total = x[..., r0:r1, c0:c1].sum(axis=(-2, -1))
        div = divisor_override or (pool if count_include_pad else (r1 - r0) * (c1 - c0))
        out[..., i, j] = total / div
    return out


def np_adaptive_avg_pool2d(x, oh, ow):
    h, w = x.shape[-2:]
    out = np.zeros(x.shape[:-2] + (oh, ow))
    for i, j in itertools.product(range(oh), range(ow)):
        r0, r1 = (i * h) // oh, -(-((i + 1) * h) // oh)
        c0, c1 = (j * w) // ow, -(-((j + 1) * w) // ow)
        out[..., i, j] = x[..., r0:r1, c0:c1].mean(axis=(-2, -1))
    return out


def np_nearest(x, oh, ow, scales=(None, None)):
    h, w = x.shape[-2:]
    idx = []
    for n, o, s in ((h, oh, scales[0]), (w, ow, scales[1])):
        scale = np.float32(1.0 / s) if s else np.float32(n) / np.float32(o)
        idx.append(np.minimum(np.floor(np.arange(o, dtype=np.float32) * scale).astype(int), n - 1))
    return x[..., idx[0][:, None], idx[1][None, :]]


def np_bilinear(x, oh, ow, align_corners):
    def axis(n, o):
        if align_corners:
            src = np.arange(o) * ((n - 1) / (o - 1) if o > 1 else 0.0)
        else:
            src = np.maximum((np.arange(o) + 0.5) * (n / o) - 0.5, 0)
        i0 = np.minimum(src.astype(int), n - 1)
        i1 = np.minimum(i0 + 1, n - 1)
        lam = np.clip(src - i0, 0, 1)
        return i0, i1, lam
    (h0, h1, lh), (w0, w1, lw) = axis(x.shape[-2], oh), axis(x.shape[-1], ow)
    rows = x[..., h0, :] * (1 - lh)[:, None] + x[..., h1, :] * lh[:, None]
    return rows[..., w0] * (1 - lw) + rows[..., w1] * lw


# --- convolution: values ------------------------------------------------------------------------------------------

CONV2D_CASES = [
    dict(),
    dict(stride=2, padding=1),
    dict(stride=(2, 1), padding=(0, 2), dilation=(2, 1)),
    dict(padding=2, dilation=2, groups=2),
    dict(stride=3, groups=4),   # depthwise
]


@pytest.mark.parametrize("kwargs", CONV2D_CASES, ids=[str(c) for c in CONV2D_CASES])
def test_conv2d_matches_direct_convolution(device, kwargs):
    groups = kwargs.get("groups", 1)
    out_channels = 8 if groups == 4 else 6
    x, w, b = rand((2, 4, 9, 10)), rand((out_channels, 4 // groups, 3, 2), 1), rand(out_channels, 2)
    y = F.conv2d(tensor(x, device), tensor(w, device), tensor(b, device), **kwargs)
    ref = np_conv(x, w, b, **kwargs)
    assert y.shape == ref.shape and y.dtype is npusim.float32 and y.device.type == device
    np.testing.assert_allclose(host(y), ref, rtol=1e-5, atol=1e-5)
    assert y.is_contiguous()


def test_conv1d_and_unbatched_inputs(device):
    x, w = rand((3, 4, 11)), rand((5, 4, 3), 1)
    y = F.conv1d(tensor(x, device), tensor(w, device), stride=2, padding=1)
    np.testing.assert_allclose(host(y), np_conv(x, w, stride=2, padding=1), rtol=1e-5, atol=1e-5)
    y1 = F.conv1d(tensor(x[0], device), tensor(w, device), stride=2, padding=1)
    assert y1.shape == (5, 6)
    # one sample and a batch are different matrix products, whose BLAS kernels (chosen per CPU) may sum the
    # 12 = 4 * 3 products in other orders: each sum is within 12 * eps/2 * sum|x * w| of the exact one
    bound = 12 * np.finfo(np.float32).eps * np_conv(np.abs(x), np.abs(w), stride=2, padding=1)[0]
    assert np.all(np.abs(host(y1) - host(y)[0]) <= bound)
    x2, w2 = rand((4, 7, 7)), rand((2, 4, 3, 3), 2)
    y2 = F.conv2d(tensor(x2, device), tensor(w2, device))
    assert y2.shape == (2, 5, 5)
    np.testing.assert_allclose(host(y2), np_conv(x2[None], w2)[0], rtol=1e-5, atol=1e-5)


def test_padding_strings(device):
    x, w3, w4 = rand((2, 3, 8, 9)), rand((4, 3, 3, 3), 1), rand((4, 3, 4, 2), 2)
    tx = tensor(x, device)
    valid = F.conv2d(tx, tensor(w3, device), padding="valid")
    np.testing.assert_allclose(host(valid), np_conv(x, w3), rtol=1e-5, atol=1e-5)
    same = F.conv2d(tx, tensor(w3, device), padding="same", dilation=2)
    assert same.shape == (2, 4, 8, 9)
    np.testing.assert_allclose(host(same), np_conv(x, w3, padding=2, dilation=2), rtol=1e-5, atol=1e-5)
    # an even kernel pads one more on the right/bottom, after a warning
    with pytest.warns(UserWarning, match="padding='same' with even kernel lengths"):
        even = F.conv2d(tx, tensor(w4, device), padding="same")
    ref = np_conv(np.pad(x, ((0, 0), (0, 0), (1, 2), (0, 1))), w4)
    assert even.shape == (2, 4, 8, 9)
    np.testing.assert_allclose(host(even), ref, rtol=1e-5, atol=1e-5)
    unbatched = F.conv1d(tensor(x[0, :, 0], device), tensor(w3[:, :, 0], device), padding="same")
    assert unbatched.shape == (4, 9)


def test_conv_dtypes(device):
    x, w = rand((2, 3, 6, 6)), rand((4, 3, 3, 3), 1)
    y64 = F.conv2d(tensor(x.astype(np.float64), device), tensor(w.astype(np.float64), device))
    assert y64.dtype is npusim.float64
    np.testing.assert_allclose(host(y64), np_conv(x, w), rtol=1e-12)
    y16 = F.conv2d(tensor(x, device).half(), tensor(w, device).half())
    assert y16.dtype is npusim.float16
    ref = np_conv(x.astype(np.float16).astype(np.float32), w.astype(np.float16).astype(np.float32))
    np.testing.assert_allclose(host(y16), ref.astype(np.float16), rtol=1e-2, atol=1e-2)
    xi, wi = np.arange(2 * 3 * 5 * 5).reshape(2, 3, 5, 5) % 7 - 3, np.arange(4 * 3 * 2 * 2).reshape(4, 3, 2, 2) % 5 - 2
    yi = F.conv2d(tensor(xi, device), tensor(wi, device), tensor(np.arange(4), device))
    assert yi.dtype is npusim.int64
    np.testing.assert_array_equal(host(yi), np_conv(xi, wi, np.arange(4)).astype(np.int64))


def test_empty_batch_and_channels(device):
    w = tensor(rand((4, 3, 3, 3)), device)
    assert F.conv2d(tensor(np.zeros((0, 3, 5, 5), np.float32), device), w).shape == (0, 4, 3, 3)
    y = F.conv2d(tensor(np.zeros((2, 0, 5, 5), np.float32), device), tensor(np.zeros((4, 0, 3, 3), np.float32), device),
                 tensor(np.arange(4, dtype=np.float32), device))
    np.testing.assert_array_equal(host(y), np.broadcast_to(np.arange(4.0).reshape(1, 4, 1, 1), (2, 4, 3, 3)))


def test_conv_transpose2d_matches_scatter_reference(device):
    x, w, b = rand((2, 3, 4, 5)), rand((3, 2, 3, 3), 1), rand(2, 2)
    y = F.conv_transpose2d(tensor(x, device), tensor(w, device), tensor(b, device), stride=2, padding=1,
                           output_padding=1)
    ref = np_conv_transpose2d(x, w, 2, 1, 1) + b.reshape(1, 2, 1, 1)
    assert y.shape == ref.shape == (2, 2, 8, 10)
    np.testing.assert_allclose(host(y), ref, rtol=1e-5, atol=1e-5)
    y1 = F.conv_transpose1d(tensor(x[:, :, 0], device), tensor(w[:, :, 0], device), stride=3)
    np.testing.assert_allclose(host(y1), np_conv_transpose2d(x[:, :, :1], w[:, :, :1], 3, 0, 0)[:, :, 0],
                               rtol=1e-5, atol=1e-5)


# --- convolution: gradients ---------------------------------------------------------------------------------------

def f64(shape, device, seed=0):
    return npusim.tensor(rand(shape, seed, np.float64), device=device, requires_grad=True)


def test_conv2d_gradcheck(device):
    x, w, b = f64((2, 4, 5, 6), device), f64((4, 2, 3, 2), device, 1), f64(4, device, 2)
    assert gradcheck(lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=2),
                     (x, w, b))


def test_conv_double_backward(device):
    x, w, b = f64((1, 2, 4, 4), device), f64((2, 2, 2, 2), device, 1), f64(2, device, 2)
    assert gradgradcheck(lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1), (x, w, b))
    wt = f64((2, 3, 2, 2), device, 3)
    assert gradgradcheck(lambda x, w: F.conv_transpose2d(x, w, stride=2, output_padding=1), (x, wt))


def test_conv_transpose_and_conv1d_gradcheck(device):
    x, w, b = f64((2, 4, 3, 3), device), f64((4, 1, 3, 2), device, 1), f64(2, device, 2)
    assert gradcheck(lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1, groups=2),
                     (x, w, b))
    x1, w1 = f64((2, 3, 7), device, 3), f64((2, 3, 3), device, 4)
    assert gradcheck(lambda x, w: F.conv1d(x, w, stride=2, dilation=2), (x1, w1))


def test_gradient_only_for_what_requires_it(device):
    xa = rand((2, 3, 6, 6))
    x = tensor(xa, device)
    w = tensor(rand((4, 3, 3, 3), 1), device, grad=True)
    y = F.conv2d(x, w)
    assert type(y.grad_fn).__name__ == "ConvolutionBackward0"
    y.sum().backward()
    assert x.grad is None and w.grad.shape == (4, 3, 3, 3)
    # d(sum)/dw[o, c, i, j] is the sum of the input values that tap (i, j) sees
    ref = np.array([[[xa[:, c, i:i + 4, j:j + 4].sum() for j in range(3)] for i in range(3)] for c in range(3)])
    np.testing.assert_allclose(host(w.grad), np.broadcast_to(ref, (4, 3, 3, 3)), rtol=1e-5)


# --- pooling ------------------------------------------------------------------------------------------------------

MAX_POOL_CASES = [(2, None, 0, 1, False), (3, 2, 1, 1, False), (3, 2, 1, 1, True), (2, 1, 1, 2, False),
                  (3, 3, 1, 2, True)]


@pytest.mark.parametrize("k,s,p,d,ceil", MAX_POOL_CASES)
def test_max_pool2d_values_and_indices(device, k, s, p, d, ceil):
    x = rand((2, 3, 9, 10))
    out, idx = F.max_pool2d(tensor(x, device), k, s, p, d, ceil, return_indices=True)
    ref, ref_idx = np_max_pool2d(x, k, s or k, p, d, ceil)
    assert out.shape == ref.shape and idx.dtype is npusim.int64 and out.dtype is npusim.float32
    np.testing.assert_array_equal(host(out), ref.astype(np.float32))
    np.testing.assert_array_equal(host(idx), ref_idx)
    np.testing.assert_array_equal(host(F.max_pool2d(tensor(x, device), k, s, p, d, ceil)), host(out))


def test_max_pool2d_ties_nan_and_integers(device):
    x = np.zeros((1, 1, 2, 4), np.float32)
    out, idx = F.max_pool2d(tensor(x, device), 2, return_indices=True)
    np.testing.assert_array_equal(host(idx), [[[[0, 2]]]])   # ties: the first position of the window
    x[0, 0, 1, 0] = np.nan
    out, idx = F.max_pool2d(tensor(x, device), 2, return_indices=True)
    assert np.isnan(host(out)[0, 0, 0, 0]) and host(idx)[0, 0, 0, 0] == 4
    xi = np.arange(2 * 5 * 6).reshape(2, 5, 6) * 7 % 11 - 5
    yi = F.max_pool2d(tensor(xi, device), 2, 2, 1)
    assert yi.dtype is npusim.int64
    np.testing.assert_array_equal(host(yi), np_max_pool2d(xi, 2, 2, 1)[0].astype(np.int64))
    neg = np.full((1, 1, 3, 3), -np.inf, np.float32)
    _, idx = F.max_pool2d(tensor(neg, device), 2, 2, 1, return_indices=True)
    np.testing.assert_array_equal(host(idx), [[[[0, 1], [3, 4]]]])


AVG_POOL_CASES = [(2, None, 0, False, True, None), (3, 2, 1, False, True, None), (3, 2, 1, True, False, None),
                  (3, 2, 1, True, True, None), (2, 1, 1, False, False, 3)]


@pytest.mark.parametrize("k,s,p,ceil,cip,div", AVG_POOL_CASES)
def test_avg_pool2d_values(device, k, s, p, ceil, cip, div):
    x = rand((2, 3, 7, 8))
    y = F.avg_pool2d(tensor(x, device), k, s, p, ceil, cip, div)
    ref = np_avg_pool2d(x, k, s or k, p, ceil, cip, div)
    assert y.shape == ref.shape and y.dtype is npusim.float32
    np.testing.assert_allclose(host(y), ref, rtol=1e-5, atol=1e-6)


def test_avg_pool2d_integers_truncate_and_half(device):
    xi = np.arange(-20, 16).reshape(1, 1, 6, 6)
    yi = F.avg_pool2d(tensor(xi, device), 3, 2, 1)
    assert yi.dtype is npusim.int64
    np.testing.assert_array_equal(host(yi), np.trunc(np_avg_pool2d(xi, 3, 2, 1)).astype(np.int64))
    x = rand((2, 3, 6, 6))
    yh = F.avg_pool2d(tensor(x, device).half(), 2)
    assert yh.dtype is npusim.float16
    np.testing.assert_allclose(host(yh), np_avg_pool2d(x.astype(np.float16), 2, 2, 0), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("size", [(3, 4), (5, 7), (7, 1), (4, None), 2, (1, 1)])
def test_adaptive_avg_pool2d_values(device, size):
    x = rand((2, 3, 7, 10))
    y = F.adaptive_avg_pool2d(tensor(x, device), size)
    oh, ow = (size, size) if isinstance(size, int) else (size[0], size[1] or 10)
    assert y.shape == (2, 3, oh, ow)
    np.testing.assert_allclose(host(y), np_adaptive_avg_pool2d(x, oh, ow), rtol=1e-5, atol=1e-6)
    unbatched = F.adaptive_avg_pool2d(tensor(x[0], device), size)
    np.testing.assert_allclose(host(unbatched), host(y)[0], rtol=1e-6)


def test_pooling_gradcheck(device):
    x = npusim.tensor(np.random.default_rng(0).permutation(2 * 5 * 6).reshape(1, 2, 5, 6).astype(np.float64),
                      device=device, requires_grad=True)   # distinct values: no ties at the maxima
    assert gradcheck(lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), (x,))
    assert gradgradcheck(lambda x: F.max_pool2d(x, 2, 1, dilation=2), (x,))
    y = f64((1, 2, 5, 6), device)
    assert gradcheck(lambda y: F.avg_pool2d(y, 3, 2, 1, ceil_mode=True, count_include_pad=False), (y,))
    assert gradgradcheck(lambda y: F.avg_pool2d(y, 2, divisor_override=3), (y,))
    assert gradcheck(lambda y: F.adaptive_avg_pool2d(y, (3, 4)), (y,))
    assert gradgradcheck(lambda y: F.adaptive_avg_pool2d(y, (2, 4)), (y,))


def test_max_pool_gradient_goes_to_the_maxima(device):
    x = np.array([[[[1, 5, 2, 0], [3, 4, 9, 1]]]], np.float32)
    t = tensor(x, device, grad=True)
    F.max_pool2d(t, 2, 1).sum().backward()   # windows overlap: 5 wins twice, 9 once
    np.testing.assert_array_equal(host(t.grad), [[[[0, 1, 0, 0], [0, 0, 2, 0]]]])


# --- resampling ---------------------------------------------------------------------------------------------------

def test_interpolate_nearest(device):
    x = rand((2, 3, 5, 7))
    t = tensor(x, device)
    y = F.interpolate(t, scale_factor=2)
    np.testing.assert_array_equal(host(y), x.repeat(2, axis=2).repeat(2, axis=3))
    y = F.interpolate(t, size=(3, 11))
    np.testing.assert_array_equal(host(y), np_nearest(x, 3, 11))
    y = F.interpolate(t, scale_factor=(1.7, 0.6))
    assert y.shape == (2, 3, 8, 4)
    np.testing.assert_array_equal(host(y), np_nearest(x, 8, 4, (1.7, 0.6)))
    y1 = F.interpolate(tensor(x[:, :, 0], device), scale_factor=2.5)
    np.testing.assert_array_equal(host(y1), np_nearest(x[:, :, :1], 1, 17, (None, 2.5))[:, :, 0])
    yu = F.interpolate(tensor((x * 10 % 256).astype(np.uint8), device), scale_factor=2)
    assert yu.dtype is npusim.uint8


@pytest.mark.parametrize("align_corners", [False, True])
def test_interpolate_bilinear(device, align_corners):
    x = rand((2, 3, 5, 7))
    for size in [(10, 14), (3, 4), (8, 5), (1, 1)]:
        y = F.interpolate(tensor(x, device), size=size, mode="bilinear", align_corners=align_corners)
        assert y.shape == (2, 3) + size and y.dtype is npusim.float32
        np.testing.assert_allclose(host(y), np_bilinear(x, *size, align_corners), rtol=1e-5, atol=1e-6)
    area = F.interpolate(tensor(x, device), size=(2, 3), mode="area")
    np.testing.assert_allclose(host(area), np_adaptive_avg_pool2d(x, 2, 3), rtol=1e-5)


def test_interpolate_linear_on_one_spatial_dim(device):
    x = rand((2, 3, 7))
    for size, align_corners in [(16, False), (4, True), (7, False)]:
        y = F.interpolate(tensor(x, device), size=size, mode="linear", align_corners=align_corners)
        assert y.shape == (2, 3, size)
        np.testing.assert_allclose(host(y), np_bilinear(x[:, :, None], 1, size, align_corners)[:, :, 0], rtol=1e-5,
                                   atol=1e-6)


def test_interpolate_gradcheck(device):
    x = f64((1, 2, 4, 5), device)
    assert gradcheck(lambda x: F.interpolate(x, scale_factor=1.5), (x,))
    assert gradgradcheck(lambda x: F.interpolate(x, size=(3, 7)), (x,))
    assert gradcheck(lambda x: F.interpolate(x, size=(7, 3), mode="bilinear"), (x,))
    assert gradgradcheck(lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True), (x,))


# --- errors -------------------------------------------------------------------------------------------------------

class Lib:
    """The same calls against npusim or torch (the oracle)."""

    def __init__(self, mod, device="cpu"):
        self.mod, self.device = mod, device
        self.F = mod.nn.functional

    def t(self, shape, dtype="float32"):
        return self.mod.tensor(rand(shape), device=self.device).to(getattr(self.mod, dtype))

    @property
    def aten(self):
        return self.mod.ops.aten


X = (2, 4, 8, 8)
W = (6, 4, 3, 3)

ERRORS = [
    ("conv-channels", lambda L: L.F.conv2d(L.t(X), L.t((6, 3, 3, 3))), RuntimeError,
     "Given groups=1, weight of size [6, 3, 3, 3], expected input[2, 4, 8, 8] to have 3 channels, but got 4 "
     "channels instead"),
    ("conv-groups-divide", lambda L: L.F.conv2d(L.t(X), L.t((5, 2, 3, 3)), groups=2), RuntimeError,
     "Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size [[5, 2, 3, 3]] "
     "instead"),
    ("conv-groups-channels", lambda L: L.F.conv2d(L.t(X), L.t((6, 2, 3, 3)), groups=3), RuntimeError,
     "Given groups=3, weight of size [6, 2, 3, 3], expected input[2, 4, 8, 8] to have 6 channels, but got 4 "
     "channels instead"),
    ("conv-groups-at-least", lambda L: L.F.conv2d(L.t(X), L.t((0, 4, 3, 3))), RuntimeError,
     "Given groups=1, expected weight to be at least 1 at dimension 0, but got weight of size [0, 4, 3, 3] instead"),
    ("conv-bias-size", lambda L: L.F.conv2d(L.t(X), L.t(W), L.t(5)), RuntimeError,
     "Given weight of size [6, 4, 3, 3], expected bias to be 1-dimensional with 6 elements, but got bias of size [5] "
     "instead"),
    ("conv-bias-2d", lambda L: L.F.conv2d(L.t(X), L.t(W), L.t((6, 1))), RuntimeError,
     "Given weight of size [6, 4, 3, 3], expected bias to be 1-dimensional with 6 elements, but got bias of size "
     "[6, 1] instead"),
    ("conv-too-small", lambda L: L.F.conv2d(L.t((2, 4, 2, 2)), L.t(W)), RuntimeError,
     "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size can't be greater than "
     "actual input size"),
    ("conv-too-small-dilated", lambda L: L.F.conv2d(L.t((2, 4, 2, 8)), L.t(W), dilation=2), RuntimeError,
     "Calculated padded input size per channel: (2 x 8). Kernel size: (5 x 5). Kernel size can't be greater than "
     "actual input size"),
    ("conv-stride-zero", lambda L: L.F.conv2d(L.t(X), L.t(W), stride=0), RuntimeError,
     "non-positive stride is not supported"),
    ("conv-padding-negative", lambda L: L.F.conv2d(L.t(X), L.t(W), padding=-1), RuntimeError,
     "negative padding is not supported"),
    ("conv-dilation-zero", lambda L: L.F.conv2d(L.t(X), L.t(W), dilation=(1, 0)), RuntimeError,
     "non-positive dilation is not supported"),
    ("conv-dilation-negative", lambda L: L.F.conv2d(L.t(X), L.t(W), dilation=-1), RuntimeError,
     "dilation should be greater than zero"),
    ("conv-groups-zero", lambda L: L.F.conv2d(L.t(X), L.t(W), groups=0), RuntimeError,
     "non-positive groups is not supported"),
    ("conv-input-2d", lambda L: L.F.conv2d(L.t((4, 8)), L.t(W)), RuntimeError,
     "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [4, 8]"),
    ("conv1d-input-4d", lambda L: L.F.conv1d(L.t(X), L.t((6, 4, 3))), RuntimeError,
     "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: [2, 4, 8, 8]"),
    ("conv-weight-rank", lambda L: L.F.conv2d(L.t(X), L.t((6, 4, 3))), RuntimeError,
     "expected stride to be a single integer value or a list of 1 values to match the convolution dimensions, but "
     "got stride=[1, 1]"),
    ("conv-stride-length", lambda L: L.F.conv2d(L.t(X), L.t(W), stride=(1, 2, 3)), RuntimeError,
     "expected stride to be a single integer value or a list of 2 values to match the convolution dimensions, but "
     "got stride=[1, 2, 3]"),
    ("conv-padding-length", lambda L: L.F.conv2d(L.t(X), L.t(W), padding=(1, 2, 3)), RuntimeError,
     "expected padding to be a single integer value or a list of 2 values to match the convolution dimensions, but "
     "got padding=[1, 2, 3]"),
    ("convolution-rank", lambda L: L.aten.convolution(L.t((4, 8, 8)), L.t(W), None, [1, 1], [0, 0], [1, 1], False,
                                                      [0, 0], 1), RuntimeError,
     "Expected 4-dimensional input for 4-dimensional weight [6, 4, 3, 3], but got 3-dimensional input of size "
     "[4, 8, 8] instead"),
    ("conv-same-strided", lambda L: L.F.conv2d(L.t(X), L.t(W), padding="same", stride=2), RuntimeError,
     "padding='same' is not supported for strided convolutions"),
    ("conv-bad-padding-string", lambda L: L.F.conv2d(L.t(X), L.t(W), padding="foo"), RuntimeError,
     "Invalid padding string: 'foo'"),
    ("conv-weight-dtype", lambda L: L.F.conv2d(L.t(X), L.t(W, "float64")), RuntimeError,
     "Input type (torch.FloatTensor) and weight type (torch.DoubleTensor) should be the same or input should be a "
     "MKLDNN tensor and weight is a dense tensor"),
    ("conv-input-double", lambda L: L.F.conv2d(L.t(X, "float64"), L.t(W)), RuntimeError,
     "expected scalar type Double but found Float"),
    ("conv-bias-dtype", lambda L: L.F.conv2d(L.t(X), L.t(W), L.t(6, "float64")), RuntimeError,
     "Input type (float) and bias type (double) should be the same"),
    ("conv-bool", lambda L: L.F.conv2d(L.t(X, "bool"), L.t(W, "bool")), NotImplementedError,
     "\"slow_conv2d_cpu\" not implemented for 'Bool'"),
    ("conv-weight-not-tensor", lambda L: L.F.conv2d(L.t(X), 3), TypeError,
     "conv2d() received an invalid combination of arguments - got (Tensor, int)"),
    ("conv-float-padding", lambda L: L.F.conv2d(L.t(X), L.t(W), padding=1.5), TypeError,
     "conv2d() received an invalid combination of arguments - got (Tensor, Tensor, padding=float)"),
    ("convT-channels", lambda L: L.F.conv_transpose2d(L.t(X), L.t((5, 3, 3, 3))), RuntimeError,
     "Given transposed=1, weight of size [5, 3, 3, 3], expected input[2, 4, 8, 8] to have 5 channels, but got 4 "
     "channels instead"),
    ("convT-bias", lambda L: L.F.conv_transpose2d(L.t(X), L.t((4, 3, 3, 3)), L.t(4)), RuntimeError,
     "Given transposed=1, weight of size [4, 3, 3, 3], expected bias to be 1-dimensional with 3 elements, but got "
     "bias of size [4] instead"),
    ("convT-output-padding", lambda L: L.F.conv_transpose2d(L.t(X), L.t((4, 3, 3, 3)), stride=2, output_padding=(1, 2)),
     RuntimeError, "output padding must be smaller than either stride or dilation, but got output_padding_height: 1 "
     "output_padding_width: 2 stride_height: 2 stride_width: 2 dilation_height: 1 dilation_width: 1"),
    ("convT1d-output-padding", lambda L: L.F.conv_transpose1d(L.t((2, 4, 8)), L.t((4, 3, 3)), stride=2,
                                                              output_padding=2), RuntimeError,
     "output padding must be smaller than either stride or dilation, but got output_padding_height: 0 "
     "output_padding_width: 2 stride_height: 1 stride_width: 2 dilation_height: 1 dilation_width: 1"),
    ("convT-negative-output-padding", lambda L: L.F.conv_transpose2d(L.t(X), L.t((4, 3, 3, 3)), output_padding=-1),
     RuntimeError, "negative output_padding is not supported"),
    ("convT-input-2d", lambda L: L.F.conv_transpose2d(L.t((8, 8)), L.t((4, 3, 3, 3))), RuntimeError,
     "Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got input of size: [8, 8]"),
    ("max-pad-too-big", lambda L: L.F.max_pool2d(L.t(X), 3, padding=2), RuntimeError,
     "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1"),
    ("max-pad-vs-kernel", lambda L: L.F.max_pool2d(L.t(X), 2, padding=2, dilation=3), RuntimeError,
     "pad should be smaller than or equal to half of kernel size, but got padW = 2, padH = 2, kW = 2, kH = 2"),
    ("max-stride-zero", lambda L: L.F.max_pool2d(L.t(X), 3, stride=0), RuntimeError, "stride should not be zero"),
    ("max-kernel-zero", lambda L: L.F.max_pool2d(L.t(X), 0, stride=1), RuntimeError,
     "kernel size should be greater than zero, but got kH: 0 kW: 0"),
    ("max-kernel-negative", lambda L: L.F.max_pool2d(L.t(X), (2, 0), stride=1), RuntimeError,
     "kernel size should be greater than zero, but got kH: 2 kW: 0"),
    ("max-stride-negative", lambda L: L.F.max_pool2d(L.t(X), 2, stride=-1), RuntimeError,
     "stride should be greater than zero, but got dH: -1 dW: -1"),
    ("max-dilation-zero", lambda L: L.F.max_pool2d(L.t(X), 3, dilation=0), RuntimeError,
     "dilation should be greater than zero, but got dilationH: 0 dilationW: 0"),
    ("max-negative-pad", lambda L: L.F.max_pool2d(L.t(X), 3, padding=-1), RuntimeError,
     "pad must be non-negative, but got pad: -1"),
    ("max-kernel-3", lambda L: L.F.max_pool2d(L.t(X), (3, 3, 3)), RuntimeError,
     "max_pool2d: kernel_size must either be a single int, or a tuple of two ints"),
    ("max-stride-3", lambda L: L.F.max_pool2d(L.t(X), 2, (1, 1, 1)), RuntimeError,
     "max_pool2d: stride must either be omitted, a single int, or a tuple of two ints"),
    ("max-padding-3", lambda L: L.F.max_pool2d(L.t(X), 2, 2, (0, 0, 0)), RuntimeError,
     "max_pool2d: padding must either be a single int, or a tuple of two ints"),
    ("max-dilation-3", lambda L: L.F.max_pool2d(L.t(X), 2, 2, 0, (1, 1, 1)), RuntimeError,
     "max_pool2d: dilation must be either a single int, or a tuple of two ints"),
    ("max-output-too-small", lambda L: L.F.max_pool2d(L.t(X), 9), RuntimeError,
     "Given input size: (4x8x8). Calculated output size: (4x0x0). Output size is too small"),
    ("max-2d-input", lambda L: L.F.max_pool2d(L.t((8, 8)), 2), RuntimeError,
     "non-empty 3D or 4D (batch mode) tensor expected for input"),
    ("max-empty-channels", lambda L: L.F.max_pool2d(L.t((1, 0, 8, 8)), 2), RuntimeError,
     "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[1, 0, 8, 8]"),
    ("max-bool", lambda L: L.F.max_pool2d(L.t(X, "bool"), 2), NotImplementedError,
     "\"max_pool2d\" not implemented for 'Bool'"),
    ("avg-pad-too-big", lambda L: L.F.avg_pool2d(L.t(X), 3, padding=2), RuntimeError,
     "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1"),
    ("avg-output-too-small", lambda L: L.F.avg_pool2d(L.t(X), 9), RuntimeError,
     "Given input size: (4x8x8). Calculated output size: (4x0x0). Output size is too small"),
    ("avg-divisor-zero", lambda L: L.F.avg_pool2d(L.t(X), 2, divisor_override=0), RuntimeError,
     "divisor must be not zero"),
    ("avg-kernel-3", lambda L: L.F.avg_pool2d(L.t(X), (2, 2, 2)), RuntimeError,
     "avg_pool2d: kernel_size must either be a single int, or a tuple of two ints"),
    ("avg-int32", lambda L: L.F.avg_pool2d(L.t(X, "int32"), 2), NotImplementedError,
     "\"avg_pool2d\" not implemented for 'Int'"),
    ("avg-2d-input", lambda L: L.F.avg_pool2d(L.t((8, 8)), 2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    ("avg-stride-zero", lambda L: L.F.avg_pool2d(L.t(X), 2, stride=0), RuntimeError, "stride should not be zero"),
    ("adaptive-negative", lambda L: L.F.adaptive_avg_pool2d(L.t(X), -1), RuntimeError,
     "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {-1, -1}"),
    ("adaptive-three-sizes", lambda L: L.F.adaptive_avg_pool2d(L.t(X), (3, 4, 5)), RuntimeError,
     "adaptive_avg_pool2d: output_size must be 2"),
    ("adaptive-2d-input", lambda L: L.F.adaptive_avg_pool2d(L.t((8, 8)), 2), RuntimeError,
     "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [8, 8]"),
    ("adaptive-long", lambda L: L.F.adaptive_avg_pool2d(L.t(X, "int64"), 2), NotImplementedError,
     "\"adaptive_avg_pool2d\" not implemented for 'Long'"),
    ("adaptive-empty-height", lambda L: L.F.adaptive_avg_pool2d(L.t((2, 4, 0, 8)), 3), RuntimeError,
     "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes "
     "[2, 4, 0, 8] with dimension 2 being empty"),
    ("interp-size-and-scale", lambda L: L.F.interpolate(L.t(X), size=4, scale_factor=2), ValueError,
     "only one of size or scale_factor should be defined"),
    ("interp-neither", lambda L: L.F.interpolate(L.t(X)), ValueError,
     "either size or scale_factor should be defined"),
    ("interp-size-length", lambda L: L.F.interpolate(L.t(X), size=(4, 4, 4)), ValueError,
     "Input and output must have the same number of spatial dimensions, but got input with spatial dimensions of "
     "[8, 8] and output size of (4, 4, 4)."),
    ("interp-scale-length", lambda L: L.F.interpolate(L.t(X), scale_factor=(2, 3, 4)), ValueError,
     "Input and scale_factor must have the same number of spatial dimensions, but got input with spatial dimensions "
     "of [8, 8] and scale_factor of shape (2, 3, 4)."),
    ("interp-float-size", lambda L: L.F.interpolate(L.t(X), size=(4, 4.5)), TypeError,
     "expected size to be one of int or Tuple[int] or Tuple[int, int] or Tuple[int, int, int], but got size with "
     "types [<class 'int'>, <class 'float'>]"),
    ("interp-align-corners-nearest", lambda L: L.F.interpolate(L.t(X), scale_factor=2, align_corners=True), ValueError,
     "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear"),
    ("interp-recompute-with-size", lambda L: L.F.interpolate(L.t(X), size=4, recompute_scale_factor=True), ValueError,
     "recompute_scale_factor is not meaningful with an explicit size."),
    ("interp-antialias-nearest", lambda L: L.F.interpolate(L.t(X), scale_factor=2, antialias=True), ValueError,
     "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D tensor as input"),
    ("interp-bad-mode", lambda L: L.F.interpolate(L.t(X), scale_factor=2, mode="foo"), NotImplementedError,
     "Input Error: Only 3D, 4D and 5D input Tensors supported (got 4D) for the modes: nearest | linear | bilinear | "
     "bicubic | trilinear | lanczos | area | nearest-exact (got foo)"),
    ("interp-bilinear-3d", lambda L: L.F.interpolate(L.t((2, 4, 8)), scale_factor=2, mode="bilinear"),
     NotImplementedError, "Got 3D input, but bilinear mode needs 4D input"),
    ("interp-linear-4d", lambda L: L.F.interpolate(L.t(X), scale_factor=2, mode="linear"),
     NotImplementedError, "Got 4D input, but linear mode needs 3D input"),
    ("interp-negative-scale", lambda L: L.F.interpolate(L.t((2, 3, 5, 7)), scale_factor=-1), RuntimeError,
     "Input and output sizes should be greater than 0, but got input (H: 5, W: 7) output (H: -5, W: -7)"),
    ("interp-zero-size", lambda L: L.F.interpolate(L.t((2, 3, 5, 7)), size=0), RuntimeError,
     "Input and output sizes should be greater than 0, but got input (H: 5, W: 7) output (H: 0, W: 0)"),
    ("interp-empty-height", lambda L: L.F.interpolate(L.t((2, 3, 0, 7)), size=4), RuntimeError,
     "Input and output sizes should be greater than 0, but got input (H: 0, W: 7) output (H: 4, W: 4)"),
    ("interp-long", lambda L: L.F.interpolate(L.t(X, "int64"), scale_factor=2), NotImplementedError,
     "\"upsample_nearest2d_channels_last\" not implemented for 'Long'"),
    ("interp-bilinear-long", lambda L: L.F.interpolate(L.t(X, "int64"), scale_factor=2, mode="bilinear"),
     NotImplementedError, "\"upsample_bilinear2d_channels_last\" not implemented for 'Long'"),
    ("upsample-output-size-length", lambda L: L.aten.upsample_nearest2d(L.t(X), [4]), RuntimeError,
     "It is expected output_size equals to 2, but got size 1"),
    ("upsample-input-rank", lambda L: L.aten.upsample_nearest2d(L.t((3, 5, 7)), [4, 4]), RuntimeError,
     "It is expected input_size equals to 4, but got size 3"),
]


@pytest.mark.parametrize("call,exc,message", [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_bad_input_raises_torchs_error(device, call, exc, message):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc, match=re.escape(message)):
            call(Lib(npusim, device))


@pytest.mark.oracle
@pytest.mark.parametrize("call,exc,message", [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_bad_input_error_matches_torch(torch, call, exc, message):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc) as theirs:
            call(Lib(torch))
    assert str(theirs.value).startswith(message)


def test_unsupported_resampling_says_so():
    x = npusim.tensor(rand(X))
    with pytest.raises(NotImplementedError, match="interpolate\\(mode='bicubic'\\) on 4-D input is not supported"):
        F.interpolate(x, scale_factor=2, mode="bicubic")
    with pytest.raises(NotImplementedError, match="uint8 input is not supported by npusim"):
        F.interpolate(x.to(npusim.uint8), scale_factor=2, mode="bilinear")
    with pytest.raises(NotImplementedError, match="antialias=True"):
        F.interpolate(x, scale_factor=2, mode="bilinear", antialias=True)
    with pytest.raises(RuntimeError, match=re.escape("Given input size per channel: (8 x 8). Calculated output size "
                                                     "per channel: (-2 x -2). Output size is too small")):
        F.conv_transpose2d(x, npusim.ones(4, 3, 3, 3), padding=6)


def test_devices_cannot_be_mixed():
    npu = getattr(npusim, "npu", None)
    if npu is None or not npu.is_available():
        pytest.skip("needs a second device (npu)")
    x = npusim.tensor(rand(X), device="npu")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        F.conv2d(x, npusim.tensor(rand(W)))


# --- oracle: values and gradients on realistic shapes -------------------------------------------------------------

def _run(lib, device, fn, arrays, grad_seed=7):
    """fn(F, *tensors) on lib; returns (output values, dtype name, gradients of the float inputs)."""
    ts = [lib.tensor(a, device=device if lib is npusim else "cpu", requires_grad=a.dtype.kind == "f") for a in arrays]
    out = fn(lib.nn.functional, *ts)
    out = out[0] if isinstance(out, tuple) else out
    g = rand(tuple(out.shape), grad_seed)
    out.backward(lib.tensor(g, device=device if lib is npusim else "cpu").to(out.dtype))
    grads = [None if t.grad is None else t.grad.detach().cpu().float().numpy() for t in ts]
    return out.detach().cpu().float().numpy(), str(out.dtype).split(".")[-1], grads


ORACLE_CASES = [
    ("conv2d-3x3", lambda F, x, w, b: F.conv2d(x, w, b, padding=1), [(8, 16, 16, 16), (32, 16, 3, 3), (32,)]),
    ("conv2d-strided", lambda F, x, w, b: F.conv2d(x, w, b, stride=2, padding=(1, 2), dilation=(2, 1)),
     [(4, 8, 17, 15), (12, 8, 3, 5), (12,)]),
    ("conv2d-depthwise", lambda F, x, w: F.conv2d(x, w, stride=2, padding=1, groups=16),
     [(4, 16, 16, 16), (32, 1, 3, 3)]),
    ("conv2d-same-even", lambda F, x, w: F.conv2d(x, w, padding="same"), [(2, 4, 9, 10), (6, 4, 4, 2)]),
    ("conv1d", lambda F, x, w, b: F.conv1d(x, w, b, stride=3, padding=2, groups=2), [(4, 6, 50), (8, 3, 5), (8,)]),
    ("conv_transpose2d", lambda F, x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1,
                                                                groups=2, dilation=2),
     [(2, 8, 7, 6), (8, 3, 3, 3), (6,)]),
    ("max_pool2d", lambda F, x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), [(4, 8, 17, 16)]),
    ("max_pool2d-dilated", lambda F, x: F.max_pool2d(x, (2, 3), (1, 2), (1, 0), (2, 1)), [(2, 3, 12, 13)]),
    ("avg_pool2d", lambda F, x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), [(4, 8, 17, 16)]),
    ("avg_pool2d-divisor", lambda F, x: F.avg_pool2d(x, (2, 4), (3, 1), (1, 2), divisor_override=5), [(2, 3, 11, 9)]),
    ("adaptive_avg_pool2d", lambda F, x: F.adaptive_avg_pool2d(x, (5, 7)), [(4, 8, 17, 16)]),
    ("adaptive_avg_pool2d-global", lambda F, x: F.adaptive_avg_pool2d(x, 1), [(4, 8, 7, 6)]),
    ("nearest-scale", lambda F, x: F.interpolate(x, scale_factor=(1.7, 2.3)), [(2, 3, 11, 9)]),
    ("nearest-down", lambda F, x: F.interpolate(x, size=(5, 4)), [(2, 3, 11, 9)]),
    ("bilinear", lambda F, x: F.interpolate(x, scale_factor=2.5, mode="bilinear"), [(2, 3, 11, 9)]),
    ("bilinear-align", lambda F, x: F.interpolate(x, size=(7, 20), mode="bilinear", align_corners=True),
     [(2, 3, 11, 9)]),
    ("area", lambda F, x: F.interpolate(x, scale_factor=0.5, mode="area"), [(2, 3, 11, 9)]),
    ("linear", lambda F, x: F.interpolate(x, scale_factor=2.3, mode="linear"), [(2, 3, 11)]),
    ("nearest-1d", lambda F, x: F.interpolate(x, size=4), [(2, 3, 11)]),
]


@pytest.mark.oracle
@pytest.mark.parametrize("fn,shapes", [c[1:] for c in ORACLE_CASES], ids=[c[0] for c in ORACLE_CASES])
def test_values_and_gradients_match_torch(torch, device, fn, shapes):
    arrays = [rand(s, i) for i, s in enumerate(shapes)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = _run(npusim, device, fn, arrays)
        theirs = _run(torch, "cpu", fn, arrays)
    assert ours[0].shape == theirs[0].shape and ours[1] == theirs[1]
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-4, atol=1e-4)
    for a, b in zip(ours[2], theirs[2]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.oracle
def test_max_pool_indices_and_half_precision_match_torch(torch, device):
    x = rand((4, 8, 17, 16))
    ours = F.max_pool2d(tensor(x, device), 3, 2, 1, 2, True, return_indices=True)
    theirs = torch.nn.functional.max_pool2d(torch.tensor(x), 3, 2, 1, 2, True, return_indices=True)
    np.testing.assert_array_equal(host(ours[1]), theirs[1].numpy())
    for name, fn in [("conv", lambda F, x, w: F.conv2d(x, w, padding=1)),
                     ("bilinear", lambda F, x, w: F.interpolate(x, scale_factor=2, mode="bilinear")),
                     ("avg", lambda F, x, w: F.avg_pool2d(x, 3, 1, 1))]:
        xh, wh = rand((2, 4, 8, 8)).astype(np.float16), rand((3, 4, 3, 3), 1).astype(np.float16)
        with torch.no_grad():
            a = fn(F, tensor(xh, device), tensor(wh, device))
            b = fn(torch.nn.functional, torch.tensor(xh), torch.tensor(wh))
        assert a.dtype is npusim.float16 and b.dtype == torch.float16, name
        np.testing.assert_allclose(host(a).astype(np.float32), b.float().numpy(), rtol=1e-2, atol=1e-2)
