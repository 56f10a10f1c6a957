"""npusim.func.rearrange: einops' patterns (permute, merge, split, ellipsis, unitary axes, lists of tensors), their
errors, views and gradients, on cpu and npu; against torch.func.rearrange."""
from __future__ import annotations

import numpy as np
import pytest

import npusim
from conftest import host
from npusim.func import rearrange
from npusim.func.rearrange import DimensionBindError


def _images(device):
    return npusim.arange(2 * 6 * 4 * 3, dtype=npusim.float32, device=device).reshape(2, 6, 4, 3)


def test_the_einops_examples(device):
    x = _images(device)
    a = host(x)
    assert rearrange(x, "b h w c -> b h w c").shape == (2, 6, 4, 3)
    np.testing.assert_array_equal(host(rearrange(x, "b h w c -> (b h) w c")), a.reshape(12, 4, 3))
    np.testing.assert_array_equal(host(rearrange(x, "b h w c -> h (b w) c")),
                                  a.transpose(1, 0, 2, 3).reshape(6, 8, 3))
    np.testing.assert_array_equal(host(rearrange(x, "b h w c -> b c h w")), a.transpose(0, 3, 1, 2))
    np.testing.assert_array_equal(host(rearrange(x, "b h w c -> b (c h w)")), a.transpose(0, 3, 1, 2).reshape(2, -1))
    split = rearrange(x, "b (h1 h) (w1 w) c -> (b h1 w1) h w c", h1=2, w1=2)
    expect = a.reshape(2, 2, 3, 2, 2, 3).transpose(0, 1, 3, 2, 4, 5).reshape(8, 3, 2, 3)
    np.testing.assert_array_equal(host(split), expect)
    s2d = rearrange(x, "b (h h1) (w w1) c -> b h w (c h1 w1)", h1=2, w1=2)
    np.testing.assert_array_equal(host(s2d), a.reshape(2, 3, 2, 2, 2, 3).transpose(0, 1, 3, 5, 2, 4).reshape(2, 3, 2, 12))


def test_ellipsis_and_unitary_axes(device):
    x = _images(device)
    a = host(x)
    np.testing.assert_array_equal(host(rearrange(x, "b ... c -> c b ...")), a.transpose(3, 0, 1, 2))
    np.testing.assert_array_equal(host(rearrange(x, "... -> ...")), a)
    assert rearrange(x, "b h w c -> b h 1 w () c").shape == (2, 6, 1, 4, 1, 3)
    y = rearrange(x, "b h w c -> b h 1 w c")
    np.testing.assert_array_equal(host(rearrange(y, "b h 1 w c -> b h w c")), a)
    # a unitary axis on the left that the right drops is summed over, as torch's first-class dims do
    np.testing.assert_array_equal(host(rearrange(x, "b 1 w c -> b w c")), a.sum(1))


def test_lists_of_tensors_are_stacked(device):
    parts = [npusim.full((2,), float(i), device=device) for i in range(3)]
    assert rearrange(parts, "s a -> a s").tolist() == [[0.0, 1.0, 2.0]] * 2
    assert rearrange(tuple(parts), "s a -> (a s)").tolist() == [0.0, 1.0, 2.0] * 2


def test_views_and_gradients(device):
    x = npusim.randn(2, 3, 4, device=device, requires_grad=True)
    v = rearrange(x, "a b c -> c b a")
    assert v._base is not None and not v.is_contiguous()
    merged = rearrange(x, "a b c -> (c a) b")
    merged.pow(2).sum().backward()
    np.testing.assert_allclose(host(x.grad), 2 * host(x), rtol=1e-6)
    scalar = npusim.tensor(5.0, device=device)
    assert rearrange(scalar, " -> ") is scalar


BAD = [
    ("a b c -> b a c", {"a": 3}, DimensionBindError,
     "Dimension sizes to do not match \\(2 != 3\\) when matching dimension pack \\(d0,\\)"),
    ("a (b c) d -> a b c d", {}, DimensionBindError, "cannot infer the sizes of two dimensions at once d1 and d2"),
    ("a (b c) d -> a b c d", {"b": 2}, DimensionBindError,
     "inferred dimension does not evenly fit into larger dimension: 3 vs \\(2, '\\?'\\)"),
    ("a b c -> a b", {}, ValueError, "Identifiers only on one side of rearrange expression"),
    ("a b -> b a", {}, ValueError, "Number of dimensions in pattern \\(2\\) must be equal to the number of dimensions"),
    ("a b c -> a b 2 c", {}, ValueError, "rearrange only supports unnamed axes of size 1"),
    ("a a c -> a c", {}, ValueError, "duplicate dimension 'a'"),
    ("a b c -> a b c", {"c": 4.0}, TypeError, "rearrange axis lengths must be integers"),
    ("a b c", {}, ValueError, "Pattern must contain a single '->' separator"),
    ("a b c -> a b (c", {}, ValueError, "Imbalanced parentheses"),
    ("a b (c (d)) -> a", {}, ValueError, "brackets inside brackets not allowed"),
    ("a b c -> a b c ...", {}, ValueError, "Ellipsis found in right side, but not left side"),
    ("a (b ...) -> a b", {}, ValueError, "Ellipsis is parenthesis in the left side is not allowed"),
    ("a b c_ -> a b c_", {}, ValueError, "should not start or end with underscore"),
    ("a b c -> a b c", {"z": 3}, ValueError, "Identifiers not found in rearrange expression: {'z'}"),
    ("a b c -> a b c!", {}, ValueError, "Unknown character '!'"),
    ("a.b c -> a", {}, ValueError, "dots only inside ellipsis"),
    ("a ... b c d -> a b c d", {}, ValueError, "Identifiers only on one side"),
]


@pytest.mark.parametrize("pattern,lengths,error,message", BAD)
def test_errors(device, pattern, lengths, error, message):
    x = npusim.zeros(2, 3, 4, device=device)
    with pytest.raises(error, match=message):
        rearrange(x, pattern, **lengths)


CASES = [
    ((2, 3, 4), "a b c -> c b a", {}), ((2, 3, 4), "a b c -> a (b c)", {}), ((6, 4), "(a b) c -> a b c", {"a": 3}),
    ((6, 4), "(a b) c -> (b c) a", {"b": 2}), ((2, 3, 4, 5), "b ... c -> c b ...", {}),
    ((2, 3, 4, 5), "... c -> (c ...)", {}), ((2, 3, 4), "a b c -> a 1 b () c", {}),
    ((2, 1, 4), "a 1 c -> c a", {}), ((2, 3, 4), "a 1 c -> c a", {}), ((8, 6, 3), "(h1 h) (w1 w) c -> (h1 w1) h w c",
                                                                       {"h1": 2, "w1": 3}),
    ((2, 3, 4), "a b (c d) -> d a b c", {"d": 2}), ((), " -> ", {}), ((3,), "a -> a 1 1", {}),
    ((2, 3, 4), "a b c -> (c a b)", {}), ((4, 3), "(a b) c -> a (b c)", {"a": 2, "b": 2}),
]


@pytest.mark.oracle
@pytest.mark.parametrize("shape,pattern,lengths", CASES)
def test_as_torch(torch, shape, pattern, lengths):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    ours = rearrange(npusim.tensor(a), pattern, **lengths)
    theirs = torch.func.rearrange(torch.tensor(a), pattern, **lengths)
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.is_contiguous() == theirs.is_contiguous()
    np.testing.assert_array_equal(host(ours), theirs.numpy())
    ints = rearrange(npusim.tensor(a).int(), pattern, **lengths)
    assert str(ints.dtype).split(".")[1] == str(torch.func.rearrange(torch.tensor(a).int(), pattern,
                                                                     **lengths).dtype).split(".")[1]


@pytest.mark.oracle
@pytest.mark.parametrize("pattern,lengths,error,message", BAD)
def test_errors_as_torch(torch, pattern, lengths, error, message):
    got = []
    for mod, rearr in ((npusim, rearrange), (torch, torch.func.rearrange)):
        with pytest.raises(Exception) as info:
            rearr(mod.zeros(2, 3, 4), pattern, **lengths)
        got.append((type(info.value).__name__, str(info.value)))
    assert got[0] == got[1]
