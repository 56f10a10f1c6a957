"""F.linear_cross_entropy, nn.LinearCrossEntropyLoss and nn.LinearCrossEntropyOptions: the reference path, the
batch-chunked path (same values and gradients, bounded memory, its autograd rules), and both against PyTorch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import npusim
import npusim.nn as nn
import npusim.nn.functional as F
from conftest import host


def _data(n=10, f=4, c=23, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, f)).astype(np.float32)
    w = rng.standard_normal((c, f)).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32)
    t = rng.integers(0, c, n)
    t[3] = -100
    cw = rng.random(c).astype(np.float32)
    return x, w, b, t, cw


def _run(device, reduction, options, use_bias=True, use_weight=True, ignore_index=None, dtype=npusim.float32,
         sizes=()):
    x, w, b, t, cw = _data(*sizes)
    a = npusim.tensor(x, device=device, dtype=dtype, requires_grad=True)
    lw = npusim.tensor(w, device=device, dtype=dtype, requires_grad=True)
    lb = npusim.tensor(b, device=device, dtype=dtype, requires_grad=True) if use_bias else None
    weight = npusim.tensor(cw, device=device, dtype=dtype) if use_weight else None
    target = npusim.tensor(t if ignore_index is None else np.where(t == -100, 5, t), device=device)
    loss = F.linear_cross_entropy(a, lw, target, linear_bias=lb, weight=weight, reduction=reduction,
                                  ignore_index=ignore_index, options=options)
    loss.sum().backward()
    return [host(loss)] + [host(v.grad) for v in (a, lw, lb) if v is not None]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("chunk", [1, 3, 10])
def test_chunked_equals_reference(device, reduction, chunk):
    ref = _run(device, reduction, None)
    got = _run(device, reduction, nn.LinearCrossEntropyOptions(batch_chunk_size=chunk))
    for r, g in zip(ref, got):
        np.testing.assert_allclose(g, r, rtol=2e-5, atol=2e-6)
    ref = _run(device, reduction, None, use_bias=False, use_weight=False, ignore_index=5)
    got = _run(device, reduction, nn.LinearCrossEntropyOptions(chunking_method="aspect_ratio"), use_bias=False,
               use_weight=False, ignore_index=5)
    for r, g in zip(ref, got):
        np.testing.assert_allclose(g, r, rtol=2e-5, atol=2e-6)


def test_reference_is_linear_then_cross_entropy(device):
    x, w, b, t, cw = _data()
    a, lw = npusim.tensor(x, device=device), npusim.tensor(w, device=device)
    target = npusim.tensor(t, device=device)
    expect = F.cross_entropy(F.linear(a, lw), target)
    np.testing.assert_allclose(host(F.linear_cross_entropy(a, lw, target)), host(expect), rtol=1e-6)
    # unbatched input, K-dimensional loss, probabilities as target
    one = F.linear_cross_entropy(a[0], lw, target[0], options=nn.LinearCrossEntropyOptions())
    np.testing.assert_allclose(host(one), host(F.cross_entropy(F.linear(a[0], lw), target[0])), rtol=1e-5)
    lw3 = npusim.tensor(np.random.default_rng(1).standard_normal((5, 2, 3, 4)).astype(np.float32), device=device)
    t3 = npusim.randint(0, 5, (10, 2, 3), device=device)
    logits = F.linear(a, lw3.reshape(30, 4)).reshape(10, 5, 2, 3)
    np.testing.assert_allclose(host(F.linear_cross_entropy(a, lw3, t3)), host(F.cross_entropy(logits, t3)),
                               rtol=1e-6)
    probs = F.softmax(npusim.randn(10, 23, device=device), 1)
    np.testing.assert_allclose(host(F.linear_cross_entropy(a, lw, probs)),
                               host(F.cross_entropy(F.linear(a, lw), probs)), rtol=1e-6)


def test_chunked_backward_rules(device):
    x, w, _, t, _ = _data()
    a = npusim.tensor(x, device=device, requires_grad=True)
    lw = npusim.tensor(w, device=device, requires_grad=True)
    target = npusim.tensor(t, device=device)
    loss = F.linear_cross_entropy(a, lw, target, options=nn.LinearCrossEntropyOptions(batch_chunk_size=4))
    (loss * 3).backward(retain_graph=True)
    first = host(a.grad).copy()
    with pytest.raises(RuntimeError, match="chunked backward called twice"):
        loss.backward()
    a.grad = None
    loss = F.linear_cross_entropy(a, lw, target,
                                  options=nn.LinearCrossEntropyOptions(batch_chunk_size=4, allow_retain_graph=True))
    (loss * 3).backward(retain_graph=True)
    (loss * 3).backward()
    np.testing.assert_allclose(host(a.grad), 2 * first, rtol=1e-6)


def test_options_checks_and_resolution():
    Opt = nn.LinearCrossEntropyOptions
    for kwargs in (dict(acc_policy="fast"), dict(chunking_method="rows"), dict(chunking_method="aspect_ratio:0"),
                   dict(batch_chunk_size=0), dict(acc_dtype=npusim.int32)):
        with pytest.raises(ValueError):
            Opt(**kwargs)
    cpu = npusim.device("cpu")
    o = Opt()._adjust(1000, 16, 4096, npusim.bfloat16, cpu)
    assert (o.acc_policy, o.chunking_method, o.acc_dtype) == ("accurate", "aspect_ratio", npusim.float32)
    assert o.batch_chunk_size == 4   # next_pow2(ceil(1000 / ceil(4096 / 16))) = 4
    o = Opt(batch_chunk_size=7)._adjust(100, 16, 64, npusim.float32, cpu)
    assert (o.batch_chunk_size, o.chunking_method, o.acc_dtype) == (7, None, npusim.float32)
    with pytest.raises(ValueError, match="give different chunk sizes"):
        Opt(batch_chunk_size=7, chunking_method="aspect_ratio")._adjust(100, 16, 64, npusim.float32, cpu)
    with pytest.raises(AttributeError):
        Opt().batch_chunk_size = 3   # frozen


def test_unsupported_options_warn_and_errors(device):
    a = npusim.randn(4, 3, device=device)
    lw = npusim.randn(5, 3, device=device)
    t = npusim.randint(0, 5, (4,), device=device)
    with pytest.warns(UserWarning, match="``options`` ignored"):
        F.linear_cross_entropy(a, lw, t, label_smoothing=0.1, options=nn.LinearCrossEntropyOptions())
    with pytest.raises(RuntimeError, match="expected input with dimensionality 1 or 2, got 3"):
        F.linear_cross_entropy(a[None], lw, t)
    with pytest.raises(RuntimeError, match="expected equal input and linear_weight last dimensions"):
        F.linear_cross_entropy(a, lw[:, :2], t)
    with pytest.raises(RuntimeError, match="ignore_index cannot be specified when target contains probabilities"):
        F.linear_cross_entropy(a, lw, npusim.rand(4, 5, device=device), ignore_index=1)
    with pytest.raises(RuntimeError, match=r"expected linear_bias shape \(5,\), got \(4,\)"):
        F.linear_cross_entropy(a, lw, t, linear_bias=npusim.zeros(4, device=device))


def test_module(device):
    m = nn.LinearCrossEntropyLoss(3, 5, out_features=(2,), bias=True, device=device)
    assert m.linear.weight.shape == (10, 3) and list(m.state_dict()) == ["linear.weight", "linear.bias"]
    assert repr(m) == ("LinearCrossEntropyLoss(\n  in_features=3, num_classes=5, out_features=(2,), bias=True, "
                       "reduction=mean, ignore_index=None, label_smoothing=0.0, options=None\n  (linear): "
                       "Linear(in_features=3, out_features=10, bias=True)\n)")
    loss = m(npusim.randn(4, 3, device=device), npusim.randint(0, 5, (4, 2), device=device))
    loss.backward()
    assert m.linear.weight.grad.shape == (10, 3)
    with pytest.raises(RuntimeError, match="expected label_smoothing to be in range"):
        nn.LinearCrossEntropyLoss(3, 5, label_smoothing=2.0)


def test_chunked_path_never_holds_the_full_logits():
    if not npusim.npu.is_available():
        pytest.skip("needs the npu's allocator statistics")
    n, f, c = 256, 8, 4096
    a = npusim.randn(n, f, device="npu", requires_grad=True)
    lw = npusim.randn(c, f, device="npu", requires_grad=True)
    t = npusim.randint(0, c, (n,), device="npu")
    logits_bytes = n * c * 4

    def peak(options):
        npusim.npu.synchronize()
        base = npusim.npu.memory_allocated()
        npusim.npu.reset_peak_memory_stats()
        F.linear_cross_entropy(a, lw, t, options=options).backward()
        npusim.npu.synchronize()
        a.grad = lw.grad = None
        return npusim.npu.max_memory_allocated() - base

    assert peak(None) >= logits_bytes
    assert peak(nn.LinearCrossEntropyOptions(batch_chunk_size=16)) < logits_bytes / 2


@pytest.mark.oracle
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("options", [None, dict(batch_chunk_size=3), dict(), dict(chunking_method="aspect_ratio:2")])
def test_matches_torch(torch, device, reduction, options):
    x, w, b, t, cw = _data()
    theirs = []
    ta = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True)
    topt = None if options is None else torch.nn.LinearCrossEntropyOptions(**options)
    tl = torch.nn.functional.linear_cross_entropy(ta, tw, torch.tensor(t), linear_bias=tb, weight=torch.tensor(cw),
                                                  reduction=reduction, options=topt)
    tl.sum().backward()
    theirs = [tl.detach().numpy(), ta.grad.numpy(), tw.grad.numpy(), tb.grad.numpy()]
    ours = _run(device, reduction, None if options is None else nn.LinearCrossEntropyOptions(**options))
    # float32 sums of 23 classes and 10 rows in other orders: a few ulps of values of size ~10
    for o, th in zip(ours, theirs):
        np.testing.assert_allclose(o, th, rtol=1e-5, atol=1e-5)


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_inputs_accumulate_in_float32_as_torch(torch, dtype):
    x, w, _, t, _ = _data(n=32, f=8, c=64)
    ours = _run("cpu", "mean", nn.LinearCrossEntropyOptions(batch_chunk_size=8), use_bias=False, use_weight=False,
                dtype=getattr(npusim, dtype), sizes=(32, 8, 64))
    ta = torch.tensor(x).to(getattr(torch, dtype)).requires_grad_()
    tw = torch.tensor(w).to(getattr(torch, dtype)).requires_grad_()
    tl = torch.nn.functional.linear_cross_entropy(ta, tw, torch.tensor(t),
                                                  options=torch.nn.LinearCrossEntropyOptions(batch_chunk_size=8))
    tl.backward()
    # both accumulate in float32 and round the results once to the 16-bit type: at most an ulp or two apart
    eps = float(torch.finfo(getattr(torch, dtype)).eps)
    for o, th in zip(ours, [tl.detach().float().numpy(), ta.grad.float().numpy(), tw.grad.float().numpy()]):
        np.testing.assert_allclose(o, th, rtol=4 * eps, atol=4 * eps * float(np.abs(th).max()))


@pytest.mark.oracle
def test_module_and_options_match_torch(torch):
    for kwargs in (dict(), dict(out_features=(4, 3), bias=True, reduction="sum", ignore_index=2, label_smoothing=0.1)):
        m = nn.LinearCrossEntropyLoss(5, 10, **kwargs)
        tm = torch.nn.LinearCrossEntropyLoss(5, 10, **kwargs)
        assert repr(m) == repr(tm) and list(m.state_dict()) == list(tm.state_dict())
    assert repr(nn.LinearCrossEntropyOptions()) == repr(torch.nn.LinearCrossEntropyOptions())
    for args in [(100, 16, 4096), (7, 3, 5), (1, 4, 4), (64, 8, 8)]:
        for dt in ("float32", "bfloat16"):
            for opts in (dict(), dict(chunking_method="aspect_ratio:4"), dict(acc_policy="balanced")):
                o = nn.LinearCrossEntropyOptions(**opts)._adjust(*args, getattr(npusim, dt), npusim.device("cpu"))
                to = torch.nn.LinearCrossEntropyOptions(**opts)._adjust(*args, getattr(torch, dt),
                                                                         torch.device("cpu"))
                assert (o.batch_chunk_size, o.chunking_method, o.acc_policy, str(o.acc_dtype).split(".")[-1]) == \
                    (to.batch_chunk_size, to.chunking_method, to.acc_policy, str(to.acc_dtype).split(".")[-1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x, w, _, t, _ = _data()
        tl = torch.nn.functional.linear_cross_entropy(torch.tensor(x), torch.tensor(w), torch.tensor(t),
                                                      label_smoothing=0.2,
                                                      options=torch.nn.LinearCrossEntropyOptions())
        ol = F.linear_cross_entropy(npusim.tensor(x), npusim.tensor(w), npusim.tensor(t), label_smoothing=0.2,
                                    options=nn.LinearCrossEntropyOptions())
    np.testing.assert_allclose(host(ol), tl.numpy(), rtol=1e-5)
