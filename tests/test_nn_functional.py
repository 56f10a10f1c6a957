"""npusim.nn.functional: activations, softmax forms, one_hot, embedding, linear, dropout, padding,
losses, cosine similarity and attention.

Values are checked against NumPy references on every device, gradients with
gradcheck in float64; the ``oracle`` tests compare values, gradients, dtypes and
error messages with PyTorch.
"""
from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest

import npusim
import npusim.nn.functional as F
from conftest import checked_on_device, host, reported_later
from npusim.kernels import device_checks as DC
from npusim.autograd import gradcheck, gradgradcheck

pytestmark = pytest.mark.filterwarnings(r"ignore::RuntimeWarning:npusim\.(kernels|native)")

RNG = np.random.default_rng(7)
X = RNG.uniform(-4, 4, (3, 5))
erf = np.vectorize(math.erf)


def tensor(values, device, dtype=None, requires_grad=False):
    t = npusim.tensor(np.asarray(values), device=device, dtype=dtype)
    return t.requires_grad_() if requires_grad else t


def leaf64(values, device):
    return tensor(values, device, npusim.float64, requires_grad=True)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def softplus_ref(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


def torch_message(e) -> str:
    """A torch error message as npusim words it (type names say npusim)."""
    return re.escape(str(e).replace("torch.", "npusim."))


def same_error(torch_call, npusim_call):
    """npusim raises the exception type and message torch raises."""
    with pytest.raises(Exception) as expected:
        torch_call()
    with pytest.raises(type(expected.value), match=torch_message(expected.value)):
        npusim_call()


# --- activations ---------------------------------------------------------------------------------------

SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

# name -> (npusim call, torch call, NumPy reference)
ACTIVATIONS = {
    "gelu": (F.gelu, "gelu", lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2)))),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), lambda F_, x: F_.gelu(x, approximate="tanh"),
                  lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))),
    "silu": (F.silu, "silu", lambda x: x * sigmoid(x)),
    "selu": (F.selu, "selu", lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x))),
    "celu": (lambda x: F.celu(x, 0.5), lambda F_, x: F_.celu(x, 0.5),
             lambda x: np.where(x > 0, x, 0.5 * np.expm1(x / 0.5))),
    "elu": (lambda x: F.elu(x, 0.7), lambda F_, x: F_.elu(x, 0.7), lambda x: np.where(x > 0, x, 0.7 * np.expm1(x))),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), lambda F_, x: F_.leaky_relu(x, 0.2),
                   lambda x: np.where(x > 0, x, 0.2 * x)),
    "relu": (F.relu, "relu", lambda x: np.maximum(x, 0)),
    "relu6": (F.relu6, "relu6", lambda x: np.clip(x, 0, 6)),
    "softplus": (lambda x: F.softplus(x, 2.0, 3.0), lambda F_, x: F_.softplus(x, 2.0, 3.0),
                 lambda x: softplus_ref(x, 2.0, 3.0)),
    "hardtanh": (lambda x: F.hardtanh(x, -1.5, 2.0), lambda F_, x: F_.hardtanh(x, -1.5, 2.0),
                 lambda x: np.clip(x, -1.5, 2.0)),
    "hardsigmoid": (F.hardsigmoid, "hardsigmoid", lambda x: np.clip(x / 6 + 0.5, 0, 1)),
    "hardswish": (F.hardswish, "hardswish", lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "mish": (F.mish, "mish", lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    "logsigmoid": (F.logsigmoid, "logsigmoid", lambda x: -np.log1p(np.exp(-x))),
    "threshold": (lambda x: F.threshold(x, 0.5, -2.0), lambda F_, x: F_.threshold(x, 0.5, -2.0),
                  lambda x: np.where(x > 0.5, x, -2.0)),
    "glu": (F.glu, "glu", lambda x: x[..., :2] * sigmoid(x[..., 2:4])),
    "softsign": (F.softsign, "softsign", lambda x: x / (1 + np.abs(x))),
    "tanhshrink": (F.tanhshrink, "tanhshrink", lambda x: x - np.tanh(x)),
}


def _glu_input(x):
    return x[..., :4]


def _call_torch(spec, F_, x):
    return getattr(F_, spec)(x) if isinstance(spec, str) else spec(F_, x)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_values_match_numpy(device, name):
    fn, _, ref = ACTIVATIONS[name]
    x = _glu_input(X) if name == "glu" else X
    r = fn(tensor(x, device, npusim.float64))
    assert r.device.type == device and r.dtype is npusim.float64
    np.testing.assert_allclose(host(r), ref(x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(set(ACTIVATIONS) - {"relu"}))
def test_activation_gradients_pass_gradcheck(device, name):
    fn = ACTIVATIONS[name][0]
    # keep away from the kinks, where finite differences straddle two branches
    x = np.array([[-2.7, -1.3, -0.6, 0.3], [0.8, 1.6, 2.4, 3.4]])
    assert gradcheck(fn, (leaf64(x, device),))
    assert gradgradcheck(fn, (leaf64(x, device),))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("name", ["gelu", "silu", "elu", "softplus", "mish", "logsigmoid", "hardswish"])
def test_activations_keep_the_floating_dtype(device, name, dtype):
    fn, _, ref = ACTIVATIONS[name]
    dt = getattr(npusim, dtype)
    r = fn(tensor(X, device, npusim.float32).to(dt))
    assert r.dtype is dt and r.shape == X.shape
    expected = ref(host(tensor(X, "cpu", npusim.float32).to(dt)).astype(np.float64))
    np.testing.assert_allclose(host(r), expected, rtol=2e-2 if dtype != "float32" else 1e-5, atol=1e-2)


@pytest.mark.parametrize("name, inplace", [
    ("relu", F.relu_), ("elu", lambda x: F.elu_(x, 0.7)), ("leaky_relu", lambda x: F.leaky_relu_(x, 0.2)),
    ("hardtanh", lambda x: F.hardtanh_(x, -1.5, 2.0)), ("threshold", lambda x: F.threshold_(x, 0.5, -2.0)),
    ("selu", lambda x: F.selu(x, inplace=True)), ("silu", lambda x: F.silu(x, inplace=True)),
    ("mish", lambda x: F.mish(x, inplace=True)), ("hardswish", lambda x: F.hardswish(x, inplace=True)),
    ("hardsigmoid", lambda x: F.hardsigmoid(x, inplace=True)), ("relu6", lambda x: F.relu6(x, inplace=True)),
    ("celu", lambda x: F.celu(x, 0.5, inplace=True)),
])
def test_inplace_activations_write_into_their_input(device, name, inplace):
    x = tensor(X, device, npusim.float64)
    version = x._version
    r = inplace(x)
    assert r is x and x._version > version
    np.testing.assert_allclose(host(x), ACTIVATIONS[name][2](X), rtol=1e-12, atol=1e-12)


def test_inplace_activation_on_a_non_leaf_has_the_out_of_place_gradient(device):
    a = leaf64(X, device)
    y = F.elu(a * 1.0, 0.7, inplace=True)
    y.sum().backward()
    np.testing.assert_allclose(host(a.grad), np.where(X > 0, 1.0, 0.7 * np.exp(X)), rtol=1e-12)


def test_inplace_activation_on_a_leaf_that_requires_grad_is_refused(device):
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        F.silu(leaf64(X, device), inplace=True)


def test_integral_inputs_keep_their_dtype_where_torch_allows_them(device):
    x = tensor([-2, -1, 0, 1, 2, 7], device)
    assert host(F.hardtanh(x, -1.5, 1.5)).tolist() == [-1, -1, 0, 1, 1, 1]
    assert host(F.relu6(x)).tolist() == [0, 0, 0, 1, 2, 6]
    assert host(F.threshold(x, 1.5, -7.9)).tolist() == [-7, -7, -7, -7, 2, 7]
    assert F.relu6(x).dtype is npusim.int64


@pytest.mark.parametrize("call, error, message", [
    (lambda x: F.gelu(x), NotImplementedError, "\"GeluKernelImpl\" not implemented for 'Long'"),
    (lambda x: F.silu(x), NotImplementedError, "\"silu_cpu\" not implemented for 'Long'"),
    (lambda x: F.elu(x), NotImplementedError, "\"elu_cpu\" not implemented for 'Long'"),
    (lambda x: F.selu(x), NotImplementedError, "\"elu_cpu\" not implemented for 'Long'"),
    (lambda x: F.leaky_relu(x), NotImplementedError, "\"leaky_relu_cpu\" not implemented for 'Long'"),
    (lambda x: F.softplus(x), NotImplementedError, "\"softplus_cpu\" not implemented for 'Long'"),
    (lambda x: F.mish(x), NotImplementedError, "\"mish_cpu\" not implemented for 'Long'"),
    (lambda x: F.logsigmoid(x), NotImplementedError, "\"log_sigmoid_cpu\" not implemented for 'Long'"),
    (lambda x: F.hardswish(x), NotImplementedError, "\"hardswish_cpu\" not implemented for 'Long'"),
    (lambda x: F.hardsigmoid(x), NotImplementedError, "\"hardsigmoid_cpu\" not implemented for 'Long'"),
    (lambda x: F.glu(x[:4]), NotImplementedError, "\"glu_cpu\" not implemented for 'Long'"),
    (lambda x: F.hardtanh(x > 0), RuntimeError, "Bool inputs not supported for hardtanh"),
    (lambda x: F.threshold(x > 0, 0, 1), NotImplementedError, "\"threshold_cpu\" not implemented for 'Bool'"),
    (lambda x: F.gelu(x.double(), approximate="fast"), RuntimeError,
     "approximate argument must be either none or tanh."),
    (lambda x: F.hardtanh(x.double(), 2.0, 1.0), ValueError, "min_val cannot be greater than max_val"),
    (lambda x: F.glu(x[:5].double()), RuntimeError, "Halving dimension must be even, but dimension 0 is size 5"),
    (lambda x: F.glu(x[0].double()), RuntimeError, "glu does not support scalars because halving size must be even"),
    (lambda x: F.glu(x.double(), dim=1), IndexError, "Dimension out of range"),
    (lambda x: F.relu(3), TypeError, "relu\\(\\): argument 'input' \\(position 1\\) must be Tensor, not int"),
])
def test_activation_errors(device, call, error, message):
    with pytest.raises(error, match=message):
        call(tensor([-2, -1, 0, 1, 2, 7], device))


def test_softplus_and_log_sigmoid_are_stable_far_from_zero(device):
    x = tensor([-1000.0, -50.0, 50.0, 1000.0], device, npusim.float32)
    np.testing.assert_allclose(host(F.logsigmoid(x)), [-1000.0, -50.0, 0.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(host(F.softplus(x, threshold=1e9)), [0.0, 0.0, 50.0, 1000.0], atol=1e-6)
    np.testing.assert_allclose(host(F.mish(x)), [0.0, 0.0, 50.0, 1000.0], atol=1e-6)


def test_logit_clamps_with_eps_and_its_gradient_vanishes_outside(device):
    p = leaf64([0.05, 0.1, 0.5, 0.9, 0.95], device)
    r = npusim.ops.aten.logit.default(p, 0.1)
    np.testing.assert_allclose(host(r), np.log(np.array([0.1, 0.1, 0.5, 0.9, 0.9]) / (1 - np.array([0.1, 0.1, 0.5,
                                                                                                   0.9, 0.9]))))
    r.sum().backward()
    np.testing.assert_allclose(host(p.grad), [0, 1 / 0.09, 4, 1 / 0.09, 0])


def test_prelu_has_one_slope_per_channel(device):
    x = RNG.uniform(-2, 2, (2, 3, 4))
    w = np.array([0.1, 0.2, 0.3])
    r = F.prelu(tensor(x, device), tensor(w, device))
    np.testing.assert_allclose(host(r), np.where(x > 0, x, w[None, :, None] * x))
    assert gradcheck(F.prelu, (leaf64(x, device), leaf64(w, device)))
    assert gradcheck(F.prelu, (leaf64(x, device), leaf64([0.25], device)))


@pytest.mark.parametrize("x_shape, w_shape, message", [
    ((3, 4), (3,), "Mismatch of parameter numbers and input channel size. Found parameter numbers = 3 and "
                   "channel size = 4."),
    ((4,), (4,), "Mismatch of parameter numbers and input channel size. Found parameter numbers = 4 and "
                 "channel size = 1."),
    ((3, 4), (2, 2), "prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = 2"),
])
def test_prelu_errors(device, x_shape, w_shape, message):
    with pytest.raises(RuntimeError, match=re.escape(message)):
        F.prelu(tensor(np.ones(x_shape), device), tensor(np.ones(w_shape), device))


def test_prelu_refuses_mixed_dtypes(device):
    with pytest.raises(RuntimeError, match="prelu: Type promoting not supported. Got Double and Float"):
        F.prelu(tensor(np.ones(3), device), tensor(np.ones(1), device, npusim.float32))


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activations_match_torch_values_and_gradients(torch, device, name):
    fn, spec, _ = ACTIVATIONS[name]
    x = (_glu_input(X) if name == "glu" else X).astype(np.float32)
    a = tensor(x, device, npusim.float32, requires_grad=True)
    b = torch.tensor(x, requires_grad=True)
    r, e = fn(a), _call_torch(spec, torch.nn.functional, b)
    assert tuple(r.shape) == tuple(e.shape) and str(r.dtype) == str(e.dtype).replace("torch", "npusim")
    np.testing.assert_allclose(host(r), e.detach().numpy(), rtol=1e-5, atol=1e-6)
    g = RNG.standard_normal(tuple(e.shape)).astype(np.float32)
    r.backward(tensor(g, device))
    e.backward(torch.tensor(g))
    np.testing.assert_allclose(host(a.grad), b.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.oracle
@pytest.mark.parametrize("name", ["gelu", "silu", "elu", "leaky_relu", "hardtanh", "hardsigmoid", "hardswish",
                                  "mish", "logsigmoid", "softplus", "threshold", "relu6", "selu", "glu"])
def test_activation_errors_on_integral_and_bool_inputs_match_torch(torch, device, name):
    fn, spec, _ = ACTIVATIONS[name]
    for values in ([1, 2, 3, 4], [True, False, True, False]):
        t_in = torch.tensor(values)
        try:
            expected = _call_torch(spec, torch.nn.functional, t_in)
        except Exception as e:
            with pytest.raises(type(e), match=torch_message(e)):
                fn(tensor(values, device))
        else:
            r = fn(tensor(values, device))
            assert str(r.dtype) == str(expected.dtype).replace("torch", "npusim")
            assert host(r).tolist() == expected.tolist()


def test_kinks_take_torchs_side(device):
    x = leaf64([-1.0, 0.0, 1.0], device)
    F.hardtanh(x).sum().backward()
    assert host(x.grad).tolist() == [0.0, 1.0, 0.0]
    x = leaf64([-3.0, 0.0, 3.0], device)
    F.hardswish(x).sum().backward()
    np.testing.assert_allclose(host(x.grad), [0.0, 0.5, 1.0])
    x = leaf64([0.0], device)
    F.elu(x).sum().backward()
    assert host(x.grad).tolist() == [1.0]   # torch takes elu's negative branch at 0: alpha * exp(0)


# --- softmax family ---------------------------------------------------------------------------------------

def test_softmax_log_softmax_and_softmin_along_a_dim(device):
    x = tensor(X, device)
    e = np.exp(X - X.max(1, keepdims=True))
    np.testing.assert_allclose(host(F.softmax(x, dim=1)), e / e.sum(1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(host(F.log_softmax(x, 1)), np.log(e / e.sum(1, keepdims=True)), rtol=1e-12)
    m = np.exp(-X - (-X).max(0, keepdims=True))
    np.testing.assert_allclose(host(F.softmin(x, 0)), m / m.sum(0, keepdims=True), rtol=1e-12)
    assert F.softmax(tensor(X, device, npusim.float32), 1, dtype=npusim.float64).dtype is npusim.float64


def test_softmax_without_dim_warns_and_picks_torchs_dim(device):
    x = tensor(RNG.standard_normal((2, 3, 4)), device)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin has been deprecated"):
        r = F.softmin(x)
    np.testing.assert_allclose(host(r.sum(0)), np.ones((3, 4)))   # 3-D inputs normalise dim 0
    with pytest.warns(UserWarning, match="Implicit dimension choice for log_softmax"):
        F.log_softmax(tensor(X, device))


def test_softmin_gradient(device):
    assert gradcheck(lambda x: F.softmin(x, 1), (leaf64(X, device),))


# --- one_hot -------------------------------------------------------------------------------------------

def test_one_hot_infers_or_takes_the_number_of_classes(device):
    idx = tensor([[0, 2], [1, 2]], device)
    r = F.one_hot(idx)
    assert r.dtype is npusim.int64 and r.shape == (2, 2, 3) and r.device.type == device
    assert host(r).tolist() == np.eye(3, dtype=np.int64)[[[0, 2], [1, 2]]].tolist()
    assert F.one_hot(idx, 5).shape == (2, 2, 5)
    assert F.one_hot(tensor(np.zeros(0, np.int64), device), 3).shape == (0, 3)


@pytest.mark.parametrize("values, num_classes, message", [
    ([1.0, 2.0], -1, "one_hot is only applicable to index tensor of type LongTensor."),
    (np.array([1, 2], np.int32), -1, "one_hot is only applicable to index tensor of type LongTensor."),
    ([1, -1], -1, "Class values must be non-negative."),
    ([1, 5], 3, "Class values must be smaller than num_classes."),
    ([1, 2], 0, "Class values must be smaller than num_classes."),
    (np.zeros(0, np.int64), -1, "Can not infer total number of classes from empty tensor."),
])
def test_one_hot_errors(device, values, num_classes, message):
    if message.startswith("Class values") and checked_on_device(device):
        with reported_later(DC.ONE_HOT):   # torch's CUDA path leaves these to a device-side assert too
            F.one_hot(tensor(values, device), num_classes)
        return
    with pytest.raises(RuntimeError, match=re.escape(message)):
        F.one_hot(tensor(values, device), num_classes)


# --- embedding ----------------------------------------------------------------------------------------------

W = RNG.standard_normal((6, 3))


def test_embedding_looks_up_rows(device):
    idx = np.array([[1, 5], [0, 1]])
    r = F.embedding(tensor(idx, device), tensor(W, device))
    assert r.shape == (2, 2, 3)
    np.testing.assert_array_equal(host(r), W[idx])
    np.testing.assert_array_equal(host(F.embedding(tensor(idx.astype(np.int32), device), tensor(W, device))), W[idx])


def test_embedding_gradient_sums_lookups_and_skips_the_padding_row(device):
    w = leaf64(W, device)
    idx = tensor([[1, 5, 1], [0, 1, 5]], device)
    F.embedding(idx, w, padding_idx=5).sum().backward()
    expected = np.zeros_like(W)
    expected[1], expected[0] = 3, 1
    np.testing.assert_array_equal(host(w.grad), expected)
    assert gradcheck(lambda w: F.embedding(idx, w), (leaf64(W, device),))


def test_embedding_negative_padding_idx_counts_from_the_end(device):
    w = leaf64(W, device)
    F.embedding(tensor([5, 4], device), w, padding_idx=-1).sum().backward()
    assert host(w.grad)[5].tolist() == [0, 0, 0] and host(w.grad)[4].tolist() == [1, 1, 1]


def test_embedding_scale_grad_by_freq_divides_by_the_count(device):
    w = leaf64(W, device)
    F.embedding(tensor([2, 2, 2, 3], device), w, scale_grad_by_freq=True).sum().backward()
    assert host(w.grad)[2].tolist() == [1, 1, 1] and host(w.grad)[3].tolist() == [1, 1, 1]


def test_embedding_double_backward(device):
    idx = tensor([[1, 5, 1], [0, 1, 5]], device)
    assert gradgradcheck(lambda w: F.embedding(idx, w) ** 2, (leaf64(W, device),))
    # the gradient op is linear in the incoming gradient, padding row and frequency scaling included
    dense_backward = npusim.ops.aten.embedding_dense_backward.default
    g = leaf64(RNG.standard_normal((2, 3, 3)), device)
    assert gradcheck(lambda g: dense_backward(g, idx, 6, 1, True), (g,))


def test_embedding_max_norm_renormalises_the_looked_up_rows_in_place(device):
    w = tensor(W * 10, device)
    r = F.embedding(tensor([0, 2], device), w, max_norm=1.0)
    norms = np.linalg.norm(host(w), axis=1)
    assert norms[0] <= 1.0 + 1e-6 and norms[2] <= 1.0 + 1e-6
    np.testing.assert_allclose(norms[[1, 3, 4, 5]], np.linalg.norm(W * 10, axis=1)[[1, 3, 4, 5]])
    np.testing.assert_allclose(np.linalg.norm(host(r), axis=1), [1.0, 1.0], rtol=1e-5)


@pytest.mark.parametrize("idx, kwargs, error, message", [
    ([1.0, 2.0], {}, RuntimeError, "Expected tensor for argument #1 'indices' to have one of the following scalar "
                                   "types: Long, Int; but got npusim(.npu)?.DoubleTensor instead \\(while checking "
                                   "arguments for embedding\\)"),
    ([1, 6], {}, IndexError, "index out of range in self"),
    ([1, -1], {}, IndexError, "index out of range in self"),
    ([1], {"padding_idx": 6}, AssertionError, "Padding_idx must be within num_embeddings"),
    ([1], {"padding_idx": -7}, AssertionError, "Padding_idx must be within num_embeddings"),
    ([1], {"sparse": True}, NotImplementedError, "npusim has no sparse tensors"),
])
def test_embedding_errors(device, idx, kwargs, error, message):
    if message == "index out of range in self" and checked_on_device(device):
        with reported_later(DC.EMBEDDING):
            F.embedding(tensor(idx, device), tensor(W, device), **kwargs)
        return
    with pytest.raises(error, match=message):
        F.embedding(tensor(idx, device), tensor(W, device), **kwargs)


def test_embedding_weight_must_be_2d(device):
    with pytest.raises(RuntimeError, match="'weight' must be 2-D"):
        F.embedding(tensor([1], device), tensor(np.ones(4), device))


# --- linear ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("x_shape", [(4,), (3, 4), (2, 3, 4)])
def test_linear_values_and_gradients(device, x_shape):
    x, w, b = RNG.standard_normal(x_shape), RNG.standard_normal((5, 4)), RNG.standard_normal(5)
    np.testing.assert_allclose(host(F.linear(tensor(x, device), tensor(w, device), tensor(b, device))),
                               x @ w.T + b, rtol=1e-12)
    np.testing.assert_allclose(host(F.linear(tensor(x, device), tensor(w, device))), x @ w.T, rtol=1e-12)
    assert gradcheck(F.linear, (leaf64(x, device), leaf64(w, device), leaf64(b, device)))
    assert gradgradcheck(F.linear, (leaf64(x, device), leaf64(w, device)))


def test_linear_errors(device):
    x = tensor(np.ones((3, 4)), device, npusim.float32)
    with pytest.raises(RuntimeError, match=re.escape("mat1 and mat2 shapes cannot be multiplied (3x4 and 3x5)")):
        F.linear(x, tensor(np.ones((5, 3)), device, npusim.float32))
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: float != double"):
        F.linear(x, tensor(np.ones((5, 4)), device))



@pytest.mark.parametrize("x1_shape, x2_shape", [((3, 4), (3, 2)), ((2, 3, 4), (2, 3, 2)), ((4,), (2,))])
def test_bilinear_values_and_gradients(device, x1_shape, x2_shape):
    x1, x2 = RNG.standard_normal(x1_shape), RNG.standard_normal(x2_shape)
    w, b = RNG.standard_normal((5, 4, 2)), RNG.standard_normal(5)
    expected = np.einsum("...i,oij,...j->...o", x1, w, x2)
    r = F.bilinear(tensor(x1, device), tensor(x2, device), tensor(w, device), tensor(b, device))
    np.testing.assert_allclose(host(r), expected + b, rtol=1e-12)
    np.testing.assert_allclose(host(F.bilinear(tensor(x1, device), tensor(x2, device), tensor(w, device))), expected,
                               rtol=1e-12)
    assert gradcheck(F.bilinear, (leaf64(x1, device), leaf64(x2, device), leaf64(w, device), leaf64(b, device)))


@pytest.mark.oracle
@pytest.mark.parametrize("shapes", [
    ((2, 3), (4,), (5, 3, 4), None), ((2, 3), (3, 4), (5, 3, 4), None), ((2, 2), (2, 4), (5, 3, 4), None),
    ((2, 3), (2, 5), (5, 3, 4), None), ((2, 3), (2, 4), (5, 3, 4), (6,)), ("x", (2, 4), (5, 3, 4), None),
    ((2, 3), (2, 4), (5, 3, 4), "b"),
], ids=["dims", "batch", "input1", "input2", "bias", "not-a-tensor", "bias-not-a-tensor"])
def test_bilinear_errors_match_torch(torch, device, shapes):
    def args(lib, dev):
        return [a if isinstance(a, str) or a is None else lib.ones(a, device=dev) for a in shapes]
    same_error(lambda: torch.nn.functional.bilinear(*args(torch, "cpu")),
               lambda: F.bilinear(*args(npusim, device)))


@pytest.mark.oracle
@pytest.mark.parametrize("need_weights", [True, False])
def test_multi_head_attention_forward_matches_torch(torch, device, need_weights):
    """The functional form behind nn.MultiheadAttention, called directly with torch's packed weights."""
    e, heads = 8, 2
    arrays = [RNG.standard_normal(s).astype(np.float32) for s in
              ((5, 3, e), (7, 3, e), (7, 3, e), (3 * e, e), (3 * e,), (e, e), (e,))]
    mask = RNG.random((3, 7)) > 0.7

    def run(lib, fn, dev):
        q, k, v, w_in, b_in, w_out, b_out = (lib.tensor(a, device=dev) for a in arrays)
        out, weights = fn(q, k, v, e, heads, w_in, b_in, None, None, False, 0.0, w_out, b_out, training=False,
                          key_padding_mask=lib.tensor(mask, device=dev), need_weights=need_weights)
        return out, weights

    ours = run(npusim, F.multi_head_attention_forward, device)
    theirs = run(torch, torch.nn.functional.multi_head_attention_forward, "cpu")
    # the output averages projected values and projects the average: the largest value it can reach per
    # channel, |v| @ |W_v|.T + |b_v| then |W_out|, bounds what each rounding can lose
    v, w_v, b_v, w_out, b_out = (a.astype(np.float64) for a in (arrays[2], arrays[3][2 * e:], arrays[4][2 * e:],
                                                                 arrays[5], arrays[6]))
    magnitude = (np.abs(v) @ np.abs(w_v).T + np.abs(b_v)).max(0) @ np.abs(w_out).T + np.abs(b_out)
    # torch's kernels (per CPU) and ours sum in other orders: two results, each within eps/2 per term of the float32
    # sums on the way (projections of 8 terms and a bias twice, scores of 4, softmax and average over 7 keys)
    bound = 2 * (9 + 4 + 7 + 7 + 9) * np.finfo(np.float32).eps / 2 * magnitude
    assert np.all(np.abs(host(ours[0]) - theirs[0].numpy()) <= bound)
    if need_weights:
        np.testing.assert_allclose(host(ours[1]), theirs[1].numpy(), rtol=1e-5, atol=1e-6)
    else:
        assert ours[1] is None and theirs[1] is None


def test_functional_exports_every_public_function():
    """``from npusim.nn.functional import *`` brings the convolution and attention functions too."""
    names = {}
    exec("from npusim.nn.functional import *", names)
    for name in ("conv2d", "layer_norm", "interpolate", "normalize", "bilinear", "multi_head_attention_forward",
                 "scaled_dot_product_attention"):
        assert names[name] is getattr(F, name)


# --- dropout -------------------------------------------------------------------------------------------------

def test_dropout_outside_training_or_with_p_zero_is_the_identity(device):
    x = tensor(X, device)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert F.alpha_dropout(x, 0.5) is x   # alpha_dropout's training defaults to False
    assert host(F.dropout(x, 1.0)).tolist() == np.zeros_like(X).tolist()


def test_dropout_zeroes_and_rescales(device):
    npusim.manual_seed(0)
    x = tensor(np.ones((200, 100)), device)
    r = host(F.dropout(x, 0.3))
    assert set(np.unique(r)) <= {0.0, 1 / 0.7}
    assert abs((r == 0).mean() - 0.3) < 0.02
    y = tensor(np.ones((50, 40)), device)
    F.dropout(y, 0.5, inplace=True)
    assert set(np.unique(host(y))) == {0.0, 2.0}


def test_dropout_gradient_uses_the_same_mask(device):
    npusim.manual_seed(1)
    x = leaf64(np.ones((20, 20)), device)
    r = F.dropout(x, 0.4)
    r.sum().backward()
    np.testing.assert_array_equal(host(x.grad), host(r))


def test_feature_dropout_drops_whole_channels(device):
    npusim.manual_seed(2)
    r = host(F.dropout2d(tensor(np.ones((8, 16, 3, 3)), device), 0.5))
    per_channel = r.reshape(8, 16, 9)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2).all(-1))
    r1 = host(F.dropout1d(tensor(np.ones((16, 5)), device), 0.5))   # unbatched (C, L)
    assert r1.shape == (16, 5) and np.all((r1 == 0).all(-1) | (r1 == 2).all(-1))
    assert F.dropout3d(tensor(np.ones((2, 3, 2, 2)), device), 0.5).shape == (2, 3, 2, 2)


def test_alpha_dropout_keeps_mean_and_variance_of_standard_inputs(device):
    npusim.manual_seed(3)
    r = host(F.alpha_dropout(tensor(RNG.standard_normal(200_000), device), 0.2, training=True))
    assert abs(r.mean()) < 0.02 and abs(r.std() - 1) < 0.02


def test_alpha_dropout_maps_kept_and_dropped_units_affinely(device):
    npusim.manual_seed(4)
    p, alpha = 0.25, SELU_ALPHA * SELU_SCALE
    a = 1 / math.sqrt((alpha ** 2 * p + 1) * (1 - p))
    r = host(F.alpha_dropout(tensor(np.full(4000, 2.0), device), p, training=True))
    dropped = np.isclose(r, -alpha * a * (1 - p))
    kept = np.isclose(r, 2.0 * a + alpha * a * p)
    assert np.all(dropped | kept) and abs(dropped.mean() - p) < 0.03


@pytest.mark.parametrize("call, error, message", [
    (lambda x: F.dropout(x, 1.5), ValueError, "dropout probability has to be between 0 and 1, but got 1.5"),
    (lambda x: F.dropout(x, -0.1), ValueError, "dropout probability has to be between 0 and 1, but got -0.1"),
    (lambda x: F.alpha_dropout(x, 2.0), ValueError, "dropout probability has to be between 0 and 1, but got 2.0"),
    (lambda x: F.dropout1d(x[None, None], 0.5), RuntimeError, "dropout1d: Expected 2D or 3D input, but received a 4D"),
    (lambda x: F.feature_alpha_dropout(x[0], 0.5, True), RuntimeError,
     "Feature dropout requires at least 2 dimensions in the input"),
])
def test_dropout_errors(device, call, error, message):
    with pytest.raises(error, match=message):
        call(tensor(X, device))


def test_dropout2d_warns_about_unusual_ranks(device):
    with pytest.warns(UserWarning, match="dropout2d: Received a 2-D input to dropout2d"):
        F.dropout2d(tensor(X, device), 0.5)


# --- padding --------------------------------------------------------------------------------------------------

X3 = RNG.standard_normal((2, 3, 5))
X4 = RNG.standard_normal((2, 3, 4, 5))
X5 = RNG.standard_normal((1, 2, 3, 4, 5))


def np_pad(x, pad, mode, value=0.0):
    """NumPy reference. Pads are listed from the last dim backwards; negative amounts crop (circular
    padding crops first and wraps the cropped tensor, as torch does)."""
    np_mode = {"reflect": "reflect", "replicate": "edge", "circular": "wrap", "constant": "constant"}[mode]
    kw = {"constant_values": value} if mode == "constant" else {}
    for k in range(len(pad) // 2):
        axis = x.ndim - 1 - k
        b, e = pad[2 * k], pad[2 * k + 1]
        if mode in ("constant", "circular"):
            x = np.take(x, np.arange(max(-b, 0), x.shape[axis] - max(-e, 0)), axis=axis)
            widths = [(0, 0)] * x.ndim
            widths[axis] = (max(b, 0), max(e, 0))
            x = np.pad(x, widths, mode=np_mode, **kw)
        else:
            widths = [(0, 0)] * x.ndim
            widths[axis] = (max(b, 0), max(e, 0))
            x = np.pad(x, widths, mode=np_mode)
            x = np.take(x, np.arange(max(-b, 0), x.shape[axis] - max(-e, 0)), axis=axis)
    return x


@pytest.mark.parametrize("x, pad", [(X3, (1, 2)), (X3, (2, 0, 1, 3)), (X4, (-1, 2)), (X4, (1, -2, 0, 1)),
                                    (X5, (1, 1, 2, 0, 0, 3)), (X3, ())])
def test_constant_pad_pads_and_crops(device, x, pad):
    r = F.pad(tensor(x, device), pad, value=2.5)
    np.testing.assert_array_equal(host(r), np_pad(x, pad, "constant", 2.5))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("x, pad", [(X3, (2, 3)), (X3[0], (1, 2)), (X3, (-1, 2)), (X4, (1, 2, 2, 1)),
                                    (X3, (3, 1, 2, 2)), (X5, (1, 2, 0, 3, 2, 1)), (X5[0], (2, 1, 1, 2, 1, 0))])
def test_mode_pads_match_numpy(device, mode, x, pad):
    r = F.pad(tensor(x, device), pad, mode=mode)
    np.testing.assert_array_equal(host(r), np_pad(x, pad, mode))


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_gradients(device, mode):
    x = RNG.standard_normal((1, 2, 3, 4))
    assert gradcheck(lambda t: F.pad(t, (2, -1, 1, 2), mode=mode), (leaf64(x, device),))
    assert gradgradcheck(lambda t: F.pad(t, (1, 1, 2, 0), mode=mode), (leaf64(x, device),))


def test_pad_keeps_integral_dtypes(device):
    x = tensor(np.arange(8).reshape(1, 2, 4), device)
    assert F.pad(x, (1, 1), mode="reflect").dtype is npusim.int64
    assert host(F.pad(x > 3, (1, 1), mode="circular")).dtype == np.bool_
    assert host(F.pad(x, (1, 1), value=2.7))[0, 0].tolist() == [2, 0, 1, 2, 3, 2]


@pytest.mark.parametrize("x, pad, kwargs, error, message", [
    (X3, (1, 2, 3), {}, RuntimeError, "Padding length must be divisible by 2"),
    (X[0], (1, 1, 1, 1), {}, RuntimeError, "Padding length should be less than or equal to two times the input "
                                           "dimension but got padding length 4 and input of dimension 1"),
    (X3, (1, 1), {"mode": "foo"}, NotImplementedError, "Unrecognised padding mode foo"),
    (X3, (1, 1), {"mode": "reflect", "value": 1.0}, RuntimeError,
     "Padding mode \"reflect\" doesn't take in value argument"),
    (X4, (1, 1), {"mode": "reflect"}, NotImplementedError, "Padding size 2 is not supported for 4D input tensor.\n"
                                                           "Supported combinations for non-constant padding"),
    (X3, (5, 1), {"mode": "reflect"}, RuntimeError, "Argument #4: Padding size should be less than the "
                                                    "corresponding input dimension, but got: padding \\(5, 1\\) at "
                                                    "dimension 2 of input \\[2, 3, 5\\]"),
    (X3, (6, 1), {"mode": "circular"}, RuntimeError, "Padding value causes wrapping around more than once."),
    (X3, (-3, -3), {"mode": "circular"}, RuntimeError, "Negative padding value is resulting in an empty dimension"),
    (X3, (-3, -2), {"mode": "replicate"}, RuntimeError, "input \\(W: 5\\) is too small. Calculated output W: 0"),
    (X3, (-3, -3), {}, RuntimeError, "narrow\\(\\): length must be non-negative."),
    (X3, (1.5, 2), {}, TypeError, "pad\\(\\): argument 'pad' \\(position 2\\) must be tuple of ints, but found "
                                  "element of type float at pos 0"),
])
def test_pad_errors(device, x, pad, kwargs, error, message):
    with pytest.raises(error, match=message):
        F.pad(tensor(x, device), pad, **kwargs)


def test_mode_pads_refuse_bool_and_empty_inputs(device):
    with pytest.raises(NotImplementedError, match="\"reflection_pad1d\" not implemented for 'Bool'"):
        F.pad(tensor(X3 > 0, device), (1, 1), mode="reflect")
    with pytest.raises(RuntimeError, match=re.escape("Expected 2D or 3D (batch mode) tensor with possibly 0 batch "
                                                     "size and other non-zero dimensions for input, but got: "
                                                     "[2, 0, 4]")):
        F.pad(tensor(np.ones((2, 0, 4)), device), (1, 1), mode="replicate")
    assert F.pad(tensor(np.ones((0, 3, 4)), device), (1, 1), mode="reflect").shape == (0, 3, 6)


@pytest.mark.oracle
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape, pad", [((2, 3, 5), (2, 3)), ((2, 3, 5), (-1, 2)), ((2, 3, 5), (2, -1)),
                                        ((2, 3, 4, 5), (1, 2, -1, 2)), ((1, 2, 3, 4, 5), (1, 2, 0, 3, 2, 1))])
def test_pad_matches_torch(torch, device, mode, shape, pad):
    x = RNG.standard_normal(shape).astype(np.float32)
    a, b = tensor(x, device, requires_grad=True), torch.tensor(x, requires_grad=True)
    r, e = F.pad(a, pad, mode=mode), torch.nn.functional.pad(b, pad, mode=mode)
    np.testing.assert_array_equal(host(r), e.detach().numpy())
    g = RNG.standard_normal(tuple(e.shape)).astype(np.float32)
    r.backward(tensor(g, device))
    e.backward(torch.tensor(g))
    np.testing.assert_allclose(host(a.grad), b.grad.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.oracle
@pytest.mark.parametrize("shape, pad, kwargs", [
    ((2, 3, 4), (4, 1), {"mode": "reflect"}), ((2, 3, 4, 5), (1, 1, 4, 1), {"mode": "reflect"}),
    ((1, 2, 3, 4, 5), (1, 1, 1, 1, 3, 1), {"mode": "reflect"}), ((2, 3, 4), (-3, -2), {"mode": "reflect"}),
    ((2, 3, 4), (-3, -2), {"mode": "circular"}), ((2, 3, 0), (1, 1), {"mode": "circular"}),
    ((2, 3, 0, 4), (1, 1, 1, 1), {"mode": "reflect"}), ((4,), (1, 1), {"mode": "circular"}),
    ((2, 3, 4, 5), (0, 0, -3, -2), {"mode": "replicate"}), ((3, 4), (1, 1, 1, 1, 1, 1), {}),
    ((3, 4), (-5, 1), {}), ((2, 3, 4), (1, 1), {"mode": "replicate", "value": 1.0}),
])
def test_pad_errors_match_torch(torch, device, shape, pad, kwargs):
    x = np.ones(shape, np.float32)
    same_error(lambda: torch.nn.functional.pad(torch.tensor(x), pad, **kwargs),
               lambda: F.pad(tensor(x, device), pad, **kwargs))


# --- losses ---------------------------------------------------------------------------------------------------

def reduce_np(loss, reduction):
    return {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction]


P = RNG.uniform(0.05, 0.95, (4, 3))
T = RNG.uniform(0, 1, (4, 3))
LOGITS = RNG.standard_normal((4, 3)) * 3


def smooth_l1_ref(d, beta):
    z = np.abs(d)
    return np.where(z < beta, 0.5 * z * z / beta, z - 0.5 * beta)


def huber_ref(d, delta):
    z = np.abs(d)
    return np.where(z < delta, 0.5 * z * z, delta * (z - 0.5 * delta))


POINTWISE_LOSSES = {
    "mse_loss": (F.mse_loss, lambda x, t: (x - t) ** 2),
    "l1_loss": (F.l1_loss, lambda x, t: np.abs(x - t)),
    "smooth_l1_loss": (lambda x, t, **kw: F.smooth_l1_loss(x, t, beta=0.5, **kw), lambda x, t: smooth_l1_ref(x - t, .5)),
    "huber_loss": (lambda x, t, **kw: F.huber_loss(x, t, delta=0.5, **kw), lambda x, t: huber_ref(x - t, 0.5)),
    "bce": (F.binary_cross_entropy, lambda x, t: -(t * np.log(x) + (1 - t) * np.log(1 - x))),
    "bce_logits": (F.binary_cross_entropy_with_logits,
                   lambda x, t: (1 - t) * x + np.log1p(np.exp(-x))),
    "kl_div": (lambda x, t, **kw: F.kl_div(x.log(), t, **kw), lambda x, t: t * (np.log(t) - np.log(x))),
}


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("name", sorted(POINTWISE_LOSSES))
def test_pointwise_losses_match_numpy(device, name, reduction):
    fn, ref = POINTWISE_LOSSES[name]
    x = LOGITS if name == "bce_logits" else P
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # kl_div's 'mean' warning
        r = fn(tensor(x, device), tensor(T, device), reduction=reduction)
    assert r.dtype is npusim.float64 and r.device.type == device
    np.testing.assert_allclose(host(r), reduce_np(ref(x, T), reduction), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("name", sorted(POINTWISE_LOSSES))
def test_pointwise_loss_gradients_in_both_arguments(device, name, reduction):
    fn = POINTWISE_LOSSES[name][0]
    x = LOGITS if name == "bce_logits" else P
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert gradcheck(lambda a, b: fn(a, b, reduction=reduction), (leaf64(x, device), leaf64(T, device)))
        assert gradgradcheck(lambda a, b: fn(a, b, reduction=reduction), (leaf64(x, device), leaf64(T, device)))


def test_pointwise_losses_broadcast_with_a_warning(device):
    x, t = tensor(P, device), tensor(T[0], device)
    with pytest.warns(UserWarning, match=re.escape("Using a target size (npusim.Size([3])) that is different to "
                                                   "the input size (npusim.Size([4, 3]))")):
        r = F.mse_loss(x, t, reduction="none")
    np.testing.assert_allclose(host(r), (P - T[0]) ** 2)
    a, b = leaf64(P, device), leaf64(T[0], device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        F.l1_loss(a, b).backward()
    np.testing.assert_allclose(host(b.grad), -np.sign(P - T[0]).sum(0) / P.size)


def test_mse_and_l1_accept_a_per_element_weight(device):
    w = RNG.uniform(0.5, 2, P.shape)
    r = F.mse_loss(tensor(P, device), tensor(T, device), weight=tensor(w, device))
    np.testing.assert_allclose(host(r), ((P - T) ** 2 * w).sum() / w.sum())
    r = F.l1_loss(tensor(P, device), tensor(T, device), reduction="sum", weight=tensor(w, device))
    np.testing.assert_allclose(host(r), (np.abs(P - T) * w).sum())
    with pytest.raises(ValueError, match="Weights and input must have the same size."):
        F.mse_loss(tensor(P, device), tensor(T, device), weight=tensor(w[0], device))


def test_bce_weights_and_pos_weight(device):
    w, pw = RNG.uniform(0.5, 2, 3), RNG.uniform(0.5, 3, 3)
    r = F.binary_cross_entropy(tensor(P, device), tensor(T, device), weight=tensor(w, device), reduction="sum")
    np.testing.assert_allclose(host(r), (-(T * np.log(P) + (1 - T) * np.log(1 - P)) * w).sum())
    r = F.binary_cross_entropy_with_logits(tensor(LOGITS, device), tensor(T, device), weight=tensor(w, device),
                                           pos_weight=tensor(pw, device), reduction="none")
    expected = -(pw * T * np.log(sigmoid(LOGITS)) + (1 - T) * np.log(1 - sigmoid(LOGITS))) * w
    np.testing.assert_allclose(host(r), expected, rtol=1e-10)
    f = lambda a, b: F.binary_cross_entropy_with_logits(a, b, tensor(w, device), pos_weight=tensor(pw, device))  # noqa: E731
    assert gradcheck(f, (leaf64(LOGITS, device), leaf64(T, device)))


def test_bce_with_logits_is_stable_for_large_logits(device):
    x = tensor([-200.0, 200.0], device, npusim.float32)
    r = F.binary_cross_entropy_with_logits(x, tensor([1.0, 0.0], device, npusim.float32), reduction="none")
    np.testing.assert_allclose(host(r), [200.0, 200.0])
    r = F.binary_cross_entropy(tensor([0.0, 1.0], device), tensor([1.0, 0.0], device), reduction="none")
    np.testing.assert_allclose(host(r), [100.0, 100.0])   # torch clamps each log at -100


def test_kl_div_batchmean_and_log_target(device):
    x, t = np.log(P), T / T.sum(1, keepdims=True)
    r = F.kl_div(tensor(x, device), tensor(t, device), reduction="batchmean")
    np.testing.assert_allclose(host(r), (t * (np.log(t) - x)).sum() / 4)
    r = F.kl_div(tensor(x, device), tensor(np.log(t), device), reduction="sum", log_target=True)
    np.testing.assert_allclose(host(r), (t * (np.log(t) - x)).sum())
    zero_target = F.kl_div(tensor(x, device), tensor(np.zeros_like(t), device), reduction="sum")
    assert host(zero_target) == 0.0
    with pytest.warns(UserWarning, match="reduction: 'mean' divides the total loss by both the batch size"):
        F.kl_div(tensor(x, device), tensor(t, device))


@pytest.mark.parametrize("call, error, message", [
    (lambda d: F.mse_loss(tensor(P, d), tensor(T, d), reduction="avg"), ValueError,
     "avg is not a valid value for reduction"),
    (lambda d: F.cross_entropy(tensor(P, d), tensor([0, 1, 2, 0], d), reduction="all"), ValueError,
     "all is not a valid value for reduction"),
    (lambda d: F.mse_loss(tensor(P, d), tensor(T[:2], d)), RuntimeError,
     "The size of tensor a \\(4\\) must match the size of tensor b \\(2\\) at non-singleton dimension 0"),
    (lambda d: F.mse_loss(tensor([1, 2], d), tensor([1, 3], d)), NotImplementedError,
     "\"mse_cpu\" not implemented for 'Long'"),
    (lambda d: F.l1_loss(tensor([1, 2], d), tensor([1, 3], d)), RuntimeError,
     "mean\\(\\): could not infer output dtype"),
    (lambda d: F.smooth_l1_loss(tensor(P, d), tensor(T, d), beta=-1.0), RuntimeError,
     "smooth_l1_loss does not support negative values for beta."),
    (lambda d: F.huber_loss(tensor(P, d), tensor(T, d), delta=0.0), RuntimeError,
     "huber_loss does not support non-positive values for delta."),
    (lambda d: F.binary_cross_entropy(tensor(P * 3, d), tensor(T, d)), RuntimeError,
     "all elements of input should be between 0 and 1"),
    (lambda d: F.binary_cross_entropy(tensor(P, d), tensor(T, d, npusim.float32)), RuntimeError,
     "Found dtype Float but expected Double"),
    (lambda d: F.binary_cross_entropy(tensor(P, d), tensor(T[0], d)), ValueError,
     "Using a target size \\(npusim.Size\\(\\[3\\]\\)\\) that is different to the input size"),
    (lambda d: F.binary_cross_entropy(tensor(P, d), tensor(T, d), weight=tensor(np.ones(4), d)), RuntimeError,
     "Attempting to broadcast a dimension of length 4 at -1!"),
    (lambda d: F.binary_cross_entropy_with_logits(tensor(P, d), tensor(T[0], d)), ValueError,
     "Target size \\(npusim.Size\\(\\[3\\]\\)\\) must be the same as input size \\(npusim.Size\\(\\[4, 3\\]\\)\\)"),
    (lambda d: F.binary_cross_entropy_with_logits(tensor(P, d), tensor(T, d), pos_weight=tensor(np.ones(4), d)),
     RuntimeError, "The size of tensor a \\(4\\) must match the size of tensor b \\(3\\) at non-singleton dimension 1"),
    (lambda d: F.binary_cross_entropy_with_logits(tensor(P, d), tensor((T > .5).astype(np.int64), d)), RuntimeError,
     "result type Double can't be cast to the desired output type Long"),
    (lambda d: F.binary_cross_entropy(tensor(P, d), tensor(T, d), weight=leaf64(np.ones(3), d)), RuntimeError,
     "The function 'binary_cross_entropy' is not differentiable with respect to argument 'weight'"),
])
def test_loss_errors(device, call, error, message):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the target-size warning of a broadcasting call
        if message == "all elements of input should be between 0 and 1" and checked_on_device(device):
            with reported_later(DC.BCE_INPUT):
                call(device)
            return
        with pytest.raises(error, match=message):
            call(device)


def test_legacy_size_average_and_reduce_flags(device):
    x, t = tensor(P, device), tensor(T, device)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated, please use "
                                         "reduction='sum' instead."):
        r = F.mse_loss(x, t, size_average=False)
    np.testing.assert_allclose(host(r), ((P - T) ** 2).sum())
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert F.l1_loss(x, t, reduce=False).shape == (4, 3)


# --- nll_loss and cross_entropy ---------------------------------------------------------------------------------

SCORES = RNG.standard_normal((5, 4))
TARGET = np.array([0, 3, 1, 3, 2])
CLASS_W = np.array([0.5, 1.0, 2.0, 1.5])


def log_softmax_np(x, axis=1):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


def nll_np(logp, target, weight=None, ignore_index=-100, reduction="mean"):
    n = logp.shape[0]
    w = np.ones(logp.shape[1]) if weight is None else weight
    valid = target != ignore_index
    safe = np.where(valid, target, 0)
    wt = np.where(valid, w[safe], 0.0)
    losses = -logp[np.arange(n), safe] * wt
    if reduction == "none":
        return losses
    return losses.sum() / wt.sum() if reduction == "mean" else losses.sum()


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_with_class_indices(device, reduction, weighted):
    target = TARGET.copy()
    target[2] = -1
    w = CLASS_W if weighted else None
    r = F.cross_entropy(tensor(SCORES, device), tensor(target, device), weight=None if w is None else tensor(w, device),
                        ignore_index=-1, reduction=reduction)
    expected = nll_np(log_softmax_np(SCORES), target, w, -1, reduction)
    np.testing.assert_allclose(host(r), expected, rtol=1e-12)
    logp = F.log_softmax(tensor(SCORES, device), 1)
    r2 = F.nll_loss(logp, tensor(target, device), weight=None if w is None else tensor(w, device), ignore_index=-1,
                    reduction=reduction)
    np.testing.assert_allclose(host(r2), expected, rtol=1e-12)


def test_cross_entropy_gradients(device):
    wt = tensor(CLASS_W, device)
    target = tensor([0, 3, -100, 3, 2], device)
    for kwargs in ({}, {"weight": wt}, {"label_smoothing": 0.2}, {"weight": wt, "label_smoothing": 0.1}):
        assert gradcheck(lambda x: F.cross_entropy(x, target, **kwargs), (leaf64(SCORES, device),))
    assert gradgradcheck(lambda x: F.cross_entropy(x, target, weight=wt), (leaf64(SCORES, device),))
    probs = tensor(np.exp(log_softmax_np(RNG.standard_normal((5, 4)))), device)
    assert gradcheck(lambda x: F.cross_entropy(x, probs, weight=wt, label_smoothing=0.1), (leaf64(SCORES, device),))


def test_cross_entropy_gradient_is_softmax_minus_one_hot(device):
    x = leaf64(SCORES, device)
    F.cross_entropy(x, tensor(TARGET, device), reduction="sum").backward()
    p = np.exp(log_softmax_np(SCORES))
    np.testing.assert_allclose(host(x.grad), p - np.eye(4)[TARGET], rtol=1e-10, atol=1e-12)


def test_cross_entropy_with_label_smoothing(device):
    eps = 0.2
    r = F.cross_entropy(tensor(SCORES, device), tensor(TARGET, device), label_smoothing=eps)
    logp = log_softmax_np(SCORES)
    expected = (1 - eps) * nll_np(logp, TARGET) + eps * (-logp.sum(1)).mean() / 4
    np.testing.assert_allclose(host(r), expected, rtol=1e-12)


def test_cross_entropy_with_class_probabilities(device):
    probs = np.exp(log_softmax_np(RNG.standard_normal((5, 4))))
    r = F.cross_entropy(tensor(SCORES, device), tensor(probs, device), reduction="none")
    np.testing.assert_allclose(host(r), -(probs * log_softmax_np(SCORES)).sum(1), rtol=1e-12)
    r = F.cross_entropy(tensor(SCORES, device), tensor(probs, device), weight=tensor(CLASS_W, device))
    np.testing.assert_allclose(host(r), -(probs * log_softmax_np(SCORES) * CLASS_W).sum() / 5, rtol=1e-12)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_nll_and_cross_entropy_over_spatial_dims(device, reduction):
    x = RNG.standard_normal((2, 4, 3, 2))
    t = RNG.integers(0, 4, (2, 3, 2))
    logp = log_softmax_np(x)
    flat_logp = np.moveaxis(logp, 1, -1).reshape(-1, 4)
    expected = nll_np(flat_logp, t.reshape(-1), CLASS_W, reduction=reduction)
    if reduction == "none":
        expected = expected.reshape(2, 3, 2)
    r = F.cross_entropy(tensor(x, device), tensor(t, device), weight=tensor(CLASS_W, device), reduction=reduction)
    np.testing.assert_allclose(host(r), expected, rtol=1e-12)
    x3 = RNG.standard_normal((2, 4, 3))
    t3 = RNG.integers(0, 4, (2, 3))
    r3 = F.nll_loss(tensor(x3, device), tensor(t3, device), reduction=reduction)
    flat = nll_np(np.moveaxis(x3, 1, -1).reshape(-1, 4), t3.reshape(-1), reduction=reduction)
    np.testing.assert_allclose(host(r3), flat.reshape(2, 3) if reduction == "none" else flat, rtol=1e-12)


def test_nll_loss_on_a_single_sample(device):
    x = tensor(SCORES[0], device)
    assert host(F.nll_loss(x, tensor(2, device))) == -SCORES[0, 2]
    assert host(F.nll_loss(x, tensor([2], device), reduction="none")) == -SCORES[0, 2]


def test_mean_with_every_target_ignored_is_nan(device):
    r = F.nll_loss(tensor(SCORES[:2], device), tensor([-100, -100], device))
    assert math.isnan(host(r))


@pytest.mark.parametrize("x, target, kwargs, error, message", [
    (SCORES, TARGET.astype(np.float32), {}, RuntimeError, "expected target dtype to be Long or Byte, but got Float"),
    (SCORES, TARGET.astype(np.int32), {}, RuntimeError, "expected target dtype to be Long or Byte, but got Int"),
    (SCORES, TARGET[:3], {}, ValueError, "Expected input batch_size \\(5\\) to match target batch_size \\(3\\)."),
    (SCORES, np.array([0, 1, 4, 0, 0]), {}, IndexError, "Target 4 is out of bounds."),
    (SCORES, np.array([0, 1, -1, 0, 0]), {}, IndexError, "Target -1 is out of bounds."),
    (SCORES, TARGET, {"weight": np.ones(3)}, RuntimeError, "weight tensor should be defined either for all 4 "
                                                          "classes or no classes but got weight tensor of shape: "
                                                          "\\[3\\]"),
    (SCORES, TARGET, {"weight": np.ones(4, np.float32)}, RuntimeError, "expected scalar type Double but found Float"),
    (SCORES, np.zeros((5, 2), np.int64), {}, RuntimeError, "0D or 1D target tensor expected, multi-target not "
                                                            "supported"),
    (SCORES, RNG.random((5, 4)).astype(np.int64), {}, RuntimeError, "Expected floating point type for target with "
                                                                     "class probabilities, got Long"),
    (SCORES, RNG.random((5, 4)), {"ignore_index": 1}, RuntimeError, "ignore_index is not supported for floating "
                                                                     "point target"),
    (SCORES, TARGET, {"label_smoothing": 1.5}, RuntimeError, "label_smoothing must be between 0.0 and 1.0. Got: 1.5"),
    (SCORES[0], np.array([1, 2]), {}, ValueError, "For 1D input, 1D target must have size 1, but got target size: 2"),
    (RNG.standard_normal((2, 4, 3)), np.zeros((2, 5), np.int64), {}, RuntimeError,
     "Expected target size \\[2, 3\\], got \\[2, 5\\]"),
    (RNG.standard_normal((2, 4, 3)), np.zeros((2, 3), np.int64), {"weight": np.ones(2)}, RuntimeError,
     "weight tensor should be defined either for all or no classes"),
    (SCORES.astype(np.int64), TARGET, {}, NotImplementedError, "\"log_softmax_lastdim_kernel_impl\" not implemented"
                                                                " for 'Long'"),
])
def test_cross_entropy_errors(device, x, target, kwargs, error, message):
    if "weight" in kwargs:
        kwargs = {"weight": tensor(kwargs["weight"], device)}
    if message.startswith("Target ") and checked_on_device(device):
        with reported_later(DC.NLL_TARGET):
            F.cross_entropy(tensor(x, device), tensor(target, device), **kwargs)
        return
    with pytest.raises(error, match=message):
        F.cross_entropy(tensor(x, device), tensor(target, device), **kwargs)


def test_weights_that_require_grad_are_refused_where_torch_refuses_them(device):
    with pytest.raises(RuntimeError, match="The function 'nll_loss_forward' is not differentiable with respect to "
                                           "argument 'weight'. This input cannot have requires_grad True."):
        F.cross_entropy(tensor(SCORES, device), tensor(TARGET, device), weight=leaf64(CLASS_W, device))
    with pytest.raises(RuntimeError, match="'binary_cross_entropy_with_logits' is not differentiable with respect "
                                           "to argument 'pos_weight'"):
        F.binary_cross_entropy_with_logits(tensor(P, device), tensor(T, device), pos_weight=leaf64(np.ones(3), device))


@pytest.mark.oracle
@pytest.mark.parametrize("kwargs", [{}, {"reduction": "sum"}, {"reduction": "none"}, {"label_smoothing": 0.3},
                                    {"weight": CLASS_W, "ignore_index": 3}, {"weight": CLASS_W, "label_smoothing": 0.2},
                                    {"probabilities": True, "label_smoothing": 0.1}])
def test_cross_entropy_matches_torch(torch, device, kwargs):
    kwargs = dict(kwargs)
    x = RNG.standard_normal((6, 4, 3)).astype(np.float32)
    if kwargs.pop("probabilities", False):
        t_np = np.exp(log_softmax_np(RNG.standard_normal((6, 4, 3)))).astype(np.float32)
    else:
        t_np = RNG.integers(0, 4, (6, 3))
    w = kwargs.pop("weight", None)
    a, b = tensor(x, device, requires_grad=True), torch.tensor(x, requires_grad=True)
    r = F.cross_entropy(a, tensor(t_np, device), weight=None if w is None else tensor(w, device, npusim.float32),
                        **kwargs)
    e = torch.nn.functional.cross_entropy(b, torch.tensor(t_np), weight=None if w is None else torch.tensor(
        w, dtype=torch.float32), **kwargs)
    np.testing.assert_allclose(host(r), e.detach().numpy(), rtol=1e-5, atol=1e-6)
    r.sum().backward()
    e.sum().backward()
    np.testing.assert_allclose(host(a.grad), b.grad.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.oracle
@pytest.mark.parametrize("x_shape, t_np, weight", [
    ((3, 4), np.array([0, 1, 2], np.float32), None), ((3, 4), np.array([0, 1, 2], np.int32), None),
    ((3, 4), np.array([0, 1]), None), ((3, 4), np.array([0, 1, 4]), None), ((3, 4), np.array([0, 1, 2]), np.ones(3)),
    ((3, 4), np.zeros((3, 5), np.float32), None), ((2, 3, 4, 5), np.zeros((2, 4, 4), np.int64), None),
    ((2, 3, 4, 5, 6), np.zeros((2, 4, 5, 7), np.int64), None), ((4,), np.array([1, 2]), None),
    ((3, 4), np.zeros((3, 4), np.int64), None),
])
def test_cross_entropy_errors_match_torch(torch, device, x_shape, t_np, weight):
    x = np.ones(x_shape, np.float32)
    if t_np.dtype == np.int64 and t_np.max(initial=0) >= x_shape[-1] and checked_on_device(device):
        with reported_later(DC.NLL_TARGET):   # torch's CUDA kernel asserts on the device as well
            F.cross_entropy(tensor(x, device), tensor(t_np, device))
        return
    same_error(lambda: torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(t_np), weight=None
                                                         if weight is None else torch.tensor(weight, dtype=torch.float32)),
               lambda: F.cross_entropy(tensor(x, device), tensor(t_np, device), weight=None if weight is None else
                                       tensor(weight, device, npusim.float32)))


@pytest.mark.oracle
@pytest.mark.parametrize("name, make", [
    ("mse_loss", lambda F_, x, t: F_.mse_loss(x, t)), ("l1_loss", lambda F_, x, t: F_.l1_loss(x, t, reduction="sum")),
    ("smooth_l1_loss", lambda F_, x, t: F_.smooth_l1_loss(x, t, beta=0.3)),
    ("huber_loss", lambda F_, x, t: F_.huber_loss(x, t, delta=0.4, reduction="none")),
    ("bce", lambda F_, x, t: F_.binary_cross_entropy(x.sigmoid(), t)),
    ("bce_logits", lambda F_, x, t: F_.binary_cross_entropy_with_logits(x, t, pos_weight=x.detach()[0].abs())),
    ("kl_div", lambda F_, x, t: F_.kl_div(x, t, reduction="batchmean")),
    ("kl_div_log", lambda F_, x, t: F_.kl_div(x, t.log(), reduction="sum", log_target=True)),
    ("nll_loss", lambda F_, x, t: F_.nll_loss(x, (t[:, 0] * 3).long())),
    ("cosine_similarity", lambda F_, x, t: F_.cosine_similarity(x, t, dim=0)),
])
def test_losses_match_torch(torch, device, name, make):
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    t = RNG.uniform(0.1, 0.9, (4, 3)).astype(np.float32)
    a, b = tensor(x, device, requires_grad=True), torch.tensor(x, requires_grad=True)
    r, e = make(F, a, tensor(t, device)), make(torch.nn.functional, b, torch.tensor(t))
    assert tuple(r.shape) == tuple(e.shape) and str(r.dtype) == str(e.dtype).replace("torch", "npusim")
    np.testing.assert_allclose(host(r), e.detach().numpy(), rtol=1e-5, atol=1e-6)
    r.sum().backward()
    e.sum().backward()
    np.testing.assert_allclose(host(a.grad), b.grad.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.oracle
def test_loss_result_dtypes_match_torch(torch, device):
    x, t = RNG.uniform(0.1, 0.9, (3, 2)), RNG.uniform(0.1, 0.9, (3, 2))
    for make in (lambda F_, m, a, b: F_.mse_loss(a(x, m.float32), a(t, m.float64)),
                 lambda F_, m, a, b: F_.l1_loss(a(x, m.float32), a(t, m.int64), reduction="sum"),
                 lambda F_, m, a, b: F_.binary_cross_entropy_with_logits(a(x, m.float64), a(t, m.float32)),
                 lambda F_, m, a, b: F_.binary_cross_entropy_with_logits(a(x, m.float32), a(t, m.float64)),
                 lambda F_, m, a, b: F_.cosine_similarity(a(x, m.float32), a(t, m.float64)),
                 lambda F_, m, a, b: F_.cross_entropy(a(x, m.float16).float(), a(t, m.float16))):
        r = make(F, npusim, lambda v, dt: npusim.tensor(v, dtype=dt, device=device), None)
        e = make(torch.nn.functional, torch, lambda v, dt: torch.tensor(v, dtype=dt), None)
        assert str(r.dtype) == str(e.dtype).replace("torch", "npusim")
        np.testing.assert_allclose(host(r).astype(np.float64), e.detach().double().numpy(), rtol=1e-3)


# --- cosine similarity ---------------------------------------------------------------------------------------

def test_cosine_similarity_values_broadcasting_and_gradients(device):
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    r = F.cosine_similarity(tensor(a, device), tensor(b, device))
    np.testing.assert_allclose(host(r), a @ b / np.linalg.norm(a, axis=1) / np.linalg.norm(b), rtol=1e-12)
    assert gradcheck(F.cosine_similarity, (leaf64(a, device), leaf64(b, device)))
    zero = F.cosine_similarity(tensor(np.zeros((2, 3)), device), tensor(np.ones((2, 3)), device))
    assert host(zero).tolist() == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="expected common dtype to be floating point, yet common dtype is Long"):
        F.cosine_similarity(tensor([[1, 2]], device), tensor([[1, 2]], device))
    with pytest.raises(RuntimeError, match="The size of tensor a \\(3\\) must match the size of tensor b \\(2\\)"):
        F.cosine_similarity(tensor(a, device), tensor(a[:2], device))


def test_normalize_scales_to_unit_norm(device):
    r = F.normalize(tensor(X, device), dim=1)
    np.testing.assert_allclose(np.linalg.norm(host(r), axis=1), np.ones(3))


# --- scaled dot-product attention ------------------------------------------------------------------------------

def attention_np(q, k, v, mask=None, scale=None):
    s = q @ np.swapaxes(k, -2, -1) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    s = s - s.max(-1, keepdims=True)
    w = np.exp(s)
    return (w / w.sum(-1, keepdims=True)) @ v


Q, K, V = RNG.standard_normal((2, 3, 4, 8)), RNG.standard_normal((2, 3, 6, 8)), RNG.standard_normal((2, 3, 6, 5))


def test_attention_values_with_masks_and_scale(device):
    q, k, v = (tensor(a, device) for a in (Q, K, V))
    np.testing.assert_allclose(host(F.scaled_dot_product_attention(q, k, v)), attention_np(Q, K, V), rtol=1e-10)
    bool_mask = RNG.random((4, 6)) > 0.3
    bool_mask[:, 0] = True
    r = F.scaled_dot_product_attention(q, k, v, attn_mask=tensor(bool_mask, device), scale=0.5)
    np.testing.assert_allclose(host(r), attention_np(Q, K, V, bool_mask, 0.5), rtol=1e-10)
    float_mask = RNG.standard_normal((4, 6))
    r = F.scaled_dot_product_attention(q, k, v, attn_mask=tensor(float_mask, device))
    np.testing.assert_allclose(host(r), attention_np(Q, K, V, float_mask), rtol=1e-10)
    causal = np.tril(np.ones((4, 6), bool))
    np.testing.assert_allclose(host(F.scaled_dot_product_attention(q, k, v, is_causal=True)),
                               attention_np(Q, K, V, causal), rtol=1e-10)


def test_attention_rows_with_everything_masked_give_zeros_and_finite_gradients(device):
    mask = np.ones((4, 6), bool)
    mask[1] = False
    q = leaf64(Q, device)
    r = F.scaled_dot_product_attention(q, tensor(K, device), tensor(V, device), attn_mask=tensor(mask, device))
    assert np.all(host(r)[:, :, 1] == 0)
    r.sum().backward()
    assert np.all(np.isfinite(host(q.grad)))


def test_attention_gradients(device):
    q, k, v = (leaf64(a[:1, :2], device) for a in (Q, K, V))
    mask = tensor(RNG.standard_normal((4, 6)), device)
    assert gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask), (q, k, v))
    assert gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), (q, k, v))
    assert gradgradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask), (q, k, v))


def test_attention_grouped_query_heads_share_key_value_heads(device):
    q = RNG.standard_normal((1, 4, 3, 8))
    k, v = RNG.standard_normal((1, 2, 5, 8)), RNG.standard_normal((1, 2, 5, 6))
    r = F.scaled_dot_product_attention(tensor(q, device), tensor(k, device), tensor(v, device), enable_gqa=True)
    np.testing.assert_allclose(host(r), attention_np(q, np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1)),
                               rtol=1e-10)
    with pytest.raises(RuntimeError, match="Number of heads in key and value must divide the number of heads in"):
        F.scaled_dot_product_attention(tensor(q, device), tensor(k[:, :1].repeat(3, 1), device),
                                       tensor(v[:, :1].repeat(3, 1), device), enable_gqa=True)


def test_attention_dropout_is_random_but_keeps_shape(device):
    npusim.manual_seed(0)
    q, k, v = (tensor(a, device) for a in (Q, K, V))
    r1 = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    r2 = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    assert r1.shape == (2, 3, 4, 5) and not np.allclose(host(r1), host(r2))


@pytest.mark.parametrize("kwargs, message", [
    ({"attn_mask": np.ones((4, 6), bool), "is_causal": True},
     "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True"),
    ({"attn_mask": np.ones((4, 6), np.int64)}, "Expected attn_mask dtype to be bool or float or to match query dtype, "
                                               "but got attn_mask.dtype: long int and  query.dtype: double instead."),
    ({"attn_mask": np.ones((4, 7))}, "The size of tensor a \\(6\\) must match the size of tensor b \\(7\\)"),
])
def test_attention_errors(device, kwargs, message):
    kwargs = {key: tensor(val, device) if isinstance(val, np.ndarray) else val for key, val in kwargs.items()}
    with pytest.raises(RuntimeError, match=message):
        F.scaled_dot_product_attention(tensor(Q, device), tensor(K, device), tensor(V, device), **kwargs)


def test_attention_refuses_mixed_or_integral_dtypes(device):
    with pytest.raises(RuntimeError, match="Expected query, key, and value to have the same dtype, but got "
                                           "query.dtype: double key.dtype: float and value.dtype: double instead."):
        F.scaled_dot_product_attention(tensor(Q, device), tensor(K, device, npusim.float32), tensor(V, device))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Long"):
        F.scaled_dot_product_attention(*(tensor(a.astype(np.int64), device) for a in (Q, K, V)))


@pytest.mark.oracle
@pytest.mark.parametrize("kwargs", [{}, {"is_causal": True}, {"scale": 0.3}, {"mask": "bool"}, {"mask": "float"},
                                    {"gqa": True}])
def test_attention_matches_torch(torch, device, kwargs):
    kwargs = dict(kwargs)
    q_np = RNG.standard_normal((2, 4, 5, 8)).astype(np.float32)
    kv_heads = 2 if kwargs.pop("gqa", False) else 4
    if kv_heads == 2:
        kwargs["enable_gqa"] = True
    k_np = RNG.standard_normal((2, kv_heads, 7, 8)).astype(np.float32)
    v_np = RNG.standard_normal((2, kv_heads, 7, 3)).astype(np.float32)
    mask = kwargs.pop("mask", None)
    m_np = None if mask is None else (RNG.random((5, 7)) > 0.4 if mask == "bool" else RNG.standard_normal(
        (5, 7)).astype(np.float32))
    ours = [tensor(a, device, requires_grad=True) for a in (q_np, k_np, v_np)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (q_np, k_np, v_np)]
    r = F.scaled_dot_product_attention(*ours, attn_mask=None if m_np is None else tensor(m_np, device), **kwargs)
    e = torch.nn.functional.scaled_dot_product_attention(*theirs, attn_mask=None if m_np is None else torch.tensor(
        m_np), **kwargs)
    np.testing.assert_allclose(host(r), e.detach().numpy(), rtol=1e-5, atol=1e-5)
    r.sum().backward()
    e.sum().backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(host(a.grad), b.grad.numpy(), rtol=1e-4, atol=1e-5)


# --- fused pointwise products and product compositions ---------------------------------------------------------

def test_addcmul_and_addcdiv_values_broadcasting_and_inplace(device):
    a, b, c = RNG.standard_normal((3, 4)), RNG.standard_normal(4), RNG.uniform(1, 2, (3, 1))
    np.testing.assert_allclose(host(npusim.addcmul(tensor(a, device), tensor(b, device), tensor(c, device),
                                                   value=0.5)), a + 0.5 * b * c, rtol=1e-12)
    np.testing.assert_allclose(host(npusim.addcdiv(tensor(a, device), tensor(b, device), tensor(c, device),
                                                   value=-2)), a - 2 * b / c, rtol=1e-12)
    t = tensor(a, device)
    assert t.addcmul_(tensor(b, device), tensor(c, device), value=3) is t
    np.testing.assert_allclose(host(t), a + 3 * b * c, rtol=1e-12)
    t.addcdiv_(tensor(b, device), tensor(c, device))
    np.testing.assert_allclose(host(t), a + 3 * b * c + b / c, rtol=1e-12)
    i = tensor([1, 2, 3], device)
    assert host(npusim.addcmul(i, i, i, value=1.7)).tolist() == [2, 6, 12]   # the value truncates for integers


def test_addcmul_and_addcdiv_gradients(device):
    a, b, c = (leaf64(v, device) for v in (RNG.standard_normal((3, 4)), RNG.standard_normal(4),
                                           RNG.uniform(1, 2, (3, 1))))
    assert gradcheck(lambda x, y, z: npusim.addcmul(x, y, z, value=0.5), (a, b, c))
    assert gradcheck(lambda x, y, z: npusim.addcdiv(x, y, z, value=0.5), (a, b, c))
    assert gradcheck(lambda x, y, z: (x * 1).addcmul_(y, z, value=2), (a, b, c))
    assert gradgradcheck(lambda x, y, z: npusim.addcdiv(x * x, y, z), (a, b, c))


@pytest.mark.parametrize("call, message", [
    (lambda d: npusim.addcdiv(tensor([1.0], d), tensor([1], d), tensor([2], d)),
     "Integer division with addcdiv is no longer supported"),
    (lambda d: tensor([1, 2], d).addcmul_(tensor([1.0, 2.0], d), tensor([1.0, 2.0], d)),
     "result type Double can't be cast to the desired output type Long"),
    (lambda d: tensor([1.0, 2.0], d).addcmul_(tensor(np.ones((3, 2)), d), tensor([1.0, 2.0], d)),
     "output with shape \\[2\\] doesn't match the broadcast shape \\[3, 2\\]"),
    (lambda d: npusim.addcmul(*(tensor([1.0], d, npusim.float32) for _ in range(3)), value=1e300),
     "value cannot be converted to type float without overflow"),
    (lambda d: npusim.addr(tensor(np.ones((3, 4)), d), tensor(np.ones((3, 1)), d), tensor(np.ones(4), d)),
     "addr: Expected 1-D argument vec1, but got 2-D"),
    (lambda d: npusim.addbmm(tensor(np.ones((3, 4)), d), tensor(np.ones((2, 3, 5)), d), tensor(np.ones((3, 5, 4)), d)),
     "batch1 and batch2 must have same number of batches, got 2 and 3"),
    (lambda d: npusim.addbmm(tensor(np.ones((3, 4)), d), tensor(np.ones((2, 3, 5)), d), tensor(np.ones((2, 6, 4)), d)),
     "Incompatible matrix sizes for bmm \\(3x5 and 6x4\\)"),
    (lambda d: npusim.cross(tensor(np.ones((4, 2)), d), tensor(np.ones((4, 2)), d)), "no dimension of size 3 in input"),
    (lambda d: npusim.cross(tensor(np.ones((4, 3)), d), tensor(np.ones((4, 3)), d), dim=0),
     "linalg.cross: inputs dimension 0 must have length 3. Got 4 and 4"),
    (lambda d: npusim.tensordot(tensor(np.ones((3, 4, 5)), d), tensor(np.ones((4, 5, 6)), d), ([1], [1])),
     "contracted dimensions need to match, but first has size 4 in dim 1 and second has size 5 in dim 1"),
    (lambda d: npusim.cdist(tensor(np.ones((3, 4)), d), tensor(np.ones((5, 3)), d)),
     "X1 and X2 must have the same number of columns. X1: 4 X2: 3"),
    (lambda d: npusim.cdist(tensor(np.ones(4), d), tensor(np.ones((5, 4)), d)),
     "cdist only supports at least 2D tensors, X1 got: 1D"),
    (lambda d: npusim.cdist(tensor(np.ones((3, 4)), d), tensor(np.ones((5, 4)), d), p=-1),
     "cdist only supports non-negative p values"),
])
def test_product_and_distance_errors(device, call, message):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # cross's warning about the default dim
        with pytest.raises(RuntimeError, match=message):
            call(device)


def test_product_compositions_match_numpy(device):
    m, u, v = RNG.standard_normal((3, 4)), RNG.standard_normal(3), RNG.standard_normal(4)
    np.testing.assert_allclose(host(npusim.addr(tensor(m, device), tensor(u, device), tensor(v, device), beta=0.5,
                                                alpha=2)), 0.5 * m + 2 * np.outer(u, v), rtol=1e-12)
    b1, b2 = RNG.standard_normal((2, 3, 5)), RNG.standard_normal((2, 5, 4))
    np.testing.assert_allclose(host(npusim.addbmm(tensor(m, device), tensor(b1, device), tensor(b2, device))),
                               m + (b1 @ b2).sum(0), rtol=1e-12)
    nan_self = tensor(np.full((3, 4), np.nan), device)
    assert np.isfinite(host(npusim.addr(nan_self, tensor(u, device), tensor(v, device), beta=0))).all()
    p, q = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    np.testing.assert_allclose(host(npusim.cross(tensor(p, device), tensor(q, device), dim=1)), np.cross(p, q),
                               rtol=1e-12)
    a3, b3 = RNG.standard_normal((3, 4, 5)), RNG.standard_normal((5, 4, 2))
    np.testing.assert_allclose(host(npusim.tensordot(tensor(a3, device), tensor(b3, device), ([1, 2], [1, 0]))),
                               np.tensordot(a3, b3, ([1, 2], [1, 0])), rtol=1e-12)
    x1, x2 = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((5, 4))
    expected = np.linalg.norm(x1[..., :, None, :] - x2[None, None], axis=-1)
    np.testing.assert_allclose(host(npusim.cdist(tensor(x1, device), tensor(x2, device))), expected, rtol=1e-12)
    np.testing.assert_allclose(host(tensor(p, device).dist(tensor(q, device), 3)),
                               (np.abs(p - q) ** 3).sum() ** (1 / 3), rtol=1e-12)


def test_product_composition_gradients(device):
    L = leaf64  # noqa: N806
    assert gradcheck(lambda s, u, v: npusim.addr(s, u, v, beta=0.5, alpha=2),
                     (L(RNG.standard_normal((3, 4)), device), L(RNG.standard_normal(3), device),
                      L(RNG.standard_normal(4), device)))
    assert gradcheck(lambda a, b: npusim.cross(a, b, dim=1), (L(RNG.standard_normal((2, 3)), device),
                                                                L(RNG.standard_normal((2, 3)), device)))
    assert gradcheck(lambda a, b: npusim.tensordot(a, b, 1), (L(RNG.standard_normal((2, 3)), device),
                                                              L(RNG.standard_normal((3, 2)), device)))
    assert gradcheck(lambda a, b: npusim.cdist(a, b), (L(RNG.standard_normal((3, 2)), device),
                                                       L(RNG.standard_normal((2, 2)), device)))


def test_cross_without_dim_warns_once(device, monkeypatch):
    from npusim.native import linalg_products_composite as product_compositions
    monkeypatch.setattr(product_compositions, "_CROSS_DIM_WARNED", [])
    a = tensor(np.ones((2, 3)), device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        npusim.cross(a, a)
        npusim.cross(a, a)
    assert [str(w.message).splitlines()[0] for w in caught] == [
        "Using npusim.cross without specifying the dim arg is deprecated."]


@pytest.mark.oracle
def test_fused_products_match_torch(torch, device):
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    b = RNG.standard_normal(4).astype(np.float32)
    c = RNG.uniform(1, 2, (3, 1))
    for name, kw in (("addcmul", {"value": 0.3}), ("addcdiv", {"value": -2})):
        r = getattr(npusim, name)(tensor(a, device), tensor(b, device), tensor(c, device), **kw)
        e = getattr(torch, name)(torch.tensor(a), torch.tensor(b), torch.tensor(c), **kw)
        assert str(r.dtype) == str(e.dtype).replace("torch", "npusim")
        np.testing.assert_allclose(host(r), e.numpy(), rtol=1e-6)
    i = np.array([1, 2, 3])
    assert host(npusim.addcmul(tensor(i, device), tensor(i, device), tensor(i, device), value=-1.7)).tolist() == \
        torch.addcmul(torch.tensor(i), torch.tensor(i), torch.tensor(i), value=-1.7).tolist()
    same_error(lambda: torch.addcdiv(torch.tensor(i), torch.tensor(i), torch.tensor(i)),
               lambda: npusim.addcdiv(tensor(i, device), tensor(i, device), tensor(i, device)))
    x1, x2 = RNG.standard_normal((3, 4)), RNG.standard_normal((5, 4))
    for p in (0.5, 1.0, 2.0, 3.0, math.inf):
        np.testing.assert_allclose(host(npusim.cdist(tensor(x1, device), tensor(x2, device), p=p)),
                                   torch.cdist(torch.tensor(x1), torch.tensor(x2), p=p).numpy(), rtol=1e-10)


# --- devices -----------------------------------------------------------------------------------------------------

def test_tensors_on_different_devices_are_refused():
    if not (hasattr(npusim, "npu") and npusim.npu.is_available()):
        pytest.skip("no npu device")
    w = tensor(W, "npu")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        F.embedding(tensor([1, 2], "cpu"), w)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        F.mse_loss(tensor(P, "cpu"), tensor(T, "npu"))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        F.cross_entropy(tensor(SCORES, "npu"), tensor(TARGET, "cpu"))
