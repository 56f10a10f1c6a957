"""vmap through batching rules: each rule family equals the per-sample loop and torch.func.vmap; nesting, in_dims /
out_dims, randomness, chunk_size, errors, in-place rules and per-sample gradients on the fast path."""
from __future__ import annotations

import numpy as np
import pytest

import npusim
import npusim.func as F
from npusim import nn
from npusim.func import batched_fallback
from conftest import host

RNG = np.random.default_rng(7)
A = RNG.standard_normal((4, 3, 5))
B = RNG.standard_normal((4, 5, 2))
V = RNG.standard_normal((4, 5))
W = RNG.standard_normal((5, 3))
IDX = np.array([2, 0, 1])

# (name, function, in_dims): each runs under vmap over dim 0 of the (4, ...) inputs
CASES = [
    ("elementwise", lambda a, v: (a.sin() * 2 + v).exp().clamp(max=3.0) - a.tanh(), (0, 0)),
    ("elementwise_unbatched", lambda a, w: a * w.t() + 1, (0, None)),
    ("where_lerp", lambda a, v: npusim.where(a > 0, a, v).lerp(a, 0.3), (0, 0)),
    ("reductions", lambda a, v: (a.sum(), a.mean(1), a.amax(-1), a.std(0), v.logsumexp(0), a.argmax(1)), (0, 0)),
    ("softmax", lambda a, v: (a.softmax(-1), a.log_softmax(0), a.cumsum(1)), (0, 0)),
    ("views", lambda a, v: (a.t(), a.reshape(15), a.view(5, 3), a.unsqueeze(1), a[:, 1:4], a[1], a.permute(1, 0),
                            a.flatten(), v.expand(2, 5), a.transpose(0, 1).unsqueeze(0).squeeze(0)), (0, 0)),
    ("splits_joins", lambda a, v: (npusim.cat([a, a], 1), npusim.stack([v, v], 0), a.split(2, 1)[0],
                                   a.chunk(3, 0)[1], a.unbind(0)[2]), (0, 0)),
    ("joins_unbatched", lambda a, w: (npusim.cat([a, w.t()], 0), npusim.stack([a, w.t()], 2)), (0, None)),
    ("indexing", lambda a, v: (a.index_select(1, npusim.tensor(IDX, device=a.device)),
                               a[:, npusim.tensor(IDX, device=a.device)],
                               a.gather(1, npusim.tensor(IDX, device=a.device).expand(3, 3))), (0, 0)),
    ("matmul", lambda a, b: (a @ b, a.mm(b), (a @ b).sum(0) @ b.t()), (0, 0)),
    ("matmul_unbatched", lambda a, w: (a @ w, w.t() @ a.t(), npusim.nn.functional.linear(a, w.t())), (0, None)),
    ("matrix_vector", lambda v, w: (w.t() @ v, v @ w, v.dot(v), npusim.outer(v, v)), (0, None)),
    ("addmm", lambda a, w: npusim.addmm(w[:3], a, w, beta=0.5, alpha=2.0), (0, None)),
    ("losses", lambda a, v: (npusim.nn.functional.l1_loss(a, a.sin()), npusim.nn.functional.smooth_l1_loss(a, v),
                             npusim.nn.functional.huber_loss(a, v, reduction="sum", delta=0.5),
                             npusim.nn.functional.binary_cross_entropy_with_logits(a, a.sigmoid(), pos_weight=v.exp()),
                             npusim.nn.functional.kl_div(a.log_softmax(-1), v.softmax(-1), reduction="batchmean")),
     (0, 0)),
    ("flip_roll_tril", lambda a, v: (a.flip(0), a.roll(1, 1), a.roll((1, 2), (0, 1)), a.tril(), a.triu(1)), (0, 0)),
]


def _both(torch, device, arrays):
    ours = [npusim.tensor(a, dtype=npusim.float64, device=device) for a in arrays]
    theirs = [torch.tensor(a, dtype=torch.float64) for a in arrays]
    return ours, theirs


def _arrays(name):
    if name in ("elementwise_unbatched", "joins_unbatched", "matmul_unbatched", "addmm"):
        return [A, W]
    if name == "matmul":
        return [A, B]
    if name == "matrix_vector":
        return [V, W]
    return [A, V]


def _flat(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _loop(fn, args, in_dims):
    outs = [fn(*[a if d is None else a[i] for a, d in zip(args, in_dims)]) for i in range(4)]
    return [npusim.stack(list(parts)) for parts in zip(*[_flat(o) for o in outs])]


@pytest.mark.parametrize("name,fn,in_dims", CASES, ids=[c[0] for c in CASES])
def test_rule_families_equal_the_per_sample_loop(device, name, fn, in_dims):
    args = [npusim.tensor(a, dtype=npusim.float64, device=device) for a in _arrays(name)]
    before = sum(batched_fallback.STATS["per_sample"].values())
    loops = batched_fallback.STATS["whole_function_loops"]
    got = _flat(F.vmap(fn, in_dims=in_dims)(*args))
    assert batched_fallback.STATS["whole_function_loops"] == loops
    want = _loop(fn, args, in_dims)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(host(g), host(w), rtol=1e-12, atol=1e-12)
    assert sum(batched_fallback.STATS["per_sample"].values()) == before, batched_fallback.STATS["per_sample"]


@pytest.mark.oracle
@pytest.mark.parametrize("name,fn,in_dims", CASES, ids=[c[0] for c in CASES])
def test_rule_families_equal_torch(torch, device, name, fn, in_dims):
    ours, theirs = _both(torch, device, _arrays(name))
    tfn = _torch_version(torch, fn)
    got = _flat(F.vmap(fn, in_dims=in_dims)(*ours))
    want = _flat(torch.func.vmap(tfn, in_dims=in_dims)(*theirs))
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(host(g), w.numpy(), rtol=1e-10, atol=1e-12)


def _torch_version(torch, fn):
    """``fn`` with npusim's namespace read as torch's (the lambdas name npusim.* functions)."""
    import types
    g = dict(fn.__globals__)
    g["npusim"] = torch
    return types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)


def test_unruled_ops_take_the_per_op_fallback(device):
    x = npusim.tensor(A, device=device)
    got = F.vmap(lambda a: npusim.flip(a, [0]).tril() + 1)(x)
    want = npusim.stack([npusim.flip(a, [0]).tril() + 1 for a in x])
    assert npusim.equal(got, want)


@pytest.mark.oracle
def test_nesting_in_dims_out_dims_and_chunks(torch, device):
    (a, v), (ta, tv) = _both(torch, device, [A, V])
    f = lambda x, y: (x * y).sum(-1)   # noqa: E731
    same = lambda o, t: np.testing.assert_allclose(host(o), t.numpy(), rtol=1e-12)   # noqa: E731
    same(F.vmap(F.vmap(f, in_dims=(0, None)), in_dims=(None, 0))(a, v),
         torch.func.vmap(torch.func.vmap(f, in_dims=(0, None)), in_dims=(None, 0))(ta, tv))
    same(F.vmap(F.vmap(lambda x: x @ x.t()))(a), torch.func.vmap(torch.func.vmap(lambda x: x @ x.t()))(ta))
    same(F.vmap(lambda x: x.t(), in_dims=2, out_dims=1)(a), torch.func.vmap(lambda x: x.t(), in_dims=2,
                                                                           out_dims=1)(ta))
    d = F.vmap(lambda p: {"s": p["x"].sum(0), "w": p["y"]}, in_dims=({"x": 1, "y": None},),
               out_dims={"s": 1, "w": None})({"x": a, "y": v})
    td = torch.func.vmap(lambda p: {"s": p["x"].sum(0), "w": p["y"]}, in_dims=({"x": 1, "y": None},),
                         out_dims={"s": 1, "w": None})({"x": ta, "y": tv})
    same(d["s"], td["s"])
    same(d["w"], td["w"])
    same(F.vmap(lambda x: x.exp().sum(0), chunk_size=3)(a), torch.func.vmap(lambda x: x.exp().sum(0),
                                                                           chunk_size=3)(ta))
    same(F.vmap(lambda x: v[0] * 2)(a), torch.func.vmap(lambda x: tv[0] * 2)(ta))   # an unbatched output


@pytest.mark.oracle
def test_errors_match_torch(torch, device):
    (a,), (ta,) = _both(torch, device, [A])
    cases = [
        (lambda x: x.sum().item(), lambda x: x.sum().item()),
        (lambda x: float(x.sum()), lambda x: float(x.sum())),
        (lambda x: x if x.sum() > 0 else -x, lambda x: x if x.sum() > 0 else -x),
        (lambda x: npusim.zeros(3, 5, dtype=x.dtype, device=x.device).copy_(x),
         lambda x: torch.zeros(3, 5, dtype=x.dtype).copy_(x)),
        (lambda x: npusim.zeros(3, 5, dtype=x.dtype, device=x.device).mul_(x),
         lambda x: torch.zeros(3, 5, dtype=x.dtype).mul_(x)),
    ]
    for name, extra in (("add_", ()), ("sub_", ()), ("pow_", ()), ("lerp_", (0.5,)), ("addcmul_", ("x",)),
                        ("fmod_", ()), ("copysign_", ())):
        def ours(x, name=name, extra=extra):
            return getattr(npusim.zeros(5, dtype=x.dtype, device=x.device), name)(
                x, *[x if e == "x" else e for e in extra])

        def theirs(x, name=name, extra=extra):
            return getattr(torch.zeros(5, dtype=x.dtype), name)(x, *[x if e == "x" else e for e in extra])
        cases.append((ours, theirs))
    cases.append((lambda x: npusim.zeros(5, dtype=x.dtype, device=x.device).index_add_(
        0, npusim.tensor([0, 1, 0], device=x.device), x), lambda x: torch.zeros(5, dtype=x.dtype).index_add_(
        0, torch.tensor([0, 1, 0]), x)))
    cases.append((lambda x: npusim.zeros(5, dtype=x.dtype, device=x.device).fill_(x[0, 0]),
                  lambda x: torch.zeros(5, dtype=x.dtype).fill_(x[0, 0])))
    for ours, theirs in cases:
        with pytest.raises(RuntimeError) as want:
            torch.func.vmap(theirs)(ta)
        with pytest.raises(RuntimeError) as got:
            F.vmap(ours)(a)
        assert str(got.value) == str(want.value)


def test_inplace_on_a_batch_writes_the_input(device):
    x = npusim.tensor(A, device=device)
    before = x.clone()
    F.vmap(lambda a: a.mul_(2))(x)
    assert npusim.equal(x, before * 2)
    y = npusim.tensor(A, device=device)
    out = F.vmap(lambda a: a.clone().add_(1))(y)
    assert npusim.equal(out, y + 1)


def test_randomness_modes(device):
    x = npusim.zeros(5, 3, device=device)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        F.vmap(lambda a: nn.functional.dropout(a, 0.5))(x)
    same = F.vmap(lambda a: npusim.rand_like(a), randomness="same")(x)
    assert all(npusim.equal(same[i], same[0]) for i in range(5))
    diff = F.vmap(lambda a: npusim.rand_like(a), randomness="different")(x)
    assert not npusim.equal(diff[0], diff[1])
    drop = F.vmap(lambda a: nn.functional.dropout(a + 1, 0.5), randomness="different")(x)
    assert set(np.unique(host(drop))) <= {0.0, 2.0}
    # chunks: "same" starts every chunk from the same generator state (as torch's chunked vmap), "different" not
    same = F.vmap(lambda a: a + npusim.rand(3, device=a.device), randomness="same", chunk_size=2)(x)
    assert all(npusim.equal(same[i], same[0]) for i in range(5))
    diff = F.vmap(lambda a: a + npusim.rand(3, device=a.device), randomness="different", chunk_size=2)(x)
    assert len({tuple(r) for r in host(diff).tolist()}) == 5


@pytest.mark.parametrize("kw", [{}, {"reduction": "sum"}, {"ignore_index": 1}, {"label_smoothing": 0.1}])
def test_per_sample_cross_entropy_gradients_take_the_fast_path(device, kw):
    npusim.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3)).to(device).double()
    params = {k: v.detach() for k, v in model.named_parameters()}
    weight = npusim.tensor([0.5, 1.0, 2.0], dtype=npusim.float64, device=device)

    def loss(p, x, y):
        out = F.functional_call(model, p, (x.unsqueeze(0),))
        return nn.functional.cross_entropy(out, y.unsqueeze(0), weight=weight, **kw)

    x = npusim.randn(16, 6, dtype=npusim.float64, device=device)
    y = npusim.randint(0, 3, (16,), device=device)
    batched_fallback.STATS["per_sample"].clear()
    loops = batched_fallback.STATS["whole_function_loops"]
    got = F.vmap(F.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    assert not batched_fallback.STATS["per_sample"], batched_fallback.STATS["per_sample"]
    assert batched_fallback.STATS["whole_function_loops"] == loops
    loop = [F.grad(loss)(params, x[i], y[i]) for i in range(16)]
    for k in params:
        np.testing.assert_allclose(host(got[k]), host(npusim.stack([r[k] for r in loop])), rtol=1e-10, atol=1e-12)
    # grad of vmap: the gradient of the summed per-sample losses
    outer = F.grad(lambda p: F.vmap(loss, in_dims=(None, 0, 0))(p, x, y).sum())(params)
    summed = F.grad(lambda p: sum(loss(p, x[i], y[i]) for i in range(16)))(params)
    for k in params:
        np.testing.assert_allclose(host(outer[k]), host(summed[k]), rtol=1e-10, atol=1e-12)


@pytest.mark.oracle
def test_per_sample_gradients_of_an_mlp_take_the_fast_path(torch, device):
    npusim.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3)).to(device).double()
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, x, y):
        out = F.functional_call(model, p, (x.unsqueeze(0),))
        return ((out - y) ** 2).mean()

    x = npusim.randn(16, 6, dtype=npusim.float64, device=device)
    y = npusim.randn(16, 3, dtype=npusim.float64, device=device)
    batched_fallback.STATS["per_sample"].clear()
    loops = batched_fallback.STATS["whole_function_loops"]
    got = F.vmap(F.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    assert not batched_fallback.STATS["per_sample"], batched_fallback.STATS["per_sample"]
    assert batched_fallback.STATS["whole_function_loops"] == loops
    loop = [F.grad(loss)(params, x[i], y[i]) for i in range(16)]
    for k in params:
        np.testing.assert_allclose(host(got[k]), host(npusim.stack([r[k] for r in loop])), rtol=1e-10, atol=1e-12)

    tmodel = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).double()
    tparams = {k: torch.tensor(host(v)) for k, v in params.items()}

    def tloss(p, xx, yy):
        out = torch.func.functional_call(tmodel, p, (xx.unsqueeze(0),))
        return ((out - yy) ** 2).mean()

    want = torch.func.vmap(torch.func.grad(tloss), in_dims=(None, 0, 0))(tparams, torch.tensor(host(x)),
                                                                          torch.tensor(host(y)))
    for k in params:
        np.testing.assert_allclose(host(got[k]), want[k].numpy(), rtol=1e-10, atol=1e-12)


NN_CASES = [
    ("conv_pool_norm", lambda m, a: nn.functional.max_pool2d(m["conv"](a), 2).flatten(1)),
    ("layer_norm_pad", lambda m, a: nn.functional.pad(m["norm"](a), (1, 2), value=0.5)),
    ("avg_adaptive_pool", lambda m, a: (nn.functional.avg_pool2d(a, 2), nn.functional.adaptive_avg_pool2d(a, 1))),
    ("mse_sort_topk", lambda m, a: (nn.functional.mse_loss(a, a.cos()), a.sort(-1)[0], a.topk(2, dim=1)[1])),
    ("linalg_repeat", lambda m, a: (npusim.linalg.inv(a[0, :, :3, :3] + 3 * npusim.eye(3, dtype=a.dtype,
                                                                                      device=a.device)),
                                    npusim.linalg.svdvals(a[0]), a[0].repeat(2, 1, 1))),
]


@pytest.mark.parametrize("name,fn", NN_CASES, ids=[c[0] for c in NN_CASES])
def test_nn_rules_equal_the_per_sample_loop(device, name, fn):
    npusim.manual_seed(0)
    mods = {"conv": nn.Conv2d(3, 4, 3).to(device).double(), "norm": nn.LayerNorm(6).to(device).double()}
    x = npusim.randn(4, 2, 3, 6, 6, dtype=npusim.float64, device=device)
    batched_fallback.STATS["per_sample"].clear()
    loops = batched_fallback.STATS["whole_function_loops"]
    got = _flat(F.vmap(lambda a: fn(mods, a))(x))
    assert batched_fallback.STATS["whole_function_loops"] == loops
    assert not batched_fallback.STATS["per_sample"], batched_fallback.STATS["per_sample"]
    want = _loop(lambda a: fn(mods, a), [x], (0,))
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(host(g), host(w), rtol=1e-10, atol=1e-12)


def test_per_sample_gradients_of_a_convnet(device):
    npusim.manual_seed(0)
    cnn = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 4, 3, stride=2, groups=2),
                        nn.Flatten(), nn.LayerNorm(4), nn.Linear(4, 2)).to(device).double()
    params = {k: v.detach() for k, v in cnn.named_parameters()}

    def loss(p, x, y):
        return nn.functional.mse_loss(F.functional_call(cnn, p, (x.unsqueeze(0),)), y.unsqueeze(0))

    x = npusim.randn(6, 3, 6, 6, dtype=npusim.float64, device=device)
    y = npusim.randn(6, 2, dtype=npusim.float64, device=device)
    batched_fallback.STATS["per_sample"].clear()
    loops = batched_fallback.STATS["whole_function_loops"]
    got = F.vmap(F.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    assert not batched_fallback.STATS["per_sample"] and batched_fallback.STATS["whole_function_loops"] == loops
    loop = [F.grad(loss)(params, x[i], y[i]) for i in range(6)]
    for k in params:
        np.testing.assert_allclose(host(got[k]), host(npusim.stack([r[k] for r in loop])), rtol=1e-10, atol=1e-12)


def test_unruled_decomposition_that_writes_in_place_runs_per_sample(device):
    v = npusim.randn(4, 3, dtype=npusim.float64, device=device)
    assert npusim.equal(F.vmap(npusim.diag)(v), npusim.stack([npusim.diag(r) for r in v]))


def test_shape_changing_inplace_ops_change_the_batch(device):
    x = npusim.randn(4, 3, 5, device=device)

    def f(a):
        b = a.clone()
        b.unsqueeze_(0)
        b.transpose_(1, 2)
        b.squeeze_(0)
        return b

    assert npusim.equal(F.vmap(f)(x), npusim.stack([f(r) for r in x]))
    with pytest.raises(RuntimeError, match="resize_ on a BatchedTensor"):
        F.vmap(lambda a: a.clone().resize_(2))(x)


@pytest.mark.oracle
def test_inplace_transpose_of_an_input_as_torch(torch, device):
    y = npusim.randn(4, 3, 5, device=device)
    ty = torch.tensor(host(y))
    out = F.vmap(lambda a: a.t_() * 1)(y)
    tout = torch.func.vmap(lambda a: a.t_() * 1)(ty)
    assert tuple(out.shape) == tuple(tout.shape) and tuple(y.shape) == tuple(ty.shape)
    np.testing.assert_allclose(host(out), tout.numpy())


def test_compositions_equal_the_per_sample_loop(device):
    npusim.manual_seed(0)
    x = npusim.randn(4, 3, dtype=npusim.float64, device=device)
    y = npusim.randn(5, 3, dtype=npusim.float64, device=device)
    f = lambda a: (a.sin() * a).sum() + (a @ a) ** 2   # noqa: E731
    g = lambda a, b: (a * b).sum().exp()   # noqa: E731
    close = lambda a, b: np.testing.assert_allclose(host(a), host(b), rtol=1e-10, atol=1e-12)   # noqa: E731
    close(F.vmap(F.jacrev(lambda a: a.sin() * a.sum()))(x),
          npusim.stack([F.jacrev(lambda a: a.sin() * a.sum())(r) for r in x]))
    close(F.vmap(F.hessian(f))(x), npusim.stack([F.hessian(f)(r) for r in x]))
    close(F.vmap(F.vmap(F.grad(g), in_dims=(None, 0)), in_dims=(0, None))(x, y),
          npusim.stack([npusim.stack([F.grad(g)(a, b) for b in y]) for a in x]))
    close(F.grad(lambda a: F.vmap(f)(a).sum())(x), F.grad(lambda a: sum(f(r) for r in a))(x))
    close(F.vmap(lambda a: F.jvp(npusim.sin, (a,), (a,))[1])(x), x.cos() * x)
    close(F.vmap(F.jacfwd(lambda a: a.sin() * 2))(x), npusim.stack([F.jacfwd(lambda a: a.sin() * 2)(r) for r in x]))

    class Square(npusim.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, grad):
            a, = ctx.saved_tensors
            return 2 * a * grad

    close(F.vmap(lambda a: Square.apply(a))(x), x * x)
    m = nn.Linear(3, 2).to(device).double()
    params, buffers = F.stack_module_state([nn.Linear(3, 2).to(device).double() for _ in range(4)])
    close(F.vmap(lambda p, b: F.functional_call(m, (p, b), (x,)))(params, buffers),
          npusim.stack([F.functional_call(m, {k: v[i] for k, v in params.items()}, (x,)) for i in range(4)]))
    close(F.vmap(lambda a: a.view(-1) * 2, in_dims=1)(x), x.t() * 2)   # a view of a batch mapped over dim 1


@pytest.mark.oracle
def test_per_sample_hessians_equal_torch(torch, device):
    x = npusim.randn(4, 3, dtype=npusim.float64, device=device)
    tx = torch.tensor(host(x))
    f = lambda a: (a.sin() * a).sum() + (a @ a) ** 2   # noqa: E731
    np.testing.assert_allclose(host(F.vmap(F.hessian(f))(x)), torch.func.vmap(torch.func.hessian(f))(tx).numpy(),
                               rtol=1e-10, atol=1e-12)


@pytest.mark.oracle
def test_out_arguments_raise_as_torch(torch, device):
    (x,), (tx,) = _both(torch, device, [A])
    for ours, theirs in ((lambda a: npusim.sin(a, out=npusim.empty_like(a)), lambda a: torch.sin(a, out=torch.empty_like(a))),
                         (lambda a: npusim.add(a, 1, out=npusim.empty_like(a)),
                          lambda a: torch.add(a, 1, out=torch.empty_like(a)))):
        with pytest.raises(RuntimeError) as want:
            torch.func.vmap(theirs)(tx)
        with pytest.raises(RuntimeError) as got:
            F.vmap(ours)(x)
        assert str(got.value) == str(want.value)


def test_batched_index_tensors_take_the_rule(device):
    x = npusim.randn(4, 3, 5, device=device)
    i = npusim.randint(0, 3, (4, 2), device=device)
    j = npusim.randint(0, 5, (4, 2), device=device)
    w = npusim.randn(6, 2, device=device)
    mask = npusim.randn(3, 5, device=device) > 0
    batched_fallback.STATS["per_sample"].clear()
    for f in (lambda a, ii, jj: a[ii], lambda a, ii, jj: a[ii, jj], lambda a, ii, jj: a[ii, :2],
              lambda a, ii, jj: a[0][ii], lambda a, ii, jj: w[ii], lambda a, ii, jj: a[mask]):
        got = F.vmap(f)(x, i, j)
        want = npusim.stack([f(x[k], i[k], j[k]) for k in range(4)])
        assert got.shape == want.shape and npusim.equal(got, want)
    assert not batched_fallback.STATS["per_sample"], batched_fallback.STATS["per_sample"]


@pytest.mark.oracle
def test_dynamic_shape_errors_match_torch(torch, device):
    (a,), (ta,) = _both(torch, device, [A])
    for ours, theirs in ((lambda x: x[x > 0], lambda x: x[x > 0]), (lambda x: x.nonzero(), lambda x: x.nonzero()),
                         (lambda x: npusim.masked_select(x, x > 0), lambda x: torch.masked_select(x, x > 0)),
                         (lambda x: npusim.unique(x), lambda x: torch.unique(x))):
        with pytest.raises(RuntimeError) as want:
            torch.func.vmap(theirs)(ta)
        with pytest.raises(RuntimeError) as got:
            F.vmap(ours)(a)
        assert str(got.value) == str(want.value)
