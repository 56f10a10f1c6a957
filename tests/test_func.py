"""npusim.func (torch.func): vmap, grad, vjp, jvp, jacrev, jacfwd, hessian, functional_call against torch.func."""
from __future__ import annotations

import numpy as np
import pytest

import npusim
import npusim.func as F
from npusim import nn
from conftest import host

RNG = np.random.default_rng(1)
X34 = RNG.standard_normal((3, 4))
Y34 = RNG.standard_normal((3, 4))
X4 = RNG.standard_normal(4)
W45 = RNG.standard_normal((4, 5))
B5 = RNG.standard_normal(5)
W51 = RNG.standard_normal((5, 1))
T31 = RNG.standard_normal((3, 1))


def both(torch, device, *arrays):
    """The arrays as float64 npusim tensors on ``device`` and as torch tensors."""
    return (tuple(npusim.tensor(a, dtype=npusim.float64, device=device) for a in arrays),
            tuple(torch.tensor(a, dtype=torch.float64) for a in arrays))


def same(ours, theirs, torch):
    """Same nesting (tuples, lists, dicts), shapes and values."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, npusim.Tensor), type(ours)
        assert tuple(ours.shape) == tuple(theirs.shape), (tuple(ours.shape), tuple(theirs.shape))
        np.testing.assert_allclose(host(ours), theirs.detach().numpy(), rtol=1e-7, atol=1e-9)
        return
    assert type(ours) is type(theirs), (type(ours), type(theirs))
    assert len(ours) == len(theirs)
    if isinstance(theirs, dict):
        assert list(ours) == list(theirs)
        for k in theirs:
            same(ours[k], theirs[k], torch)
        return
    for a, b in zip(ours, theirs):
        same(a, b, torch)


def same_error(ours, theirs):
    """Both calls raise the same exception type with the same message (torch's names read as npusim's)."""
    with pytest.raises(Exception) as want:
        theirs()
    with pytest.raises(type(want.value)) as got:
        ours()
    assert str(got.value) == str(want.value).replace("torch.", "npusim."), (str(got.value), str(want.value))


def mlp_loss(params, x, y):
    w1, b1, w2 = params
    return (((x @ w1 + b1).tanh() @ w2 - y) ** 2).mean()


def dict_loss(p, x):
    return ((x * p["a"]).sin() * p["b"]).sum()


# --- vmap ------------------------------------------------------------------------------------------------------

@pytest.mark.oracle
def test_vmap_values_and_shapes(torch, device):
    (x, y, v, w), (tx, ty, tv, tw) = both(torch, device, X34, Y34, X4, W45)
    cases = [
        (lambda a: a.sin() * 2 + 1, {}, (x,), (tx,)),                                  # elementwise
        (lambda a, m: a @ m, {"in_dims": (0, None)}, (x, w), (tx, tw)),                # matmul, broadcast arg
        (lambda a: a.sum(), {}, (x,), (tx,)),                                          # reduction to a scalar
        (lambda a, b: (a * b).softmax(0), {"in_dims": (1, 1)}, (x, y), (tx, ty)),
        (lambda a: a.cumsum(0), {"out_dims": 1}, (x,), (tx,)),
        (lambda a: a * 3, {"in_dims": -1, "out_dims": -1}, (x,), (tx,)),
        (lambda a: (a.max(), a.argmax()), {}, (x,), (tx,)),                            # a tuple of outputs
        (lambda a: (a, a.sum()), {"out_dims": (1, 0)}, (x,), (tx,)),
        (lambda a, m: {"o": a @ m, "n": [a.norm()]}, {"in_dims": (0, None)}, (x, w), (tx, tw)),
        (lambda a, m: m.sum(), {"in_dims": (0, None)}, (x, w), (tx, tw)),              # output independent of batch
        (lambda a, m: (a * 2, m), {"in_dims": (0, None), "out_dims": (0, None)}, (x, w), (tx, tw)),
    ]
    for fn, kw, args, targs in cases:
        same(F.vmap(fn, **kw)(*args), torch.func.vmap(fn, **kw)(*targs), torch)


@pytest.mark.oracle
def test_vmap_pytrees_kwargs_and_nesting(torch, device):
    (x, y, v), (tx, ty, tv) = both(torch, device, X34, Y34, X4)
    same(F.vmap(lambda l: l[0] * l[1])([x, y]), torch.func.vmap(lambda l: l[0] * l[1])([tx, ty]), torch)
    same(F.vmap(lambda d: d["a"] + d["b"], in_dims=({"a": 0, "b": None},))({"a": x, "b": v}),
         torch.func.vmap(lambda d: d["a"] + d["b"], in_dims=({"a": 0, "b": None},))({"a": tx, "b": tv}), torch)
    same(F.vmap(lambda a, s=None: a * s)(x, s=v), torch.func.vmap(lambda a, s=None: a * s)(tx, s=tv), torch)
    # a non-tensor argument with in_dim None
    same(F.vmap(lambda a, k: a * k, in_dims=(0, None))(x, 3),
         torch.func.vmap(lambda a, k: a * k, in_dims=(0, None))(tx, 3),
         torch)
    # nested: an outer product of rows
    outer = F.vmap(F.vmap(lambda a, b: (a * b).sum(), in_dims=(None, 0)), in_dims=(0, None))
    touter = torch.func.vmap(torch.func.vmap(lambda a, b: (a * b).sum(), in_dims=(None, 0)), in_dims=(0, None))
    same(outer(x, y), touter(tx, ty), torch)
    assert npusim.vmap is F.vmap


@pytest.mark.oracle
def test_vmap_empty_batch(torch, device):
    (x,), (tx,) = both(torch, device, np.zeros((0, 4)))
    same(F.vmap(lambda a: a.sum())(x), torch.func.vmap(lambda a: a.sum())(tx), torch)
    same(F.vmap(lambda a: a.unsqueeze(0) * 2, out_dims=1)(x), torch.func.vmap(lambda a: a.unsqueeze(0) * 2,
                                                                                 out_dims=1)(tx), torch)


@pytest.mark.oracle
def test_vmap_errors_match_torch(torch, device):
    (x, z, s), (tx, tz, ts) = both(torch, device, X34, np.ones((2, 4)), np.array(1.0))
    tv = torch.func.vmap

    def ident(a):
        return a

    cases = [
        (lambda: F.vmap(lambda a, b: a + b)(x, z), lambda: tv(lambda a, b: a + b)(tx, tz)),
        (lambda: F.vmap(ident, in_dims=None)(x), lambda: tv(ident, in_dims=None)(tx)),
        (lambda: F.vmap(lambda a, b: a, in_dims=(None, None))(x, x),
         lambda: tv(lambda a, b: a, in_dims=(None, None))(tx, tx)),
        (lambda: F.vmap(ident, in_dims=2)(x), lambda: tv(ident, in_dims=2)(tx)),
        (lambda: F.vmap(ident, in_dims=-3)(x), lambda: tv(ident, in_dims=-3)(tx)),
        (lambda: F.vmap(ident, in_dims=1.0)(x), lambda: tv(ident, in_dims=1.0)(tx)),
        (lambda: F.vmap(lambda a, b: a, in_dims=(0,))(x, x), lambda: tv(lambda a, b: a, in_dims=(0,))(tx, tx)),
        (lambda: F.vmap(lambda a, b: a, in_dims=(0, 0))(x, 3), lambda: tv(lambda a, b: a, in_dims=(0, 0))(tx, 3)),
        (lambda: F.vmap(lambda a: a, in_dims=("0",))(x), lambda: tv(lambda a: a, in_dims=("0",))(tx)),
        (lambda: F.vmap(lambda: 1)(), lambda: tv(lambda: 1)()),
        (lambda: F.vmap(lambda a: 1.0)(x), lambda: tv(lambda a: 1.0)(tx)),
        (lambda: F.vmap(lambda a: None)(x), lambda: tv(lambda a: None)(tx)),
        (lambda: F.vmap(ident, out_dims=3)(x), lambda: tv(ident, out_dims=3)(tx)),
        (lambda: F.vmap(lambda a: (a, a), out_dims=(0, 0, 0))(x), lambda: tv(lambda a: (a, a), out_dims=(0, 0, 0))(tx)),
        (lambda: F.vmap(ident, out_dims=None)(x), lambda: tv(ident, out_dims=None)(tx)),
        (lambda: F.vmap(ident, out_dims=1.0)(x), lambda: tv(ident, out_dims=1.0)(tx)),
        (lambda: F.vmap(ident, randomness="foo")(x), lambda: tv(ident, randomness="foo")(tx)),
        (lambda: F.vmap(ident, chunk_size=0)(x), lambda: tv(ident, chunk_size=0)(tx)),
        (lambda: F.vmap(3)(x), lambda: tv(3)(tx)),
        (lambda: F.vmap(ident)(s), lambda: tv(ident)(ts)),
        (lambda: F.vmap(lambda l: l[0], in_dims=([0, 0, 0],))([x, x]),
         lambda: tv(lambda l: l[0], in_dims=([0, 0, 0],))([tx, tx])),
    ]
    for ours, theirs in cases:
        same_error(ours, theirs)


@pytest.mark.oracle
def test_vmap_random_op_in_error_mode(torch, device):
    (x,), (tx,) = both(torch, device, X34)
    state = npusim.get_rng_state()
    same_error(lambda: F.vmap(lambda a: a + npusim.rand(4, dtype=a.dtype, device=a.device))(x),
               lambda: torch.func.vmap(lambda a: a + torch.rand(4, dtype=a.dtype))(tx))
    drop = nn.Dropout(0.5)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        F.vmap(drop)(x)
    if device == "cpu":
        assert npusim.equal(npusim.get_rng_state(), state)   # nothing was drawn


def test_vmap_randomness_same_and_different(device):
    x = npusim.zeros(5, 3, device=device)
    npusim.manual_seed(0)
    same_rows = F.vmap(lambda a: a + npusim.rand(3, device=a.device), randomness="same")(x)
    assert all(npusim.equal(same_rows[i], same_rows[0]) for i in range(5))
    npusim.manual_seed(0)
    once = npusim.rand(3, device=device)
    assert npusim.equal(same_rows[0], once)            # what one draw outside vmap gives
    after_same = npusim.rand(3, device=device)
    npusim.manual_seed(0)
    F.vmap(lambda a: a + npusim.rand(3, device=a.device), randomness="same")(x)
    assert npusim.equal(npusim.rand(3, device=device), after_same)   # the generator moved past one draw only
    diff_rows = F.vmap(lambda a: a + npusim.rand(3, device=a.device), randomness="different")(x)
    assert not npusim.equal(diff_rows[0], diff_rows[1])


def test_vmap_out_dims_none_with_unbatched_output(device):
    x = npusim.ones(3, 2, device=device)
    w = npusim.arange(4.0, device=device)
    assert F.vmap(lambda a: w, out_dims=None)(x) is w
    # a non-tensor output with out_dims None is passed through (reading a sample's value, float(a.sum()), raises
    # torch's .item() error instead: tests/test_vmap_batching_errors.py)
    assert F.vmap(lambda a: (a, 1.5), out_dims=(0, None))(x)[1] == 1.5


# --- grad and friends --------------------------------------------------------------------------------------------

@pytest.mark.oracle
def test_grad_values(torch, device):
    (x, y, w1, b1, w2, t), (tx, ty, tw1, tb1, tw2, tt) = both(torch, device, X34, Y34, W45, B5, W51, T31)
    params, tparams = (w1, b1, w2), (tw1, tb1, tw2)
    same(F.grad(mlp_loss)(params, x, t), torch.func.grad(mlp_loss)(tparams, tx, tt), torch)
    same(F.grad(mlp_loss, argnums=(0, 1))(params, x, t), torch.func.grad(mlp_loss, argnums=(0, 1))(tparams, tx, tt),
         torch)
    same(F.grad_and_value(mlp_loss, argnums=-1)(params, x, t),
         torch.func.grad_and_value(mlp_loss, argnums=-1)(tparams, tx, tt), torch)
    same(F.grad(dict_loss)({"a": x, "b": y}, x), torch.func.grad(dict_loss)({"a": tx, "b": ty}, tx), torch)
    aux = F.grad(lambda a: ((a ** 2).sum(), {"m": a.mean()}), has_aux=True)(x)
    taux = torch.func.grad(lambda a: ((a ** 2).sum(), {"m": a.mean()}), has_aux=True)(tx)
    same(aux, taux, torch)
    assert not aux[1]["m"].requires_grad
    # an input the output does not depend on gets zeros
    same(F.grad(lambda a, b: b.sum(), argnums=(0, 1))(x, y),
         torch.func.grad(lambda a, b: b.sum(), argnums=(0, 1))(tx, ty),
         torch)


@pytest.mark.oracle
def test_grad_nests_and_composes_with_autograd(torch, device):
    (v, w), (tv, tw) = both(torch, device, X4, X4[::-1].copy())
    f = lambda a: (a.sin() * a ** 2).sum()   # noqa: E731
    same(F.grad(lambda b: F.grad(lambda a: F.grad(f)(a).sum())(b).sum())(v),
         torch.func.grad(lambda b: torch.func.grad(lambda a: torch.func.grad(f)(a).sum())(b).sum())(tv), torch)
    # the result stays differentiable with respect to an input that requires grad ...
    v.requires_grad_()
    tv.requires_grad_()
    g, tg = F.grad(f)(v), torch.func.grad(f)(tv)
    assert g.requires_grad
    g.sum().backward()
    tg.sum().backward()
    same(v.grad, tv.grad, torch)
    # ... and with respect to a captured tensor that does
    w.requires_grad_()
    tw.requires_grad_()
    g = F.grad(lambda a: (a.exp() * w).sum())(v.detach())
    tg = torch.func.grad(lambda a: (a.exp() * tw).sum())(tv.detach())
    (g ** 2).sum().backward()
    (tg ** 2).sum().backward()
    same(w.grad, tw.grad, torch)
    # nothing outside requires grad: plain results
    assert not F.grad(f)(v.detach()).requires_grad
    assert not F.grad_and_value(f)(v.detach())[1].requires_grad


@pytest.mark.oracle
def test_vjp_and_jvp(torch, device):
    (x, y, c), (tx, ty, tc) = both(torch, device, X34, Y34, np.ones((3, 4)))
    f = lambda a, b: (a * b.exp(), {"s": (a @ b.T).tanh()})   # noqa: E731
    out, fn = F.vjp(f, x, y)
    tout, tfn = torch.func.vjp(f, tx, ty)
    same(out, tout, torch)
    cot, tcot = (c, {"s": c[:, :3]}), (tc, {"s": tc[:, :3]})
    same(fn(cot), tfn(tcot), torch)
    same(fn(cot), tfn(tcot), torch)      # vjp_fn may be called again
    out, fn, aux = F.vjp(lambda a: (a.sin(), a.sum()), x, has_aux=True)
    tout, tfn, taux = torch.func.vjp(lambda a: (a.sin(), a.sum()), tx, has_aux=True)
    same((out, fn(c), aux), (tout, tfn(tc), taux), torch)
    same(F.jvp(f, (x, y), (c, x)), torch.func.jvp(f, (tx, ty), (tc, tx)), torch)
    same(F.jvp(lambda a: (a.cos(), a.norm()), (x,), (y,), has_aux=True),
         torch.func.jvp(lambda a: (a.cos(), a.norm()), (tx,), (ty,), has_aux=True), torch)
    # an integer output has a zero tangent
    same(F.jvp(lambda a: (a * 2, a.argmax()), (x,), (y,)), torch.func.jvp(lambda a: (a * 2, a.argmax()), (tx,), (ty,)),
         torch)


@pytest.mark.oracle
def test_jacobians_and_hessian(torch, device):
    (v, u, w1, b1, w2, x, t), (tv, tu, tw1, tb1, tw2, tx, tt) = both(torch, device, X4, X4 * 2, W45, B5, W51,
                                                                     X34, T31)
    f = lambda a, b: {"o": (a * b[0], b.sin())}   # noqa: E731
    for ours, theirs in ((F.jacrev, torch.func.jacrev), (F.jacfwd, torch.func.jacfwd)):
        same(ours(lambda a: a.sin() * a.sum())(v), theirs(lambda a: a.sin() * a.sum())(tv), torch)
        same(ours(f, argnums=(0, 1))(v, u), theirs(f, argnums=(0, 1))(tv, tu), torch)
        same(ours(lambda d: [d["a"] * 2], argnums=0)({"a": v}), theirs(lambda d: [d["a"] * 2], argnums=0)({"a": tv}),
             torch)
        same(ours(lambda a: (a.exp(), a.sum()), has_aux=True)(v),
             theirs(lambda a: (a.exp(), a.sum()), has_aux=True)(tv), torch)
        same(ours(mlp_loss)((w1, b1, w2), x, t), theirs(mlp_loss)((tw1, tb1, tw2), tx, tt), torch)
    same(F.hessian(lambda a, b: (a * a * b).sum(), argnums=(0, 1))(v, u),
         torch.func.hessian(lambda a, b: (a * a * b).sum(), argnums=(0, 1))(tv, tu), torch)
    same(F.hessian(mlp_loss)((w1, b1, w2), x, t), torch.func.hessian(mlp_loss)((tw1, tb1, tw2), tx, tt), torch)


@pytest.mark.oracle
def test_transform_errors_match_torch(torch, device):
    (x, z, i), (tx, tz, ti) = both(torch, device, X34, np.ones(2), np.ones(3))
    il, til = i.long(), ti.long()
    tf = torch.func
    cases = [
        (lambda: F.grad(lambda a: a)(x), lambda: tf.grad(lambda a: a)(tx)),
        (lambda: F.grad(lambda a: 1.0)(x), lambda: tf.grad(lambda a: 1.0)(tx)),
        (lambda: F.grad(lambda a: a.sum(), has_aux=True)(x), lambda: tf.grad(lambda a: a.sum(), has_aux=True)(tx)),
        (lambda: F.grad(lambda a: a.sum(), argnums=1)(x), lambda: tf.grad(lambda a: a.sum(), argnums=1)(tx)),
        (lambda: F.grad(lambda a: a.sum(), argnums=())(x), lambda: tf.grad(lambda a: a.sum(), argnums=())(tx)),
        (lambda: F.grad(lambda a: a.sum(), argnums=0.0)(x), lambda: tf.grad(lambda a: a.sum(), argnums=0.0)(tx)),
        (lambda: F.grad(lambda a: a.sum(), argnums=(0, 0.5))(x),
         lambda: tf.grad(lambda a: a.sum(), argnums=(0, 0.5))(tx)),
        (lambda: F.grad(lambda a, b: a.sum(), argnums=(0, 0))(x, x),
         lambda: tf.grad(lambda a, b: a.sum(), argnums=(0, 0))(tx, tx)),
        (lambda: F.grad(lambda a: a.sum())(il), lambda: tf.grad(lambda a: a.sum())(til)),
        (lambda: F.grad(lambda a: a)(3.0), lambda: tf.grad(lambda a: a)(3.0)),
        (lambda: F.grad(lambda: x.sum())(), lambda: tf.grad(lambda: tx.sum())()),
        (lambda: F.vjp(lambda a: a * 2, x)[1](z), lambda: tf.vjp(lambda a: a * 2, tx)[1](tz)),
        (lambda: F.vjp(lambda a: a * 2, x)[1]((x,)), lambda: tf.vjp(lambda a: a * 2, tx)[1]((tx,))),
        (lambda: F.vjp(lambda a: (a, {"b": a}), x)[1]((x,)), lambda: tf.vjp(lambda a: (a, {"b": a}), tx)[1]((tx,))),
        (lambda: F.vjp(lambda a: 1.0, x), lambda: tf.vjp(lambda a: 1.0, tx)),
        (lambda: F.vjp(lambda a: a.long(), x), lambda: tf.vjp(lambda a: a.long(), tx)),
        (lambda: F.vjp(lambda a: a, x, has_aux=True), lambda: tf.vjp(lambda a: a, tx, has_aux=True)),
        (lambda: F.jvp(lambda a: a * 2, x, x), lambda: tf.jvp(lambda a: a * 2, tx, tx)),
        (lambda: F.jvp(lambda a: a * 2, (x,), (x, x)), lambda: tf.jvp(lambda a: a * 2, (tx,), (tx, tx))),
        (lambda: F.jvp(lambda a: a * 2, (x,), (i,)), lambda: tf.jvp(lambda a: a * 2, (tx,), (ti,))),
        (lambda: F.jvp(lambda a: x.exp(), (x,), (x,), strict=True),
         lambda: tf.jvp(lambda a: tx.exp(), (tx,), (tx,), strict=True)),
        (lambda: F.jacrev(lambda a: 1.0)(x), lambda: tf.jacrev(lambda a: 1.0)(tx)),
        (lambda: F.jacrev(lambda a: a, has_aux=True)(x), lambda: tf.jacrev(lambda a: a, has_aux=True)(tx)),
        (lambda: F.jacrev(lambda a: a, argnums=2)(x), lambda: tf.jacrev(lambda a: a, argnums=2)(tx)),
    ]
    for ours, theirs in cases:
        same_error(ours, theirs)


# --- functional_call and per-sample gradients -------------------------------------------------------------------

def _twin_models(torch, device):
    """The same small MLP in npusim and in torch (float64)."""
    m = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 1)).double().to(device)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 1)).double()
    with torch.no_grad():
        for (name, p), (tname, tp) in zip(m.named_parameters(), tm.named_parameters()):
            tp.copy_(torch.from_numpy(host(p)))
    return m, tm


@pytest.mark.oracle
def test_functional_call(torch, device):
    m, tm = _twin_models(torch, device)
    (x, w), (tx, tw) = both(torch, device, X34, np.ones((5, 4)))
    weight_before = m[0].weight
    same(F.functional_call(m, {"0.weight": w}, (x,)), torch.func.functional_call(tm, {"0.weight": tw}, (tx,)), torch)
    same(F.functional_call(m, ({"0.weight": w}, {"2.bias": w[0, :1]}), x),
         torch.func.functional_call(tm, ({"0.weight": tw}, {"2.bias": tw[0, :1]}), tx), torch)
    assert m[0].weight is weight_before and isinstance(m[0].weight, nn.Parameter)   # restored
    cases = [
        (lambda: F.functional_call(m, ({"0.weight": w}, {"0.weight": w}), (x,)),
         lambda: torch.func.functional_call(tm, ({"0.weight": tw}, {"0.weight": tw}), (tx,))),
        (lambda: F.functional_call(m, {"0.weight": w}, (x,), strict=True),
         lambda: torch.func.functional_call(tm, {"0.weight": tw}, (tx,), strict=True)),
        (lambda: F.functional_call(m, [1], (x,)), lambda: torch.func.functional_call(tm, [1], (tx,))),
        (lambda: F.functional_call(m, 3, (x,)), lambda: torch.func.functional_call(tm, 3, (tx,))),
    ]
    for ours, theirs in cases:
        same_error(ours, theirs)


class _Raising(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(npusim.ones(2))

    def forward(self, x):
        assert not isinstance(self.w, nn.Parameter)
        raise ZeroDivisionError


def test_functional_call_restores_after_an_error(device):
    m = _Raising().to(device)
    w = m.w
    with pytest.raises(ZeroDivisionError):
        F.functional_call(m, {"w": npusim.zeros(2, device=device)}, (None,))
    assert m.w is w


def test_functional_call_ties_weights(device):
    m = nn.Module()
    m.a = nn.Linear(2, 2, bias=False)
    m.b = nn.Linear(2, 2, bias=False)
    m.b.weight = m.a.weight
    m.forward = lambda x: m.b(m.a(x))
    m.to(device)
    w = npusim.eye(2, device=device) * 3
    x = npusim.ones(1, 2, device=device)
    assert F.functional_call(m, {"a.weight": w}, (x,)).tolist() == [[9.0, 9.0]]
    untied = F.functional_call(m, {"a.weight": w}, (x,), tie_weights=False)
    assert untied.tolist() != [[9.0, 9.0]]
    with pytest.raises(ValueError, match="which are tied"):
        F.functional_call(m, {"a.weight": w, "b.weight": w * 2}, (x,))


@pytest.mark.oracle
def test_per_sample_gradients(torch, device):
    m, tm = _twin_models(torch, device)
    (x, t), (tx, tt) = both(torch, device, X34, T31)
    params = {k: v.detach() for k, v in m.named_parameters()}
    tparams = {k: v.detach() for k, v in tm.named_parameters()}

    def loss(p, xi, yi):
        return ((F.functional_call(m, p, (xi.unsqueeze(0),)) - yi) ** 2).mean()

    def tloss(p, xi, yi):
        return ((torch.func.functional_call(tm, p, (xi.unsqueeze(0),)) - yi) ** 2).mean()

    same(F.vmap(F.grad(loss), in_dims=(None, 0, 0))(params, x, t),
         torch.func.vmap(torch.func.grad(tloss), in_dims=(None, 0, 0))(tparams, tx, tt), torch)
    # with the module's own parameters (which require grad) the result is the same
    same(F.vmap(F.grad(loss), in_dims=(None, 0, 0))(dict(m.named_parameters()), x, t),
         torch.func.vmap(torch.func.grad(tloss), in_dims=(None, 0, 0))(dict(tm.named_parameters()), tx, tt), torch)
    assert all(p.grad is None for p in m.parameters())
    # grad of vmap: the batch's summed loss
    same(F.grad(lambda p: F.vmap(loss, in_dims=(None, 0, 0))(p, x, t).sum())(params),
         torch.func.grad(lambda p: torch.func.vmap(tloss, in_dims=(None, 0, 0))(p, tx, tt).sum())(tparams), torch)


def test_exports():
    import importlib
    from npusim import missing_names
    assert importlib.import_module("npusim.func") is F
    assert npusim.func is F
    assert {"func", "vmap"}.isdisjoint(missing_names.PLANNED)
    import npusim.autograd.functional as AF
    assert npusim.autograd.functional is AF


@pytest.mark.oracle
def test_vmap_whole_batch_for_elementwise_functions(torch, device):
    from npusim.func import _vmap_fast
    (x,), (tx,) = both(torch, device, X34)
    cases = [(npusim.sin, torch.sin, {}), (npusim.nn.functional.gelu, torch.nn.functional.gelu, {"in_dims": 1}),
             (nn.Tanh(), torch.nn.Tanh(), {"out_dims": -1}), (npusim.exp, torch.exp, {"in_dims": -1, "out_dims": 0})]
    for ours, theirs, kw in cases:
        assert _vmap_fast.try_whole_batch(ours, (x,), {}, kw.get("in_dims", 0), kw.get("out_dims", 0)) is not None
        same(F.vmap(ours, **kw)(x), torch.func.vmap(theirs, **kw)(tx), torch)

    class Shifted(nn.ReLU):          # a subclass may do anything: it takes the loop
        def forward(self, a):
            return super().forward(a) - a.mean()

    hooked = nn.ReLU()
    calls = []
    hooked.register_forward_hook(lambda m, i, o: calls.append(i[0].shape))
    for fn in (lambda a: a.sin(), Shifted(), hooked, nn.ReLU(inplace=True)):
        assert _vmap_fast.try_whole_batch(fn, (x,), {}, 0, 0) is None
    assert _vmap_fast.try_whole_batch(npusim.sin, (x, x), {}, 0, 0) is None
    assert _vmap_fast.try_whole_batch(npusim.round, (x,), {"decimals": 1}, 0, 0) is None
    same(F.vmap(Shifted())(x), torch.func.vmap(lambda a: a.relu() - a.mean())(tx), torch)
    # errors still come from the checks
    same_error(lambda: F.vmap(npusim.sin, out_dims=2)(x), lambda: torch.func.vmap(torch.sin, out_dims=2)(tx))
    same_error(lambda: F.vmap(npusim.sin, in_dims=2)(x), lambda: torch.func.vmap(torch.sin, in_dims=2)(tx))


@pytest.mark.oracle
def test_vmap_results_backpropagate(torch, device):
    m, tm = _twin_models(torch, device)
    (x,), (tx,) = both(torch, device, X34)
    F.vmap(m)(x).pow(2).sum().backward()
    torch.func.vmap(tm)(tx).pow(2).sum().backward()
    for p, tp in zip(m.parameters(), tm.parameters()):
        same(p.grad, tp.grad, torch)


@pytest.mark.oracle
def test_model_ensembling_with_stack_module_state(torch, device):
    twins = [_twin_models(torch, device) for _ in range(3)]
    models, tmodels = [m for m, _ in twins], [tm for _, tm in twins]
    (x,), (tx,) = both(torch, device, X34)
    params, buffers = F.stack_module_state(models)
    tparams, tbuffers = torch.func.stack_module_state(tmodels)
    same(params, tparams, torch)
    assert all(p.requires_grad and p.grad_fn is None for p in params.values())

    def ensemble(p, b, a):
        return F.functional_call(models[0], (p, b), (a,))

    def tensemble(p, b, a):
        return torch.func.functional_call(tmodels[0], (p, b), (a,))

    same(F.vmap(ensemble, in_dims=(0, 0, None))(params, buffers, x),
         torch.func.vmap(tensemble, in_dims=(0, 0, None))(tparams, tbuffers, tx), torch)
    models[1].eval()
    tmodels[1].eval()
    mixed = _twin_models(torch, device)[0]
    mixed[0].weight.requires_grad_(False)
    tmixed = _twin_models(torch, device)[1]
    tmixed[0].weight.requires_grad_(False)
    for ours, theirs in ((lambda: F.stack_module_state([]), lambda: torch.func.stack_module_state([])),
                         (lambda: F.stack_module_state(models), lambda: torch.func.stack_module_state(tmodels)),
                         (lambda: F.stack_module_state([models[0], nn.Linear(4, 5)]),
                          lambda: torch.func.stack_module_state([tmodels[0], torch.nn.Linear(4, 5)])),
                         (lambda: F.stack_module_state([models[0], mixed]),
                          lambda: torch.func.stack_module_state([tmodels[0], tmixed]))):
        same_error(ours, theirs)


def test_replace_all_batch_norm_modules_(device):
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).to(device)
    assert F.replace_all_batch_norm_modules_(m) is m
    bn = m[1]
    assert bn.running_mean is None and bn.running_var is None and not bn.track_running_stats
    x = npusim.randn(5, 3, device=device)
    F.vmap(lambda a: m(a.unsqueeze(0).expand(2, 3)), randomness="different")(x)   # no shared buffer is updated


@pytest.mark.oracle
def test_linearize_and_functionalize(torch, device):
    (x, t, z), (tx, tt, tz) = both(torch, device, X34, Y34, np.ones(3))
    f = lambda a: (a.sin() * a).sum(1)   # noqa: E731
    out, fn = F.linearize(f, x)
    tout, tfn = torch.func.linearize(f, tx)
    same((out, fn(t), fn(x)), (tout, tfn(tt), tfn(tx)), torch)
    same_error(lambda: fn(z), lambda: tfn(tz))
    same_error(lambda: fn(t, t), lambda: tfn(tt, tt))
    same_error(lambda: fn(t.float()), lambda: tfn(tt.float()))

    def mutating(a):
        b = a.clone()
        b.mul_(2)
        return b + a

    same(F.functionalize(mutating)(x), torch.func.functionalize(mutating)(tx), torch)
    same_error(lambda: F.functionalize(mutating, remove="views"), lambda: torch.func.functionalize(mutating,
                                                                                                    remove="views"))
    assert F.debug_unwrap(x) is x
