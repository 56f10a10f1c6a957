"""Gradients of every differentiable op, against PyTorch (oracle) and against finite differences.

Each case is a function of the library module (``npusim`` or ``torch``), a maker
of non-differentiable tensors (indices, masks) on the right device, and the
differentiable inputs. The oracle tests run the case in both libraries with the
same inputs and the same output gradient and compare every input gradient
(values, shape, dtype) on cpu and npu, in float32 and float64. The
finite-difference tests need no torch: ``gradcheck`` in float64 on every device.
"""
from __future__ import annotations

import warnings
import zlib
from dataclasses import dataclass, field

import numpy as np
import pytest

import npusim
from conftest import host


@dataclass
class Case:
    name: str
    fn: object                         # fn(m, mk, *inputs) -> tensor
    shapes: list                       # one entry per differentiable input: a shape, or (domain, shape)
    fd: bool = True                    # also check against finite differences
    values: list = field(default=None)  # fixed input values instead of random ones


class Maker:
    """Non-differentiable tensors (indices, masks) for one library and device."""

    def __init__(self, m, device):
        self.m, self.device = m, device

    def long(self, data):
        return self.m.tensor(data, dtype=self.m.int64, device=self.device)

    def mask(self, data):
        return self.m.tensor(data, dtype=self.m.bool, device=self.device)


def _domain(spec, rng):
    kind, shape = spec if spec and isinstance(spec[0], str) else ("any", spec)
    if kind == "pos":
        return rng.uniform(0.5, 2.0, size=shape)
    if kind == "unit":
        return rng.uniform(-0.8, 0.8, size=shape)
    if kind == "away":   # no value near an integer multiple (floor/trunc quotients stay put)
        return rng.choice([-1, 1], size=shape) * rng.uniform(1.2, 1.8, size=shape)
    return rng.standard_normal(size=shape)


def _first(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def _sum_of(m, out):
    """A scalar that depends on every output with a fixed random weighting."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    total = None
    for k, o in enumerate(outs):
        if not o.is_floating_point():
            continue
        w = np.cos(np.arange(o.numel()).reshape(tuple(o.shape)) * 0.7 + k)
        wt = m.tensor(w, dtype=o.dtype, device=o.device)
        term = (o * wt).sum()
        total = term if total is None else total + term
    return total


CASES = [
    # --- arithmetic ------------------------------------------------------------------------------
    Case("add", lambda m, mk, a, b: m.add(a, b, alpha=2), [(2, 3), (3,)]),
    Case("add_scalar", lambda m, mk, a: a + 1.5, [(2, 3)]),
    Case("sub", lambda m, mk, a, b: m.sub(a, b, alpha=3), [(2, 3), (2, 1)]),
    Case("rsub", lambda m, mk, a: 2.0 - a, [(3,)]),
    Case("mul", lambda m, mk, a, b: a * b, [(2, 3), (2, 3)]),
    Case("div", lambda m, mk, a, b: a / b, [(2, 3), ("pos", (3,))]),
    Case("div_floor", lambda m, mk, a, b: m.div(a, b, rounding_mode="floor"), [(2, 3), ("pos", (3,))], fd=False),
    Case("pow_scalar", lambda m, mk, a: a ** 3, [(2, 3)]),
    Case("pow_tensor", lambda m, mk, a, b: a ** b, [("pos", (2, 3)), (2, 3)]),
    Case("pow_base", lambda m, mk, b: 2.0 ** b, [(4,)]),
    Case("remainder", lambda m, mk, a, b: m.remainder(a, b), [("away", (4,)), ("away", (4,))], fd=False),
    Case("fmod", lambda m, mk, a, b: m.fmod(a, b), [("away", (4,)), ("away", (4,))], fd=False),
    Case("remainder_scalar", lambda m, mk, a: m.remainder(a, 0.7), [("away", (4,))], fd=False),
    Case("neg", lambda m, mk, a: -a, [(3,)]),
    Case("abs", lambda m, mk, a: m.abs(a), [(3, 2)]),
    Case("maximum", lambda m, mk, a, b: m.maximum(a, b), [(3, 2), (2,)]),
    Case("minimum", lambda m, mk, a, b: m.minimum(a, b), [(3, 2), (3, 2)]),
    Case("max_min_ties", lambda m, mk, a, b: m.maximum(a, b) + m.minimum(a, b) * 2, [(4,), (4,)], fd=False,
         values=[[1.0, 2.0, 3.0, 4.0], [1.0, 0.0, 3.0, 5.0]]),
    Case("atan2", lambda m, mk, a, b: m.atan2(a, b), [(3,), ("pos", (3,))]),
    Case("lerp_scalar", lambda m, mk, a, b: m.lerp(a, b, 0.3), [(3,), (3,)]),
    Case("lerp_tensor", lambda m, mk, a, b, w: m.lerp(a, b, w), [(3,), (3,), (3,)]),
    Case("where", lambda m, mk, a, b: m.where(mk.mask([True, False, True]), a, b), [(2, 3), (3,)]),
    Case("where_scalar", lambda m, mk, a: m.where(mk.mask([True, False, True]), a, 0.5), [(3,)]),
    # --- clamps ----------------------------------------------------------------------------------------
    Case("clamp", lambda m, mk, a: m.clamp(a, -0.5, 0.5), [(6,)], values=[[-1.0, -0.5, 0.0, 0.3, 0.5, 2.0]],
         fd=False),
    Case("clamp_tensor", lambda m, mk, a, lo, hi: m.clamp(a, lo, hi), [(4,), (4,), (4,)], fd=False,
         values=[[-1.0, 0.5, 2.0, 3.0], [0.0, 0.5, 0.0, 4.0], [1.0, 1.0, 1.0, 2.0]]),
    Case("clamp_min", lambda m, mk, a: m.clamp_min(a, 0.1), [(5,)]),
    Case("clamp_max", lambda m, mk, a: m.clamp_max(a, 0.1), [(5,)]),
    Case("clamp_min_tensor", lambda m, mk, a, b: m.clamp_min(a, b), [(4,), (4,)], fd=False,
         values=[[1.0, 2.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]]),
    Case("clamp_max_tensor", lambda m, mk, a, b: m.clamp_max(a, b), [(4,), (4,)], fd=False,
         values=[[1.0, 2.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]]),
    Case("masked_fill", lambda m, mk, a: a.masked_fill(mk.mask([[True, False], [False, True]]), 2.0), [(2, 2)]),
    Case("masked_fill_tensor", lambda m, mk, a, v: a.masked_fill(mk.mask([True, False, True]), v), [(3,), ()]),
    Case("nan_to_num", lambda m, mk, a: m.nan_to_num(a), [(4,)]),
    Case("relu", lambda m, mk, a: m.relu(a), [(5,)]),
    # --- unary functions -------------------------------------------------------------------------------
    *[Case(f, (lambda f: lambda m, mk, a: getattr(m, f)(a))(f), [(2, 3)]) for f in
      ["exp", "exp2", "expm1", "tanh", "sigmoid", "sin", "cos", "tan", "sinh", "cosh", "atan", "erf", "square"]],
    *[Case(f, (lambda f: lambda m, mk, a: getattr(m, f)(a))(f), [("pos", (2, 3))]) for f in
      ["log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal"]],
    *[Case(f, (lambda f: lambda m, mk, a: getattr(m, f)(a))(f), [("unit", (2, 3))]) for f in ["asin", "acos"]],
    *[Case(f, (lambda f: lambda m, mk, a: getattr(m, f)(a))(f), [(2, 3)], fd=False) for f in
      ["floor", "ceil", "round", "trunc", "sign", "sgn"]],
    # --- reductions ----------------------------------------------------------------------------------------
    Case("sum", lambda m, mk, a: a.sum(), [(2, 3)]),
    Case("sum_dim", lambda m, mk, a: a.sum((0, 2), keepdim=True), [(2, 3, 2)]),
    Case("mean", lambda m, mk, a: a.mean(), [(2, 3)]),
    Case("mean_dim", lambda m, mk, a: a.mean(-1), [(2, 3)]),
    Case("prod", lambda m, mk, a: a.prod(), [(2, 3)]),
    Case("prod_zero", lambda m, mk, a: a.prod(), [(4,)], values=[[2.0, 0.0, 3.0, 4.0]]),
    Case("prod_dim", lambda m, mk, a: a.prod(1), [(3, 3)], values=[[[1.0, 2.0, 3.0], [0.0, 2.0, 3.0],
                                                                      [0.0, 0.0, 2.0]]]),
    Case("max_all", lambda m, mk, a: a.max(), [(2, 3)]),
    Case("max_all_ties", lambda m, mk, a: a.max() + a.min(), [(4,)], values=[[3.0, 1.0, 3.0, 1.0]], fd=False),
    Case("max_dim", lambda m, mk, a: a.max(1)[0], [(3, 4)]),
    Case("min_dim_keep", lambda m, mk, a: a.min(0, keepdim=True)[0], [(3, 4)]),
    Case("amax", lambda m, mk, a: m.amax(a, (0, 1)), [(2, 3, 2)]),
    Case("amin_ties", lambda m, mk, a: m.amin(a, 1), [(2, 3)], values=[[[1.0, 1.0, 2.0], [0.0, 3.0, 0.0]]],
         fd=False),
    Case("var", lambda m, mk, a: a.var(1), [(3, 4)]),
    Case("std", lambda m, mk, a: a.std(), [(3, 4)]),
    Case("var_correction0", lambda m, mk, a: m.var(a, 0, correction=0, keepdim=True), [(3, 4)]),
    Case("var_mean", lambda m, mk, a: m.var_mean(a, 1), [(3, 4)]),
    Case("std_mean", lambda m, mk, a: m.std_mean(a, 0, keepdim=True), [(3, 4)]),
    Case("std_mean_var_only", lambda m, mk, a: m.std_mean(a)[0], [(3, 4)]),
    Case("norm2", lambda m, mk, a: a.norm(), [(2, 3)]),
    Case("norm1_dim", lambda m, mk, a: a.norm(1, 1), [(2, 3)]),
    Case("norm3", lambda m, mk, a: a.norm(3), [(2, 3)]),
    Case("norm_inf", lambda m, mk, a: a.norm(float("inf")), [(2, 3)]),
    Case("logsumexp", lambda m, mk, a: m.logsumexp(a, 1), [(2, 3)]),
    Case("cumsum", lambda m, mk, a: m.cumsum(a, 1), [(2, 4)]),
    Case("cumprod", lambda m, mk, a: m.cumprod(a, 1), [(2, 4)]),
    Case("cumprod_zeros", lambda m, mk, a: m.cumprod(a, 0), [(5,)], values=[[2.0, 0.0, 3.0, 0.0, 4.0]]),
    Case("cumprod_one_zero", lambda m, mk, a: m.cumprod(a, 1), [(2, 4)],
         values=[[[1.5, 0.0, 3.0, 2.0], [0.5, 2.0, -1.0, 0.0]]]),
    Case("softmax", lambda m, mk, a: m.softmax(a, 1), [(2, 4)]),
    Case("log_softmax", lambda m, mk, a: m.log_softmax(a, 0), [(2, 4)]),
    # --- matrix products ------------------------------------------------------------------------------------------
    Case("matmul_2d", lambda m, mk, a, b: a @ b, [(2, 3), (3, 4)]),
    Case("matmul_batched_broadcast", lambda m, mk, a, b: a @ b, [(2, 2, 3), (3, 4)]),
    Case("matmul_vec", lambda m, mk, a, b: m.matmul(a, b), [(3,), (2, 3, 4)]),
    Case("matmul_dot", lambda m, mk, a, b: m.matmul(a, b), [(3,), (3,)]),
    Case("mm", lambda m, mk, a, b: m.mm(a, b), [(2, 3), (3, 2)]),
    Case("bmm", lambda m, mk, a, b: m.bmm(a, b), [(2, 2, 3), (2, 3, 2)]),
    Case("addmm", lambda m, mk, c, a, b: m.addmm(c, a, b, beta=0.5, alpha=2), [(2,), (2, 3), (3, 2)]),
    Case("dot", lambda m, mk, a, b: m.dot(a, b), [(3,), (3,)]),
    Case("vdot", lambda m, mk, a, b: m.vdot(a, b), [(3,), (3,)]),
    Case("mv", lambda m, mk, a, b: m.mv(a, b), [(2, 3), (3,)]),
    Case("outer", lambda m, mk, a, b: m.outer(a, b), [(2,), (3,)]),
    Case("addmv", lambda m, mk, c, a, b: m.addmv(c, a, b, beta=2, alpha=0.5), [(2,), (2, 3), (3,)]),
    Case("baddbmm", lambda m, mk, c, a, b: m.baddbmm(c, a, b, alpha=0.5), [(2, 2, 2), (2, 2, 3), (2, 3, 2)]),
    Case("einsum_mm", lambda m, mk, a, b: m.einsum("ij,jk->ik", a, b), [(2, 3), (3, 4)]),
    Case("einsum_trace", lambda m, mk, a: m.einsum("ii", a), [(3, 3)]),
    Case("einsum_diag", lambda m, mk, a: m.einsum("ii->i", a), [(3, 3)]),
    Case("einsum_sum_lonely", lambda m, mk, a, b: m.einsum("ij,k->ik", a, b), [(2, 3), (4,)]),
    Case("einsum_ellipsis", lambda m, mk, a, b: m.einsum("...ij,...jk->...ik", a, b), [(2, 2, 3), (1, 3, 2)]),
    Case("einsum_implicit", lambda m, mk, a, b: m.einsum("ij,jk", a, b), [(2, 3), (3, 2)]),
    Case("einsum_three", lambda m, mk, a, b, c: m.einsum("i,ij,j->", a, b, c), [(2,), (2, 3), (3,)]),
    # --- joining and splitting ------------------------------------------------------------------------------------
    Case("cat", lambda m, mk, a, b: m.cat([a, b], 1), [(2, 1), (2, 3)]),
    Case("stack", lambda m, mk, a, b: m.stack([a, b], -1), [(2, 3), (2, 3)]),
    Case("split", lambda m, mk, a: m.split(a, 2, 1)[1] * 3, [(2, 5)]),
    Case("split_sizes", lambda m, mk, a: a.split([1, 3], 1), [(2, 4)]),
    Case("chunk_one_used", lambda m, mk, a: a.chunk(3)[2], [(6, 2)]),
    Case("unbind", lambda m, mk, a: m.unbind(a, 1)[0] * m.unbind(a, 1)[2], [(2, 3)]),
    # --- indexing and scattering ----------------------------------------------------------------------------------
    Case("gather", lambda m, mk, a: m.gather(a, 1, mk.long([[0, 0, 2], [1, 0, 1]])), [(2, 3)]),
    Case("scatter_src", lambda m, mk, a, s: m.scatter(a, 1, mk.long([[0, 2], [1, 0]]), s), [(2, 3), (2, 2)]),
    Case("scatter_value", lambda m, mk, a: m.scatter(a, 0, mk.long([[1, 0, 1]]), 2.5), [(2, 3)]),
    Case("scatter_add", lambda m, mk, a, s: m.scatter_add(a, 1, mk.long([[0, 0], [2, 0]]), s), [(2, 3), (2, 2)]),
    Case("index_select", lambda m, mk, a: m.index_select(a, 1, mk.long([2, 0, 2])), [(2, 3)]),
    Case("index_select_neg_dim", lambda m, mk, a: m.index_select(a, -2, mk.long([1, 1])), [(2, 3)]),
    Case("masked_select", lambda m, mk, a: m.masked_select(a, mk.mask([True, False, True])), [(2, 3)]),
    Case("masked_select_broadcast_self", lambda m, mk, a: m.masked_select(a, mk.mask([[True, False], [True, True]])),
         [(2,)]),
    Case("index_tensor", lambda m, mk, a: a[mk.long([0, 2, 0])], [(3, 2)]),
    Case("index_two", lambda m, mk, a: a[mk.long([0, 1]), :, mk.long([1, 1])], [(2, 3, 2)]),
    Case("index_mask", lambda m, mk, a: a[mk.mask([[True, False], [False, True]])], [(2, 2)]),
    Case("index_put", lambda m, mk, a, v: m.index_put(a, (mk.long([0, 2]),), v), [(3, 2), (2, 2)]),
    Case("index_put_broadcast", lambda m, mk, a, v: m.index_put(a, (mk.long([0, 2]),), v), [(3, 2), (2,)]),
    Case("index_put_accumulate", lambda m, mk, a, v: m.index_put(a, (mk.long([1, 1]),), v, accumulate=True),
         [(3,), (2,)]),
    Case("setitem", lambda m, mk, a, v: _setitem(a, v), [(3, 4), (4,)]),
    Case("sort", lambda m, mk, a: m.sort(a, 1)[0], [(2, 4)]),
    Case("sort_descending", lambda m, mk, a: m.sort(a, 0, descending=True).values, [(3, 2)]),
    Case("topk", lambda m, mk, a: m.topk(a, 2)[0], [(2, 4)]),
    Case("topk_smallest", lambda m, mk, a: m.topk(a, 2, dim=0, largest=False).values, [(4, 2)]),
    Case("flip", lambda m, mk, a: m.flip(a, (0, 1)), [(2, 3)]),
    Case("roll", lambda m, mk, a: m.roll(a, (1, -1), (0, 1)), [(2, 3)]),
    Case("roll_flat", lambda m, mk, a: m.roll(a, 2), [(2, 3)]),
    Case("tril", lambda m, mk, a: m.tril(a, -1), [(3, 3)]),
    Case("triu", lambda m, mk, a: m.triu(a, 1), [(3, 4)]),
    Case("repeat", lambda m, mk, a: a.repeat(2, 1, 3), [(2, 2)]),
    Case("tile", lambda m, mk, a: m.tile(a, (2,)), [(2, 3)]),
    Case("repeat_interleave", lambda m, mk, a: m.repeat_interleave(a, 2, dim=1), [(2, 3)]),
    Case("repeat_interleave_flat", lambda m, mk, a: m.repeat_interleave(a, 3), [(2, 2)]),
    Case("repeat_interleave_tensor", lambda m, mk, a: m.repeat_interleave(a, mk.long([1, 0, 3]), dim=0), [(3, 2)]),
    # --- views and copies ------------------------------------------------------------------------------------------
    Case("view", lambda m, mk, a: a.view(3, 2) * 2, [(2, 3)]),
    Case("reshape_noncontig", lambda m, mk, a: a.t().reshape(-1), [(2, 3)]),
    Case("permute", lambda m, mk, a: a.permute(2, 0, 1), [(2, 3, 2)]),
    Case("transpose", lambda m, mk, a: a.transpose(0, 1), [(2, 3)]),
    Case("expand", lambda m, mk, a: a.expand(2, 3, 3), [(3, 1)]),
    Case("squeeze_unsqueeze", lambda m, mk, a: a.squeeze(1).unsqueeze(0), [(2, 1, 3)]),
    Case("flatten_unflatten", lambda m, mk, a: a.flatten().unflatten(0, (3, 2)), [(2, 3)]),
    Case("narrow_select_slice", lambda m, mk, a: a.narrow(1, 1, 2)[1] + a[:, ::2].sum(1), [(2, 4)]),
    Case("diagonal", lambda m, mk, a: m.diagonal(a, 1), [(3, 4)]),
    Case("as_strided", lambda m, mk, a: m.as_strided(a, (2, 2), (1, 2), 1), [(6,)]),
    Case("as_strided_overlap", lambda m, mk, a: m.as_strided(a, (3, 2), (1, 1)), [(4,)]),
    Case("clone_contiguous", lambda m, mk, a: a.t().contiguous().clone() * 2, [(2, 3)]),
    Case("to_dtype", lambda m, mk, a: a.to(m.float64 if a.dtype is m.float32 else m.float32) * 2, [(3,)],
         fd=False),
]


def _setitem(a, v):
    b = a * 1
    b[1] = v
    b[:, 0] = 7.0
    return b


CASE_IDS = [c.name for c in CASES]
FD_CASES = [c for c in CASES if c.fd]


def _inputs(case, m, dtype, device, seed):
    rng = np.random.default_rng(seed)
    arrays = [np.asarray(v, dtype=np.float64) for v in case.values] if case.values is not None else \
        [_domain(s, rng) for s in case.shapes]
    return [m.tensor(a, dtype=dtype, device=device).requires_grad_() for a in arrays]


def _run(case, m, dtype, device):
    xs = _inputs(case, m, dtype, device, seed=zlib.crc32(case.name.encode()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the npu's CPU fallback announces itself once per op
        out = case.fn(m, Maker(m, device), *xs)
        _sum_of(m, out).backward()
    return out, xs


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_gradients_match_torch(case, dtype, device, torch):
    out, xs = _run(case, npusim, getattr(npusim, dtype), device)
    t_out, t_xs = _run(case, torch, getattr(torch, dtype), "cpu")
    out, t_out = _first(out), _first(t_out)
    assert tuple(out.shape) == tuple(t_out.shape)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(host(out), t_out.detach().numpy(), **tol)
    for k, (x, tx) in enumerate(zip(xs, t_xs)):
        if tx.grad is None:
            assert x.grad is None, f"input {k} should get no gradient"
            continue
        assert x.grad is not None, f"input {k} got no gradient"
        assert x.grad.dtype is x.dtype and x.grad.device == x.device
        assert tuple(x.grad.shape) == tuple(tx.grad.shape)
        np.testing.assert_allclose(host(x.grad), tx.grad.numpy(force=True), **tol, err_msg=f"input {k}")


@pytest.mark.parametrize("case", FD_CASES, ids=[c.name for c in FD_CASES])
def test_gradients_match_finite_differences(case, device):
    xs = _inputs(case, npusim, npusim.float64, device, seed=7)
    mk = Maker(npusim, device)

    def f(*inputs):
        return _sum_of(npusim, case.fn(npusim, mk, *inputs))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert npusim.autograd.gradcheck(f, xs, eps=1e-6, atol=1e-6, rtol=1e-4)


SECOND_ORDER = ["mul", "div", "exp", "tanh", "sigmoid", "log", "sqrt", "pow_tensor", "sum_dim", "mean", "prod",
                "var", "norm2", "logsumexp", "softmax", "log_softmax", "matmul_batched_broadcast", "einsum_mm",
                "cat", "gather", "index_select", "index_tensor", "narrow_select_slice", "setitem", "sort",
                "cumsum", "repeat", "expand", "scatter_add", "masked_select"]


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_derivatives_match_finite_differences(name, device):
    case = next(c for c in CASES if c.name == name)
    xs = _inputs(case, npusim, npusim.float64, device, seed=3)
    mk = Maker(npusim, device)

    def f(*inputs):
        return _sum_of(npusim, case.fn(npusim, mk, *inputs))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert npusim.autograd.gradgradcheck(f, xs, atol=1e-5, rtol=1e-3)


@pytest.mark.oracle
@pytest.mark.parametrize("name", ["exp", "mul", "matmul_2d", "gather", "sort", "cumprod", "einsum_mm", "setitem"])
def test_second_derivatives_match_torch(name, device, torch):
    case = next(c for c in CASES if c.name == name)

    def second(m, dev):
        xs = _inputs(case, m, m.float64, dev, seed=11)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = _sum_of(m, case.fn(m, Maker(m, dev), *xs))
            grads = m.autograd.grad(y, xs, create_graph=True)
            total = sum((g * g).sum() for g in grads if g is not None and g.requires_grad)
            if not isinstance(total, int):
                total.backward()
        return [x.grad for x in xs]

    for g, tg in zip(second(npusim, device), second(torch, "cpu")):
        if tg is None:
            assert g is None
        else:
            np.testing.assert_allclose(host(g), tg.numpy(), rtol=1e-9, atol=1e-11)


# --- ops torch refuses to differentiate ---------------------------------------------------------------------

@pytest.mark.oracle
@pytest.mark.parametrize("fn", [
    lambda m, x: m.unique(x),
    lambda m, x: m.unique_consecutive(x),
    lambda m, x: m.floor_divide(x, 2),
    lambda m, x: m.remainder(5.0, x),
], ids=["unique", "unique_consecutive", "floor_divide", "remainder_scalar_self"])
def test_not_implemented_derivatives_raise_like_torch(fn, device, torch):
    x = npusim.tensor([3.0, 1.0, 2.0, 1.0], device=device, requires_grad=True)
    tx = torch.tensor([3.0, 1.0, 2.0, 1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = fn(npusim, x)
    ty = fn(torch, tx)
    assert y.requires_grad and ty.requires_grad
    with pytest.raises(Exception) as t_err:
        ty.sum().backward()
    with pytest.raises(type(t_err.value), match=_escape(str(t_err.value))):
        y.sum().backward()


def _escape(msg):
    import re
    return re.escape(msg.replace("torch::", "npusim::"))


@pytest.mark.oracle
def test_scatter_with_reduce_is_not_differentiable(device, torch):
    x = npusim.zeros(3, device=device, requires_grad=True)
    idx = npusim.tensor([0, 1], device=device)
    y = npusim.scatter(x, 0, idx, npusim.ones(2, device=device), reduce="add")
    assert y.grad_fn.name() == "npusim::autograd::NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::scatter is not implemented"):
        y.sum().backward()


def test_non_differentiable_outputs_do_not_require_grad(device):
    x = npusim.tensor([3.0, 1.0, 2.0], device=device, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        values, indices = npusim.sort(x)
        top = npusim.topk(x, 2)
    assert values.requires_grad and not indices.requires_grad
    assert top.values.requires_grad and not top.indices.requires_grad
    assert not x.argmax().requires_grad
    assert not (x > 1).requires_grad
    assert not npusim.zeros_like(x).requires_grad
    assert not x.max(0).indices.requires_grad


@pytest.mark.oracle
@pytest.mark.parametrize("fn", [
    lambda m, x: m.sort(x, 0, out=(m.empty(3), m.empty(3, dtype=m.int64))),
    lambda m, x: m.max(x.view(1, 3), 1, out=(m.empty(1), m.empty(1, dtype=m.int64))),
    lambda m, x: m.add(x, 1, out=m.empty(3)),
    lambda m, x: m.topk(x, 2, out=(m.empty(2), m.empty(2, dtype=m.int64))),
], ids=["sort", "max", "add", "topk"])
def test_out_arguments_refuse_autograd(fn, torch):
    with pytest.raises(RuntimeError) as t_err:
        fn(torch, torch.ones(3, requires_grad=True))
    with pytest.raises(RuntimeError, match=_escape(str(t_err.value))):
        fn(npusim, npusim.ones(3, requires_grad=True))
    with npusim.no_grad():
        fn(npusim, npusim.ones(3, requires_grad=True))


HALF_CASES = ["add", "mul", "div", "exp", "tanh", "sum_dim", "mean", "max_dim", "softmax", "matmul_2d", "gather",
              "index_tensor", "cat", "setitem", "sort", "where", "expand"]


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", HALF_CASES)
def test_reduced_precision_gradients_match_torch(name, dtype, device, torch):
    case = next(c for c in CASES if c.name == name)
    out, xs = _run(case, npusim, getattr(npusim, dtype), device)
    t_out, t_xs = _run(case, torch, getattr(torch, dtype), "cpu")
    for k, (x, tx) in enumerate(zip(xs, t_xs)):
        assert x.grad.dtype is x.dtype and tuple(x.grad.shape) == tuple(tx.grad.shape)
        np.testing.assert_allclose(host(x.grad), tx.grad.float().numpy(), rtol=2e-2, atol=2e-2, err_msg=f"input {k}")
