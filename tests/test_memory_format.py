"""channels_last (and channels_last_3d) as torch lays it out: factories, conversions and the ops that keep it.

Every expected stride below is what torch 2.13 gives on CPU for the same call; every result must also equal the
one computed from contiguous tensors.
"""
from __future__ import annotations

import numpy as np
import pytest

import npusim
from npusim.nn import functional as F

from conftest import host

CL, CL3 = npusim.channels_last, npusim.channels_last_3d
CONTIGUOUS_4D = (48, 16, 4, 1)   # (2, 3, 4, 4)
CL_4D = (48, 1, 12, 3)


def _cl(t):
    return t.contiguous(memory_format=CL)


def _same(a, b):
    assert a.shape == b.shape
    np.testing.assert_allclose(host(a), host(b), rtol=1e-6, atol=1e-6)


# --- factories ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, strides", [((2, 3, 4, 4), (48, 1, 12, 3)), ((2, 1, 4, 4), (16, 1, 4, 1)),
                                            ((2, 3, 1, 1), (3, 1, 3, 3)), ((1, 1, 1, 1), (1, 1, 1, 1))])
def test_empty_channels_last(device, shape, strides):
    t = npusim.empty(shape, memory_format=CL, device=device)
    assert t.stride() == strides
    assert t.is_contiguous(memory_format=CL)
    assert npusim.empty(shape, memory_format=npusim.contiguous_format, device=device).is_contiguous()


def test_empty_channels_last_3d(device):
    t = npusim.empty(2, 3, 4, 4, 2, memory_format=CL3, device=device)
    assert t.stride() == (96, 1, 24, 6, 3)
    assert t.is_contiguous(memory_format=CL3) and not t.is_contiguous()


def test_memory_format_errors(device):
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        npusim.empty(2, 3, memory_format=CL, device=device)
    with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d format"):
        npusim.empty(2, 3, 4, 4, memory_format=CL3, device=device)
    with pytest.raises(RuntimeError, match="unsupported memory format Preserve"):
        npusim.empty(2, 3, 4, 4, memory_format=npusim.preserve_format, device=device)
    with pytest.raises(RuntimeError, match="'memory_format' argument is incompatible with 'out' tensor argument"):
        npusim.empty(2, 3, 4, 4, memory_format=CL, out=npusim.empty(0, device=device))
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        npusim.zeros_like(npusim.zeros(2, 3, device=device), memory_format=CL)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        npusim.zeros(2, 3, device=device).to(memory_format=CL)
    with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d format"):
        npusim.zeros(2, 3, 4, 4, device=device).to(memory_format=CL3)


@pytest.mark.parametrize("name", ["empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like",
                                  "randint_like"])
def test_like_factories_preserve_format(device, name):
    x = _cl(npusim.randn(2, 3, 4, 4, device=device))
    make = {"full_like": lambda t, **kw: npusim.full_like(t, 2.0, **kw),
            "randint_like": lambda t, **kw: npusim.randint_like(t, 5, **kw)}.get(name, getattr(npusim, name))
    assert make(x).stride() == CL_4D   # preserve_format, the default
    assert make(x, memory_format=npusim.preserve_format).stride() == CL_4D
    assert make(x, memory_format=npusim.contiguous_format).stride() == CONTIGUOUS_4D
    assert make(x.contiguous(), memory_format=CL).stride() == CL_4D
    assert make(x.contiguous()).stride() == CONTIGUOUS_4D


def test_preserve_format_of_a_non_dense_tensor(device):
    # torch's infer_dense_strides: a channels_last tensor sliced along H keeps the channels-innermost order
    s = _cl(npusim.randn(2, 3, 8, 8, device=device))[:, :, ::2]
    for r in (s.clone(), npusim.empty_like(s), npusim.zeros_like(s), s.to(npusim.float64)):
        assert r.stride() == (96, 1, 24, 3)
    assert npusim.equal(s.clone(), s)
    assert npusim.zeros(4, 6, device=device)[:, ::2].clone().stride() == (3, 1)
    assert npusim.zeros(1, 4, device=device).expand(3, 4).clone().stride() == (4, 1)
    assert npusim.zeros(3, 4, 5, device=device).permute(2, 0, 1)[:, ::2].clone().stride() == (1, 20, 5)
    assert npusim.zeros(2, 3, 4, 4, device=device).is_contiguous(memory_format=npusim.preserve_format)


def test_like_factory_values(device):
    x = _cl(npusim.randn(2, 3, 4, 4, device=device))
    assert npusim.equal(npusim.zeros_like(x), npusim.zeros(2, 3, 4, 4, device=device))
    assert npusim.equal(npusim.full_like(x, 3.0), npusim.full((2, 3, 4, 4), 3.0, device=device))


# --- conversions ----------------------------------------------------------------------------------------------------

def test_contiguous_and_is_contiguous(device):
    x = npusim.randn(2, 3, 4, 4, device=device)
    c = x.contiguous(memory_format=CL)
    assert c.stride() == CL_4D and npusim.equal(c, x)
    assert c.is_contiguous(memory_format=CL) and not c.is_contiguous()
    assert not x.is_contiguous(memory_format=CL) and x.is_contiguous(memory_format=npusim.contiguous_format)
    assert c.contiguous(memory_format=CL) is c
    assert c.contiguous().stride() == CONTIGUOUS_4D
    x3 = npusim.randn(2, 3, 4, 4, 2, device=device)
    assert x3.contiguous(memory_format=CL3).stride() == (96, 1, 24, 6, 3)


def test_clone_preserves_layout(device):
    c = _cl(npusim.randn(2, 3, 4, 4, device=device))
    assert c.clone().stride() == CL_4D
    assert c.clone(memory_format=npusim.contiguous_format).stride() == CONTIGUOUS_4D
    assert npusim.clone(c).stride() == CL_4D
    assert c.contiguous().clone(memory_format=CL).stride() == CL_4D


def test_to_memory_format(device):
    x = npusim.randn(2, 3, 4, 4, device=device)
    c = x.to(memory_format=CL)
    assert c.stride() == CL_4D and npusim.equal(c, x)
    assert c.to(memory_format=CL) is c   # nothing to change: torch returns the tensor itself
    assert c.to(memory_format=npusim.contiguous_format).stride() == CONTIGUOUS_4D
    # torch compares the layout the tensor suggests: a transposed tensor "is" contiguous_format already
    t = x.transpose(2, 3)
    assert t.to(memory_format=npusim.contiguous_format) is t
    assert c.to(npusim.float64).stride() == CL_4D                 # preserve_format keeps the layout
    assert c.double().stride() == CL_4D and c.half().stride() == CL_4D
    assert c.to(npusim.float64, memory_format=npusim.contiguous_format).stride() == CONTIGUOUS_4D
    assert x.to(npusim.float64, memory_format=CL).stride() == CL_4D
    other = "cpu" if device != "cpu" else device
    assert c.to(other).stride() == CL_4D


def test_module_to_channels_last(device):
    model = npusim.nn.Sequential(npusim.nn.Conv2d(3, 4, 3), npusim.nn.BatchNorm2d(4), npusim.nn.Linear(2, 2))
    model = model.to(device=device, memory_format=CL)
    assert [p.stride() for p in model.parameters()] == [(27, 1, 9, 3), (1,), (1,), (1,), (2, 1), (1,)]


# --- ops that keep the layout ---------------------------------------------------------------------------------------

_ELEMENTWISE = {
    "add": lambda t: t + t, "add_scalar": lambda t: t + 1,
    "mul_broadcast": lambda t: t * npusim.ones_like(t[0, :, :1, :1]),
    "exp": npusim.exp, "neg": lambda t: -t, "relu": F.relu, "gelu": F.gelu, "silu": F.silu,
    "sigmoid": npusim.sigmoid, "tanh": npusim.tanh, "leaky_relu": F.leaky_relu, "hardtanh": F.hardtanh, "elu": F.elu,
}


# CuPy's elementwise kernels always write C-contiguous results: on the cuda path (the CuPy stand-in included)
# these results are contiguous (listed in docs/torch_differences.md)
@pytest.mark.emulation_only
@pytest.mark.parametrize("name", sorted(_ELEMENTWISE))
def test_elementwise_keeps_channels_last(device, name):
    x = npusim.randn(2, 3, 4, 4, device=device)
    fn = _ELEMENTWISE[name]
    r = fn(_cl(x))
    assert r.stride() == CL_4D
    _same(r, fn(x))


def _conv_cases():
    return {
        # name: (input shape, weight shape, kwargs, input CL?, weight CL?, torch's output strides)
        "input": ((2, 3, 4, 4), (5, 3, 3, 3), {}, True, False, (20, 1, 10, 5)),
        "weight": ((2, 3, 4, 4), (5, 3, 3, 3), {}, False, True, (20, 1, 10, 5)),
        "padding_bias": ((2, 3, 4, 4), (5, 3, 3, 3), {"padding": 1, "bias": True}, True, False, (80, 1, 20, 5)),
        "depthwise": ((2, 4, 6, 6), (4, 1, 3, 3), {"groups": 4}, True, False, (64, 1, 16, 4)),
        "contiguous": ((2, 3, 4, 4), (5, 3, 3, 3), {}, False, False, (20, 4, 2, 1)),
    }


@pytest.mark.parametrize("case", sorted(_conv_cases()))
def test_conv2d_layout(device, case):
    xs, ws, kw, x_cl, w_cl, strides = _conv_cases()[case]
    kw = dict(kw)
    x, w = npusim.randn(*xs, device=device), npusim.randn(*ws, device=device)
    b = npusim.randn(ws[0], device=device) if kw.pop("bias", False) else None
    y = F.conv2d(_cl(x) if x_cl else x, _cl(w) if w_cl else w, b, **kw)
    assert y.stride() == strides
    _same(y, F.conv2d(x, w, b, **kw))


def test_conv_transpose_and_3d_layout(device):
    x = npusim.randn(2, 4, 6, 6, device=device)
    w = npusim.randn(4, 3, 3, 3, device=device)
    y = F.conv_transpose2d(_cl(x), w)
    assert y.stride() == (192, 1, 24, 3)
    _same(y, F.conv_transpose2d(x, w))
    x3, w3 = npusim.randn(2, 4, 5, 5, 5, device=device), npusim.randn(3, 4, 2, 2, 2, device=device)
    y3 = F.conv3d(x3.contiguous(memory_format=CL3), w3)
    assert y3.stride() == (192, 1, 48, 12, 3)
    _same(y3, F.conv3d(x3, w3))
    # torch's CPU 3-d convolution has no channels_last kernel for float64
    assert F.conv3d(x3.double().contiguous(memory_format=CL3), w3.double()).stride() == (192, 64, 16, 4, 1)
    assert F.conv1d(npusim.randn(2, 4, 6, device=device), npusim.randn(3, 4, 3, device=device)).stride() == (12, 4, 1)


def test_conv2d_backward_layout(device):
    x, w = npusim.randn(2, 4, 6, 6, device=device), npusim.randn(6, 4, 3, 3, device=device)
    xg, wg = _cl(x).requires_grad_(), w.clone().requires_grad_()
    y = F.conv2d(xg, wg)
    g = npusim.randn(y.shape, device=device)
    gi, gw = npusim.autograd.grad(y, (xg, wg), g)
    assert gi.stride() == (144, 1, 24, 4) and gw.stride() == (36, 1, 12, 4)   # the input's layout decides for both
    xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
    ri, rw = npusim.autograd.grad(F.conv2d(xr, wr), (xr, wr), g)
    _same(gi, ri)
    _same(gw, rw)


def test_batch_and_group_norm_layout(device):
    x = npusim.randn(2, 3, 4, 4, device=device)
    for training in (True, False):
        y = F.batch_norm(_cl(x), npusim.zeros(3, device=device), npusim.ones(3, device=device), training=training)
        assert y.stride() == CL_4D
        _same(y, F.batch_norm(x, npusim.zeros(3, device=device), npusim.ones(3, device=device), training=training))
    x3 = npusim.randn(2, 3, 4, 4, 4, device=device)
    assert F.batch_norm(x3.contiguous(memory_format=CL3), None, None, training=True).stride() == (192, 1, 48, 12, 3)
    y = F.group_norm(_cl(x), 3)
    assert y.stride() == CL_4D
    _same(y, F.group_norm(x, 3))
    y = F.layer_norm(_cl(x), (4,))   # torch's layer_norm writes a contiguous result
    assert y.stride() == CONTIGUOUS_4D
    _same(y, F.layer_norm(x, (4,)))


_POOLS = {
    # name: (op, torch's output strides for a (2, 3, 6, 6) channels_last input)
    "max_pool2d": (lambda t: F.max_pool2d(t, 2), (27, 1, 9, 3)),
    "avg_pool2d": (lambda t: F.avg_pool2d(t, 2), (27, 1, 9, 3)),
    "adaptive_avg_pool2d": (lambda t: F.adaptive_avg_pool2d(t, 2), (12, 1, 6, 3)),
    "adaptive_avg_pool2d_1": (lambda t: F.adaptive_avg_pool2d(t, 1), (3, 1, 3, 3)),
    "adaptive_max_pool2d": (lambda t: F.adaptive_max_pool2d(t, 2), (12, 1, 6, 3)),
    "upsample_nearest": (lambda t: F.interpolate(t, scale_factor=2), (432, 1, 36, 3)),
    "upsample_bilinear": (lambda t: F.interpolate(t, scale_factor=2, mode="bilinear"), (432, 1, 36, 3)),
}

# the gradient of a channels_last input, from a contiguous output gradient, as torch lays it out
_POOL_GRADS = {"max_pool2d": (108, 1, 18, 3), "avg_pool2d": (108, 1, 18, 3), "adaptive_avg_pool2d": (108, 1, 18, 3),
               "adaptive_max_pool2d": (108, 1, 18, 3), "upsample_nearest": (108, 36, 6, 1),
               "upsample_bilinear": (108, 36, 6, 1)}


@pytest.mark.parametrize("name", sorted(_POOLS))
def test_pooling_layout(device, name):
    op, strides = _POOLS[name]
    x = npusim.randn(2, 3, 6, 6, device=device)
    y = op(_cl(x))
    assert y.stride() == strides
    _same(y, op(x))
    if name in _POOL_GRADS:
        xg = _cl(x).requires_grad_()
        out = op(xg)
        g = npusim.randn(out.shape, device=device)
        (gi,) = npusim.autograd.grad(out, xg, g)
        assert gi.stride() == _POOL_GRADS[name]
        xr = x.clone().requires_grad_()
        _same(gi, npusim.autograd.grad(op(xr), xr, g)[0])


def test_max_pool2d_indices_layout(device):
    x = npusim.randn(2, 3, 6, 6, device=device)
    v, i = F.max_pool2d(_cl(x), 2, return_indices=True)
    assert v.stride() == i.stride() == (27, 1, 9, 3)
    assert npusim.equal(i, F.max_pool2d(x, 2, return_indices=True)[1])


def test_pool3d_layout(device):
    x = npusim.randn(2, 3, 4, 4, 4, device=device)
    c = x.contiguous(memory_format=CL3)
    # torch keeps channels_last_3d in max pooling only; its other 3-d pools write contiguous results
    cases = [(lambda t: F.max_pool3d(t, 2), (24, 1, 12, 6, 3), (192, 1, 48, 12, 3)),
             (lambda t: F.avg_pool3d(t, 2), (24, 8, 4, 2, 1), (192, 64, 16, 4, 1)),
             (lambda t: F.adaptive_avg_pool3d(t, 2), (24, 8, 4, 2, 1), (192, 64, 16, 4, 1)),
             (lambda t: F.adaptive_max_pool3d(t, 2), (24, 8, 4, 2, 1), (192, 64, 16, 4, 1))]
    for op, strides, grad_strides in cases:
        y = op(c)
        assert y.stride() == strides
        _same(y, op(x))
        xg = c.detach().requires_grad_()
        assert npusim.autograd.grad(op(xg), xg, npusim.ones(y.shape, device=device))[0].stride() == grad_strides


# --- gradients of leaves: torch's gradient layout contract ----------------------------------------------------------

def test_leaf_grad_takes_leaf_layout(device):
    x = _cl(npusim.randn(2, 3, 4, 4, device=device)).requires_grad_()
    F.relu(x).exp().sum().backward()
    assert x.grad.stride() == CL_4D
    x.grad = None
    x.exp().backward(npusim.ones(2, 3, 4, 4, device=device))   # a contiguous incoming gradient
    assert x.grad.stride() == CL_4D
    _same(x.grad, x.detach().exp())
    w = _cl(npusim.randn(5, 3, 3, 3, device=device)).requires_grad_()
    F.conv2d(npusim.randn(2, 3, 4, 4, device=device), w).sum().backward()
    assert w.grad.stride() == (27, 1, 9, 3)
    t = npusim.randn(3, 5, device=device).t().detach().requires_grad_()
    (npusim.randn(2, 5, device=device) @ t).sum().backward()
    assert t.grad.stride() == (1, 5)


def test_channels_last_training_step_matches_contiguous(device):
    npusim.manual_seed(0)
    model = npusim.nn.Sequential(npusim.nn.Conv2d(3, 8, 3, padding=1), npusim.nn.BatchNorm2d(8), npusim.nn.ReLU(),
                                 npusim.nn.MaxPool2d(2), npusim.nn.Conv2d(8, 4, 3), npusim.nn.AdaptiveAvgPool2d(1),
                                 npusim.nn.Flatten(), npusim.nn.Linear(4, 2)).to(device)
    x = npusim.randn(4, 3, 8, 8, device=device)
    twin = npusim.nn.Sequential(*[m for m in model])   # same modules: run once each way from the same weights
    state = {k: v.clone() for k, v in model.state_dict().items()}
    loss = model(x).square().mean()
    loss.backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.load_state_dict(state)
    model.zero_grad(set_to_none=True)
    twin.to(memory_format=CL)
    loss_cl = twin(x.contiguous(memory_format=CL)).square().mean()
    loss_cl.backward()
    np.testing.assert_allclose(host(loss_cl), host(loss), rtol=1e-5)
    assert model[0].weight.grad.stride() == (27, 1, 9, 3)
    for p, g in zip(model.parameters(), grads):
        np.testing.assert_allclose(host(p.grad), host(g), rtol=1e-4, atol=1e-5)
