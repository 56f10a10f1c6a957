"""3-d convolution and pooling, and adaptive max pooling (1-d, 2-d): values, gradients, shapes, reprs, errors.

Oracle tests compare forward values, indices and input / weight / bias gradients
with PyTorch; gradcheck (float64, finite differences) covers each op without it;
every bad input's error type and message is checked here and against PyTorch.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import npusim
import npusim.nn as nn
import npusim.nn.functional as F
from conftest import host
from npusim.autograd import gradcheck, gradgradcheck


def rand(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def tensor(a, device, grad=False):
    return npusim.tensor(a, device=device, requires_grad=grad)


# --- oracle: values and gradients ---------------------------------------------------------------------------------

def _run(lib, device, fn, arrays, grad_seed=7):
    """fn(F, *tensors) on lib: (output values, dtype name, indices or None, gradients of the inputs)."""
    dev = device if lib is npusim else "cpu"
    ts = [lib.tensor(a, device=dev, requires_grad=True) for a in arrays]
    out = fn(lib.nn.functional, *ts)
    indices = None
    if isinstance(out, tuple):
        out, indices = out
        indices = indices.cpu().numpy()
    out.backward(lib.tensor(rand(tuple(out.shape), grad_seed), device=dev))
    grads = [t.grad.detach().cpu().numpy() for t in ts]
    return out.detach().cpu().numpy(), str(out.dtype).split(".")[-1], indices, grads


ORACLE_CASES = [
    ("conv3d", lambda F, x, w, b: F.conv3d(x, w, b), [(2, 3, 6, 7, 5), (4, 3, 3, 2, 3), (4,)]),
    ("conv3d-strided-dilated", lambda F, x, w, b: F.conv3d(x, w, b, stride=(2, 1, 2), padding=(1, 2, 0),
                                                           dilation=(1, 2, 2)),
     [(2, 4, 7, 8, 9), (6, 4, 3, 3, 2), (6,)]),
    ("conv3d-groups", lambda F, x, w: F.conv3d(x, w, stride=2, padding=1, groups=2), [(2, 4, 6, 6, 6), (6, 2, 3, 3, 3)]),
    ("conv3d-same-even", lambda F, x, w: F.conv3d(x, w, padding="same", dilation=(1, 1, 2)),
     [(1, 2, 5, 6, 7), (3, 2, 2, 3, 2)]),
    ("conv3d-valid-unbatched", lambda F, x, w: F.conv3d(x, w, padding="valid"), [(2, 5, 4, 6), (3, 2, 2, 2, 3)]),
    ("conv_transpose3d", lambda F, x, w, b: F.conv_transpose3d(x, w, b, stride=2, padding=1, output_padding=(1, 0, 1),
                                                                groups=2, dilation=(1, 2, 1)),
     [(2, 4, 3, 4, 3), (4, 3, 3, 2, 3), (6,)]),
    ("max_pool3d", lambda F, x: F.max_pool3d(x, 3, 2, 1, ceil_mode=True, return_indices=True), [(2, 3, 7, 8, 9)]),
    ("max_pool3d-dilated", lambda F, x: F.max_pool3d(x, (2, 3, 2), (1, 2, 2), (1, 0, 1), (2, 1, 2),
                                                     return_indices=True), [(2, 2, 7, 8, 9)]),
    ("max_pool3d-unbatched", lambda F, x: F.max_pool3d(x, 2), [(3, 5, 4, 6)]),
    ("avg_pool3d", lambda F, x: F.avg_pool3d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), [(2, 3, 7, 8, 9)]),
    ("avg_pool3d-pad", lambda F, x: F.avg_pool3d(x, (2, 3, 2), (1, 2, 3), (1, 1, 0)), [(2, 3, 5, 6, 7)]),
    ("avg_pool3d-divisor", lambda F, x: F.avg_pool3d(x, 2, 1, 1, True, True, 3), [(1, 3, 5, 4, 6)]),
    ("adaptive_avg_pool3d", lambda F, x: F.adaptive_avg_pool3d(x, (3, 4, 5)), [(2, 3, 7, 9, 8)]),
    ("adaptive_avg_pool3d-none", lambda F, x: F.adaptive_avg_pool3d(x, (None, 2, 3)), [(3, 5, 7, 6)]),
    ("adaptive_avg_pool3d-global", lambda F, x: F.adaptive_avg_pool3d(x, 1), [(2, 3, 4, 5, 6)]),
    ("adaptive_max_pool2d", lambda F, x: F.adaptive_max_pool2d(x, (4, 5), return_indices=True), [(2, 3, 11, 9)]),
    ("adaptive_max_pool2d-up", lambda F, x: F.adaptive_max_pool2d(x, (7, None), True), [(3, 4, 5)]),
    ("adaptive_max_pool1d", lambda F, x: F.adaptive_max_pool1d(x, 4, return_indices=True), [(2, 3, 11)]),
    ("adaptive_max_pool1d-unbatched", lambda F, x: F.adaptive_max_pool1d(x, 6), [(3, 10)]),
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
    if theirs[2] is not None:
        np.testing.assert_array_equal(ours[2], theirs[2])
    for a, b in zip(ours[3], theirs[3]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.oracle
@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
def test_conv3d_module_padding_modes_match_torch(torch, device, mode):
    kwargs = dict(stride=(1, 2, 1), padding=(1, 2, 1), dilation=(2, 1, 1), groups=2, padding_mode=mode)
    ours = nn.Conv3d(4, 6, (2, 3, 3), **kwargs).to(device)
    theirs = torch.nn.Conv3d(4, 6, (2, 3, 3), **kwargs)
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(host(ours.weight)))
        theirs.bias.copy_(torch.tensor(host(ours.bias)))
    x = rand((2, 4, 5, 7, 6))
    a, b = ours(tensor(x, device)), theirs(torch.tensor(x))
    np.testing.assert_allclose(host(a), b.detach().numpy(), rtol=1e-4, atol=1e-4)
    a.sum().backward()
    b.sum().backward()
    np.testing.assert_allclose(host(ours.weight.grad), theirs.weight.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(host(ours.bias.grad), theirs.bias.grad.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.oracle
def test_conv_transpose3d_module_output_size_matches_torch(torch, device):
    ours = nn.ConvTranspose3d(3, 2, 3, stride=2, padding=1).to(device)
    theirs = torch.nn.ConvTranspose3d(3, 2, 3, stride=2, padding=1)
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(host(ours.weight)))
        theirs.bias.copy_(torch.tensor(host(ours.bias)))
    x = rand((1, 3, 3, 4, 2))
    a = ours(tensor(x, device), output_size=[6, 8, 4])
    b = theirs(torch.tensor(x), output_size=[6, 8, 4])
    assert tuple(a.shape) == tuple(b.shape) == (1, 2, 6, 8, 4)
    np.testing.assert_allclose(host(a), b.detach().numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.oracle
def test_ties_nan_and_dtypes_match_torch(torch, device):
    x = np.zeros((1, 2, 4, 4, 4), np.float32)
    x[0, 0, 1, 2, 3] = np.nan
    x[0, 1, :2, :2, :2] = -np.inf
    for fn in (lambda F, t: F.max_pool3d(t, 2, return_indices=True),
               lambda F, t: F.adaptive_max_pool2d(t[0, :, 0], 3, return_indices=True)):
        a, ai = fn(F, tensor(x, device))
        b, bi = fn(torch.nn.functional, torch.tensor(x))
        np.testing.assert_array_equal(host(a), b.numpy())
        np.testing.assert_array_equal(host(ai), bi.numpy())
    xi = (rand((2, 3, 4, 5, 6)) * 10).astype(np.int64)
    for fn in (lambda F, t: F.max_pool3d(t, 2, 1), lambda F, t: F.avg_pool3d(t, 2, 1, 1)):
        a, b = fn(F, tensor(xi, device)), fn(torch.nn.functional, torch.tensor(xi))
        assert a.dtype is npusim.int64 and b.dtype == torch.int64
        np.testing.assert_array_equal(host(a), b.numpy())
    xh = rand((1, 2, 5, 6, 7)).astype(np.float16)
    for fn in (lambda F, t: F.max_pool3d(t, 2), lambda F, t: F.adaptive_avg_pool3d(t, (2, 3, 4)),
               lambda F, t: F.adaptive_max_pool2d(t[0], (3, 4))):
        a, b = fn(F, tensor(xh, device)), fn(torch.nn.functional, torch.tensor(xh))
        assert a.dtype is npusim.float16 and b.dtype == torch.float16
        np.testing.assert_allclose(host(a).astype(np.float32), b.float().numpy(), rtol=1e-3, atol=1e-3)


# --- gradcheck (no oracle) ----------------------------------------------------------------------------------------

def _t64(shape, device, seed=0):
    return tensor(rand(shape, seed, np.float64), device, grad=True)


def test_conv3d_gradcheck(device):
    x, w, b = _t64((1, 2, 3, 4, 3), device), _t64((2, 1, 2, 2, 2), device, 1), _t64((2,), device, 2)
    assert gradcheck(lambda x, w, b: F.conv3d(x, w, b, stride=(1, 2, 1), padding=1, groups=2), (x, w, b))
    assert gradcheck(lambda x, w: F.conv3d(x, w, padding="same"), (x, _t64((3, 2, 2, 1, 2), device, 3)))
    assert gradgradcheck(lambda x, w: F.conv3d(x, w), (x, _t64((2, 2, 2, 2, 2), device, 4)))


def test_conv_transpose3d_gradcheck(device):
    x, w, b = _t64((1, 2, 2, 3, 2), device), _t64((2, 1, 2, 2, 2), device, 1), _t64((2,), device, 2)
    assert gradcheck(lambda x, w, b: F.conv_transpose3d(x, w, b, stride=2, output_padding=1, groups=2), (x, w, b))


@pytest.mark.parametrize("fn", [
    lambda x: F.max_pool3d(x, 2, 1, 1),
    lambda x: F.avg_pool3d(x, 2, 1, 1, ceil_mode=True, count_include_pad=False),
    lambda x: F.avg_pool3d(x, (1, 2, 2), divisor_override=3),
    lambda x: F.adaptive_avg_pool3d(x, (2, 3, 2)),
    lambda x: F.adaptive_max_pool2d(x[0], (3, 2)),
    lambda x: F.adaptive_max_pool1d(x[0, 0], 3),
], ids=["max_pool3d", "avg_pool3d", "avg_pool3d-divisor", "adaptive_avg_pool3d", "adaptive_max_pool2d",
        "adaptive_max_pool1d"])
def test_pooling_gradcheck(device, fn):
    # distinct values: a max pool's gradient is only defined without ties
    x = tensor(np.random.default_rng(0).permutation(48).reshape(1, 2, 3, 4, 2).astype(np.float64), device, True)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


# --- shapes, values without the oracle, modules -------------------------------------------------------------------

def test_max_pool3d_picks_the_window_maxima(device):
    x = np.arange(2 * 4 * 4 * 4, dtype=np.float32).reshape(1, 2, 4, 4, 4)
    out, idx = F.max_pool3d(tensor(x, device), 2, return_indices=True)
    assert tuple(out.shape) == (1, 2, 2, 2, 2)
    np.testing.assert_array_equal(host(out), x[:, :, 1::2, 1::2, 1::2])
    np.testing.assert_array_equal(host(idx)[0, 0], (np.arange(64).reshape(4, 4, 4))[1::2, 1::2, 1::2])


def test_adaptive_max_pool_windows_and_gradient(device):
    x = tensor(np.array([[5., 1., 2., 9., 3.]], np.float32), device, grad=True)
    out, idx = F.adaptive_max_pool1d(x, 3, return_indices=True)   # windows [0, 2), [1, 4), [3, 5)
    np.testing.assert_array_equal(host(out), [[5., 9., 9.]])
    np.testing.assert_array_equal(host(idx), [[0, 3, 3]])
    out.sum().backward()
    np.testing.assert_array_equal(host(x.grad), [[1., 0., 0., 2., 0.]])
    assert out.grad_fn.name() == "SqueezeBackward1"


def test_shapes_and_modules(device):
    x = tensor(rand((2, 4, 5, 6, 7)), device)
    conv = nn.Conv3d(4, 6, (3, 2, 1), stride=2, padding=1, bias=False).to(device)
    assert conv.weight.shape == (6, 4, 3, 2, 1) and conv.bias is None
    assert tuple(conv(x).shape) == (2, 6, 3, 4, 5)
    same = nn.Conv3d(4, 2, 3, padding="same", padding_mode="reflect").to(device)
    assert tuple(same(x).shape) == (2, 2, 5, 6, 7)
    tconv = nn.ConvTranspose3d(4, 6, 3, stride=2, groups=2).to(device)
    assert tconv.weight.shape == (4, 3, 3, 3, 3)
    assert tuple(tconv(x).shape) == (2, 6, 11, 13, 15)
    assert tuple(nn.MaxPool3d(2, ceil_mode=True)(x).shape) == (2, 4, 3, 3, 4)
    out, idx = nn.MaxPool3d(3, 1, 1, return_indices=True)(x)
    assert out.shape == idx.shape == x.shape and idx.dtype is npusim.int64
    assert tuple(nn.AvgPool3d((1, 2, 3))(x).shape) == (2, 4, 5, 3, 2)
    assert tuple(nn.AdaptiveAvgPool3d((2, None, 3))(x).shape) == (2, 4, 2, 6, 3)
    assert tuple(nn.AdaptiveAvgPool3d(1)(x[0]).shape) == (4, 1, 1, 1)
    out, idx = nn.AdaptiveMaxPool2d((None, 3), return_indices=True)(x[0])
    assert tuple(out.shape) == tuple(idx.shape) == (4, 5, 6, 3)
    assert tuple(nn.AdaptiveMaxPool2d(2)(x[:, :, 0]).shape) == (2, 4, 2, 2)
    assert tuple(nn.AdaptiveMaxPool1d(4)(x[0, 0]).shape) == (5, 6, 4)
    assert tuple(F.adaptive_max_pool2d(tensor(rand((0, 3, 5, 6)), device), 2).shape) == (0, 3, 2, 2)
    assert tuple(F.adaptive_max_pool1d(tensor(rand((3, 5)), device), 0).shape) == (3, 0)
    assert tuple(F.max_pool3d(tensor(rand((0, 3, 4, 5, 6)), device), 2).shape) == (0, 3, 2, 2, 3)


def test_grad_fn_names(device):
    x = tensor(rand((1, 2, 4, 4, 4)), device, grad=True)
    assert F.max_pool3d(x, 2).grad_fn.name() == "MaxPool3DWithIndicesBackward0"
    assert F.avg_pool3d(x, 2).grad_fn.name() == "AvgPool3DBackward0"
    assert F.adaptive_avg_pool3d(x, 3).grad_fn.name() == "AdaptiveAvgPool3DBackward0"
    assert F.adaptive_max_pool2d(x[0], 3).grad_fn.name() == "AdaptiveMaxPool2DBackward0"
    assert F.conv3d(x, tensor(rand((1, 2, 2, 2, 2)), device)).grad_fn.name() == "ConvolutionBackward0"


REPRS = [
    (lambda nn: nn.Conv3d(2, 4, 3), "Conv3d(2, 4, kernel_size=(3, 3, 3), stride=(1, 1, 1))"),
    (lambda nn: nn.Conv3d(2, 4, (1, 2, 3), stride=2, padding=1, dilation=2, groups=2, bias=False,
                          padding_mode="circular"),
     "Conv3d(2, 4, kernel_size=(1, 2, 3), stride=(2, 2, 2), padding=(1, 1, 1), dilation=(2, 2, 2), groups=2, "
     "bias=False, padding_mode=circular)"),
    (lambda nn: nn.ConvTranspose3d(2, 4, 3, output_padding=1, stride=2),
     "ConvTranspose3d(2, 4, kernel_size=(3, 3, 3), stride=(2, 2, 2), output_padding=(1, 1, 1))"),
    (lambda nn: nn.MaxPool3d(2), "MaxPool3d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"),
    (lambda nn: nn.MaxPool3d((1, 2, 3), stride=1, padding=1, dilation=2, return_indices=True, ceil_mode=True),
     "MaxPool3d(kernel_size=(1, 2, 3), stride=1, padding=1, dilation=2, ceil_mode=True)"),
    (lambda nn: nn.AvgPool3d(2), "AvgPool3d(kernel_size=2, stride=2, padding=0)"),
    (lambda nn: nn.AvgPool3d((2, 2, 2), 1, 1, True, False, 3), "AvgPool3d(kernel_size=(2, 2, 2), stride=1, padding=1)"),
    (lambda nn: nn.AdaptiveAvgPool3d((None, 2, 3)), "AdaptiveAvgPool3d(output_size=(None, 2, 3))"),
    (lambda nn: nn.AdaptiveMaxPool1d(3), "AdaptiveMaxPool1d(output_size=3)"),
    (lambda nn: nn.AdaptiveMaxPool2d((2, None), return_indices=True), "AdaptiveMaxPool2d(output_size=(2, None))"),
]


@pytest.mark.parametrize("make,text", REPRS)
def test_repr(make, text):
    assert repr(make(nn)) == text


@pytest.mark.oracle
@pytest.mark.parametrize("make,text", REPRS)
def test_repr_matches_torch(torch, make, text):
    assert repr(make(torch.nn)) == text


# --- errors -------------------------------------------------------------------------------------------------------

class Lib:
    """The same calls against npusim or torch (the oracle)."""

    def __init__(self, mod, device="cpu"):
        self.mod, self.device = mod, device
        self.F = mod.nn.functional
        self.nn = mod.nn

    def t(self, shape, dtype="float32"):
        return self.mod.tensor(rand(shape), device=self.device).to(getattr(self.mod, dtype))


X5 = (2, 3, 4, 5, 6)
X4 = (3, 4, 5, 6)
W5 = (2, 3, 2, 2, 2)

ERRORS = [
    ("conv3d-rank", lambda L: L.F.conv3d(L.t((3, 4, 5)), L.t(W5)), RuntimeError,
     "Expected 4D (unbatched) or 5D (batched) input to conv3d, but got input of size: [3, 4, 5]"),
    ("conv3d-weight-rank", lambda L: L.F.conv3d(L.t(X5), L.t((2, 3, 2, 2))), RuntimeError,
     "expected stride to be a single integer value or a list of 2 values to match the convolution dimensions, but "
     "got stride=[1, 1, 1]"),
    ("conv3d-stride-length", lambda L: L.F.conv3d(L.t(X5), L.t(W5), stride=(1, 1)), RuntimeError,
     "expected stride to be a single integer value or a list of 3 values to match the convolution dimensions, but "
     "got stride=[1, 1]"),
    ("conv3d-channels", lambda L: L.F.conv3d(L.t(X5), L.t((2, 2, 2, 2, 2))), RuntimeError,
     "Given groups=1, weight of size [2, 2, 2, 2, 2], expected input[2, 3, 4, 5, 6] to have 2 channels, but got 3 "
     "channels instead"),
    ("conv3d-kernel-too-big", lambda L: L.F.conv3d(L.t(X5), L.t((2, 3, 5, 2, 2))), RuntimeError,
     "Calculated padded input size per channel: (4 x 5 x 6). Kernel size: (5 x 2 x 2). Kernel size can't be greater "
     "than actual input size"),
    ("conv3d-same-strided", lambda L: L.F.conv3d(L.t(X5), L.t(W5), stride=2, padding="same"), RuntimeError,
     "padding='same' is not supported for strided convolutions"),
    ("conv3d-bad-padding-string", lambda L: L.F.conv3d(L.t(X5), L.t(W5), padding="foo"), RuntimeError,
     "Invalid padding string: 'foo'"),
    ("conv3d-bool", lambda L: L.F.conv3d(L.t(X5, "bool"), L.t(W5, "bool")), NotImplementedError,
     "\"compute_columns3d\" not implemented for 'Bool'"),
    ("conv3d-module-padding-mode", lambda L: L.nn.Conv3d(2, 2, 3, padding_mode="edge"), ValueError,
     "padding_mode must be one of"),
    ("conv_transpose3d-rank", lambda L: L.F.conv_transpose3d(L.t((3, 4, 5)), L.t((3, 2, 2, 2, 2))), RuntimeError,
     "Expected 4D (unbatched) or 5D (batched) input to conv_transpose3d, but got input of size: [3, 4, 5]"),
    ("conv_transpose3d-output-padding",
     lambda L: L.F.conv_transpose3d(L.t(X5), L.t((3, 2, 2, 2, 2)), stride=2, output_padding=(1, 2, 1)), RuntimeError,
     "output padding must be smaller than either stride or dilation, but got output_padding_depth: 1 "
     "output_padding_height: 2 output_padding_width: 1 stride_depth: 2 stride_height: 2 stride_width: 2 "
     "dilation_depth: 1 dilation_height: 1 dilation_width: 1"),
    ("conv_transpose3d-bias", lambda L: L.F.conv_transpose3d(L.t(X5), L.t((3, 2, 2, 2, 2)), L.t((3,))), RuntimeError,
     "Given transposed=1, weight of size [3, 2, 2, 2, 2], expected bias to be 1-dimensional with 2 elements, but "
     "got bias of size [3] instead"),
    ("conv_transpose3d-bool", lambda L: L.F.conv_transpose3d(L.t(X5, "bool"), L.t((3, 2, 2, 2, 2), "bool")),
     NotImplementedError, "\"slow_conv_transpose3d_out_cpu\" not implemented for 'Bool'"),
    ("conv_transpose2d-bool", lambda L: L.F.conv_transpose2d(L.t(X4, "bool"), L.t((4, 2, 2, 2), "bool")),
     NotImplementedError, "\"slow_conv_transpose2d_out_cpu\" not implemented for 'Bool'"),
    ("max_pool3d-kernel-length", lambda L: L.F.max_pool3d(L.t(X5), (2, 2)), RuntimeError,
     "max_pool3d: kernel_size must either be a single int, or a tuple of three ints"),
    ("max_pool3d-stride-length", lambda L: L.F.max_pool3d(L.t(X5), 2, (1, 1)), RuntimeError,
     "max_pool3d: stride must either be omitted, a single int, or a tuple of three ints"),
    ("max_pool3d-padding-length", lambda L: L.F.max_pool3d(L.t(X5), 2, 1, (1, 1)), RuntimeError,
     "max_pool3d: padding must either be a single int, or a tuple of three ints"),
    ("max_pool3d-dilation-length", lambda L: L.F.max_pool3d(L.t(X5), 2, 1, 0, (1, 1)), RuntimeError,
     "max_pool3d: dilation must be either a single int, or a tuple of three ints"),
    ("max_pool3d-rank", lambda L: L.F.max_pool3d(L.t((4, 5, 6)), 2), RuntimeError,
     "non-empty 4D or 5D (batch mode) tensor expected for input"),
    ("max_pool3d-zero-kernel", lambda L: L.F.max_pool3d(L.t(X5), 0), RuntimeError, "stride should not be zero"),
    ("max_pool3d-negative-stride", lambda L: L.F.max_pool3d(L.t(X5), 2, -1), RuntimeError,
     "stride should be greater than zero, but got dT: -1 dH: -1 dW: -1"),
    ("max_pool3d-zero-dilation", lambda L: L.F.max_pool3d(L.t(X5), 2, 1, 0, 0), RuntimeError,
     "dilation should be greater than zero, but got dilationT: 0 dilationH: 0 dilationW: 0"),
    ("max_pool3d-pad-effective", lambda L: L.F.max_pool3d(L.t(X5), 2, 1, 2), RuntimeError,
     "pad should be at most half of effective kernel size, but got pad=2, kernel_size=2 and dilation=1"),
    ("max_pool3d-pad-negative", lambda L: L.F.max_pool3d(L.t(X5), 2, 1, -1), RuntimeError,
     "pad must be non-negative, but got pad: -1"),
    ("max_pool3d-pad-half", lambda L: L.F.max_pool3d(L.t(X5), 3, 1, 2, 2), RuntimeError,
     "pad should be smaller than or equal to half of kernel size, but got kT: 3 kW: 3 kH: 3 padT: 2 padW: 2 "
     "padH: 2"),
    ("max_pool3d-too-small", lambda L: L.F.max_pool3d(L.t(X5), 5), RuntimeError,
     "Given input size: (3x4x5x6). Calculated output size: (3x0x1x1). Output size is too small"),
    ("max_pool3d-empty", lambda L: L.F.max_pool3d(L.t((2, 3, 0, 5, 6)), 2), RuntimeError,
     "max_pool3d_with_indices_out_cpu_template(): Expected input's non-batch dimensions to have positive length, "
     "but input has a shape of [2, 3, 0, 5, 6] and non-batch dimension 0 has length zero!"),
    ("max_pool3d-bool", lambda L: L.F.max_pool3d(L.t(X5, "bool"), 2), NotImplementedError,
     "\"max_pool3d\" not implemented for 'Bool'"),
    ("avg_pool3d-kernel-length", lambda L: L.F.avg_pool3d(L.t(X5), (2, 2)), RuntimeError,
     "avg_pool3d: kernel_size must be a single int, or a tuple of three ints"),
    ("avg_pool3d-stride-length", lambda L: L.F.avg_pool3d(L.t(X5), 2, (1, 1)), RuntimeError,
     "avg_pool3d: stride must be omitted, a single int, or a tuple of three ints"),
    ("avg_pool3d-padding-length", lambda L: L.F.avg_pool3d(L.t(X5), 2, 1, (1, 1)), RuntimeError,
     "avg_pool3d: padding must be a single int, or a tuple of three ints"),
    ("avg_pool3d-rank", lambda L: L.F.avg_pool3d(L.t((5, 6)), 2), RuntimeError,
     "non-empty 4D or 5D (batch mode) tensor expected for input"),
    ("avg_pool3d-divisor", lambda L: L.F.avg_pool3d(L.t(X5), 2, divisor_override=0), RuntimeError,
     "divisor must be not zero"),
    ("avg_pool3d-negative-stride", lambda L: L.F.avg_pool3d(L.t(X5), 2, -1), RuntimeError,
     "stride should be greater than zero, but got dT: -1 dH: -1 dW: -1"),
    ("avg_pool3d-kernel-too-big", lambda L: L.F.avg_pool3d(L.t(X5), (4, 5, 7), padding=(0, 0, 1)), RuntimeError,
     "input image (T: 4 H: 5 W: 6) smaller than kernel size (kT: 4 kH: 5 kW: 7)"),
    ("avg_pool3d-empty", lambda L: L.F.avg_pool3d(L.t((2, 3, 0, 5, 6)), 2), RuntimeError,
     "avg_pool3d(): Expected input's non-batch dimensions to have positive length, but input has a shape of "
     "[2, 3, 0, 5, 6] and non-batch dimension 0 has length zero!"),
    ("avg_pool3d-int", lambda L: L.F.avg_pool3d(L.t(X5, "int32"), 2), NotImplementedError,
     "\"avg_pool3d_out_frame\" not implemented for 'Int'"),
    ("avg_pool3d-half", lambda L: L.F.avg_pool3d(L.t(X5, "float16"), 2), NotImplementedError,
     "\"avg_pool3d_out_frame\" not implemented for 'Half'"),
    ("adaptive_avg_pool3d-length", lambda L: L.F.adaptive_avg_pool3d(L.t(X5), (2, 2)), RuntimeError,
     "adaptive_avg_pool3d: output_size must be 3"),
    ("adaptive_avg_pool3d-negative", lambda L: L.F.adaptive_avg_pool3d(L.t(X5), (2, -1, 2)), RuntimeError,
     "adaptive_avg_pool3d: elements of output_size must be greater than or equal to 0 but received {2, -1,2}"),
    ("adaptive_avg_pool3d-rank", lambda L: L.F.adaptive_avg_pool3d(L.t((4, 5, 6)), 2), RuntimeError,
     "adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got [4, 5, 6]"),
    ("adaptive_avg_pool3d-short-input", lambda L: L.F.adaptive_avg_pool3d(L.t((5, 6)), (2, 2, 2)), ValueError,
     "Input dimension should be at least 4"),
    ("adaptive_avg_pool3d-empty", lambda L: L.F.adaptive_avg_pool3d(L.t((2, 3, 0, 5, 6)), 2), RuntimeError,
     "adaptive_avg_pool3d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes "
     "[2, 3, 0, 5, 6] with dimension 2 being empty"),
    ("adaptive_avg_pool3d-long", lambda L: L.F.adaptive_avg_pool3d(L.t(X5, "int64"), 2), NotImplementedError,
     "\"adaptive_avg_pool3d_cpu\" not implemented for 'Long'"),
    ("adaptive_max_pool2d-length", lambda L: L.F.adaptive_max_pool2d(L.t(X4), (2, 2, 2)), RuntimeError,
     "adaptive_max_pool2d(): internal error: output_size.size() must be 2"),
    ("adaptive_max_pool2d-negative", lambda L: L.F.adaptive_max_pool2d(L.t(X4), (2, -1)), RuntimeError,
     "Trying to create tensor with negative dimension -1: [3, 4, 2, -1]"),
    ("adaptive_max_pool2d-rank", lambda L: L.F.adaptive_max_pool2d(L.t(X5), 2), RuntimeError,
     "adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: [2, 3, 4, 5, 6]"),
    ("adaptive_max_pool2d-empty", lambda L: L.F.adaptive_max_pool2d(L.t((3, 0, 6)), 2), RuntimeError,
     "adaptive_max_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes "
     "[3, 0, 6] with dimension 1 being empty"),
    ("adaptive_max_pool2d-long", lambda L: L.F.adaptive_max_pool2d(L.t((3, 4, 5), "int64"), 2), NotImplementedError,
     "\"adaptive_max_pool2d\" not implemented for 'Long'"),
    ("adaptive_max_pool2d-too-long", lambda L: L.F.adaptive_max_pool2d(L.t(X4), (2, 2, 2, 2, 2)), ValueError,
     "Input dimension should be at least 6"),
    ("adaptive_max_pool1d-length", lambda L: L.F.adaptive_max_pool1d(L.t((3, 5)), (2, 2)), RuntimeError,
     "adaptive_max_pool1d() argument 'output_size' should contain one int (got 2)"),
    ("adaptive_max_pool1d-rank", lambda L: L.F.adaptive_max_pool1d(L.t(X4), 2), RuntimeError,
     "Expected 2 to 3 dimensions, but got 4-dimensional tensor for argument #1 'self' (while checking arguments "
     "for adaptive_max_pool1d)"),
    ("adaptive_max_pool1d-negative", lambda L: L.F.adaptive_max_pool1d(L.t((3, 5)), -1), RuntimeError,
     "Trying to create tensor with negative dimension -1: [3, 1, -1]"),
    ("adaptive_max_pool1d-empty", lambda L: L.F.adaptive_max_pool1d(L.t((3, 0)), 2), RuntimeError,
     "adaptive_max_pool1d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes "
     "[3, 0] with dimension 1 being empty"),
    ("adaptive_max_pool1d-float-size", lambda L: L.F.adaptive_max_pool1d(L.t((3, 5)), 2.0), TypeError,
     "adaptive_max_pool1d(): argument 'output_size' (position 2) must be tuple of ints, not float"),
    ("adaptive_max_pool1d-long", lambda L: L.F.adaptive_max_pool1d(L.t((3, 5), "int64"), 2), NotImplementedError,
     "\"adaptive_max_pool2d\" not implemented for 'Long'"),
]


@pytest.mark.parametrize("call,exc,message", [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_bad_input_raises_torchs_error(device, call, exc, message):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc) as ours:
            call(Lib(npusim, device))
    assert str(ours.value).startswith(message)


@pytest.mark.oracle
@pytest.mark.parametrize("call,exc,message", [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_bad_input_error_matches_torch(torch, call, exc, message):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc) as theirs:
            call(Lib(torch))
    assert str(theirs.value).startswith(message)
