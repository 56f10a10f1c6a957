"""torch's top-level forms of nn ops (torch.conv2d, torch.dropout...), torch.<op>_ in-place functions, the
in-place BLAS methods, index_reduce, Tensor.prelu / hardshrink and the *_copy functions: against the
nn.functional / Tensor forms and against torch."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import host

import npusim
import npusim.nn.functional as F

pytestmark = pytest.mark.usefixtures("torch_on_one_thread")
RNG = np.random.default_rng(0)


def _a(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _convert(v, make):
    if isinstance(v, np.ndarray):
        return make(v)
    if isinstance(v, tuple):
        return tuple(_convert(x, make) for x in v)
    if isinstance(v, list):
        return [_convert(x, make) for x in v]
    return v


def _same(ours, theirs, tol=1e-5):
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            _same(o, t, tol)
        return
    assert list(ours.shape) == list(theirs.shape)
    np.testing.assert_allclose(host(ours).astype(np.float64), theirs.detach().numpy().astype(np.float64),
                               rtol=tol, atol=tol)


IDX = np.array([[1, 0, 3], [2, 2, 0]])
TARGET_PM = np.array([1.0, -1.0, 1.0, -1.0], dtype=np.float32)
# name -> (args, kwargs, the nn.functional call giving the same result, or None)
CASES = {
    "conv1d": ((_a(2, 4, 9), _a(6, 2, 3), _a(6)), {"stride": 2, "padding": 1, "groups": 2},
               lambda x, w, b, **k: F.conv1d(x, w, b, **k)),
    "conv2d": ((_a(1, 3, 6, 6), _a(4, 3, 3, 3)), {"dilation": 2}, lambda x, w, **k: F.conv2d(x, w, **k)),
    "conv3d": ((_a(1, 2, 4, 4, 4), _a(3, 2, 2, 2, 2), None, 1, 1), {}, lambda x, w, b, s, p: F.conv3d(x, w, b, s, p)),
    "conv_transpose1d": ((_a(1, 4, 5), _a(4, 3, 3)), {"stride": 2, "output_padding": 1},
                         lambda x, w, **k: F.conv_transpose1d(x, w, **k)),
    "conv_transpose2d": ((_a(1, 2, 3, 3), _a(2, 3, 2, 2), _a(3)), {}, lambda *a: F.conv_transpose2d(*a)),
    "conv_transpose3d": ((_a(1, 2, 2, 3, 3), _a(2, 1, 2, 2, 2)), {}, lambda *a: F.conv_transpose3d(*a)),
    "dropout": ((_a(3, 4), 0.5, False), {}, lambda x, p, t: F.dropout(x, p, t)),
    "alpha_dropout": ((_a(3, 4), 0.5, False), {}, lambda x, p, t: F.alpha_dropout(x, p, t)),
    "feature_alpha_dropout": ((_a(2, 3, 4), 0.2, False), {}, lambda x, p, t: F.feature_alpha_dropout(x, p, t)),
    "layer_norm": ((_a(2, 3, 4), [3, 4], _a(3, 4), _a(3, 4), 1e-3), {},
                   lambda x, s, w, b, e: F.layer_norm(x, s, w, b, e)),
    "group_norm": ((_a(2, 4, 5), 2, _a(4), _a(4)), {}, lambda x, g, w, b: F.group_norm(x, g, w, b)),
    "batch_norm": ((_a(4, 3, 2), _a(3), _a(3), None, None, True, 0.1, 1e-5, False), {},
                   lambda x, w, b, rm, rv, t, m, e, c: F.batch_norm(x, rm, rv, w, b, t, m, e)),
    "instance_norm": ((_a(2, 3, 5), _a(3), _a(3), None, None, True, 0.1, 1e-5, False), {},
                      lambda x, w, b, rm, rv, u, m, e, c: F.instance_norm(x, rm, rv, w, b, u, m, e)),
    "embedding": ((_a(5, 3), IDX), {}, lambda w, i: F.embedding(i, w)),
    "pixel_shuffle": ((_a(1, 8, 2, 3), 2), {}, F.pixel_shuffle),
    "pixel_unshuffle": ((_a(1, 2, 4, 6), 2), {}, F.pixel_unshuffle),
    "max_pool1d": ((_a(2, 3, 9), 3), {}, lambda x, k: F.max_pool1d(x, k)),
    "max_pool2d": ((_a(1, 2, 6, 7), 3, 2, 1), {"ceil_mode": True},
                   lambda x, k, s, p, **kw: F.max_pool2d(x, k, s, p, **kw)),
    "max_pool3d": ((_a(1, 1, 4, 4, 5), 2), {}, lambda x, k: F.max_pool3d(x, k)),
    "avg_pool1d": ((_a(2, 3, 8), 3, 2, 1), {"count_include_pad": False},
                   lambda x, k, s, p, **kw: F.avg_pool1d(x, k, s, p, **kw)),
    "adaptive_avg_pool1d": ((_a(2, 3, 7), 3), {}, F.adaptive_avg_pool1d),
    "adaptive_max_pool1d": ((_a(2, 3, 7), 3), {}, lambda x, o: F.adaptive_max_pool1d(x, o, return_indices=True)),
    "bilinear": ((_a(4, 3), _a(4, 2), _a(5, 3, 2), _a(5)), {}, F.bilinear),
    "cosine_similarity": ((_a(4, 6), _a(4, 6), 0), {}, lambda a, b, d: F.cosine_similarity(a, b, d)),
    "pairwise_distance": ((_a(4, 6), _a(4, 6), 1.0), {"keepdim": True}, lambda a, b, p, **k: F.pairwise_distance(
        a, b, p, **k)),
    "kl_div": ((_a(3, 4), _a(3, 4), 2), {"log_target": True},
               lambda a, b, r, **k: F.kl_div(a, b, reduction="sum", **k)),
    "prelu": ((_a(2, 3, 4), np.array([0.1, 0.2, 0.3], dtype=np.float32)), {}, F.prelu),
    "selu": ((_a(3, 4),), {}, F.selu),
    "celu": ((_a(3, 4), 0.7), {}, F.celu),
    "rrelu": ((_a(3, 4), 0.1, 0.3), {}, lambda x, lo, hi: F.rrelu(x, lo, hi)),
    "threshold": ((_a(3, 4), 0.1, -2.0), {}, F.threshold),
    "hardshrink": ((_a(3, 4), 0.4), {}, F.hardshrink),
    "rms_norm": ((_a(2, 3, 4), [4], _a(4)), {"eps": 1e-4}, lambda x, s, w, **k: F.rms_norm(x, s, w, **k)),
    "channel_shuffle": ((_a(1, 6, 2, 2), 3), {}, F.channel_shuffle),
    "binary_cross_entropy_with_logits": ((_a(3, 4), (_a(3, 4) > 0).astype(np.float32), None, _a(4) ** 2, 0), {},
                                         lambda x, t, w, pw, r: F.binary_cross_entropy_with_logits(
                                             x, t, w, pos_weight=pw, reduction="none")),
    "cosine_embedding_loss": ((_a(4, 5), _a(4, 5), TARGET_PM, 0.2, 2), {},
                              lambda a, b, t, m, r: F.cosine_embedding_loss(a, b, t, m, reduction="sum")),
    "margin_ranking_loss": ((_a(4), _a(4), TARGET_PM, 0.1), {}, lambda a, b, t, m: F.margin_ranking_loss(
        a, b, t, m, reduction="none")),   # torch.*: reduction defaults to 0
    "hinge_embedding_loss": ((_a(4), TARGET_PM), {"reduction": 0},
                             lambda a, t, **k: F.hinge_embedding_loss(a, t, reduction="none")),
    "poisson_nll_loss": ((_a(3, 4), np.abs(_a(3, 4)), True, True, 1e-8, 1), {},
                         lambda x, t, li, fu, e, r: F.poisson_nll_loss(x, t, li, fu, eps=e)),
    "triplet_margin_loss": ((_a(4, 5), _a(4, 5), _a(4, 5)), {"swap": True, "reduction": 2},
                            lambda a, p, n, **k: F.triplet_margin_loss(a, p, n, swap=True, reduction="sum")),
    "constant_pad_nd": ((_a(2, 3), [1, 2, 0, 1], 1.5), {}, lambda x, p, v: F.pad(x, p, "constant", v)),
}


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(CASES))
def test_torch_namespace_nn_forms(device, torch, name):
    args, kwargs, functional = CASES[name]

    def ours(v):
        t = npusim.tensor(v, device=device)
        return t if v.dtype != np.int64 else t.long()

    mine = getattr(npusim, name)(*_convert(args, ours), **kwargs)
    theirs = getattr(torch, name)(*_convert(args, torch.from_numpy), **kwargs)
    _same(mine, theirs)
    _same(mine, _convert_back(functional(*_convert(args, ours), **kwargs), torch))
    assert name in npusim.__all__


def _convert_back(r, torch):
    if isinstance(r, (tuple, list)):
        return tuple(_convert_back(x, torch) for x in r)
    return torch.from_numpy(host(r).copy())


def test_torch_signatures_have_positional_flags():
    x = npusim.ones(3, 4)
    with pytest.raises(TypeError):
        npusim.dropout(x, 0.5)          # train has no default, as torch's
    with pytest.raises(TypeError):
        npusim.batch_norm(x, None, None, None, None, True, 0.1, 1e-5)   # cudnn_enabled is required too
    with pytest.raises(ValueError):
        npusim.kl_div(x, x, 3)


def test_dropout_training_forms_and_in_place(device):
    x = npusim.ones(200, 10, device=device)
    npusim.manual_seed(1)
    a = npusim.dropout(x, 0.4, True)
    npusim.manual_seed(1)
    b = F.dropout(x, 0.4, True)
    assert np.array_equal(host(a), host(b)) and set(np.unique(host(a))) <= {0.0, np.float32(1 / 0.6)}
    y = npusim.ones(5, device=device)
    assert npusim.dropout_(y, 0.4, False) is y
    z = npusim.tensor([-1.0, 0.5], device=device)
    assert npusim.threshold_(z, 0.0, 7.0) is z and host(z).tolist() == [7.0, 0.5]
    z = npusim.tensor([-1.0, 0.5], device=device)
    assert npusim.selu_(z) is z and np.allclose(host(z), host(F.selu(npusim.tensor([-1.0, 0.5]))))
    z = npusim.tensor([-1.0, 0.5], device=device)
    assert npusim.celu_(z, 2.0) is z and np.allclose(host(z), [2.0 * (np.exp(-0.5) - 1), 0.5])


def test_rrelu_training_honours_the_generator(device):
    x = -npusim.ones(50, device=device)
    a = npusim.rrelu(x, 0.1, 0.3, True, npusim.Generator(device).manual_seed(4))
    b = npusim.rrelu(x, 0.1, 0.3, True, npusim.Generator(device).manual_seed(4))
    assert np.array_equal(host(a), host(b))
    assert host(a).min() >= -0.3 and host(a).max() <= -0.1 and len(np.unique(host(a))) > 1
    y = -npusim.ones(50, device=device)
    assert npusim.rrelu_(y, 0.1, 0.3, True, npusim.Generator(device).manual_seed(4)) is y
    assert np.array_equal(host(y), host(a))


@pytest.mark.oracle
def test_tensor_prelu_and_hardshrink(device, torch):
    x, w = _a(2, 3, 4), np.array([0.25], dtype=np.float32)
    t = npusim.tensor(x, device=device)
    _same(t.prelu(npusim.tensor(w, device=device)), torch.from_numpy(x).prelu(torch.from_numpy(w)))
    _same(t.hardshrink(), torch.from_numpy(x).hardshrink())
    _same(t.hardshrink(0.9), torch.from_numpy(x).hardshrink(0.9))


# --- torch.<op>_ ------------------------------------------------------------------------------------------

UNARY_INPLACE = ["abs_", "ceil_", "cos_", "exp_", "expm1_", "floor_", "frac_", "log1p_", "neg_", "reciprocal_",
                 "relu_", "round_", "rsqrt_", "sigmoid_", "sin_", "sqrt_", "square_", "tanh_", "trunc_", "zero_"]


@pytest.mark.oracle
@pytest.mark.parametrize("name", UNARY_INPLACE)
def test_inplace_functions_are_the_methods(device, torch, name):
    x = np.abs(_a(3, 4)) + 0.5
    t = npusim.tensor(x, device=device)
    assert getattr(npusim, name)(t) is t
    ref = torch.from_numpy(x.copy())
    getattr(torch, name)(ref)
    _same(t, ref)
    assert name in npusim.__all__


@pytest.mark.oracle
def test_inplace_functions_with_arguments(device, torch):
    x = _a(3, 4)
    for name, args, kwargs in [("clamp_", (-0.5, 0.5), {}), ("clip_", (), {"min": 0.0}), ("fill_", (2.5,), {}),
                               ("round_", (), {"decimals": 1}), ("clamp_min_", (0.1,), {}),
                               ("nan_to_num_", (), {"nan": 1.0})]:
        t, ref = npusim.tensor(x, device=device), torch.from_numpy(x.copy())
        assert getattr(npusim, name)(t, *args, **kwargs) is t
        getattr(torch, name)(ref, *args, **kwargs)
        _same(t, ref)
    t = npusim.zeros(5, device=device)
    npusim.index_put_(t, (npusim.tensor([1, 3], device=device),), npusim.tensor([4.0, 5.0], device=device))
    assert host(t).tolist() == [0, 4, 0, 5, 0]
    d = npusim.ones(2, requires_grad=True) * 2
    assert npusim.detach_(d) is d and not d.requires_grad


def test_inplace_functions_cover_torchs_list_where_the_method_exists():
    from npusim.api import inplace as IF
    for name in IF._TORCH_INPLACE:
        assert hasattr(npusim, name) == callable(getattr(npusim.Tensor, name, None)), name
    assert hasattr(npusim, "exp_") and hasattr(npusim, "addmv_")


# --- in-place BLAS, index_reduce ----------------------------------------------------------------------

BLAS = {
    "addmv_": ((3,), (3, 4), (4,)), "addr_": ((3, 4), (3,), (4,)),
    "addbmm_": ((3, 5), (2, 3, 4), (2, 4, 5)), "baddbmm_": ((2, 3, 5), (2, 3, 4), (2, 4, 5)),
}


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(BLAS))
def test_inplace_blas(device, torch, name):
    arrays = [_a(*s) for s in BLAS[name]]
    t = npusim.tensor(arrays[0], device=device)
    out = getattr(t, name)(*[npusim.tensor(a, device=device) for a in arrays[1:]], beta=0.5, alpha=2.0)
    ref = torch.from_numpy(arrays[0].copy())
    getattr(ref, name)(*[torch.from_numpy(a) for a in arrays[1:]], beta=0.5, alpha=2.0)
    assert out is t
    _same(t, ref, 1e-4)
    # the result equals the out-of-place op's
    _same(t, torch.from_numpy(host(getattr(npusim, name[:-1])(
        *[npusim.tensor(a, device=device) for a in arrays], beta=0.5, alpha=2.0)).copy()), 1e-6)


@pytest.mark.oracle
def test_inplace_blas_needs_the_result_shape(device, torch):
    args = (np.zeros(1, np.float32), _a(3, 4), _a(4))
    with pytest.raises(RuntimeError) as expected:
        torch.from_numpy(args[0]).addmv_(*[torch.from_numpy(a) for a in args[1:]])
    with pytest.raises(RuntimeError) as got:
        npusim.addmv_(*[npusim.tensor(a, device=device) for a in args])
    assert str(got.value) == str(expected.value)


@pytest.mark.oracle
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_index_reduce(device, torch, reduce, include_self, dtype):
    base = (np.arange(15).reshape(5, 3) % 4 + 1).astype(dtype)
    src = (RNG.integers(1, 9, (4, 3))).astype(dtype)
    index = np.array([0, 4, 0, 2])
    t = npusim.tensor(base, device=device)
    r = t.index_reduce(0, npusim.tensor(index, device=device), npusim.tensor(src, device=device), reduce,
                       include_self=include_self)
    ref = torch.from_numpy(base).index_reduce(0, torch.from_numpy(index), torch.from_numpy(src), reduce,
                                              include_self=include_self)
    assert host(r).dtype == ref.numpy().dtype and np.allclose(host(r), ref.numpy())
    assert np.array_equal(host(t), base)       # out of place
    t2 = npusim.tensor(base.T.copy(), device=device)
    assert t2.index_reduce_(1, npusim.tensor(index, device=device), npusim.tensor(src.T.copy(), device=device),
                            reduce, include_self=include_self) is t2
    assert np.allclose(host(t2), ref.numpy().T)
    assert np.allclose(host(npusim.index_reduce(npusim.tensor(base, device=device), 0,
                                                npusim.tensor(index, device=device),
                                                npusim.tensor(src, device=device), reduce,
                                                include_self=include_self)), ref.numpy())


@pytest.mark.oracle
@pytest.mark.parametrize("case", [
    lambda m, f, i: f(m.zeros(5), 0, i([0, 1, 1]), m.ones(3), "sum"),
    lambda m, f, i: f(m.zeros(5), 0, i([0, 1, 1]), m.ones(2), "mean"),
    lambda m, f, i: f(m.zeros(5), 0, i([[0, 1, 1]]), m.ones(3), "mean"),
    lambda m, f, i: f(m.zeros(5, dtype=m.int64), 0, i([0, 1, 1]), m.ones(3), "mean"),
    lambda m, f, i: f(m.zeros(5), 0, m.tensor([0.0, 1.0, 1.0]), m.ones(3), "mean"),
])
def test_index_reduce_errors_are_torchs(torch, case):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as expected:
            case(torch, lambda t, *a: t.index_reduce_(*a), torch.tensor)
    with pytest.raises(type(expected.value)) as got:
        case(npusim, lambda t, *a: t.index_reduce_(*a), npusim.tensor)
    assert str(got.value) == str(expected.value)


# --- *_copy --------------------------------------------------------------------------------------------------

COPIES = {
    "view_copy": ((6, 4),), "permute_copy": ((2, 0, 1),), "transpose_copy": (0, 2), "t_copy": None,
    "expand_copy": ((2, 2, 3, 4),), "squeeze_copy": (), "unsqueeze_copy": (1,), "select_copy": (1, 2),
    "slice_copy": (2, 1, 4, 2), "diagonal_copy": (1, 1, 2), "detach_copy": (), "alias_copy": (),
    "split_copy": (2, 2), "split_with_sizes_copy": ([1, 3], 2), "unbind_copy": (1,), "unfold_copy": (2, 2, 1),
    "as_strided_copy": ((2, 2), (1, 4), 1),
}


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(COPIES))
def test_view_copies(device, torch, name):
    x = _a(2, 3, 4) if name != "t_copy" else _a(3, 4)
    if name == "squeeze_copy":
        x = _a(2, 1, 4)
    args = COPIES[name] or ()
    t = npusim.tensor(x, device=device)
    mine = getattr(npusim, name)(t, *args)
    theirs = getattr(torch, name)(torch.from_numpy(x), *args)
    _same(mine, theirs)
    for m in (mine if isinstance(mine, list) else [mine]):
        assert m.is_contiguous()
        m.fill_(42.0)                        # a fresh tensor: the input is untouched
    assert np.array_equal(host(t), x)


def test_view_copies_are_differentiable_and_write_out(device):
    x = npusim.ones(2, 3, device=device, requires_grad=True)
    npusim.permute_copy(x, (1, 0)).mul(npusim.arange(3.0, device=device).unsqueeze(1)).sum().backward()
    assert host(x.grad).tolist() == [[0.0, 1.0, 2.0]] * 2
    out = npusim.empty(3, 2, device=device)
    assert npusim.t_copy(npusim.ones(2, 3, device=device), out=out) is out
    assert np.array_equal(host(npusim.squeeze_copy(npusim.ones(1, 2, 1), 0)), np.ones((2, 1)))
