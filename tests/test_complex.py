"""Complex dtypes: the dtypes, promotion, creation, casts, printing, the parts as views, conjugation, polar and
complex, and archives; on cpu and npu, with torch as the oracle where marked."""
from __future__ import annotations

import io
import pickle
import warnings

import numpy as np
import pytest

import npusim
from conftest import host

C64, C128, C32 = npusim.complex64, npusim.complex128, npusim.complex32


def _cuda_mode():
    if not npusim.npu.is_available():
        return False
    from npusim.backend.runtime import runtime
    return runtime.probe() == "cuda"


CUDA_MODE = _cuda_mode()


def _skip_complex32_on_cupy(device, dt):
    """CuPy has no complex32 (npusim's is a structured pair of float16): the npu in cuda mode refuses it."""
    if device == "npu" and dt is C32 and CUDA_MODE:
        pytest.skip("complex32 needs NumPy arrays: not on the npu in cuda mode")


def _np(t):
    """A tensor's values as a NumPy array (complex32 widened to complex64)."""
    t = t.detach().cpu()
    if t.dtype is C32:
        return t.cfloat()._a.copy()
    return host(t) if not t.is_complex() else t._a.copy()


# --- dtypes -----------------------------------------------------------------------------------------------

def test_dtypes_and_their_facts():
    assert npusim.cfloat is C64 and npusim.cdouble is C128 and npusim.chalf is C32
    for dt, real, size in ((C32, npusim.float16, 4), (C64, npusim.float32, 8), (C128, npusim.float64, 16)):
        assert dt.is_complex and not dt.is_floating_point and dt.is_signed and dt.itemsize == size
        assert dt.to_real() is real and real.to_complex() is dt and dt.to_complex() is dt
    assert npusim.bfloat16.to_complex() is C64 and npusim.float32.to_real() is npusim.float32
    with pytest.raises(RuntimeError, match="^Unknown Complex ScalarType for Long$"):
        npusim.int64.to_complex()
    assert repr(C64) == "npusim.complex64" and pickle.loads(pickle.dumps(C64)) is C64


def test_finfo_of_complex_is_its_parts():
    f = npusim.finfo(C64)
    assert f.dtype == "float32" and f.eps == npusim.finfo(npusim.float32).eps
    assert npusim.finfo(C32).dtype == "float16" and npusim.finfo(C128).bits == 64
    with pytest.raises(TypeError):
        npusim.iinfo(C64)


def test_promote_types():
    P = npusim.promote_types
    assert P(C64, npusim.float64) is C128 and P(C32, npusim.float32) is C64 and P(C32, npusim.float16) is C32
    assert P(C32, npusim.bfloat16) is C64 and P(C64, npusim.int64) is C64 and P(C128, C64) is C128
    assert P(npusim.bool, C32) is C32
    assert npusim.can_cast(npusim.float32, C64) and not npusim.can_cast(C64, npusim.float64)


def test_result_type_with_complex_numbers(device):
    T = lambda v, dt=None: npusim.tensor(v, dtype=dt, device=device)  # noqa: E731
    assert npusim.result_type(T([1.0]), 1j) is C64
    assert npusim.result_type(T([1.0], npusim.float64), 1j) is C128
    assert npusim.result_type(T([1]), 1j) is C64
    assert npusim.result_type(T([1.0], npusim.float16), 1j) is C32
    assert npusim.result_type(T(1.0), T(1j, C128)) is C128
    assert npusim.result_type(T([1.0]), T(1j, C128)) is C64     # a zero-dim tensor of the same category yields


def test_default_complex_dtype_follows_the_default_float():
    old = npusim.get_default_dtype()
    try:
        npusim.set_default_dtype(npusim.float64)
        assert npusim.tensor(1j).dtype is C128 and npusim.result_type(npusim.tensor([1]), 1j) is C128
        npusim.set_default_dtype(npusim.float16)
        assert npusim.tensor(1j).dtype is C32
    finally:
        npusim.set_default_dtype(old)
    assert npusim.tensor([1, 2j]).dtype is C64


@pytest.mark.oracle
def test_promotion_matches_torch(torch):
    names = ["bool", "uint8", "int8", "int64", "float16", "bfloat16", "float32", "float64", "complex32",
             "complex64", "complex128"]
    for a in names:
        for b in names:
            got = npusim.promote_types(getattr(npusim, a), getattr(npusim, b))
            assert got.name == str(torch.promote_types(getattr(torch, a), getattr(torch, b))).split(".")[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # torch's "ComplexHalf support is experimental"
        for a in names:
            for scalar in (1j, 2.5, 3):
                for shape in ((), (2,)):
                    want = torch.result_type(torch.ones(shape, dtype=getattr(torch, a)), scalar)
                    got = npusim.result_type(npusim.ones(shape, dtype=getattr(npusim, a)), scalar)
                    assert got.name == str(want).split(".")[1], (a, scalar, shape)


# --- creation, casts, item ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", [C64, C128, C32])
def test_factories(device, dt):
    _skip_complex32_on_cupy(device, dt)
    assert _np(npusim.zeros(2, dtype=dt, device=device)).tolist() == [0j, 0j]
    assert _np(npusim.ones(2, dtype=dt, device=device)).tolist() == [1 + 0j, 1 + 0j]
    assert _np(npusim.full((2,), 1 - 2j, dtype=dt, device=device)).tolist() == [1 - 2j, 1 - 2j]
    assert npusim.empty(2, 3, dtype=dt, device=device).shape == (2, 3)
    x = npusim.tensor([1 + 2j, 3], dtype=dt, device=device)
    assert x.dtype is dt and x.is_complex() and npusim.is_complex(x) and not x.is_floating_point()
    assert _np(x).tolist() == [1 + 2j, 3 + 0j]
    for like in (npusim.zeros_like, npusim.ones_like, npusim.empty_like, npusim.randn_like, npusim.rand_like):
        assert like(x).dtype is dt
    assert _np(npusim.full_like(x, 2j)).tolist() == [2j, 2j]
    assert npusim.randn(3, dtype=dt, device=device).dtype is dt and npusim.rand(3, dtype=dt, device=device).is_complex()


def test_full_infers_the_default_complex_dtype(device):
    assert npusim.full((2,), 1j, device=device).dtype is C64


def test_complex_random_draws_have_torchs_moments():
    npusim.manual_seed(0)
    z = npusim.randn(40000, dtype=C64)
    # each part has variance 1/2, so |z|^2 averages 1
    assert abs(z.real.std().item() - 0.5 ** 0.5) < 0.02 and abs(z.imag.std().item() - 0.5 ** 0.5) < 0.02
    u = npusim.rand(40000, dtype=C128)
    assert 0 <= _np(u).real.min() and _np(u).imag.max() < 1 and abs(_np(u).imag.mean() - 0.5) < 0.01
    n = npusim.zeros(40000, dtype=C64).normal_(1.0, 2.0)
    assert abs(n.real.mean().item() - 1) < 0.05 and abs(n.imag.std().item() - 2 ** 0.5) < 0.05


def test_casts_and_copies(device):
    x = npusim.tensor([1 + 2j, -3 - 4j], device=device)
    assert _np(x.cdouble()).tolist() == [1 + 2j, -3 - 4j] and x.cdouble().dtype is C128
    if not (device == "npu" and CUDA_MODE):
        assert x.chalf().dtype is C32 and _np(x.chalf().cfloat()).tolist() == [1 + 2j, -3 - 4j]
    assert npusim.ones(2, device=device).cfloat().tolist() == [1 + 0j, 1 + 0j]
    with pytest.warns(UserWarning, match="^Casting complex values to real discards the imaginary part$"):
        r = x.float()
    assert host(r).tolist() == [1.0, -3.0]
    with pytest.warns(UserWarning, match="Casting complex values to real discards the imaginary part"):
        npusim.zeros(2, dtype=npusim.int64, device=device).copy_(x)
    assert x[0].item() == 1 + 2j and x.tolist() == [1 + 2j, -3 - 4j] and complex(x[1]) == -3 - 4j
    if not (device == "npu" and CUDA_MODE):
        z = npusim.zeros(2, dtype=C32, device=device).copy_(x)
        assert _np(z).tolist() == [1 + 2j, -3 - 4j] and z[1].item() == -3 - 4j
    assert x.npu().cpu().tolist() == x.tolist() if device == "cpu" else True


def test_fill_and_zero(device):
    x = npusim.zeros(3, dtype=C64, device=device)
    x.fill_(2 - 1j)
    assert x.tolist() == [2 - 1j] * 3 and x.zero_().tolist() == [0j] * 3
    with pytest.raises(RuntimeError, match="^value cannot be converted to type float without overflow$"):
        npusim.zeros(2, device=device).fill_(1j)
    assert npusim.zeros(2, device=device).fill_(2 + 0j).tolist() == [2.0, 2.0]


def test_requires_grad_is_allowed():
    assert npusim.tensor([1j], requires_grad=True).requires_grad
    assert npusim.zeros(2, dtype=C64).requires_grad_().requires_grad


# --- printing ----------------------------------------------------------------------------------------------

@pytest.mark.oracle
def test_printing_matches_torch(torch):
    rng = np.random.default_rng(0)
    cases = [[1 + 2j, 3 - 4j], 1 + 2j, [0j, -0.0 - 0j], (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))),
             [1e10 + 1j, 1e-5j], [complex("nan+1j"), complex("inf-infj"), complex("1+nanj")],
             (rng.standard_normal((40, 40)) * 1e3 + 1j * rng.standard_normal((40, 40))), [[1 + 1j] * 30]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for c in cases:
            data = c.tolist() if isinstance(c, np.ndarray) else c
            for name in ("complex64", "complex128", "complex32"):
                got = repr(npusim.tensor(data, dtype=getattr(npusim, name))).replace("npusim.", "torch.")
                assert got == repr(torch.tensor(data, dtype=getattr(torch, name)))
        assert repr(npusim.tensor([1j], requires_grad=True)) == repr(torch.tensor([1j], requires_grad=True))


def test_printing_on_npu():
    if not npusim.npu.is_available():
        pytest.skip("no npu")
    assert repr(npusim.tensor([1 + 2j], device="npu")) == "tensor([1.+2.j], device='npu:0')"


# --- the parts as views -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", [C64, C128, C32])
def test_real_and_imag_are_views(device, dt):
    _skip_complex32_on_cupy(device, dt)
    x = npusim.tensor([[1 + 2j, 3 - 4j], [5 + 6j, 7 - 8j]], dtype=dt, device=device)
    re, im = x.real, x.imag
    assert re.dtype is dt.to_real() and re.stride() == (4, 2) and re.storage_offset() == 0
    assert im.storage_offset() == 1 and re._base is x and im._base is x
    assert host(re).tolist() == [[1, 3], [5, 7]] and host(im).tolist() == [[2, -4], [6, -8]]
    re.mul_(10) if dt is not C32 else re.fill_(10)
    assert _np(x)[0, 0].real == 10
    x.imag = npusim.zeros(2, 2, dtype=dt.to_real(), device=device)
    assert _np(x).imag.tolist() == [[0, 0], [0, 0]]
    assert npusim.real(x) is not None and npusim.imag(x).shape == (2, 2)
    t = npusim.ones(2, device=device)
    assert t.real is t
    with pytest.raises(RuntimeError, match="^imag is not implemented for tensors with non-complex dtypes.$"):
        t.imag


@pytest.mark.parametrize("dt", [C64, C128, C32])
def test_view_as_real_and_complex(device, dt):
    _skip_complex32_on_cupy(device, dt)
    x = npusim.tensor([[1 + 2j, 3 - 4j]], dtype=dt, device=device)
    r = npusim.view_as_real(x)
    assert r.shape == (1, 2, 2) and r.stride() == (4, 2, 1) and r._base is x
    assert host(r).tolist() == [[[1, 2], [3, -4]]]
    back = npusim.view_as_complex(r)
    assert back.dtype is dt and _np(back).tolist() == [[1 + 2j, 3 - 4j]]
    rt = npusim.view_as_real(x.t())
    assert rt.shape == (2, 1, 2) and rt.stride() == (2, 4, 1)
    assert npusim.view_as_real_copy(x)._base is None and host(npusim.view_as_real_copy(x)).tolist() == host(r).tolist()
    assert _np(npusim.view_as_complex_copy(r)).tolist() == [[1 + 2j, 3 - 4j]]
    with pytest.raises(RuntimeError, match="^view_as_real is only supported for complex tensors$"):
        npusim.view_as_real(npusim.ones(2, device=device))


def test_view_as_complex_checks(device):
    f = npusim.ones(3, 4, device=device)
    z = npusim.view_as_complex(f[:, :2])
    assert z.shape == (3,) and z.stride() == (2,) and z.dtype is C64
    assert npusim.view_as_complex(npusim.ones(2, 2, dtype=npusim.float64, device=device)).dtype is C128
    for bad, message in ((npusim.ones(2, 3, device=device), "Tensor must have a last dimension of size 2"),
                         (npusim.ones(2, 2, device=device).t(), "Tensor must have a last dimension with stride 1"),
                         (npusim.ones(5, device=device)[1:].reshape(2, 2),
                          "Tensor must have a storage_offset divisible by 2"),
                         (npusim.ones((), device=device), "Input tensor must have one or more dimensions"),
                         (npusim.ones(2, 2, dtype=npusim.int64, device=device),
                          "view_as_complex is only supported for half, float and double tensors, but got a tensor "
                          "of scalar type: Long")):
        with pytest.raises(RuntimeError, match="^" + message):
            npusim.view_as_complex(bad)


def test_writes_through_the_views_reach_the_complex_tensor(device):
    x = npusim.zeros(2, dtype=C64, device=device)
    npusim.view_as_real(x)[:, 1] = 5
    assert x.tolist() == [5j, 5j]
    f = npusim.zeros(2, 2, device=device)
    npusim.view_as_complex(f).fill_(1 - 1j)
    assert host(f).tolist() == [[1, -1], [1, -1]]


# --- conjugation, adjoint, polar, complex ---------------------------------------------------------------------

def test_conj_family(device):
    x = npusim.tensor([[1 + 2j, 3 - 4j]], device=device)
    for fn in (npusim.conj, npusim.conj_physical, lambda t: t.conj(), lambda t: t.conj_physical()):
        assert fn(x).tolist() == [[1 - 2j, 3 + 4j]]
    assert not x.conj().is_conj() and not npusim.is_conj(x) and not x.is_neg() and not npusim.is_neg(x)
    assert x.resolve_conj() is x and npusim.resolve_neg(x) is x
    y = x.clone()
    assert y.conj_physical_() is y and y.tolist() == [[1 - 2j, 3 + 4j]]
    assert npusim.conj_physical_(y).tolist() == [[1 + 2j, 3 - 4j]]
    r = npusim.ones(2, device=device)
    assert r.conj() is r and r.conj_physical() is not r and r.conj_physical_() is r
    assert x.adjoint().tolist() == [[1 - 2j], [3 + 4j]] and npusim.adjoint(x).shape == (2, 1)
    assert npusim.adjoint(npusim.ones(2, 3, device=device)).shape == (3, 2)
    with pytest.raises(RuntimeError, match="^tensor.adjoint\\(\\) is only supported on matrices or batches of "
                                           "matrices. Got 1-D tensor.$"):
        npusim.ones(2, device=device).adjoint()


def test_complex_and_polar(device):
    re = npusim.tensor([1.0, 2.0], device=device)
    im = npusim.tensor([[3.0], [4.0]], device=device)
    z = npusim.complex(re, im)
    assert z.shape == (2, 2) and z.dtype is C64 and z.tolist() == [[1 + 3j, 2 + 3j], [1 + 4j, 2 + 4j]]
    p = npusim.polar(npusim.tensor([2.0, 1.0], dtype=npusim.float64, device=device),
                     npusim.tensor([0.0, np.pi / 2], dtype=npusim.float64, device=device))
    assert p.dtype is C128
    np.testing.assert_allclose(_np(p), [2, 1j], atol=1e-12)
    out = npusim.empty(2, dtype=C64, device=device)
    assert npusim.complex(re, re, out=out) is out and out.tolist() == [1 + 1j, 2 + 2j]
    with pytest.raises(RuntimeError, match="^Expected both inputs to be Half, Float or Double tensors but got Long "
                                           "and Long$"):
        npusim.complex(npusim.ones(2, dtype=npusim.int64, device=device), npusim.ones(2, dtype=npusim.int64,
                                                                                     device=device))
    with pytest.raises(RuntimeError, match="^Expected object of scalar type Float but got scalar type Double for "
                                           "second argument$"):
        npusim.complex(re, re.double())
    if not (device == "npu" and CUDA_MODE):
        assert npusim.complex(re.half(), re.half()).dtype is C32


def test_abs_and_angle(device):
    x = npusim.tensor([3 + 4j, -1 + 0j, 0j, -2j], device=device)
    assert host(x.abs()).tolist() == [5.0, 1.0, 0.0, 2.0] and x.abs().dtype is npusim.float32
    np.testing.assert_allclose(host(x.angle()), np.angle(_np(x)), rtol=1e-6)
    assert x.angle().dtype is npusim.float32 and x.cdouble().angle().dtype is npusim.float64
    with pytest.raises(RuntimeError, match="^In-place abs is not supported for complex tensors.$"):
        x.abs_()


# --- archives and pickling ------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", [C64, C128, C32])
def test_save_load_and_pickle(device, dt):
    _skip_complex32_on_cupy(device, dt)
    x = npusim.tensor([[1 + 2j, 3 - 4j]], dtype=dt, device=device)
    buf = io.BytesIO()
    npusim.save({"x": x, "xt": x.t()}, buf)
    buf.seek(0)
    d = npusim.load(buf)
    assert d["x"].dtype is dt and _np(d["x"]).tolist() == _np(x).tolist() and d["xt"].shape == (2, 1)
    assert d["x"].device == x.device
    y = pickle.loads(pickle.dumps(x))
    assert y.dtype is dt and _np(y).tolist() == _np(x).tolist()


@pytest.mark.oracle
def test_archives_load_in_torch_and_back(torch, tmp_path):
    x = npusim.tensor([[1 + 2j, 3 - 4j]])
    npusim.save({"c64": x, "c128": x.cdouble(), "c32": x.chalf()}, tmp_path / "n.pt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = torch.load(tmp_path / "n.pt")
        assert d["c64"].dtype is torch.complex64 and d["c64"].tolist() == [[1 + 2j, 3 - 4j]]
        assert d["c128"].dtype is torch.complex128 and d["c32"].dtype is torch.complex32
        assert d["c32"].cfloat().tolist() == [[1 + 2j, 3 - 4j]]
        t = torch.tensor([1 + 2j, 3 - 4j])
        torch.save({"t": t, "conj": t.clone().conj(), "half": t.chalf(), "imag": t.clone().imag}, tmp_path / "t.pt")
    d = npusim.load(tmp_path / "t.pt")
    assert d["t"].tolist() == [1 + 2j, 3 - 4j] and d["conj"].tolist() == [1 - 2j, 3 + 4j]
    assert d["half"].dtype is C32 and d["imag"].tolist() == [2.0, -4.0]


# --- torch as the oracle for the views and builders ---------------------------------------------------------

@pytest.mark.oracle
def test_views_and_builders_match_torch(torch):
    data = [[1 + 2j, -3.5 + 0.25j], [0.5 - 1j, 4j]]
    for name in ("complex64", "complex128"):
        a = npusim.tensor(data, dtype=getattr(npusim, name))
        b = torch.tensor(data, dtype=getattr(torch, name))
        for fn in (lambda L, x: x.real, lambda L, x: x.imag, lambda L, x: L.view_as_real(x),
                   lambda L, x: L.view_as_real(x.t()), lambda L, x: x.conj(), lambda L, x: x.conj_physical(),
                   lambda L, x: x.adjoint(), lambda L, x: x.abs(), lambda L, x: x.angle(),
                   lambda L, x: L.view_as_complex(L.view_as_real(x) * 2)):
            got, want = fn(npusim, a), fn(torch, b)
            assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
            assert got.shape == tuple(want.shape) and got.stride() == want.resolve_conj().stride() or \
                got.stride() == want.stride()
            np.testing.assert_allclose(_np(got), want.resolve_conj().numpy(), rtol=1e-6)
        r = torch.randn(3, dtype=torch.float64)
        for fn in (lambda L, x: L.polar(x.abs(), x), lambda L, x: L.complex(x, -x)):
            np.testing.assert_allclose(_np(fn(npusim, npusim.tensor(r.numpy()))), fn(torch, r).numpy())


def test_type_names(device):
    x = npusim.tensor([1 + 2j], device=device)
    prefix = "npusim." if device == "cpu" else "npusim.npu."
    assert x.type() == prefix + "ComplexFloatTensor" and x.cdouble().type() == prefix + "ComplexDoubleTensor"
    assert npusim.typename(x) == x.type()
    assert npusim.zeros(1, device=device).type("npusim.ComplexDoubleTensor").dtype is C128


@pytest.mark.oracle
def test_type_names_match_torch(torch):
    for name in ("complex32", "complex64", "complex128"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = torch.zeros(1, dtype=getattr(torch, name)).type()
        assert npusim.zeros(1, dtype=getattr(npusim, name)).type() == want.replace("torch.", "npusim.")


COMPLEX32_CASES = {
    "add": lambda L, x: x + x, "mul": lambda L, x: x * x, "sub": lambda L, x: x - 2 * x, "neg": lambda L, x: -x,
    "eq": lambda L, x: x == x, "abs": lambda L, x: x.abs(), "sgn": lambda L, x: x.sgn(),
    "cat": lambda L, x: L.cat([x, x]), "stack": lambda L, x: L.stack([x, x]),
    "where": lambda L, x: L.where(x.abs() > 2.5, x, x.conj()), "masked_fill": lambda L, x: x.masked_fill(x.abs() > 2.5, 1j),
    "index": lambda L, x: x[L.tensor([1, 0])], "repeat": lambda L, x: x.repeat(2), "isnan": lambda L, x: x.isnan(),
    "scalar": lambda L, x: x + 1j,
}


def _values(t):
    return t.cfloat().tolist() if t.dtype in (C32,) or str(t.dtype).endswith("complex32") else t.tolist()


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(COMPLEX32_CASES))
def test_complex32_kernels_match_torch(torch, name):
    fn = COMPLEX32_CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = fn(torch, torch.tensor([1 + 2j, 3 - 0.5j], dtype=torch.chalf))
        got = fn(npusim, npusim.tensor([1 + 2j, 3 - 0.5j], dtype=C32))
        assert got.dtype.name == str(want.dtype).split(".")[1] and _values(got) == _values(want)


def test_complex32_arithmetic(device):
    _skip_complex32_on_cupy(device, C32)
    x = npusim.tensor([1 + 2j, 3 - 0.5j], dtype=C32, device=device)
    assert (x * x).dtype is C32 and _np(x * x).tolist() == [-3 + 4j, 8.75 - 3j]
    assert x.abs().dtype is npusim.float16 and (x == x).tolist() == [True, True]
    with pytest.raises(NotImplementedError, match="not implemented for 'ComplexHalf'"):
        x.exp()
