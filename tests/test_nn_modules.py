"""The layers of ``npusim.nn``: torch's weights load into them and give torch's outputs and gradients on
every device; repr text, constructor defaults and errors are torch's; small models train like torch's."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import host

import npusim
import npusim.nn as nn

RNG_SEED = 1234


# the oracle on one thread (see conftest)
pytestmark = pytest.mark.usefixtures("torch_on_one_thread")


def _rng():
    return np.random.default_rng(RNG_SEED)


def randn(*shape):
    return _rng().standard_normal(shape).astype(np.float32)


def torch_state_to_npusim(torch_module):
    return {k: npusim.tensor(v.detach().cpu().numpy()) for k, v in torch_module.state_dict().items()}


def _first(out):
    return out[0] if isinstance(out, tuple) else out


def _as_npusim(a, device, requires_grad):
    return npusim.tensor(a, device=device, requires_grad=requires_grad)


def check_against_torch(torch, build, inputs, device, *, train=False, grad=True, rtol=1e-4, atol=1e-5,
                        call_kwargs=None):
    """Build the layer in both libraries, copy torch's state dict into npusim's (strict load), then compare
    the forward output, parameter gradients and input gradients; returns both modules."""
    torch.manual_seed(0)
    tm = build(torch.nn)
    nm = build(nn)
    nm.load_state_dict(torch_state_to_npusim(tm))
    nm.to(device)
    tm.train(train)
    nm.train(train)
    call_kwargs = call_kwargs or {}
    floating = [a.dtype.kind == "f" and grad for a in inputs]
    t_in = [torch.tensor(a, requires_grad=f) for a, f in zip(inputs, floating)]
    n_in = [_as_npusim(a, device, f) for a, f in zip(inputs, floating)]
    t_out = _first(tm(*t_in, **call_kwargs))
    n_out = _first(nm(*n_in, **call_kwargs))
    assert n_out.device.type == device
    assert tuple(n_out.shape) == tuple(t_out.shape)
    assert str(n_out.dtype).replace("npusim", "torch") == str(t_out.dtype)
    np.testing.assert_allclose(host(n_out), t_out.detach().numpy(), rtol=rtol, atol=atol)
    if grad and t_out.requires_grad:
        g = _rng().standard_normal(tuple(t_out.shape)).astype(np.float32)
        (t_out * torch.tensor(g)).sum().backward()
        (n_out * npusim.tensor(g, device=device)).sum().backward()
        t_params = dict(tm.named_parameters())
        for name, p in nm.named_parameters():
            tg = t_params[name].grad
            if tg is None:
                assert p.grad is None, name
                continue
            assert p.grad is not None, name
            assert p.grad.device.type == device
            np.testing.assert_allclose(host(p.grad), tg.numpy(), rtol=rtol, atol=atol, err_msg=name)
        for t, n in zip(t_in, n_in):
            if t.requires_grad:
                np.testing.assert_allclose(host(n.grad), t.grad.numpy(), rtol=rtol, atol=atol)
    for (name, tb), (name2, nb) in zip(tm.named_buffers(), nm.named_buffers()):
        assert name == name2
        np.testing.assert_allclose(host(nb), tb.numpy(), rtol=rtol, atol=atol, err_msg=name)
    return tm, nm


@pytest.mark.oracle
@pytest.mark.parametrize("name", nn.modules.__all__)
def test_constructor_and_forward_signatures_match_torch(torch, name):
    ours, theirs = getattr(nn, name), getattr(torch.nn, name)
    assert _signature(ours.__init__) == _signature(theirs.__init__)
    if ours.forward is not nn.Module.forward:
        assert _signature(ours.forward) == _signature(theirs.forward)


def _signature(fn):
    """Parameter names, kinds and defaults (callable defaults by name, the rest by repr)."""
    import inspect
    out = []
    for p in inspect.signature(fn).parameters.values():
        d = p.default
        d = getattr(d, "__name__", d) if callable(d) else (d if d is inspect.Parameter.empty else repr(d))
        out.append((p.name, p.kind, d))
    return out


# --- every layer against torch ----------------------------------------------------------------------------------

X2 = randn(4, 6)
X3 = randn(2, 3, 6)
IMG = randn(2, 4, 7, 6)
SEQ = randn(2, 4, 9)
VOL = randn(1, 2, 3, 4, 5)
Q8 = randn(3, 2, 8)
MEM8 = randn(4, 2, 8)

CASES = {
    # name: (build(nn), inputs)
    "Linear": (lambda nn: nn.Linear(6, 3), [X2]),
    "Linear-3d-nobias": (lambda nn: nn.Linear(6, 5, bias=False), [X3]),
    "Bilinear": (lambda nn: nn.Bilinear(6, 4, 3), [X2, randn(4, 4)]),
    "Bilinear-nobias-batched": (lambda nn: nn.Bilinear(6, 4, 3, bias=False), [X3, randn(2, 3, 4)]),
    "Identity": (lambda nn: nn.Identity(3, unused=True), [X2]),
    "Flatten": (lambda nn: nn.Flatten(), [IMG]),
    "Flatten-0-2": (lambda nn: nn.Flatten(0, 2), [IMG]),
    "Unflatten": (lambda nn: nn.Unflatten(1, (2, 3)), [X2]),
    "LayerNorm": (lambda nn: nn.LayerNorm(6), [X3]),
    "LayerNorm-2d-noaffine": (lambda nn: nn.LayerNorm([3, 6], elementwise_affine=False), [X3]),
    "LayerNorm-nobias": (lambda nn: nn.LayerNorm(6, eps=1e-3, bias=False), [X3]),
    "RMSNorm": (lambda nn: nn.RMSNorm(6), [X3]),
    "RMSNorm-eps-noaffine": (lambda nn: nn.RMSNorm([3, 6], eps=1e-2, elementwise_affine=False), [X3]),
    "GroupNorm": (lambda nn: nn.GroupNorm(2, 4), [IMG]),
    "GroupNorm-noaffine": (lambda nn: nn.GroupNorm(1, 4, eps=1e-3, affine=False), [IMG]),
    "GroupNorm-nobias": (lambda nn: nn.GroupNorm(4, 4, bias=False), [IMG]),
    "ReLU": (lambda nn: nn.ReLU(), [X2]),
    "ReLU6": (lambda nn: nn.ReLU6(), [X2 * 5]),
    "GELU": (lambda nn: nn.GELU(), [X2]),
    "GELU-tanh": (lambda nn: nn.GELU(approximate="tanh"), [X2]),
    "SiLU": (lambda nn: nn.SiLU(), [X2]),
    "SELU": (lambda nn: nn.SELU(), [X2]),
    "ELU": (lambda nn: nn.ELU(alpha=0.5), [X2]),
    "CELU": (lambda nn: nn.CELU(alpha=2.0), [X2]),
    "LeakyReLU": (lambda nn: nn.LeakyReLU(0.2), [X2]),
    "Softplus": (lambda nn: nn.Softplus(beta=2.0, threshold=1.0), [X2]),
    "Hardtanh": (lambda nn: nn.Hardtanh(-0.5, 0.7), [X2]),
    "Tanh": (lambda nn: nn.Tanh(), [X2]),
    "Sigmoid": (lambda nn: nn.Sigmoid(), [X2]),
    "Softmax": (lambda nn: nn.Softmax(dim=1), [X3]),
    "LogSoftmax": (lambda nn: nn.LogSoftmax(dim=-1), [X3]),
    "Softmin": (lambda nn: nn.Softmin(dim=0), [X3]),
    "Softmax2d": (lambda nn: nn.Softmax2d(), [IMG]),
    "Mish": (lambda nn: nn.Mish(), [X2]),
    "Hardsigmoid": (lambda nn: nn.Hardsigmoid(), [X2 * 4]),
    "Hardswish": (lambda nn: nn.Hardswish(), [X2 * 4]),
    "LogSigmoid": (lambda nn: nn.LogSigmoid(), [X2]),
    "Softsign": (lambda nn: nn.Softsign(), [X2]),
    "Tanhshrink": (lambda nn: nn.Tanhshrink(), [X2]),
    "Threshold": (lambda nn: nn.Threshold(0.1, 20.0), [X2]),
    "GLU": (lambda nn: nn.GLU(dim=1), [X2]),
    "PReLU": (lambda nn: nn.PReLU(), [X2]),
    "PReLU-per-channel": (lambda nn: nn.PReLU(4, init=0.1), [IMG]),
    "Dropout-eval": (lambda nn: nn.Dropout(0.5), [X2]),
    "Dropout2d-eval": (lambda nn: nn.Dropout2d(0.3), [IMG]),
    "Conv1d": (lambda nn: nn.Conv1d(4, 6, 3, stride=2, padding=1), [SEQ]),
    "Conv1d-same-dilated": (lambda nn: nn.Conv1d(4, 2, 4, padding="same", dilation=2, bias=False), [SEQ]),
    "Conv1d-reflect": (lambda nn: nn.Conv1d(4, 4, 3, padding=2, groups=2, padding_mode="reflect"), [SEQ]),
    "Conv2d": (lambda nn: nn.Conv2d(4, 5, 3), [IMG]),
    "Conv2d-strided-grouped": (lambda nn: nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), groups=2),
                               [IMG]),
    "Conv2d-same": (lambda nn: nn.Conv2d(4, 3, (4, 3), padding="same"), [IMG]),
    "Conv2d-valid": (lambda nn: nn.Conv2d(4, 3, 2, padding="valid", dilation=2), [IMG]),
    "Conv2d-replicate": (lambda nn: nn.Conv2d(4, 3, 3, padding=1, padding_mode="replicate"), [IMG]),
    "Conv2d-circular": (lambda nn: nn.Conv2d(4, 3, 3, padding=(2, 1), padding_mode="circular"), [IMG]),
    "Conv2d-unbatched": (lambda nn: nn.Conv2d(4, 3, 3), [IMG[0]]),
    "ConvTranspose1d": (lambda nn: nn.ConvTranspose1d(4, 3, 3, stride=2, padding=1, output_padding=1), [SEQ]),
    "ConvTranspose2d": (lambda nn: nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2), [IMG]),
    "MaxPool2d": (lambda nn: nn.MaxPool2d(2), [IMG]),
    "MaxPool2d-padded-ceil": (lambda nn: nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True), [IMG]),
    "AvgPool2d": (lambda nn: nn.AvgPool2d(2), [IMG]),
    "AvgPool2d-nopad-count": (lambda nn: nn.AvgPool2d(3, 2, 1, count_include_pad=False), [IMG]),
    "AvgPool2d-divisor": (lambda nn: nn.AvgPool2d((2, 3), divisor_override=2), [IMG]),
    "AdaptiveAvgPool2d": (lambda nn: nn.AdaptiveAvgPool2d((3, 4)), [IMG]),
    "AdaptiveAvgPool2d-1": (lambda nn: nn.AdaptiveAvgPool2d(1), [IMG]),
    "AdaptiveAvgPool2d-None": (lambda nn: nn.AdaptiveAvgPool2d((None, 2)), [IMG]),
    "Upsample-nearest": (lambda nn: nn.Upsample(scale_factor=2), [IMG]),
    "Upsample-bilinear": (lambda nn: nn.Upsample(size=(9, 5), mode="bilinear"), [IMG]),
    "Upsample-bilinear-corners": (lambda nn: nn.Upsample(scale_factor=1.5, mode="bilinear", align_corners=True),
                                  [IMG]),
    "UpsamplingNearest2d": (lambda nn: nn.UpsamplingNearest2d(size=(8, 8)), [IMG]),
    "UpsamplingBilinear2d": (lambda nn: nn.UpsamplingBilinear2d(scale_factor=2), [IMG]),
    "ZeroPad2d": (lambda nn: nn.ZeroPad2d((1, 2, 0, 1)), [IMG]),
    "ConstantPad1d": (lambda nn: nn.ConstantPad1d(2, 3.5), [SEQ]),
    "ConstantPad2d": (lambda nn: nn.ConstantPad2d((1, 0, 2, 1), -1.0), [IMG]),
    "ReflectionPad2d": (lambda nn: nn.ReflectionPad2d(2), [IMG]),
    "ReplicationPad1d": (lambda nn: nn.ReplicationPad1d((1, 3)), [SEQ]),
    "CircularPad2d": (lambda nn: nn.CircularPad2d(1), [IMG]),
    "Embedding": (lambda nn: nn.Embedding(10, 4), [np.array([[1, 2, 9], [0, 2, 5]])]),
    "Embedding-padding": (lambda nn: nn.Embedding(10, 4, padding_idx=2), [np.array([[1, 2, 9], [2, 2, 5]])]),
    "Embedding-negative-padding": (lambda nn: nn.Embedding(6, 3, padding_idx=-1), [np.array([5, 0, 5, 1])]),
    "Embedding-max-norm": (lambda nn: nn.Embedding(10, 4, max_norm=1.0, norm_type=1.5),
                           [np.array([[1, 2, 9], [2, 2, 5]])]),
    "Sequential-MLP": (lambda nn: nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2)), [X2]),
    "ReLU-inplace": (lambda nn: nn.Sequential(nn.Linear(6, 6), nn.ReLU(inplace=True)), [X2]),
    "LeakyReLU-inplace": (lambda nn: nn.Sequential(nn.Linear(6, 6), nn.LeakyReLU(0.3, inplace=True)), [X2]),
    "ELU-inplace": (lambda nn: nn.Sequential(nn.Linear(6, 6), nn.ELU(inplace=True)), [X2]),
    "Hardtanh-inplace": (lambda nn: nn.Sequential(nn.Linear(6, 6), nn.Hardtanh(inplace=True)), [X2]),
    "SiLU-inplace": (lambda nn: nn.Sequential(nn.Linear(6, 6), nn.SiLU(inplace=True)), [X2]),
    "Dropout1d-eval": (lambda nn: nn.Dropout1d(0.3), [SEQ]),
    "Dropout3d-eval": (lambda nn: nn.Dropout3d(0.3), [VOL]),
    "AlphaDropout-eval": (lambda nn: nn.AlphaDropout(0.3), [X2]),
    "FeatureAlphaDropout-eval": (lambda nn: nn.FeatureAlphaDropout(0.3), [SEQ]),
    "ZeroPad1d": (lambda nn: nn.ZeroPad1d((2, 1)), [SEQ]),
    "ZeroPad3d": (lambda nn: nn.ZeroPad3d(1), [VOL]),
    "ConstantPad3d": (lambda nn: nn.ConstantPad3d((1, 0, 0, 2, 1, 1), 0.5), [VOL]),
    "ReflectionPad1d": (lambda nn: nn.ReflectionPad1d((3, 1)), [SEQ]),
    "ReflectionPad3d": (lambda nn: nn.ReflectionPad3d(1), [VOL]),
    "ReplicationPad2d": (lambda nn: nn.ReplicationPad2d((1, 2, 3, 0)), [IMG]),
    "ReplicationPad3d": (lambda nn: nn.ReplicationPad3d((0, 1, 1, 0, 2, 1)), [VOL]),
    "CircularPad1d": (lambda nn: nn.CircularPad1d((2, 3)), [SEQ]),
    "CircularPad3d": (lambda nn: nn.CircularPad3d(1), [VOL]),
    "TransformerDecoderLayer": (lambda nn: nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), [Q8, MEM8]),
    "TransformerDecoderLayer-pre-norm": (lambda nn: nn.TransformerDecoderLayer(
        8, 2, 16, dropout=0.0, norm_first=True, activation="gelu", batch_first=True), [randn(2, 3, 8), randn(2, 4, 8)]),
    "Transformer": (lambda nn: nn.Transformer(8, 2, 1, 2, 16, dropout=0.0, batch_first=True),
                    [randn(2, 4, 8), randn(2, 3, 8)]),
}


@pytest.mark.oracle
@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths")
@pytest.mark.parametrize("case", list(CASES))
def test_layer_matches_torch(torch, device, case):
    build, inputs = CASES[case]
    check_against_torch(torch, build, inputs, device)


@pytest.mark.oracle
@pytest.mark.parametrize("case", list(CASES))
def test_state_dict_keys_shapes_and_repr_match_torch(torch, case):
    build, _ = CASES[case]
    tm, nm = build(torch.nn), build(nn)
    t_sd, n_sd = tm.state_dict(), nm.state_dict()
    assert list(n_sd) == list(t_sd)
    assert [tuple(v.shape) for v in n_sd.values()] == [tuple(v.shape) for v in t_sd.values()]
    assert [str(v.dtype) for v in n_sd.values()] == [str(v.dtype).replace("torch", "npusim") for v in t_sd.values()]
    assert repr(nm) == repr(tm).replace("torch", "npusim")
    # npusim's state dict loads into torch's layer too.
    tm.load_state_dict({k: torch.from_numpy(host(v).copy()) for k, v in n_sd.items()})


REPR_ONLY = [
    lambda nn: nn.ReLU(inplace=True), lambda nn: nn.ReLU6(inplace=True), lambda nn: nn.ELU(2.0, inplace=True),
    lambda nn: nn.SELU(inplace=True), lambda nn: nn.SiLU(True), lambda nn: nn.Mish(True), lambda nn: nn.CELU(),
    lambda nn: nn.Hardtanh(-3, 3, inplace=True), lambda nn: nn.LeakyReLU(inplace=True),
    lambda nn: nn.Threshold(0.5, -1.0, True), lambda nn: nn.Softmax(), lambda nn: nn.GELU("tanh"),
    lambda nn: nn.Hardsigmoid(inplace=True), lambda nn: nn.Hardswish(True), lambda nn: nn.PReLU(3),
    lambda nn: nn.Dropout(0.2, inplace=True), lambda nn: nn.AlphaDropout(), lambda nn: nn.Upsample(size=4),
    lambda nn: nn.Upsample(scale_factor=(2, 3), mode="bilinear"), lambda nn: nn.UpsamplingNearest2d(scale_factor=3),
    lambda nn: nn.Embedding(4, 2, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True, sparse=True),
    lambda nn: nn.MaxPool2d((2, 3), stride=1, padding=1, dilation=2, return_indices=True, ceil_mode=True),
    lambda nn: nn.AvgPool2d(3, stride=(1, 2), padding=1, ceil_mode=True), lambda nn: nn.AdaptiveAvgPool2d((None, 3)),
    lambda nn: nn.Conv2d(4, 8, (3, 5), stride=2, padding=(1, 2), dilation=(1, 2), groups=4, bias=False,
                         padding_mode="circular"),
    lambda nn: nn.Conv1d(2, 2, 3, padding="valid"),
    lambda nn: nn.ConvTranspose2d(4, 2, 3, stride=2, output_padding=1, dilation=2),
    lambda nn: nn.BatchNorm1d(3, eps=1e-3, momentum=None, affine=False, track_running_stats=False),
    lambda nn: nn.LayerNorm([2, 3], eps=1e-6, bias=False), lambda nn: nn.RMSNorm(4, eps=1e-6),
    lambda nn: nn.GroupNorm(2, 4, affine=False), lambda nn: nn.MultiheadAttention(8, 2, kdim=3, add_bias_kv=True),
    lambda nn: nn.CrossEntropyLoss(label_smoothing=0.1), lambda nn: nn.KLDivLoss(log_target=True),
    lambda nn: nn.Bilinear(2, 3, 4, bias=False), lambda nn: nn.Identity(),
    lambda nn: nn.Unflatten(-1, [2, 2]), lambda nn: nn.ConstantPad2d(1, 0.0),
    lambda nn: nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.ReLU()]),
]


@pytest.mark.oracle
@pytest.mark.parametrize("index", range(len(REPR_ONLY)))
def test_repr_of_constructor_variants_matches_torch(torch, index):
    build = REPR_ONLY[index]
    assert repr(build(nn)) == repr(build(torch.nn)).replace("torch", "npusim")


def test_maxpool_return_indices(device):
    x = npusim.tensor(np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4), device=device)
    out, idx = nn.MaxPool2d(2, return_indices=True)(x)
    assert host(out)[0, 0].tolist() == [[5, 7], [13, 15]]
    assert host(idx)[0, 1].tolist() == [[5, 7], [13, 15]] and idx.dtype is npusim.int64


# --- batch norm: running statistics ----------------------------------------------------------------------

BN_CASES = {
    "BatchNorm1d-2d": (lambda nn: nn.BatchNorm1d(6), X2),
    "BatchNorm1d-3d": (lambda nn: nn.BatchNorm1d(3, momentum=0.3), X3),
    "BatchNorm2d": (lambda nn: nn.BatchNorm2d(4), IMG),
    "BatchNorm2d-cumulative": (lambda nn: nn.BatchNorm2d(4, momentum=None), IMG),
    "BatchNorm2d-noaffine": (lambda nn: nn.BatchNorm2d(4, eps=1e-3, affine=False), IMG),
    "BatchNorm2d-nobias": (lambda nn: nn.BatchNorm2d(4, bias=False), IMG),
    "BatchNorm2d-untracked": (lambda nn: nn.BatchNorm2d(4, track_running_stats=False), IMG),
    "BatchNorm3d": (lambda nn: nn.BatchNorm3d(2, momentum=0.5), VOL),
}


@pytest.mark.oracle
@pytest.mark.parametrize("case", list(BN_CASES))
def test_batchnorm_train_then_eval_matches_torch(torch, device, case):
    build, x = BN_CASES[case]
    # Training mode: batch statistics, and the running buffers (compared by the helper) updated as torch does.
    tm, nm = check_against_torch(torch, build, [x], device, train=True)
    for step in range(2):
        x2 = (x * (step + 2) + 1).astype(np.float32)
        tm(torch.tensor(x2))
        nm(npusim.tensor(x2, device=device))
    for (name, tb), (_, nb) in zip(tm.named_buffers(), nm.named_buffers()):
        np.testing.assert_allclose(host(nb), tb.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    # Eval mode: the running statistics normalise (or the batch's, without buffers).
    tm.eval()
    nm.eval()
    np.testing.assert_allclose(host(nm(npusim.tensor(x, device=device))), tm(torch.tensor(x)).detach().numpy(),
                               rtol=1e-4, atol=1e-5)


def test_batchnorm_buffers_and_counter(device):
    bn = nn.BatchNorm1d(3, device=device)
    assert [n for n, _ in bn.named_buffers()] == ["running_mean", "running_var", "num_batches_tracked"]
    assert bn.num_batches_tracked.dtype is npusim.int64 and bn.num_batches_tracked.device.type == device
    x = npusim.tensor(np.array([[1.0, 2.0, 3.0], [3.0, 6.0, 9.0]], np.float32), device=device)
    bn(x)
    bn(x)
    assert int(bn.num_batches_tracked) == 2
    # momentum 0.1 twice towards mean (2, 4, 6) and unbiased variance (2, 8, 18).
    np.testing.assert_allclose(host(bn.running_mean), np.array([2, 4, 6]) * 0.19, rtol=1e-6)
    np.testing.assert_allclose(host(bn.running_var), 0.81 + np.array([2, 8, 18]) * 0.19, rtol=1e-6)
    bn.reset_running_stats()
    assert int(bn.num_batches_tracked) == 0 and host(bn.running_var).tolist() == [1, 1, 1]
    untracked = nn.BatchNorm2d(2, track_running_stats=False)
    assert untracked.running_mean is None and untracked.num_batches_tracked is None
    assert list(untracked.state_dict()) == ["weight", "bias"]


def test_batchnorm_loads_checkpoint_without_counter():
    bn = nn.BatchNorm1d(2)
    sd = bn.state_dict()
    del sd["num_batches_tracked"]
    sd._metadata[""]["version"] = 1  # saved before the counter existed
    assert bn.load_state_dict(sd).missing_keys == []
    sd._metadata[""]["version"] = 2  # a current checkpoint must have it
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "num_batches_tracked"'):
        nn.BatchNorm1d(2).load_state_dict(sd)


@pytest.mark.oracle
def test_batchnorm_bad_input_rank(torch):
    for cls, shape in (("BatchNorm1d", (2, 3, 4, 5)), ("BatchNorm2d", (2, 3)), ("BatchNorm3d", (2, 3, 4, 5))):
        with pytest.raises(ValueError) as t_err:
            getattr(torch.nn, cls)(3)(torch.zeros(shape))
        with pytest.raises(ValueError, match=str(t_err.value).replace("(", r"\(").replace(")", r"\)")):
            getattr(nn, cls)(3)(npusim.zeros(shape))


# --- dropout ----------------------------------------------------------------------------------------------------

def test_dropout_training_zeroes_and_rescales(device):
    npusim.manual_seed(0)
    x = npusim.ones(200, 100, device=device)
    drop = nn.Dropout(0.3)
    y = host(drop(x))
    kept = y != 0
    assert 0.65 < kept.mean() < 0.75
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-6)
    drop.eval()
    assert np.array_equal(host(drop(x)), host(x))


def test_dropout2d_zeroes_whole_channels(device):
    npusim.manual_seed(1)
    y = host(nn.Dropout2d(0.5)(npusim.ones(8, 16, 3, 3, device=device)))
    per_channel = y.reshape(8, 16, 9)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2).all(-1))
    assert 0 < (per_channel == 0).all(-1).sum() < 8 * 16


def test_dropout_inplace_changes_input():
    npusim.manual_seed(0)
    x = npusim.ones(50, 50)
    out = nn.Dropout(0.5, inplace=True)(x)
    assert out is x and (host(x) == 0).any()


@pytest.mark.oracle
@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_dropout_probability_error(torch, p):
    with pytest.raises(ValueError) as t_err:
        torch.nn.Dropout(p)
    for cls in (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.AlphaDropout):
        with pytest.raises(ValueError, match=f"^{t_err.value}$".replace("(", r"\(")):
            cls(p)


# --- embedding ----------------------------------------------------------------------------------------------

def test_embedding_padding_row_is_zero_and_gets_no_gradient(device):
    emb = nn.Embedding(5, 3, padding_idx=1, device=device)
    assert host(emb.weight)[1].tolist() == [0, 0, 0]
    idx = npusim.tensor([[1, 0], [1, 4]], device=device)
    emb(idx).sum().backward()
    g = host(emb.weight.grad)
    assert g[1].tolist() == [0, 0, 0] and g[0].tolist() == [1, 1, 1] and g[2].tolist() == [0, 0, 0]


@pytest.mark.oracle
def test_embedding_from_pretrained(torch, device):
    w = randn(4, 3)
    t_emb = torch.nn.Embedding.from_pretrained(torch.tensor(w), padding_idx=0)
    emb = nn.Embedding.from_pretrained(npusim.tensor(w, device=device), padding_idx=0)
    assert emb.weight.requires_grad is False and emb.weight.device.type == device
    assert repr(emb) == repr(t_emb)
    np.testing.assert_array_equal(host(emb(npusim.tensor([3, 0], device=device))), w[[3, 0]])
    thawed = nn.Embedding.from_pretrained(npusim.tensor(w), freeze=False)
    assert thawed.weight.requires_grad is True


@pytest.mark.oracle
def test_embedding_errors(torch):
    cases = [lambda T, m: m.Embedding(4, 2, padding_idx=4), lambda T, m: m.Embedding(4, 2, padding_idx=-5),
             lambda T, m: m.Embedding(4, 2, _weight=T.zeros(3, 2)),
             lambda T, m: m.Embedding.from_pretrained(T.zeros(3))]
    for case in cases:
        with pytest.raises(AssertionError) as t_err:
            case(torch, torch.nn)
        with pytest.raises(AssertionError, match=f"^{t_err.value}$"):
            case(npusim, nn)


# --- multi-head attention --------------------------------------------------------------------------------------

Q = randn(5, 2, 8)      # (L, N, E) sequence-first
KV = randn(7, 2, 8)


def _bool_mask(shape, seed):
    m = np.random.default_rng(seed).random(shape) < 0.3
    m[..., 0] = False  # every row keeps one key, so no row is all -inf
    return m


MHA_CASES = {
    "self": (lambda nn: nn.MultiheadAttention(8, 2), [Q, Q, Q], {}),
    "cross-unaveraged": (lambda nn: nn.MultiheadAttention(8, 4), [Q, KV, KV], {"average_attn_weights": False}),
    "no-weights": (lambda nn: nn.MultiheadAttention(8, 2), [Q, KV, randn(7, 2, 8)], {"need_weights": False}),
    "batch-first": (lambda nn: nn.MultiheadAttention(8, 2, batch_first=True), [randn(2, 5, 8)] * 3, {}),
    "kdim-vdim": (lambda nn: nn.MultiheadAttention(8, 2, kdim=3, vdim=5), [Q, randn(7, 2, 3), randn(7, 2, 5)], {}),
    "no-bias": (lambda nn: nn.MultiheadAttention(8, 2, bias=False), [Q, KV, KV], {}),
    "bias-kv-zero-attn": (lambda nn: nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True),
                          [Q, KV, KV], {}),
    "unbatched": (lambda nn: nn.MultiheadAttention(8, 2), [Q[:, 0], KV[:, 0], KV[:, 0]], {}),
}


@pytest.mark.oracle
@pytest.mark.parametrize("case", list(MHA_CASES))
def test_multihead_attention_matches_torch(torch, device, case):
    build, inputs, kwargs = MHA_CASES[case]
    torch.manual_seed(0)
    tm = build(torch.nn)
    nm = build(nn)
    nm.load_state_dict(torch_state_to_npusim(tm))
    nm.to(device)
    t_in = [torch.tensor(a, requires_grad=True) for a in inputs]
    n_in = [npusim.tensor(a, device=device, requires_grad=True) for a in inputs]
    if inputs[0] is inputs[1] is inputs[2]:  # self-attention passes one tensor three times
        t_in, n_in = [t_in[0]] * 3, [n_in[0]] * 3
    t_out, t_w = tm(*t_in, **kwargs)
    n_out, n_w = nm(*n_in, **kwargs)
    np.testing.assert_allclose(host(n_out), t_out.detach().numpy(), rtol=1e-4, atol=1e-5)
    if t_w is None:
        assert n_w is None
    else:
        np.testing.assert_allclose(host(n_w), t_w.detach().numpy(), rtol=1e-4, atol=1e-6)
    t_out.sum().backward()
    n_out.sum().backward()
    t_params = dict(tm.named_parameters())
    for name, p in nm.named_parameters():
        np.testing.assert_allclose(host(p.grad), t_params[name].grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
    np.testing.assert_allclose(host(n_in[0].grad), t_in[0].grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.oracle
@pytest.mark.parametrize("need_weights", [True, False])
def test_multihead_attention_masks_match_torch(torch, device, need_weights):
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    nm = nn.MultiheadAttention(8, 2, batch_first=True)
    nm.load_state_dict(torch_state_to_npusim(tm))
    nm.to(device)
    q, kv = randn(2, 5, 8), randn(2, 7, 8)
    kpm = _bool_mask((2, 7), 1)
    bool_attn = _bool_mask((5, 7), 2)
    float_attn = randn(2 * 2, 5, 7)
    for key_padding_mask, attn_mask in ((kpm, None), (None, bool_attn), (kpm, bool_attn), (None, float_attn)):
        t_kw = {"need_weights": need_weights,
                "key_padding_mask": None if key_padding_mask is None else torch.tensor(key_padding_mask),
                "attn_mask": None if attn_mask is None else torch.tensor(attn_mask)}
        n_kw = {"need_weights": need_weights,
                "key_padding_mask": None if key_padding_mask is None else npusim.tensor(key_padding_mask,
                                                                                        device=device),
                "attn_mask": None if attn_mask is None else npusim.tensor(attn_mask, device=device)}
        t_out, _ = tm(torch.tensor(q), torch.tensor(kv), torch.tensor(kv), **t_kw)
        n_out, _ = nm(npusim.tensor(q, device=device), npusim.tensor(kv, device=device),
                      npusim.tensor(kv, device=device), **n_kw)
        np.testing.assert_allclose(host(n_out), t_out.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_multihead_attention_parameter_layout():
    mha = nn.MultiheadAttention(6, 3)
    assert [(n, tuple(p.shape)) for n, p in mha.named_parameters()] == [
        ("in_proj_weight", (18, 6)), ("in_proj_bias", (18,)), ("out_proj.weight", (6, 6)), ("out_proj.bias", (6,))]
    assert mha.head_dim == 2 and mha._qkv_same_embed_dim
    assert host(mha.in_proj_bias).tolist() == [0.0] * 18 and host(mha.out_proj.bias).tolist() == [0.0] * 6
    separate = nn.MultiheadAttention(6, 3, kdim=4, vdim=2, bias=False)
    assert [(n, tuple(p.shape)) for n, p in separate.named_parameters()] == [
        ("q_proj_weight", (6, 6)), ("k_proj_weight", (6, 4)), ("v_proj_weight", (6, 2)), ("out_proj.weight", (6, 6))]
    assert separate.in_proj_weight is None and separate.in_proj_bias is None


@pytest.mark.oracle
def test_multihead_attention_errors(torch):
    def same_error(fn, exc=AssertionError):
        with pytest.raises(exc) as t_err:
            fn(torch, torch.nn)
        message = str(t_err.value).replace("torch", "npusim")
        with pytest.raises(exc) as n_err:
            fn(npusim, nn)
        assert str(n_err.value) == message

    same_error(lambda t, m: m.MultiheadAttention(0, 2), ValueError)
    same_error(lambda t, m: m.MultiheadAttention(6, 4))
    same_error(lambda t, m: m.MultiheadAttention(4, 2)(t.zeros(3, 2, 4), t.zeros(3, 4), t.zeros(3, 4)))
    same_error(lambda t, m: m.MultiheadAttention(4, 2)(t.zeros(3, 2, 5), t.zeros(3, 2, 5), t.zeros(3, 2, 5)))
    same_error(lambda t, m: m.MultiheadAttention(4, 2)(t.zeros(3, 2, 4), t.zeros(3, 2, 4), t.zeros(3, 2, 4),
                                                       key_padding_mask=t.zeros(2, 3, dtype=t.int64)))
    same_error(lambda t, m: m.MultiheadAttention(4, 2)(t.zeros(3, 2, 4), t.zeros(3, 2, 4), t.zeros(3, 2, 4),
                                                       attn_mask=t.zeros(3, 4)), RuntimeError)
    same_error(lambda t, m: m.MultiheadAttention(4, 2)(t.zeros(3, 2, 4), t.zeros(3, 2, 4), t.zeros(3, 2, 4),
                                                       key_padding_mask=t.zeros(2, 5, dtype=t.bool)))
    same_error(lambda t, m: m.MultiheadAttention(4, 2)(t.zeros(4), t.zeros(4), t.zeros(4)))


# --- transformer ------------------------------------------------------------------------------------------------

TRANSFORMER_CASES = {
    "post-norm-relu": (lambda nn: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), randn(5, 2, 8)),
    "pre-norm-gelu-batch-first": (lambda nn: nn.TransformerEncoderLayer(8, 4, 12, dropout=0.0, activation="gelu",
                                                                         norm_first=True, batch_first=True),
                                  randn(2, 5, 8)),
    "callable-activation-nobias": (lambda nn: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                                                          activation=nn.functional.silu, bias=False),
                                   randn(5, 2, 8)),
    "encoder-stack-with-norm": (lambda nn: nn.TransformerEncoder(
        nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True), 2, norm=nn.LayerNorm(8),
        enable_nested_tensor=False), randn(2, 5, 8)),
}


@pytest.mark.oracle
@pytest.mark.parametrize("case", list(TRANSFORMER_CASES))
def test_transformer_encoder_matches_torch(torch, device, case):
    build, x = TRANSFORMER_CASES[case]
    check_against_torch(torch, build, [x], device, train=True, rtol=1e-4, atol=1e-5)


@pytest.mark.oracle
def test_transformer_encoder_masks_match_torch(torch, device):
    build = TRANSFORMER_CASES["encoder-stack-with-norm"][0]
    x = randn(2, 5, 8)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(5)
    n_causal = nn.Transformer.generate_square_subsequent_mask(5, device=device)
    np.testing.assert_array_equal(host(n_causal), causal.numpy())
    padding = _bool_mask((2, 5), 3)
    check_against_torch(torch, build, [x], device, train=True)  # warm-up: weights copied, no masks
    torch.manual_seed(0)
    tm = build(torch.nn)
    nm = build(nn)
    nm.load_state_dict(torch_state_to_npusim(tm))
    nm.to(device)
    for kwargs in ({"mask": "causal"}, {"src_key_padding_mask": "padding"}, {"mask": "causal", "is_causal": True}):
        t_kw = {k: causal if v == "causal" else torch.tensor(padding) if v == "padding" else v
                for k, v in kwargs.items()}
        n_kw = {k: n_causal if v == "causal" else npusim.tensor(padding, device=device) if v == "padding" else v
                for k, v in kwargs.items()}
        t_out = tm(torch.tensor(x), **t_kw)
        n_out = nm(npusim.tensor(x, device=device), **n_kw)
        np.testing.assert_allclose(host(n_out), t_out.detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.oracle
@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype stage")
@pytest.mark.parametrize("grad", [False, True])
def test_transformer_encoder_inference_with_padding_matches_torch(torch, device, grad):
    """Without grad, in eval mode, torch's nested-tensor path returns zeros at the padded positions."""
    build = TRANSFORMER_CASES["encoder-stack-with-norm"][0]
    torch.manual_seed(0)
    tm = build(torch.nn).eval()
    tm.use_nested_tensor = True  # the stack in TRANSFORMER_CASES turned it off
    nm = build(nn).eval()
    nm.use_nested_tensor = True
    nm.load_state_dict(torch_state_to_npusim(tm))
    nm.to(device)
    x = randn(3, 5, 8)
    for padding in ([[0, 0, 0, 0, 0], [0, 0, 0, 1, 1], [0, 1, 1, 1, 1]],   # padding at the ends
                    [[0, 0, 0, 0, 0], [1, 0, 0, 0, 1], [0, 0, 0, 0, 1]]):  # not left-aligned: no zeroing
        padding = np.array(padding, dtype=bool)
        with torch.set_grad_enabled(grad), npusim.set_grad_enabled(grad):
            t_out = tm(torch.tensor(x), src_key_padding_mask=torch.tensor(padding))
            n_out = nm(npusim.tensor(x, device=device), src_key_padding_mask=npusim.tensor(padding, device=device))
        np.testing.assert_allclose(host(n_out), t_out.detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.oracle
def test_transformer_repr_and_warning_match_torch(torch):
    with pytest.warns(UserWarning) as t_rec:
        t_enc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16), 2)
    with pytest.warns(UserWarning) as n_rec:
        n_enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2)
    assert str(n_rec[0].message) == str(t_rec[0].message)
    assert repr(n_enc) == repr(t_enc)
    assert n_enc.layers[0] is not n_enc.layers[1]
    assert n_enc.layers[0].linear1.weight is not n_enc.layers[1].linear1.weight
    with pytest.raises(RuntimeError, match="^activation should be relu/gelu, not tanh$"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    assert nn.TransformerEncoderLayer(8, 2).activation_relu_or_gelu == 1
    assert nn.TransformerEncoderLayer(8, 2, activation=nn.GELU()).activation_relu_or_gelu == 2


def test_transformer_dropout_is_active_in_training_only(device):
    npusim.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.5).to(device)
    x = npusim.randn(5, 2, 8, device=device)
    a, b = host(layer(x)), host(layer(x))
    assert not np.allclose(a, b)
    layer.eval()
    np.testing.assert_array_equal(host(layer(x)), host(layer(x)))


# --- losses ---------------------------------------------------------------------------------------------------

LOGITS = randn(6, 5)
CLASSES = np.array([0, 4, 2, 2, 1, 3])
PROBS = (1 / (1 + np.exp(-randn(6, 5)))).astype(np.float32)
TARGET01 = (np.random.default_rng(7).random((6, 5)) < 0.5).astype(np.float32)
CLASS_W = np.array([1.0, 2.0, 0.5, 1.5, 3.0], np.float32)

LOSS_CASES = {
    # name: (build(nn, T) with T the library, input, target)
    "CrossEntropy": (lambda nn, T: nn.CrossEntropyLoss(), LOGITS, CLASSES),
    "CrossEntropy-ignore-smooth-weight": (lambda nn, T: nn.CrossEntropyLoss(
        weight=T.tensor(CLASS_W), ignore_index=2, label_smoothing=0.1), LOGITS, CLASSES),
    "CrossEntropy-sum": (lambda nn, T: nn.CrossEntropyLoss(reduction="sum"), LOGITS, CLASSES),
    "CrossEntropy-probs": (lambda nn, T: nn.CrossEntropyLoss(label_smoothing=0.2), LOGITS,
                           PROBS / PROBS.sum(1, keepdims=True)),
    "CrossEntropy-spatial": (lambda nn, T: nn.CrossEntropyLoss(reduction="none"), randn(2, 5, 3, 4),
                             np.random.default_rng(3).integers(0, 5, (2, 3, 4))),
    "NLL": (lambda nn, T: nn.NLLLoss(), LOGITS, CLASSES),
    "NLL-weight-ignore": (lambda nn, T: nn.NLLLoss(weight=T.tensor(CLASS_W), ignore_index=0), LOGITS, CLASSES),
    "MSE": (lambda nn, T: nn.MSELoss(), LOGITS, PROBS),
    "MSE-none": (lambda nn, T: nn.MSELoss(reduction="none"), LOGITS, PROBS),
    "L1": (lambda nn, T: nn.L1Loss(), LOGITS, PROBS),
    "L1-sum": (lambda nn, T: nn.L1Loss(reduction="sum"), LOGITS, PROBS),
    "SmoothL1": (lambda nn, T: nn.SmoothL1Loss(beta=0.5), LOGITS, PROBS),
    "Huber": (lambda nn, T: nn.HuberLoss(delta=0.7), LOGITS, PROBS),
    "BCE": (lambda nn, T: nn.BCELoss(), PROBS, TARGET01),
    "BCE-weight": (lambda nn, T: nn.BCELoss(weight=T.tensor(CLASS_W), reduction="sum"), PROBS, TARGET01),
    "BCEWithLogits": (lambda nn, T: nn.BCEWithLogitsLoss(), LOGITS, TARGET01),
    "BCEWithLogits-pos-weight": (lambda nn, T: nn.BCEWithLogitsLoss(pos_weight=T.tensor(CLASS_W),
                                                                     weight=T.tensor(CLASS_W[::-1].copy())),
                                 LOGITS, TARGET01),
    "KLDiv": (lambda nn, T: nn.KLDivLoss(reduction="batchmean"), np.log(PROBS), PROBS),
    "KLDiv-log-target": (lambda nn, T: nn.KLDivLoss(reduction="sum", log_target=True), np.log(PROBS),
                         np.log(PROBS[::-1].copy())),
}


@pytest.mark.oracle
@pytest.mark.parametrize("case", list(LOSS_CASES))
def test_loss_matches_torch(torch, device, case):
    build, inp, target = LOSS_CASES[case]
    t_loss = build(torch.nn, torch)
    n_loss = build(nn, npusim).to(device)
    assert repr(n_loss) == repr(t_loss)
    assert n_loss.reduction == t_loss.reduction
    t_in = torch.tensor(inp, requires_grad=True)
    n_in = npusim.tensor(inp, device=device, requires_grad=True)
    t_out = t_loss(t_in, torch.tensor(target))
    n_out = n_loss(n_in, npusim.tensor(target, device=device))
    np.testing.assert_allclose(host(n_out), t_out.detach().numpy(), rtol=1e-5, atol=1e-6)
    t_out.sum().backward()
    n_out.sum().backward()
    np.testing.assert_allclose(host(n_in.grad), t_in.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_loss_weight_is_a_buffer_that_follows_the_module(device):
    loss = nn.CrossEntropyLoss(weight=npusim.tensor(CLASS_W)).to(device)
    assert loss.weight.device.type == device
    assert list(loss.state_dict()) == ["weight"]
    assert list(nn.CrossEntropyLoss().state_dict()) == []
    both = nn.BCEWithLogitsLoss(pos_weight=npusim.ones(5)).to(device)
    assert [n for n, _ in both.named_buffers()] == ["pos_weight"] and both.pos_weight.device.type == device


@pytest.mark.oracle
def test_loss_constructor_errors_and_legacy_flags(torch):
    with pytest.raises(TypeError) as t_err:
        torch.nn.HuberLoss(delta="1")
    with pytest.raises(TypeError, match=f"^{t_err.value}$"):
        nn.HuberLoss(delta="1")
    with pytest.warns(UserWarning, match=r"size_average and reduce args will be deprecated, please use "
                                         r"reduction='sum' instead\."):
        assert nn.MSELoss(size_average=False).reduction == "sum"
    with pytest.warns(UserWarning):
        assert nn.NLLLoss(reduce=False).reduction == "none"
    with pytest.raises(ValueError, match="^bad is not a valid value for reduction$"):
        nn.L1Loss(reduction="bad")(npusim.zeros(2), npusim.zeros(2))


# --- constructor errors -------------------------------------------------------------------------------------------

CONSTRUCTOR_ERRORS = [
    (ValueError, lambda nn: nn.Conv2d(3, 4, 3, groups=0)),
    (ValueError, lambda nn: nn.Conv2d(3, 4, 3, groups=2)),
    (ValueError, lambda nn: nn.Conv2d(4, 3, 3, groups=2)),
    (ValueError, lambda nn: nn.Conv2d(4, 4, 3, padding="full")),
    (ValueError, lambda nn: nn.Conv1d(4, 4, 3, stride=2, padding="same")),
    (ValueError, lambda nn: nn.Conv2d(4, 4, 3, padding_mode="mirror")),
    (ValueError, lambda nn: nn.ConvTranspose2d(4, 4, 3, padding_mode="reflect")),
    (ValueError, lambda nn: nn.GroupNorm(3, 4)),
    (AssertionError, lambda nn: nn.Hardtanh(1.0, 1.0)),
    (TypeError, lambda nn: nn.Unflatten(1, 6)),
    (TypeError, lambda nn: nn.Unflatten(1, (2, 3.0))),
    (ValueError, lambda nn: nn.Bilinear(0, 3, 2)),
]


@pytest.mark.oracle
@pytest.mark.parametrize("index", range(len(CONSTRUCTOR_ERRORS)))
def test_constructor_errors_match_torch(torch, index):
    exc, build = CONSTRUCTOR_ERRORS[index]
    with pytest.raises(exc) as t_err:
        build(torch.nn)
    with pytest.raises(exc) as n_err:
        build(nn)
    assert _sorted_sets(str(n_err.value)) == _sorted_sets(str(t_err.value))


def _sorted_sets(message):
    """A printed set's order depends on string hashing (it differs even between torch's runs): sort it."""
    import re
    return re.sub(r"\{([^}]*)\}", lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", message)


@pytest.mark.oracle
def test_forward_errors_match_torch(torch):
    cases = [
        (RuntimeError, lambda T, nn: nn.Bilinear(3, 4, 2)(T.zeros(2, 3), T.zeros(3, 4))),
        (RuntimeError, lambda T, nn: nn.Bilinear(3, 4, 2)(T.zeros(2, 2), T.zeros(2, 4))),
        (RuntimeError, lambda T, nn: nn.Bilinear(3, 4, 2)(T.zeros(2, 3), T.zeros(2, 5))),
        (RuntimeError, lambda T, nn: nn.Bilinear(3, 4, 2)(T.zeros(2, 3), T.zeros(2, 1, 4))),
        (ValueError, lambda T, nn: nn.Softmax2d()(T.zeros(2, 3))),
        (ValueError, lambda T, nn: nn.CircularPad2d(1)(T.zeros(2, 3))),
        (ValueError, lambda T, nn: nn.ConvTranspose1d(2, 2, 3, stride=2)(T.zeros(1, 2, 4), output_size=[20])),
        (ValueError, lambda T, nn: nn.ConvTranspose1d(2, 2, 3, stride=2)(T.zeros(1, 2, 4), output_size=[1, 2])),
    ]
    for exc, fn in cases:
        with pytest.raises(exc) as t_err:
            fn(torch, torch.nn)
        with pytest.raises(exc) as n_err:
            fn(npusim, nn)
        assert str(n_err.value) == str(t_err.value).replace("torch", "npusim")


@pytest.mark.oracle
def test_conv_transpose_output_size_matches_torch(torch, device):
    build = lambda nn: nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1)  # noqa: E731
    _, nm = check_against_torch(torch, build, [IMG], device, call_kwargs={"output_size": [14, 12]})
    assert tuple(nm(npusim.tensor(IMG, device=device), output_size=[2, 2, 13, 11]).shape) == (2, 2, 13, 11)


def test_factory_kwargs_place_parameters(device):
    for m in (nn.Linear(3, 2, device=device, dtype=npusim.float64), nn.Conv2d(2, 2, 3, device=device,
                                                                               dtype=npusim.float64),
              nn.LayerNorm(3, device=device, dtype=npusim.float64), nn.Embedding(4, 2, device=device,
                                                                                 dtype=npusim.float64),
              nn.MultiheadAttention(4, 2, device=device, dtype=npusim.float64),
              nn.BatchNorm1d(3, device=device, dtype=npusim.float64)):
        for name, t in list(m.named_parameters()) + list(m.named_buffers()):
            assert t.device.type == device, name
            assert t.dtype is (npusim.int64 if name == "num_batches_tracked" else npusim.float64), name


# --- training against torch --------------------------------------------------------------------------------

def _train_both(torch, build, x, target, loss_name, device, steps=4, lr=0.1):
    torch.manual_seed(0)
    tm = build(torch.nn)
    nm = build(nn)
    nm.load_state_dict(torch_state_to_npusim(tm))
    nm.to(device)
    t_loss_fn = getattr(torch.nn, loss_name)()
    n_loss_fn = getattr(nn, loss_name)()
    tx, ty = torch.tensor(x), torch.tensor(target)
    nx, ny = npusim.tensor(x, device=device), npusim.tensor(target, device=device)
    t_losses, n_losses = [], []
    for _ in range(steps):
        for model, loss_fn, xx, yy, losses, lib in ((tm, t_loss_fn, tx, ty, t_losses, torch),
                                                    (nm, n_loss_fn, nx, ny, n_losses, npusim)):
            model.zero_grad()
            loss = loss_fn(model(xx), yy)
            loss.backward()
            with lib.no_grad():  # plain SGD, written by hand
                for p in model.parameters():
                    p.sub_(p.grad * lr)
            losses.append(loss.item())
    return t_losses, n_losses, tm, nm


@pytest.mark.oracle
def test_mlp_trains_like_torch(torch, device):
    build = lambda nn: nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.GELU(),  # noqa: E731
                                     nn.Linear(16, 5))
    x = randn(32, 6)
    y = np.random.default_rng(5).integers(0, 5, 32)
    t_losses, n_losses, tm, nm = _train_both(torch, build, x, y, "CrossEntropyLoss", device, steps=5)
    np.testing.assert_allclose(n_losses, t_losses, rtol=1e-5)
    assert n_losses[-1] < n_losses[0]
    for (name, tp), (_, np_) in zip(tm.named_parameters(), nm.named_parameters()):
        np.testing.assert_allclose(host(np_), tp.detach().numpy(), rtol=1e-4, atol=1e-6, err_msg=name)


@pytest.mark.oracle
def test_transformer_encoder_layer_trains_like_torch(torch, device):
    build = lambda nn: nn.Sequential(  # noqa: E731
        nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True), nn.Flatten(), nn.Linear(40, 3))
    x = randn(4, 5, 8)
    y = randn(4, 3)
    t_losses, n_losses, _, _ = _train_both(torch, build, x, y, "MSELoss", device, steps=4, lr=0.05)
    np.testing.assert_allclose(n_losses, t_losses, rtol=1e-4)
    assert n_losses[-1] < n_losses[0]
