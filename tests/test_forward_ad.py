"""npusim.autograd.forward_ad: dual levels, make_dual / unpack_dual, tangents through ops, custom Functions' jvp.

Torch-free checks compare tangents with central finite differences; ``oracle`` tests compare values, semantics
and error messages with torch.autograd.forward_ad.
"""
from __future__ import annotations

import numpy as np
import pytest

import npusim
import npusim.autograd.forward_ad as fwAD
import npusim.nn.functional as nnF
from npusim.core.autograd import forward_mode
from conftest import host

RNG = np.random.default_rng(7)
X34 = RNG.uniform(0.2, 1.5, (3, 4)) * RNG.choice([-1.0, 1.0], (3, 4))   # away from relu's kink at 0
T34 = RNG.standard_normal((3, 4))
W43 = RNG.standard_normal((4, 3))
W_CONV = RNG.standard_normal((2, 3, 2))
B2 = RNG.standard_normal(2)
LN_W, LN_B = RNG.standard_normal(4), RNG.standard_normal(4)


def _cases(lib):
    """Functions of one (3, 4) float64 tensor, written against ``lib`` (npusim or torch), and their names."""
    F = lib.nn.functional

    def const(a, like):
        return lib.tensor(a, dtype=lib.float64, device=like.device)

    return {
        "add": lambda v: v + 2 * v - 1.5,
        "sub_rsub": lambda v: 3 - v - v.t().t(),
        "mul": lambda v: v * v * 3,
        "div": lambda v: v / (v.abs() + 2) + 1 / (v * v + 1),
        "pow": lambda v: v ** 3 + v.abs() ** 0.5,
        "neg_exp_log": lambda v: -(v.exp() + (v.abs() + 1).log()),
        "sin_cos_sqrt": lambda v: v.sin() * v.cos() + (v * v + 1).sqrt(),
        "tanh_sigmoid": lambda v: lib.tanh(v) + lib.sigmoid(2 * v),
        "relu_gelu": lambda v: F.relu(v) + F.gelu(v) + F.gelu(v, approximate="tanh") + F.selu(v),
        "softmax": lambda v: F.softmax(v, 1) + F.log_softmax(v, 0),
        "matmul": lambda v: v @ const(W43, v) + lib.mm(v, v.t()).sum(0, keepdim=True).t(),
        "bmm_linear": lambda v: lib.bmm(v.unsqueeze(0), const(W43, v).unsqueeze(0)).squeeze(0)
        + F.linear(v, v, v[0, :3]),
        "sum_mean": lambda v: v.sum() + v.mean(1).sum() + v.sum((0,), keepdim=True).mean(),
        "views": lambda v: v.t().reshape(-1)[2:9].view(7, 1).expand(7, 2).permute(1, 0).select(0, 1),
        "cat_stack": lambda v: lib.cat([v, 2 * v], 0).sum(0) + lib.stack([v, v.sin()], 1).sum((0, 1)),
        "conv": lambda v: F.conv1d(v.unsqueeze(0), const(W_CONV, v), const(B2, v))
        + F.conv1d(const(X34, v).unsqueeze(0), v[:2, :2].unsqueeze(1).expand(2, 3, 2) * 1.0, v[2, :2]),
        "layer_norm": lambda v: F.layer_norm(v, (4,), const(LN_W, v), const(LN_B, v))
        + F.layer_norm(v, (3, 4), v.cos(), v.sin()) + F.layer_norm(v, (4,), None, v[0]),
        "more_math": lambda v: v.abs() + v.abs().log1p() + (v.abs() + 1).log2() + v.abs().log10() + v.expm1()
        + v.exp2() + v.square() + (v * v + 1).rsqrt() + (v + 3).reciprocal() + (v / 3).tan() + v.sinh() + v.cosh()
        + (v / 2).asin() + (v / 2).acos() + v.atan() + v.erf() + F.silu(v),
        "nn_ops": lambda v: _nn_ops(lib, v.view(1, 3, 2, 2).expand(2, 3, 2, 2).reshape(2, 3, 4, 1) * v.view(1, 3, 1, 4)),
        # torch's forward AD refuses its CPU flash-attention kernel; npusim's generic rule covers attention
        "attention": lambda v: F.scaled_dot_product_attention(v.view(1, 3, 4), v.view(1, 3, 4).exp(), v.view(1, 3, 4),
                                                              is_causal=True),
        "svdvals_eigvalsh": lambda v: lib.linalg.svdvals(v) * 2
        + lib.linalg.eigvalsh(v[:, :3] @ v[:, :3].t() + v[:, 1:] @ v[:, 1:].t()),
        "select_cast": lambda v: lib.where(v > 0, v, 2 * v) + lib.where(v < 0, v.exp(), const(X34, v))
        + v.masked_fill(v > 1, 0.5) + v.clone() * 2,
        "generic_rule": lambda v: v.std(0) + v.cumsum(1).sum(0) + v.max(1)[0].sum() + lib.where(v > 0, v, v * v).sum(0)
        + v.norm() + v[[0, 2]].sum(0) + v.logsumexp(1).sum(),
    }


def _nn_ops(lib, v):
    """Pools, interpolation, norms, losses, attention and indexing on a (2, 3, 4, 4) tensor: a (2, 3, 4, 4) result."""
    F = lib.nn.functional
    target = lib.linspace(-1, 1, 96, dtype=lib.float64, device=v.device).view(2, 3, 4, 4)
    r = F.interpolate(F.max_pool2d(v, 2), scale_factor=2, mode="bilinear") + F.avg_pool2d(F.pad(v, (1, 1, 1, 1),
                                                                                              mode="reflect"), 3, 1)
    r = r + F.group_norm(v, 3) + F.batch_norm(v, None, None, training=True)
    losses = F.mse_loss(v, target) + F.smooth_l1_loss(v, target) + F.binary_cross_entropy_with_logits(v, target.sigmoid())
    losses = losses + F.cross_entropy(v.flatten(2), lib.arange(2 * 16, device=v.device).view(2, 16) % 3)
    picked = v.gather(3, lib.zeros(2, 3, 4, 1, dtype=lib.int64, device=v.device)) + v.sort(3)[0] + v.cumprod(2)
    return r + losses + picked + F.unfold(v, 1).view(2, 3, 4, 4)


CASES = sorted(_cases(npusim))


def _jvp(fn, x, t):
    with fwAD.dual_level():
        out = fn(fwAD.make_dual(x, t))
        primal, tangent = fwAD.unpack_dual(out)
    return primal, tangent


# --- tangents against finite differences (torch-free) -----------------------------------------------------------

@pytest.mark.parametrize("name", CASES)
def test_jvp_matches_finite_differences(device, name):
    """Central differences in float64 with step h: truncation error <= h^2/6 * max|f'''| |t|^3 (about 1e-11 here:
    h = 1e-6, third derivatives below 1e2 on these inputs, |t| < 4), rounding error <= 2 * eps * max|f| / h
    (eps = 2.2e-16). The tolerance is ten times their sum."""
    fn = _cases(npusim)[name]
    x = npusim.tensor(X34, dtype=npusim.float64, device=device)
    t = npusim.tensor(T34, dtype=npusim.float64, device=device)
    primal, tangent = _jvp(fn, x, t)
    # the primal is the op's value; cuda mode may round a fused kernel one ulp apart from the unfused one
    np.testing.assert_allclose(host(primal), host(fn(x)), rtol=1e-15, atol=1e-15)
    h = 1e-6
    hi, lo = host(fn(x + h * t)), host(fn(x - h * t))
    fd = (hi - lo) / (2 * h)
    bound = 1e2 * h ** 2 / 6 * 4 ** 3 + 2 * 2.2e-16 * max(np.abs(hi).max(), np.abs(lo).max(), 1) / h
    assert tangent.device == x.device and tangent.dtype == npusim.float64
    np.testing.assert_allclose(host(tangent), fd, rtol=0, atol=10 * bound)


def test_direct_formulas_agree_with_the_generic_rule(device, monkeypatch):
    """The direct formulas and the JVP of the reverse formula (the rule every other op uses) give one tangent."""
    x = npusim.tensor(X34, dtype=npusim.float64, device=device)
    t = npusim.tensor(T34, dtype=npusim.float64, device=device)
    cases = _cases(npusim)
    direct = {name: _jvp(cases[name], x, t)[1] for name in CASES}
    monkeypatch.setattr(forward_mode, "_FORMULAS", {})
    for name in CASES:
        np.testing.assert_allclose(host(_jvp(cases[name], x, t)[1]), host(direct[name]), rtol=1e-12, atol=1e-12,
                                   err_msg=name)


def test_float32_tangents_and_mixed_dtypes(device):
    x = npusim.tensor(X34, dtype=npusim.float32, device=device)
    t = npusim.tensor(T34, dtype=npusim.float64, device=device)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        assert fwAD.unpack_dual(d).tangent is t   # kept as given, as torch does
        out, tangent = fwAD.unpack_dual(d.exp())
        cast = fwAD.unpack_dual((d * 2).double()).tangent   # a cast casts the tangent
    assert out.dtype == npusim.float32 and tangent.dtype == npusim.float32
    np.testing.assert_allclose(host(tangent), np.exp(X34) * T34, rtol=1e-6)
    assert cast.dtype == npusim.float64
    np.testing.assert_allclose(host(cast), 2 * T34.astype(np.float32), rtol=1e-7)


# --- levels, make_dual, unpack_dual ------------------------------------------------------------------------------

def test_levels_and_their_errors(device):
    x = npusim.ones(3, device=device)
    with pytest.raises(RuntimeError, match="no level exists, make sure to enter_dual_level"):
        fwAD.make_dual(x, x)
    assert fwAD.unpack_dual(x) == (x, None)   # no level: the tensor itself
    with fwAD.dual_level() as level:
        assert level == 0
        with pytest.raises(RuntimeError, match="^Nested forward mode AD is not supported at the moment$"):
            fwAD.enter_dual_level()
        with pytest.raises(RuntimeError, match="^Invalid level given to _make_dual$"):
            fwAD.make_dual(x, x, level=3)
        with pytest.raises(RuntimeError, match="^Invalid level given to _fw_primal$"):
            fwAD.unpack_dual(x, level=3)
        with pytest.raises(RuntimeError, match="not the last one that was created"):
            fwAD.exit_dual_level(level=2)
        primal, tangent = fwAD.unpack_dual(x)
        assert primal._base is x and tangent is None   # in a level: always a view
        d = fwAD.make_dual(x, x * 2)
        y = d * 3
    assert fwAD.unpack_dual(y).tangent is None and fwAD.unpack_dual(d).tangent is None   # deleted on exit
    assert not y.requires_grad
    level = fwAD.enter_dual_level()
    assert level == 0
    fwAD.exit_dual_level()
    with pytest.raises(RuntimeError, match="^Dual level must be a positive number.$"):
        fwAD.exit_dual_level()


def test_dual_level_as_decorator(device):
    @fwAD.dual_level()
    def tangent_of_square(x, t):
        return fwAD.unpack_dual(fwAD.make_dual(x, t) ** 2).tangent

    x = npusim.tensor([1.0, 2.0], device=device)
    assert host(tangent_of_square(x, npusim.ones(2, device=device))).tolist() == [2.0, 4.0]


def test_make_dual_checks(device):
    x = npusim.ones(3, device=device)
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match=r"Tensor is of size \[3\] while the given forward gradient is of "
                                               r"size \[4\]\.$"):
            fwAD.make_dual(x, npusim.ones(4, device=device))
        with pytest.raises(ValueError, match="^Expected tangent to be floating point or complex, but got: "
                                             "npusim.int64$"):
            fwAD.make_dual(x, npusim.ones(3, dtype=npusim.int64, device=device))
        with pytest.raises(ValueError, match="^Expected primal to be floating point or complex, but got: "
                                             "npusim.int64$"):
            fwAD.make_dual(npusim.ones(3, dtype=npusim.int64, device=device), x)
        d = fwAD.make_dual(x, x)
        with pytest.raises(RuntimeError, match="already has a forward gradient at the same level 0"):
            fwAD.make_dual(d, x)
        if device != "cpu":
            with pytest.raises(RuntimeError, match="different device"):
                fwAD.make_dual(x, npusim.ones(3))


def test_make_dual_aliases_and_keeps_or_copies_the_tangent(device):
    x = npusim.ones(2, 3, device=device)
    t = npusim.randn(2, 3, device=device)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        assert d._base is x and d is not x
        primal, tangent = fwAD.unpack_dual(d)
        assert isinstance(fwAD.unpack_dual(d), fwAD.UnpackedDualTensor)
        assert tangent is t and primal._base is x and fwAD.unpack_dual(primal).tangent is None
        t_other_layout = npusim.randn(3, 2, device=device).t()
        tangent = fwAD.unpack_dual(fwAD.make_dual(x, t_other_layout)).tangent
        assert tangent is not t_other_layout and tangent.stride() == x.stride()
        assert npusim.equal(tangent, t_other_layout)
        d.add_(1)
        assert host(x).tolist() == [[2.0] * 3] * 2   # the dual aliases its primal


def test_repr_shows_the_tangent():
    x = npusim.ones(2, dtype=npusim.float64, requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, npusim.full((2,), 3.0, dtype=npusim.float64))
        assert repr(d) == ("tensor([1., 1.], dtype=npusim.float64, grad_fn=<ViewBackward0>,\n"
                           "       tangent=tensor([3., 3.], dtype=npusim.float64))")
    assert repr(d) == "tensor([1., 1.], dtype=npusim.float64, grad_fn=<ViewBackward0>)"


def test_views_share_the_tangent_and_inplace_ops_update_it(device):
    x = npusim.arange(6.0, device=device)
    t = npusim.ones(6, device=device)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        v = d[1:4].view(3, 1)
        assert fwAD.unpack_dual(v).tangent._base is t   # a view's tangent views the tangent
        v.mul_(2)                                        # in place on a view: the tangent is changed in place
        assert host(t).tolist() == [1, 2, 2, 2, 1, 1]
        assert host(fwAD.unpack_dual(d).tangent).tolist() == [1, 2, 2, 2, 1, 1]
        y = npusim.zeros(3, device=device)
        y.mul_(2)
        assert fwAD.unpack_dual(y).tangent is None
        y.add_(d[:3])                                    # a tensor without a tangent gets one in place
        assert host(fwAD.unpack_dual(y).tangent).tolist() == [1, 2, 2]
        z = npusim.zeros(4, device=device)
        z[1:].copy_(d[3:])                               # ... through a view: its base gets one too
        assert host(fwAD.unpack_dual(z).tangent).tolist() == [0, 2, 1, 1]
        assert fwAD.unpack_dual(d.detach()).tangent is None
        with npusim.no_grad():                           # grad mode does not stop forward AD
            assert host(fwAD.unpack_dual(d * 2).tangent).tolist() == [2, 4, 4, 4, 2, 2]
        assert fwAD.unpack_dual(npusim.argmax(d)).tangent is None
        stats = npusim.native_layer_norm(d.view(2, 3), [3], None, None, 1e-5)[1:]
        assert [fwAD.unpack_dual(s).tangent for s in stats] == [None, None]   # torch's rule for mean and rstd
        with fwAD._set_fwd_grad_enabled(False):
            assert not fwAD._is_fwd_grad_enabled()
            assert fwAD.unpack_dual(d * 2).tangent is None and fwAD.unpack_dual(d).tangent is None
        assert fwAD._is_fwd_grad_enabled() and fwAD.unpack_dual(d).tangent is not None
        with pytest.raises(NotImplementedError, match="^Trying to use forward AD with aten::heaviside that does "
                                                      "not support it.$"):
            d.heaviside(d)


def test_reverse_over_forward(device):
    """Tangents are differentiable: their gradients with respect to primal and tangent are the Hessian's."""
    x = npusim.tensor(X34[0], dtype=npusim.float64, device=device, requires_grad=True)
    v = npusim.tensor(T34[0], dtype=npusim.float64, device=device, requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, v)
        tangent = fwAD.unpack_dual((d.sin() * d).sum()).tangent
    gx, gv = npusim.autograd.grad(tangent, (x, v))
    xs, vs = X34[0], T34[0]
    np.testing.assert_allclose(host(gx), (2 * np.cos(xs) - xs * np.sin(xs)) * vs, rtol=1e-12)
    np.testing.assert_allclose(host(gv), np.sin(xs) + xs * np.cos(xs), rtol=1e-12)


class _Square(npusim.autograd.Function):
    @staticmethod
    def forward(x, k):
        return x * x * k

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_forward(inputs[0])
        ctx.k = inputs[1]

    @staticmethod
    def jvp(ctx, x_t, k_t):
        assert k_t is None   # non-tensor inputs get None
        (x,) = ctx.saved_tensors
        return 2 * x * x_t * ctx.k

    @staticmethod
    def backward(ctx, g):
        return g, None


class _NoJvp(npusim.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_custom_function_jvp(device):
    x = npusim.tensor([1.0, 2.0], device=device)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, npusim.tensor([1.0, 3.0], device=device))
        out, tangent = fwAD.unpack_dual(_Square.apply(d, 5.0).sin())
        assert np.allclose(host(tangent), np.cos([5.0, 20.0]) * [10.0, 60.0])
        out, tangent = fwAD.unpack_dual(_Square.apply(x, 5.0))
        assert tangent is None
        with pytest.raises(NotImplementedError, match="^You must implement the jvp function for custom "
                                                      "autograd.Function to use it with forward mode AD.$"):
            _NoJvp.apply(d)


# --- func.jvp / jacfwd / hessian through forward mode --------------------------------------------------------------

def test_func_transforms_in_forward_mode_equal_the_reverse_mode_results(device):
    F = npusim.func
    x = npusim.tensor(X34, dtype=npusim.float64, device=device)
    t = npusim.tensor(T34, dtype=npusim.float64, device=device)
    fn = _cases(npusim)["softmax"]
    out, tangent = F.jvp(fn, (x,), (t,))
    ref_out, ref_tangent = npusim.autograd.functional.jvp(fn, x, t)   # the double-backward trick
    np.testing.assert_allclose(host(out), host(ref_out), rtol=0, atol=0)
    np.testing.assert_allclose(host(tangent), host(ref_tangent), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(host(F.jacfwd(fn)(x)), host(F.jacrev(fn)(x)), rtol=1e-12, atol=1e-13)
    scalar = lambda v: (v.sin() * v.exp()).sum()
    np.testing.assert_allclose(host(F.hessian(scalar)(x[0])), host(npusim.autograd.functional.hessian(scalar, x[0])),
                               rtol=1e-12, atol=1e-13)
    with fwAD.dual_level():   # a level already open: the transforms fall back to reverse mode, same values
        np.testing.assert_allclose(host(F.jvp(fn, (x,), (t,))[1]), host(tangent), rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(host(F.jacfwd(fn)(x)), host(F.jacrev(fn)(x)), rtol=1e-12, atol=1e-13)


def test_nested_forward_transforms(device):
    """jvp of jvp and jacfwd of jacfwd: the inner transform runs in reverse mode under the outer's level."""
    F = npusim.func
    xs, vs = X34[0], T34[0]
    x = npusim.tensor(xs, dtype=npusim.float64, device=device)
    v = npusim.tensor(vs, dtype=npusim.float64, device=device)
    inner, second = F.jvp(lambda a: F.jvp(lambda b: b.sin() * b, (a,), (v,))[1], (x,), (v,))
    np.testing.assert_allclose(host(inner), (np.sin(xs) + xs * np.cos(xs)) * vs, rtol=1e-12)
    np.testing.assert_allclose(host(second), (2 * np.cos(xs) - xs * np.sin(xs)) * vs * vs, rtol=1e-12)
    hess = F.jacfwd(F.jacfwd(lambda b: (b.sin() * b).sum()))(x)
    np.testing.assert_allclose(host(hess), np.diag(2 * np.cos(xs) - xs * np.sin(xs)), rtol=1e-12, atol=1e-15)


# --- against torch.autograd.forward_ad --------------------------------------------------------------------------

@pytest.mark.oracle
@pytest.mark.parametrize("name", [c for c in CASES if c != "attention"])
def test_jvp_matches_torch(torch, device, name):
    import torch.autograd.forward_ad as tfw
    x = npusim.tensor(X34, dtype=npusim.float64, device=device)
    t = npusim.tensor(T34, dtype=npusim.float64, device=device)
    primal, tangent = _jvp(_cases(npusim)[name], x, t)
    with tfw.dual_level():
        out = _cases(torch)[name](tfw.make_dual(torch.tensor(X34), torch.tensor(T34)))
        ref_primal, ref_tangent = tfw.unpack_dual(out)
    np.testing.assert_allclose(host(primal), ref_primal.numpy(), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(host(tangent), ref_tangent.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.oracle
def test_semantics_and_errors_match_torch(torch):
    import torch.autograd.forward_ad as tfw

    def run(lib, fw):
        seen = []

        def record(fn):
            try:
                r = fn()
                seen.append(None if r is None else np.asarray(r.tolist()))
            except Exception as e:   # noqa: BLE001 (the exception types and messages are what is compared)
                seen.append((type(e).__name__, str(e).replace("npusim", "torch")))

        record(lambda: fw.make_dual(lib.ones(3), lib.ones(3)))
        with fw.dual_level():
            record(fw.enter_dual_level)
            record(lambda: fw.make_dual(lib.ones(3), lib.ones(4)))
            record(lambda: fw.make_dual(lib.ones(3), lib.ones(3, dtype=lib.int64)))
            record(lambda: fw.make_dual(lib.ones(3, dtype=lib.int64), lib.ones(3)))
            record(lambda: fw.make_dual(lib.ones(3), lib.ones(3), level=5))
            x = lib.arange(4.0)
            d = fw.make_dual(x, lib.ones(4))
            record(lambda: fw.make_dual(d, lib.ones(4)))
            record(lambda: fw.unpack_dual(d, level=2))
            record(lambda: fw.exit_dual_level(level=3))
            y = lib.zeros(4)
            y.mul_(2)
            y[1:].add_(d[:3] * d[1:])
            record(lambda: fw.unpack_dual(y).tangent)
            record(lambda: fw.unpack_dual(d.detach()).tangent)
            record(lambda: fw.unpack_dual(d.sum(0)).tangent)
            record(lambda: d.heaviside(d))
            record(lambda: fw.unpack_dual(lib.cumsum(d, 0)[::2]).tangent)
        record(lambda: fw.unpack_dual(d).tangent)
        record(fw.exit_dual_level)
        return seen

    ours, theirs = run(npusim, fwAD), run(torch, tfw)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        if isinstance(b, np.ndarray):
            np.testing.assert_allclose(a, b)
        else:
            assert a == b


@pytest.mark.oracle
def test_func_jvp_and_jacfwd_edges_match_torch(torch):
    def run(lib):
        x = lib.ones(3, dtype=lib.float64)
        t = lib.full((3,), 2.0, dtype=lib.float64)
        seen = []

        def record(fn):
            try:
                seen.append(fn())
            except Exception as e:   # noqa: BLE001 (the exception types and messages are what is compared)
                seen.append((type(e).__name__, str(e).replace("npusim", "torch")))

        record(lambda: lib.func.jvp(lambda v: lib.zeros(3, dtype=lib.float64), (x,), (t,), strict=True))
        record(lambda: lib.func.jvp(lambda v: lib.zeros(3, dtype=lib.float64), (x,), (t,)))
        record(lambda: lib.func.jvp(lambda v: (v.exp(), {"a": v * 2}), (x,), (t,), has_aux=True))
        record(lambda: lib.func.jvp(lambda v: (v.argmax(), v * 2), (x,), (t,)))
        record(lambda: lib.func.jvp(lambda v: v, (x.long(),), (t.long(),)))
        record(lambda: lib.func.jacfwd(lambda v: v * 2)(x.long()))
        record(lambda: lib.func.jacfwd(lambda a, b: (a * b, a.sum()), argnums=(0, 1))(x, t))
        return seen

    def plain(v):
        if isinstance(v, (tuple, list)):
            return [plain(a) for a in v]
        if isinstance(v, dict):
            return {k: plain(a) for k, a in v.items()}
        if hasattr(v, "tolist"):
            return v.tolist()
        return v

    assert plain(run(npusim)) == plain(run(torch))


@pytest.mark.oracle
def test_complex_tangents_match_torch(torch, device):
    """Holomorphic ops multiply the tangent by f'(z); abs, angle, real and conj follow torch's real-valued rules."""
    z = np.array([1 + 2j, -0.5 + 0.3j])
    v = np.array([0.3 - 1j, 2 + 0.5j])
    cases = {
        "mul_exp_sin": lambda w: w * w + w.exp() + w.sin(),
        "abs_angle": lambda w: (w * w).abs() + w.angle(),
        "real_conj": lambda w: w.real * 2 + (w.conj() * w).real,
        "sum_div": lambda w: (w / (w + 3)).sum(),
    }
    for name, fn in cases.items():
        with fwAD.dual_level():
            ours = fwAD.unpack_dual(fn(fwAD.make_dual(npusim.tensor(z, device=device), npusim.tensor(v, device=device))))
        import torch.autograd.forward_ad as tfw
        with tfw.dual_level():
            theirs = tfw.unpack_dual(fn(tfw.make_dual(torch.tensor(z), torch.tensor(v))))
        np.testing.assert_allclose(host(ours.tangent), theirs.tangent.numpy(), rtol=1e-12, atol=1e-14, err_msg=name)
