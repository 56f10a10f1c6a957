"""npusim.torch_backend: npusim's npu as a PrivateUse1 backend of real torch 2.13 (oracle: torch's CPU).

Importing npusim.torch_backend registers into torch for the whole process (``torch.Tensor.is_npu``, PrivateUse1
kernels, ``torch.npu``), which other oracle tests must not see: these cases run in a process of their own,
started by tests/test_torch_backend.py, and skip anywhere else.
"""
from __future__ import annotations

import copy
import io
import os
import pickle
import warnings

import pytest

if os.environ.get("NPUSIM_TORCH_BACKEND_PROCESS") != "1":
    pytest.skip("runs in its own process (tests/test_torch_backend.py starts it)", allow_module_level=True)

torch = pytest.importorskip("torch")
tb = pytest.importorskip("npusim.torch_backend")

import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

pytestmark = pytest.mark.oracle


def test_import_names_the_supported_torch(monkeypatch):
    from npusim.torch_backend import _version
    monkeypatch.setattr(torch, "__version__", "2.12.1+cpu")
    with pytest.raises(ImportError, match=r"torch 2\.13\.x only.*found torch 2\.12\.1"):
        _version.require_torch()


def test_backend_is_named_npu_and_has_a_device_module():
    assert torch._C._get_privateuse1_backend_name() == "npu"
    assert torch.npu.is_available() and torch.npu.device_count() == 1 and torch.npu.current_device() == 0
    x = torch.ones(2, device="npu")
    assert x.is_npu and x.device == torch.device("npu", 0)


# --- tensors ----------------------------------------------------------------------------------------------------

def test_factories_and_round_trips():
    assert torch.zeros(2, 3, device="npu").cpu().tolist() == [[0.0] * 3] * 2
    assert torch.ones(4, dtype=torch.int64, device="npu").sum().item() == 4
    assert torch.arange(5, device="npu").cpu().tolist() == [0, 1, 2, 3, 4]
    assert torch.full((2,), 7.5, device="npu").cpu().tolist() == [7.5, 7.5]
    c = torch.randn(3, 4)
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.bool):
        x = c.to(dtype)
        assert torch.equal(x.to("npu").cpu(), x)
    assert torch.empty(0, device="npu").numel() == 0


def test_storage_is_a_real_privateuse1_storage_over_the_elements():
    x = torch.arange(6.0, device="npu")
    st = x.untyped_storage()
    assert st.device == torch.device("npu", 0) and st.nbytes() >= 24 and st.data_ptr() != 0
    assert x.data_ptr() == st.data_ptr()


def test_views_share_storage_sizes_strides_base_and_version():
    c = torch.arange(24.0).reshape(4, 6)
    x = c.to("npu")
    for f in (lambda t: t.view(6, 4), lambda t: t[1], lambda t: t[:, 2], lambda t: t.t(), lambda t: t.t().t(),
              lambda t: t.unfold(1, 2, 2), lambda t: t.as_strided((2, 2), (1, 6), 3), lambda t: t.reshape(24)[3:9],
              lambda t: t.transpose(0, 1).unsqueeze(0), lambda t: t.expand(2, 4, 6), lambda t: t.narrow(1, 1, 3)):
        v, vc = f(x), f(c)
        assert v.shape == vc.shape and v.stride() == vc.stride() and v.storage_offset() == vc.storage_offset()
        assert v._base is x and v.data_ptr() - x.data_ptr() == vc.data_ptr() - c.data_ptr()
        assert torch.equal(v.cpu(), vc)
    v = x[1]
    before = v._version
    x.add_(1)
    assert v._version == before + 1 and v.cpu().tolist() == (c[1] + 1).tolist()
    v.mul_(2)   # writes through to the base
    assert x[1].cpu().tolist() == ((c[1] + 1) * 2).tolist()


def test_copy_both_ways_and_printing():
    x = torch.zeros(2, 3, device="npu")
    x.copy_(torch.arange(6.0).reshape(2, 3))
    out = torch.empty(2, 3)
    out.copy_(x)
    assert out.tolist() == [[0, 1, 2], [3, 4, 5]]
    x[:, 1].copy_(torch.tensor([9.0, 9.0]))
    assert x.cpu()[:, 1].tolist() == [9.0, 9.0]
    x.t().copy_(torch.ones(3, 2, device="npu", dtype=torch.float64))    # across dtypes, into a strided view
    assert x.cpu().tolist() == [[1.0] * 3] * 2
    assert repr(torch.tensor([1.5, 2.0]).to("npu")) == "tensor([1.5000, 2.0000], device='npu:0')"
    assert str(torch.tensor([[1, 2]], device="npu")) == "tensor([[1, 2]], device='npu:0')"


def test_to_keeps_strides_and_non_blocking_copies_to_the_cpu_block():
    x = torch.ones(2, 3, device="npu").t()
    assert x.cpu().stride() == x.to(torch.float64).stride() == (1, 3)
    assert torch.ones(2, 3).t().to("npu").stride() == (1, 3)
    y = torch.arange(3.0, device="npu").to("cpu", non_blocking=True)     # torch would stage it in pinned memory
    assert y.tolist() == [0.0, 1.0, 2.0]
    if hasattr(torch, "float8_e4m3fn"):
        assert torch.ones(3, device="npu").to(torch.float8_e4m3fn).dtype == torch.float8_e4m3fn


def test_fallback_takes_the_numbers_torch_hands_python_kernels():
    z = torch.ones(2, device="npu").to(torch.complex64)     # npusim has no complex: the CPU fallback
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert (z * 2).cpu().tolist() == [2 + 0j, 2 + 0j] and (z + 1.5).dtype == torch.complex64


def test_item_and_comparisons():
    x = torch.tensor([3.0, -1.0, 2.0], device="npu")
    assert x.max().item() == 3.0 and x.argmin().item() == 1
    assert (x > 0).cpu().tolist() == [True, False, True]
    assert torch.tensor([1.5], dtype=torch.bfloat16, device="npu").item() == 1.5
    assert bool((x == x).all())


# --- kernels ----------------------------------------------------------------------------------------------------

OPS = [
    lambda a, b: a + b * 2, lambda a, b: a @ b.t(), lambda a, b: torch.addmm(a[:, :3], a, b.t()[:, :3]),
    lambda a, b: torch.where(a > b, a, b), lambda a, b: F.softmax(a, -1), lambda a, b: F.log_softmax(a, 0),
    lambda a, b: F.gelu(a), lambda a, b: torch.tanh(a).sum(1), lambda a, b: a.mean(0, keepdim=True),
    lambda a, b: torch.cat([a, b], 1), lambda a, b: torch.stack([a, b]).amax(0), lambda a, b: a.exp().log1p(),
    lambda a, b: F.layer_norm(a, (5,)), lambda a, b: a.clamp(-0.5, 0.5), lambda a, b: a.cumsum(1),
    lambda a, b: torch.bmm(a.unsqueeze(0), b.t().unsqueeze(0)), lambda a, b: a.pow(2).sqrt(),
    lambda a, b: a.argmax(1), lambda a, b: torch.sort(a, 1)[0], lambda a, b: a.t().contiguous(),
]


@pytest.mark.parametrize("i", range(len(OPS)))
def test_ops_match_cpu(i):
    torch.manual_seed(i)
    a, b = torch.randn(4, 5), torch.randn(4, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = OPS[i](a.to("npu"), b.to("npu"))
    assert got.device.type == "npu"
    torch.testing.assert_close(got.cpu(), OPS[i](a, b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64])
def test_elementwise_fast_paths_keep_torchs_rules(dtype):
    a = (torch.arange(6.0).reshape(2, 3) + 1).to(dtype)
    b = torch.tensor([2.0, 3.0, 4.0]).to(dtype)
    cases = [lambda x, y: x + y, lambda x, y: x - y * 2, lambda x, y: x * 2.5, lambda x, y: x / y,
             lambda x, y: 3 - x, lambda x, y: x + y.double(), lambda x, y: torch.add(x, y, alpha=2),
             lambda x, y: x[:, 0] * x.t()[0], lambda x, y: torch.div(x, y, rounding_mode="floor"),
             lambda x, y: x + torch.tensor(1.5)]
    for i, f in enumerate(cases):
        want = f(a, b)
        got = f(a.to("npu"), b.to("npu"))
        assert got.dtype == want.dtype and got.shape == want.shape, i
        torch.testing.assert_close(got.cpu(), want, msg=lambda m: f"case {i}: {m}")
    if dtype.is_floating_point:
        x = a.to("npu")
        x.mul_(b.to("npu")).add_(1).sub_(0.5).div_(2)
        torch.testing.assert_close(x.cpu(), a.mul(b).add(1).sub(0.5).div(2))
    with pytest.raises(RuntimeError):
        b.to("npu").add_(a.to("npu"))     # the result would not fit self


def test_resize_keeps_contents_and_grows_through_npusim():
    x = torch.arange(4.0, device="npu")
    x.resize_(2)
    assert x.cpu().tolist() == [0.0, 1.0]
    x.resize_(6)    # beyond the storage: new npusim memory, the old contents kept
    assert x.shape == (6,) and x.cpu()[:4].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert x.untyped_storage().nbytes() >= 24


# a wider sweep: reductions, indexing, nn.functional, losses, creation, dtypes (args: a, b, i, m, img, w)
MORE_OPS = {
    "sum dim": lambda a,b,i,m,img,w: a.sum(1),
    "mean": lambda *x: x[0].mean(),
    "std": lambda a,*r: a.std(0),
    "var_mean": lambda a,*r: torch.var_mean(a, 1)[0],
    "max dim": lambda a,*r: a.max(1).values,
    "min": lambda a,*r: a.min(),
    "topk": lambda a,*r: a.topk(2, 1).values,
    "sort": lambda a,*r: a.sort(0).values,
    "argsort": lambda a,*r: a.argsort(1),
    "cumprod": lambda a,*r: a.cumprod(1),
    "logsumexp": lambda a,*r: a.logsumexp(1),
    "index_select": lambda a,b,i,*r: a.index_select(0, i),
    "gather": lambda a,b,i,*r: a.gather(0, i[:4].view(4,1).expand(4,5)),
    "scatter_add": lambda a,b,i,*r: torch.zeros(4,5).to(a.device).scatter_add(0, i[:4].view(4,1).expand(4,5), b),
    "index_add": lambda a,b,i,*r: a.index_add(0, i[:4], b),
    "masked_fill": lambda a,b,i,m,*r: a.masked_fill(m, 0.5),
    "where scalar": lambda a,b,i,m,*r: torch.where(m, a, 0.0),
    "clamp_min": lambda a,*r: a.clamp_min(0),
    "abs": lambda a,*r: a.abs(),
    "sigmoid": lambda a,*r: a.sigmoid(),
    "silu": lambda a,*r: F.silu(a),
    "leaky": lambda a,*r: F.leaky_relu(a, 0.1),
    "elu": lambda a,*r: F.elu(a),
    "softplus": lambda a,*r: F.softplus(a),
    "hardtanh": lambda a,*r: F.hardtanh(a),
    "dropout eval": lambda a,*r: F.dropout(a, 0.5, False),
    "conv2d": lambda a,b,i,m,img,w: F.conv2d(img, w, padding=1),
    "conv stride": lambda a,b,i,m,img,w: F.conv2d(img, w, stride=2),
    "max_pool2d": lambda a,b,i,m,img,w: F.max_pool2d(img, 2),
    "avg_pool2d": lambda a,b,i,m,img,w: F.avg_pool2d(img, 2),
    "adaptive_avg": lambda a,b,i,m,img,w: F.adaptive_avg_pool2d(img, 1),
    "interpolate": lambda a,b,i,m,img,w: F.interpolate(img, scale_factor=2),
    "bilinear up": lambda a,b,i,m,img,w: F.interpolate(img, scale_factor=2, mode="bilinear"),
    "group_norm": lambda a,b,i,m,img,w: F.group_norm(img, 3),
    "batch_norm eval":
        lambda a,b,i,m,img,w: F.batch_norm(img, torch.zeros(3).to(img.device), torch.ones(3).to(img.device)),
    "embedding": lambda a,b,i,*r: F.embedding(i, a),
    "one_hot": lambda a,b,i,*r: F.one_hot(i, 4),
    "pad": lambda a,*r: F.pad(a, (1, 2)),
    "mse": lambda a,b,*r: F.mse_loss(a, b),
    "bce logits": lambda a,b,*r: F.binary_cross_entropy_with_logits(a, b.sigmoid()),
    "nll": lambda a,b,i,*r: F.nll_loss(F.log_softmax(a, 1), i[:4]),
    "smooth_l1": lambda a,b,*r: F.smooth_l1_loss(a, b),
    "cross_entropy ls": lambda a,b,i,*r: F.cross_entropy(a, i[:4], label_smoothing=0.1),
    "kl_div": lambda a,b,*r: F.kl_div(a.log_softmax(1), b.softmax(1), reduction="batchmean"),
    "matmul 3d": lambda a,b,*r: a.unsqueeze(0).expand(3,4,5) @ b.t(),
    "einsum": lambda a,b,*r: torch.einsum("ij,kj->ik", a, b),
    "norm": lambda a,*r: a.norm(dim=1),
    "linalg_vector_norm": lambda a,*r: torch.linalg.vector_norm(a, 3),
    "outer": lambda a,b,*r: torch.outer(a[0], b[0]),
    "triu": lambda a,*r: a.triu(1),
    "tril": lambda a,*r: a.tril(),
    "flip": lambda a,*r: a.flip(0),
    "roll": lambda a,*r: a.roll(2, 1),
    "repeat": lambda a,*r: a.repeat(2, 1),
    "cat dim1": lambda a,b,*r: torch.cat([a, b], 1),
    "split": lambda a,*r: a.split(2, 1)[1] * 1,
    "chunk": lambda a,*r: a.chunk(2)[0] + 0,
    "unbind": lambda a,*r: a.unbind(1)[2] * 1,
    "diag": lambda a,*r: a.diag(),
    "trace": lambda a,*r: a[:4,:4].trace(),
    "isnan": lambda a,*r: (a / 0 * 0).isnan(),
    "nan_to_num": lambda a,*r: (a / 0).nan_to_num(),
    "round": lambda a,*r: a.round(decimals=1),
    "floor_div": lambda a,b,*r: a // b,
    "remainder": lambda a,b,*r: a % b,
    "pow tensor": lambda a,b,*r: a.abs().pow(b),
    "atan2": lambda a,b,*r: torch.atan2(a, b),
    "lerp": lambda a,b,*r: a.lerp(b, 0.3),
    "addcmul": lambda a,b,*r: a.addcmul(b, b, value=0.5),
    "baddbmm": lambda a,b,*r: torch.baddbmm(torch.zeros(1,4,4).to(a.device), a.unsqueeze(0), b.t().unsqueeze(0)),
    "bool any": lambda a,b,i,m,*r: m.any(1),
    "all": lambda a,b,i,m,*r: m.all(),
    "count_nonzero": lambda a,b,i,m,*r: m.count_nonzero(),
    "to int": lambda a,*r: (a * 10).to(torch.int32),
    "to half": lambda a,*r: a.half() * 2,
    "bf16 matmul": lambda a,b,*r: a.bfloat16() @ b.bfloat16().t(),
    "long sum": lambda a,b,i,*r: i.sum(),
    "arange step": lambda a,*r: torch.arange(0, 1, 0.25, device=a.device),
    "linspace": lambda a,*r: torch.linspace(0, 1, 5, device=a.device),
    "full_like": lambda a,*r: torch.full_like(a, 3),
    "eye": lambda a,*r: torch.eye(3, device=a.device),
    "zeros_like": lambda a,*r: torch.zeros_like(a),
    "sdpa": lambda a,b,*r: F.scaled_dot_product_attention(a.view(1, 1, 4, 5), b.view(1, 1, 4, 5),
                                                           a.view(1, 1, 4, 5), is_causal=True),
    "cumsum backward": None,
    "bincount": lambda a,b,i,*r: torch.bincount(i),
    "histc": lambda a,*r: torch.histc(a, 4),
    "searchsorted": lambda a,*r: torch.searchsorted(torch.arange(5.).to(a.device), a),
    "clone cl": lambda a,b,i,m,img,w: img.contiguous(memory_format=torch.channels_last) + 0,
    "setitem": None,
    "index_put": None,
}
def setitem(a,*r):
    x = a.clone(); x[1:3, 2] = 7.0; x[x > 1] = 0.0; return x
def index_put(a,b,i,*r):
    x = torch.zeros(4, 5).to(a.device); x.index_put_((i[:3],), b[:3], accumulate=True); return x
MORE_OPS["setitem"] = setitem; MORE_OPS["index_put"] = index_put
def cumsum_bw(a, *r):
    x = a.clone().requires_grad_(); (x.cumsum(1) * x).sum().backward(); return x.grad
MORE_OPS["cumsum backward"] = cumsum_bw


@pytest.mark.parametrize("name", sorted(MORE_OPS))
def test_more_ops_match_cpu(name):
    torch.manual_seed(0)
    a, b, i = torch.randn(4, 5), torch.randn(4, 5), torch.randint(0, 4, (6,))
    args = (a, b, i, a > 0, torch.randn(2, 3, 8, 8), torch.randn(4, 3, 3, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = MORE_OPS[name](*args)
        got = MORE_OPS[name](*(t.to("npu") for t in args))
    assert got.device.type == "npu" and got.dtype == want.dtype
    torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-5, equal_nan=True)


def test_in_place_and_out_results_are_the_arguments():
    x = torch.ones(3, device="npu")
    assert x.add_(1) is x and x.cpu().tolist() == [2.0] * 3
    out = torch.empty(0, device="npu")
    r = torch.add(x, x, out=out)
    assert r is out and out.cpu().tolist() == [4.0] * 3      # resized by the kernel, moved onto new memory


# --- models: training on the npu equals training on the CPU -------------------------------------------------------

def _train(make_model, make_data, loss_fn, device, opt="sgd", steps=3):
    torch.manual_seed(0)
    model = make_model().to(device)
    params = list(model.parameters())
    if opt == "sgd":
        o = torch.optim.SGD(params, lr=0.1, momentum=0.9)
    else:   # "adam", or "adam"/"adamw" with the implementation: "adam-fused", "adamw-foreach", ...
        name, _, impl = opt.partition("-")
        kwargs = {impl: True} if impl in ("fused", "foreach") else {"foreach": False} if impl else {}
        o = (torch.optim.AdamW if name == "adamw" else torch.optim.Adam)(params, lr=1e-3, **kwargs)
    torch.manual_seed(1)
    x, y = (t.to(device) for t in make_data())
    losses = []
    for _ in range(steps):
        o.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        o.step()
        losses.append(loss.item())
    return losses, [p.detach().cpu() for p in params]


def _assert_trains_like_cpu(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loss_cpu, p_cpu = _train(*args, device="cpu", **kwargs)
        torch.npu.reset_fallback_stats()
        loss_npu, p_npu = _train(*args, device="npu", **kwargs)
    assert torch.npu.fallback_stats() == {}      # forward, backward and the optimizer all ran on npu kernels
    torch.testing.assert_close(loss_npu, loss_cpu, rtol=1e-5, atol=1e-6)
    for p, q in zip(p_npu, p_cpu):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_mlp_trains_like_cpu(opt):
    _assert_trains_like_cpu(lambda: nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)),
                            lambda: (torch.randn(10, 8), torch.randint(0, 4, (10,))), F.cross_entropy, opt=opt)


def test_convnet_trains_like_cpu():
    _assert_trains_like_cpu(
        lambda: nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(64, 3)),
        lambda: (torch.randn(5, 1, 8, 8), torch.randint(0, 3, (5,))), F.cross_entropy)


class _GRUClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(6, 8, batch_first=True)
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        out, _ = self.gru(x)
        return self.head(out[:, -1])


class _LSTMClassifier(_GRUClassifier):
    def __init__(self):
        super().__init__()
        self.gru = nn.LSTM(6, 8, batch_first=True)


def test_lstm_trains_like_cpu():
    _assert_trains_like_cpu(_LSTMClassifier, lambda: (torch.randn(3, 5, 6), torch.randint(0, 2, (3,))),
                            F.cross_entropy, opt="sgd")


def test_torch_compile_eager_backends():
    def f(x, y):
        return (x * y + 1).relu().sum()
    x, y = torch.randn(4, device="npu"), torch.randn(4, device="npu")
    for backend in ("eager", "aot_eager"):
        torch.testing.assert_close(torch.compile(f, backend=backend)(x, y).cpu(), f(x, y).cpu())


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_gru_trains_like_cpu(opt):
    _assert_trains_like_cpu(_GRUClassifier, lambda: (torch.randn(3, 5, 6), torch.randint(0, 2, (3,))),
                            F.cross_entropy, opt=opt)


class _TinyLM(nn.Module):
    def __init__(self, vocab=11, dim=16, length=7):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(1, length, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, 2, 32, dropout=0.0, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(dim, vocab)

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1], device=x.device)
        return self.head(self.blocks(self.embed(x) + self.pos, mask=mask, is_causal=True))


def test_transformer_lm_trains_like_cpu():
    _assert_trains_like_cpu(_TinyLM, lambda: (torch.randint(0, 11, (2, 7)), torch.randint(0, 11, (2, 7))),
                            lambda out, y: F.cross_entropy(out.reshape(-1, 11), y.reshape(-1)))


@pytest.mark.parametrize("make", [
    lambda: nn.BatchNorm2d(3).eval(), lambda: nn.BatchNorm1d(3, affine=False), lambda: nn.LayerNorm(4),
    lambda: nn.LayerNorm([2, 4], elementwise_affine=False), lambda: nn.Sequential(nn.ReLU(), nn.Softmax(-1)),
    lambda: nn.LogSoftmax(1), lambda: nn.Tanh(), lambda: nn.Sigmoid(), lambda: nn.SiLU(),
])
def test_backward_kernels_match_cpu(make):
    torch.manual_seed(0)
    module = make()
    x = torch.randn(2, 3, 2, 4)
    if isinstance(module, nn.BatchNorm1d):
        x = x.flatten(2)
    ref = copy.deepcopy(module)
    xc = x.clone().requires_grad_()
    xn = x.to("npu").requires_grad_()
    module.to("npu")
    grad = torch.randn_like(ref(xc))
    ref(xc).backward(grad)
    module(xn).backward(grad.to("npu"))
    torch.testing.assert_close(xn.grad.cpu(), xc.grad, rtol=1e-5, atol=1e-6)
    for p, q in zip(module.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=1e-5, atol=1e-6)
    assert torch.npu.fallback_stats().keys().isdisjoint({"aten::tanh_backward", "aten::sigmoid_backward",
                                                         "aten::silu_backward"})


@pytest.mark.parametrize("make", [
    lambda: nn.GELU(), lambda: nn.GELU("tanh"), lambda: nn.ELU(), lambda: nn.ELU(0.5), lambda: nn.CELU(2.0),
    lambda: nn.SELU(), lambda: nn.Softplus(), lambda: nn.Softplus(2.0, 1.0), lambda: nn.GroupNorm(3, 3),
    lambda: nn.GroupNorm(1, 3, affine=False), lambda: nn.Sequential(nn.Identity(), nn.ELU(inplace=True)),
])
def test_more_backward_kernels_run_on_the_npu_and_match_cpu(make):
    torch.manual_seed(0)
    module = make()
    ref = copy.deepcopy(module)
    x = torch.randn(2, 3, 2, 4) * 3
    xc = x.clone().requires_grad_()
    xn = x.to("npu").requires_grad_()
    module.to("npu")
    grad = torch.randn_like(ref(xc.clone()))
    torch.npu.reset_fallback_stats()
    (module(xn * 1) if isinstance(module, nn.Sequential) else module(xn)).backward(grad.to("npu"))
    assert torch.npu.fallback_stats() == {}
    (ref(xc * 1) if isinstance(ref, nn.Sequential) else ref(xc)).backward(grad)
    torch.testing.assert_close(xn.grad.cpu(), xc.grad, rtol=1e-5, atol=1e-6)
    for p, q in zip(module.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_backward_runs_on_the_npu_and_matches_cpu(reduction):
    torch.manual_seed(0)
    x, t = torch.randn(3, 5), torch.randn(3, 5)
    grads = []
    torch.npu.reset_fallback_stats()
    for device in ("cpu", "npu"):
        xd = x.to(device).detach().requires_grad_()
        td = t.to(device).detach().requires_grad_()
        loss = F.mse_loss(xd, td, reduction=reduction)
        loss.backward(torch.ones_like(loss) * 0.5)
        grads.append((xd.grad.cpu(), td.grad.cpu()))
    assert torch.npu.fallback_stats() == {}
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_cumprod_and_attention_backward_run_on_the_npu_and_match_cpu():
    torch.manual_seed(0)
    x = torch.randn(3, 4)
    x[0, 1] = x[1, :2] = 0      # cumprod's backward takes another composite where the input has zeros
    q, k, v = torch.randn(2, 2, 5, 8), torch.randn(2, 2, 5, 8), torch.randn(2, 2, 5, 8)
    results = []
    torch.npu.reset_fallback_stats()
    for device in ("cpu", "npu"):
        xd = x.to(device).detach().requires_grad_()
        torch.cumprod(xd, 1).sum().backward()
        qkv = [a.to(device).detach().requires_grad_() for a in (q, k, v)]
        for causal in (False, True):
            F.scaled_dot_product_attention(*qkv, is_causal=causal).pow(2).sum().backward()
        results.append([xd.grad.cpu()] + [a.grad.cpu() for a in qkv])
    assert torch.npu.fallback_stats() == {}
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


class _NormActivationNet(nn.Module):
    """A convnet with group norm and the activations whose backward ops have npu kernels here, for mse_loss."""
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.norm = nn.GroupNorm(2, 4)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(64, 8), nn.GELU(), nn.Linear(8, 8), nn.ELU(),
                                  nn.Linear(8, 3), nn.Softplus())

    def forward(self, x):
        return self.head(self.norm(self.conv(x)))


@pytest.mark.parametrize("opt", ["adam", "adam-fused", "adam-foreach", "adam-forloop", "adamw-fused",
                                 "adamw-foreach"])
def test_norm_activation_net_trains_like_cpu_with_every_adam(opt):
    _assert_trains_like_cpu(_NormActivationNet, lambda: (torch.randn(3, 2, 4, 4), torch.randn(3, 3)), F.mse_loss,
                            opt=opt)


@pytest.mark.parametrize("fused", [torch._fused_adam_, torch._fused_adamw_])
@pytest.mark.parametrize("scale, found_inf", [(None, None), (4.0, 0.0), (4.0, 1.0)])
def test_fused_adam_steps_with_grad_scaler_arguments_like_cpu(fused, scale, found_inf):
    results = []
    torch.npu.reset_fallback_stats()
    for device in ("cpu", "npu"):
        g = torch.Generator().manual_seed(0)
        p, grad, m, v = (torch.randn(5, generator=g).to(device) for _ in range(4))
        v, mx, step = v.abs(), torch.zeros(5, device=device), torch.tensor(3.0, device=device)
        kwargs = {} if scale is None else {"grad_scale": torch.tensor(scale, device=device),
                                           "found_inf": torch.tensor(found_inf, device=device)}
        fused([p], [grad], [m], [v], [mx], [step], lr=0.1, beta1=0.9, beta2=0.99, weight_decay=0.1, eps=1e-8,
              amsgrad=True, maximize=False, **kwargs)
        results.append([t.cpu() for t in (p, grad, m, v, mx)])     # grads are left unscaled, as torch's kernel
    assert torch.npu.fallback_stats() == {}
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


# --- the CPU fallback ---------------------------------------------------------------------------------------------

def test_fallback_warns_once_per_op_and_counts():
    c = torch.tensor([[3.0, 4.0], [1.0, 0.0]])
    x = c.to("npu")
    torch.npu.reset_fallback_stats()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(3):
            r = torch.renorm(x, 2, 0, 1.0)
    assert r.device.type == "npu" and torch.equal(r.cpu(), torch.renorm(c, 2, 0, 1.0))
    msgs = [str(m.message) for m in w if "renorm" in str(m.message)]
    assert len(msgs) == 1 and "fall back to run on the CPU" in msgs[0]     # once per op and process
    assert torch.npu.fallback_stats()["aten::renorm"] == 3


def test_printing_and_boolean_indexing_run_on_the_npu():
    x = torch.tensor([1.0, -2.0, 3.0], device="npu")
    torch.npu.reset_fallback_stats()
    assert str(x) == "tensor([ 1., -2.,  3.], device='npu:0')"
    assert x[x > 0].cpu().tolist() == [1.0, 3.0] and torch.nonzero(x > 0).cpu().tolist() == [[0], [2]]
    assert torch.npu.fallback_stats() == {}


def test_fallback_writes_mutated_arguments_in_place():
    x = torch.tensor([[4.0, 1.0], [2.0, 3.0]], device="npu")
    values, indices = torch.empty(0, device="npu"), torch.empty(0, dtype=torch.int64, device="npu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = torch.kthvalue(x, 1, 1, out=(values, indices))
    assert r[0] is values and values.cpu().tolist() == [1.0, 2.0] and indices.cpu().tolist() == [1, 0]
    y = x.clone()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert y.renorm_(2, 0, 1.0) is y     # in place through the CPU alias
    torch.testing.assert_close(y.cpu(), torch.renorm(x.cpu(), 2, 0, 1.0))


def test_fallback_mode_silent_hides_the_warning(monkeypatch):
    monkeypatch.setenv("NPUSIM_FALLBACK", "silent")
    x = torch.tensor([3.0, 1.0, 3.0], device="npu")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        values = torch.unique(x)
    assert values.device.type == "npu" and values.cpu().tolist() == [1.0, 3.0]
    assert not [m for m in w if "unique" in str(m.message)]


def test_fallback_mode_error_refuses():
    x = torch.tensor([[3.0, 1.0]], device="npu")
    torch.npu.set_fallback_mode("error")
    try:
        with pytest.raises(NotImplementedError, match="fallback is disabled"):
            torch.renorm(x, 2, 0, 1.0)
    finally:
        torch.npu.set_fallback_mode(None)


# --- autocast -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_autocast_casts_like_cuda_and_backward_works(dtype):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    x = torch.randn(3, 4)
    ref = copy.deepcopy(model)
    model.to("npu")
    with torch.autocast("npu", dtype=dtype):
        y = model(x.to("npu"))
        assert y.dtype == dtype and torch.softmax(y, 1).dtype == torch.float32     # softmax is a float32 op
        assert torch.cat([y, y.float()]).dtype == torch.float32                       # cat promotes
    y.float().sum().backward()
    assert model[0].weight.grad.dtype == torch.float32
    with torch.autocast("cpu", dtype=dtype):
        y_ref = ref(x)
    y_ref.float().sum().backward()
    tol = dict(rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(y.float().cpu(), y_ref.float(), **tol)
    torch.testing.assert_close(model[0].weight.grad.cpu(), ref[0].weight.grad, **tol)


def test_grad_scaler_runs_on_the_npu_like_the_cpu():
    results = []
    for device in ("cpu", "npu"):
        torch.manual_seed(0)
        model = nn.Linear(4, 2).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler(device, init_scale=2.0 ** 10, growth_interval=2)
        x = torch.randn(3, 4).to(device)
        torch.npu.reset_fallback_stats()
        for step in range(4):
            opt.zero_grad()
            loss = model(x).sum() * (float("inf") if step == 1 else 1.0)     # one overflowing step
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        results.append((scaler.get_scale(), model.weight.detach().cpu()))
    assert torch.npu.fallback_stats() == {}
    assert results[0][0] == results[1][0]
    torch.testing.assert_close(results[1][1], results[0][1])


def test_ops_outside_the_lists_pass_through_autocast():
    x = torch.randn(3, device="npu")
    with torch.autocast("npu", dtype=torch.float16):
        assert (x + 1).dtype == torch.float32 and x.relu().dtype == torch.float32


# --- torch.npu: random numbers, memory, limits ------------------------------------------------------------------

def test_manual_seed_reproduces_npu_random_numbers():
    torch.manual_seed(0)
    a = torch.randn(5, device="npu")
    torch.manual_seed(0)
    b = torch.randn(5, device="npu")
    assert torch.equal(a.cpu(), b.cpu())
    torch.npu.manual_seed(3)
    state = torch.npu.get_rng_state()
    c = torch.rand(4, device="npu")
    torch.npu.set_rng_state(state)
    assert torch.equal(torch.rand(4, device="npu").cpu(), c.cpu())
    d = torch.nn.functional.dropout(torch.ones(100, device="npu"), 0.5)
    assert set(d.cpu().unique().tolist()) <= {0.0, 2.0}


def test_memory_statistics_follow_npu_tensors():
    before = torch.npu.memory_allocated()
    x = torch.empty(1000, device="npu")
    assert torch.npu.memory_allocated() - before == 4096       # 4000 bytes, rounded to 512 as CUDA's allocator
    view = x[10:20]
    del x
    assert torch.npu.memory_allocated() - before == 4096       # the view keeps the storage
    del view
    assert torch.npu.memory_allocated() == before
    stats = torch.npu.memory_stats()
    assert stats["allocated_bytes.all.current"] == before and "Allocated memory" in torch.npu.memory_summary()
    free, total = torch.npu.mem_get_info()
    assert 0 < free <= total
    assert torch.npu.max_memory_allocated() >= before + 4096


def test_out_of_memory_is_torchs_error():
    free, total = torch.npu.mem_get_info()
    with pytest.raises(torch.OutOfMemoryError, match="out of memory"):
        torch.empty(total // 4 + 1, dtype=torch.float32, device="npu")
    x = torch.ones(1 << 16, device="npu")
    with pytest.raises(torch.OutOfMemoryError):
        torch.outer(x.repeat(1 << 6), x)  # 2**22 x 2**16 floats: far over any emulated capacity
    assert torch.npu.OutOfMemoryError is torch.OutOfMemoryError


def test_save_load_pickle_and_deepcopy():
    y = torch.arange(6.0, device="npu")
    buf = io.BytesIO()
    torch.save({"y": y, "view": y[2:4], "model": nn.Linear(2, 2).to("npu").state_dict()}, buf)
    buf.seek(0)
    loaded = torch.load(buf)
    assert loaded["y"].device.type == "npu" and loaded["y"].cpu().tolist() == y.cpu().tolist()
    assert loaded["view"].untyped_storage().data_ptr() == loaded["y"].untyped_storage().data_ptr()
    buf.seek(0)
    assert torch.load(buf, map_location="cpu")["y"].device.type == "cpu"
    buf = io.BytesIO()
    torch.save(torch.arange(3.0), buf)
    buf.seek(0)
    assert torch.load(buf, map_location="npu").device.type == "npu"
    assert pickle.loads(pickle.dumps(y)).cpu().tolist() == y.cpu().tolist()
    z = copy.deepcopy(y)
    assert z.cpu().tolist() == y.cpu().tolist() and z.data_ptr() != y.data_ptr()
    m = copy.deepcopy(nn.Linear(2, 2).to("npu"))
    assert m.weight.device.type == "npu"


def _archive():
    buf = io.BytesIO()
    torch.save(torch.arange(3.0), buf)
    buf.seek(0)
    return buf


@pytest.mark.parametrize("call, match", [
    (lambda: torch.empty(2, device="npu:1"), "one device, npu:0"),
    (lambda: torch.ones(2).to("npu:1"), "one device, npu:0"),
    (lambda: torch.npu.set_device(1), "one device, npu:0"),
    (lambda: torch.load(_archive(), map_location="npu:1"), "device_count\\(\\) is 1"),
    (lambda: torch.Generator(device="npu"), r"torch.Generator\(device='npu'\)"),
    (lambda: torch.randn(2, device="npu", generator=torch.Generator()), "generator"),
    (lambda: torch.npu.Stream(), "Stream"),
    (lambda: torch.npu.Event(), "Event"),
    (lambda: torch.ones(2).pin_memory(), "pinned memory"),
    (lambda: torch.ones(2, device="npu").untyped_storage().resize_(64), "resizing an npu storage"),
])
def test_what_python_hooks_cannot_do_is_refused_by_name(call, match):
    with pytest.raises(RuntimeError, match=match):
        call()


def test_storages_on_the_npu_come_from_npusim():
    st = torch.UntypedStorage(16, device="npu")
    assert st.device.type == "npu" and st.nbytes() == 16
    c = torch.ones(3, device="npu").untyped_storage().clone()
    assert c.device.type == "npu" and c.nbytes() == 12
    assert isinstance(torch.default_generator, torch.Generator)     # the refusing class still checks as torch's
