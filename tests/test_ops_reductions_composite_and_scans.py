"""nansum / nanmean, median / nanmedian / kthvalue / mode, aminmax, running extrema, logcumsumexp,
scatter_reduce, histc and bincount: values, dtypes, return types, gradients and errors."""
import math

import numpy as np
import pytest
from conftest import host

import npusim

NAN = float("nan")
ROWS = [[3., 1., NAN, 2.], [4., 4., 1., 0.], [2., 2., 5., 5.]]


def _t(data, device, **kw):
    return npusim.tensor(data, device=device, **kw)


def test_nansum_nanmean_skip_nans(device):
    x = _t(ROWS, device)
    assert host(npusim.nansum(x, 1)).tolist() == [6., 9., 14.]
    assert host(x.nanmean(0)).tolist() == pytest.approx([3., 7 / 3, 3., 7 / 3])
    assert npusim.nansum(_t([1, 2], device)).dtype == npusim.int64
    with pytest.raises(RuntimeError, match="nanmean\\(\\): expected input to have floating point"):
        _t([1, 2], device).nanmean()


def test_median_family_values_indices(device):
    x = _t(ROWS, device)
    r = x.median(1)
    assert type(r).__name__ == "median" and r.values is r[0]
    assert np.isnan(host(r.values)[0]) and host(r.indices)[0] == 2   # a NaN wins, at its index
    assert host(r.values)[1:].tolist() == [1., 2.]
    n = npusim.nanmedian(x, 1, keepdim=True)
    assert n.values.shape == (3, 1) and host(n.values).ravel().tolist() == [2., 1., 2.]
    assert host(n.indices).ravel().tolist()[:2] == [3, 2]
    assert float(_t([[1., 5.], [3., 2.]], device).median()) == 2.
    assert math.isnan(float(x.median())) and float(x.nanmedian()) == 2.
    k = _t([[3., 1., 2.], [0., 9., 4.]], device).kthvalue(2)
    assert host(k.values).tolist() == [2., 4.] and host(k.indices).tolist() == [2, 2]
    m = _t([[1, 2, 2, 1, 3], [5, 5, 4, 4, 4]], device).mode(1)
    assert host(m.values).tolist() == [1, 4] and host(m.indices).tolist() == [3, 4]


def test_order_statistic_errors(device):
    with pytest.raises(RuntimeError, match="kthvalue\\(\\): selected number k out of range for dimension 0"):
        _t([1., 2.], device).kthvalue(3)
    with pytest.raises(IndexError, match="mode\\(\\): Expected reduction dim 0 to have non-zero size"):
        npusim.zeros(0, 2, device=device).mode(0)


def test_aminmax(device):
    r = _t([[1, 2], [3, -1]], device).aminmax()
    assert type(r).__name__ == "aminmax" and int(r.min) == -1 and int(r.max) == 3
    r = npusim.aminmax(_t([[1, 2], [3, -1]], device), dim=1, keepdim=True)
    assert host(r.min).tolist() == [[1], [-1]] and host(r.max).tolist() == [[2], [3]]
    with pytest.raises(RuntimeError, match="cannot compute aminmax over an empty dimension"):
        npusim.zeros(0, device=device).aminmax()


def test_cummax_cummin_nan_and_ties(device):
    v, i = _t([[1., 3., 2., 3., NAN, 5.]], device).cummax(1)
    assert host(v)[0, :4].tolist() == [1., 3., 3., 3.] and np.isnan(host(v)[0, 4:]).all()
    assert host(i).tolist() == [[0, 1, 1, 3, 4, 4]]
    v, i = npusim.cummin(_t([3, 1, 1, 2], device), 0)
    assert host(v).tolist() == [3, 1, 1, 1] and host(i).tolist() == [0, 1, 2, 2]
    assert v.dtype == npusim.int64 and i.dtype == npusim.int64


def test_logcumsumexp_is_stable(device):
    x = _t([-1000., 0., 1000., -math.inf], device)
    assert host(x.logcumsumexp(0)).tolist() == pytest.approx([-1000., 0., 1000., 1000.])
    y = np.array([[0.5, -1., 2.], [1., 1., 1.]])
    np.testing.assert_allclose(host(npusim.logcumsumexp(_t(y, device), 1)), np.log(np.cumsum(np.exp(y), 1)))
    with pytest.raises(NotImplementedError, match="\"logcumsumexp_out_cpu\" not implemented for 'Long'"):
        _t([1], device).logcumsumexp(0)


@pytest.mark.parametrize("reduce,with_self,without_self", [
    ("sum", [5., 12., 5., 4.], [4., 10., 2., 4.]),
    ("prod", [-5., 42., 6., 4.], [-5., 21., 2., 4.]),
    ("mean", [5 / 3, 4., 2.5, 4.], [2., 5., 2., 4.]),
    ("amax", [5., 7., 3., 4.], [5., 7., 2., 4.]),
    ("amin", [-1., 2., 2., 4.], [-1., 3., 2., 4.]),
])
def test_scatter_reduce_values(device, reduce, with_self, without_self):
    x, idx, src = _t([1., 2., 3., 4.], device), _t([0, 0, 2, 1, 1], device), _t([5., -1., 2., 7., 3.], device)
    assert host(x.scatter_reduce(0, idx, src, reduce)).tolist() == pytest.approx(with_self)
    assert host(npusim.scatter_reduce(x, 0, idx, src, reduce, include_self=False)).tolist() == \
        pytest.approx(without_self)
    y = x.clone()
    assert y.scatter_reduce_(0, idx, src, reduce) is y and host(y).tolist() == pytest.approx(with_self)


def test_scatter_reduce_errors(device):
    x = _t([1., 2.], device)
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, amax or amin, got foo"):
        x.scatter_reduce(0, _t([0], device), _t([1.], device), "foo")
    with pytest.raises(RuntimeError, match="scatter\\(\\): Expected self.dtype to be equal to src.dtype"):
        x.scatter_reduce(0, _t([0], device), _t([1.], device, dtype=npusim.float64), "sum")


def test_histc_and_bincount(device):
    x = _t([1., 2., 1., 4., 2.5, 0., 7.], device)
    assert host(x.histc(4, 0, 4)).tolist() == [1., 2., 2., 1.]
    assert host(npusim.histc(x, 3)).tolist() == [4., 2., 1.]   # min/max 0: the data's range
    assert x.histc(4).dtype == npusim.float32
    c = _t([1, 1, 3], device).bincount(minlength=6)
    assert host(c).tolist() == [0, 2, 0, 1, 0, 0] and c.dtype == npusim.int64
    w = npusim.bincount(_t([1, 1, 3], device), _t([0.5, 1., 2.], device))
    assert host(w).tolist() == [0., 1.5, 0., 2.] and w.dtype == npusim.float32
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative integral inputs."):
        _t([-1, 2], device).bincount()
    with pytest.raises(NotImplementedError, match="\"histogram_cpu\" not implemented for 'Long'"):
        _t([1, 2], device).histc()


def _gradcheck(fn, *inputs):
    xs = [t.requires_grad_() for t in inputs]
    assert npusim.autograd.gradcheck(fn, xs, eps=1e-6, atol=1e-6, rtol=1e-4)


def test_gradients_by_finite_differences(device):
    rng = np.random.default_rng(0)
    x = lambda *s: npusim.tensor(rng.permutation(np.arange(np.prod(s))).reshape(s) * 0.37 - 1,
                                 dtype=npusim.float64, device=device)
    _gradcheck(lambda t: t.median(1).values, x(3, 5))
    _gradcheck(lambda t: t.nanmedian(), x(3, 4))
    _gradcheck(lambda t: t.kthvalue(2, 0).values, x(4, 3))
    _gradcheck(lambda t: t.cummax(1).values, x(2, 5))
    _gradcheck(lambda t: t.cummin(0).values, x(4, 2))
    _gradcheck(lambda t: t.logcumsumexp(1), x(2, 4))
    _gradcheck(lambda t: npusim.nansum(t, 0), x(3, 2))
    _gradcheck(lambda t: t.nanmean(), x(3, 2))
    _gradcheck(lambda t: t.aminmax(dim=0)[1], x(3, 2))
    idx = npusim.tensor([0, 0, 2, 1, 1], device=device)
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            _gradcheck(lambda s, t, r=reduce, inc=include_self: s.scatter_reduce(0, idx, t, r, include_self=inc),
                       x(4), x(5))


@pytest.mark.oracle
@pytest.mark.parametrize("op", ["median", "nanmedian", "mode", "kthvalue", "cummax", "cummin", "logcumsumexp",
                                "nansum", "nanmean"])
def test_against_torch(device, torch, op):
    rng = np.random.default_rng(1)
    # distinct values (torch leaves the index of tied order statistics unspecified), one NaN; mode needs ties
    data = rng.permutation(24).reshape(4, 6).astype(np.float32) / 4
    data[1, 2] = np.nan
    args = {"kthvalue": (3, 1)}.get(op, (1,))
    if op == "mode":
        data = rng.integers(0, 4, (4, 6)).astype(np.float32)
    x = npusim.tensor(data, device=device, requires_grad=True)
    tx = torch.tensor(data, requires_grad=True)
    r, tr = getattr(x, op)(*args), getattr(tx, op)(*args)
    values, tvalues = (r[0], tr[0]) if isinstance(tr, tuple) else (r, tr)
    np.testing.assert_allclose(host(values), tvalues.detach().numpy(), rtol=1e-6, equal_nan=True)
    if isinstance(tr, tuple):
        assert host(r[1]).tolist() == tr[1].tolist()
    g = np.arange(values.numel(), dtype=np.float32).reshape(tuple(values.shape))
    values.backward(npusim.tensor(g, device=device))
    tvalues.backward(torch.tensor(g))
    np.testing.assert_allclose(host(x.grad), tx.grad.numpy(), rtol=1e-5, equal_nan=True)


@pytest.mark.oracle
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_against_torch(device, torch, reduce, include_self):
    rng = np.random.default_rng(2)
    base, src = rng.integers(-3, 4, (3, 4)).astype(np.float64), rng.integers(-3, 4, (2, 4)).astype(np.float64)
    idx = rng.integers(0, 3, (2, 4))
    x, s = (npusim.tensor(a, device=device, requires_grad=True) for a in (base, src))
    tx, ts = (torch.tensor(a, requires_grad=True) for a in (base, src))
    r = x.scatter_reduce(0, npusim.tensor(idx, device=device), s, reduce, include_self=include_self)
    tr = tx.scatter_reduce(0, torch.tensor(idx), ts, reduce, include_self=include_self)
    np.testing.assert_allclose(host(r), tr.detach().numpy())
    r.sum().backward()
    tr.sum().backward()
    np.testing.assert_allclose(host(x.grad), tx.grad.numpy())
    np.testing.assert_allclose(host(s.grad), ts.grad.numpy())
