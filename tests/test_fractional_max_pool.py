"""Fractional max pooling (F.fractional_max_pool2d/3d, their *_with_indices forms, nn.FractionalMaxPool2d/3d):
windows placed by ATen's interval rule from the samples, values, indices and gradients, against PyTorch and by
hand."""
from __future__ import annotations

import numpy as np
import pytest

import npusim
import npusim.nn as nn
import npusim.nn.functional as F
from conftest import host
from npusim.autograd import gradcheck, gradgradcheck


def rand(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def starts(u, n, o, k):
    """ATen's generate_intervals in float64 arithmetic (exact for the samples used below)."""
    alpha = (n - k) / (o - 1)
    return [int((i + u) * alpha) - int(u * alpha) for i in range(o - 1)] + [n - k]


def test_windows_follow_the_samples(device):
    x = npusim.arange(7 * 9, dtype=npusim.float64, device=device).reshape(1, 1, 7, 9)
    samples = npusim.tensor([[[0.25, 0.75]]], dtype=npusim.float64, device=device)   # column 0: width, 1: height
    out, idx = F.fractional_max_pool2d(x, 2, output_size=(4, 5), return_indices=True, _random_samples=samples)
    hs, ws = starts(0.75, 7, 4, 2), starts(0.25, 9, 5, 2)
    # x increases along both dims, so each window's maximum is its bottom-right element
    expect = [[(h + 1) * 9 + w + 1 for w in ws] for h in hs]
    assert host(idx).tolist() == [[expect]]
    assert host(out).tolist() == [[[[float(v) for v in row] for row in expect]]]
    assert idx.dtype is npusim.int64 and out.device == x.device


def test_3d_windows_follow_the_samples(device):
    x = npusim.arange(6 * 7 * 8, dtype=npusim.float64, device=device).reshape(1, 6, 7, 8)   # unbatched
    samples = npusim.tensor([[[0.5, 0.25, 0.75]]], dtype=npusim.float64, device=device)   # time, height, width
    out, idx = F.fractional_max_pool3d(x, 2, output_size=(3, 4, 5), return_indices=True, _random_samples=samples)
    ts, hs, ws = starts(0.5, 6, 3, 2), starts(0.25, 7, 4, 2), starts(0.75, 8, 5, 2)
    expect = [[[(t + 1) * 56 + (h + 1) * 8 + w + 1 for w in ws] for h in hs] for t in ts]
    assert host(idx).tolist() == [expect] and out.shape == (1, 3, 4, 5)


def test_gradient_goes_to_the_maxima_and_accumulates(device):
    x = npusim.tensor(rand((2, 3, 6, 7)), dtype=npusim.float64, device=device, requires_grad=True)
    out, idx = F.fractional_max_pool2d(x, 3, output_size=(4, 5), return_indices=True)
    assert type(out.grad_fn).__name__ == "FractionalMaxPool2DBackward0"
    out.sum().backward()
    counts = np.zeros((2, 3, 42))
    flat = host(idx).reshape(2, 3, -1)
    for n in range(2):
        for c in range(3):
            np.add.at(counts[n, c], flat[n, c], 1.0)
    np.testing.assert_array_equal(host(x.grad).reshape(2, 3, -1), counts)
    samples = npusim.rand(2, 3, 2, dtype=npusim.float64, device=device)
    assert gradcheck(lambda t: F.fractional_max_pool2d(t, 2, output_size=3, _random_samples=samples), (x,))
    assert gradgradcheck(lambda t: F.fractional_max_pool2d(t, 2, output_size=3, _random_samples=samples), (x,))
    y = npusim.tensor(rand((1, 2, 4, 5, 5)), dtype=npusim.float64, device=device, requires_grad=True)
    s3 = npusim.rand(1, 2, 3, dtype=npusim.float64, device=device)
    assert gradcheck(lambda t: F.fractional_max_pool3d(t, 2, output_size=(2, 3, 3), _random_samples=s3), (y,))


def test_samples_are_drawn_from_the_device_generator(device):
    x = npusim.tensor(rand((2, 3, 9, 9)), device=device)
    npusim.manual_seed(5)
    a = F.fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.5))
    npusim.manual_seed(5)
    samples = npusim.rand(2, 3, 2, device=device)
    b = F.fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.5), _random_samples=samples)
    np.testing.assert_array_equal(host(a), host(b))
    assert a.shape == (2, 3, 4, 4)


def test_nan_wins_and_empty_kernel_points_at_window_start(device):
    x = npusim.zeros(1, 1, 4, 4, device=device)
    x[0, 0, 0, 0] = float("nan")
    x[0, 0, 0, 1] = float("nan")
    samples = npusim.zeros(1, 1, 2, device=device)
    out, idx = F.fractional_max_pool2d(x, 2, output_size=3, return_indices=True, _random_samples=samples)
    assert host(idx)[0, 0, 0, 0] == 1 and np.isnan(host(out)[0, 0, 0, 0])   # the last NaN of the window


def test_errors(device):
    x = npusim.randn(2, 3, 6, 6, device=device)
    s = npusim.rand(2, 3, 2, device=device)
    with pytest.raises(ValueError, match="requires specifying either an output_size or an output_ratio"):
        F.fractional_max_pool2d(x, 2)
    with pytest.raises(RuntimeError, match="pool height 2 too large relative to input height 6"):
        F.fractional_max_pool2d(x, 2, output_size=(6, 3), _random_samples=s)
    with pytest.raises(RuntimeError, match=r"Expect _random_samples.size\(0\) no less then input batch size"):
        F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=s[:1])
    with pytest.raises(RuntimeError, match="same dtype as input"):
        F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=s.double())
    with pytest.raises(RuntimeError, match="Expected 3D or 4D tensor"):
        F.fractional_max_pool2d(x[0, 0], 2, output_size=3, _random_samples=s)
    with pytest.raises(RuntimeError, match="kernel_size must either be a single Int or tuple of three Ints"):
        F.fractional_max_pool3d(x[None], (2, 2), output_size=3, _random_samples=npusim.rand(1, 2, 3, device=device))
    with pytest.raises(ValueError, match="output_ratio must be between 0 and 1"):
        nn.FractionalMaxPool2d(2, output_ratio=1.5)
    with pytest.raises(ValueError, match="only one of output_size and output_ratio"):
        nn.FractionalMaxPool3d(2, output_size=2, output_ratio=0.5)


def test_modules(device):
    m = nn.FractionalMaxPool2d(2, output_size=3, return_indices=True)
    assert repr(m) == "FractionalMaxPool2d()" and list(m.state_dict()) == []
    out, idx = m(npusim.randn(1, 2, 6, 6, device=device))
    assert out.shape == idx.shape == (1, 2, 3, 3)
    s = npusim.rand(1, 2, 3, device=device)
    m3 = nn.FractionalMaxPool3d(2, output_ratio=0.5, _random_samples=s)
    assert list(m3.state_dict()) == ["_random_samples"]
    x = npusim.randn(1, 2, 6, 6, 6, device=device)
    np.testing.assert_array_equal(host(m3(x)), host(F.fractional_max_pool3d(x, 2, output_size=3, _random_samples=s)))


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("shape, kernel, out", [((2, 3, 11, 13), (3, 2), (5, 7)), ((3, 9, 9), 2, (8, 4)),
                                                 ((1, 2, 25, 31), (2, 3), (13, 17))])
def test_fractional_max_pool2d_matches_torch(torch, device, dtype, shape, kernel, out):
    x = rand(shape)
    n = 1 if len(shape) == 3 else shape[0]
    u = np.random.default_rng(1).random((n, shape[-3], 2))
    tdt = getattr(torch, dtype)
    t = torch.tensor(x).to(tdt).requires_grad_()
    a = npusim.tensor(x, device=device).to(getattr(npusim, dtype)).requires_grad_()
    ts = torch.tensor(u).to(tdt)
    s = npusim.tensor(u, device=device).to(getattr(npusim, dtype))
    tv, ti = torch.nn.functional.fractional_max_pool2d(t, kernel, output_size=out, return_indices=True,
                                                       _random_samples=ts)
    v, i = F.fractional_max_pool2d(a, kernel, output_size=out, return_indices=True, _random_samples=s)
    np.testing.assert_array_equal(host(i), ti.numpy())
    np.testing.assert_array_equal(host(v), tv.detach().float().numpy())
    g = rand(tuple(tv.shape), seed=2)
    tv.backward(torch.tensor(g).to(tdt))
    v.backward(npusim.tensor(g, device=device).to(getattr(npusim, dtype)))
    # an input in k windows gets a sum of k gradients: npusim adds them in float64 and rounds once, torch rounds
    # after each addition, so they may differ by a few units in the last place of the dtype
    eps = float(torch.finfo(tdt).eps)
    np.testing.assert_allclose(host(a.grad), t.grad.double().numpy(), rtol=8 * eps, atol=8 * eps)


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_fractional_max_pool3d_matches_torch(torch, device, dtype):
    x = rand((2, 3, 7, 8, 9))
    u = np.random.default_rng(3).random((2, 3, 3))
    tdt = getattr(torch, dtype)
    t = torch.tensor(x).to(tdt).requires_grad_()
    a = npusim.tensor(x, device=device).to(getattr(npusim, dtype)).requires_grad_()
    tv, ti = torch.nn.functional.fractional_max_pool3d(t, (2, 3, 2), output_size=(4, 5, 6), return_indices=True,
                                                       _random_samples=torch.tensor(u).to(tdt))
    v, i = F.fractional_max_pool3d(a, (2, 3, 2), output_size=(4, 5, 6), return_indices=True,
                                   _random_samples=npusim.tensor(u, device=device).to(getattr(npusim, dtype)))
    np.testing.assert_array_equal(host(i), ti.numpy())
    np.testing.assert_array_equal(host(v), tv.detach().float().numpy())
    assert type(v.grad_fn).__name__ == type(tv.grad_fn).__name__
    tv.sum().backward()
    v.sum().backward()
    np.testing.assert_array_equal(host(a.grad), t.grad.float().numpy())   # sums of ones: exact


@pytest.mark.oracle
def test_modules_and_errors_match_torch(torch):
    for kwargs in [dict(output_size=3), dict(output_ratio=0.5), dict(output_size=(2, 3), return_indices=True)]:
        assert repr(nn.FractionalMaxPool2d(2, **kwargs)) == repr(torch.nn.FractionalMaxPool2d(2, **kwargs))
        assert repr(nn.FractionalMaxPool3d(2, **kwargs)) == repr(torch.nn.FractionalMaxPool3d(2, **kwargs))
    x = rand((2, 3, 6, 6))
    u = np.random.default_rng(0).random((2, 3, 2)).astype(np.float32)
    cases = [
        lambda F_, x_, s_: F_.fractional_max_pool2d(x_, 2, output_size=(3, 6), _random_samples=s_),
        lambda F_, x_, s_: F_.fractional_max_pool2d(x_, (2, 2, 2), output_size=3, _random_samples=s_),
        lambda F_, x_, s_: F_.fractional_max_pool2d(x_, 2, output_size=3, _random_samples=s_[:, :2]),
        lambda F_, x_, s_: F_.fractional_max_pool2d(x_, 2, output_size=3, _random_samples=s_[..., :1]),
        lambda F_, x_, s_: F_.fractional_max_pool2d(x_, 2, output_size=3, _random_samples=s_[0]),
        lambda F_, x_, s_: F_.fractional_max_pool2d(x_[:, :0], 2, output_size=3, _random_samples=s_),
        lambda F_, x_, s_: F_.fractional_max_pool2d(x_.long(), 2, output_size=3, _random_samples=s_.long()),
        lambda F_, x_, s_: F_.fractional_max_pool2d(x_, 2, output_ratio=(0.5, 0.5, 0.5)),
        lambda F_, x_, s_: F_.fractional_max_pool3d(x_, 2, output_size=3),
        lambda F_, x_, s_: F_.fractional_max_pool2d(x_, 2, output_ratio=0.5),   # torch takes len() of a float
        lambda F_, x_, s_: F_.fractional_max_pool3d(x_[None], 2, output_size=(3, 3, 3), _random_samples=s_),
    ]
    for case in cases:
        with pytest.raises(Exception) as theirs:
            case(torch.nn.functional, torch.tensor(x), torch.tensor(u))
        with pytest.raises(Exception) as ours:
            case(F, npusim.tensor(x), npusim.tensor(u))
        assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)
