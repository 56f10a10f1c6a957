"""histogram and histogramdd: counts against NumPy, edges, weights, density, ATen's checks; torch as oracle."""
from __future__ import annotations

import numpy as np
import pytest

import npusim
from conftest import host


def test_histogram_counts_and_edges_match_numpy(device):
    x = np.random.default_rng(0).standard_normal(200)
    t = npusim.tensor(x, device=device)
    for kw, nkw in ((dict(bins=7), dict(bins=7)), (dict(bins=5, range=(-1.0, 1.0)), dict(bins=5, range=(-1, 1))),
                    (dict(bins=4, density=True), dict(bins=4, density=True))):
        r = npusim.histogram(t, **kw)
        hist, edges = np.histogram(x, **nkw)
        np.testing.assert_allclose(host(r.hist), hist, rtol=1e-12)
        np.testing.assert_allclose(host(r.bin_edges), edges, rtol=1e-12, atol=1e-15)
    w = np.random.default_rng(1).random(200)
    r = t.histogram(npusim.tensor([-1.0, 0.0, 0.5, 3.0], dtype=npusim.float64, device=device),
                    weight=npusim.tensor(w, device=device))
    np.testing.assert_allclose(host(r.hist), np.histogram(x, [-1.0, 0.0, 0.5, 3.0], weights=w)[0], rtol=1e-12)
    hist, edges = r
    assert hist.dtype is npusim.float64 and edges.shape == (4,)


def test_histogram_edge_cases(device):
    r = npusim.histogram(npusim.tensor([1.0, 1.0], device=device), 2)
    assert host(r.hist).tolist() == [0.0, 2.0] and host(r.bin_edges).tolist() == [0.5, 1.0, 1.5]
    r = npusim.histogram(npusim.empty(0, device=device), 3)
    assert host(r.hist).tolist() == [0.0] * 3 and host(r.bin_edges)[-1] == 1.0
    # the last bin is closed; values outside the edges and NaN are left out
    r = npusim.histogram(npusim.tensor([0.0, 1.0, 2.0, 5.0, float("nan")], device=device),
                         npusim.tensor([0.0, 1.0, 2.0], device=device))
    assert host(r.hist).tolist() == [1.0, 2.0]
    assert type(r).__name__ == "histogram"


def test_histogram_errors(device):
    x = npusim.randn(3, 4, device=device)
    with pytest.raises(NotImplementedError, match="\"histogramdd\" not implemented for 'Long'"):
        npusim.histogram(x.long(), 3)
    with pytest.raises(RuntimeError, match=r"bins must be > 0, but got 0 for dimension 0"):
        npusim.histogram(x, 0)
    with pytest.raises(RuntimeError, match="min should not exceed max, but got min 1 max 0 for dimension 0"):
        npusim.histogram(x, 3, range=(1, 0))
    with pytest.raises(RuntimeError, match=r"range \[0, inf\] is not finite"):
        npusim.histogram(x, 3, range=(0, float("inf")))
    with pytest.raises(RuntimeError, match="range should have 2 elements, but got 1"):
        npusim.histogram(x, 3, range=(0,))
    with pytest.raises(RuntimeError, match=r"input with shape \[12, 1\] and weight with shape \[3\]"):
        npusim.histogram(x, 3, weight=npusim.ones(3, device=device))
    with pytest.raises(RuntimeError, match="input tensor and weight tensor should have the same dtype"):
        npusim.histogram(x, 3, weight=npusim.ones(3, 4, dtype=npusim.float64, device=device))
    with pytest.raises(RuntimeError, match="bins tensors should have the same dtype"):
        npusim.histogram(x, npusim.tensor([0.0, 1.0], dtype=npusim.float64, device=device))
    with pytest.raises(RuntimeError, match="bins tensor should have one dimension"):
        npusim.histogram(x, npusim.tensor([[0.0, 1.0]], device=device))
    with pytest.raises(RuntimeError, match="bins tensor should have at least 1 element"):
        npusim.histogram(x, npusim.tensor([], device=device))
    with pytest.raises(TypeError):
        npusim.histogram(x, bins=[1.0, 2.0])


def test_histogramdd_matches_numpy(device):
    p = np.random.default_rng(2).standard_normal((50, 3))
    w = np.random.default_rng(3).random(50)
    t = npusim.tensor(p, device=device)
    r = npusim.histogramdd(t, [2, 3, 4], weight=npusim.tensor(w, device=device), density=True)
    hist, edges = np.histogramdd(p, [2, 3, 4], weights=w, density=True)
    np.testing.assert_allclose(host(r.hist), hist, rtol=1e-10)
    for a, b in zip(r.bin_edges, edges):
        np.testing.assert_allclose(host(a), b, rtol=1e-12, atol=1e-15)
    assert isinstance(r.bin_edges, tuple) and type(r).__name__ == "histogramdd"
    e = [npusim.tensor([-2.0, 0.0, 2.0], dtype=npusim.float64, device=device)] * 3
    r = npusim.histogramdd(t, e, range=None)
    np.testing.assert_allclose(host(r.hist), np.histogramdd(p, [[-2.0, 0.0, 2.0]] * 3)[0])
    r = npusim.histogramdd(t.reshape(5, 10, 3), 2, range=[-1.0, 1.0] * 3)
    assert r.hist.shape == (2, 2, 2)


def test_histogramdd_errors(device):
    x = npusim.randn(4, 3, device=device)
    with pytest.raises(RuntimeError, match="size of bins must be equal to the innermost dimension"):
        npusim.histogramdd(x, [2, 2])
    with pytest.raises(RuntimeError, match="input tensor should have at least 2 dimensions"):
        npusim.histogramdd(x[0], 2)


def _assert_edges_equal(ours, theirs):
    """Bin edges as torch's linspace makes them: start + i * step, rounded once with a fused multiply-add and twice
    without (torch's default-capability kernels, or a CPU without FMA): equal within one ulp of the range's
    magnitude, exact on the same arithmetic."""
    ulp = np.finfo(theirs.dtype).eps * np.abs(theirs).max()
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=ulp)


@pytest.mark.oracle
def test_against_torch(device, torch):
    rng = np.random.default_rng(4)
    for dt in (np.float32, np.float64):
        x = rng.standard_normal((6, 7)).astype(dt)
        w = rng.random((6, 7)).astype(dt)
        for kw in (dict(bins=9), dict(bins=3, range=(-0.5, 0.5)), dict(bins=5, density=True), dict(bins=6, weight=w),
                   dict(bins=np.array([-3.0, -0.1, 0.0, 0.7, 1.0], dt), weight=w, density=True)):
            a = npusim.histogram(npusim.tensor(x, device=device), **{k: npusim.tensor(v, device=device)
                                 if isinstance(v, np.ndarray) else v for k, v in kw.items()})
            b = torch.histogram(torch.tensor(x), **{k: torch.tensor(v) if isinstance(v, np.ndarray) else v
                                                    for k, v in kw.items()})
            np.testing.assert_allclose(host(a.hist), b.hist.numpy(), rtol=1e-5)
            _assert_edges_equal(host(a.bin_edges), b.bin_edges.numpy())
        p = rng.standard_normal((30, 2)).astype(dt)
        a = npusim.histogramdd(npusim.tensor(p, device=device), [3, 4], density=True)
        b = torch.histogramdd(torch.tensor(p), [3, 4], density=True)
        np.testing.assert_allclose(host(a.hist), b.hist.numpy(), rtol=1e-5)
        for e1, e2 in zip(a.bin_edges, b.bin_edges):
            _assert_edges_equal(host(e1), e2.numpy())


@pytest.mark.oracle
def test_error_messages_match_torch(torch):
    calls = [lambda m: m.histogram(m.randn(3, 4), 3, range=(1, 0)), lambda m: m.histogram(m.randn(3, 4), -1),
             lambda m: m.histogram(m.randn(3, 4), 3, weight=m.ones(3)), lambda m: m.histogram(m.randn(3).half(), 3),
             lambda m: m.histogram(m.randn(3), m.tensor([[0.0, 1.0]])),
             lambda m: m.histogram(m.tensor([float("nan"), 1.0]), 3)]
    for call in calls:
        with pytest.raises(Exception) as ours:
            call(npusim)
        with pytest.raises(Exception) as theirs:
            call(torch)
        assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)
