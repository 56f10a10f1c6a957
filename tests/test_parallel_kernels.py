"""Large ops split over the intra-op threads give the serial results: bit-identical for elementwise
ops, copies and random draws, within rounding for floating-point reductions."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from conftest import host

import npusim
from npusim.core.runtime import parallel_config, thread_pool
from npusim.kernels import parallel as P

# the emulation splits NumPy kernels over intra-op threads; a GPU has no such thing
pytestmark = pytest.mark.emulation_only

GRAIN = 1 << 12     # the tests split small arrays: the logic is the same at any grain size, and fast
N = 3 * GRAIN + 77  # large enough to split, not a multiple of the chunk alignment


@pytest.fixture
def splits():
    """Two intra-op threads and a small grain size; counts how many ops went through the pool."""
    previous, grain = npusim.get_num_threads(), parallel_config.GRAIN_SIZE
    calls = []
    run = thread_pool.run_intraop

    def counting(fn, items):
        calls.append(len(items))
        return run(fn, items)
    # the kernels get the pool's runner and the grain size whenever the thread count is set
    thread_pool.run_intraop = counting
    parallel_config.GRAIN_SIZE = GRAIN
    npusim.set_num_threads(2)
    yield calls
    thread_pool.run_intraop = run
    parallel_config.GRAIN_SIZE = grain
    npusim.set_num_threads(previous)


def serial(fn):
    """``fn()`` with one intra-op thread."""
    previous = npusim.get_num_threads()
    npusim.set_num_threads(1)
    try:
        return fn()
    finally:
        npusim.set_num_threads(previous)


def same(a, b):
    """Bit-identical values (NaNs included), dtype, shape and strides."""
    assert a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride()
    ha, hb = np.ascontiguousarray(host(a)), np.ascontiguousarray(host(b))
    assert np.array_equal(ha.view(np.uint8), hb.view(np.uint8)) if ha.dtype.kind == "f" else np.array_equal(ha, hb)


def _inputs(device, dtype=npusim.float32, shape=(N,)):
    gen = npusim.Generator().manual_seed(3)
    x = (npusim.randn(*shape, generator=gen) * 3).to(dtype).to(device)
    y = (npusim.rand(*shape, generator=gen) + 0.5).to(dtype).to(device)
    return x, y


ELEMENTWISE = {
    "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y, "div": lambda x, y: x / y,
    "add_scalar": lambda x, y: x + 2.5, "rsub": lambda x, y: 1 - x, "maximum": lambda x, y: npusim.maximum(x, y),
    "lt": lambda x, y: x < y, "exp": lambda x, y: x.exp(), "log": lambda x, y: y.log(),
    "sin": lambda x, y: x.sin(), "tanh": lambda x, y: x.tanh(), "sqrt": lambda x, y: y.sqrt(),
    "neg": lambda x, y: -x, "abs": lambda x, y: x.abs(), "relu": lambda x, y: npusim.relu(x),
    "square": lambda x, y: x.square(), "isnan": lambda x, y: x.isnan(), "floor": lambda x, y: x.floor(),
    "atan2": lambda x, y: npusim.atan2(x, y), "eq": lambda x, y: x == y,
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_ops_split_and_match_the_serial_bits(device, splits, name):
    x, y = _inputs(device)
    op = ELEMENTWISE[name]
    expected = serial(lambda: op(x, y))
    splits.clear()
    got = op(x, y)
    same(got, expected)
    assert splits, f"{name} did not use the intra-op pool"


@pytest.mark.parametrize("dtype", [npusim.float64, npusim.int32, npusim.int64, npusim.float16])
def test_other_dtypes_match_the_serial_bits(device, splits, dtype):
    x, y = _inputs(device, dtype)
    for op in (lambda: x + y, lambda: x * y, lambda: x - 3, lambda: npusim.maximum(x, y), lambda: x.abs()):
        same(op(), serial(op))


@pytest.mark.parametrize("shapes", [((512, 513), (1, 513)), ((700, 300), (300,)), ((2, 350, 300), (350, 1)),
                                    ((700, 1, 300), (1, 4, 300)), ((1, 300), (700, 300))])
def test_broadcasting_splits_and_keeps_shape_and_layout(device, splits, shapes):
    gen = npusim.Generator().manual_seed(4)
    a, b = (npusim.randn(*s, generator=gen).to(device) for s in shapes)
    for op in (lambda: a + b, lambda: a * b, lambda: npusim.atan2(a, b)):
        got = op()
        same(got, serial(op))
        assert got.is_contiguous()
    assert splits


def test_transposed_inputs_keep_numpys_layout(device, splits):
    x, y = _inputs(device, shape=(600, 400))
    xt, yt = x.t(), y.t()
    for op in (lambda: xt + yt, lambda: xt.exp(), lambda: xt * 2):
        same(op(), serial(op))


def test_inplace_ops_split_and_match(device, splits):
    x, y = _inputs(device, shape=(700, 400))
    for op in (lambda t: t.add_(y), lambda t: t.mul_(2.0), lambda t: t.exp_(), lambda t: t.relu_(),
               lambda t: t.square_(), lambda t: t.t().add_(y.t()), lambda t: t[:, ::2].sub_(1.5)):
        a, b = x.clone(), x.clone()
        splits.clear()
        op(a)
        assert splits
        serial(lambda: op(b))
        same(a, b)


def test_inplace_with_overlapping_input_keeps_numpys_answer(device, splits):
    base = npusim.arange(N, dtype=npusim.float64).to(device)
    a, b = base.clone(), base.clone()
    a[1:].add_(a[:-1])            # reads elements the same op writes: NumPy buffers the input
    serial(lambda: b[1:].add_(b[:-1]))
    same(a, b)
    expected = np.arange(N, dtype=np.float64)
    expected[1:] += np.arange(N - 1, dtype=np.float64)
    assert np.array_equal(host(a), expected)


def test_small_ops_stay_on_the_calling_thread(device, splits):
    x, y = _inputs(device, shape=(2 * GRAIN - 1,))
    x + y
    x.exp()
    x.sum()
    assert splits == []


def test_copies_and_dtype_conversions_split_and_match(device, splits):
    x, y = _inputs(device, shape=(600, 400))
    for op in (lambda: x.to(npusim.float64), lambda: x.to(npusim.int32), lambda: x.to(npusim.float16),
               lambda: x.t().contiguous(), lambda: x.clone(), lambda: npusim.empty_like(x).copy_(y),
               lambda: npusim.empty(600, 400, dtype=npusim.float64, device=device).copy_(y[0]),
               lambda: npusim.empty_like(x).fill_(1.25), lambda: npusim.zeros_like(x).zero_()):
        splits.clear()
        got = op()
        same(got, serial(op))
    assert splits


def test_copy_into_an_expanded_view_is_refused_as_before(device, splits):
    x = npusim.zeros(N, device=device).expand(2, N)
    with pytest.raises(RuntimeError):
        x.copy_(npusim.ones(2, N, device=device))


REDUCTIONS = {
    "sum": lambda t: t.sum(), "sum0": lambda t: t.sum(0), "sum1": lambda t: t.sum(1),
    "sum01k": lambda t: t.sum((0, 1), keepdim=True), "mean": lambda t: t.mean(), "mean0": lambda t: t.mean(0),
    "mean1k": lambda t: t.mean(1, keepdim=True), "amax": lambda t: t.amax(), "amax0": lambda t: t.amax(0),
    "amin1": lambda t: t.amin(1), "max": lambda t: t.max(), "min": lambda t: t.min(),
    "prod1": lambda t: (t * 0.01 + 1).prod(1), "sum_t": lambda t: t.t().sum(0),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_split_and_match_within_rounding(device, splits, name):
    x, _ = _inputs(device, shape=(700, 400))
    op = REDUCTIONS[name]
    expected = serial(lambda: op(x))
    splits.clear()
    got = op(x)
    assert splits, f"{name} did not use the intra-op pool"
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(host(got), host(expected), rtol=2e-5, atol=1e-4)
    exact = np.asarray(host(op(x.to(npusim.float64))))
    np.testing.assert_allclose(host(got), exact, rtol=2e-5, atol=1e-3)


def test_reductions_of_permuted_inputs_keep_numpys_layout(device, splits):
    x, _ = _inputs(device, shape=(40, 30, 20))
    p = x.permute(2, 1, 0)
    for op in (lambda: p.sum(1), lambda: p.amax(0), lambda: p.sum(1, keepdim=True), lambda: p.sum((0, 2)),
               lambda: p.mean()):
        got, expected = op(), serial(op)
        assert got.shape == expected.shape and got.stride() == expected.stride()
        np.testing.assert_allclose(host(got), host(expected), rtol=2e-5, atol=1e-4)


@pytest.mark.parametrize("dtype", [npusim.int32, npusim.bool, npusim.float16])
def test_integer_bool_and_half_reductions(device, splits, dtype):
    x, _ = _inputs(device, npusim.float32, shape=(700, 400))
    t = (x > 0) if dtype is npusim.bool else x.to(dtype)
    for op in (lambda: t.sum(), lambda: t.sum(0), lambda: t.sum(1, keepdim=True), lambda: t.amax(0)):
        got, expected = op(), serial(op)
        assert got.dtype == expected.dtype
        if dtype is npusim.float16:
            np.testing.assert_allclose(host(got), host(expected), rtol=2e-3)
        else:
            same(got, expected)


def test_reductions_propagate_nan(device, splits):
    x, _ = _inputs(device, shape=(N,))
    x[N - 5] = float("nan")
    assert np.isnan(host(x.sum())) and np.isnan(host(x.amax())) and np.isnan(host(x.max()))


@pytest.mark.parametrize("draw", ["rand", "randn", "randint", "bernoulli", "rand_f64", "normal_"])
def test_random_draws_match_the_serial_bits(device, splits, draw):
    fns = {
        "rand": lambda g: npusim.rand(N, generator=g, device=device),
        "randn": lambda g: npusim.randn(N, generator=g, device=device),
        "randint": lambda g: npusim.randint(0, 1000, (N,), generator=g, device=device),
        "bernoulli": lambda g: npusim.full((N,), 0.3, device=device).bernoulli(generator=g),
        "rand_f64": lambda g: npusim.rand(N, generator=g, dtype=npusim.float64, device=device),
        "normal_": lambda g: npusim.empty(N, device=device).normal_(2.0, 3.0, generator=g),
    }
    fn = fns[draw]
    generator = (lambda: npusim.Generator(device=device).manual_seed(11))
    splits.clear()
    got = fn(generator())
    assert splits
    same(got, serial(lambda: fn(generator())))


# --- the pool itself ----------------------------------------------------------------------------------------

def test_pool_runs_every_item_once_and_raises_the_first_error(splits):
    seen = []
    thread_pool.run_intraop(seen.append, list(range(8)))
    assert sorted(seen) == list(range(8))

    def fail_on_two(i):
        if i == 2:
            raise ValueError("chunk 2 failed")
    with pytest.raises(ValueError, match="chunk 2 failed"):
        thread_pool.run_intraop(fail_on_two, [0, 1, 2, 3])


def test_pool_serves_many_callers_at_once(splits):
    x = npusim.arange(N, dtype=npusim.float64)
    expected = host(x * 3 + 1)
    results, errors = [], []

    def worker():
        try:
            for _ in range(5):
                results.append(np.array_equal(host(x * 3 + 1), expected))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors and len(results) == 30 and all(results)


def test_one_thread_never_uses_the_pool():
    previous = npusim.get_num_threads()
    npusim.set_num_threads(1)
    try:
        assert P._min_size > 1 << 40 and P._min_reduce_size > 1 << 40
        x = npusim.ones(N)
        assert float((x + x).sum()) == 2 * N
    finally:
        npusim.set_num_threads(previous)


def test_kernel_split_functions_on_arrays(splits):
    a = np.random.default_rng(0).standard_normal((500, 700)).astype(np.float32)
    assert np.array_equal(P.binary(np.add, a, a), a + a)
    assert np.array_equal(P.unary(np.exp, a), np.exp(a))
    out = np.empty_like(a)
    assert P.binary(np.multiply, a, 2.0, out) is out and np.array_equal(out, a * 2.0)
    dst = np.empty((500, 700), np.float64)
    P.copyto(dst, a, "unsafe")
    assert np.array_equal(dst, a.astype(np.float64))
    assert np.array_equal(P.reduce(np.maximum, "max", a, 1, False), a.max(axis=1))
    assert np.array_equal(P.reduce(np.add, "sum", a, 1, True, np.float64), a.sum(axis=1, dtype=np.float64,
                                                                                   keepdims=True))
    with pytest.raises(ValueError):
        P.binary(np.add, a, np.ones((3, 3), np.float32))   # NumPy's own broadcasting error
    marks = []
    P.for_ranges(N, 8, lambda s, e: marks.append((s, e)))
    assert sorted(marks)[0][0] == 0 and sorted(marks)[-1][1] == N and all(s % 8 == 0 for s, _ in marks)
