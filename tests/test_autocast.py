"""Autocast on the npu (AutocastPrivateUse1, torch's CUDA lists) and the cpu (torch's CPU lists).

Covers each cast policy's output dtypes (float16 and bfloat16, mixed inputs, Python
scalars), gradients in the parameter's dtype (also back through the float32 ops after a
lower-precision matmul), training with autocast, the cast cache (reuse, in-place updates,
clearing, grad modes, threads), nesting, per-thread state, the npu's AMP functions,
custom_fwd/custom_bwd, einsum as a composition whose matmuls autocast reaches, and torch's
errors and warnings.
"""
from __future__ import annotations

import contextlib
import gc
import threading
import warnings

import numpy as np
import pytest

import npusim
import npusim.nn.functional as F
from conftest import host
from npusim.core.dispatch import dispatch_tls

LOW = [npusim.float16, npusim.bfloat16]
LOW_IDS = ["float16", "bfloat16"]
RNG = np.random.default_rng(7)


def t(shape, device="npu", dtype=npusim.float32, requires_grad=False, scale=1.0):
    a = (RNG.standard_normal(shape) * scale).astype(np.float32)
    return npusim.tensor(a, device=device).to(dtype).requires_grad_(requires_grad)


def run_in_thread(fn):
    box = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            box["error"] = e
    th = threading.Thread(target=target)
    th.start()
    th.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")


# --- the policies on the npu --------------------------------------------------------------------------------

LOWER_PRECISION_CASES = {
    "mm": lambda x, w: npusim.mm(x, w.t()),
    "matmul": lambda x, w: x @ w.t(),
    "linear": lambda x, w: F.linear(x, w),
    "linear+bias": lambda x, w: F.linear(x, w, w[0]),
    "addmm": lambda x, w: npusim.addmm(x[:, :1], x, w.t()),
    "addmv": lambda x, w: npusim.addmv(x[:, 0], x, w[0]),
    "mv": lambda x, w: npusim.mv(x, w[0]),
    "bmm": lambda x, w: npusim.bmm(x[None], w.t()[None]),
    "baddbmm": lambda x, w: npusim.baddbmm(x[None, :, :1], x[None], w.t()[None]),
    "addbmm": lambda x, w: npusim.addbmm(x[:, :1], x[None], w.t()[None]),
    "prelu": lambda x, w: F.prelu(x, w[0, :1]),
    "conv2d": lambda x, w: F.conv2d(x[None, None], w[None, None, :2, :2]),
    "sdpa": lambda x, w: F.scaled_dot_product_attention(x[None], w[None], w[None]),
}


@pytest.mark.parametrize("low", LOW, ids=LOW_IDS)
@pytest.mark.parametrize("name", list(LOWER_PRECISION_CASES))
def test_lower_precision_ops_run_in_the_autocast_dtype(name, low):
    fn = LOWER_PRECISION_CASES[name]
    x, w = t((4, 4)), t((4, 4))
    ref = fn(x, w)
    with npusim.autocast("npu", dtype=low):
        out = fn(x, w)
        mixed = fn(x.to(low), w)  # one input already low, one float32
    assert out.dtype is low and mixed.dtype is low
    assert ref.dtype is npusim.float32
    np.testing.assert_allclose(host(out), host(ref), rtol=0.05, atol=0.05)


# (op, on inputs h (any sign) and u (in (0.5, 1.5)), both in the autocast dtype and made before the region)
FP32_CASES = {
    "exp": lambda h, u: npusim.exp(h),
    "log": lambda h, u: npusim.log(u),
    "rsqrt": lambda h, u: npusim.rsqrt(u),
    "reciprocal": lambda h, u: npusim.reciprocal(u),
    "pow(tensor, 2)": lambda h, u: h ** 2,
    "pow(2, tensor)": lambda h, u: 2 ** h,
    "pow(tensor, tensor)": lambda h, u: npusim.pow(u, h),
    "softplus": lambda h, u: F.softplus(h),
    "layer_norm": lambda h, u: F.layer_norm(h, (4,)),
    "group_norm": lambda h, u: F.group_norm(h[None], 2),
    "mse_loss": lambda h, u: F.mse_loss(h, u),
    "l1_loss": lambda h, u: F.l1_loss(h, u),
    "smooth_l1_loss": lambda h, u: F.smooth_l1_loss(h, u),
    "huber_loss": lambda h, u: F.huber_loss(h, u),
    "nll_loss": lambda h, u: F.nll_loss(h, npusim.tensor([0, 1, 2, 3], device="npu")),
    "bce_with_logits": lambda h, u: F.binary_cross_entropy_with_logits(h, u - 0.5),
    "kl_div": lambda h, u: F.kl_div(h, u, reduction="batchmean"),
    "cosine_similarity": lambda h, u: F.cosine_similarity(h, u),
    "logsumexp": lambda h, u: npusim.logsumexp(h, 1),
    "cdist": lambda h, u: npusim.cdist(h, u),
    "dist": lambda h, u: npusim.dist(h, u),
}


@pytest.mark.parametrize("low", LOW, ids=LOW_IDS)
@pytest.mark.parametrize("name", list(FP32_CASES))
def test_fp32_ops_run_in_float32(name, low):
    fn = FP32_CASES[name]
    h = t((4, 4), dtype=low)
    u = (npusim.rand(4, 4, device="npu") + 0.5).to(low)
    ref = fn(h.float(), u.float())
    with npusim.autocast("npu", dtype=low):
        out = fn(h, u)
    assert out.dtype is npusim.float32
    np.testing.assert_allclose(host(out), host(ref), rtol=1e-5, atol=1e-5)


SET_OPT_DTYPE_CASES = {
    "softmax": lambda h, **kw: npusim.softmax(h, 1, **kw),
    "log_softmax": lambda h, **kw: F.log_softmax(h, 1, **kw),
    "sum": lambda h, **kw: h.sum(**kw),
    "sum(dim)": lambda h, **kw: h.sum(1, **kw),
    "cumsum": lambda h, **kw: npusim.cumsum(h, 1, **kw),
    "cumprod": lambda h, **kw: npusim.cumprod(h, 1, **kw),
    "prod": lambda h, **kw: h.prod(**kw),
    "prod(dim)": lambda h, **kw: h.prod(1, **kw),
}


@pytest.mark.parametrize("low", LOW, ids=LOW_IDS)
@pytest.mark.parametrize("name", list(SET_OPT_DTYPE_CASES))
def test_fp32_set_opt_dtype_ops_produce_float32_unless_a_dtype_is_given(name, low):
    fn = SET_OPT_DTYPE_CASES[name]
    h = t((3, 4), dtype=low, scale=0.5)
    with npusim.autocast("npu", dtype=low):
        out = fn(h)
        explicit = fn(h, dtype=low)
        f64 = fn(h.double())
    assert out.dtype is npusim.float32
    assert explicit.dtype is low        # a dtype the caller asked for is respected
    assert f64.dtype is npusim.float64  # float64 is never touched
    np.testing.assert_allclose(host(out), host(fn(h.float())), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("low", LOW, ids=LOW_IDS)
def test_norm_appends_a_float32_output_dtype(low):
    h = t((3, 4), dtype=low)
    with npusim.autocast("npu", dtype=low):
        whole, along = h.norm(), h.norm(dim=1, keepdim=True)
        p1 = npusim.norm(h, p=1, dim=0)
    assert whole.dtype is along.dtype is p1.dtype is npusim.float32
    a = host(h).astype(np.float32)
    np.testing.assert_allclose(host(whole), np.linalg.norm(a), rtol=1e-5)
    np.testing.assert_allclose(host(along), np.linalg.norm(a, axis=1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(host(p1), np.abs(a).sum(0), rtol=1e-5)


PROMOTE_CASES = {
    "addcmul": lambda a, b: npusim.addcmul(a, b, b, value=0.5),
    "addcdiv": lambda a, b: npusim.addcdiv(a, b, b.abs() + 1, value=2),
    "atan2": lambda a, b: npusim.atan2(a, b),
    "dot": lambda a, b: npusim.dot(a[0], b[0]),
    "vdot": lambda a, b: npusim.vdot(a[0], b[0]),
    "cross": lambda a, b: npusim.cross(a[:, :3], b[:, :3], dim=1),
    "tensordot": lambda a, b: npusim.tensordot(a, b, dims=1),
    "scatter_add": lambda a, b: npusim.scatter_add(a, 0, npusim.zeros(4, 4, dtype=npusim.int64, device="npu"), b),
    "index_put": lambda a, b: a.index_put((npusim.tensor([1, 2], device="npu"),), b[:2]),
}


@pytest.mark.parametrize("low", LOW, ids=LOW_IDS)
@pytest.mark.parametrize("name", list(PROMOTE_CASES))
def test_promote_ops_run_in_the_widest_input_dtype(name, low):
    fn = PROMOTE_CASES[name]
    a, b = t((4, 4)), t((4, 4))
    with npusim.autocast("npu", dtype=low):
        all_low = fn(a.to(low), b.to(low))
        mixed = fn(a.to(low), b)
        if name in ("addcmul", "addcdiv", "atan2"):
            # float64 takes no part in the choice, and is left to the op's own type promotion
            assert fn(a.to(low), b.to(low).double()).dtype is npusim.float64
        elif name == "cross":
            # ... and cross, as torch's, has no type promotion: a float64 operand is refused
            with pytest.raises(RuntimeError, match="expected scalar type .* but found Double"):
                fn(a.to(low), b.to(low).double())
    assert all_low.dtype is low
    assert mixed.dtype is npusim.float32
    np.testing.assert_allclose(host(mixed), host(fn(a.to(low).float(), b)), rtol=1e-5, atol=1e-5)


def test_promote_refuses_float16_mixed_with_bfloat16():
    a, b = t((4, 4), dtype=npusim.float16), t((4, 4), dtype=npusim.bfloat16)
    with npusim.autocast("npu", dtype=npusim.float16):
        with pytest.raises(RuntimeError, match="Unexpected floating ScalarType in at::autocast::prioritize"):
            npusim.addcmul(a, b, b)


def test_binary_cross_entropy_is_banned_on_the_npu():
    p = t((4,)).sigmoid()
    with npusim.autocast("npu"):
        with pytest.raises(RuntimeError, match=r"binary_cross_entropy and npusim\.nn\.BCELoss are unsafe to "
                                               r"autocast\.\nMany models use a sigmoid layer"):
            F.binary_cross_entropy(p, p)
        assert F.binary_cross_entropy_with_logits(p, p).dtype is npusim.float32


def test_ops_on_no_list_fall_through_untouched():
    x, h = t((3, 3)), t((3, 3), dtype=npusim.float16)
    with npusim.autocast("npu"):
        assert (x + x).dtype is npusim.float32
        assert (h * 2).dtype is npusim.float16
        assert (x + h).dtype is npusim.float32       # ordinary type promotion
        assert F.relu(h).dtype is npusim.float16
        assert npusim.tanh(x).dtype is npusim.float32
        assert x.mean().dtype is npusim.float32
        np.testing.assert_array_equal(host(x + 2.5), host(x) + np.float32(2.5))


def test_only_floating_tensors_on_the_autocast_device_are_cast():
    x = t((3, 3))
    ints = npusim.arange(9, device="npu").reshape(3, 3)
    with npusim.autocast("npu"):
        assert npusim.mm(ints, ints).dtype is npusim.int64
        assert npusim.mm(x.double(), x.double()).dtype is npusim.float64
        assert npusim.mm(x.cpu(), x.cpu()).dtype is npusim.float32    # cpu tensors: npu autocast ignores them
        assert npusim.exp(ints).dtype is npusim.float32                 # int -> float by exp itself
    with npusim.autocast("cpu"):
        assert npusim.mm(x, x).dtype is npusim.float32                  # npu tensors: cpu autocast ignores them


def test_policy_table_lists_what_npusim_lacks():
    from npusim.backend.amp.autocast_registration import missing_ops
    from npusim.backend.op_table import autocast_policies
    listed = {name for names in autocast_policies().values() for name in names}
    missing = set(missing_ops())
    assert missing <= listed
    for name in listed - missing:
        op, _, overload = name.partition(".")
        assert getattr(getattr(npusim.ops.aten, op), overload or "default").has_kernel_for_dispatch_key(
            "AutocastPrivateUse1")
    assert {"mm", "addcmul", "softmax.int", "norm.Scalar", "binary_cross_entropy"}.isdisjoint(missing)


# --- gradients and training -------------------------------------------------------------------------------------

@pytest.mark.parametrize("low", LOW, ids=LOW_IDS)
def test_gradients_come_back_in_the_parameters_dtype(device, low):
    x = t((5, 4), device=device)
    w = t((3, 4), device=device, requires_grad=True)
    b = t((3,), device=device, requires_grad=True)
    with npusim.autocast(device, dtype=low):
        y = F.linear(x, w, b)
        loss = (y.float() ** 2).sum()
    assert y.dtype is low
    loss.backward()
    assert w.grad.dtype is npusim.float32 and b.grad.dtype is npusim.float32
    # d/dw sum((xw^T+b)^2) = 2 (xw^T+b)^T x
    r = host(x) @ host(w).T + host(b)
    np.testing.assert_allclose(host(w.grad), 2 * r.T @ host(x), rtol=0.05, atol=0.1)
    np.testing.assert_allclose(host(b.grad), 2 * r.sum(0), rtol=0.05, atol=0.1)


def test_mlp_trained_with_autocast_and_grad_scaler_converges():
    npusim.manual_seed(0)
    dev = "npu"
    model = npusim.nn.Sequential(npusim.nn.Linear(8, 32), npusim.nn.ReLU(), npusim.nn.Linear(32, 1)).to(dev)
    opt = npusim.optim.Adam(model.parameters(), lr=0.01)
    scaler = npusim.amp.GradScaler(dev)
    x = t((64, 8), device=dev)
    y = (x[:, :1] * 2 - x[:, 1:2]).detach()
    losses = []
    for _ in range(60):
        opt.zero_grad()
        with npusim.autocast(dev):
            out = model(x)
            loss = F.mse_loss(out, y)
        assert out.dtype is npusim.float16 and loss.dtype is npusim.float32
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    assert all(p.dtype is npusim.float32 for p in model.parameters())
    assert losses[-1] < 0.05 * losses[0]



# Ops of the float32 lists on a matmul's lower-precision result (module m: npusim or torch). Their backward
# must hand the matmul a gradient in its own dtype, as torch's engine does.
FP32_AFTER_MATMUL = {
    "softmax": lambda m, y: m.softmax(y, -1),
    "log_softmax": lambda m, y: m.nn.functional.log_softmax(y, -1),
    "sum": lambda m, y: y.sum(),
    "sum(dim)": lambda m, y: y.sum(1, keepdim=True) * y.sum(0),
    "prod": lambda m, y: (y * 0.1 + 1).prod(),
    "prod(dim)": lambda m, y: y.prod(1),
    "cumsum": lambda m, y: m.cumsum(y, 1),
    "cumprod": lambda m, y: m.cumprod(y + 1.5, 1),
    "norm": lambda m, y: y.norm(),
    "norm(dim)": lambda m, y: m.norm(y, p=3, dim=1),
    "vector_norm": lambda m, y: m.linalg.vector_norm(y, dim=0),
    "matrix_norm": lambda m, y: m.linalg.matrix_norm(y),
    "exp": lambda m, y: m.exp(y),
    "pow": lambda m, y: y ** 3,
    "layer_norm": lambda m, y: m.nn.functional.layer_norm(y, (8,)),
    "logsumexp": lambda m, y: m.logsumexp(y, 1),
    "mse_loss": lambda m, y: m.nn.functional.mse_loss(y, y.detach().flip(0)),
    "cross_entropy": lambda m, y: m.nn.functional.cross_entropy(y, m.tensor([0, 3, 5, 7], device=y.device)),
}
_XW = (RNG.standard_normal((4, 8)) * 0.5).astype(np.float32), (RNG.standard_normal((8, 8)) * 0.5).astype(np.float32)
def _weight_grad(m, device, name, region):
    """w's gradient through ``FP32_AFTER_MATMUL[name]`` of ``x @ w``; ``region`` wraps the forward pass."""
    x = m.tensor(_XW[0], device=device)
    w = m.tensor(_XW[1], device=device).requires_grad_()
    with region():
        z = FP32_AFTER_MATMUL[name](m, m.mm(x, w))
    # a weighted sum, not a plain one: softmax's rows sum to 1
    (z.float().reshape(-1) * m.linspace(-1, 2, z.numel(), device=device)).sum().backward()
    return z, w.grad


@pytest.mark.parametrize("low", LOW, ids=LOW_IDS)
@pytest.mark.parametrize("name", list(FP32_AFTER_MATMUL))
def test_backward_through_float32_ops_after_a_lower_precision_matmul(device, name, low):
    z, grad = _weight_grad(npusim, device, name, lambda: npusim.autocast(device, dtype=low))
    assert grad.dtype is npusim.float32
    if device == "npu":
        assert z.dtype is npusim.float32    # every case here is on a float32 list of the npu
    _, exact = _weight_grad(npusim, device, name, contextlib.nullcontext)
    np.testing.assert_allclose(host(grad), host(exact), rtol=0.05, atol=0.05 * np.abs(host(exact)).max())


# reductions given an output dtype, outside autocast (what autocast's fp32_set_opt_dtype policy asks for)
WITH_DTYPE = {
    "softmax": lambda m, h, f: m.softmax(h, 1, dtype=f),
    "log_softmax": lambda m, h, f: m.log_softmax(h, 1, dtype=f),
    "sum": lambda m, h, f: h.sum(dtype=f),
    "sum(dim)": lambda m, h, f: h.sum(0, dtype=f),
    "mean": lambda m, h, f: h.mean(dtype=f),
    "mean(dim)": lambda m, h, f: h.mean(1, dtype=f),
    "prod": lambda m, h, f: h.prod(dtype=f),
    "prod(dim)": lambda m, h, f: h.prod(1, dtype=f),
    "norm": lambda m, h, f: m.norm(h, dim=1, dtype=f),
}


def _grad_with_dtype(m, device, name, low):
    a = np.linspace(-1.5, 1.5, 12, dtype=np.float32).reshape(3, 4)
    h = m.tensor(a, device=device).to(getattr(m, low)).requires_grad_()
    z = WITH_DTYPE[name](m, h, m.float32)
    (z.reshape(-1) * m.linspace(-1, 2, z.numel(), device=device)).sum().backward()
    return z, h.grad


@pytest.mark.parametrize("low", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", list(WITH_DTYPE))
def test_reductions_given_a_dtype_return_the_gradient_in_the_inputs_dtype(device, name, low):
    z, grad = _grad_with_dtype(npusim, device, name, low)
    assert z.dtype is npusim.float32 and grad.dtype is getattr(npusim, low)

# --- the cast cache -----------------------------------------------------------------------------------------------

def _to_copy_nodes(y):
    """The cast nodes feeding ``y``'s grad_fn (one per cast input)."""
    return [fn for fn, _ in y.grad_fn.next_functions if fn is not None and type(fn).__name__ == "ToCopyBackward0"]


def test_weights_are_cast_once_per_region(device):
    x, w = t((4, 4), device=device), t((4, 4), device=device, requires_grad=True)
    with npusim.autocast(device, dtype=npusim.float16):
        y1, y2 = x @ w, x @ w
        (w_cast_1,), (w_cast_2,) = _to_copy_nodes(y1), _to_copy_nodes(y2)
        assert w_cast_1 is w_cast_2
    with npusim.autocast(device, dtype=npusim.float16):
        (w_cast_3,) = _to_copy_nodes(x @ w)
    assert w_cast_3 is not w_cast_1
    with npusim.autocast(device, dtype=npusim.float16, cache_enabled=False):
        assert _to_copy_nodes(x @ w)[0] is not _to_copy_nodes(x @ w)[0]


def test_non_leaf_and_input_casts_are_not_cached(device):
    x = t((4, 4), device=device, requires_grad=True)
    with npusim.autocast(device, dtype=npusim.float16):
        z = x * 1  # not a leaf
        a, b = z @ z, z @ z
        assert _to_copy_nodes(a)[0] is not _to_copy_nodes(b)[0]


def test_cache_never_serves_a_stale_cast_after_an_in_place_update(device):
    x = npusim.eye(2, device=device)
    w = npusim.ones(2, 2, device=device, requires_grad=True)
    with npusim.autocast(device, dtype=npusim.float16):
        before = x @ w
        with npusim.no_grad():
            w.mul_(3)
        after = x @ w
        with npusim.no_grad():
            w.data = npusim.full((2, 2), 5.0, device=device)  # a new payload, same tensor
        swapped = x @ w
    np.testing.assert_array_equal(host(before), np.ones((2, 2)))
    np.testing.assert_array_equal(host(after), np.full((2, 2), 3.0))
    np.testing.assert_array_equal(host(swapped), np.full((2, 2), 5.0))


def test_cache_is_not_reused_across_grad_modes(device):
    x, w = t((3, 3), device=device), t((3, 3), device=device, requires_grad=True)
    with npusim.autocast(device, dtype=npusim.float16):
        with npusim.no_grad():
            x @ w          # caches a cast with no history
        y = x @ w          # must not reuse it, or w would get no gradient
    y.float().sum().backward()
    assert w.grad is not None
    np.testing.assert_allclose(host(w.grad), np.repeat(host(x).sum(0)[:, None], 3, 1), rtol=0.01, atol=0.01)


def test_cache_is_released_when_the_outermost_region_exits():
    x, w = t((64, 256)), t((256, 256), requires_grad=True)
    gc.collect()  # garbage of earlier tests must not be freed in the middle of the count
    base = npusim.npu.memory_allocated()
    cast_bytes = 256 * 256 * 2
    with npusim.autocast("npu"):
        with npusim.autocast("npu", enabled=False):
            pass
        with npusim.autocast("npu"):
            with npusim.no_grad():
                x @ w
        # the inner regions ended; the outer one still holds the weight's cast
        assert npusim.npu.memory_allocated() - base == cast_bytes
    gc.collect()
    assert npusim.npu.memory_allocated() == base


def test_cache_is_per_thread():
    x, w = t((64, 256)), t((256, 256), requires_grad=True)
    gc.collect()  # garbage of earlier tests must not be freed in the middle of the count
    base = npusim.npu.memory_allocated()
    cast_bytes = 256 * 256 * 2
    seen = {}
    with npusim.autocast("npu"):
        with npusim.no_grad():
            x @ w
        assert npusim.npu.memory_allocated() - base == cast_bytes

        def other_thread():
            with npusim.autocast("npu"):
                with npusim.no_grad():
                    x @ w  # makes its own cast: the main thread's is not visible here
                seen["inside"] = npusim.npu.memory_allocated() - base
            gc.collect()
            seen["after"] = npusim.npu.memory_allocated() - base
        run_in_thread(other_thread)
        # the other thread's exit dropped its cast only; ours is still held
        assert seen == {"inside": 2 * cast_bytes, "after": cast_bytes}
        assert npusim.npu.memory_allocated() - base == cast_bytes
    gc.collect()
    assert npusim.npu.memory_allocated() == base


# --- regions, nesting and threads --------------------------------------------------------------------------------

def test_nested_regions_and_disabled_subregions(device):
    x = t((3, 3), device=device)
    name = device
    with npusim.autocast(device, dtype=npusim.float16):
        assert npusim.mm(x, x).dtype is npusim.float16
        with npusim.autocast(device, enabled=False):
            assert not npusim.is_autocast_enabled(name)
            assert npusim.mm(x, x).dtype is npusim.float32
        assert npusim.mm(x, x).dtype is npusim.float16
        with npusim.autocast(device, dtype=npusim.bfloat16):
            assert npusim.get_autocast_dtype(name) is npusim.bfloat16
            assert npusim.mm(x, x).dtype is npusim.bfloat16
        assert npusim.get_autocast_dtype(name) is npusim.float16
    assert not npusim.is_autocast_enabled(name)
    assert npusim.mm(x, x).dtype is npusim.float32


def test_leaving_a_region_by_an_exception_restores_the_state(device):
    with pytest.raises(ZeroDivisionError):
        with npusim.autocast(device, dtype=npusim.float16):
            1 / 0
    assert not npusim.is_autocast_enabled(device)
    assert not npusim.is_any_autocast_enabled()


def test_regions_release_the_slow_dispatch_path():
    before = dispatch_tls._slow_reasons
    with npusim.autocast("npu"):
        with npusim.autocast("cpu"):
            assert dispatch_tls._slow_reasons == before + 1
    assert dispatch_tls._slow_reasons == before
    run_in_thread(lambda: npusim.npu.set_autocast_enabled(True))  # a thread that ends with autocast on
    gc.collect()
    assert dispatch_tls._slow_reasons == before


def test_autocast_state_is_per_thread():
    x = t((3, 3))

    def probe():
        return npusim.is_autocast_enabled("npu"), npusim.get_autocast_dtype("npu"), npusim.mm(x, x).dtype

    with npusim.autocast("npu", dtype=npusim.bfloat16):
        assert run_in_thread(probe) == (False, npusim.float16, npusim.float32)
        assert probe() == (True, npusim.bfloat16, npusim.bfloat16)

    def enabled_in_thread():
        with npusim.autocast("npu"):
            inside = probe()
            main_view.wait()
        return inside

    main_view = threading.Event()
    box = {}
    th = threading.Thread(target=lambda: box.setdefault("v", enabled_in_thread()))
    th.start()
    try:
        assert probe() == (False, npusim.float16, npusim.float32)
    finally:
        main_view.set()
        th.join()
    assert box["v"] == (True, npusim.float16, npusim.float16)


def test_autocast_as_a_decorator_works_in_threads_and_recursion():
    x = t((3, 3))

    @npusim.autocast("npu")
    def f(depth):
        if depth:
            return f(depth - 1)
        return npusim.mm(x, x).dtype

    assert f(3) is npusim.float16
    assert not npusim.is_autocast_enabled("npu")
    results = []
    threads = [threading.Thread(target=lambda: results.append(f(2))) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert results == [npusim.float16] * 4
    assert not npusim.is_autocast_enabled("npu")


def test_every_spelling_of_npu_autocast():
    x = t((3, 3))
    assert npusim.amp.autocast is npusim.autocast
    with npusim.amp.autocast(device_type="npu", dtype=None, enabled=True, cache_enabled=None):
        assert npusim.mm(x, x).dtype is npusim.float16
    with pytest.warns(FutureWarning, match=r"`npusim\.npu\.amp\.autocast\(args\.\.\.\)` is deprecated\. "
                                           r"Please use `npusim\.amp\.autocast\('npu', args\.\.\.\)` instead\."):
        region = npusim.npu.amp.autocast(dtype=npusim.bfloat16)
    with region:
        assert npusim.mm(x, x).dtype is npusim.bfloat16
    from npusim.npu.amp import GradScaler, autocast  # noqa: F401  (importable like torch.cuda.amp)


def test_cpu_autocast_defaults_to_bfloat16():
    x = t((3, 3), device="cpu")
    with npusim.autocast("cpu"):
        assert npusim.get_autocast_dtype("cpu") is npusim.bfloat16
        assert npusim.mm(x, x).dtype is npusim.bfloat16
        assert npusim.exp(x).dtype is npusim.float32        # not on torch's cpu lists
        assert x.prod().dtype is npusim.float32
        assert npusim.cat([x, x.bfloat16()]).dtype is npusim.float32   # cpu promotes cat
        p = x.sigmoid()
        assert F.binary_cross_entropy(p.bfloat16(), p.bfloat16()).dtype is npusim.float32  # cpu: fp32, not banned


# --- the npu's AMP functions and the generic ones ------------------------------------------------------------------

def test_npu_amp_backend_functions():
    npu = npusim.npu
    assert npu.get_amp_supported_dtype() == [npusim.float16, npusim.bfloat16]
    assert npu.get_autocast_dtype() is npusim.float16 and not npu.is_autocast_enabled()
    x = t((3, 3))
    npu.set_autocast_enabled(True)
    try:
        assert npu.is_autocast_enabled() and npusim.is_autocast_enabled("npu") and npusim.is_any_autocast_enabled()
        npu.set_autocast_dtype(npusim.bfloat16)
        assert npusim.get_autocast_dtype("npu") is npusim.bfloat16
        assert npusim.mm(x, x).dtype is npusim.bfloat16
        with npusim.autocast("npu"):  # dtype=None takes the npu's current autocast dtype
            assert npusim.mm(x, x).dtype is npusim.bfloat16
    finally:
        npu.set_autocast_enabled(False)
        npu.set_autocast_dtype(npusim.float16)
    assert npusim.mm(x, x).dtype is npusim.float32
    assert not npusim.is_any_autocast_enabled()


def test_npu_set_autocast_dtype_rejects_unsupported_dtypes():
    with pytest.raises(RuntimeError, match=r"npu Autocast only supports dtypes of npusim\.float16, "
                                           r"npusim\.bfloat16 currently, but got npusim\.float32\."):
        npusim.npu.set_autocast_dtype(npusim.float32)
    with pytest.raises(TypeError, match=r"set_autocast_dtype\(\): argument 'dtype' \(position 1\) must be "
                                        r"npusim\.dtype, not str"):
        npusim.npu.set_autocast_dtype("float16")


def test_generic_functions_know_every_device_type():
    assert npusim.is_autocast_available("npu") and npusim.is_autocast_available("cpu")
    assert npusim.is_autocast_available("cuda") and npusim.is_autocast_available("npu:0")
    assert not npusim.is_autocast_available("meta")
    assert npusim.get_autocast_dtype("npu") is npusim.float16
    assert npusim.get_autocast_dtype("cpu") is npusim.bfloat16
    assert npusim.get_autocast_dtype("cuda") is npusim.float16
    assert npusim.is_autocast_cache_enabled()
    with npusim.autocast("npu", cache_enabled=False):
        assert not npusim.is_autocast_cache_enabled()
    assert npusim.is_autocast_cache_enabled()
    assert npusim.autocast_increment_nesting() == 1 and npusim.autocast_decrement_nesting() == 0
    npusim.set_autocast_dtype("cpu", npusim.float16)
    try:
        assert npusim.get_autocast_dtype("cpu") is npusim.float16
    finally:
        npusim.set_autocast_dtype("cpu", npusim.bfloat16)


def test_unsupported_dtype_warns_and_disables_autocast(device):
    x = t((3, 3), device=device)
    name = "npu" if device == "npu" else "CPU"
    supported = "npusim.float16, npusim.bfloat16" if device == "npu" else "npusim.bfloat16, npusim.float16"
    with pytest.warns(UserWarning, match=rf"In {name} autocast, but the target dtype is not supported\. Disabling "
                                         rf"autocast\.\n{name} Autocast only supports dtypes of {supported} "
                                         rf"currently\."):
        region = npusim.autocast(device, dtype=npusim.float32)
    with region:
        assert not npusim.is_autocast_enabled(device)
        assert npusim.mm(x, x).dtype is npusim.float32


def test_cuda_autocast_warns_that_there_is_no_cuda():
    with pytest.warns(UserWarning, match="CUDA is not available or torch_xla is imported. Disabling autocast."):
        region = npusim.autocast("cuda")
    with region:
        assert not npusim.is_autocast_enabled("cuda")


BAD_CALLS = [
    (lambda: npusim.autocast(3), ValueError, "Expected `device_type` of type `str`, got: `<class 'int'>`"),
    (lambda: npusim.autocast("meta"), RuntimeError, "unsupported scalarType"),
    (lambda: npusim.autocast("meta", dtype=npusim.float16), RuntimeError,
     "User specified an unsupported autocast device_type 'meta'"),
    (lambda: npusim.autocast("foo"), RuntimeError,
     "Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, vulkan, "
     "mps, meta, hpu, mtia, privateuseone, npu device type at start of device string: foo"),
    (lambda: npusim.autocast("cpu")(3), TypeError, "autocast()(func) requires a callable, but got int."),
    (lambda: npusim.is_autocast_enabled(1), TypeError,
     "is_autocast_enabled(): argument 'device_type' (position 1) must be str, not int"),
    (lambda: npusim.is_autocast_enabled("meta"), RuntimeError,
     "unknown device type for autocast in get_autocast_dispatch_key_from_device_type"),
    (lambda: npusim.get_autocast_dtype(3), TypeError,
     "get_autocast_dtype(): argument 'device_type' (position 1) must be str, not int"),
    (lambda: npusim.set_autocast_dtype(3, npusim.float16), TypeError,
     "set_autocast_dtype(): argument 'device_type' (position 1) must be str, not int"),
    (lambda: npusim.set_autocast_dtype("cpu", "x"), TypeError,
     "set_autocast_dtype(): argument 'dtype' (position 2) must be npusim.dtype, not str"),
    (lambda: npusim.set_autocast_enabled("cpu", 1), TypeError,
     "set_autocast_enabled(): argument 'enabled' (position 2) must be bool, not int"),
    (lambda: npusim.set_autocast_enabled("cpu"), TypeError,
     "set_autocast_enabled(): argument 'enabled' (position 1) must be bool, not str"),
    (lambda: npusim.set_autocast_enabled(), TypeError,
     "set_autocast_enabled() received an invalid combination of arguments - got (), but expected one of:"),
    (lambda: npusim.set_autocast_enabled("meta", True), RuntimeError,
     "unknown device type for autocast in get_autocast_dispatch_key_from_device_type"),
    (lambda: npusim.set_autocast_cache_enabled(1), TypeError, "enabled must be a bool (got int)"),
    (lambda: npusim.autocast("cpu", enabled=1).__enter__(), TypeError,
     "set_autocast_enabled(): argument 'enabled' (position 2) must be bool, not int"),
    (lambda: npusim.autocast("cpu", cache_enabled="yes").__enter__(), TypeError, "enabled must be a bool (got str)"),
]


@pytest.mark.parametrize("call, exc, message", BAD_CALLS, ids=[str(i) for i in range(len(BAD_CALLS))])
def test_bad_arguments_raise_torchs_errors(call, exc, message):
    with pytest.raises(exc) as info:
        call()
    assert str(info.value).startswith(message)
    # nothing was left switched on
    assert not npusim.is_any_autocast_enabled() and npusim.is_autocast_cache_enabled()
    assert npusim.autocast_increment_nesting() == 1 and npusim.autocast_decrement_nesting() == 0


# --- custom autograd Functions ------------------------------------------------------------------------------------

class _ScaledMatmul(npusim.autograd.Function):
    seen = {}

    @staticmethod
    @npusim.amp.custom_fwd(device_type="npu", cast_inputs=npusim.float32)
    def forward(ctx, a, b):
        _ScaledMatmul.seen["forward"] = (a.dtype, npusim.is_autocast_enabled("npu"))
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    @npusim.amp.custom_bwd(device_type="npu")
    def backward(ctx, g):
        _ScaledMatmul.seen["backward"] = npusim.is_autocast_enabled("npu")
        a, b = ctx.saved_tensors
        return g @ b.t(), a.t() @ g


class _Follows(npusim.autograd.Function):
    seen = {}

    @staticmethod
    @npusim.amp.custom_fwd(device_type="npu")
    def forward(ctx, a):
        _Follows.seen["forward"] = (npusim.is_autocast_enabled("npu"), (a @ a).dtype)
        return a * 2

    @staticmethod
    @npusim.amp.custom_bwd(device_type="npu")
    def backward(ctx, g):
        _Follows.seen["backward"] = (npusim.is_autocast_enabled("npu"), npusim.get_autocast_dtype("npu"))
        return g * 2


def test_custom_fwd_casts_inputs_and_runs_forward_without_autocast():
    a = t((3, 3), dtype=npusim.float16, requires_grad=True)
    b = t((3, 3), requires_grad=True)
    with npusim.autocast("npu"):
        out = _ScaledMatmul.apply(a, b)
    assert _ScaledMatmul.seen["forward"] == (npusim.float32, False)
    assert out.dtype is npusim.float32
    out.sum().backward()
    assert _ScaledMatmul.seen["backward"] is False
    assert a.grad.dtype is npusim.float16 and b.grad.dtype is npusim.float32
    # outside autocast, cast_inputs does nothing
    _ScaledMatmul.apply(a.detach().float(), b)
    assert _ScaledMatmul.seen["forward"] == (npusim.float32, False)


def test_custom_bwd_runs_backward_under_the_forwards_autocast_state():
    a = t((3, 3), requires_grad=True)
    with npusim.autocast("npu", dtype=npusim.bfloat16):
        out = _Follows.apply(a)
    assert _Follows.seen["forward"] == (True, npusim.bfloat16)
    out.sum().backward()
    assert _Follows.seen["backward"] == (True, npusim.bfloat16)
    np.testing.assert_array_equal(host(a.grad), np.full((3, 3), 2.0))


def test_custom_fwd_needs_a_string_device_type():
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`, got: `<class 'int'>`"):
        npusim.amp.custom_fwd(device_type=1)
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`, got: `<class 'NoneType'>`"):
        npusim.amp.custom_bwd(device_type=None)


# --- the oracle: torch's cpu autocast --------------------------------------------------------------------------------

# ops whose npu policy (torch's CUDA list) is also their cpu policy: their dtypes under npu autocast
# must match torch's cpu autocast
SHARED_CASES = {
    "mm": lambda m, x, y: m.mm(x, y.t()),
    "matmul": lambda m, x, y: m.matmul(x, y.t()),
    "linear": lambda m, x, y: m.nn.functional.linear(x, y),
    "addmm": lambda m, x, y: m.addmm(x, x, y.t()),
    "bmm": lambda m, x, y: m.bmm(x[None], y.t()[None]),
    "baddbmm": lambda m, x, y: m.baddbmm(x[None], x[None], y.t()[None]),
    "addbmm": lambda m, x, y: m.addbmm(x, x[None], y.t()[None]),
    "prelu": lambda m, x, y: m.nn.functional.prelu(x, y[0, :1]),
    "conv2d": lambda m, x, y: m.nn.functional.conv2d(x[None, None], y[None, None, :2, :2]),
    "mse_loss": lambda m, x, y: m.nn.functional.mse_loss(x, y),
    "l1_loss": lambda m, x, y: m.nn.functional.l1_loss(x, y),
    "huber_loss": lambda m, x, y: m.nn.functional.huber_loss(x, y),
    "smooth_l1_loss": lambda m, x, y: m.nn.functional.smooth_l1_loss(x, y),
    "bce_with_logits": lambda m, x, y: m.nn.functional.binary_cross_entropy_with_logits(x, y.sigmoid()),
    "cdist": lambda m, x, y: m.cdist(x, y),
    "add (no policy)": lambda m, x, y: x + y,
    "relu (no policy)": lambda m, x, y: m.relu(x),
}

# the cpu lists themselves, under npusim's cpu autocast
CPU_CASES = dict(SHARED_CASES, **{
    "exp": lambda m, x, y: m.exp(x),
    "softmax": lambda m, x, y: m.softmax(x, 1),
    "sum": lambda m, x, y: x.sum(),
    "prod": lambda m, x, y: x.prod(),
    "cat": lambda m, x, y: m.cat([x, y]),
    "stack": lambda m, x, y: m.stack([x, y]),
    "bce": lambda m, x, y: m.nn.functional.binary_cross_entropy(x.sigmoid(), y.sigmoid()),
    "nll_loss": lambda m, x, y: m.nn.functional.nll_loss(x, m.tensor([0, 1, 2, 3])),
    "cross_entropy": lambda m, x, y: m.nn.functional.cross_entropy(x, m.tensor([0, 1, 2, 3])),
    "pow": lambda m, x, y: x ** 2,
})

INPUT_DTYPES = [("float32", "float32"), ("bfloat16", "float32"), ("bfloat16", "bfloat16"), ("float16", "float16"),
                ("float64", "float64")]


def _pair(module, device, dx, dy):
    a = np.arange(16, dtype=np.float32).reshape(4, 4) / 16
    x = module.tensor(a, device=device).to(getattr(module, dx))
    y = module.tensor(a.T.copy(), device=device).to(getattr(module, dy))
    return x, y


def _torch_dtype(torch, fn, low, dx, dy):
    x, y = _pair(torch, "cpu", dx, dy)
    with torch.autocast("cpu", dtype=getattr(torch, low)):
        try:
            return str(fn(torch, x, y).dtype).replace("torch.", "")
        except RuntimeError as e:
            return f"error: {e}"


def _npusim_dtype(device, fn, low, dx, dy):
    x, y = _pair(npusim, device, dx, dy)
    with npusim.autocast(device, dtype=getattr(npusim, low)):
        try:
            return str(fn(npusim, x, y).dtype).replace("npusim.", "")
        except RuntimeError as e:
            return f"error: {e}"


@pytest.mark.oracle
@pytest.mark.parametrize("low", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", list(SHARED_CASES))
def test_npu_autocast_dtypes_match_torch_cpu_autocast_where_the_lists_agree(torch, name, low):
    fn = SHARED_CASES[name]
    for dx, dy in INPUT_DTYPES:
        assert _npusim_dtype("npu", fn, low, dx, dy) == _torch_dtype(torch, fn, low, dx, dy), (dx, dy)


@pytest.mark.oracle
@pytest.mark.parametrize("low", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", list(CPU_CASES))
def test_cpu_autocast_dtypes_match_torch(torch, name, low):
    fn = CPU_CASES[name]
    for dx, dy in INPUT_DTYPES:
        assert _npusim_dtype("cpu", fn, low, dx, dy) == _torch_dtype(torch, fn, low, dx, dy), (dx, dy)


@pytest.mark.oracle
def test_cpu_autocast_values_match_torch(torch):
    a = RNG.standard_normal((8, 8)).astype(np.float32)
    with torch.autocast("cpu"):
        expected = (torch.tensor(a) @ torch.tensor(a).t()).float().numpy()
    with npusim.autocast("cpu"):
        got = host(npusim.tensor(a) @ npusim.tensor(a).t())
    np.testing.assert_allclose(got, expected, rtol=1e-2, atol=1e-2)


@pytest.mark.oracle
@pytest.mark.parametrize("index", range(len(BAD_CALLS)))
def test_bad_arguments_match_torch(torch, index):
    call, exc, message = BAD_CALLS[index]
    src = {0: lambda: torch.autocast(3), 1: lambda: torch.autocast("meta"),
           2: lambda: torch.autocast("meta", dtype=torch.float16), 3: lambda: torch.autocast("foo"),
           4: lambda: torch.autocast("cpu")(3), 5: lambda: torch.is_autocast_enabled(1),
           6: lambda: torch.is_autocast_enabled("meta"), 7: lambda: torch.get_autocast_dtype(3),
           8: lambda: torch.set_autocast_dtype(3, torch.float16), 9: lambda: torch.set_autocast_dtype("cpu", "x"),
           10: lambda: torch.set_autocast_enabled("cpu", 1), 11: lambda: torch.set_autocast_enabled("cpu"),
           12: lambda: torch.set_autocast_enabled(), 13: lambda: torch.set_autocast_enabled("meta", True),
           14: lambda: torch.set_autocast_cache_enabled(1),
           15: lambda: torch.autocast("cpu", enabled=1).__enter__(),
           16: lambda: torch.autocast("cpu", cache_enabled="yes").__enter__()}[index]
    nesting = torch.autocast_increment_nesting() - 1
    torch.autocast_decrement_nesting()
    try:
        with pytest.raises(exc) as theirs:
            src()
    finally:
        # torch's __enter__ can fail half-way (case 16), leaving cpu autocast on: put its state back
        torch.set_autocast_enabled("cpu", False)
        while torch.autocast_decrement_nesting() >= nesting:
            pass
        torch.autocast_increment_nesting()
    # npusim also lists its backend's name among the valid device types (torch lists only privateuseone)
    theirs_text = str(theirs.value).replace("torch.", "npusim.").replace("privateuseone device",
                                                                          "privateuseone, npu device")
    assert theirs_text.startswith(message)


@pytest.mark.oracle
def test_unsupported_dtype_warning_matches_torch(torch):
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        torch.autocast("cpu", dtype=torch.float32)
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        npusim.autocast("cpu", dtype=npusim.float32)
    assert [str(w.message).replace("torch.", "npusim.") for w in theirs] == [str(w.message) for w in ours]


def _torch_weight_grad(torch, device, name, low):
    """torch's w gradient through ``FP32_AFTER_MATMUL[name]`` of an autocast ``x @ w``.

    The cpu runs torch's cpu autocast; the npu is compared with torch's CUDA autocast (its lists are the
    npu's), written out on torch's cpu: the matmul in the lower dtype, the op on its float32 copy.
    """
    x = torch.tensor(_XW[0])
    w = torch.tensor(_XW[1]).requires_grad_()
    low = getattr(torch, low)
    if device == "cpu":
        with torch.autocast("cpu", dtype=low):
            z = FP32_AFTER_MATMUL[name](torch, torch.mm(x, w))
    else:
        z = FP32_AFTER_MATMUL[name](torch, torch.mm(x.to(low), w.to(low)).float())
    (z.float().reshape(-1) * torch.linspace(-1, 2, z.numel())).sum().backward()
    return z, w.grad


@pytest.mark.oracle
@pytest.mark.parametrize("low", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", list(FP32_AFTER_MATMUL))
def test_backward_after_autocast_matches_torch(torch, device, name, low):
    z, grad = _weight_grad(npusim, device, name, lambda: npusim.autocast(device, dtype=getattr(npusim, low)))
    tz, tgrad = _torch_weight_grad(torch, device, name, low)
    assert str(z.dtype).replace("npusim.", "") == str(tz.dtype).replace("torch.", "")
    assert grad.dtype is npusim.float32
    expected = tgrad.numpy()
    tol = 1e-2 if low == "float16" else 3e-2
    np.testing.assert_allclose(host(grad), expected, rtol=tol, atol=tol * np.abs(expected).max())


@pytest.mark.oracle
@pytest.mark.parametrize("low", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", list(WITH_DTYPE))
def test_reduction_gradients_given_a_dtype_match_torch(torch, device, name, low):
    z, grad = _grad_with_dtype(npusim, device, name, low)
    tz, tgrad = _grad_with_dtype(torch, "cpu", name, low)
    assert str(grad.dtype).replace("npusim.", "") == str(tgrad.dtype).replace("torch.", "")
    expected = tgrad.float().numpy()
    np.testing.assert_allclose(host(grad.float()), expected, rtol=1e-2, atol=1e-2 * np.abs(expected).max())


# --- einsum: a composition of dispatched ops, so autocast reaches its matmuls ----------------------------------

# (equation, operand shapes, whether torch's einsum contracts through bmm: cpu autocast casts only those)
EINSUM_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)], True),                      # matmul
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], True),             # batch matmul
    ("i,j->ij", [(3,), (4,)], False),                           # outer: a mul
    ("i,i->", [(4,), (4,)], True),                              # dot
    ("ii", [(4, 4)], False),                                    # trace
    ("ii->i", [(4, 4)], False),                                 # diagonal
    ("ij->", [(3, 4)], False),                                  # sum
    ("ij->ji", [(3, 4)], False),                                # transpose
    ("...ij,...jk", [(2, 3, 4), (4, 5)], True),                 # ellipsis, implicit output
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (3, 4, 5)], True),    # broadcast ellipsis
    ("iij,jk->ik", [(3, 3, 4), (4, 5)], True),                  # repeated index in one operand
    ("ij,kj->ik", [(3, 4), (1, 4)], True),                      # a broadcast dimension of size 1
    ("bij,jk->bki", [(2, 3, 4), (4, 5)], True),                 # output order needs the operands swapped
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)], True),           # three operands
    ("ij,jk->ik", [(3, 0), (0, 4)], True),                      # an empty contraction
]
EINSUM_IDS = [eq for eq, _, _ in EINSUM_CASES]


def _einsum_operands(m, device, shapes, dtype="float32", requires_grad=False):
    rng = np.random.default_rng(3)
    return [m.tensor(rng.standard_normal(s).astype(np.float32), device=device).to(getattr(m, dtype))
            .requires_grad_(requires_grad) for s in shapes]


def test_einsum_is_a_composite_with_no_kernel_of_its_own():
    op = npusim.ops.aten.einsum.default
    assert op.has_kernel_for_dispatch_key("CompositeImplicitAutograd")
    assert not op.has_kernel_for_dispatch_key("CPU") and not op.has_kernel_for_dispatch_key("PrivateUse1")
    before = npusim.npu.fallback_stats()
    with warnings.catch_warnings():
        warnings.simplefilter("error")     # the CPU fallback would warn
        a, b = _einsum_operands(npusim, "npu", [(3, 4), (4, 5)])
        assert npusim.einsum("ij,jk->ik", a, b).device == a.device
    assert npusim.npu.fallback_stats() == before


@pytest.mark.parametrize("low", LOW, ids=LOW_IDS)
@pytest.mark.parametrize("case", range(len(EINSUM_CASES)), ids=EINSUM_IDS)
def test_einsum_under_autocast_runs_its_matmuls_in_the_autocast_dtype(device, case, low):
    equation, shapes, contracts = EINSUM_CASES[case]
    ops = _einsum_operands(npusim, device, shapes)
    exact = npusim.einsum(equation, *ops)
    with npusim.autocast(device, dtype=low):
        out = npusim.einsum(equation, *ops)
    # the npu runs einsum itself in the lower dtype (torch's CUDA list); the cpu only its matmuls (bmm)
    assert out.dtype is (low if device == "npu" or contracts else npusim.float32)
    assert out.shape == exact.shape
    np.testing.assert_allclose(host(out.float()), host(exact), rtol=0.05, atol=0.05)


@pytest.mark.parametrize("low", LOW, ids=LOW_IDS)
@pytest.mark.parametrize("case", range(len(EINSUM_CASES)), ids=EINSUM_IDS)
def test_gradients_flow_through_einsum_under_autocast(device, case, low):
    equation, shapes, _ = EINSUM_CASES[case]
    ops = _einsum_operands(npusim, device, shapes, requires_grad=True)
    with npusim.autocast(device, dtype=low):
        out = npusim.einsum(equation, *ops)
    (out.float() * 1.5).sum().backward()
    grads = [t.grad for t in ops]
    exact = _einsum_operands(npusim, device, shapes, requires_grad=True)
    (npusim.einsum(equation, *exact) * 1.5).sum().backward()
    for g, e in zip(grads, exact):
        assert g.dtype is npusim.float32 and g.shape == e.shape
        np.testing.assert_allclose(host(g), host(e.grad), rtol=0.05, atol=0.05)


@pytest.mark.oracle
@pytest.mark.parametrize("case", range(len(EINSUM_CASES)), ids=EINSUM_IDS)
def test_einsum_values_and_gradients_match_torch(torch, device, case):
    equation, shapes, _ = EINSUM_CASES[case]
    ops = _einsum_operands(npusim, device, shapes, "float64", requires_grad=True)
    tops = _einsum_operands(torch, "cpu", shapes, "float64", requires_grad=True)
    out, tout = npusim.einsum(equation, *ops), torch.einsum(equation, *tops)
    assert out.dtype is npusim.float64 and tuple(out.shape) == tuple(tout.shape)
    np.testing.assert_allclose(host(out), tout.detach().numpy(), rtol=1e-12, atol=1e-12)
    weights = np.linspace(-1, 2, max(out.numel(), 1))[:out.numel()].reshape(tuple(out.shape))
    (out * npusim.tensor(weights, device=device)).sum().backward()
    (tout * torch.tensor(weights)).sum().backward()
    for t, tt in zip(ops, tops):
        np.testing.assert_allclose(host(t.grad), tt.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.oracle
@pytest.mark.parametrize("low", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", range(len(EINSUM_CASES)), ids=EINSUM_IDS)
def test_einsum_under_autocast_matches_torch(torch, device, case, low):
    """The cpu against torch's cpu autocast; the npu against torch's CUDA autocast, which casts einsum's
    operands to the lower dtype (written out on torch's cpu)."""
    equation, shapes, _ = EINSUM_CASES[case]
    ops = _einsum_operands(npusim, device, shapes, requires_grad=True)
    tops = _einsum_operands(torch, "cpu", shapes, requires_grad=True)
    with npusim.autocast(device, dtype=getattr(npusim, low)):
        out = npusim.einsum(equation, *ops)
    if device == "cpu":
        with torch.autocast("cpu", dtype=getattr(torch, low)):
            tout = torch.einsum(equation, *tops)
    else:
        tout = torch.einsum(equation, *[t.to(getattr(torch, low)) for t in tops])
    assert str(out.dtype).replace("npusim.", "") == str(tout.dtype).replace("torch.", "")
    np.testing.assert_allclose(host(out.float()), tout.float().detach().numpy(), rtol=1e-2, atol=1e-2)
    out.float().sum().backward()
    tout.float().sum().backward()
    for t, tt in zip(ops, tops):
        assert t.grad.dtype is npusim.float32
        np.testing.assert_allclose(host(t.grad), tt.grad.numpy(), rtol=2e-2, atol=2e-2)


EINSUM_ERRORS = [
    ("ij,jk->ik", [(2, 3), (4, 5)], "float32"),     # sizes that do not broadcast
    ("ii", [(3, 4)], "float32"),                    # a repeated index of two sizes
    ("ij,jk", [(2, 3)], "float32"),                 # too few operands
    ("i", [(2,), (2,)], "float32"),                 # too many operands
    ("i1->i", [(2, 3)], "float32"),                 # not a letter
    ("ij->ii", [(2, 3)], "float32"),                # an output letter twice
    ("ij->k", [(2, 3)], "float32"),                 # an output letter no operand has
    ("...i...", [(2, 3)], "float32"),               # two ellipses
    ("i.j", [(2, 3)], "float32"),                   # a lone dot
    ("ijk", [(2, 3)], "float32"),                   # more letters than dimensions
    ("ij,jk->ik", [(2, 3), (3, 4)], "mixed"),       # float32 with float64: bmm's dtype error
    ("ij,jk->ik", [(2, 3), (3, 4)], "bool"),        # bmm has no bool kernel
]


@pytest.mark.oracle
@pytest.mark.parametrize("autocast", [False, True], ids=["plain", "autocast"])
@pytest.mark.parametrize("case", range(len(EINSUM_ERRORS)), ids=[e[0] for e in EINSUM_ERRORS])
def test_einsum_errors_match_torch(torch, case, autocast):
    equation, shapes, dtype = EINSUM_ERRORS[case]

    def error(m):
        ops = _einsum_operands(m, "cpu", shapes, "float32" if dtype == "mixed" else dtype)
        if dtype == "mixed":
            ops[1] = ops[1].double()
        with m.autocast("cpu", enabled=autocast):
            with pytest.raises(Exception) as info:
                m.einsum(equation, *ops)
        return type(info.value).__name__, str(info.value).replace("npusim", "torch")
    assert error(npusim) == error(torch)


# --- matrix norms through singular values refuse 16-bit inputs, also under autocast ------------------------------

MATRIX_NORM_LOW = [
    lambda m, h: m.linalg.matrix_norm(h, "nuc"),
    lambda m, h: m.linalg.matrix_norm(h, 2),
    lambda m, h: m.linalg.matrix_norm(h, -2, dtype=m.float32),   # a wider dtype= does not lift the check
    lambda m, h: m.linalg.norm(h, "nuc"),
]


@pytest.mark.parametrize("low", LOW, ids=LOW_IDS)
def test_singular_value_norms_of_an_autocast_matmul_raise_torchs_error(device, low):
    x, w = t((4, 4), device=device), t((4, 4), device=device)
    name = "Half" if low is npusim.float16 else "BFloat16"
    with npusim.autocast(device, dtype=low):
        y = npusim.mm(x, w)
        for fn in MATRIX_NORM_LOW:
            with pytest.raises(RuntimeError, match=f"^linalg.matrix_norm: Low precision dtypes not supported. "
                                                   f"Got {name}$"):
                fn(npusim, y.to(low))   # cpu autocast's matmul gives bfloat16 whatever low is
        if device == "npu":   # the Frobenius norm is fine: float32, as linalg_vector_norm's policy says
            assert npusim.linalg.matrix_norm(y).dtype is npusim.float32


@pytest.mark.oracle
@pytest.mark.parametrize("low", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", range(len(MATRIX_NORM_LOW)))
def test_singular_value_norm_errors_match_torch(torch, case, low):
    def error(m):
        h = m.ones(3, 4).to(getattr(m, low))
        with pytest.raises(Exception) as info:
            MATRIX_NORM_LOW[case](m, h)
        return type(info.value).__name__, str(info.value)
    assert error(npusim) == error(torch)
