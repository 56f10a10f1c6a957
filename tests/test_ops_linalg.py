"""Matrix products: matmul, mm, bmm, mv, dot, vdot, outer, addmm (and addmm_), addmv,
baddbmm and einsum.

Values are checked against NumPy on every device; dtypes, shapes, warnings and
error messages against PyTorch (the ``oracle`` tests).
"""
from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest

import npusim
from conftest import host

pytestmark = [
    pytest.mark.filterwarnings(r"ignore::RuntimeWarning:npusim\.(kernels|native)"),
]

FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTEGRALS = ["int64", "int32", "int16", "int8", "uint8"]
RTOL = {"float64": 1e-12, "float32": 1e-5, "float16": 2e-3, "bfloat16": 1e-2}
NAN = math.nan


def values(shape, dtype, seed=0):
    """Small exact values for ``dtype`` (a name): integers stay in range, floats are exact in 16 bits."""
    g = np.random.default_rng(seed)
    if dtype == "bool":
        return g.integers(0, 2, shape).astype(bool)
    lo = 0 if dtype == "uint8" else -3
    v = g.integers(lo, 4, shape).astype(np.float64)
    if dtype in FLOATS:
        v += g.integers(0, 4, shape) / 4
    return v


def make(shape, dtype, device, seed=0):
    return npusim.tensor(values(shape, dtype, seed), dtype=getattr(npusim, dtype), device=device)


def reference(fn, *tensors, dtype):
    """NumPy's result on the tensors' exact values, rounded to ``dtype`` as torch's kernels round."""
    r = fn(*[host(t).astype(np.float64) for t in tensors])
    if dtype in RTOL:
        return np.asarray(r)
    return np.asarray(r).astype(np.int64).astype(np.dtype(dtype))  # integer products wrap around


def check(result, expected, dtype, shape=None):
    assert result.dtype is getattr(npusim, dtype)
    expected = np.asarray(expected)
    assert tuple(result.shape) == (expected.shape if shape is None else shape)
    got = host(result)
    if dtype in RTOL:
        np.testing.assert_allclose(got.astype(np.float64), expected, rtol=RTOL[dtype], atol=RTOL[dtype],
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)


# --- matmul and its special cases, against NumPy ---------------------------------------------------------

MATMUL_SHAPES = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
    ((5, 2, 3), (3,)), ((3,), (5, 3, 4)), ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)),
    ((5, 2, 3), (5, 3, 4)), ((2, 1, 2, 3), (5, 3, 4)), ((1, 5, 2, 3), (3, 1, 3, 4)),
    ((0, 3), (3, 4)), ((2, 0), (0, 4)), ((0,), (0,)), ((3, 5, 0), (0, 2)),
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul_follows_numpy_shape_rules(device, shapes):
    a, b = make(shapes[0], "float32", device, 1), make(shapes[1], "float32", device, 2)
    r = npusim.matmul(a, b)
    check(r, reference(np.matmul, a, b, dtype="float32"), "float32")
    assert r.device == a.device
    check(a @ b, reference(np.matmul, a, b, dtype="float32"), "float32")


@pytest.mark.parametrize("dtype", FLOATS + INTEGRALS)
def test_matmul_keeps_the_dtype_of_every_dtype(device, dtype):
    a, b = make((4, 2, 5), dtype, device, 1), make((5, 3), dtype, device, 2)
    check(npusim.matmul(a, b), reference(np.matmul, a, b, dtype=dtype), dtype)
    v = make((5,), dtype, device, 3)
    check(npusim.matmul(v, v), reference(np.matmul, v, v, dtype=dtype), dtype)


def test_integer_products_wrap_around(device):
    a = npusim.full((2, 2), 100, dtype=npusim.uint8, device=device)
    np.testing.assert_array_equal(host(npusim.mm(a, a)), np.full((2, 2), (2 * 100 * 100) % 256))
    big = np.full(3, 2 ** 31 - 1, dtype=np.int32)
    t = npusim.tensor(big, device=device)
    assert npusim.dot(t, t).item() == int(np.dot(big, big))  # NumPy's int32 dot wraps the same way


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_products_accumulate_in_float32_and_round_once(device, dtype):
    g = np.random.default_rng(5)
    a = npusim.tensor(g.standard_normal((8, 300)), dtype=getattr(npusim, dtype), device=device)
    b = npusim.tensor(g.standard_normal((300, 6)), dtype=getattr(npusim, dtype), device=device)
    a32, b32 = host(a).astype(np.float32), host(b).astype(np.float32)
    rounded = getattr(npusim, dtype)
    assert npusim.equal(npusim.mm(a, b).cpu(), npusim.tensor(a32 @ b32).to(rounded))
    assert npusim.equal(npusim.matmul(a[0], b).cpu(), npusim.tensor(a32[0] @ b32).to(rounded))


def test_matmul_of_strided_views(device):
    base = make((6, 8), "float64", device)
    a, b = base.t(), base[:, ::2]  # transposed and sliced views
    check(npusim.mm(a, b), reference(np.matmul, a, b, dtype="float64"), "float64")
    batch = make((3, 4, 5), "float64", device).transpose(0, 1)
    check(npusim.matmul(batch, b[:5]), reference(np.matmul, batch, b[:5], dtype="float64"), "float64")


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64"])
def test_special_cases_match_numpy(device, dtype):
    m, n = make((4, 3), dtype, device, 1), make((3, 5), dtype, device, 2)
    v, w = make((3,), dtype, device, 3), make((4,), dtype, device, 4)
    b1, b2 = make((2, 4, 3), dtype, device, 5), make((2, 3, 5), dtype, device, 6)
    check(npusim.mm(m, n), reference(np.matmul, m, n, dtype=dtype), dtype)
    check(npusim.bmm(b1, b2), reference(np.matmul, b1, b2, dtype=dtype), dtype)
    check(npusim.mv(m, v), reference(np.matmul, m, v, dtype=dtype), dtype)
    check(npusim.dot(v, v), reference(np.dot, v, v, dtype=dtype), dtype)
    check(npusim.vdot(v, v), reference(np.vdot, v, v, dtype=dtype), dtype)
    check(npusim.outer(w, v), reference(np.outer, w, v, dtype=dtype), dtype)
    check(m.mm(n), reference(np.matmul, m, n, dtype=dtype), dtype)
    check(m.mv(v), reference(np.matmul, m, v, dtype=dtype), dtype)


def test_outer_promotes_like_multiplication(device):
    a = make((3,), "int32", device)
    b = npusim.tensor([True, False], device=device)
    r = npusim.outer(a, b)
    assert r.dtype is npusim.int32
    np.testing.assert_array_equal(host(r), np.outer(host(a), host(b)))
    assert npusim.outer(a, make((2,), "float16", device)).dtype is npusim.float16
    assert npusim.ger(a, a).shape == (3, 3)


def test_bool_products_with_nothing_to_multiply_are_false(device):
    a = npusim.ones(2, 0, dtype=npusim.bool, device=device)
    b = npusim.ones(0, 3, dtype=npusim.bool, device=device)
    r = npusim.mm(a, b)
    assert r.dtype is npusim.bool and not host(r).any() and r.shape == (2, 3)
    assert npusim.bmm(a[None], b[None]).shape == (1, 2, 3)


def test_bmm_of_empty_batches_takes_the_second_dtype(device):
    a = npusim.ones(3, 2, 0, device=device)
    b = npusim.ones(3, 0, 4, dtype=npusim.float64, device=device)
    r = npusim.bmm(a, b)
    assert r.dtype is npusim.float64 and r.shape == (3, 2, 4) and not host(r).any()


# --- out= variants --------------------------------------------------------------------------------------

@pytest.mark.parametrize("op, shapes, out_shape", [
    ("matmul", ((2, 3), (3, 4)), (2, 4)), ("matmul", ((3,), (3,)), ()), ("matmul", ((5, 2, 3), (3,)), (5, 2)),
    ("matmul", ((3,), (3, 4)), (1, 4)), ("matmul", ((5, 2, 3), (5, 3, 4)), (5, 2, 4)),
    ("mm", ((2, 3), (3, 4)), (2, 4)), ("bmm", ((5, 2, 3), (5, 3, 4)), (5, 2, 4)), ("mv", ((2, 3), (3,)), (2,)),
    ("dot", ((3,), (3,)), ()),
])
def test_out_variants_write_into_out(device, op, shapes, out_shape):
    a, b = make(shapes[0], "float32", device, 1), make(shapes[1], "float32", device, 2)
    for out in (npusim.empty(out_shape, device=device), npusim.empty(0, device=device)):
        version = out._version
        r = getattr(npusim, op)(a, b, out=out)
        assert r is out and out._version > version
        check(out, reference(np.matmul, a, b, dtype="float32"), "float32")


def test_out_is_resized_with_torch_warning(device):
    a, b = make((2, 3), "float32", device), make((3, 4), "float32", device)
    out = npusim.empty(7, device=device)
    with pytest.warns(UserWarning, match=r"An output with one or more elements was resized since it had shape "
                                         r"\[7\], which does not match the required output shape \[2, 4\]"):
        npusim.mm(a, b, out=out)
    assert out.shape == (2, 4)
    empty = npusim.empty(0, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        npusim.matmul(a, b, out=empty)
    assert empty.shape == (2, 4)


def test_out_may_alias_an_input(device):
    x = npusim.arange(9.0, device=device).reshape(3, 3)
    want = host(x) @ host(x)
    npusim.mm(x, x, out=x)
    np.testing.assert_array_equal(host(x), want)
    y = npusim.arange(9.0, device=device).reshape(3, 3)
    want = host(y) @ host(y) + host(y)
    y.addmm_(y, y)
    np.testing.assert_array_equal(host(y), want)


def test_out_must_have_the_result_dtype(device):
    a = make((2, 3), "float32", device)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got double instead"):
        npusim.mm(a, a.t(), out=npusim.empty(2, 2, dtype=npusim.float64, device=device))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got long int instead"):
        npusim.matmul(a[None], a.t()[None], out=npusim.empty(0, dtype=npusim.int64, device=device))
    with pytest.raises(RuntimeError, match="result dtype Double does not match input dtype Float"):
        npusim.dot(a[0], a[0], out=npusim.empty((), dtype=npusim.float64, device=device))
    with pytest.raises(RuntimeError, match="addmv input tensors must have the same dtype, but got Long, Float, "
                                           "and Float"):
        npusim.mv(a, a[0], out=npusim.empty(2, dtype=npusim.int64, device=device))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got c10::Half instead"):
        npusim.addmm(npusim.ones(2, 2, device=device), a, a.t(),
                     out=npusim.empty(2, 2, dtype=npusim.float16, device=device))


# --- addmm, addmv, baddbmm ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "int64", "int16"])
@pytest.mark.parametrize("beta, alpha", [(1, 1), (2, 3), (0, 1), (0.5, -1.5), (True, False)])
def test_fused_products_match_numpy(device, dtype, beta, alpha):
    integral = dtype not in RTOL
    cb, ca = (int(beta), int(alpha)) if integral else (beta, alpha)  # integral kernels truncate
    c2, m1, m2 = make((1, 4), dtype, device, 1), make((3, 2), dtype, device, 2), make((2, 4), dtype, device, 3)
    check(npusim.addmm(c2, m1, m2, beta=beta, alpha=alpha),
          reference(lambda c, x, y: cb * c + ca * (x @ y), c2, m1, m2, dtype=dtype), dtype, (3, 4))
    c1, v = make((3,), dtype, device, 4), make((2,), dtype, device, 5)
    check(npusim.addmv(c1, m1, v, beta=beta, alpha=alpha),
          reference(lambda c, x, y: cb * c + ca * (x @ y), c1, m1, v, dtype=dtype), dtype)
    c3, b1, b2 = make((4,), dtype, device, 6), make((2, 3, 5), dtype, device, 7), make((2, 5, 4), dtype, device, 8)
    check(npusim.baddbmm(c3, b1, b2, beta=beta, alpha=alpha),
          reference(lambda c, x, y: cb * c + ca * (x @ y), c3, b1, b2, dtype=dtype), dtype, (2, 3, 4))
    inplace = make((3, 4), dtype, device, 9)
    want = reference(lambda c, x, y: cb * c + ca * (x @ y), inplace, m1, m2, dtype=dtype)
    version = inplace._version
    assert inplace.addmm_(m1, m2, beta=beta, alpha=alpha) is inplace
    assert inplace._version > version
    check(inplace, want, dtype)


def test_beta_zero_ignores_nan_in_input(device):
    nan = npusim.full((2, 2), NAN, device=device)
    m = npusim.ones(2, 3, device=device)
    np.testing.assert_array_equal(host(npusim.addmm(nan, m, m.t(), beta=0)), np.full((2, 2), 3.0))
    np.testing.assert_array_equal(host(npusim.addmv(nan[0], m[:2], m[0], beta=0.0)), [3.0, 3.0])
    np.testing.assert_array_equal(host(npusim.baddbmm(nan[None], m[None], m.t()[None], beta=0)),
                                  np.full((1, 2, 2), 3.0))
    assert np.isnan(host(npusim.addmm(npusim.ones(2, 2, device=device), m, m.t(), beta=NAN))).all()


def test_alpha_zero_skips_the_product_in_addmm_and_addmv(device):
    m = npusim.full((2, 3), NAN, device=device)
    one = npusim.ones(2, 2, device=device)
    np.testing.assert_array_equal(host(npusim.addmm(one, m, m.t(), alpha=0)), np.ones((2, 2)))
    np.testing.assert_array_equal(host(npusim.addmv(one[0], m, m[0], alpha=0)), [1.0, 1.0])
    # baddbmm multiplies anyway, so NaNs in the batches reach the result (as in torch)
    assert np.isnan(host(npusim.baddbmm(one[None], m[None], m.t()[None], alpha=0))).all()


def test_fused_products_with_an_empty_inner_dimension_scale_the_input(device):
    c = npusim.full((2, 2), 3.0, device=device)
    m1, m2 = npusim.ones(2, 0, device=device), npusim.ones(0, 2, device=device)
    np.testing.assert_array_equal(host(npusim.addmm(c, m1, m2, beta=2)), np.full((2, 2), 6.0))
    np.testing.assert_array_equal(host(npusim.addmm(c * NAN, m1, m2, beta=0)), np.zeros((2, 2)))
    r = npusim.addmv(npusim.full((1,), 3.0, device=device), npusim.ones(0, 2, device=device),
                     npusim.ones(2, device=device), beta=2)
    assert r.shape == (1,) and r.item() == 6.0  # torch's shortcut keeps input's shape


def test_fused_products_with_16_bit_floats_round_once(device):
    g = np.random.default_rng(2)
    c, a, b = (npusim.tensor(g.standard_normal(s), dtype=npusim.float16, device=device)
               for s in ((4, 6), (4, 100), (100, 6)))
    exact = 0.5 * host(c).astype(np.float32) + 2.0 * (host(a).astype(np.float32) @ host(b).astype(np.float32))
    assert npusim.equal(npusim.addmm(c, a, b, beta=0.5, alpha=2.0).cpu(), npusim.tensor(exact).half())


# --- einsum --------------------------------------------------------------------------------------------------

EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ij->ji", [(2, 3)]), ("ji", [(2, 3)]),
    ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("ij->", [(2, 3)]), ("i,i->", [(4,), (4,)]), ("i,j->ij", [(2,), (3,)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]), ("...ij,...jk->...ik", [(5, 2, 3), (3, 4)]),
    ("...ij->...ji", [(4, 5, 2, 3)]), ("...ij->ij", [(5, 2, 3)]), ("i...->...", [(2, 3, 4)]),
    ("...i,...i->...", [(2, 1, 3), (1, 4, 3)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("i,i->i", [(1,), (3,)]), ("ij,jk->ik", [(2, 3), (1, 4)]), ("bA,Ab", [(2, 3), (3, 2)]),
    (" i j , j k -> i k ", [(2, 3), (3, 4)]), ("i,->i", [(3,), ()]), (",->", [(), ()]), ("ij,jk->ik", [(2, 0), (0, 4)]),
]


# NumPy sums an ellipsis away only when it is spelled out as letters
NUMPY_EQUATION = {"...ij->ij": "kij->ij", "i...->...": "ijk->jk"}


@pytest.mark.parametrize("equation, shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum_matches_numpy(device, equation, shapes):
    ts = [make(s, "float64", device, i) for i, s in enumerate(shapes)]
    expected = np.einsum(NUMPY_EQUATION.get(equation, equation.replace(" ", "")), *[host(t) for t in ts])
    r = npusim.einsum(equation, *ts)
    check(r, expected, "float64")
    assert r.device == ts[0].device


def test_einsum_accepts_a_list_and_the_sublist_format(device):
    a, b = make((2, 3), "float32", device, 1), make((3, 4), "float32", device, 2)
    want = reference(np.matmul, a, b, dtype="float32")
    check(npusim.einsum("ij,jk->ik", [a, b]), want, "float32")
    check(npusim.einsum(a, [0, 1], b, [1, 2], [0, 2]), want, "float32")
    check(npusim.einsum(a, [0, 1], b, [1, 2]), want, "float32")
    check(npusim.einsum(make((5, 2, 3), "float32", device), [..., 0, 1], [1, ...]),
          host(make((5, 2, 3), "float32", device)).sum(1).T, "float32")


def test_einsum_follows_a_given_contraction_path(device):
    ops = [make(s, "float64", device, i) for i, s in enumerate([(2, 3), (3, 4), (4, 5)])]
    want = np.einsum("ij,jk,kl->il", *[host(t) for t in ops])
    for path in ([0, 1, 0, 1], [1, 2, 0, 1], [2, 1, 1, 0]):
        check(npusim.ops.aten.einsum.default("ij,jk,kl->il", ops, path=path), want, "float64")


def test_einsum_result_dtypes_follow_torch(device):
    i32 = make((2, 3), "int32", device)
    assert npusim.einsum("ij->ji", i32).dtype is npusim.int32  # a permutation keeps the dtype
    assert npusim.einsum("ij->", i32).dtype is npusim.int64  # summing one operand widens like sum()
    assert npusim.einsum("ij,jk->ik", i32, i32.t()).dtype is npusim.int32  # contracting keeps it
    assert npusim.einsum("i,j->ij", i32[0], make((2,), "float16", device)).dtype is npusim.float16
    assert npusim.einsum("ij,kj->ik", make((2, 3), "float16", device), make((2, 3), "float16", device)).dtype \
        is npusim.float16
    b = npusim.ones(3, dtype=npusim.bool, device=device)
    assert npusim.einsum("i,i->i", b, b).dtype is npusim.bool


# --- errors ----------------------------------------------------------------------------------------------------

def _f(T, *shape, dtype="float32", device="cpu"):
    """Ones from library ``T`` (npusim, or torch for the oracle)."""
    return T.ones(*shape, dtype=getattr(T, dtype), device=device)


ERRORS = [
    # matmul and the cases it reduces to
    (lambda T, d: T.matmul(T.tensor(1.0, device=d), _f(T, 2, 3, device=d)), RuntimeError,
     "both arguments to matmul need to be at least 1D, but they are 0D and 2D"),
    (lambda T, d: T.matmul(_f(T, 2, 3, device=d), _f(T, 4, 5, device=d)), RuntimeError,
     r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"),
    (lambda T, d: T.matmul(_f(T, 3, device=d), _f(T, 4, 5, device=d)), RuntimeError,
     r"mat1 and mat2 shapes cannot be multiplied \(1x3 and 4x5\)"),
    (lambda T, d: T.matmul(_f(T, 5, 2, 3, device=d), _f(T, 4, 2, device=d)), RuntimeError,
     r"mat1 and mat2 shapes cannot be multiplied \(10x3 and 4x2\)"),
    (lambda T, d: T.matmul(_f(T, 5, 2, 3, device=d), _f(T, 5, 4, 5, device=d)), RuntimeError,
     re.escape("Expected size for first two dimensions of batch2 tensor to be: [5, 3] but got: [5, 4].")),
    (lambda T, d: T.matmul(_f(T, 5, 2, 3, device=d), _f(T, 4, 3, 5, device=d)), RuntimeError,
     r"The size of tensor a \(5\) must match the size of tensor b \(4\) at non-singleton dimension 0"),
    (lambda T, d: T.matmul(_f(T, 5, 2, 3, device=d), _f(T, 4, device=d)), RuntimeError,
     r"size mismatch, got input \(10\), mat \(10x3\), vec \(4\)"),
    (lambda T, d: T.matmul(_f(T, 3, device=d), _f(T, 4, device=d)), RuntimeError,
     r"inconsistent tensor size, expected tensor \[3\] and src \[4\] to have the same number of elements, but "
     r"got 3 and 4 elements respectively"),
    (lambda T, d: T.matmul(_f(T, 2, 3, device=d), _f(T, 3, 2, dtype="float64", device=d)), RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: float != double"),
    (lambda T, d: T.matmul(_f(T, 3, device=d), _f(T, 3, dtype="float64", device=d)), RuntimeError,
     "dot : expected both vectors to have same dtype, but found Float and Double"),
    (lambda T, d: T.matmul(_f(T, 2, 3, device=d), _f(T, 3, dtype="float64", device=d)), RuntimeError,
     "addmv input tensors must have the same dtype, but got Double, Float, and Double"),
    (lambda T, d: T.matmul(_f(T, 5, 2, 3, device=d), _f(T, 5, 3, 2, dtype="float64", device=d)), RuntimeError,
     "expected scalar type Float but found Double"),
    (lambda T, d: T.matmul(_f(T, 2, 3, dtype="bool", device=d), _f(T, 3, 2, dtype="bool", device=d)),
     NotImplementedError, "\"addmm_impl_cpu_\" not implemented for 'Bool'"),
    # mm, bmm, mv, dot, outer
    (lambda T, d: T.mm(_f(T, 3, device=d), _f(T, 3, 2, device=d)), RuntimeError, "self must be a matrix"),
    (lambda T, d: T.mm(_f(T, 2, 3, device=d), _f(T, 3, device=d)), RuntimeError, "mat2 must be a matrix"),
    (lambda T, d: T.mm(_f(T, 2, 3, dtype="int64", device=d), _f(T, 3, 2, device=d)), RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: long int != float"),
    (lambda T, d: T.bmm(_f(T, 2, 3, device=d), _f(T, 3, 2, device=d)), RuntimeError, "batch1 must be a 3D tensor"),
    (lambda T, d: T.bmm(_f(T, 2, 2, 3, device=d), _f(T, 3, 2, device=d)), RuntimeError, "batch2 must be a 3D tensor"),
    (lambda T, d: T.bmm(_f(T, 2, 2, 3, dtype="bool", device=d), _f(T, 2, 3, 2, dtype="bool", device=d)),
     NotImplementedError, "\"bmm\" not implemented for 'Bool'"),
    (lambda T, d: T.bmm(_f(T, 2, 20, 20, device=d), _f(T, 2, 20, 20, dtype="int64", device=d)), RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: float != long int"),
    (lambda T, d: T.mv(_f(T, 3, device=d), _f(T, 3, device=d)), RuntimeError,
     "vector \\+ matrix @ vector expected, got 1, 1, 1"),
    (lambda T, d: T.mv(T.tensor(1.0, device=d), _f(T, 3, device=d)), IndexError,
     "Dimension specified as 0 but tensor has no dimensions"),
    (lambda T, d: T.mv(_f(T, 2, 3, dtype="bool", device=d), _f(T, 3, dtype="bool", device=d)), NotImplementedError,
     "\"addmv_impl_cpu\" not implemented for 'Bool'"),
    (lambda T, d: T.dot(_f(T, 2, 3, device=d), _f(T, 2, 3, device=d)), RuntimeError,
     "1D tensors expected, but got 2D and 2D tensors"),
    (lambda T, d: T.dot(_f(T, 3, dtype="bool", device=d), _f(T, 3, dtype="bool", device=d)), NotImplementedError,
     "\"dot\" not implemented for 'Bool'"),
    (lambda T, d: T.vdot(_f(T, 3, device=d), _f(T, 4, device=d)), RuntimeError, "inconsistent tensor size"),
    (lambda T, d: T.outer(_f(T, 3, 2, device=d), _f(T, 4, device=d)), RuntimeError,
     "outer: Expected 1-D argument self, but got 2-D"),
    (lambda T, d: T.outer(_f(T, 3, device=d), T.tensor(2.0, device=d)), RuntimeError,
     "outer: Expected 1-D argument vec2, but got 0-D"),
    # addmm, addmv, baddbmm
    (lambda T, d: T.addmm(_f(T, 2, 2, dtype="float64", device=d), _f(T, 2, 3, device=d), _f(T, 3, 2, device=d)),
     RuntimeError, "self and mat2 must have the same dtype, but got Double and Float"),
    (lambda T, d: T.addmm(_f(T, 2, 2, device=d), _f(T, 2, 3, dtype="float64", device=d), _f(T, 3, 2, device=d)),
     RuntimeError, "mat1 and mat2 must have the same dtype, but got Double and Float"),
    (lambda T, d: T.addmm(_f(T, 2, 2, device=d), _f(T, 3, device=d), _f(T, 3, 2, device=d)), RuntimeError,
     "mat1 must be a matrix, got 1-D tensor"),
    (lambda T, d: T.addmm(_f(T, 2, 2, device=d), _f(T, 2, 3, device=d), _f(T, 4, 2, device=d)), RuntimeError,
     r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x2\)"),
    (lambda T, d: T.addmm(_f(T, 3, device=d), _f(T, 2, 3, device=d), _f(T, 3, 2, device=d)), RuntimeError,
     re.escape("The expanded size of the tensor (2) must match the existing size (3) at non-singleton dimension 1."
               "  Target sizes: [2, 2].  Tensor sizes: [3]")),
    (lambda T, d: T.addmm(_f(T, 2, 2, 2, device=d), _f(T, 2, 3, device=d), _f(T, 3, 2, device=d)), RuntimeError,
     r"the number of sizes provided \(2\) must be greater or equal to the number of dimensions in the tensor \(3\)"),
    (lambda T, d: _f(T, 1, 2, device=d).addmm_(_f(T, 2, 3, device=d), _f(T, 3, 2, device=d)), RuntimeError,
     re.escape("Bad in-place call: input tensor size [1, 2] and output tensor size [2, 2] should match")),
    (lambda T, d: T.addmm(_f(T, 2, 2, dtype="bool", device=d), _f(T, 2, 3, dtype="bool", device=d),
                            _f(T, 3, 2, dtype="bool", device=d)), NotImplementedError,
     "\"addmm_impl_cpu_\" not implemented for 'Bool'"),
    (lambda T, d: T.addmm(_f(T, 2, 2, dtype="uint8", device=d), _f(T, 2, 3, dtype="uint8", device=d),
                            _f(T, 3, 2, dtype="uint8", device=d), alpha=300), RuntimeError,
     "value cannot be converted to type uint8_t without overflow"),
    (lambda T, d: T.addmm(_f(T, 2, 2, device=d), _f(T, 2, 3, device=d), _f(T, 3, 2, device=d), beta=1e39), RuntimeError,
     "value cannot be converted to type float without overflow"),
    (lambda T, d: T.addmv(_f(T, 2, 2, device=d), _f(T, 2, 3, device=d), _f(T, 3, device=d)), RuntimeError,
     "vector \\+ matrix @ vector expected, got 2, 2, 1"),
    (lambda T, d: T.addmv(_f(T, 3, device=d), _f(T, 2, 3, device=d), _f(T, 3, device=d)), RuntimeError,
     r"size mismatch, got input \(3\), mat \(2x3\), vec \(3\)"),
    (lambda T, d: T.addmv(_f(T, 2, dtype="float64", device=d), _f(T, 2, 3, device=d), _f(T, 3, device=d)), RuntimeError,
     "addmv input tensors must have the same dtype, but got Double, Float, and Float"),
    (lambda T, d: T.baddbmm(_f(T, 2, 2, 2, dtype="float64", device=d), _f(T, 2, 2, 3, device=d),
                              _f(T, 2, 3, 2, device=d)), RuntimeError,
     "Input dtypes must be the same, got: input double, batch1: float, batch2: float"),
    (lambda T, d: T.baddbmm(_f(T, 3, device=d), _f(T, 2, 2, 3, device=d), _f(T, 2, 3, 2, device=d)), RuntimeError,
     r"The expanded size of the tensor \(2\) must match the existing size \(3\) at non-singleton dimension 2"),
    (lambda T, d: T.baddbmm(_f(T, 2, 2, 2, device=d), _f(T, 2, 2, 3, device=d), _f(T, 3, 2, device=d)), IndexError,
     re.escape("Dimension out of range (expected to be in range of [-2, 1], but got 2)")),
    (lambda T, d: T.baddbmm(_f(T, 2, 2, 2, device=d), _f(T, 2, 2, device=d), _f(T, 2, 3, 2, device=d)), RuntimeError,
     "batch1 must be a 3D tensor"),
    (lambda T, d: T.baddbmm(_f(T, 2, 2, 2, dtype="bool", device=d), _f(T, 2, 2, 3, dtype="bool", device=d),
                              _f(T, 2, 3, 2, dtype="bool", device=d)), NotImplementedError,
     "\"baddbmm\" not implemented for 'Bool'"),
    # einsum
    (lambda T, d: T.einsum("ij"), ValueError,
     "einsum\\(\\): must specify the equation string and at least one operand, or at least one operand and its "
     "subscripts list"),
    (lambda T, d: T.einsum(3, _f(T, 2, device=d)), TypeError,
     r"einsum\(\): argument 'equation' \(position 1\) must be str, not int"),
    (lambda T, d: T.einsum(_f(T, 2, device=d), [60]), ValueError,
     r"einsum\(\): subscript in subscript list is not within the valid range \[0, 52\)"),
    (lambda T, d: T.ops.aten.einsum.default("i", []), RuntimeError, r"einsum\(\): must provide at least one operand"),
    (lambda T, d: T.einsum("ij", _f(T, 2, 3, 4, device=d)), RuntimeError,
     r"einsum\(\): the number of subscripts in the equation \(2\) does not match the number of dimensions \(3\) "
     r"for operand 0 and no ellipsis was given"),
    (lambda T, d: T.einsum("...ijk", _f(T, 2, 3, device=d)), RuntimeError,
     r"einsum\(\): the number of subscripts in the equation \(3\) is more than the number of dimensions \(2\) for "
     r"operand 0$"),
    (lambda T, d: T.einsum("ij,jk", _f(T, 2, 3, device=d)), RuntimeError,
     r"einsum\(\): fewer operands were provided than specified in the equation"),
    (lambda T, d: T.einsum("ij", _f(T, 2, 3, device=d), _f(T, 3, device=d)), RuntimeError,
     r"einsum\(\): more operands were provided than specified in the equation"),
    (lambda T, d: T.einsum("i1", _f(T, 2, 3, device=d)), RuntimeError,
     r"einsum\(\): invalid subscript given at index 1 in the equation string, subscripts must be in \[a-zA-Z\]"),
    (lambda T, d: T.einsum("ij->i->j", _f(T, 2, 3, device=d)), RuntimeError, "invalid subscript given at index 5"),
    (lambda T, d: T.einsum("ij->ii", _f(T, 2, 3, device=d)), RuntimeError,
     r"einsum\(\): output subscript i appears more than once in the output"),
    (lambda T, d: T.einsum("ij->k", _f(T, 2, 3, device=d)), RuntimeError,
     r"einsum\(\): output subscript k does not appear in the equation for any input operand"),
    (lambda T, d: T.einsum("...i...->i", _f(T, 2, 3, device=d)), RuntimeError,
     r"einsum\(\): found '\.' for operand 0 for which an ellipsis was already found"),
    (lambda T, d: T.einsum("i..", _f(T, 2, 3, device=d)), RuntimeError,
     r"einsum\(\): found '\.' for operand 0 that is not part of any ellipsis"),
    (lambda T, d: T.einsum("ij->..", _f(T, 2, 3, device=d)), RuntimeError,
     r"einsum\(\): found '\.' for output that is not part of any ellipsis \(\.\.\.\)"),
    (lambda T, d: T.einsum("ij->...i...", _f(T, 2, 3, device=d)), RuntimeError,
     r"einsum\(\): found '\.' for output but an ellipsis \(\.\.\.\) was already found"),
    (lambda T, d: T.einsum("ii", _f(T, 3, 4, device=d)), RuntimeError,
     r"einsum\(\): subscript i is repeated for operand 0 but the sizes don't match, 4 != 3"),
    (lambda T, d: T.einsum("i,i->", _f(T, 2, device=d), _f(T, 3, device=d)), RuntimeError,
     r"einsum\(\): subscript i has size 3 for operand 1 which does not broadcast with previously seen size 2"),
    (lambda T, d: T.einsum("...ij,...jk", _f(T, 5, 2, 3, device=d), _f(T, 4, 3, 4, device=d)), RuntimeError,
     r"einsum\(\): dimension 0 covered by ellipsis in operand 1has size 4 which does not broadcast with "
     r"previously seen ellipsis with size 5 for the respective dimension"),
    (lambda T, d: T.einsum("ij,jk->ik", _f(T, 2, 3, device=d), _f(T, 3, 4, dtype="float64", device=d)), RuntimeError,
     "expected scalar type Float but found Double"),
    (lambda T, d: T.einsum("ij,jk->ik", _f(T, 2, 3, dtype="bool", device=d), _f(T, 3, 4, dtype="bool", device=d)),
     NotImplementedError, "\"bmm\" not implemented for 'Bool'"),
    (lambda T, d: T.ops.aten.einsum.default("ij,jk->ik", [_f(T, 2, 3, device=d), _f(T, 3, 4, device=d)], path=[0]),
     RuntimeError, r"einsum\(\): expected contraction path given in path parameter to have size 2 but got 1"),
    (lambda T, d: T.ops.aten.einsum.default("i,i,i->", [_f(T, 2, device=d)] * 3, path=[1, 1, 0, 1]), RuntimeError,
     r"einsum\(\): invalid contraction \(1, 1\) cannot contract an operand with itself"),
    (lambda T, d: T.ops.aten.einsum.default("i,i,i->", [_f(T, 2, device=d)] * 3, path=[1, 3, 0, 1]), RuntimeError,
     r"einsum\(\): invalid contraction \(1, 3\) operand index is out of bounds"),
]


@pytest.mark.parametrize("build, exc, message", ERRORS, ids=[e[2][:60] for e in ERRORS])
def test_bad_inputs_raise_torch_errors(device, build, exc, message):
    with pytest.raises(exc, match=message):
        build(npusim, device)


def test_matmul_operator_takes_tensors_only():
    t = npusim.ones(2, 2)
    for bad in (lambda: t @ 2, lambda: 2 @ t, lambda: t @ 2.5):
        with pytest.raises(TypeError, match="unsupported operand type"):
            bad()


def test_vdot_out_checks_like_dot(device):
    v = make((3,), "float32", device)
    out = npusim.empty(5, device=device)
    with pytest.warns(UserWarning, match="was resized"):
        npusim.vdot(v, v, out=out)
    assert out.shape == () and out.item() == float(host(v) @ host(v))
    with pytest.raises(RuntimeError, match="result dtype Double does not match input dtype Float"):
        npusim.vdot(v, v, out=npusim.empty((), dtype=npusim.float64, device=device))


@pytest.mark.parametrize("name", ["matmul", "mm", "bmm", "dot", "mv"])
def test_non_tensor_arguments_are_refused(name):
    arg = "other" if name == "matmul" else {"mm": "mat2", "bmm": "mat2", "dot": "tensor", "mv": "vec"}[name]
    with pytest.raises(TypeError, match=rf"{name}\(\): argument '{arg}' \(position 2\) must be Tensor, not int"):
        getattr(npusim, name)(npusim.ones(2, 2), 3)
    with pytest.raises(TypeError, match=rf"{name}\(\): argument 'input' \(position 1\) must be Tensor, not list"):
        getattr(npusim, name)([1.0], npusim.ones(2))


def test_devices_must_match():
    if not (hasattr(npusim, "npu") and npusim.npu.is_available()):
        pytest.skip("no npu device to mix with the cpu")
    a, b = npusim.ones(2, 3, device="npu"), npusim.ones(3, 2)
    msg = "Expected all tensors to be on the same device, but found at least two devices"
    for fn in (npusim.matmul, npusim.mm, lambda x, y: npusim.addmm(npusim.ones(2, 2, device="npu"), x, y)):
        with pytest.raises(RuntimeError, match=msg):
            fn(a, b)
    with pytest.raises(RuntimeError, match=msg):
        npusim.dot(a[0], b[:, 0])
    with pytest.raises(RuntimeError, match="Expected out tensor to have device npu:0, but got cpu instead"):
        npusim.mm(a, b.npu(), out=npusim.empty(0))
    with pytest.raises(RuntimeError, match="dot: Expected the output and input tensors to be on the same device, "
                                           "but got the output tensor on cpu"):
        npusim.dot(a[0], a[0], out=npusim.empty(()))


# --- against PyTorch --------------------------------------------------------------------------------------------

def _both(torch, build):
    """Run ``build(lib)`` with torch and with npusim; both return a tensor or both raise."""
    results = []
    for lib in (torch, npusim):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                results.append(("ok", build(lib)))
            except Exception as e:  # noqa: BLE001 - the oracle compares whatever was raised
                results.append(("err", type(e).__name__, str(e).split("\n")[0].replace("torch.", "npusim.")))
        results[-1] += (sum("resized" in str(w.message) for w in caught),)
    return results


def _assert_same(torch, build):
    want, got = _both(torch, build)
    assert want[0] == got[0], (want, got)
    if want[0] == "err":
        assert want[1:3] == got[1:3]
        return
    assert want[-1] == got[-1], "resize warnings differ"
    t, n = want[1], got[1]
    assert str(n.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    assert tuple(n.shape) == tuple(t.shape)
    tv = t.double().numpy() if t.dtype is not torch.bool else t.numpy()
    np.testing.assert_allclose(host(n).astype(tv.dtype), tv, rtol=1e-2, atol=1e-2, equal_nan=True)


def _t(lib, shape, dtype="float32", seed=0):
    v = values(shape, dtype, seed)
    return lib.tensor(v, dtype=getattr(lib, dtype))


ORACLE_CASES = [
    lambda T: T.matmul(_t(T, (5, 2, 3)), _t(T, (3, 4), seed=1)),
    lambda T: T.matmul(_t(T, (3,)), _t(T, (2, 3, 4), seed=1)),
    lambda T: T.matmul(_t(T, (2, 1, 2, 3), "int32"), _t(T, (5, 3, 4), "int32", 1)),
    lambda T: T.matmul(_t(T, (4, 3), "uint8"), _t(T, (3,), "uint8", 1)),
    lambda T: T.matmul(_t(T, (4, 3), "bfloat16"), _t(T, (3, 2), "bfloat16", 1)),
    lambda T: T.matmul(_t(T, (3, 1, 5, 4)).transpose(0, 1), _t(T, (3,))),
    lambda T: T.matmul(_t(T, (3,)), _t(T, (3, 1, 5, 4))),
    lambda T: T.matmul(_t(T, (0, 5, 3)), _t(T, (4,))),
    lambda T: T.matmul(_t(T, (2, 3)), _t(T, (5, 2, 4))),
    lambda T: T.matmul(_t(T, (3, 2, 0)), _t(T, (3, 0, 2), "float64")),
    lambda T: T.matmul(_t(T, (3,)), _t(T, (3, 2)), out=T.empty(2)),
    lambda T: T.matmul(_t(T, (3,)), _t(T, (3, 2)), out=T.empty(1, 2)),
    lambda T: T.matmul(_t(T, (5, 2, 3)), _t(T, (3,), "float64"), out=T.empty(5, 2, dtype=T.float64)),
    lambda T: T.matmul(_t(T, (5, 2, 3)), _t(T, (3, 2), "float64"), out=T.empty(10, 2, dtype=T.float64)),
    lambda T: T.matmul(_t(T, (5, 2, 3)), _t(T, (5, 3, 2), "float64"), out=T.empty(5, 2, 2)),
    lambda T: T.mv(_t(T, (2, 3)), _t(T, (3,)), out=T.empty(3, dtype=T.float64)),
    lambda T: T.mv(_t(T, (2, 0)), _t(T, (0,)), out=T.empty(0, dtype=T.float64)),
    lambda T: T.bmm(_t(T, (1, 2, 3), "bool"), _t(T, (1, 3, 2))),
    lambda T: T.bmm(_t(T, (2, 20, 20)), _t(T, (2, 20, 20), "float64")),
    lambda T: T.bmm(_t(T, (2, 20, 20), "float64"), _t(T, (2, 20, 20))),
    lambda T: T.bmm(_t(T, (1, 2, 3)), _t(T, (1, 3, 2), "float64"), out=T.empty(1, 2, 2)),
    lambda T: T.dot(_t(T, (3,)), _t(T, (4,)), out=T.empty((), dtype=T.int64)),
    lambda T: T.addmm(_t(T, (2,), "int64"), _t(T, (2, 3), "int64"), _t(T, (3, 2), "int64"), beta=2.5, alpha=-1.5),
    lambda T: T.addmm(_t(T, (2, 2), "uint8"), _t(T, (2, 3), "uint8"), _t(T, (3, 2), "uint8"), alpha=-1),
    lambda T: T.addmm(_t(T, (2, 2), "uint8"), _t(T, (2, 3), "uint8"), _t(T, (3, 2), "uint8"), alpha=-1.5),
    lambda T: T.addmm(_t(T, (2, 2), "bool"), _t(T, (2, 0), "bool"), _t(T, (0, 2), "bool"), beta=True),
    lambda T: T.addmm(_t(T, (2, 2), "bool"), _t(T, (2, 0), "bool"), _t(T, (0, 2), "bool")),
    lambda T: T.addmm(_t(T, (2, 2), "int32"), _t(T, (2, 0), "int32"), _t(T, (0, 2), "int32"), beta=0.5),
    lambda T: T.addmm(_t(T, (2, 2)), _t(T, (2, 3)), _t(T, (3, 2)), out=T.empty(3, 3)),
    lambda T: T.addmv(T.tensor(3.0), _t(T, (2, 0)), _t(T, (0,)), beta=2),
    lambda T: T.addmv(_t(T, (1,)), _t(T, (2, 0)), _t(T, (0,)), beta=2),
    lambda T: T.addmv(T.tensor(1.0), _t(T, (2, 3)), _t(T, (4,))),
    lambda T: T.addmv(_t(T, (2,), "float16"), _t(T, (2, 3), "float16"), _t(T, (3,), "float16"), beta=0.5),
    lambda T: T.baddbmm(_t(T, (5, 8, 8)), _t(T, (8, 0)), _t(T, (5, 0, 8))),
    lambda T: T.baddbmm(_t(T, (2, 2, 2), "float16"), _t(T, (2, 2, 3), "float16"), _t(T, (2, 3, 2), "float16")),
    lambda T: T.baddbmm(_t(T, (1, 2, 2)), _t(T, (1, 2, 0)), _t(T, (1, 0, 2), "float64")),
    lambda T: T.outer(_t(T, (3,), "int32"), _t(T, (4,), "bool")),
    lambda T: T.vdot(_t(T, (3,), "int16"), _t(T, (3,), "int16", 1)),
    lambda T: T.einsum("ij,jk->k", _t(T, (2, 3), "int32"), _t(T, (3, 4), "int32")),
    lambda T: T.einsum("ij,k->i", _t(T, (2, 3), "int32"), _t(T, (4,), "int32")),
    lambda T: T.einsum("ac,aA->Ac", _t(T, (2, 3), "float64"), _t(T, (2, 1), "uint8")),
    lambda T: T.einsum("i,i->", _t(T, (1,), "bool"), _t(T, (3,), "bool")),
    lambda T: T.einsum("...ij->ij", _t(T, (5, 2, 3), "int16")),
    lambda T: T.einsum("ij,jk->ik", _t(T, (2, 0), "int32"), _t(T, (0, 4))),
    lambda T: T.einsum("ij,jk->ik", _t(T, (30, 20), "int32"), _t(T, (20, 30), "int64")),
]


@pytest.mark.oracle
@pytest.mark.parametrize("case", range(len(ORACLE_CASES)))
def test_results_and_errors_match_torch(torch, case):
    _assert_same(torch, ORACLE_CASES[case])


@pytest.mark.oracle
@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_error_table_matches_torch(torch, case):
    """Every error above is torch's own (``npusim.`` stands for ``torch.`` in messages)."""
    build = ERRORS[case][0]
    _assert_same(torch, lambda T: build(T, "cpu"))


@pytest.mark.oracle
def test_einsum_matches_torch_on_many_equations(torch):
    """A random sweep of equations, shapes and dtypes: values, dtypes and errors as torch's."""
    rng = np.random.default_rng(11)
    letters = "abAB"
    dtypes = ["int32", "int64", "bool", "float32", "float64", "uint8"]
    for _ in range(150):
        n = int(rng.integers(1, 4))
        sizes = {c: int(rng.integers(1, 4)) for c in letters}
        subs = ["".join(rng.choice(list(letters), int(rng.integers(0, 3)))) for _ in range(n)]
        shapes = [tuple(sizes[c] if rng.random() < 0.85 else 1 for c in s) for s in subs]
        eq = ",".join(subs)
        if rng.random() < 0.6:
            seen = sorted(set("".join(subs)))
            eq += "->" + "".join(c for c in seen if rng.random() < 0.5)
        dts = [str(rng.choice(dtypes))] * n if rng.random() < 0.6 else [str(rng.choice(dtypes)) for _ in range(n)]
        _assert_same(torch, lambda T: T.einsum(eq, *[_t(T, s, d, i) for i, (s, d) in enumerate(zip(shapes, dts))]))
