"""The gradient scaler's aten ops, ``_amp_foreach_non_finite_check_and_unscale_`` and ``_amp_update_scale_``: torch's
values, flags, checks and messages (torch's CPU kernels as the oracle), dispatched ops a profiler sees, and the
GradScaler calling them as torch's does."""
import math

import numpy as np
import pytest

import npusim
from conftest import op_names_seen

aten = npusim.ops.aten
INF, NAN = math.inf, math.nan

_DTYPES = ["float32", "float64", "float16", "bfloat16"]


def _pair(torch, values, dtype, device, transpose=False):
    """The same values in torch and npusim (rounded once, to float32 then to ``dtype`` by torch)."""
    t = torch.tensor(values, dtype=torch.float32).to(getattr(torch, dtype))
    n = npusim.from_numpy(t.view(torch.int16 if t.element_size() == 2 else t.dtype).numpy().copy())
    n = (n.view(getattr(npusim, dtype)) if t.element_size() == 2 else n).to(device)
    if transpose:
        t, n = t.t(), n.t()
    return t, n


def _bits(t):
    """A tensor's bit patterns (torch or npusim), for exact comparisons including NaNs and signed zeros."""
    lib = npusim if isinstance(t, npusim.Tensor) else __import__("torch")
    t = t.detach().cpu().contiguous()
    return np.asarray(t.view(getattr(lib, {2: "int16", 4: "int32", 8: "int64"}[t.element_size()])).numpy())


def _same(n, t) -> bool:
    """Equal bit patterns, but any NaN for a NaN: torch rounds float32 NaNs to bfloat16's one quiet NaN, npusim's
    bfloat16 casts (ml_dtypes') keep the sign and the top payload bits."""
    nb, tb = _bits(n), _bits(t)
    nan_n = np.isnan(n.detach().cpu().float().numpy())
    nan_t = np.isnan(t.detach().cpu().float().numpy())
    return np.array_equal(nan_n, nan_t) and np.array_equal(nb[~nan_n], tb[~nan_t])


def _flag(torch_or_npusim, device=None, value=0.0):
    kw = {"device": device} if device is not None else {}
    return torch_or_npusim.tensor(value, **kw)


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", _DTYPES)
@pytest.mark.parametrize("inv", [0.5, 1.0, 3.0517578125e-05, 0.3])
def test_unscale_values_and_flag_match_torch(torch, device, dtype, inv):
    rng = np.random.default_rng(0)
    big = (rng.standard_normal(600_001) * 1e3).tolist()     # split into blocks and over the intra-op threads
    for values, bad in ((big, False), ([1.5, -2.0, 0.0, -0.0, 6e4], False), (big[:50] + [INF] + big[50:], True),
                        (big[:-3] + [NAN] + big[-3:], True), ([NAN, 1.0, 2.0], True), ([-INF, 3.0], True)):
        tg, ng = _pair(torch, values, dtype, device)
        tf, nf = _flag(torch), _flag(npusim, device)
        torch._amp_foreach_non_finite_check_and_unscale_([tg], tf, torch.tensor(inv))
        aten._amp_foreach_non_finite_check_and_unscale_([ng], nf, npusim.tensor(inv, device=device))
        assert nf.item() == tf.item() == (1.0 if bad else 0.0)
        assert _same(ng, tg), (dtype, inv, values[:3])


@pytest.mark.oracle
def test_a_list_of_mixed_layouts_and_dtypes(torch, device):
    rng = np.random.default_rng(1)
    m = rng.standard_normal((300, 200)).tolist()
    pairs = [_pair(torch, m, "float32", device, transpose=True), _pair(torch, [1.0, INF], "float64", device),
             _pair(torch, m, "float16", device), _pair(torch, [[1.0, 2.0], [3.0, 4.0]], "float32", device)]
    strided_t, strided_n = pairs[0][0][::2, ::3], pairs[0][1][::2, ::3]       # a strided view of a gradient
    tf, nf = _flag(torch), _flag(npusim, device)
    torch._amp_foreach_non_finite_check_and_unscale_([p[0] for p in pairs] + [strided_t], tf, torch.tensor(0.25))
    aten._amp_foreach_non_finite_check_and_unscale_([p[1] for p in pairs] + [strided_n], nf,
                                                    npusim.tensor(0.25, device=device))
    assert nf.item() == tf.item() == 1.0
    for t, n in pairs:
        assert _same(n, t)
    # found_inf is only ever set, never cleared
    nf2 = _flag(npusim, device, 1.0)
    aten._amp_foreach_non_finite_check_and_unscale_([pairs[3][1]], nf2, npusim.tensor(1.0, device=device))
    assert nf2.item() == 1.0


def test_unscale_checks_and_messages(device):
    g = npusim.ones(3, device=device)
    f, inv = npusim.zeros((), device=device), npusim.tensor(0.5, device=device)
    op = aten._amp_foreach_non_finite_check_and_unscale_
    assert op([], f, inv) is None
    with pytest.raises(RuntimeError, match="inv_scale must be a float tensor."):
        op([g], f, inv.double())
    with pytest.raises(RuntimeError, match="found_inf must be a float tensor."):
        op([g], f.double(), inv)
    with pytest.raises(RuntimeError, match="found_inf must be a 1-element tensor."):
        op([g], npusim.zeros(2, device=device), inv)
    with pytest.raises(RuntimeError, match="inv_scale must be a 1-element tensor."):
        op([g], f, npusim.ones(2, device=device))
    with pytest.raises(NotImplementedError, match="not implemented for 'Int'"):
        op([npusim.ones(2, dtype=npusim.int32, device=device)], f, inv)
    if device != "cpu":
        with pytest.raises(RuntimeError, match="must be a"):
            op([g], npusim.zeros(()), inv)


def test_unscale_writes_leaves_without_a_graph_and_bumps_versions(device):
    x = npusim.ones(4, device=device, requires_grad=True)
    f = npusim.zeros((), device=device)
    v, vf = x._version, f._version
    aten._amp_foreach_non_finite_check_and_unscale_([x], f, npusim.tensor(0.5, device=device))
    assert x.grad_fn is None and x.requires_grad and x.tolist() == [0.5] * 4
    assert x._version == v + 1 and f._version == vf + 1


@pytest.mark.oracle
@pytest.mark.parametrize("case", [
    (4.0, 1, 0.0, 2.0, 0.5, 2), (4.0, 1, 1.0, 2.0, 0.5, 2), (4.0, 1, -1.0, 2.0, 0.5, 2), (4.0, 0, NAN, 2.0, 0.5, 2),
    (3e38, 1, 0.0, 2.0, 0.5, 2), (1.0, 0, 0.0, 1.1, 0.3, 1), (1.0, 0, 1.0, 1.1, 0.3, 1), (7.0, 5, 0.0, 2.0, 0.5, 100),
    (0.1, 2, 0.0, 1.7, 0.3, 3),
])
def test_update_scale_matches_torch(torch, device, case):
    scale, tracker, found, growth, backoff, interval = case
    ts, tt = torch.tensor(scale), torch.tensor(tracker, dtype=torch.int32)
    ns, nt = npusim.tensor(scale, device=device), npusim.tensor(tracker, dtype=npusim.int32, device=device)
    r = aten._amp_update_scale_(ns, nt, npusim.tensor(found, device=device), growth, backoff, interval)
    torch._amp_update_scale_(ts, tt, torch.tensor(found), growth, backoff, interval)
    assert r is ns
    assert np.array_equal(_bits(ns), _bits(ts)) and nt.item() == tt.item()


def test_update_scale_checks(device):
    s, t, f = (npusim.tensor(1.0, device=device), npusim.tensor(0, dtype=npusim.int32, device=device),
               npusim.tensor(0.0, device=device))
    op = aten._amp_update_scale_
    with pytest.raises(RuntimeError, match="growth_tracker must be an int tensor."):
        op(s, npusim.tensor(0, device=device), f, 2.0, 0.5, 2)
    with pytest.raises(RuntimeError, match="current_scale must be a float tensor."):
        op(s.double(), t, f, 2.0, 0.5, 2)
    with pytest.raises(RuntimeError, match="current_scale must be a 1-element tensor."):
        op(npusim.ones(2, device=device), t, f, 2.0, 0.5, 2)
    with pytest.raises(RuntimeError, match="found_inf must be a float tensor."):
        op(s, t, f.double(), 2.0, 0.5, 2)


def test_grad_scaler_dispatches_the_two_ops(device):
    model = npusim.nn.Linear(4, 3).to(device)
    opt = npusim.optim.SGD(model.parameters(), lr=0.1)
    scaler = npusim.amp.GradScaler(device, init_scale=4.0)
    x = npusim.ones(2, 4, device=device)

    def step():
        opt.zero_grad()
        scaler.scale(model(x).sum()).backward()
        scaler.step(opt)
        scaler.update()
    step()
    seen = op_names_seen(step)
    assert seen.count("aten::_amp_foreach_non_finite_check_and_unscale_") == 1
    assert seen.count("aten::_amp_update_scale_") == 1
    assert "aten::isfinite" not in seen and "aten::masked_fill_" not in seen
    assert model.bias.grad.tolist() == [2.0] * 3     # unscaled: the sum over two rows
