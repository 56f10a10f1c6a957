"""Several inference threads running npusim models at once get exactly the results of running them
one after another (the seed's picture: inference threads, each with intra-op work and forked tasks)."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from conftest import host

import npusim

THREADS = 8


@pytest.fixture(autouse=True)
def small_grain():
    """Split ops over the intra-op pool from a few thousand elements, so these small models use it too."""
    from npusim.core.runtime import parallel_config
    previous, grain = npusim.get_num_threads(), parallel_config.GRAIN_SIZE
    parallel_config.GRAIN_SIZE = 1 << 12
    npusim.set_num_threads(2)
    yield
    parallel_config.GRAIN_SIZE = grain
    npusim.set_num_threads(previous)


def _model(device):
    npusim.manual_seed(0)
    model = npusim.nn.Sequential(
        npusim.nn.Linear(64, 512), npusim.nn.Tanh(), npusim.nn.LayerNorm(512),
        npusim.nn.Linear(512, 128), npusim.nn.ReLU(), npusim.nn.Linear(128, 10),
    ).to(device)
    model.eval()
    return model


def _inputs(device, n=THREADS):
    gen = npusim.Generator().manual_seed(1)
    return [npusim.randn(64, 64, generator=gen).to(device) for _ in range(n)]


def _run_threads(fn, args, repeats=3):
    """``fn(arg)`` for each arg, each on its own thread, started together, ``repeats`` times over; results in
    order (a thread whose repeats disagree fails the test)."""
    results = [None] * len(args)
    errors = []
    start = threading.Barrier(len(args), timeout=30)

    def body(i):
        try:
            start.wait()
            first = fn(args[i])
            for _ in range(repeats - 1):
                again = fn(args[i])
                if not _equal(again, first):
                    raise AssertionError(f"thread {i} got different results on a repeat")
            results[i] = first
        except Exception as e:  # noqa: BLE001 - reported by the test
            errors.append(e)
    threads = [threading.Thread(target=body, args=(i,)) for i in range(len(args))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert all(not t.is_alive() for t in threads)
    return results


def _equal(a, b) -> bool:
    if isinstance(a, tuple):
        return all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b)
    return a == b


def _same(got, expected):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        assert np.array_equal(g, e)


def test_inference_threads_match_serial_results(device):
    model = _model(device)
    xs = _inputs(device)

    def infer(x):
        with npusim.no_grad():
            out = model(x)
            return host(npusim.softmax(out, dim=1) + out.sum())

    expected = [infer(x) for x in xs]
    _same(_run_threads(infer, xs), expected)


def test_threads_with_their_own_grad_modes_do_not_disturb_each_other(device):
    model = _model(device)
    xs = _inputs(device)

    def step(i):
        x = xs[i]
        if i % 2:
            with npusim.no_grad():
                y = model(x)
                return ("no_grad", y.requires_grad, host(y))
        model_out = model(x)
        loss = (model_out ** 2).mean()
        grads = npusim.autograd.grad(loss, [model[0].weight])
        return ("grad", model_out.requires_grad, host(grads[0]))

    expected = [step(i) for i in range(THREADS)]
    got = _run_threads(step, list(range(THREADS)))
    for (k1, r1, a1), (k2, r2, a2) in zip(got, expected):
        assert (k1, r1) == (k2, r2) and np.array_equal(a1, a2)
    assert [r for _, r, _ in got] == [i % 2 == 0 for i in range(THREADS)]


def test_inference_threads_with_forked_branches(device):
    model = _model(device)
    other = _model(device)
    xs = _inputs(device)

    def infer(x):
        with npusim.no_grad():
            fut = npusim.jit.fork(other, x)     # a second branch on the inter-op pool
            y = model(x)
            return host(y + npusim.jit.wait(fut))

    expected = [infer(x) for x in xs]
    _same(_run_threads(infer, xs), expected)


def test_threads_with_autocast_and_without(device):
    model = _model(device)
    xs = _inputs(device)

    def infer(i):
        with npusim.no_grad(), npusim.autocast(device, dtype=npusim.bfloat16, enabled=bool(i % 2)):
            y = model(xs[i])
        return y.dtype, host(y)

    expected = [infer(i) for i in range(THREADS)]
    got = _run_threads(infer, list(range(THREADS)))
    for (d1, a1), (d2, a2) in zip(got, expected):
        assert d1 == d2 and np.array_equal(a1, a2)
    assert {d for d, _ in got} == {npusim.bfloat16, npusim.float32}


@pytest.mark.parametrize("threads", [1, 2])
def test_random_draws_from_threads_with_own_generators(device, threads):
    previous = npusim.get_num_threads()
    npusim.set_num_threads(threads)
    try:
        def draw(seed):
            g = npusim.Generator(device=device).manual_seed(seed)
            return host(npusim.randn(50_000, generator=g, device=device))
        seeds = list(range(THREADS))
        expected = [draw(s) for s in seeds]
        _same(_run_threads(draw, seeds), expected)
    finally:
        npusim.set_num_threads(previous)
