"""index_add / index_copy / index_fill / masked_scatter / take / put, diagonals, diff, rot90, kron, inner,
splits, unfold, the *_scatter ops and the in-place shape changes: values, views, gradients and errors."""
import numpy as np
import pytest
from conftest import checked_on_device, host, reported_later

import npusim
from npusim.kernels import device_checks as DC


def _t(data, device, **kw):
    return npusim.tensor(data, device=device, **kw)


def test_index_add_copy_fill(device):
    x = _t([[1., 2.], [3., 4.], [5., 6.]], device)
    r = x.index_add(0, _t([0, 0, 2], device), _t([[1., 1.], [2., 2.], [3., 3.]], device), alpha=2)
    assert host(r).tolist() == [[7., 8.], [3., 4.], [11., 12.]]
    assert host(x.index_copy(1, _t([1, 0], device), _t([[7., 8.], [9., 10.], [11., 12.]], device))).tolist() == \
        [[8., 7.], [10., 9.], [12., 11.]]
    y = x.clone()
    assert y.index_fill_(1, _t([1], device), -1) is y and host(y)[:, 1].tolist() == [-1., -1., -1.]
    assert host(npusim.index_fill(x, 0, _t([2], device), _t(0.5, device)))[2].tolist() == [0.5, 0.5]
    with pytest.raises(RuntimeError, match=r"index_add_\(\): self \(Float\) and source \(Double\) must have"):
        x.index_add(0, _t([0], device), _t([[1., 1.]], device, dtype=npusim.float64))
    if checked_on_device(device):
        with reported_later(DC.INDEX_PUT):   # checked on the device, reported later
            x.clone().index_add_(0, _t([5], device), _t([[1., 1.]], device))
    else:   # torch 2.13 raises RuntimeError for a self of 2 dims or more (IndexError for 1-D)
        with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0 with size 3"):
            x.index_add_(0, _t([5], device), _t([[1., 1.]], device))
    with pytest.raises(IndexError, match=r"index_copy_\(\): Number of indices \(1\) should be equal to"):
        x.index_copy(0, _t([0], device), _t([[1., 1.], [2., 2.]], device))


def test_masked_scatter_take_put(device):
    x = _t([[1., 2.], [3., 4.]], device)
    r = x.masked_scatter(_t([True, False], device), _t([9., 8., 7.], device))
    assert host(r).tolist() == [[9., 2.], [8., 4.]]
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones in mask"):
        x.masked_scatter(_t([True, True], device), _t([9.], device))
    assert host(npusim.take(x, _t([[0, -1]], device))).tolist() == [[1., 4.]]
    with pytest.raises(IndexError, match="out of range: tried to access index 4 on a tensor of 4 elements."):
        x.take(_t([4], device))
    y = _t([[1, 2, 3], [4, 5, 6]], device).t()          # put_ writes through any strides
    y.put_(_t([0, 5, 5], device), _t([10, 1, 1], device), accumulate=True)
    assert host(y).tolist() == [[11, 4], [2, 5], [3, 8]]
    a = _t([[1, 2, 3], [4, 5, 6]], device)
    assert host(a.take_along_dim(_t([[2], [0]], device), 1)).tolist() == [[3], [4]]


def test_diagonals_trace_diff(device):
    assert host(npusim.diag(_t([1, 2], device), 1)).tolist() == [[0, 1, 0], [0, 0, 2], [0, 0, 0]]
    assert host(_t([[1, 2, 3], [4, 5, 6]], device).diag(-1)).tolist() == [4]
    assert npusim.diag_embed(_t([[1., 2.]], device)).shape == (1, 2, 2)
    assert host(_t([[1, 2], [3, 4]], device).diagflat()).diagonal().tolist() == [1, 2, 3, 4]
    t = _t([[1, 2], [3, 4]], device).trace()
    assert int(t) == 5 and t.dtype == npusim.int64
    with pytest.raises(RuntimeError, match="trace: expected a matrix, but got tensor with dim 1"):
        _t([1], device).trace()
    assert host(_t([1, 4, 9, 16], device).diff(2, prepend=_t([0], device))).tolist() == [2, 2, 2]
    assert host(_t([True, False, False], device).diff()).tolist() == [True, False]


def test_rot90_kron_inner_ger(device):
    x = _t([[1, 2, 3], [4, 5, 6]], device)
    assert host(x.rot90()).tolist() == np.rot90(host(x)).tolist()
    assert host(npusim.rot90(x, -1, [1, 0])).tolist() == np.rot90(host(x), -1, (1, 0)).tolist()
    with pytest.raises(RuntimeError, match="expected total rotation dims == 2, but got dims = 1"):
        x.rot90(1, [0])
    assert host(x.kron(_t([[0, 1]], device))).tolist() == np.kron(host(x), [[0, 1]]).tolist()
    a, b = np.arange(6.).reshape(2, 3), np.arange(9.).reshape(3, 3)
    np.testing.assert_allclose(host(_t(a, device).inner(_t(b, device))), np.inner(a, b))
    assert host(_t([1., 2.], device).ger(_t([3., 4.], device))).tolist() == [[3., 4.], [6., 8.]]


def test_splits_and_unfold_are_views(device):
    x = npusim.arange(10, device=device)
    parts = x.tensor_split(3)
    assert [host(p).tolist() for p in parts] == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert parts[0]._base is x
    assert [p.numel() for p in npusim.tensor_split(x, [2, 8, -1])] == [2, 6, 1, 1]
    m = npusim.arange(8, device=device).reshape(2, 4)
    assert [p.shape for p in m.hsplit(2)] == [(2, 2), (2, 2)]
    assert [p.shape for p in npusim.vsplit(m, [1])] == [(1, 4), (1, 4)]
    with pytest.raises(RuntimeError, match="torch.dsplit requires a tensor with at least 3 dimension"):
        m.dsplit(2)
    u = m.unfold(1, 2, 2)
    assert u.shape == (2, 2, 2) and host(u).tolist() == [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]
    u[0, 0, 0] = 100
    assert int(m[0, 0]) == 100
    pieces = x.unsafe_split(4)
    assert pieces[0]._base is None and [p.numel() for p in pieces] == [4, 4, 2]


def test_scatter_views_and_sizes(device):
    x = npusim.zeros(2, 3, device=device)
    assert host(x.select_scatter(_t([1., 2., 3.], device), 0, 1)).tolist() == [[0., 0., 0.], [1., 2., 3.]]
    assert host(npusim.slice_scatter(x, _t([[5.], [6.]], device), 1, 2)).tolist() == [[0., 0., 5.], [0., 0., 6.]]
    assert host(x.diagonal_scatter(_t([7., 8.], device))).tolist() == [[7., 0., 0.], [0., 8., 0.]]
    with pytest.raises(RuntimeError, match=r"expected src to have a size equal to the slice of self. src size = \[2\]"):
        x.select_scatter(_t([1., 2.], device), 0, 0)
    assert host(_t([[1., 2.], [3., 4.]], device).sum_to_size(1, 2)).tolist() == [[4., 6.]]
    with pytest.raises(RuntimeError, match=r"size \{\[3, 3\]\} is not expandable to size \{\[2, 3\]\}."):
        x.sum_to_size(3, 3)
    assert _t([3], device).is_nonzero() and x.is_same_size(npusim.ones(2, 3))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        x.is_nonzero()
    e = x.new_empty_strided((2, 3), (1, 2))
    assert e.stride() == (1, 2) and e.dtype == x.dtype and e.device == x.device
    assert _t([1, 2], device).broadcast_to((3, 2)).shape == (3, 2)
    assert host(_t([[1, 2], [3, 4]], device).t().ravel()).tolist() == [1, 3, 2, 4]


def test_inplace_shape_changes(device):
    a = npusim.zeros(2, 3, device=device)
    view = a[0]
    version = a._version
    assert a.t_() is a and a.shape == (3, 2) and a.stride() == (1, 3)
    assert a._version == version + 1 and view._version == version + 1
    assert a.unsqueeze_(0).shape == (1, 3, 2) and a.squeeze_().shape == (3, 2)
    assert a.swapaxes_(0, 1).shape == (2, 3) and a.transpose_(0, 1).shape == (3, 2)
    with pytest.raises(RuntimeError, match=r"t_\(\) expects a tensor with <= 2 dimensions, but self is 3D"):
        npusim.zeros(2, 2, 2, device=device).t_()
    leaf = npusim.ones(2, 3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        leaf.t_()
    y = leaf * 2
    y.t_()
    assert y.shape == (3, 2) and type(y.grad_fn).__name__.startswith("TBackward")
    (y * npusim.arange(6., device=device).reshape(3, 2)).sum().backward()
    assert host(leaf.grad).tolist() == [[0., 4., 8.], [2., 6., 10.]]


def _gradcheck(fn, *inputs):
    xs = [t.requires_grad_() for t in inputs]
    assert npusim.autograd.gradcheck(fn, xs, eps=1e-6, atol=1e-6, rtol=1e-4)


def test_gradients_by_finite_differences(device):
    rng = np.random.default_rng(0)
    x = lambda *s: npusim.tensor(rng.standard_normal(s), dtype=npusim.float64, device=device)
    idx = npusim.tensor([0, 2, 0], device=device)
    _gradcheck(lambda s, t: s.index_add(0, idx, t, alpha=3), x(3, 2), x(3, 2))
    _gradcheck(lambda s, t: s.index_copy(0, npusim.tensor([2, 0], device=device), t), x(3, 2), x(2, 2))
    _gradcheck(lambda s, v: s.index_fill(1, npusim.tensor([1], device=device), v), x(2, 3), x())
    mask = npusim.tensor([[True, False], [False, True]], device=device)
    _gradcheck(lambda s, t: s.masked_scatter(mask, t), x(2, 2), x(3))
    _gradcheck(lambda s: s.take(npusim.tensor([[3, -1]], device=device)), x(2, 3))
    _gradcheck(lambda s, t: s.diagonal_scatter(t, 1), x(3, 3), x(2))
    _gradcheck(lambda s, t: s.slice_scatter(t, 1, 0, 3, 2), x(2, 3), x(2, 2))
    _gradcheck(lambda s: npusim.diag_embed(s, -1), x(2, 3))
    _gradcheck(lambda s: s.diff(2, 0), x(4, 2))
    _gradcheck(lambda s, t: s.kron(t), x(2, 2), x(1, 3))
    _gradcheck(lambda s, t: s.inner(t), x(2, 3), x(4, 3))
    _gradcheck(lambda s: s.unfold(1, 2, 1), x(2, 4))
    _gradcheck(lambda s: s.trace(), x(3, 3))
    _gradcheck(lambda s: s.rot90(3), x(2, 3))
    _gradcheck(lambda s: s.sum_to_size(1, 3), x(2, 3))
    _gradcheck(lambda s: s.unsafe_split(2, 1)[1], x(2, 4))

    def put(s, v):
        return s.clone().put_(npusim.tensor([0, 4], device=device), v, accumulate=True)
    _gradcheck(put, x(2, 3), x(2))


@pytest.mark.oracle
@pytest.mark.parametrize("name,call", [
    ("index_add", lambda m, x, i: x.index_add(1, i, x[:, :2] * 2, alpha=-1)),
    ("index_copy", lambda m, x, i: x.index_copy(1, i, x[:, 2:] + 1)),
    ("index_fill", lambda m, x, i: x.index_fill(1, i, 2.5)),
    ("masked_scatter", lambda m, x, i: x.masked_scatter(x > 0, x.flip(0) * 3)),
    ("take", lambda m, x, i: m.take(x, i)),
    ("take_along_dim", lambda m, x, i: m.take_along_dim(x, i.reshape(1, 2), 1)),
    ("diag_embed", lambda m, x, i: m.diag_embed(x, 1, 0, 2)),
    ("diagflat", lambda m, x, i: x.diagflat(-2)),
    ("diff", lambda m, x, i: m.diff(x, 1, 0, append=x[:1])),
    ("rot90", lambda m, x, i: x.rot90(2, [1, 0])),
    ("kron", lambda m, x, i: m.kron(x, x[:2, :2])),
    ("inner", lambda m, x, i: m.inner(x, x)),
    ("tensor_split", lambda m, x, i: m.cat(m.tensor_split(x, 3, 1)[::-1], 1)),
    ("unfold", lambda m, x, i: x.unfold(1, 3, 1)),
    ("select_scatter", lambda m, x, i: x.select_scatter(x[1] * 2, 0, 0)),
    ("slice_scatter", lambda m, x, i: m.slice_scatter(x, x[:, ::2] * 3, 1, 0, None, 2)),
])
def test_against_torch(device, torch, name, call):
    data = np.random.default_rng(3).standard_normal((3, 4))
    x = npusim.tensor(data, device=device, requires_grad=True)
    tx = torch.tensor(data, requires_grad=True)
    r = call(npusim, x, npusim.tensor([3, 1], device=device))
    tr = call(torch, tx, torch.tensor([3, 1]))
    np.testing.assert_allclose(host(r), tr.detach().numpy(), rtol=1e-6)
    r.sum().backward()
    tr.sum().backward()
    np.testing.assert_allclose(host(x.grad), tx.grad.numpy(), rtol=1e-6)
