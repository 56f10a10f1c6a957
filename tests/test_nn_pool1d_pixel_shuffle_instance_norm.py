"""1-d pooling, pixel shuffle and instance norm: ``MaxPool1d``, ``AvgPool1d``, ``AdaptiveAvgPool1d``,
``PixelShuffle``, ``PixelUnshuffle``, ``InstanceNorm1d``, ``InstanceNorm2d`` and their functional forms.

Values against NumPy references, gradients against finite differences (gradcheck in
float64), output shapes, reprs and running statistics; oracle tests compare values,
gradients, running statistics, reprs and every bad input's error with PyTorch.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import npusim
import npusim.nn as nn
import npusim.nn.functional as F
from conftest import host
from npusim.autograd import gradcheck


def rand(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def tensor(a, device, grad=False):
    return npusim.tensor(a, device=device, requires_grad=grad)


def f64(shape, device, seed=0):
    return npusim.tensor(rand(shape, seed, np.float64), device=device, requires_grad=True)


# --- NumPy references ---------------------------------------------------------------------------------------------

def np_pool1d(x, k, s, p, d=1, ceil=False, reduce="max", count_include_pad=True):
    """Window loop over the last dim; padded positions are -inf for max and 0 for mean."""
    n = x.shape[-1]
    out_len = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (out_len - 1) * s >= n + p:
        out_len -= 1
    out = np.empty(x.shape[:-1] + (out_len,), np.float64)
    for o in range(out_len):
        start = o * s - p
        taps = [start + j * d for j in range(k)]
        inside = [t for t in taps if 0 <= t < n]
        if reduce == "max":
            out[..., o] = x[..., inside].max(-1)
        else:
            # the divisor counts the padding, but never window positions past the padded end
            padded_end = min(start + k, n + p)
            divisor = padded_end - start if count_include_pad else len(inside)
            out[..., o] = x[..., inside].sum(-1) / divisor
    return out


def np_adaptive_avg1d(x, size):
    n = x.shape[-1]
    return np.stack([x[..., (i * n) // size:-((-(i + 1) * n) // size)].mean(-1) for i in range(size)], -1)


def np_pixel_shuffle(x, r):
    *batch, c, h, w = x.shape
    out = np.empty((*batch, c // (r * r), h * r, w * r), x.dtype)
    for oc in range(c // (r * r)):
        for i in range(r):
            for j in range(r):
                out[..., oc, i::r, j::r] = x[..., oc * r * r + i * r + j, :, :]
    return out


def np_instance_norm(x, eps=1e-5):
    axes = tuple(range(2, x.ndim))
    x = x.astype(np.float64)
    return (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)


# --- values -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("k,s,p,d,ceil", [(3, None, 0, 1, False), (3, 2, 1, 1, True), (2, 1, 1, 3, False),
                                          (4, 3, 2, 1, True), (1, 1, 0, 1, False)])
def test_max_pool1d_values_and_indices(device, k, s, p, d, ceil):
    x = rand((2, 3, 11))
    out, idx = F.max_pool1d(tensor(x, device), k, s, p, d, ceil, return_indices=True)
    ref = np_pool1d(x, k, s or k, p, d, ceil)
    np.testing.assert_allclose(host(out), ref, rtol=1e-6)
    assert idx.dtype is npusim.int64 and idx.shape == out.shape
    np.testing.assert_array_equal(np.take_along_axis(x, host(idx), -1), host(out))
    plain = F.max_pool1d(tensor(x, device), k, s, p, d, ceil)
    np.testing.assert_array_equal(host(plain), host(out))


@pytest.mark.parametrize("k,s,p,ceil,cip", [(3, None, 0, False, True), (3, 2, 1, True, True), (3, 2, 1, True, False),
                                            (4, 3, 2, False, False), (2, 3, 1, True, True)])
def test_avg_pool1d_values(device, k, s, p, ceil, cip):
    x = rand((2, 3, 10))
    out = F.avg_pool1d(tensor(x, device), k, s, p, ceil, cip)
    np.testing.assert_allclose(host(out), np_pool1d(x, k, s or k, p, ceil=ceil, reduce="mean",
                                                    count_include_pad=cip), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("size", [1, 3, 4, 7, 10])
def test_adaptive_avg_pool1d_values(device, size):
    x = rand((2, 3, 7))
    out = F.adaptive_avg_pool1d(tensor(x, device), size)
    np.testing.assert_allclose(host(out), np_adaptive_avg1d(x, size), rtol=1e-5, atol=1e-6)


def test_pooling_1d_unbatched_equals_batched(device):
    x = rand((3, 9))
    xb = tensor(x[None], device)
    for pool in (lambda t: F.max_pool1d(t, 3, 2, 1), lambda t: F.avg_pool1d(t, 3, 2, 1),
                 lambda t: F.adaptive_avg_pool1d(t, 4)):
        assert pool(tensor(x, device)).shape == pool(xb).shape[1:]
        np.testing.assert_array_equal(host(pool(tensor(x, device))), host(pool(xb))[0])


def test_max_pool1d_integer_input_with_indices(device):
    x = np.array([[3, 1, 4, 1, 5, 9, 2, 6]], np.int64)
    out, idx = F.max_pool1d(tensor(x, device), 2, return_indices=True)
    np.testing.assert_array_equal(host(out), [[3, 4, 9, 6]])
    np.testing.assert_array_equal(host(idx), [[0, 2, 5, 7]])


@pytest.mark.parametrize("shape,r", [((2, 8, 3, 5), 2), ((9, 2, 4), 3), ((2, 3, 4, 2, 3), 2), ((1, 5, 3, 3), 1)])
def test_pixel_shuffle_values_and_inverse(device, shape, r):
    x = rand(shape)
    y = F.pixel_shuffle(tensor(x, device), r)
    np.testing.assert_array_equal(host(y), np_pixel_shuffle(x, r))
    back = F.pixel_unshuffle(y, r)
    assert back.shape == x.shape
    np.testing.assert_array_equal(host(back), x)


def test_pixel_shuffle_integer_and_empty(device):
    x = np.arange(16, dtype=np.int64).reshape(1, 4, 2, 2)
    np.testing.assert_array_equal(host(F.pixel_shuffle(tensor(x, device), 2))[0, 0],
                                  [[0, 4, 1, 5], [8, 12, 9, 13], [2, 6, 3, 7], [10, 14, 11, 15]])
    assert F.pixel_shuffle(npusim.zeros(0, 4, 2, 2, device=device), 2).shape == (0, 1, 4, 4)
    assert F.pixel_unshuffle(npusim.zeros(0, 1, 4, 4, device=device), 2).shape == (0, 4, 2, 2)


def test_instance_norm_values(device):
    x, w, b = rand((3, 4, 5, 6)), rand(4, 1), rand(4, 2)
    y = F.instance_norm(tensor(x, device), weight=tensor(w, device), bias=tensor(b, device), eps=1e-3)
    ref = np_instance_norm(x, 1e-3) * w[:, None, None] + b[:, None, None]
    assert y.shape == x.shape and y.dtype is npusim.float32
    np.testing.assert_allclose(host(y), ref, rtol=1e-5, atol=1e-5)


def test_instance_norm_running_statistics(device):
    x = rand((3, 2, 7)) * 2 + 1
    rm, rv = npusim.zeros(2, device=device), npusim.ones(2, device=device)
    F.instance_norm(tensor(x, device), rm, rv, momentum=0.25)
    # each sample's statistics, averaged over the samples (the variance unbiased)
    np.testing.assert_allclose(host(rm), 0.25 * x.mean(-1).mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(host(rv), 0.75 + 0.25 * x.var(-1, ddof=1).mean(0), rtol=1e-5)
    # use_input_stats=False normalises with the running statistics and leaves them alone
    before = host(rm).copy(), host(rv).copy()
    y = F.instance_norm(tensor(x, device), rm, rv, use_input_stats=False, eps=0.0)
    np.testing.assert_allclose(host(y), (x - before[0][:, None]) / np.sqrt(before[1][:, None]), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_array_equal(host(rm), before[0])
    np.testing.assert_array_equal(host(rv), before[1])


def test_instance_norm_module_modes(device):
    x = rand((2, 3, 8)) * 3 + 2
    m = nn.InstanceNorm1d(3, track_running_stats=True, momentum=0.5).to(device)
    m(tensor(x, device))
    np.testing.assert_allclose(host(m.running_mean), 0.5 * x.mean(-1).mean(0), rtol=1e-5, atol=1e-6)
    assert int(m.num_batches_tracked.item()) == 0    # instance norm never counts batches
    m.eval()
    y = m(tensor(x, device))
    expect = (x - host(m.running_mean)[:, None]) / np.sqrt(host(m.running_var)[:, None] + 1e-5)
    np.testing.assert_allclose(host(y), expect, rtol=1e-5, atol=1e-5)
    # without running statistics, eval mode still normalises by the input's own statistics
    untracked = nn.InstanceNorm1d(3).to(device).eval()
    np.testing.assert_allclose(host(untracked(tensor(x, device))), np_instance_norm(x), rtol=1e-5, atol=1e-5)
    # momentum None keeps the running statistics where they are
    frozen = nn.InstanceNorm1d(3, track_running_stats=True, momentum=None).to(device)
    frozen(tensor(x, device))
    np.testing.assert_array_equal(host(frozen.running_mean), np.zeros(3))
    np.testing.assert_array_equal(host(frozen.running_var), np.ones(3))


def test_instance_norm_unbatched_and_affine(device):
    x = rand((3, 4, 5))
    m = nn.InstanceNorm2d(3, affine=True).to(device)
    with npusim.no_grad():
        m.weight.copy_(npusim.tensor([1.0, 2.0, 3.0]))
        m.bias.copy_(npusim.tensor([0.5, 0.0, -0.5]))
    y = m(tensor(x, device))
    assert y.shape == x.shape
    ref = np_instance_norm(x[None])[0] * np.array([1, 2, 3])[:, None, None] + np.array([0.5, 0, -0.5])[:, None, None]
    np.testing.assert_allclose(host(y), ref, rtol=1e-5, atol=1e-5)
    assert [name for name, _ in m.named_parameters()] == ["weight", "bias"]
    assert list(nn.InstanceNorm2d(3).state_dict()) == []
    assert list(nn.InstanceNorm2d(3, track_running_stats=True).state_dict()) == [
        "running_mean", "running_var", "num_batches_tracked"]


# --- gradients ----------------------------------------------------------------------------------------------------

def test_pooling_1d_gradcheck(device):
    x = f64((2, 3, 9), device)
    assert gradcheck(lambda x: F.max_pool1d(x, 3, 2, 1, 2, True), (x,))
    assert gradcheck(lambda x: F.max_pool1d(x, 2, return_indices=True)[0], (x,))
    assert gradcheck(lambda x: F.avg_pool1d(x, 3, 2, 1, True, False), (x,))
    assert gradcheck(lambda x: F.avg_pool1d(x, 4, 3, 2), (x,))
    assert gradcheck(lambda x: F.adaptive_avg_pool1d(x, 4), (x,))
    assert gradcheck(lambda x: F.adaptive_avg_pool1d(x[0], 1), (x,))


def test_pixel_shuffle_gradcheck(device):
    x = f64((2, 8, 3, 2), device)
    assert gradcheck(lambda x: F.pixel_shuffle(x, 2), (x,))
    assert gradcheck(lambda x: F.pixel_unshuffle(x, 2), (f64((2, 3, 4, 6), device, 1),))


def test_instance_norm_gradcheck(device):
    x, w, b = f64((2, 3, 4, 2), device), f64(3, device, 1), f64(3, device, 2)
    assert gradcheck(lambda x, w, b: F.instance_norm(x, weight=w, bias=b), (x, w, b))
    rm, rv = npusim.zeros(3, dtype=npusim.float64, device=device), npusim.ones(3, dtype=npusim.float64, device=device)
    assert gradcheck(lambda x, w, b: F.instance_norm(x, rm, rv, w, b, use_input_stats=False), (x, w, b))


def test_max_pool1d_gradient_goes_to_the_maxima(device):
    x = tensor(np.array([[1.0, 5.0, 2.0, 3.0, 0.0, 4.0]], np.float32), device, grad=True)
    F.max_pool1d(x, 3, 1).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [[0, 2, 0, 1, 0, 1]])


# --- output shapes ------------------------------------------------------------------------------------------------

# (layer, input shape, output shape), the output shapes as torch gives them
SHAPES = [
    (lambda: nn.MaxPool1d(3), (2, 3, 8), (2, 3, 2)),
    (lambda: nn.MaxPool1d(3, 2, 1, ceil_mode=True), (3, 8), (3, 5)),
    (lambda: nn.MaxPool1d(2, 1, 1, dilation=2), (1, 2, 7), (1, 2, 7)),
    (lambda: nn.MaxPool1d(4, 3, 2, ceil_mode=True), (2, 1, 10), (2, 1, 4)),   # a 5th window would start in padding
    (lambda: nn.MaxPool1d(3), (0, 3, 8), (0, 3, 2)),
    (lambda: nn.AvgPool1d(3), (2, 3, 8), (2, 3, 2)),
    (lambda: nn.AvgPool1d(3, 2, 1, ceil_mode=True), (3, 8), (3, 5)),
    (lambda: nn.AvgPool1d(2, 3, 1, ceil_mode=True), (1, 1, 10), (1, 1, 4)),
    (lambda: nn.AvgPool1d((5,), (1,), (2,)), (2, 3, 8), (2, 3, 8)),
    (lambda: nn.AdaptiveAvgPool1d(5), (2, 3, 8), (2, 3, 5)),
    (lambda: nn.AdaptiveAvgPool1d((12,)), (3, 8), (3, 12)),
    (lambda: nn.AdaptiveAvgPool1d(0), (2, 3, 8), (2, 3, 0)),
    (lambda: nn.PixelShuffle(3), (2, 18, 4, 5), (2, 2, 12, 15)),
    (lambda: nn.PixelShuffle(2), (4, 3, 5), (1, 6, 10)),
    (lambda: nn.PixelUnshuffle(3), (2, 1, 6, 9), (2, 9, 2, 3)),
    (lambda: nn.PixelUnshuffle(2), (2, 1, 3, 4, 6), (2, 1, 12, 2, 3)),
    (lambda: nn.InstanceNorm1d(3), (3, 7), (3, 7)),
    (lambda: nn.InstanceNorm2d(3), (0, 3, 4, 4), (0, 3, 4, 4)),
]


@pytest.mark.parametrize("build,shape,expected", SHAPES)
def test_output_shapes(device, build, shape, expected):
    out = build().to(device)(npusim.randn(*shape, device=device))
    assert tuple(out.shape) == expected and out.device.type == device


def test_max_pool1d_module_returns_indices(device):
    out, idx = nn.MaxPool1d(2, return_indices=True).to(device)(npusim.randn(2, 3, 6, device=device))
    assert out.shape == idx.shape == (2, 3, 3) and idx.dtype is npusim.int64


# --- reprs and defaults -------------------------------------------------------------------------------------------

REPRS = [
    ("MaxPool1d(3)", "MaxPool1d(kernel_size=3, stride=3, padding=0, dilation=1, ceil_mode=False)"),
    ("MaxPool1d((3,), 2, 1, 2, True, True)", "MaxPool1d(kernel_size=(3,), stride=2, padding=1, dilation=2, "
                                             "ceil_mode=True)"),
    ("AvgPool1d(3)", "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"),
    ("AvgPool1d(3, 2, 1, True, False)", "AvgPool1d(kernel_size=(3,), stride=(2,), padding=(1,))"),
    ("AdaptiveAvgPool1d(5)", "AdaptiveAvgPool1d(output_size=5)"),
    ("AdaptiveAvgPool1d((5,))", "AdaptiveAvgPool1d(output_size=(5,))"),
    ("PixelShuffle(2)", "PixelShuffle(upscale_factor=2)"),
    ("PixelUnshuffle(3)", "PixelUnshuffle(downscale_factor=3)"),
    ("InstanceNorm1d(3)", "InstanceNorm1d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, "
                          "track_running_stats=False)"),
    ("InstanceNorm2d(4, affine=True, track_running_stats=True, momentum=None)",
     "InstanceNorm2d(4, eps=1e-05, momentum=None, affine=True, bias=True, track_running_stats=True)"),
    ("InstanceNorm2d(4, 1e-3, affine=True, bias=False)",
     "InstanceNorm2d(4, eps=0.001, momentum=0.1, affine=True, bias=False, track_running_stats=False)"),
]


@pytest.mark.parametrize("ctor,expected", REPRS, ids=[r[0] for r in REPRS])
def test_repr(ctor, expected):
    assert repr(eval("nn." + ctor)) == expected


@pytest.mark.oracle
@pytest.mark.parametrize("ctor,expected", REPRS, ids=[r[0] for r in REPRS])
def test_repr_matches_torch(torch, ctor, expected):
    assert repr(eval("torch.nn." + ctor, {"torch": torch})) == expected


def test_module_defaults():
    m = nn.AvgPool1d(3)
    assert (m.ceil_mode, m.count_include_pad) == (False, True)
    p = nn.MaxPool1d(3)
    assert (p.stride, p.padding, p.dilation, p.return_indices, p.ceil_mode) == (3, 0, 1, False, False)
    n = nn.InstanceNorm1d(3)
    assert (n.eps, n.momentum, n.affine, n.track_running_stats) == (1e-5, 0.1, False, False)
    assert n.weight is None and n.bias is None and n.running_mean is None
    for name in ("MaxPool1d", "AvgPool1d", "AdaptiveAvgPool1d", "PixelShuffle", "PixelUnshuffle", "InstanceNorm1d",
                 "InstanceNorm2d"):
        assert name in nn.modules.__all__ and getattr(nn, name) is getattr(nn.modules, name)
    for name in ("max_pool1d", "avg_pool1d", "adaptive_avg_pool1d", "pixel_shuffle", "pixel_unshuffle",
                 "instance_norm"):
        assert name in F.__all__


def test_instance_norm_old_checkpoint_running_stats_are_reported():
    m = nn.InstanceNorm1d(3)
    with pytest.raises(RuntimeError, match=re.escape('Unexpected running stats buffer(s) "running_mean" and '
                                                     '"running_var" for InstanceNorm1d with '
                                                     'track_running_stats=False.')):
        m.load_state_dict({"running_mean": npusim.zeros(3), "running_var": npusim.ones(3)})


# --- errors -------------------------------------------------------------------------------------------------------

class Lib:
    """The same calls against npusim or torch (the oracle)."""

    def __init__(self, mod, device="cpu"):
        self.mod, self.device = mod, device
        self.F, self.nn = mod.nn.functional, mod.nn

    def t(self, shape, dtype="float32", grad=False):
        t = self.mod.tensor(rand(shape), device=self.device).to(getattr(self.mod, dtype))
        return t.requires_grad_() if grad else t

    def zeros(self, *shape):
        return self.mod.zeros(*shape, device=self.device)

    def ones(self, *shape, grad=False):
        return self.mod.ones(*shape, device=self.device, requires_grad=grad)


X = (2, 3, 8)

ERRORS = [
    ("mp-4d", lambda L: L.F.max_pool1d(L.t((2, 3, 4, 5)), 2), RuntimeError,
     "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, but "
     "got:[2, 3, 4, 5]"),
    ("mp-empty-length", lambda L: L.F.max_pool1d(L.t((2, 3, 0)), 2), RuntimeError,
     "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, but got:[2, 3, 0]"),
    ("mp-kernel-zero", lambda L: L.F.max_pool1d(L.t(X), 0), RuntimeError,
     "max_pool1d() kernel_size must be greater than zero, but got 0"),
    ("mp-kernel-zero-grad", lambda L: L.F.max_pool1d(L.t(X, grad=True), 0), RuntimeError,
     "max_pool1d() kernel_size must be greater than zero, but got 0"),
    ("mp-stride-zero", lambda L: L.F.max_pool1d(L.t(X), 2, 0), RuntimeError,
     "max_pool1d() stride must be greater than zero, but got 0"),
    ("mp-padding-negative", lambda L: L.F.max_pool1d(L.t(X), 2, 1, -1), RuntimeError,
     "max_pool1d() padding must be non-negative, but got -1"),
    ("mp-padding-too-big", lambda L: L.F.max_pool1d(L.t(X), 3, 1, 2, dilation=2), RuntimeError,
     "max_pool1d() padding should be at most half of kernel size, but got padding=2 and kernel_size=3"),
    ("mp-dilation-zero", lambda L: L.F.max_pool1d(L.t(X), 2, 1, 0, 0), RuntimeError,
     "max_pool1d() dilation must be greater than zero, but got 0"),
    ("mp-output-empty", lambda L: L.F.max_pool1d(L.t(X), 9), RuntimeError,
     "max_pool1d() Invalid computed output size: 0"),
    ("mp-kernel-two", lambda L: L.F.max_pool1d(L.t(X), (2, 2)), RuntimeError,
     "max_pool1d() kernel_size must be an int, list of ints or tuple of ints of size 1 but got size 2"),
    ("mp-stride-two", lambda L: L.F.max_pool1d(L.t(X), 2, (1, 1)), RuntimeError,
     "max_pool1d() stride must be None, an int, list of ints, or tuple of ints of size 1 but got size 2"),
    ("mp-padding-two", lambda L: L.F.max_pool1d(L.t(X), 2, 1, (1, 1)), RuntimeError,
     "max_pool1d() padding must be an int, list of ints, or tuple of ints of size 1 but got size 2"),
    ("mp-dilation-two", lambda L: L.F.max_pool1d(L.t(X), 2, 1, 0, (1, 1)), RuntimeError,
     "max_pool1d() dilation must be an int, list of ints or tuple of ints of size 1 but got size 2"),
    ("mp-kernel-float", lambda L: L.F.max_pool1d(L.t(X), 2.0), TypeError,
     "max_pool1d(): argument 'kernel_size' (position 2) must be tuple of ints, not float"),
    ("mp-kernel-none-element", lambda L: L.F.max_pool1d(L.t(X), (None,)), TypeError,
     "max_pool1d(): argument 'kernel_size' (position 2) must be tuple of ints, but found element of type NoneType at "
     "pos 0"),
    ("mp-dilation-float", lambda L: L.F.max_pool1d(L.t(X), 2, 1, 0, 1.0), TypeError,
     "max_pool1d(): argument 'dilation' (position 5) must be tuple of ints, not float"),
    ("mp-ceil-mode-str", lambda L: L.F.max_pool1d(L.t(X), 2, 1, 0, 1, "a"), TypeError,
     "max_pool1d(): argument 'ceil_mode' (position 6) must be bool, not str"),
    ("mp-not-tensor", lambda L: L.F.max_pool1d([1.0, 2.0], 2), TypeError,
     "max_pool1d(): argument 'input' (position 1) must be Tensor, not list"),
    ("mpi-4d", lambda L: L.F.max_pool1d(L.t((2, 3, 4, 5)), 2, return_indices=True), RuntimeError,
     "Expected 2 to 3 dimensions, but got 4-dimensional tensor for argument #1 'self' (while checking arguments for "
     "max_pool1d)"),
    ("mpi-1d", lambda L: L.F.max_pool1d(L.t(5), 2, return_indices=True), RuntimeError,
     "Expected 2 to 3 dimensions, but got 1-dimensional tensor for argument #1 'self' (while checking arguments for "
     "max_pool1d)"),
    ("mpi-kernel-two", lambda L: L.F.max_pool1d(L.t(X), (2, 2), return_indices=True), RuntimeError,
     "max_pool1d() argument 'kernel_size' should contain one int (got 2)"),
    ("mpi-stride-two", lambda L: L.F.max_pool1d(L.t(X), 2, (1, 1), return_indices=True), RuntimeError,
     "max_pool1d() argument 'stride' should contain one int (got 2)"),
    ("mpi-dilation-empty", lambda L: L.F.max_pool1d(L.t(X), 2, 1, 0, (), return_indices=True), RuntimeError,
     "max_pool1d() argument 'dilation' should contain one int (got 0)"),
    ("mpi-kernel-zero", lambda L: L.F.max_pool1d(L.t(X), 0, return_indices=True), RuntimeError,
     "stride should not be zero"),
    ("mpi-padding-too-big", lambda L: L.F.max_pool1d(L.t(X), 2, 1, 2, return_indices=True), RuntimeError,
     "pad should be at most half of effective kernel size, but got pad=2, kernel_size=2 and dilation=1"),
    ("mpi-padding-vs-kernel", lambda L: L.F.max_pool1d(L.t(X), 3, 1, 2, dilation=2, return_indices=True),
     RuntimeError, "pad should be smaller than or equal to half of kernel size, but got padW = 2, padH = 0, kW = 3, "
                   "kH = 1"),
    ("mpi-dilation-zero", lambda L: L.F.max_pool1d(L.t(X), 2, 1, 0, 0, return_indices=True), RuntimeError,
     "dilation should be greater than zero, but got dilationH: 1 dilationW: 0"),
    ("mpi-output-empty", lambda L: L.F.max_pool1d(L.t(X), 9, return_indices=True), RuntimeError,
     "Given input size: (3x1x8). Calculated output size: (3x1x0). Output size is too small"),
    ("mpi-stride-float", lambda L: L.F.max_pool1d(L.t(X), 2, 1.5, return_indices=True), TypeError,
     "max_pool1d_with_indices(): argument 'stride' (position 3) must be tuple of ints, not float"),
    ("ap-4d", lambda L: L.F.avg_pool1d(L.t((2, 3, 4, 5)), 2), RuntimeError,
     "Expected 2 to 3 dimensions, but got 4-dimensional tensor for argument #1 'self' (while checking arguments for "
     "avg_pool1d)"),
    ("ap-kernel-zero", lambda L: L.F.avg_pool1d(L.t(X), 0), RuntimeError, "stride should not be zero"),
    ("ap-padding-negative", lambda L: L.F.avg_pool1d(L.t(X), 2, 1, -1), RuntimeError,
     "pad must be non-negative, but got pad: -1"),
    ("ap-padding-too-big", lambda L: L.F.avg_pool1d(L.t(X), 2, 1, 2), RuntimeError,
     "pad should be at most half of effective kernel size, but got pad=2, kernel_size=2 and dilation=1"),
    ("ap-output-empty", lambda L: L.F.avg_pool1d(L.t(X), 9), RuntimeError,
     "Given input size: (3x1x8). Calculated output size: (3x1x0). Output size is too small"),
    ("ap-empty-channels", lambda L: L.F.avg_pool1d(L.t((2, 0, 5)), 2), RuntimeError,
     "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[2, 0, 1, 5]"),
    ("ap-kernel-two", lambda L: L.F.avg_pool1d(L.t(X), (2, 2)), RuntimeError,
     "avg_pool1d() argument 'kernel_size' should contain one int (got 2)"),
    ("ap-padding-two", lambda L: L.F.avg_pool1d(L.t(X), 2, 2, (0, 0)), RuntimeError,
     "avg_pool1d() argument 'padding' should contain one int (got 2)"),
    ("ap-kernel-bool", lambda L: L.F.avg_pool1d(L.t(X), True), TypeError,
     "avg_pool1d(): argument 'kernel_size' (position 2) must be tuple of ints, not bool"),
    ("ap-count-include-pad-none", lambda L: L.F.avg_pool1d(L.t(X), 2, 1, 0, False, None), TypeError,
     "avg_pool1d(): argument 'count_include_pad' (position 6) must be bool, not NoneType"),
    ("ap-divisor-override", lambda L: L.F.avg_pool1d(L.t(X), 2, divisor_override=3), TypeError,
     "avg_pool1d() got an unexpected keyword argument 'divisor_override'"),
    ("ap-int32", lambda L: L.F.avg_pool1d(L.t(X, "int32"), 2), NotImplementedError,
     "\"avg_pool2d\" not implemented for 'Int'"),
    ("aap-4d", lambda L: L.F.adaptive_avg_pool1d(L.t((2, 3, 4, 5)), 2), RuntimeError,
     "Expected 2 to 3 dimensions, but got 4-dimensional tensor for argument #1 'self' (while checking arguments for "
     "adaptive_avg_pool1d)"),
    ("aap-two-sizes", lambda L: L.F.adaptive_avg_pool1d(L.t(X), (2, 2)), RuntimeError,
     "adaptive_avg_pool1d() argument 'output_size' should contain one int (got 2)"),
    ("aap-negative", lambda L: L.F.adaptive_avg_pool1d(L.t(X), -1), RuntimeError,
     "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {1, -1}"),
    ("aap-none", lambda L: L.F.adaptive_avg_pool1d(L.t(X), None), TypeError,
     "adaptive_avg_pool1d(): argument 'output_size' (position 2) must be tuple of ints, not NoneType"),
    ("aap-empty-length", lambda L: L.F.adaptive_avg_pool1d(L.t((2, 3, 0)), 2), RuntimeError,
     "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes "
     "[2, 3, 1, 0] with dimension 3 being empty"),
    ("aap-long", lambda L: L.F.adaptive_avg_pool1d(L.t(X, "int64"), 2), NotImplementedError,
     "\"adaptive_avg_pool2d\" not implemented for 'Long'"),
    ("aap-module-none", lambda L: L.nn.AdaptiveAvgPool1d(None)(L.t(X)), TypeError,
     "adaptive_avg_pool1d(): argument 'output_size' (position 2) must be tuple of ints, not NoneType"),
    ("ps-2d", lambda L: L.F.pixel_shuffle(L.t((4, 4)), 2), RuntimeError,
     "pixel_shuffle expects input to have at least 3 dimensions, but got input with 2 dimension(s)"),
    ("ps-zero", lambda L: L.F.pixel_shuffle(L.t((4, 3, 5)), 0), RuntimeError,
     "pixel_shuffle expects a positive upscale_factor, but got 0"),
    ("ps-not-divisible", lambda L: L.F.pixel_shuffle(L.t((1, 6, 3, 5)), 2), RuntimeError,
     "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but "
     "input.size(-3)=6 is not divisible by 4"),
    ("ps-float", lambda L: L.F.pixel_shuffle(L.t((1, 4, 3, 5)), 2.0), TypeError,
     "pixel_shuffle(): argument 'upscale_factor' (position 2) must be int, not float"),
    ("ps-not-tensor", lambda L: L.F.pixel_shuffle([1.0], 2), TypeError,
     "pixel_shuffle(): argument 'input' (position 1) must be Tensor, not list"),
    ("ps-module-3d-channels", lambda L: L.nn.PixelShuffle(3)(L.t((8, 3, 3))), RuntimeError,
     "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but "
     "input.size(-3)=8 is not divisible by 9"),
    ("pu-2d", lambda L: L.F.pixel_unshuffle(L.t((4, 4)), 2), RuntimeError,
     "pixel_unshuffle expects input to have at least 3 dimensions, but got input with 2 dimension(s)"),
    ("pu-negative", lambda L: L.F.pixel_unshuffle(L.t((4, 4, 4)), -1), RuntimeError,
     "pixel_unshuffle expects a positive downscale_factor, but got -1"),
    ("pu-height", lambda L: L.F.pixel_unshuffle(L.t((1, 4, 3, 4)), 2), RuntimeError,
     "pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)=3 is not divisible by 2"),
    ("pu-width", lambda L: L.nn.PixelUnshuffle(2)(L.t((1, 4, 4, 3))), RuntimeError,
     "pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)=3 is not divisible by 2"),
    ("pu-bool", lambda L: L.F.pixel_unshuffle(L.t((1, 4, 4, 4)), True), TypeError,
     "pixel_unshuffle(): argument 'downscale_factor' (position 2) must be int, not bool"),
    ("in-spatial-one", lambda L: L.F.instance_norm(L.t((2, 3, 1))), ValueError,
     "Expected more than 1 spatial element when training, got input size {Size}([2, 3, 1])"),
    ("in-2d-input", lambda L: L.F.instance_norm(L.t((2, 3))), ValueError,
     "Expected more than 1 spatial element when training, got input size {Size}([2, 3])"),
    ("in-1d-eval", lambda L: L.F.instance_norm(L.t(3), L.zeros(3), L.ones(3), use_input_stats=False), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    ("in-no-running-stats", lambda L: L.F.instance_norm(L.t(X), use_input_stats=False), RuntimeError,
     "Expected running_mean and running_var to be defined when use_input_stats is false"),
    ("in-one-running-stat", lambda L: L.F.instance_norm(L.t(X), L.zeros(3), use_input_stats=False), RuntimeError,
     "Expected running_mean and running_var to be defined when use_input_stats is false"),
    ("in-running-mean-size", lambda L: L.F.instance_norm(L.t(X), L.zeros(4), L.ones(4)), RuntimeError,
     "running_mean should contain 6 elements not 8"),
    ("in-weight-size", lambda L: L.F.instance_norm(L.t(X), weight=L.ones(4)), RuntimeError,
     "weight should contain 6 elements not 8"),
    ("in-bias-size", lambda L: L.F.instance_norm(L.t(X), bias=L.ones(4)), RuntimeError,
     "bias should contain 6 elements not 8"),
    ("in-running-var-grad", lambda L: L.F.instance_norm(L.t(X), L.zeros(3), L.ones(3, grad=True)), RuntimeError,
     "The function 'native_batch_norm' is not differentiable with respect to argument 'running_var'. This input "
     "cannot have requires_grad True."),
    ("in-long", lambda L: L.F.instance_norm(L.t(X, "int64")), NotImplementedError,
     "\"batch_norm\" not implemented for 'Long'"),
    ("in-not-tensor-eval", lambda L: L.F.instance_norm([1.0], L.zeros(3), L.ones(3), use_input_stats=False),
     TypeError, "instance_norm(): argument 'input' (position 1) must be Tensor, not list"),
    ("IN1-4d", lambda L: L.nn.InstanceNorm1d(3)(L.t((2, 3, 4, 5))), ValueError,
     "expected 2D or 3D input (got 4D input)"),
    ("IN1-1d", lambda L: L.nn.InstanceNorm1d(3)(L.t(3)), ValueError, "expected 2D or 3D input (got 1D input)"),
    ("IN1-affine-features", lambda L: L.nn.InstanceNorm1d(4, affine=True)(L.t((2, 3, 4))), ValueError,
     "expected input's size at dim=1 to match num_features (4), but got: 3."),
    ("IN1-affine-features-unbatched", lambda L: L.nn.InstanceNorm1d(4, affine=True)(L.t((3, 4))), ValueError,
     "expected input's size at dim=0 to match num_features (4), but got: 3."),
    ("IN1-spatial-one", lambda L: L.nn.InstanceNorm1d(3)(L.t((2, 3, 1))), ValueError,
     "Expected more than 1 spatial element when training, got input size {Size}([2, 3, 1])"),
    ("IN2-2d", lambda L: L.nn.InstanceNorm2d(3)(L.t((3, 4))), ValueError, "expected 3D or 4D input (got 2D input)"),
    ("IN2-5d", lambda L: L.nn.InstanceNorm2d(3)(L.t((1, 3, 4, 4, 4))), ValueError,
     "expected 3D or 4D input (got 5D input)"),
    ("IN2-affine-features", lambda L: L.nn.InstanceNorm2d(3, affine=True)(L.t((2, 4, 4, 4))), ValueError,
     "expected input's size at dim=1 to match num_features (3), but got: 4."),
    ("IN2-affine-empty-batch", lambda L: L.nn.InstanceNorm2d(3, affine=True)(L.t((0, 3, 4, 4))), IndexError,
     "select(): index 0 out of range for tensor of size [0] at dimension 0"),
    ("IN2-eval-no-stats", lambda L: L.nn.InstanceNorm2d(3).eval()(L.t((2, 3, 1, 1))), ValueError,
     "Expected more than 1 spatial element when training, got input size {Size}([2, 3, 1, 1])"),
]


def _raises_as_torch(lib, device, call, exc, message):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc) as raised:
            call(Lib(lib, device))
    # size objects print with their library's name
    assert str(raised.value).startswith(message.replace("{Size}", f"{lib.__name__}.Size")), str(raised.value)


@pytest.mark.parametrize("call,exc,message", [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_bad_input_raises_torchs_error(device, call, exc, message):
    _raises_as_torch(npusim, device, call, exc, message)


@pytest.mark.oracle
@pytest.mark.parametrize("call,exc,message", [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_bad_input_error_matches_torch(torch, call, exc, message):
    _raises_as_torch(torch, "cpu", call, exc, message)


@pytest.mark.parametrize("dtype", ["bool", "int64"])
def test_max_pool1d_without_indices_takes_floats_only_on_cpu(device, dtype):
    """Without indices, torch's CPU kernel takes floating inputs only; elsewhere the indices path serves."""
    x = Lib(npusim, device).t((1, 8), dtype)
    if device == "cpu":
        name = {"bool": "Bool", "int64": "Long"}[dtype]
        with pytest.raises(NotImplementedError, match=re.escape(f"\"max_pool1d_impl\" not implemented for '{name}'")):
            F.max_pool1d(x, 2)
    elif dtype == "bool":
        with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
            F.max_pool1d(x, 2)
    else:
        np.testing.assert_array_equal(host(F.max_pool1d(x, 2)), host(F.max_pool1d(x, 2, return_indices=True)[0]))


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", ["bool", "int64"])
def test_max_pool1d_integer_error_matches_torch(torch, dtype):
    x = Lib(torch).t((1, 8), dtype)
    name = {"bool": "Bool", "int64": "Long"}[dtype]
    with pytest.raises(NotImplementedError, match=re.escape(f"\"max_pool1d_impl\" not implemented for '{name}'")):
        torch.nn.functional.max_pool1d(x, 2)


def test_instance_norm_feature_mismatch_without_affine_warns(device):
    x = npusim.randn(2, 3, 4, device=device)
    with pytest.warns(UserWarning, match=re.escape("input's size at dim=1 does not match num_features. You can "
                                                   "silence this warning by not passing in num_features, which is "
                                                   "not used because affine=False")):
        y = nn.InstanceNorm1d(4)(x)
    assert y.shape == x.shape


def test_instance_norm_eval_with_running_stats_takes_one_spatial_element(device):
    m = nn.InstanceNorm1d(3, track_running_stats=True).to(device).eval()
    x = npusim.randn(2, 3, 1, device=device)
    np.testing.assert_allclose(host(m(x)), host(x) / np.sqrt(1 + 1e-5), rtol=1e-6)


# --- oracle: values and gradients ---------------------------------------------------------------------------------

def _run(lib, device, fn, arrays, grad_seed=7):
    """fn(F, *tensors) on lib; returns (output values, dtype name, gradients of the float inputs)."""
    dev = device if lib is npusim else "cpu"
    ts = [lib.tensor(a, device=dev, requires_grad=a.dtype.kind == "f") for a in arrays]
    out = fn(lib.nn.functional, *ts)
    out = out[0] if isinstance(out, tuple) else out
    g = rand(tuple(out.shape), grad_seed)
    out.backward(lib.tensor(g, device=dev).to(out.dtype))
    grads = [None if t.grad is None else t.grad.detach().cpu().float().numpy() for t in ts]
    return out.detach().cpu().float().numpy(), str(out.dtype).split(".")[-1], grads


ORACLE_CASES = [
    ("max_pool1d", lambda F, x: F.max_pool1d(x, 3), [(4, 8, 50)]),
    ("max_pool1d-ceil", lambda F, x: F.max_pool1d(x, 3, 2, 1, ceil_mode=True), [(4, 8, 17)]),
    ("max_pool1d-dilated", lambda F, x: F.max_pool1d(x, 3, 2, 1, 3), [(2, 5, 30)]),
    ("max_pool1d-unbatched-indices", lambda F, x: F.max_pool1d(x, 4, 3, 2, 1, True, True), [(6, 23)]),
    ("avg_pool1d", lambda F, x: F.avg_pool1d(x, 4), [(4, 8, 50)]),
    ("avg_pool1d-ceil-pad", lambda F, x: F.avg_pool1d(x, 3, 2, 1, ceil_mode=True), [(4, 8, 17)]),
    ("avg_pool1d-exclude-pad", lambda F, x: F.avg_pool1d(x, 5, 3, 2, True, False), [(2, 5, 19)]),
    ("avg_pool1d-unbatched", lambda F, x: F.avg_pool1d(x, (3,), (1,), (1,)), [(6, 23)]),
    ("adaptive_avg_pool1d", lambda F, x: F.adaptive_avg_pool1d(x, 7), [(4, 8, 50)]),
    ("adaptive_avg_pool1d-up", lambda F, x: F.adaptive_avg_pool1d(x, [13]), [(2, 3, 9)]),
    ("adaptive_avg_pool1d-global", lambda F, x: F.adaptive_avg_pool1d(x, 1), [(6, 23)]),
    ("pixel_shuffle", lambda F, x: F.pixel_shuffle(x, 3), [(2, 18, 5, 7)]),
    ("pixel_shuffle-batch-dims", lambda F, x: F.pixel_shuffle(x, 2), [(2, 3, 8, 3, 4)]),
    ("pixel_unshuffle", lambda F, x: F.pixel_unshuffle(x, 2), [(2, 3, 6, 8)]),
    ("pixel_unshuffle-unbatched", lambda F, x: F.pixel_unshuffle(x, 3), [(2, 9, 6)]),
    ("instance_norm", lambda F, x: F.instance_norm(x), [(4, 8, 10, 9)]),
    ("instance_norm-affine", lambda F, x, w, b: F.instance_norm(x, weight=w, bias=b, eps=1e-3),
     [(4, 8, 17), (8,), (8,)]),
    ("instance_norm-running-stats", lambda F, x, w: F.instance_norm(x, w.detach() * 0, w.detach().abs() + 1, w,
                                                                    momentum=0.3), [(3, 5, 6, 4), (5,)]),
    ("instance_norm-eval", lambda F, x, w, b: F.instance_norm(x, w.detach() + 0, b.detach().abs() + 0.5, w, b,
                                                              use_input_stats=False), [(3, 5, 11), (5,), (5,)]),
]


@pytest.mark.oracle
@pytest.mark.parametrize("fn,shapes", [c[1:] for c in ORACLE_CASES], ids=[c[0] for c in ORACLE_CASES])
def test_values_and_gradients_match_torch(torch, device, fn, shapes):
    arrays = [rand(s, i) for i, s in enumerate(shapes)]
    ours = _run(npusim, device, fn, arrays)
    theirs = _run(torch, "cpu", fn, arrays)
    assert ours[0].shape == theirs[0].shape and ours[1] == theirs[1]
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-4, atol=1e-4)
    for a, b in zip(ours[2], theirs[2]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.oracle
def test_max_pool1d_indices_match_torch(torch, device):
    x = rand((4, 8, 37))
    ours = F.max_pool1d(tensor(x, device), 4, 3, 2, 2, True, return_indices=True)
    theirs = torch.nn.functional.max_pool1d(torch.tensor(x), 4, 3, 2, 2, True, return_indices=True)
    np.testing.assert_array_equal(host(ours[1]), theirs[1].numpy())
    np.testing.assert_array_equal(host(ours[0]), theirs[0].numpy())


# --- oracle: modules, running statistics --------------------------------------------------------------------------

MODULES = [
    ("MaxPool1d", lambda nn: nn.MaxPool1d(3, 2, 1, ceil_mode=True), (2, 4, 15)),
    ("AvgPool1d", lambda nn: nn.AvgPool1d(3, 2, 1, count_include_pad=False), (2, 4, 15)),
    ("AdaptiveAvgPool1d", lambda nn: nn.AdaptiveAvgPool1d(6), (4, 15)),
    ("PixelShuffle", lambda nn: nn.PixelShuffle(2), (2, 8, 3, 5)),
    ("PixelUnshuffle", lambda nn: nn.PixelUnshuffle(2), (2, 2, 4, 6)),
    ("InstanceNorm1d", lambda nn: nn.InstanceNorm1d(4), (2, 4, 15)),
    ("InstanceNorm1d-affine-unbatched", lambda nn: nn.InstanceNorm1d(4, affine=True), (4, 15)),
    ("InstanceNorm2d-tracked", lambda nn: nn.InstanceNorm2d(3, affine=True, track_running_stats=True, momentum=0.2),
     (2, 3, 5, 6)),
    ("InstanceNorm2d-momentum-none", lambda nn: nn.InstanceNorm2d(3, track_running_stats=True, momentum=None),
     (2, 3, 5, 6)),
]


@pytest.mark.oracle
@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("build,shape", [m[1:] for m in MODULES], ids=[m[0] for m in MODULES])
def test_modules_match_torch(torch, device, build, shape, train):
    """torch's state (affine parameters perturbed, running statistics moved) loaded into npusim's layer: two
    forward passes, then outputs, every buffer and the gradients agree."""
    torch.manual_seed(0)
    tm = build(torch.nn)
    with torch.no_grad():
        for p in tm.parameters():
            p.add_(torch.randn_like(p))
        if getattr(tm, "running_mean", None) is not None:
            tm.running_mean.copy_(torch.randn(tm.num_features))
            tm.running_var.copy_(torch.rand(tm.num_features) + 0.5)
    nm = build(nn)
    nm.load_state_dict({k: npusim.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    nm.to(device)
    tm.train(train)
    nm.train(train)
    for seed in (0, 1):
        x = rand(shape, seed)
        tx, nx = torch.tensor(x, requires_grad=True), tensor(x, device, grad=True)
        t_out, n_out = tm(tx), nm(nx)
        assert n_out.shape == tuple(t_out.shape) and n_out.device.type == device
        np.testing.assert_allclose(host(n_out), t_out.detach().numpy(), rtol=1e-4, atol=1e-5)
    for name, buf in tm.state_dict().items():
        np.testing.assert_allclose(host(nm.state_dict()[name]), buf.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    g = rand(tuple(t_out.shape), 9)
    (t_out * torch.tensor(g)).sum().backward()
    (n_out * tensor(g, device)).sum().backward()
    np.testing.assert_allclose(host(nx.grad), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    t_params = dict(tm.named_parameters())
    for name, p in nm.named_parameters():
        np.testing.assert_allclose(host(p.grad), t_params[name].grad.numpy(), rtol=1e-4, atol=1e-4, err_msg=name)
