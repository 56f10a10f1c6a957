"""npusim.distributions' transforms, constraint registry (biject_to, transform_to) and the constraints added
with them: round trips and log-det-Jacobians torch-free on cpu and npu, and values against
torch.distributions (``oracle``)."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import host

import npusim
import npusim.distributions as D
from npusim.distributions import constraints, transforms

F64 = "float64"


def mk(lib, values, dev="cpu", dtype=F64):
    """A tensor of ``lib`` (npusim or torch); torch always on cpu."""
    kw = {"dtype": getattr(lib, dtype)}
    if lib is npusim:
        kw["device"] = dev
    return lib.tensor(values, **kw)


def close(ours, theirs, rtol=1e-9, atol=1e-12):
    # float64 and torch's formulas: agreement to rounding (~1e-14 relative), with margin
    np.testing.assert_allclose(host(ours), theirs.detach().numpy(), rtol=rtol, atol=atol)


ELEMENTWISE = {
    "power": lambda T, L: T.PowerTransform(mk(L, 2.5)), "sigmoid": lambda T, L: T.SigmoidTransform(),
    "softplus": lambda T, L: T.SoftplusTransform(), "tanh": lambda T, L: T.TanhTransform(),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_transforms_invert_and_log_det_jacobian(device, name):
    t = ELEMENTWISE[name](transforms, npusim)
    x = mk(npusim, [0.3, 1.2, 2.0] if name == "power" else [-2.0, 0.1, 1.5], device).requires_grad_()
    y = t(x)
    np.testing.assert_allclose(host(t.inv(y)), host(x), rtol=1e-10)
    (dy,) = npusim.autograd.grad(y.sum(), x)   # elementwise: the Jacobian is diagonal
    np.testing.assert_allclose(host(t.log_abs_det_jacobian(x, y)), np.log(np.abs(host(dy))), rtol=1e-10)
    assert bool(t.codomain.check(y).all())


TRANSFORM_CASES = {
    "abs": (lambda T, L, d: T.AbsTransform(), [[-1.0, 2.0]]),
    "power": (lambda T, L, d: T.PowerTransform(mk(L, [0.5, 3.0], d)), [[0.3, 1.7]]),
    "sigmoid": (lambda T, L, d: T.SigmoidTransform(), [[-3.0, 0.5]]),
    "softplus": (lambda T, L, d: T.SoftplusTransform(), [[-3.0, 25.0]]),
    "tanh": (lambda T, L, d: T.TanhTransform(), [[-3.0, 0.5]]),
    "softmax": (lambda T, L, d: T.SoftmaxTransform(), [[-1.0, 0.5, 2.0]]),
    "stick_breaking": (lambda T, L, d: T.StickBreakingTransform(), [[-1.0, 0.5, 2.0], [0.0, 0.0, 0.0]]),
    "corr_cholesky": (lambda T, L, d: T.CorrCholeskyTransform(), [[-1.0, 0.5, 2.0, 0.1, -0.3, 0.7]]),
    "lower_cholesky": (lambda T, L, d: T.LowerCholeskyTransform(), [[[1.0, 5.0], [-0.5, 0.2]]]),
    "positive_definite": (lambda T, L, d: T.PositiveDefiniteTransform(), [[[1.0, 5.0], [-0.5, 0.2]]]),
    "reshape": (lambda T, L, d: T.ReshapeTransform((2, 3), (3, 2)), [[[1.0, 2, 3], [4, 5, 6]]]),
    "independent": (lambda T, L, d: T.IndependentTransform(T.ExpTransform(), 1), [[0.1, -0.2], [1.0, 2.0]]),
    "cat": (lambda T, L, d: T.CatTransform([T.ExpTransform(), T.AffineTransform(1.0, 3.0)], dim=-1, lengths=[1, 2]),
            [[0.1, -0.2, 0.4], [1.0, 2.0, 3.0]]),
    "stack": (lambda T, L, d: T.StackTransform([T.ExpTransform(), T.SigmoidTransform()], dim=-1),
              [[0.1, -0.2], [1.0, 2.0]]),
    "cdf": (lambda T, L, d: T.CumulativeDistributionTransform(L.distributions.Normal(mk(L, 0.5, d), mk(L, 2.0, d))),
            [[-1.0, 0.3]]),
    "compose_inverse": (lambda T, L, d: T.ComposeTransform([T.TanhTransform(), T.AffineTransform(2.0, 3.0)]).inv,
                        [[0.5, 3.0]]),
}


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(TRANSFORM_CASES))
def test_transforms_match_torch(torch, device, name):
    build, x = TRANSFORM_CASES[name]
    ours, theirs = build(transforms, npusim, device), build(torch.distributions.transforms, torch, "cpu")
    xo, xt = mk(npusim, x, device), mk(torch, x)
    yo, yt = ours(xo), theirs(xt)
    close(yo, yt)
    close(ours.inv(yo), theirs.inv(yt), rtol=1e-8)
    try:
        expected = theirs.log_abs_det_jacobian(xt, yt)
    except NotImplementedError:   # not bijective or no Jacobian in torch either (abs, softmax, cholesky ones)
        with pytest.raises(NotImplementedError):
            ours.log_abs_det_jacobian(xo, yo)
    else:
        close(ours.log_abs_det_jacobian(xo, yo), expected, rtol=1e-8)
    assert ours.bijective == theirs.bijective
    assert ours.domain.event_dim == theirs.domain.event_dim and ours.codomain.event_dim == theirs.codomain.event_dim
    assert tuple(ours.forward_shape(xo.shape)) == tuple(theirs.forward_shape(xt.shape))
    assert tuple(ours.inverse_shape(yo.shape)) == tuple(theirs.inverse_shape(yt.shape))
    assert repr(ours.domain) == repr(theirs.domain) and repr(ours.codomain) == repr(theirs.codomain)
    if ours.with_cache(1) is not ours:
        cached = ours.with_cache(1)
        assert cached.inv(cached(xo)) is xo


def _constraints(C):
    return {
        "real": C.real, "positive": C.positive, "nonnegative": C.nonnegative, "greater_than": C.greater_than(1.5),
        "less_than": C.less_than(-2.0), "unit_interval": C.unit_interval, "interval": C.interval(-1.0, 3.0),
        "half_open": C.half_open_interval(0.0, 2.0), "simplex": C.simplex, "real_vector": C.real_vector,
        "lower_cholesky": C.lower_cholesky, "positive_definite": C.positive_definite,
        "positive_semidefinite": C.positive_semidefinite, "corr_cholesky": C.corr_cholesky,
        "independent": C.independent(C.positive, 1),
        "cat": C.cat([C.real, C.positive], dim=-1, lengths=[1, 2]), "stack": C.stack([C.real, C.unit_interval], -1),
    }


@pytest.mark.oracle
def test_constraint_registry_matches_torch(torch):
    ours, theirs = _constraints(constraints), _constraints(torch.distributions.constraints)
    for registry in ("biject_to", "transform_to"):
        for key in ours:
            try:
                expected = getattr(torch.distributions, registry)(theirs[key])
            except NotImplementedError:
                with pytest.raises(NotImplementedError):
                    getattr(D, registry)(ours[key])
                continue
            got = getattr(D, registry)(ours[key])
            assert repr(got).replace("npusim", "torch") == repr(expected), (registry, key)
            # the transform lands in the constraint (matrices for the matrix constraints, 3-vectors otherwise,
            # 2 entries for the stack of two)
            shape = {"lower_cholesky": (2, 3, 3), "positive_definite": (2, 3, 3), "positive_semidefinite": (2, 3, 3),
                     "stack": (2, 2)}.get(key, (2, 3))
            x = npusim.linspace(-1.0, 1.0, int(np.prod(shape)), dtype=npusim.float64).reshape(shape)
            assert bool(ours[key].check(got(x)).all()), (registry, key)


@pytest.mark.oracle
def test_new_constraints_match_torch(torch):
    values = [[[1.0, 0.0], [0.5, 2.0]], [[1.0, 0.3], [0.0, 1.0]], [[0.6, 0.0], [0.8, 0.6]], [[1.0, 0.0], [0.0, -1.0]]]
    for name in ("lower_triangular", "corr_cholesky", "positive_semidefinite"):
        ours = getattr(constraints, name).check(mk(npusim, values))
        theirs = getattr(torch.distributions.constraints, name).check(mk(torch, values))
        np.testing.assert_array_equal(host(ours), theirs.numpy())
    counts = [[1.0, 2.0, 0.0], [3.0, 2.0, 1.0], [-1.0, 2.0, 0.0]]
    np.testing.assert_array_equal(host(constraints.multinomial(4).check(mk(npusim, counts))),
                                  torch.distributions.constraints.multinomial(4).check(mk(torch, counts)).numpy())
    base = constraints.MixtureSameFamilyConstraint(constraints.positive)
    assert repr(base) == repr(torch.distributions.constraints.MixtureSameFamilyConstraint(
        torch.distributions.constraints.positive))
    assert sorted(set(torch.distributions.constraints.__all__) - set(constraints.__all__)) == []


