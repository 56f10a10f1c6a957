"""``out=`` kernels compute into ``out``'s own array when that is safe, with torch's out= semantics kept."""
import warnings

import numpy as np
import pytest

import npusim
from npusim.kernels import out_destination


def _arr(t):
    return t.cpu().numpy()


@pytest.fixture
def taken(monkeypatch):
    """The arrays the out= destination handed to kernels during the test."""
    seen = []
    real = out_destination.take

    def spy(shape, dtype, *rest, **kw):
        r = real(shape, dtype, *rest, **kw)
        if r is not None:
            seen.append(r)
        return r
    monkeypatch.setattr(out_destination, "take", spy)
    return seen


@pytest.mark.parametrize("op", [npusim.add, npusim.mul, npusim.sub, npusim.maximum, npusim.atan2])
def test_binary_out_computes_into_out(device, op, taken):
    x, y = npusim.randn(4, 5, device=device), npusim.randn(4, 5, device=device)
    z = npusim.empty(4, 5, device=device)
    v = z._version
    r = op(x, y, out=z)
    assert r is z and z._version > v
    np.testing.assert_array_equal(_arr(z), _arr(op(x, y)))
    if isinstance(z._a, np.ndarray):   # NumPy's ufuncs take the destination; device kernels keep their own path
        assert any(a is z._a for a in taken)


def test_unary_out_and_broadcast(device, taken):
    x = npusim.randn(3, 1, device=device)
    y = npusim.randn(1, 4, device=device)
    z = npusim.empty(3, 4, device=device)
    npusim.add(x, y, out=z)
    np.testing.assert_array_equal(_arr(z), _arr(x) + _arr(y))
    e = npusim.empty(3, 1, device=device)
    npusim.exp(x, out=e)
    np.testing.assert_array_equal(_arr(e), _arr(npusim.exp(x)))


@pytest.mark.parametrize("alias", ["first", "second", "both"])
def test_out_aliasing_an_input(device, alias):
    a, b = npusim.randn(6, device=device), npusim.randn(6, device=device)
    if alias == "both":
        b = a
    expect = _arr(a) + _arr(b)
    out = b if alias == "second" else a
    npusim.add(a, b, out=out)
    np.testing.assert_array_equal(_arr(out), expect)


def test_out_overlapping_a_view_of_an_input(device):
    base = npusim.arange(10.0, device=device)
    expect = _arr(base)[:8] + _arr(base)[2:]
    npusim.add(base[:8], base[2:], out=base[1:9])
    np.testing.assert_array_equal(_arr(base)[1:9], expect)


def test_out_of_another_dtype_and_shape(device):
    x = npusim.randn(5, device=device)
    z = npusim.empty(5, dtype=npusim.float64, device=device)
    npusim.add(x, x, out=z)
    np.testing.assert_array_equal(_arr(z), (_arr(x) + _arr(x)).astype(np.float64))
    w = npusim.empty(2, device=device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        npusim.add(x, x, out=w)
    assert w.shape == (5,) and any("resized" in str(c.message) for c in caught)
    np.testing.assert_array_equal(_arr(w), _arr(x) + _arr(x))


def test_errors_leave_out_untouched(device):
    x = npusim.randn(4, device=device)
    z = npusim.full((4,), 7, dtype=npusim.int32, device=device)
    with pytest.raises(RuntimeError, match="can't be cast"):
        npusim.add(x, x, out=z)
    assert (_arr(z) == 7).all()
    expanded = npusim.zeros(1, device=device).expand(4)
    with pytest.raises(RuntimeError, match="more than one element"):
        npusim.add(x, x, out=expanded)


def test_out_on_another_device_is_not_written():
    x = npusim.randn(4)
    z = npusim.full((4,), 7.0, device="npu")
    with pytest.raises(RuntimeError):
        npusim.add(x, x, out=z)
    assert (_arr(z) == 7).all()


def test_no_offer_outlives_its_op(device):
    x = npusim.randn(4, device=device)
    z = npusim.empty(4, device=device)
    npusim.add(x, x, out=z)
    assert not out_destination.offered()
    r = x + x
    assert r._a is not z._a


def test_offer_refuses_unsafe_destinations():
    a = np.zeros(4, np.float32)
    assert not out_destination.offer(a, [a[1:]])
    assert not out_destination.offer(np.broadcast_to(np.zeros(1, np.float32), (4,)), [])
    assert out_destination.offer(a, [np.ones(4, np.float32)])
    assert out_destination.take((4,), np.float64) is None
    assert out_destination.take((4,), np.float32) is a
    assert out_destination.take((4,), np.float32) is None
    out_destination.withdraw()


@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0), (0, 1)])
def test_addmm_and_baddbmm_out(device, beta, alpha, taken):
    c, a, b = (npusim.randn(*s, device=device) for s in [(3, 5), (3, 4), (4, 5)])
    z = npusim.empty(3, 5, device=device)
    npusim.addmm(c, a, b, beta=beta, alpha=alpha, out=z)
    np.testing.assert_array_equal(_arr(z), _arr(npusim.addmm(c, a, b, beta=beta, alpha=alpha)))
    if isinstance(z._a, np.ndarray):
        assert any(x is z._a for x in taken)
    c3, a3, b3 = (npusim.randn(*s, device=device) for s in [(2, 3, 5), (2, 3, 4), (2, 4, 5)])
    z3 = npusim.empty(2, 3, 5, device=device)
    npusim.baddbmm(c3, a3, b3, beta=beta, alpha=alpha, out=z3)
    np.testing.assert_array_equal(_arr(z3), _arr(npusim.baddbmm(c3, a3, b3, beta=beta, alpha=alpha)))


def test_addmm_out_aliasing_its_input(device):
    c, a, b = (npusim.randn(*s, device=device) for s in [(3, 5), (3, 4), (4, 5)])
    expect = _arr(npusim.addmm(c, a, b))
    npusim.addmm(c, a, b, out=c)
    np.testing.assert_allclose(_arr(c), expect, rtol=1e-6)


def test_composed_kernels_with_out_aliasing_an_input(device):
    """Kernels that compute an intermediate of the result's shape first, with ``out`` one of their inputs."""
    x, t1, t2 = (npusim.randn(4, 3, device=device) for _ in range(3))
    expect = _arr(npusim.addcmul(x, t1, t2, value=0.5))
    npusim.addcmul(x, t1, t2, value=0.5, out=x)
    np.testing.assert_allclose(_arr(x), expect, rtol=1e-6)
    e, w = npusim.randn(4, 3, device=device), npusim.rand(4, 3, device=device)
    expect = _arr(npusim.lerp(e, t1, w))
    npusim.lerp(e, t1, w, out=e)
    np.testing.assert_allclose(_arr(e), expect, rtol=1e-6)
