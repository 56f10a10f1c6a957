"""Normalisation layers and norms in npusim.nn.functional: layer_norm, rms_norm, batch_norm, group_norm,
normalize and the ``linalg_vector_norm`` operator.

Values against NumPy, running statistics updated in place, gradients against finite
differences (gradcheck in float64, gradgradcheck for double backward), and oracle
tests comparing values, statistics, gradients and error messages with PyTorch.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import npusim
import npusim.nn.functional as F
from conftest import host
from npusim.autograd import gradcheck, gradgradcheck

aten = npusim.ops.aten


def rand(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def tensor(a, device, grad=False):
    return npusim.tensor(a, device=device, requires_grad=grad)


def f64(shape, device, seed=0):
    return npusim.tensor(rand(shape, seed, np.float64), device=device, requires_grad=True)


def np_normalize(x, axes, eps):
    x = x.astype(np.float64)
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps), mean, 1 / np.sqrt(var + eps)


# --- layer norm and rms norm --------------------------------------------------------------------------------------

def test_layer_norm_values_and_statistics(device):
    x, w, b = rand((3, 4, 5, 6)), rand((5, 6), 1), rand((5, 6), 2)
    y = F.layer_norm(tensor(x, device), (5, 6), tensor(w, device), tensor(b, device), eps=1e-3)
    ref, mean, rstd = np_normalize(x, (2, 3), 1e-3)
    assert y.shape == x.shape and y.dtype is npusim.float32
    np.testing.assert_allclose(host(y), ref * w + b, rtol=1e-5, atol=1e-5)
    out, m, r = aten.native_layer_norm(tensor(x, device), [6], None, None, 1e-5)
    assert m.shape == r.shape == (3, 4, 5, 1)
    ref, mean, rstd = np_normalize(x, (3,), 1e-5)
    np.testing.assert_allclose(host(out), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(host(m), mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(host(r), rstd, rtol=1e-5)


def test_layer_norm_half_is_computed_in_float32(device):
    x = (rand((4, 64)) * 100 + 1000).astype(np.float16)   # float16 statistics would lose these digits
    y = F.layer_norm(tensor(x, device), (64,))
    assert y.dtype is npusim.float16
    ref = np_normalize(x.astype(np.float32), (1,), 1e-5)[0]
    np.testing.assert_allclose(host(y), ref.astype(np.float16), rtol=1e-2, atol=1e-2)
    # float32 parameters with a 16-bit input (torch's mixed dtype): statistics come back in float32
    _, m, r = aten.native_layer_norm(tensor(x, device), [64], tensor(np.ones(64, np.float32), device), None, 1e-5)
    assert m.dtype is npusim.float32 and r.dtype is npusim.float32
    _, m, _ = aten.native_layer_norm(tensor(x, device), [64], None, None, 1e-5)
    assert m.dtype is npusim.float16


def test_rms_norm(device):
    x, w = rand((3, 4, 8)), rand(8, 1)
    y = F.rms_norm(tensor(x, device), (8,), tensor(w, device))
    eps = np.finfo(np.float32).eps
    ref = x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + eps) * w
    np.testing.assert_allclose(host(y), ref, rtol=1e-5, atol=1e-6)
    y2 = F.rms_norm(tensor(x, device), (4, 8), eps=0.5)
    ref2 = x / np.sqrt((x.astype(np.float64) ** 2).mean((1, 2), keepdims=True) + 0.5)
    np.testing.assert_allclose(host(y2), ref2, rtol=1e-5, atol=1e-6)
    # eps None is float32's epsilon for a half input too (it is computed in float32)
    tiny = np.full((2, 4), 1e-4, np.float16)
    yh = F.rms_norm(tensor(tiny, device), (4,))
    assert yh.dtype is npusim.float16
    np.testing.assert_allclose(host(yh), 1e-4 / np.sqrt(np.float32(1e-4) ** 2 + np.finfo(np.float32).eps), rtol=1e-2)


def test_layer_norm_gradients(device):
    x, w, b = f64((3, 4, 5), device), f64((4, 5), device, 1), f64((4, 5), device, 2)
    assert gradcheck(lambda x, w, b: F.layer_norm(x, (4, 5), w, b), (x, w, b))
    assert gradgradcheck(lambda x, w, b: F.layer_norm(x, (5,), w[0], b[0]), (x, w, b))
    assert gradcheck(lambda x, w: F.rms_norm(x, (5,), w[0]), (x, w))
    assert gradgradcheck(lambda x: F.rms_norm(x, (4, 5)), (x,))
    y = F.layer_norm(f64((2, 3), device), (3,))
    assert type(y.grad_fn).__name__ == "NativeLayerNormBackward0"


def test_which_statistics_are_differentiable(device):
    x = f64((3, 6), device)
    _, mean, rstd = aten.native_layer_norm(x, [6], None, None, 1e-5)
    assert not mean.requires_grad and not rstd.requires_grad   # as in torch
    # group norm's statistics are outputs with a gradient of their own
    assert gradcheck(lambda x: aten.native_group_norm(x, None, None, 3, 6, 1, 2, 1e-5)[1] * 2 +
                     aten.native_group_norm(x, None, None, 3, 6, 1, 2, 1e-5)[2], (x,))


# --- batch norm ---------------------------------------------------------------------------------------------------

def test_batch_norm_training_updates_running_statistics(device):
    x, w, b = rand((4, 3, 5, 6)), rand(3, 1), rand(3, 2)
    rm0, rv0 = rand(3, 3), np.abs(rand(3, 4)) + 0.5
    rm, rv = tensor(rm0, device), tensor(rv0, device)
    v0 = rm._version
    y = F.batch_norm(tensor(x, device), rm, rv, tensor(w, device), tensor(b, device), training=True, momentum=0.3)
    ref, mean, _ = np_normalize(x, (0, 2, 3), 1e-5)
    np.testing.assert_allclose(host(y), ref * w.reshape(1, 3, 1, 1) + b.reshape(1, 3, 1, 1), rtol=1e-5, atol=1e-5)
    unbiased = x.astype(np.float64).var(axis=(0, 2, 3), ddof=1)
    np.testing.assert_allclose(host(rm), 0.7 * rm0 + 0.3 * mean.ravel(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(host(rv), 0.7 * rv0 + 0.3 * unbiased, rtol=1e-5)
    assert rm._version > v0


def test_batch_norm_evaluation_uses_running_statistics(device):
    x, rm0, rv0 = rand((4, 3, 5)), rand(3, 3), np.abs(rand(3, 4)) + 0.5
    rm, rv = tensor(rm0, device), tensor(rv0, device)
    y = F.batch_norm(tensor(x, device), rm, rv, eps=1e-3)
    ref = (x - rm0.reshape(1, 3, 1)) / np.sqrt(rv0.reshape(1, 3, 1) + 1e-3)
    np.testing.assert_allclose(host(y), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(host(rm), rm0)
    np.testing.assert_array_equal(host(rv), rv0)
    out, save_mean, save_invstd = aten.native_batch_norm(tensor(x, device), None, None, rm, rv, False, 0.1, 1e-5)
    assert save_mean.shape == save_invstd.shape == (0,)


def test_batch_norm_2d_input_without_running_statistics(device):
    x = rand((6, 4))
    y = F.batch_norm(tensor(x, device), None, None, training=True)
    np.testing.assert_allclose(host(y), np_normalize(x, (0,), 1e-5)[0], rtol=1e-5, atol=1e-5)
    _, mean, invstd = aten.native_batch_norm(tensor(x, device), None, None, None, None, True, 0.1, 1e-5)
    np.testing.assert_allclose(host(mean), x.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(host(invstd), 1 / np.sqrt(x.var(0) + 1e-5), rtol=1e-5)


def test_batch_norm_half_input_with_float_statistics(device):
    x = rand((4, 3, 5)).astype(np.float16)
    rm, rv = tensor(np.zeros(3, np.float32), device), tensor(np.ones(3, np.float32), device)
    out, mean, invstd = aten.native_batch_norm(tensor(x, device), None, None, rm, rv, True, 0.1, 1e-5)
    assert out.dtype is npusim.float16 and mean.dtype is npusim.float32 and rm.dtype is npusim.float32
    np.testing.assert_allclose(host(out), np_normalize(x, (0, 2), 1e-5)[0], rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(host(rm), 0.1 * x.astype(np.float64).mean((0, 2)), rtol=1e-3, atol=1e-4)


def test_batch_norm_gradients(device):
    x, w, b = f64((4, 3, 2), device), f64(3, device, 1), f64(3, device, 2)
    assert gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), (x, w, b))
    assert gradgradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), (x, w, b))
    rm = npusim.tensor(rand(3, 3, np.float64), device=device)
    rv = npusim.tensor(np.abs(rand(3, 4, np.float64)) + 0.5, device=device)
    assert gradcheck(lambda x, w, b: F.batch_norm(x, rm, rv, w, b, training=False), (x, w, b))
    assert gradgradcheck(lambda x, w: F.batch_norm(x, rm, rv, w, training=False), (x, w))


def test_batch_norm_then_inplace_relu_still_backpropagates(device):
    x = tensor(rand((4, 3, 5)), device, grad=True)
    rm, rv = tensor(np.zeros(3, np.float32), device), tensor(np.ones(3, np.float32), device)
    y = F.batch_norm(x, rm, rv, training=True)
    F.relu(y, inplace=True).sum().backward()
    assert x.grad.shape == (4, 3, 5) and np.isfinite(host(x.grad)).all()


def test_batch_norm_empty_batch_keeps_parameters_in_the_graph(device):
    w = tensor(np.ones(3, np.float32), device, grad=True)
    y = F.batch_norm(tensor(np.zeros((0, 3), np.float32), device), None, None, w, training=True)
    assert y.shape == (0, 3)
    y.sum().backward()
    np.testing.assert_array_equal(host(w.grad), [0, 0, 0])


# --- group norm ---------------------------------------------------------------------------------------------------

def test_group_norm(device):
    x, w, b = rand((2, 6, 4, 5)), rand(6, 1), rand(6, 2)
    y = F.group_norm(tensor(x, device), 3, tensor(w, device), tensor(b, device))
    ref = np_normalize(x.reshape(2, 3, -1), (2,), 1e-5)[0].reshape(x.shape)
    np.testing.assert_allclose(host(y), ref * w.reshape(1, 6, 1, 1) + b.reshape(1, 6, 1, 1), rtol=1e-5, atol=1e-5)
    out, mean, rstd = aten.native_group_norm(tensor(x, device), None, None, 2, 6, 20, 3, 1e-5)
    assert mean.shape == rstd.shape == (2, 3)
    np.testing.assert_allclose(host(mean), x.reshape(2, 3, -1).mean(-1), rtol=1e-5, atol=1e-6)
    y2 = F.group_norm(tensor(x[:, :, 0, 0], device), 2)
    np.testing.assert_allclose(host(y2), np_normalize(x[:, :, 0, 0].reshape(2, 2, 3), (2,), 1e-5)[0].reshape(2, 6),
                               rtol=1e-5, atol=1e-5)


def test_group_norm_empty_batch(device):
    y = F.group_norm(tensor(np.zeros((0, 4, 3), np.float32), device), 2)
    assert y.shape == (0, 4, 3)


def test_group_norm_gradients(device):
    x, w, b = f64((2, 4, 3), device), f64(4, device, 1), f64(4, device, 2)
    assert gradcheck(lambda x, w, b: F.group_norm(x, 2, w, b), (x, w, b))
    assert gradgradcheck(lambda x, w, b: F.group_norm(x, 2, w, b), (x, w, b))
    assert type(F.group_norm(x, 2).grad_fn).__name__ == "NativeGroupNormBackward0"


# --- vector norm and normalize ------------------------------------------------------------------------------------

@pytest.mark.parametrize("ord", [2, 1, 3, 0, 0.5, float("inf"), -float("inf")])
def test_linalg_vector_norm(device, ord):
    x = rand((3, 4, 5))
    r = aten.linalg_vector_norm(tensor(x, device), ord, [1, 2], True)
    assert r.shape == (3, 1, 1)
    np.testing.assert_allclose(host(r)[:, 0, 0], np.linalg.norm(x.reshape(3, -1).astype(np.float64), ord, axis=1),
                               rtol=1e-5)
    whole = aten.linalg_vector_norm(tensor(x, device), ord)
    assert whole.shape == ()
    np.testing.assert_allclose(host(whole), np.linalg.norm(x.ravel().astype(np.float64), ord), rtol=1e-5)


def test_linalg_vector_norm_dtype_and_gradients(device):
    x = rand((3, 4))
    r = aten.linalg_vector_norm(tensor(x, device), 2, [1], dtype=npusim.float64)
    assert r.dtype is npusim.float64
    t = f64((3, 4), device)
    for ord in (2, 1, 3, float("inf")):
        assert gradcheck(lambda t: aten.linalg_vector_norm(t, ord, [1]), (t,))
    zero = tensor(np.zeros((2, 3), np.float32), device, grad=True)
    aten.linalg_vector_norm(zero).backward()
    np.testing.assert_array_equal(host(zero.grad), np.zeros((2, 3)))   # no direction at 0: gradient 0, not nan


def test_normalize(device):
    x = rand((3, 4, 5))
    y = F.normalize(tensor(x, device), p=3, dim=1)
    ref = x / np.maximum(np.linalg.norm(x.astype(np.float64), 3, axis=1, keepdims=True), 1e-12)
    np.testing.assert_allclose(host(y), ref, rtol=1e-5, atol=1e-6)
    y = F.normalize(tensor(x, device), dim=(1, 2))
    np.testing.assert_allclose(host(y), x / np.sqrt((x.astype(np.float64) ** 2).sum((1, 2), keepdims=True)),
                               rtol=1e-5, atol=1e-6)
    assert gradcheck(lambda t: F.normalize(t, dim=0), (f64((3, 4), device),))
    out = npusim.empty((3, 4, 5), device=device)
    assert F.normalize(tensor(x, device), out=out) is out
    np.testing.assert_allclose(host(out), x / np.linalg.norm(x, axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


# --- errors -------------------------------------------------------------------------------------------------------

class Lib:
    def __init__(self, mod, device="cpu"):
        self.mod, self.device = mod, device
        self.F = mod.nn.functional

    def t(self, shape, dtype="float32"):
        return self.mod.tensor(rand(shape), device=self.device).to(getattr(self.mod, dtype))

    def ones(self, n, dtype="float32"):
        return self.mod.ones(n, dtype=getattr(self.mod, dtype), device=self.device)

    @property
    def aten(self):
        return self.mod.ops.aten


X = (2, 4, 8, 8)

ERRORS = [
    ("ln-shape", lambda L: L.F.layer_norm(L.t(X), (7,)), RuntimeError,
     "Given normalized_shape=[7], expected input with shape [*, 7], but got input of size[2, 4, 8, 8]"),
    ("ln-shape-too-long", lambda L: L.F.layer_norm(L.t((4, 8)), (2, 4, 8)), RuntimeError,
     "Given normalized_shape=[2, 4, 8], expected input with shape [*, 2, 4, 8], but got input of size[4, 8]"),
    ("ln-weight", lambda L: L.F.layer_norm(L.t(X), (8,), L.ones(7)), RuntimeError,
     "Expected weight to be of same shape as normalized_shape, but got weight of shape [7] and normalized_shape = [8]"),
    ("ln-bias", lambda L: L.F.layer_norm(L.t(X), (8,), None, L.ones(7)), RuntimeError,
     "Expected bias to be of same shape as normalized_shape, but got bias of shape [7] and normalized_shape = [8]"),
    ("ln-empty-shape", lambda L: L.F.layer_norm(L.t(X), ()), RuntimeError,
     "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got "
     "normalized_shape = []"),
    ("ln-int-shape", lambda L: L.F.layer_norm(L.t(X), 8), TypeError,
     "layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not int"),
    ("ln-long", lambda L: L.F.layer_norm(L.t(X, "int64"), (8,)), NotImplementedError,
     "\"LayerNormKernelImpl\" not implemented for 'Long'"),
    ("ln-mixed-double-weight", lambda L: L.F.layer_norm(L.t(X), (8,), L.ones(8, "float64")), RuntimeError,
     "mixed dtype (CPU): expect parameter to have scalar type of Float"),
    ("ln-mixed-half-weight", lambda L: L.F.layer_norm(L.t(X), (8,), L.ones(8, "float16")), RuntimeError,
     "mixed dtype (CPU): expect parameter to have scalar type of Float"),
    ("rms-shape", lambda L: L.F.rms_norm(L.t(X), (7,)), RuntimeError,
     "Given normalized_shape=[7], expected input with shape [*7], but got input of size[2, 4, 8, 8]"),
    ("rms-shape-2", lambda L: L.F.rms_norm(L.t((3, 4)), (2, 4)), RuntimeError,
     "Given normalized_shape=[2, 4], expected input with shape [*2, 4], but got input of size[3, 4]"),
    ("rms-weight", lambda L: L.F.rms_norm(L.t(X), (8,), L.ones(7)), RuntimeError,
     "Expected weight to be of same shape as normalized_shape, but got weight of shape [7] and normalized_shape = [8]"),
    ("rms-empty-shape", lambda L: L.F.rms_norm(L.t(X), ()), RuntimeError,
     "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got "
     "normalized_shape = []"),
    ("rms-long", lambda L: L.F.rms_norm(L.t(X, "int64"), (8,)), NotImplementedError,
     "\"rms_norm\" not implemented for 'Long'"),
    ("bn-batch-of-one", lambda L: L.F.batch_norm(L.t((1, 4)), L.ones(4) * 0, L.ones(4), training=True), ValueError,
     "Expected more than 1 value per channel when training, got input size "),
    ("bn-one-value-4d", lambda L: L.F.batch_norm(L.t((1, 4, 1, 1)), None, None, training=True), ValueError,
     "Expected more than 1 value per channel when training, got input size "),
    ("bn-running-mean-size", lambda L: L.F.batch_norm(L.t(X), L.ones(3), L.ones(4), training=True), RuntimeError,
     "running_mean should contain 4 elements not 3"),
    ("bn-running-var-size", lambda L: L.F.batch_norm(L.t(X), L.ones(4), L.ones(3), training=True), RuntimeError,
     "running_var should contain 4 elements not 3"),
    ("bn-weight-size", lambda L: L.F.batch_norm(L.t(X), L.ones(4), L.ones(4), L.ones(3), training=True), RuntimeError,
     "weight should contain 4 elements not 3"),
    ("bn-bias-size", lambda L: L.F.batch_norm(L.t(X), L.ones(4), L.ones(4), None, L.ones(3)), RuntimeError,
     "bias should contain 4 elements not 3"),
    ("bn-eval-needs-mean", lambda L: L.F.batch_norm(L.t(X), None, None, training=False), RuntimeError,
     "running_mean must be defined in evaluation mode"),
    ("bn-eval-needs-var", lambda L: L.F.batch_norm(L.t(X), L.ones(4), None, training=False), RuntimeError,
     "running_var must be defined in evaluation mode"),
    ("bn-long", lambda L: L.F.batch_norm(L.t(X, "int64"), L.ones(4), L.ones(4)), NotImplementedError,
     "\"batch_norm\" not implemented for 'Long'"),
    ("bn-mixed-double-stats", lambda L: L.F.batch_norm(L.t(X), L.ones(4, "float64"), L.ones(4, "float64")),
     RuntimeError, "mixed dtype (CPU): expect parameter to have scalar type of Float"),
    ("bn-double-input-float-stats", lambda L: L.F.batch_norm(L.t(X, "float64"), L.ones(4), L.ones(4)), RuntimeError,
     "mixed dtype (CPU): all inputs must share same datatype."),
    ("gn-groups-divide", lambda L: L.F.group_norm(L.t(X), 3), RuntimeError,
     "Expected number of channels in input to be divisible by num_groups, but got input of shape [2, 4, 8, 8] and "
     "num_groups=3"),
    ("gn-weight", lambda L: L.F.group_norm(L.t(X), 2, L.ones(3)), RuntimeError,
     "Expected weight to be a vector of size equal to the number of channels in input, but got weight of shape [3] "
     "and input of shape [2, 4, 8, 8]"),
    ("gn-bias", lambda L: L.F.group_norm(L.t(X), 2, L.ones(4), L.ones(3)), RuntimeError,
     "Expected bias to be a vector of size equal to the number of channels in input, but got bias of shape [4] and "
     "input of shape [2, 4, 8, 8]"),
    ("gn-bias-no-weight", lambda L: L.F.group_norm(L.t(X), 2, None, L.ones(3)), RuntimeError,
     "Expected bias to be a vector of size equal to the number of channels in input, but got bias of shape [0] and "
     "input of shape [2, 4, 8, 8]"),
    ("gn-zero-groups", lambda L: L.F.group_norm(L.t(X), 0), ZeroDivisionError, "integer division or modulo by zero"),
    ("gn-1d", lambda L: L.F.group_norm(L.t(4), 2), RuntimeError,
     "Expected at least 2 dimensions for input tensor but received 1"),
    ("gn-one-value", lambda L: L.F.group_norm(L.t((1, 2)), 2), ValueError,
     "Expected more than 1 value per channel when training, got input size [1, 2]"),
    ("gn-long", lambda L: L.F.group_norm(L.t(X, "int64"), 2), NotImplementedError,
     "\"GroupNormKernelImpl\" not implemented for 'Long'"),
    ("gn-mixed", lambda L: L.F.group_norm(L.t(X), 2, L.ones(4, "float64")), RuntimeError,
     "mixed dtype (CPU): expect parameter to have scalar type of Float"),
    ("vnorm-long", lambda L: L.aten.linalg_vector_norm(L.t(X, "int64")), RuntimeError,
     "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"),
    ("vnorm-narrowing", lambda L: L.aten.linalg_vector_norm(L.t(X, "float64"), dtype=L.mod.float32), RuntimeError,
     "linalg.vector_norm: the dtype of the input (Double) should be convertible without narrowing to the specified "
     "dtype (Float)"),
    ("vnorm-int-dtype", lambda L: L.aten.linalg_vector_norm(L.t(X), dtype=L.mod.int64), RuntimeError,
     "linalg.vector_norm: dtype should be floating point or complex, but got Long"),
    ("normalize-long", lambda L: L.F.normalize(L.t(X, "int64")), RuntimeError,
     "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"),
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


def test_batch_norm_needs_channels():
    with pytest.raises(RuntimeError, match=re.escape("batch_norm: expected an input of at least 2 dims (N, C, *), "
                                                     "but got input of size [4]")):
        F.batch_norm(npusim.ones(4), npusim.zeros(4), npusim.ones(4))


# --- oracle: values, statistics and gradients ---------------------------------------------------------------------

def _run(lib, device, fn, arrays, extra):
    dev = device if lib is npusim else "cpu"
    ts = [lib.tensor(a, device=dev, requires_grad=True) for a in arrays]
    stats = [lib.tensor(a, device=dev) for a in extra]
    out = fn(lib.nn.functional, *ts, *stats)
    g = rand(tuple(out.shape), 9)
    out.backward(lib.tensor(g, device=dev).to(out.dtype))
    return ([out.detach().cpu().float().numpy()] + [t.grad.cpu().float().numpy() for t in ts] +
            [s.cpu().float().numpy() for s in stats]), str(out.dtype).split(".")[-1]


ORACLE_CASES = [
    ("layer_norm", lambda F, x, w, b: F.layer_norm(x, (16, 10), w, b, eps=1e-3),
     [(8, 12, 16, 10), (16, 10), (16, 10)], []),
    ("layer_norm-plain", lambda F, x: F.layer_norm(x, (64,)), [(32, 20, 64)], []),
    ("rms_norm", lambda F, x, w: F.rms_norm(x, (64,), w), [(32, 20, 64), (64,)], []),
    ("batch_norm-train", lambda F, x, w, b, rm, rv: F.batch_norm(x, rm, rv, w, b, True, 0.2),
     [(16, 8, 10, 12), (8,), (8,)], [(8,), (8,)]),
    ("batch_norm-eval", lambda F, x, w, b, rm, rv: F.batch_norm(x, rm, rv, w, b, False),
     [(16, 8, 10, 12), (8,), (8,)], [(8,), (8,)]),
    ("batch_norm-1d", lambda F, x, rm, rv: F.batch_norm(x, rm, rv, training=True), [(32, 6)], [(6,), (6,)]),
    ("group_norm", lambda F, x, w, b: F.group_norm(x, 4, w, b), [(8, 16, 10, 12), (16,), (16,)], []),
    ("normalize", lambda F, x: F.normalize(x, p=1.5, dim=-1), [(8, 16, 10)], []),
]


@pytest.mark.oracle
@pytest.mark.parametrize("fn,shapes,extra", [c[1:] for c in ORACLE_CASES], ids=[c[0] for c in ORACLE_CASES])
def test_values_gradients_and_running_stats_match_torch(torch, device, fn, shapes, extra):
    arrays = [rand(s, i) for i, s in enumerate(shapes)]
    stats = [rand(extra[0], 10), np.abs(rand(extra[1], 11)) + 0.5] if extra else []
    ours, our_dt = _run(npusim, device, fn, arrays, stats)
    theirs, their_dt = _run(torch, "cpu", fn, arrays, stats)
    assert our_dt == their_dt
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.oracle
def test_half_precision_matches_torch(torch, device):
    x = rand((8, 6, 10)).astype(np.float16)
    w, b = rand(6, 1), rand(6, 2)
    cases = [
        lambda F, x, w, b: F.layer_norm(x, (10,)),
        lambda F, x, w, b: F.group_norm(x, 3, w, b),
        lambda F, x, w, b: F.batch_norm(x, None, None, w, b, True),
        lambda F, x, w, b: F.rms_norm(x, (10,)),
    ]
    for fn in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = fn(F, tensor(x, device), tensor(w, device), tensor(b, device))
            theirs = fn(torch.nn.functional, torch.tensor(x), torch.tensor(w), torch.tensor(b))
        assert ours.dtype is npusim.float16 and theirs.dtype == torch.float16
        np.testing.assert_allclose(host(ours).astype(np.float32), theirs.float().numpy(), rtol=1e-2, atol=1e-2)


def _layer_norm_reference(x, k, w, b, eps):
    """The layer-norm kernels' arithmetic written plainly (fresh temporaries): their work arrays must not move a
    bit."""
    acc = np.dtype(np.float32 if x.dtype == np.float16 else x.dtype).type
    axes = tuple(range(x.ndim - k, x.ndim))
    xf = x.astype(acc)
    mean = xf.mean(axis=axes, keepdims=True)
    y = xf - mean
    rstd = 1 / np.sqrt((y * y).mean(axis=axes, keepdims=True) + acc(eps))
    y = y * rstd
    if w is not None:
        y *= w.astype(acc)
        y += b.astype(acc)
    return y.astype(x.dtype), mean, rstd


def _layer_norm_backward_reference(dy, x, k, mean, rstd, w):
    acc = np.dtype(np.float32 if x.dtype == np.float16 else x.dtype).type
    n = int(np.prod(x.shape[x.ndim - k:]))
    m = x.size // n
    xf, g = x.astype(acc).reshape(m, n), dy.astype(acc).reshape(m, n)
    mean, rstd = mean.astype(acc).reshape(m, 1), rstd.astype(acc).reshape(m, 1)
    gg = g if w is None else g * w.astype(acc).reshape(1, n)
    ds, db = np.einsum("ij,ij->i", gg, xf).reshape(m, 1), (gg @ np.ones(n, acc)).reshape(m, 1)
    scale = acc(1 / n)
    bb = (db * mean - ds) * rstd * rstd * rstd * scale
    c = -bb * mean - db * rstd * scale
    dx = gg * rstd + xf * bb + c
    xhat = xf - mean   # scaled in place, keeping x's layout (the column sums run over it)
    xhat *= rstd
    xhat *= g
    ones = np.ones(m, acc)
    return dx.astype(x.dtype).reshape(x.shape), (ones @ xhat).reshape(x.shape[x.ndim - k:]), \
        (ones @ g).reshape(x.shape[x.ndim - k:])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("layout", ["contiguous", "strided x", "strided grad"])
def test_layer_norm_kernels_work_arrays_keep_the_bits(dtype, layout):
    from npusim.kernels import nn_norm as K
    rng = np.random.default_rng(11)
    for shape, k in (((4, 6, 10), 1), ((8, 130), 1), ((3, 5, 4, 6), 2)):
        x, g = ((rng.standard_normal(shape) * 3 + 1).astype(dtype) for _ in range(2))
        if layout == "strided x":
            x = np.ascontiguousarray(np.swapaxes(x, 0, -1)).swapaxes(0, -1)
        if layout == "strided grad":
            g = np.ascontiguousarray(np.swapaxes(g, 0, -1)).swapaxes(0, -1)
        w, b = (rng.standard_normal(shape[-k:]).astype(dtype) for _ in range(2))
        stat = np.float32 if dtype == np.float16 else dtype
        y, mean, rstd = K.layer_norm(x, k, w, b, 1e-5, stat)
        ry, rmean, rrstd = _layer_norm_reference(x, k, w, b, 1e-5)
        for a, r in ((y, ry), (mean, rmean), (rstd, rrstd)):
            assert np.array_equal(np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(r).view(np.uint8))
        got = K.layer_norm_backward(g, x, k, mean, rstd, w, [True, True, True])
        want = _layer_norm_backward_reference(g, x, k, mean, rstd, w)
        for a, r in zip(got, want):
            assert np.array_equal(np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(r).view(np.uint8))
