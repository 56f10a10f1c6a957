"""Kernels that run several passes per cache-sized block (parallel.for_blocks) give the bits of their whole-array
forms: every float bit pattern class (NaN payloads, infinities, signed zeros, subnormals), one and two threads."""
import numpy as np
import pytest

import npusim
from npusim.kernels import elementwise as E
from npusim.kernels import parallel

N = 3 * parallel.BLOCK + 37     # several blocks and a short last one


def _any_bits(dtype, seed):
    """``N`` values of ``dtype`` from random bit patterns, the special values first."""
    ints = np.dtype(f"u{np.dtype(dtype).itemsize}")
    x = np.random.default_rng(seed).integers(0, np.iinfo(ints).max, N, dtype=ints, endpoint=True).view(dtype)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 5e-39, -5e-39, 88.7, -88.7,
                        1e-8, -1e-8, 0.2, 0.8], dtype)
    x[:special.size] = special
    return x


def _same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_rsqrt(intra_op_threads, dtype):
    x = _any_bits(dtype, 0)
    expect = np.empty_like(x)
    E._sigmoid_float(x, expect)
    _same_bits(E.sigmoid(x), expect)
    with np.errstate(all="ignore"):
        _same_bits(E.rsqrt(x), np.reciprocal(np.sqrt(x)))


def test_sigmoid_rsqrt_float16(intra_op_threads):
    x = np.random.default_rng(1).integers(0, 1 << 16, N, dtype=np.uint16).view(np.float16)
    x[:4] = [np.nan, -np.inf, np.inf, -0.0]
    expect = np.empty_like(x)
    E._sigmoid_float(x, expect)
    _same_bits(E.sigmoid(x), expect)
    with np.errstate(all="ignore"):
        _same_bits(E.rsqrt(x), np.reciprocal(np.sqrt(x)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32])
@pytest.mark.parametrize("bounds", [(0.2, 0.8), (0.0, 1.0), (-0.0, 0.0), (np.nan, 1.0), (0.0, np.nan), (None, 0.5),
                                    (0.5, None), (-0.0, None)])
def test_clamp_number_bounds(intra_op_threads, dtype, bounds):
    if np.dtype(dtype).kind == "i":
        if any(b is not None and not float(b).is_integer() for b in bounds):
            pytest.skip("integral bounds only")
        x = np.random.default_rng(2).integers(-5, 5, N).astype(dtype)
    elif dtype is np.float16:
        x = (np.random.default_rng(2).standard_normal(N)).astype(dtype)
        x[:3] = [np.nan, -0.0, 0.0]
    else:
        x = _any_bits(dtype, 2)
    lo, hi = (None if b is None else np.dtype(dtype).type(b) for b in bounds)
    # x is kept where it equals a bound, as in torch's kernels: NumPy's float16 loops return their first operand
    # between equal values, its float32 and float64 loops their second
    keep = (lambda f, b, v: f(v, b)) if np.dtype(dtype) == np.float16 else (lambda f, b, v: f(b, v))
    expect = x if lo is None else keep(np.maximum, lo, x)
    expect = expect if hi is None else keep(np.minimum, hi, expect)
    _same_bits(E.clamp(x, lo, hi), expect)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weight", [0.3, 0.7, -2.0, 0.0, 1.0])
def test_lerp_number_weight(intra_op_threads, dtype, weight):
    start, end = _any_bits(dtype, 3), _any_bits(dtype, 4)
    with np.errstate(all="ignore"):
        diff = np.subtract(end, start)
        if abs(weight) < 0.5:
            expect = np.add(start, np.multiply(weight, diff))
        else:
            expect = np.subtract(end, np.multiply(diff, 1 - weight))
        _same_bits(E.lerp(start, end, weight), expect)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.int64, np.complex64])
def test_where_bit_select(intra_op_threads, dtype):
    rng = np.random.default_rng(5)
    if np.dtype(dtype).kind == "f" and np.dtype(dtype).itemsize >= 4:
        a, b = _any_bits(dtype, 6), _any_bits(dtype, 7)
    else:
        a, b = (rng.integers(-100, 100, N).astype(dtype) for _ in range(2))
    cond = rng.random(N) < 0.5
    _same_bits(E.where(cond, a, b), np.where(cond, a, b))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scaled_sum_and_addc(intra_op_threads, dtype):
    a, b, c = _any_bits(dtype, 8), _any_bits(dtype, 9), _any_bits(dtype, 10)
    t = np.dtype(dtype).type
    with np.errstate(all="ignore"):
        for scale in (t(2), t(-2), t(0.3)):
            _same_bits(E.scaled_sum(a, b, scale), np.add(a, np.multiply(b, scale)))
        for value in (t(1), t(0.5)):
            for divide in (False, True):
                r = np.true_divide(b, c) if divide else np.multiply(b, c)
                expect = np.add(a, r if value == 1 else np.multiply(r, value))
                _same_bits(E.addc(a, b, c, value, divide), expect)


def test_for_blocks_covers_the_range(intra_op_threads):
    seen = []
    parallel.for_blocks(N, parallel.BLOCK, lambda s, e: seen.append((s, e)))
    seen.sort()
    assert seen[0][0] == 0 and seen[-1][1] == N
    assert all(e1 == s2 for (_, e1), (s2, _) in zip(seen, seen[1:]))
    assert all(e - s <= parallel.BLOCK for s, e in seen)


def test_ops_with_out_land_in_out(intra_op_threads):
    x = npusim.from_numpy(_any_bits(np.float32, 11))
    y = npusim.from_numpy(_any_bits(np.float32, 12))
    z = npusim.empty(N)
    with np.errstate(all="ignore"):
        for op in (lambda out: npusim.sigmoid(x, out=out), lambda out: npusim.clamp(x, 0.2, 0.8, out=out),
                   lambda out: npusim.lerp(x, y, 0.3, out=out), lambda out: npusim.where(x < y, x, y, out=out),
                   lambda out: npusim.add(x, y, alpha=2, out=out), lambda out: npusim.sub(x, y, alpha=2, out=out),
                   lambda out: npusim.addcmul(x, x, y, value=0.5, out=out),
                   lambda out: npusim.addcdiv(x, x, y, value=0.5, out=out)):
            r = op(z)
            assert r is z
            _same_bits(z.numpy(), op(npusim.empty(N)).numpy())


def test_erf_and_gelu_blocks_equal_the_whole_array_forms(intra_op_threads):
    from npusim.kernels import nn_activation as NA
    x2 = np.concatenate([_any_bits(np.float32, 13), (np.random.default_rng(14).standard_normal(N) * 3)
                         .astype(np.float32)])
    strided = x2[::2]                       # not contiguous: the whole-array forms
    dense = np.ascontiguousarray(strided)   # contiguous and large: the blocks
    g = np.random.default_rng(15).standard_normal(N).astype(np.float32)
    with np.errstate(all="ignore"):
        _same_bits(E.erf(dense), E.erf(strided))
        for approximate in ("none", "tanh"):
            _same_bits(NA.gelu(dense, approximate), NA.gelu(strided, approximate))
            _same_bits(NA.gelu_backward(g, dense, approximate), NA.gelu_backward(g, strided, approximate))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blocked_kernels_may_write_into_any_of_their_inputs(intra_op_threads, dtype):
    """``into=`` an input's own array (the in-place ops' destination) gives the fresh result's bits: each piece's
    intermediate lives in scratch and the destination piece is written last."""
    t = np.dtype(dtype).type
    with np.errstate(all="ignore"):
        for w in (0.3, 0.7):
            for i in range(2):
                ins = [_any_bits(dtype, 20), _any_bits(dtype, 21)]
                expect = E.lerp_blocks(*ins, w)
                _same_bits(E.lerp_blocks(*ins, w, into=ins[i]), expect)
                _same_bits(ins[i], expect)
        for i in range(2):
            ins = [_any_bits(dtype, 22), _any_bits(dtype, 23)]
            expect = E.scaled_sum(*ins, t(-0.3))
            _same_bits(E.scaled_sum(*ins, t(-0.3), into=ins[i]), expect)
            _same_bits(ins[i], expect)
        for divide in (False, True):
            for i in range(3):
                ins = [_any_bits(dtype, 24), _any_bits(dtype, 25), _any_bits(dtype, 26)]
                expect = E.addc(*ins, t(0.5), divide)
                assert E.addc(*ins, t(0.5), divide, into=ins[i]) is ins[i]
                _same_bits(ins[i], expect)
        # one array as every input at once
        a = _any_bits(dtype, 27)
        expect = E.addc(a, a, a, t(0.5), True)
        E.addc(a, a, a, t(0.5), True, into=a)
        _same_bits(a, expect)


_INPLACE_OPS = {
    "lerp_": (lambda x, y, z: x.lerp_(y, 0.3), lambda x, y, z: npusim.lerp(x, y, 0.3)),
    "lerp_ high weight": (lambda x, y, z: x.lerp_(y, 0.9), lambda x, y, z: npusim.lerp(x, y, 0.9)),
    "add_ alpha": (lambda x, y, z: x.add_(y, alpha=-0.25), lambda x, y, z: npusim.add(x, y, alpha=-0.25)),
    "sub_ alpha": (lambda x, y, z: x.sub_(y, alpha=3), lambda x, y, z: npusim.sub(x, y, alpha=3)),
    "addcmul_": (lambda x, y, z: x.addcmul_(y, z, value=0.5), lambda x, y, z: npusim.addcmul(x, y, z, value=0.5)),
    "addcdiv_": (lambda x, y, z: x.addcdiv_(y, z, value=-2), lambda x, y, z: npusim.addcdiv(x, y, z, value=-2)),
    "div_": (lambda x, y, z: x.div_(y), lambda x, y, z: npusim.div(x, y)),
    "div_ number": (lambda x, y, z: x.div_(1.7), lambda x, y, z: npusim.div(x, 1.7)),
    "clamp_": (lambda x, y, z: x.clamp_(-0.5, 0.25), lambda x, y, z: npusim.clamp(x, -0.5, 0.25)),
    "clamp_min_": (lambda x, y, z: x.clamp_min_(0.1), lambda x, y, z: npusim.clamp_min(x, 0.1)),
    "clamp_max_": (lambda x, y, z: x.clamp_max_(-0.1), lambda x, y, z: npusim.clamp_max(x, -0.1)),
    "relu_": (lambda x, y, z: x.relu_(), lambda x, y, z: npusim.relu(x)),
    "neg_": (lambda x, y, z: x.neg_(), lambda x, y, z: npusim.neg(x)),
    "abs_": (lambda x, y, z: x.abs_(), lambda x, y, z: npusim.abs(x)),
    "floor_": (lambda x, y, z: x.floor_(), lambda x, y, z: npusim.floor(x)),
    "ceil_": (lambda x, y, z: x.ceil_(), lambda x, y, z: npusim.ceil(x)),
    "trunc_": (lambda x, y, z: x.trunc_(), lambda x, y, z: npusim.trunc(x)),
}


@pytest.mark.parametrize("dtype", [npusim.float32, npusim.float64, npusim.float16])
@pytest.mark.parametrize("op", list(_INPLACE_OPS))
def test_inplace_ops_write_the_functional_bits_into_self(device, intra_op_threads, op, dtype):
    """An in-place op computes in self's own memory (no new array) and gives its functional op's bits, also with
    self as every other operand."""
    inplace, functional = _INPLACE_OPS[op]
    rng = np.random.default_rng(30)
    host = [rng.standard_normal(N).astype(np.float32) for _ in range(3)]
    x, y, z = (npusim.tensor(h, dtype=dtype, device=device) for h in host)
    for a, b, c in [(x, y, z), (x, x, x)]:
        expect = functional(a, b, c).cpu().numpy()
        ptr, version = a.data_ptr(), a._version
        assert inplace(a, b, c) is a
        assert a.data_ptr() == ptr and a._version > version
        _same_bits(a.cpu().numpy(), expect)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_gives_maximums_bits(device, intra_op_threads, dtype):
    """relu of a large float tensor runs clamp's blocks: NumPy's maximum of 0 and x, every bit pattern class."""
    x = _any_bits(dtype, 31)
    with np.errstate(all="ignore"):
        expect = np.maximum(dtype(0), x)
        _same_bits(npusim.relu(npusim.from_numpy(x).to(device)).cpu().numpy(), expect)
        t = npusim.from_numpy(x.copy()).to(device)
        t.relu_()
        _same_bits(t.cpu().numpy(), expect)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_square_and_reciprocal_keep_numpys_bits(device, intra_op_threads, dtype):
    """pow(x, 2) is torch's x * x (NumPy's power by 2 gives the same bits) and reciprocal is 1 / x (NumPy's
    reciprocal's bits), in place too; every float bit pattern class."""
    x = _any_bits(dtype, 32)
    with np.errstate(all="ignore"):
        square, inverse = np.multiply(x, x), np.reciprocal(x)
        _same_bits(square, np.power(x, dtype(2)))
        t = npusim.from_numpy(x.copy()).to(device)
        _same_bits(npusim.pow(t, 2).cpu().numpy(), square)
        _same_bits((t ** 2.0).cpu().numpy(), square)
        _same_bits(npusim.reciprocal(t).cpu().numpy(), inverse)
        t.reciprocal_()
        _same_bits(t.cpu().numpy(), inverse)
        t = npusim.from_numpy(x.copy()).to(device)
        t.pow_(2)
        _same_bits(t.cpu().numpy(), square)


def test_activation_blocks_equal_the_whole_array_forms(intra_op_threads):
    """silu, elu (and selu), leaky_relu, hardsigmoid and hardswish of a large contiguous float32 array run per
    cache-sized block; a strided view of the same values takes the whole-array expressions: the same bits."""
    from npusim.kernels import nn_activation as NA
    x2 = np.concatenate([_any_bits(np.float32, 33), (np.random.default_rng(34).standard_normal(N) * 4)
                         .astype(np.float32)])
    x2[:8] = [-3.0, 3.0, -0.0, 0.0, -6.0, 6.0, 1e-30, -1e-30]
    strided = x2[::2]
    dense = np.ascontiguousarray(strided)
    with np.errstate(all="ignore"):
        for fn in (NA.selu, lambda a: NA.elu(a, 0.5, 2.0, 1.5), NA.leaky_relu,
                   lambda a: NA.leaky_relu(a, -0.3), NA.hardsigmoid, NA.hardswish):
            _same_bits(fn(dense), fn(strided))
        # x * sigmoid(x) of NaN multiplies two NaNs, whose payload a strided loop may take from either operand:
        # compared with the whole-array product over the same contiguous array
        _same_bits(NA.silu(dense), np.multiply(dense, E.sigmoid(dense)))
        np.testing.assert_array_equal(NA.silu(dense), NA.silu(strided))
        for lo, hi in ((-1.0, 1.0), (0.0, 6.0), (-0.0, 0.3)):
            expect = np.minimum(np.float32(hi), np.maximum(np.float32(lo), strided))
            _same_bits(NA.hardtanh(dense, lo, hi), expect)
            _same_bits(NA.hardtanh(strided, lo, hi), expect)


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("size", [5, N])
def test_clamp_family_keeps_signed_zeros_and_nans_as_torch(dtype, size):
    """relu, clamp, clamp_min/max, hardtanh and relu6 keep the input where it equals a bound (relu(-0.0) is -0.0),
    small tensors and blocked large ones alike."""
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(35).standard_normal(size).astype(dtype)
    x[:5] = [-0.0, 0.0, np.nan, -np.nan, 6.0]
    t, n = torch.from_numpy(x), npusim.from_numpy(x)
    F, TF = npusim.nn.functional, torch.nn.functional
    pairs = [(npusim.relu(n), torch.relu(t)), (npusim.clamp(n, min=0.0), torch.clamp(t, min=0.0)),
             (npusim.clamp(n, -0.0, 0.0), torch.clamp(t, -0.0, 0.0)), (npusim.clamp(n, max=-0.0), torch.clamp(t, max=-0.0)),
             (F.hardtanh(n, 0.0, 6.0), TF.hardtanh(t, 0.0, 6.0)), (F.relu6(n), TF.relu6(t)),
             (n.clone().relu_(), t.clone().relu_()), (n.clone().clamp_(0.0, 6.0), t.clone().clamp_(0.0, 6.0))]
    for ours, theirs in pairs:
        _same_bits(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sign_blocks_give_the_comparisons_difference(device, intra_op_threads, dtype):
    """sign of a large float tensor: (x > 0) - (x < 0) per block, 0 for NaN and both zeros (+0), every bit class."""
    x = _any_bits(dtype, 41)
    with np.errstate(all="ignore"):
        expect = (x > 0).astype(dtype) - (x < 0).astype(dtype)
        _same_bits(E.sign(x), expect)
        t = npusim.from_numpy(x.copy()).to(device)
        _same_bits(npusim.sign(t).cpu().numpy(), expect)
        t.sign_()
        _same_bits(t.cpu().numpy(), expect)
