"""The host's float32 Box-Muller (kernels/random_box_muller.py) gives box_muller's bits, whatever the inputs."""
import math

import numpy as np
import pytest

from npusim.kernels import random as KR
from npusim.kernels import random_box_muller as BM

# uniforms on the edges of the angle's reduction and of the radius (u = 0 gives a radius of -0.0)
_EDGES = np.array([0.0, 0.0, 0.0, 0.25, 0.0, 0.5, 1 - 2 ** -53, 0.75, 2 ** -53, 0.125, 0.5, 1 - 2 ** -53,
                   0.3, 0.25 - 2 ** -53, 0.7, 0.75 + 2 ** -53])


def _uniforms(seed, n):
    u = np.random.Generator(np.random.Philox(seed)).random(2 * ((n + 1) // 2))
    u[:_EDGES.size] = _EDGES
    return u


@pytest.mark.parametrize("mean, std", [(0.0, 1.0), (0.5, 2.0), (-3.0, 0.02), (1.0, 0.0), (1e30, 1e-30)])
@pytest.mark.parametrize("n", [2 * BM.MIN_PAIRS, 3 * BM._BLOCK + 7, 1 << 20])
def test_float32_values_are_box_mullers_bits(n, mean, std):
    u = _uniforms(n, n)
    expected = KR.box_muller(np, u, np.empty(n, np.float32), mean, std)
    got = BM.box_muller_float32(u, np.empty(n, np.float32), mean, std)
    assert got.tobytes() == expected.tobytes()


def test_values_left_to_the_library_keep_its_bits(monkeypatch):
    # a bound this wide leaves every value to the exact path, which must give the same bits too
    monkeypatch.setattr(BM, "_BOUND", 1.0)
    u = _uniforms(3, 20000)
    expected = KR.box_muller(np, u, np.empty(20000, np.float32), 0.25, 1.5)
    assert BM.box_muller_float32(u, np.empty(20000, np.float32), 0.25, 1.5).tobytes() == expected.tobytes()


def test_cos_sin_error_is_far_inside_the_bound():
    quarter_edges = np.concatenate([k / 8 + np.arange(-5000, 5000) * 2.0 ** -53 for k in range(1, 8)])
    # the edges of the angle table's cells (k / N and (k + 1/2) / N), where the reduction changes entry
    cell_edges = np.concatenate([(k + h) / BM._N + np.arange(-50, 50) * 2.0 ** -53
                                 for k in range(0, BM._N, 7) for h in (0.0, 0.5)])
    u = np.concatenate([_uniforms(11, 1 << 20), quarter_edges, cell_edges, _EDGES])
    u = u[(u >= 0) & (u < 1)]
    values = BM.cos_sin(u)
    theta = u * (2 * math.pi)
    error = max(np.abs(values[:, 0] - np.cos(theta)).max(), np.abs(values[:, 1] - np.sin(theta)).max())
    assert error < BM._BOUND / 30


def test_normal_uses_it_only_where_it_applies():
    assert BM.usable(np.float32, 0.0, 1.0) and BM.usable(np.float32, -2.0, 0.0)
    assert not BM.usable(np.float64, 0.0, 1.0) and not BM.usable(np.float16, 0.0, 1.0)
    assert not BM.usable(np.float32, math.inf, 1.0) and not BM.usable(np.float32, 0.0, math.nan)


def test_large_float32_draw_equals_the_formula(monkeypatch):
    n = (1 << 20) + 3
    fast, blocks = KR.normal(np, 21, 5, (n,), np.float32, 0.5, 3.0)
    monkeypatch.setattr(BM, "usable", lambda *args: False)
    plain, plain_blocks = KR.normal(np, 21, 5, (n,), np.float32, 0.5, 3.0)
    assert blocks == plain_blocks and fast.tobytes() == plain.tobytes()


def test_the_margin_covers_every_radius():
    # the largest radius comes from the largest double below 1
    largest = math.sqrt(-2.0 * math.log(1.0 - (1 - 2 ** -53)))
    assert largest < BM._RADIUS_LIMIT < 1.01 * largest


@pytest.mark.parametrize("n", [2 * BM._BLOCK + 5, 2 * BM.MIN_PAIRS])
def test_uniforms_drawn_block_by_block_give_the_same_bits(n):
    # fill_float32 draws each block's uniforms from the generator: the stream a single draw would give
    expected = KR.box_muller(np, np.random.Generator(np.random.Philox(9)).random(2 * ((n + 1) // 2)),
                             np.empty(n, np.float32), 0.0, 1.0)
    got = BM.fill_float32(np.random.Generator(np.random.Philox(9)), np.empty(n, np.float32), 0.0, 1.0)
    assert got.tobytes() == expected.tobytes()
    strided = np.zeros(2 * n, np.float32)
    BM.fill_float32(np.random.Generator(np.random.Philox(9)), strided[::2], 0.0, 1.0)
    assert strided[::2].tobytes() == expected.tobytes() and not strided[1::2].any()
