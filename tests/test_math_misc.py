"""as_strided_, as_strided_scatter, slice_inverse, unsafe_split_with_sizes, nonzero_static, fill, empty_permuted:
values, views, errors and gradients on cpu and npu; torch as oracle."""
from __future__ import annotations

import numpy as np
import pytest

import npusim
from conftest import host


def test_as_strided_in_place(device):
    x = npusim.arange(12.0, device=device).reshape(3, 4)
    y = x.clone()
    r = y.as_strided_((2, 2), (1, 2), 1)
    assert r is y and y.shape == (2, 2) and y.stride() == (1, 2)
    assert host(y).tolist() == [[1.0, 3.0], [2.0, 4.0]]
    assert npusim.as_strided_(x.clone(), (3,), (4,)).tolist() == [0.0, 4.0, 8.0]
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        x.clone().as_strided_((2, 2), (1, 2), 100)


def test_as_strided_scatter(device):
    x = npusim.arange(12.0, device=device).reshape(3, 4)
    r = npusim.as_strided_scatter(x, npusim.ones(2, 2, device=device), (2, 2), (1, 4), 1)
    want = np.arange(12.0).reshape(3, 4)
    want.reshape(-1)[[1, 5, 2, 6]] = 1.0
    assert host(r).tolist() == want.tolist() and host(x).tolist() == np.arange(12.0).reshape(3, 4).tolist()
    assert host(x.as_strided_scatter(npusim.zeros(3, device=device), (3,), (5,))).reshape(-1)[[0, 5, 10]].tolist() \
        == [0.0, 0.0, 0.0]
    with pytest.raises(RuntimeError, match=r"src size = \[3, 2\], slice size = \[2, 2\]"):
        npusim.as_strided_scatter(x, npusim.ones(3, 2, device=device), (2, 2), (1, 4), 1)


def test_as_strided_scatter_gradients(device):
    b = npusim.randn(4, 3, device=device, dtype=npusim.float64, requires_grad=True)
    src = npusim.randn(2, 2, device=device, dtype=npusim.float64, requires_grad=True)
    npusim.as_strided_scatter(b, src, (2, 2), (1, 4), 1).pow(2).sum().backward()
    mask = np.ones(12)
    mask[[1, 2, 5, 6]] = 0
    np.testing.assert_allclose(host(b.grad), 2 * host(b) * mask.reshape(4, 3))
    np.testing.assert_allclose(host(src.grad), 2 * host(src))


def test_slice_inverse_and_unsafe_split_with_sizes(device):
    x = npusim.arange(12.0, device=device).reshape(3, 4)
    part = x[1:, 1:3]
    r = npusim.slice_inverse(part, x, 1, 1, 3)
    assert r.shape == x.shape and r.stride() == x.stride() and r.storage_offset() == 0
    assert host(r).tolist() == host(x).tolist()
    pieces = npusim.unsafe_split_with_sizes(x, [1, 3], 1)
    assert [p.shape for p in pieces] == [(3, 1), (3, 3)] and not pieces[0]._is_view()
    assert host(x.unsafe_split_with_sizes([2, 1])[1]).tolist() == [[8.0, 9.0, 10.0, 11.0]]
    with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum exactly to 4"):
        npusim.unsafe_split_with_sizes(x, [1, 2], 1)
    q = npusim.randn(4, device=device, requires_grad=True)
    a, b = npusim.unsafe_split_with_sizes(q, [1, 3])
    (b * 2).sum().backward()
    assert host(q.grad).tolist() == [0.0, 2.0, 2.0, 2.0]
    assert type(a.grad_fn).__name__ == "UnsafeSplitWithSizesBackward0"


def test_nonzero_static(device):
    t = npusim.tensor([[0, 1], [1, 1]], device=device)
    r = npusim.nonzero_static(t, size=5)
    assert r.dtype is npusim.int64 and host(r).tolist() == [[0, 1], [1, 0], [1, 1], [-1, -1], [-1, -1]]
    assert host(t.nonzero_static(size=1, fill_value=7)).tolist() == [[0, 1]]
    assert npusim.nonzero_static(npusim.tensor(3, device=device), size=2).shape == (2, 0)
    assert npusim.nonzero_static(npusim.zeros(3, device=device), size=0).shape == (0, 1)
    with pytest.raises(RuntimeError, match="'size' must be an non-negative integer"):
        npusim.nonzero_static(t, size=-1)


def test_fill(device):
    x = npusim.arange(6.0, device=device).reshape(2, 3)
    assert host(npusim.fill(x, 2)).tolist() == [[2.0] * 3] * 2
    r = npusim.fill(x.int(), 2.7)
    assert r.dtype is npusim.int32 and host(r).tolist() == [[2] * 3] * 2
    assert host(npusim.fill(x, npusim.tensor(3, device=device))).tolist() == [[3.0] * 3] * 2
    with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor but got tensor with 1 "):
        npusim.fill(x, npusim.tensor([3.0], device=device))
    v = npusim.tensor(2.0, device=device, requires_grad=True)
    a = npusim.randn(2, 3, device=device, requires_grad=True)
    npusim.fill(a, v).sum().backward()
    assert v.grad.item() == 6.0 and host(a.grad).tolist() == [[0.0] * 3] * 2


def test_empty_permuted(device):
    e = npusim.empty_permuted((2, 3, 4), (0, 2, 1), device=device)
    assert e.shape == (2, 3, 4) and e.stride() == (12, 1, 3) and e.device.type == device
    e = npusim.empty_permuted([2, 3], [1, 0], dtype=npusim.float64, device=device, requires_grad=True)
    assert e.stride() == (1, 2) and e.dtype is npusim.float64 and e.requires_grad
    with pytest.raises(RuntimeError, match=r"len\(size\) = 3 is not equal to len\(physical_layout\) = 2"):
        npusim.empty_permuted((2, 3, 4), (0, 2))
    with pytest.raises(RuntimeError, match="Duplicate dim not allowed"):
        npusim.empty_permuted((2, 3, 4), (0, 2, 2))


@pytest.mark.oracle
def test_against_torch(device, torch):
    x = np.random.default_rng(0).standard_normal((4, 5))
    a, t = npusim.tensor(x, device=device), torch.tensor(x)
    for size, stride, off in (((2, 2), (1, 5), 1), ((3,), (6,), None), ((2, 3), (5, 1), 7)):
        src = np.random.default_rng(1).standard_normal(size)
        np.testing.assert_array_equal(host(npusim.as_strided_scatter(a, npusim.tensor(src, device=device), size,
                                                                     stride, off)),
                                      torch.as_strided_scatter(t, torch.tensor(src), size, stride, off).numpy())
        np.testing.assert_array_equal(host(a.clone().as_strided_(size, stride, off)),
                                      t.clone().as_strided_(size, stride, off).numpy())
    m = (x > 0.3)
    for size in (0, 3, 20):
        np.testing.assert_array_equal(host(npusim.nonzero_static(npusim.tensor(m, device=device), size=size)),
                                      torch.nonzero_static(torch.tensor(m), size=size).numpy())
    e1, e2 = npusim.empty_permuted((2, 3, 4, 5), (3, 1, 0, 2)), torch.empty_permuted((2, 3, 4, 5), (3, 1, 0, 2))
    assert e1.stride() == e2.stride()
    for v in (1.5, 3):
        for dt in (npusim.float32, npusim.int64):
            ours = npusim.fill(a.to(dt), v)
            theirs = torch.fill(t.to(getattr(torch, str(dt).split(".")[1])), v)
            np.testing.assert_array_equal(host(ours), theirs.numpy())
    pieces = npusim.unsafe_split_with_sizes(a, [2, 0, 3], 1)
    want = torch.unsafe_split_with_sizes(t, [2, 0, 3], 1)
    for p, w in zip(pieces, want):
        np.testing.assert_array_equal(host(p), w.numpy())
    # src's gradient is torch's; self's is the true one (zero under the window, see docs/torch_differences.md),
    # where torch's formula puts the window's gradient in place of the rest
    b = npusim.tensor(x, device=device, requires_grad=True)
    s = npusim.tensor(np.ones((2, 2)), device=device, requires_grad=True)
    tb, ts = torch.tensor(x, requires_grad=True), torch.tensor(np.ones((2, 2)), requires_grad=True)
    (npusim.as_strided_scatter(b, s * 3, (2, 2), (1, 5), 1) ** 2).sum().backward()
    (torch.as_strided_scatter(tb, ts * 3, (2, 2), (1, 5), 1) ** 2).sum().backward()
    np.testing.assert_allclose(host(s.grad), ts.grad.numpy())
    outside = 2 * x
    outside.reshape(-1)[[1, 2, 6, 7]] = 0
    np.testing.assert_allclose(host(b.grad), outside)
