"""Shape-building ops: flip, roll, tril/triu, repeat, tile, repeat_interleave.

Values are checked against NumPy on every device; dtypes, shapes, strides and
error messages against PyTorch (the ``oracle`` tests).
"""
from __future__ import annotations

import itertools
import re
import warnings

import numpy as np
import pytest

import npusim
from conftest import host

RNG = np.random.default_rng(0)
ALL_DTYPES = ["bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def make(values, dtype, device):
    """An npusim tensor of ``dtype`` (a name) holding ``values``."""
    return npusim.tensor(np.asarray(values), dtype=getattr(npusim, dtype), device=device)


def sample(shape, dtype):
    a = RNG.integers(0, 100, size=shape)
    return a > 50 if dtype == "bool" else a


def check(result, expected, dtype):
    assert result.dtype is getattr(npusim, dtype)
    expected = np.asarray(expected)
    assert tuple(result.shape) == expected.shape
    np.testing.assert_array_equal(host(result), expected)


def owns_memory(result, source):
    """Writing into ``result`` leaves ``source`` alone."""
    before = host(source).copy()
    result.zero_()
    return np.array_equal(host(source), before)


# --- flip ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_flip_matches_numpy(device, dtype):
    a = sample((2, 3, 4), dtype)
    x = make(a, dtype, device)
    for dims in ([0], [2], [0, 2], [-1, -2], [0, 1, 2]):
        check(npusim.flip(x, dims), np.flip(a, dims), dtype)
    check(x.flip(0, 2), np.flip(a, (0, 2)), dtype)
    check(x.flip([1]), np.flip(a, 1), dtype)


def test_flip_returns_a_copy(device):
    x = make(np.arange(6).reshape(2, 3), "int64", device)
    r = npusim.flip(x, [0])
    assert r._base is None and r.is_contiguous()
    assert owns_memory(r, x)
    same = npusim.flip(x, [])  # nothing flipped: still a new tensor
    np.testing.assert_array_equal(host(same), np.arange(6).reshape(2, 3))
    assert owns_memory(same, x)
    size_one = make([[1, 2, 3]], "int64", device)
    assert owns_memory(npusim.flip(size_one, [0]), size_one)


def test_flip_keeps_the_input_layout(device):
    x = npusim.arange(12, device=device).reshape(3, 4).t()
    r = npusim.flip(x, [0])
    assert r.stride() == x.stride()
    np.testing.assert_array_equal(host(r), np.arange(12).reshape(3, 4).T[::-1])


def test_fliplr_flipud(device):
    a = np.arange(6).reshape(2, 3)
    x = make(a, "int64", device)
    check(npusim.fliplr(x), np.fliplr(a), "int64")
    check(npusim.flipud(x), np.flipud(a), "int64")


def test_flip_zero_dim_and_empty(device):
    check(npusim.flip(make(5, "int64", device), [0]), 5, "int64")
    check(npusim.flip(make(5, "int64", device), []), 5, "int64")
    check(npusim.flip(npusim.zeros(2, 0, device=device), [0, 1]), np.zeros((2, 0)), "float32")


# --- roll ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_roll_matches_numpy(device, dtype):
    a = sample((3, 4, 5), dtype)
    x = make(a, dtype, device)
    check(npusim.roll(x, 7), np.roll(a, 7), dtype)  # no dims: the flattened tensor
    check(npusim.roll(x, -2, 1), np.roll(a, -2, 1), dtype)
    check(npusim.roll(x, (1, -3), (0, 2)), np.roll(a, (1, -3), (0, 2)), dtype)
    check(x.roll(13, -1), np.roll(a, 13, -1), dtype)  # shifts past the size wrap around


def test_roll_same_dim_twice_adds_shifts(device):
    a = np.arange(6).reshape(2, 3)
    check(npusim.roll(make(a, "int64", device), (1, 2), (1, 1)), np.roll(a, 3, 1), "int64")


def test_roll_result_is_contiguous(device):
    x = npusim.arange(12.0, device=device).reshape(3, 4).t()
    for r in (npusim.roll(x, 1, 0), npusim.roll(x, 5)):
        assert r.is_contiguous()
    np.testing.assert_array_equal(host(npusim.roll(x, 1, 0)), np.roll(np.arange(12.0).reshape(3, 4).T, 1, 0))


def test_roll_zero_dim_and_empty(device):
    check(npusim.roll(make(5, "int64", device), 3), 5, "int64")
    check(npusim.roll(npusim.zeros(0, 3, device=device), 1, 1), np.zeros((0, 3)), "float32")
    check(npusim.roll(npusim.zeros(0, 3, device=device), 2), np.zeros((0, 3)), "float32")
    r = make([1, 2], "int64", device)
    assert owns_memory(npusim.roll(r, 0), r)


# --- tril / triu ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_tril_triu_match_numpy_on_batches(device, dtype):
    a = sample((2, 3, 4), dtype)
    x = make(a, dtype, device)
    for k in (-4, -1, 0, 1, 2, 5):
        check(npusim.tril(x, k), np.tril(a, k), dtype)
        check(x.triu(k), np.triu(a, k), dtype)


def test_tril_triu_out(device):
    a = np.arange(1, 10, dtype=np.float32).reshape(3, 3)
    x = make(a, "float32", device)
    out = npusim.empty(0, device=device)
    assert npusim.tril(x, -1, out=out) is out
    np.testing.assert_array_equal(host(out), np.tril(a, -1))
    with pytest.warns(UserWarning, match="was resized since it had shape \\[2\\]"):
        npusim.triu(x, out=npusim.empty(2, device=device))


def test_tril_inplace_writes_through_views(device):
    base = npusim.ones(3, 3, device=device)
    view = base.t()
    v0 = base._version
    assert view.tril_() is view
    np.testing.assert_array_equal(host(base), np.triu(np.ones((3, 3))))
    assert base._version > v0
    y = make(np.arange(4).reshape(2, 2), "int64", device)
    y.triu_(1)
    check(y, [[0, 1], [0, 0]], "int64")


def test_tril_keeps_nan_and_empty(device):
    x = make([[np.nan, np.nan], [np.nan, np.nan]], "float32", device)
    np.testing.assert_array_equal(host(npusim.tril(x)), [[np.nan, 0], [np.nan, np.nan]])
    check(npusim.triu(npusim.zeros(2, 0, 3, device=device)), np.zeros((2, 0, 3)), "float32")


# --- repeat / tile -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_repeat_matches_numpy_tile(device, dtype):
    a = sample((2, 3), dtype)
    x = make(a, dtype, device)
    for reps in ((2, 2), (1, 3), (2, 1, 3), (3, 1, 1, 2), (0, 2)):
        r = x.repeat(*reps)
        check(r, np.tile(a, reps), dtype)
        assert r.is_contiguous()
    check(x.repeat([2, 1]), np.tile(a, (2, 1)), dtype)


def test_repeat_all_ones_is_a_copy(device):
    x = make([[1, 2]], "int64", device)
    assert owns_memory(x.repeat(1, 1), x)


def test_repeat_zero_dim_and_empty(device):
    s = make(5, "int64", device)
    check(s.repeat(()), 5, "int64")
    check(s.repeat(3, 2), np.full((3, 2), 5), "int64")
    check(npusim.zeros(0, 2, device=device).repeat(2, 3), np.zeros((0, 6)), "float32")


@pytest.mark.parametrize("dtype", ["bool", "int32", "bfloat16", "float64"])
def test_tile_matches_numpy(device, dtype):
    a = sample((2, 3), dtype)
    x = make(a, dtype, device)
    for reps in ((), (2,), (2, 2), (1, 2, 3)):  # fewer dims than the tensor pad with ones
        check(npusim.tile(x, reps), np.tile(a, reps), dtype)
    check(x.tile(2), np.tile(a, 2), dtype)
    check(x.tile((2, 1)), np.tile(a, (2, 1)), dtype)
    check(npusim.tile(make(5, dtype, device), (3,)), np.tile(np.asarray(5, a.dtype), 3), dtype)


# --- repeat_interleave ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_repeat_interleave_int_matches_numpy(device, dtype):
    a = sample((2, 3), dtype)
    x = make(a, dtype, device)
    check(npusim.repeat_interleave(x, 2), np.repeat(a, 2), dtype)  # dim=None flattens
    check(npusim.repeat_interleave(x, 3, dim=1), np.repeat(a, 3, 1), dtype)
    check(x.repeat_interleave(2, -2), np.repeat(a, 2, 0), dtype)
    check(npusim.repeat_interleave(x, 0, dim=0), np.zeros((0, 3), a.dtype), dtype)


@pytest.mark.parametrize("rdtype", ["int64", "int32"])
def test_repeat_interleave_tensor_repeats(device, rdtype):
    a = np.arange(6).reshape(2, 3)
    x = make(a, "int64", device)
    check(npusim.repeat_interleave(x, make([1, 0, 2], rdtype, device), dim=1), np.repeat(a, [1, 0, 2], 1), "int64")
    check(npusim.repeat_interleave(x, make([2], rdtype, device), dim=0), np.repeat(a, 2, 0), "int64")
    check(npusim.repeat_interleave(x, make(2, rdtype, device), dim=1), np.repeat(a, 2, 1), "int64")
    flat = [1, 0, 2, 1, 1, 3]
    check(npusim.repeat_interleave(x, make(flat, rdtype, device)), np.repeat(a.reshape(-1), flat), "int64")
    check(npusim.repeat_interleave(x, make(flat, rdtype, device), output_size=8), np.repeat(a.reshape(-1), flat),
          "int64")


@pytest.mark.parametrize("rdtype", ["int64", "int32"])
def test_repeat_interleave_repeats_only(device, rdtype):
    r = make([3, 0, 2], rdtype, device)
    check(npusim.repeat_interleave(r), [0, 0, 0, 2, 2], rdtype)
    check(npusim.repeat_interleave(r, output_size=5), [0, 0, 0, 2, 2], rdtype)
    check(npusim.repeat_interleave(make([], rdtype, device)), np.zeros(0), rdtype)


def test_repeat_interleave_output_size_and_edges(device):
    x = make([[1, 2], [3, 4]], "float32", device)
    check(npusim.repeat_interleave(x, 2, dim=0, output_size=4), [[1, 2], [1, 2], [3, 4], [3, 4]], "float32")
    check(npusim.repeat_interleave(make(5, "int64", device), 3), [5, 5, 5], "int64")
    check(npusim.repeat_interleave(npusim.zeros(0, 2, device=device), 2, dim=0), np.zeros((0, 2)), "float32")
    check(npusim.repeat_interleave(npusim.zeros(0, device=device), make([], "int64", device)), np.zeros(0),
          "float32")


# --- bad inputs ------------------------------------------------------------------------------------------------------

def _t(m, device, data, dtype=None):
    """A tensor from ``m`` (npusim or torch)."""
    kw = {} if dtype is None else {"dtype": getattr(m, dtype)}
    return m.tensor(data, device=device if m is npusim else "cpu", **kw)


def _z(m, device, *shape):
    return m.zeros(*shape, device=device if m is npusim else "cpu")


X23 = [[1, 2, 3], [4, 5, 6]]

# (id, call, exception type, message): each call gets the module (npusim or torch) and the device
BAD = [
    ("flip-dup", lambda m, d: m.flip(_z(m, d, 2, 3), [0, -2]), RuntimeError,
     "dim 0 appears multiple times in the list of dims"),
    ("flip-range", lambda m, d: m.flip(_z(m, d, 2, 3), [2]), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("flip-0d-range", lambda m, d: m.flip(_t(m, d, 5), [1]), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    ("flip-int", lambda m, d: m.flip(_z(m, d, 2), 0), TypeError,
     "flip(): argument 'dims' (position 2) must be tuple of ints, not int"),
    ("flip-float", lambda m, d: m.flip(_z(m, d, 2), [0.5]), TypeError,
     "flip(): argument 'dims' (position 2) must be tuple of ints, but found element of type float at pos 0"),
    ("flip-method-none", lambda m, d: _z(m, d, 2).flip(), TypeError,
     'flip() missing 1 required positional arguments: "dims"'),
    ("roll-align", lambda m, d: m.roll(_z(m, d, 2, 3), (1, 2), 0), RuntimeError,
     "shifts and dimensions must align. shifts: 2, dims:1"),
    ("roll-align-nodims", lambda m, d: m.roll(_z(m, d, 2, 3), (1, 2)), RuntimeError,
     "shifts and dimensions must align. shifts: 2, dims:0"),
    ("roll-empty-shifts", lambda m, d: m.roll(_z(m, d, 2, 3), (), ()), RuntimeError, "`shifts` required"),
    ("roll-dim", lambda m, d: m.roll(_z(m, d, 2, 3), 1, 2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("roll-0d-dim", lambda m, d: m.roll(_t(m, d, 5), 1, 0), IndexError,
     "Dimension specified as 0 but tensor has no dimensions"),
    ("roll-float", lambda m, d: m.roll(_z(m, d, 2), 1.5), TypeError,
     "roll(): argument 'shifts' (position 2) must be tuple of ints, not float"),
    ("tril-1d", lambda m, d: m.tril(_z(m, d, 3)), RuntimeError, "tril: input tensor must have at least 2 dimensions"),
    ("triu-0d", lambda m, d: m.triu(_t(m, d, 5)), RuntimeError, "triu: input tensor must have at least 2 dimensions"),
    ("tril_-1d", lambda m, d: _z(m, d, 3).tril_(), RuntimeError, "tril: input tensor must have at least 2 dimensions"),
    ("tril-diagonal-float", lambda m, d: m.tril(_z(m, d, 2, 2), 1.5), TypeError,
     "tril(): argument 'diagonal' (position 2) must be int, not float"),
    ("tril_-diagonal-float", lambda m, d: _z(m, d, 2, 2).tril_(0.5), TypeError,
     "tril_(): argument 'diagonal' (position 1) must be int, not float"),
    ("tril-out-dtype", lambda m, d: m.tril(_z(m, d, 2, 2), out=_t(m, d, [[0]], "int64")), RuntimeError,
     "Expected out tensor to have dtype float, but got long int instead"),
    ("triu-out-dtype", lambda m, d: m.triu(_t(m, d, [[1]], "int64"), out=_t(m, d, [[0]], "bfloat16")), RuntimeError,
     "Expected out tensor to have dtype long int, but got c10::BFloat16 instead"),
    ("repeat-fewer", lambda m, d: _z(m, d, 2, 3).repeat(2), RuntimeError,
     "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"),
    ("repeat-negative", lambda m, d: _z(m, d, 2, 3).repeat(-1, 2), RuntimeError,
     "Trying to create tensor with negative dimension -2: [-2, 6]"),
    ("repeat-none", lambda m, d: _z(m, d, 2, 3).repeat(), TypeError,
     'repeat() missing 1 required positional arguments: "repeats"'),
    ("tile-negative", lambda m, d: m.tile(_z(m, d, 2, 3), (-1,)), RuntimeError,
     "Trying to create tensor with negative dimension -3: [2, -3]"),
    ("tile-int", lambda m, d: m.tile(_z(m, d, 2, 3), 2), TypeError,
     "tile(): argument 'dims' (position 2) must be tuple of ints, not int"),
    ("ri-negative", lambda m, d: m.repeat_interleave(_t(m, d, X23), -1), RuntimeError,
     "Repeats must be non-negative"),
    ("ri-output-size", lambda m, d: m.repeat_interleave(_t(m, d, X23), 2, dim=0, output_size=3), RuntimeError,
     "repeat_interleave: Invalid output_size, expected 4 but got 3"),
    ("ri-output-size-flat", lambda m, d: m.repeat_interleave(_t(m, d, X23), 2, output_size=3), RuntimeError,
     "repeat_interleave: Invalid output_size, expected 12 but got 3"),
    ("ri-dim", lambda m, d: m.repeat_interleave(_t(m, d, X23), 2, dim=2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("ri-0d-dim", lambda m, d: m.repeat_interleave(_t(m, d, 5), 3, dim=0), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    ("ri-float-repeats", lambda m, d: m.repeat_interleave(_t(m, d, X23), 2.5), TypeError,
     "repeat_interleave() received an invalid combination of arguments - got (Tensor, float)"),
    ("ri-tensor-size", lambda m, d: m.repeat_interleave(_t(m, d, X23), _t(m, d, [1, 2, 3]), dim=0), RuntimeError,
     "repeats must have the same size as input along dim, but got repeats.size(0) = 3 and input.size(0) = 2"),
    ("ri-tensor-size-negdim", lambda m, d: m.repeat_interleave(_t(m, d, X23), _t(m, d, [1, 2]), dim=-1),
     RuntimeError,
     "repeats must have the same size as input along dim, but got repeats.size(0) = 2 and input.size(-1) = 3"),
    ("ri-tensor-size-flat", lambda m, d: m.repeat_interleave(_t(m, d, X23), _t(m, d, [1, 2])), RuntimeError,
     "repeats must have the same size as input along dim, but got repeats.size(0) = 2 and input.size(0) = 6"),
    ("ri-tensor-2d", lambda m, d: m.repeat_interleave(_t(m, d, X23), _t(m, d, [[1, 2]]), dim=7), RuntimeError,
     "repeats must be 0-dim or 1-dim tensor"),
    ("ri-tensor-float", lambda m, d: m.repeat_interleave(_t(m, d, X23), _t(m, d, [1.0, 2.0]), dim=0),
     NotImplementedError, "\"repeat_interleave_cpu\" not implemented for 'Float'"),
    ("ri-tensor-bool", lambda m, d: m.repeat_interleave(_t(m, d, X23), _t(m, d, [True, False]), dim=0),
     NotImplementedError, "\"repeat_interleave_cpu\" not implemented for 'Bool'"),
    ("ri-tensor-negative", lambda m, d: m.repeat_interleave(_t(m, d, X23), _t(m, d, [1, -2]), dim=0), RuntimeError,
     "repeats can not be negative"),
    ("ri-tensor-output-size", lambda m, d: m.repeat_interleave(_t(m, d, X23), _t(m, d, [1, 2]), dim=0,
                                                               output_size=2),
     RuntimeError, "allocated size does not match required size"),
    ("ri-tensor-0d-dim", lambda m, d: m.repeat_interleave(_t(m, d, 5), _t(m, d, 3), dim=-1), IndexError,
     "Dimension specified as -1 but tensor has no dimensions"),
    ("ri-repeats-2d", lambda m, d: m.repeat_interleave(_t(m, d, [[3, 0]])), RuntimeError,
     "repeat_interleave only accept 1D vector as repeat"),
    ("ri-repeats-0d", lambda m, d: m.repeat_interleave(_t(m, d, 3)), RuntimeError,
     "repeat_interleave only accept 1D vector as repeat"),
    ("ri-repeats-float", lambda m, d: m.repeat_interleave(_t(m, d, [[3.0]])), NotImplementedError,
     "\"repeat_interleave_cpu\" not implemented for 'Float'"),
    ("ri-repeats-short", lambda m, d: m.repeat_interleave(_t(m, d, [1], "int16")), NotImplementedError,
     "\"repeat_interleave_cpu\" not implemented for 'Short'"),
    ("ri-repeats-negative", lambda m, d: m.repeat_interleave(_t(m, d, [-1, 2])), RuntimeError,
     "repeats can not be negative"),
    ("ri-repeats-output-size", lambda m, d: m.repeat_interleave(_t(m, d, [3, 0, 2]), output_size=4), RuntimeError,
     "allocated size does not match required size"),
    ("ri-repeats-output-negative", lambda m, d: m.repeat_interleave(_t(m, d, [2, 2]), output_size=-1), RuntimeError,
     "Trying to create tensor with negative dimension -1: [-1]"),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_input_raises(device, case):
    _, call, exc, msg = case
    with pytest.raises(exc, match="^" + re.escape(msg)):
        call(npusim, device)


@pytest.mark.oracle
@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_input_matches_torch(torch, case):
    _, call, exc, msg = case
    with pytest.raises(exc, match="^" + re.escape(msg)):
        call(torch, "cpu")


def test_bad_input_leaves_inplace_target_untouched(device):
    x = make([[1.0, 2.0], [3.0, 4.0]], "float32", device)
    v0 = x._version
    with pytest.raises(TypeError):
        x.triu_(0.5)
    assert x._version == v0
    np.testing.assert_array_equal(host(x), [[1, 2], [3, 4]])


# --- oracle: values, dtypes, shapes, strides ----------------------------------------------------------------------

def _same(r, t):
    """npusim tensor ``r`` equals torch tensor ``t``: dtype, shape, strides and values."""
    assert str(r.dtype).rsplit(".", 1)[-1] == str(t.dtype).rsplit(".", 1)[-1]
    assert tuple(r.shape) == tuple(t.shape)
    if r.numel() > 1:
        assert r.stride() == t.stride()
    np.testing.assert_array_equal(host(r), t.float().numpy() if t.dtype.is_floating_point else t.numpy())


VIEWS = [lambda z: z, lambda z: z.permute(2, 0, 1), lambda z: z[:, ::2], lambda z: z.transpose(0, 1)]


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_shape_ops_match_torch(torch, dtype):
    a = sample((3, 4, 5), dtype)
    xb, tb = npusim.tensor(a, dtype=getattr(npusim, dtype)), torch.tensor(a, dtype=getattr(torch, dtype))
    for view in VIEWS:
        x, t = view(xb), view(tb)
        for dims in ([0], [1, 2], [0, 1, 2]):
            _same(npusim.flip(x, dims), torch.flip(t, dims))
            _same(npusim.roll(x, [2] * len(dims), dims), torch.roll(t, [2] * len(dims), dims))
        _same(npusim.roll(x, -7), torch.roll(t, -7))
        for k in (-1, 0, 2):
            _same(npusim.tril(x, k), torch.tril(t, k))
            _same(npusim.triu(x, k), torch.triu(t, k))
        _same(x.repeat(2, 1, 1, 2), t.repeat(2, 1, 1, 2))
        _same(npusim.tile(x, (2,)), torch.tile(t, (2,)))
        _same(npusim.repeat_interleave(x, 2, 1), torch.repeat_interleave(t, 2, 1))
        reps = [i % 3 for i in range(x.shape[0])]
        _same(npusim.repeat_interleave(x, npusim.tensor(reps), 0), torch.repeat_interleave(t, torch.tensor(reps), 0))
        _same(npusim.repeat_interleave(x, 2), torch.repeat_interleave(t, 2))


@pytest.mark.oracle
def test_edge_shapes_match_torch(torch):
    for a in (5, [], [[], []]):
        x, t = npusim.tensor(a), torch.tensor(a)
        _same(npusim.flip(x, []), torch.flip(t, []))
        _same(npusim.roll(x, 1), torch.roll(t, 1))
        _same(npusim.tile(x, (2, 1)), torch.tile(t, (2, 1)))
        _same(x.repeat(2, 1, 3), t.repeat(2, 1, 3))
        _same(npusim.repeat_interleave(x, 2), torch.repeat_interleave(t, 2))
    _same(npusim.repeat_interleave(npusim.tensor([3, 0, 2], dtype=npusim.int32)),
          torch.repeat_interleave(torch.tensor([3, 0, 2], dtype=torch.int32)))
    for shifts, dims in itertools.product((0, 3, -5), (0, 1)):
        x, t = npusim.zeros(0, 3), torch.zeros(0, 3)
        _same(npusim.roll(x, shifts, dims), torch.roll(t, shifts, dims))


@pytest.mark.oracle
def test_tril_out_resize_warning_matches_torch(torch):
    def messages(m):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m.tril(m.ones(2, 2), out=m.ones(3))
        return [str(x.message).split(" (Triggered")[0] for x in w]
    assert messages(npusim) == messages(torch)
