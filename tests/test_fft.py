"""npusim.fft: every transform, fftfreq / rfftfreq and the shifts, on cpu and npu.

Values are checked against numpy.fft in float64 / complex128 (numpy has no hfftn / ihfftn: they are
irfftn / rfftn of the conjugate with the norm swapped), dtypes and errors as torch's, out=, and gradients
against central finite differences; then the same grid against torch (``oracle``): values, dtypes, error
types and messages, and gradients.

Tolerance: a float32 FFT of N points (N the product of the transformed sizes) has an error of at most
about eps * log2(N) * sum|x| (eps = 2**-23), and sum|x| <= N max|x|; the scaling of ``norm`` multiplies both
sides. ``_atol`` takes 8 times that bound (rtol 0); float64 uses eps = 2**-52 the same way. Two float32
implementations (npusim's pocketfft / cuFFT and torch's MKL) then differ by at most twice the bound.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import npusim

pytestmark = pytest.mark.skipif(not hasattr(npusim, "complex64"), reason="needs npusim's complex dtypes")

RNG = np.random.default_rng(11)
X64 = RNG.standard_normal((4, 6))
C128 = RNG.standard_normal((4, 6)) + 1j * RNG.standard_normal((4, 6))
X3 = RNG.standard_normal((3, 4, 5))
ONE_DIM = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
TWO_DIM = ["fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"]
N_DIM = ["fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"]
REAL_INPUT = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}
SWAP = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def _np(t):
    return t.detach().cpu().resolve_conj().numpy()


def _t(a, device, requires_grad=False):
    return npusim.tensor(a, device=device, requires_grad=requires_grad)


def _atol(x, n, eps=2.0 ** -23, scale=1.0):
    return 8 * eps * max(math.log2(max(n, 2)), 1) * n * float(np.abs(x).max()) * scale


def _numpy_reference(name, x, kw):
    """numpy.fft's result for npusim.fft.<name>(x, **kw)."""
    kw = dict(kw)
    norm = kw.pop("norm", None)
    if "n" in kw or "dim" in kw and name in ONE_DIM:
        kw = {"n": kw.get("n"), "axis": kw.get("dim", -1)}
    elif "dim" in kw:
        kw = {"s": kw.get("s"), "axes": kw.pop("dim")}
    elif "s" in kw:
        kw = {"s": kw["s"], "axes": list(range(-len(kw["s"]), 0))}
    if name in TWO_DIM:
        kw.setdefault("axes", (-2, -1))
    base = name.rstrip("2n") if name not in ONE_DIM else name
    if base == "hfft" and name != "hfft":   # hfftn(x) = irfftn(conj(x)) with the norm swapped
        return np.fft.irfftn(np.conj(x), norm=SWAP[norm], **kw)
    if base == "ihfft" and name != "ihfft":
        return np.conj(np.fft.rfftn(x, norm=SWAP[norm], **kw))
    fn = getattr(np.fft, name if name in ONE_DIM else base + "n")
    return fn(x, norm=norm, **kw)


CASES = [(name, kw) for name in ONE_DIM for kw in ({}, {"n": 4}, {"n": 9}, {"dim": 0}, {"norm": "ortho"},
                                                   {"norm": "forward"}, {"norm": "backward"})] + \
        [(name, kw) for name in TWO_DIM + N_DIM for kw in ({}, {"s": (3, 8)}, {"dim": (1, 0)}, {"norm": "ortho"},
                                                           {"norm": "forward"})]


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{kw}" for n, kw in CASES])
def test_transforms_match_numpy_in_double_precision(device, name, kw):
    for x in ([X64] if name in REAL_INPUT else [X64, C128]):
        r = getattr(npusim.fft, name)(_t(x, device), **kw)
        want = _numpy_reference(name, x, kw)
        assert r.shape == want.shape and r.device.type == device
        assert r.dtype is (npusim.float64 if want.dtype.kind == "f" else npusim.complex128)
        np.testing.assert_allclose(_np(r), want, rtol=0, atol=_atol(x, x.size, eps=2.0 ** -52))


@pytest.mark.parametrize("name", ONE_DIM + TWO_DIM + N_DIM)
def test_float32_gives_complex64_within_the_derived_bound(device, name):
    x = X3.astype(np.float32)
    r = getattr(npusim.fft, name)(_t(x, device))
    want = _numpy_reference(name, X3, {})
    assert r.dtype is (npusim.float32 if want.dtype.kind == "f" else npusim.complex64)
    # the transformed points: the last dim for the 1-d transforms, two or all dims for the others
    n = {1: 5, 2: 20}.get(1 if name in ONE_DIM else 2 if name in TWO_DIM else 3, X3.size)
    if name.startswith(("irfft", "hfft")):   # the output's last dim is 2 * (5 - 1)
        n = n // 5 * 8
    np.testing.assert_allclose(_np(r), want, rtol=0, atol=_atol(x, n))


def test_dtype_promotion_and_refusals(device):
    ints = npusim.arange(8, device=device)
    assert npusim.fft.fft(ints).dtype is npusim.complex64
    assert npusim.fft.rfft(ints > 3).dtype is npusim.complex64
    assert npusim.fft.irfft(npusim.fft.rfft(ints)).dtype is npusim.float32
    assert npusim.fft.fft(ints.double()).dtype is npusim.complex128
    np.testing.assert_allclose(_np(npusim.fft.fft(ints)), np.fft.fft(np.arange(8)), atol=1e-4)
    for dt, name in ((npusim.float16, "Half"), (npusim.bfloat16, "BFloat16")):
        with pytest.raises(RuntimeError, match=f"Unsupported dtype {name}"):
            npusim.fft.fft(ints.to(dt))
    before = npusim.get_default_dtype()
    npusim.set_default_dtype(npusim.float64)
    try:
        assert npusim.fft.fft(ints).dtype is npusim.complex128
    finally:
        npusim.set_default_dtype(before)


def test_cpu_autocast_runs_the_transforms_in_float32():
    # torch's AutocastCPU list casts the FFTs, stft and eig to float32: bfloat16 inputs give complex64
    x = npusim.randn(8, 8).bfloat16()
    with npusim.autocast("cpu", dtype=npusim.bfloat16):
        assert npusim.fft.fft(x).dtype is npusim.complex64
        assert npusim.fft.hfft(x).dtype is npusim.float32
        assert npusim.stft(x.flatten(), 8, window=npusim.ones(8).bfloat16(), return_complex=True).dtype \
            is npusim.complex64
        assert npusim.linalg.eigvals(x).dtype is npusim.complex64


def test_inverse_transforms_invert(device):
    x = _t(X3, device)
    np.testing.assert_allclose(_np(npusim.fft.ifft(npusim.fft.fft(x))), X3, atol=1e-12)
    np.testing.assert_allclose(_np(npusim.fft.irfftn(npusim.fft.rfftn(x), s=X3.shape)), X3, atol=1e-12)
    np.testing.assert_allclose(_np(npusim.fft.hfft(npusim.fft.ihfft(x), n=5)), X3, atol=1e-12)
    np.testing.assert_allclose(_np(npusim.fft.ifft2(npusim.fft.fft2(x, norm="ortho"), norm="ortho")), X3,
                               atol=1e-12)


@pytest.mark.parametrize("call,exc,message", [
    (lambda x, c: npusim.fft.fft(x, n=0), RuntimeError, r"Invalid number of data points \(0\) specified"),
    (lambda x, c: npusim.fft.irfft(c[:, :1]), RuntimeError, r"Invalid number of data points \(0\) specified"),
    (lambda x, c: npusim.fft.fft(x, dim=2), IndexError, r"Dimension out of range \(expected to be in range of "
                                                        r"\[-2, 1\], but got 2\)"),
    (lambda x, c: npusim.fft.fft(x[0, 0]), IndexError, "Dimension specified as -1 but tensor has no dimensions"),
    (lambda x, c: npusim.fft.fft(x, norm="bad"), RuntimeError, 'Invalid normalization mode: "bad"'),
    (lambda x, c: npusim.fft.rfft(c), RuntimeError, "rfft expects a real input tensor, but got ComplexDouble"),
    (lambda x, c: npusim.fft.rfftn(c), RuntimeError, "rfftn expects a real-valued input tensor, but got "
                                                     "ComplexDouble"),
    (lambda x, c: npusim.fft.rfftn(x, dim=()), RuntimeError, "rfftn must transform at least one axis"),
    (lambda x, c: npusim.fft.irfftn(c, dim=()), RuntimeError, "irfftn must transform at least one axis"),
    (lambda x, c: npusim.fft.fftn(x, dim=(0, 0)), RuntimeError, "FFT dims must be unique"),
    (lambda x, c: npusim.fft.fftn(x, s=(3,), dim=(0, 1)), RuntimeError,
     "When given, dim and shape arguments must have the same length"),
    (lambda x, c: npusim.fft.fftn(x, s=(1, 2, 3)), RuntimeError,
     "Got shape with 3 values but input tensor only has 2 dimensions."),
    (lambda x, c: npusim.fft.fftn(x, s=(-2, 4)), RuntimeError, r"Invalid number of data points \(-2\) specified"),
    (lambda x, c: npusim.fft.fft(x, out=npusim.empty(3, dtype=x.dtype, device=x.device)), RuntimeError,
     "fft expects a complex output tensor, but got Double"),
    (lambda x, c: npusim.fft.irfft(c, out=npusim.empty(3, dtype=c.dtype, device=c.device)), RuntimeError,
     "irfft expects a floating point output tensor, but got ComplexDouble"),
    (lambda x, c: npusim.fft.fft(x, norm=3), TypeError, "fft_fft\\(\\): argument 'norm' must be str, not int"),
    (lambda x, c: npusim.fft.fft(x, n=2.0), TypeError, "fft_fft\\(\\): argument 'n' must be int, not float"),
    (lambda x, c: npusim.fft.fft([1.0, 2.0]), TypeError, r"fft_fft\(\): argument 'input' \(position 1\) must be "
                                                         "Tensor, not list"),
])
def test_errors_are_torchs(device, call, exc, message):
    with pytest.raises(exc, match=message):
        call(_t(X64, device), _t(C128, device))


def test_out(device):
    x = _t(X64, device)
    out = npusim.empty(0, dtype=npusim.complex128, device=device)
    r = npusim.fft.fft2(x, out=out)
    assert r is out and out.shape == (4, 6)
    np.testing.assert_allclose(_np(out), np.fft.fft2(X64), atol=1e-12)
    real_out = npusim.empty(4, 10, dtype=npusim.float64, device=device)
    npusim.fft.irfft(_t(C128, device), out=real_out)
    np.testing.assert_allclose(_np(real_out), np.fft.irfft(C128), atol=1e-12)


def test_fftfreq_and_rfftfreq(device):
    for n, d in ((5, 1.0), (8, 0.25), (1, 2.0)):
        f = npusim.fft.fftfreq(n, d, device=device)
        assert f.dtype is npusim.float32 and f.device.type == device
        np.testing.assert_allclose(_np(f), np.fft.fftfreq(n, d), rtol=1e-6)
        np.testing.assert_allclose(_np(npusim.fft.rfftfreq(n, d=d, dtype=npusim.float64, device=device)),
                                   np.fft.rfftfreq(n, d))
    assert npusim.fft.fftfreq(0).shape == (0,)
    np.testing.assert_array_equal(_np(npusim.fft.fftfreq(3, 0.0)), [np.nan, np.inf, -np.inf])
    f = npusim.fft.fftfreq(4, requires_grad=True, dtype=npusim.float64)
    assert f.requires_grad and f.is_leaf
    out = npusim.empty(2, dtype=npusim.float64, device=device)
    assert npusim.fft.rfftfreq(6, out=out) is out and out.shape == (4,)
    with pytest.raises(RuntimeError, match="fftfreq requires a floating point or complex dtype"):
        npusim.fft.fftfreq(4, dtype=npusim.int64)
    with pytest.raises(RuntimeError, match="rfftfreq requires a floating point or complex dtype"):
        npusim.fft.rfftfreq(4, dtype=npusim.int32)
    with pytest.raises(TypeError, match=r"fft_fftfreq\(\): argument 'n' \(position 1\) must be int, not float"):
        npusim.fft.fftfreq(4.0)


@pytest.mark.parametrize("dim", [None, 0, 1, (0, -1)])
def test_fftshift_and_ifftshift_match_numpy(device, dim):
    for a in (np.arange(15.0).reshape(3, 5), np.arange(12).reshape(4, 3), C128):
        axes = dim if dim is None or isinstance(dim, tuple) else (dim,)
        s = npusim.fft.fftshift(_t(a, device), dim=dim)
        np.testing.assert_array_equal(_np(s), np.fft.fftshift(a, axes=axes))
        np.testing.assert_array_equal(_np(npusim.fft.ifftshift(s, dim=dim)), a)
        assert s.dtype is _t(a, device).dtype


# --- gradients -----------------------------------------------------------------------------------------------------

def _weighted_loss(out, w):
    if out.is_complex():
        out = npusim.view_as_real(out.resolve_conj())
    return (out * w).sum()


def _numeric_grad(f, x, w, eps=1e-6):
    """Central differences of the weighted loss; for a complex input, d/dRe + i d/dIm (torch's convention)."""
    def loss(a):
        out = f(npusim.tensor(a))
        arr = _np(out)
        if np.iscomplexobj(arr):
            arr = np.stack([arr.real, arr.imag], -1)
        return float((arr * w).sum())
    grad = np.zeros(x.shape, dtype=x.dtype)
    steps = (1.0, 1j) if np.iscomplexobj(x) else (1.0,)
    for idx in np.ndindex(x.shape):
        for step in steps:
            e = np.zeros(x.shape, dtype=x.dtype)
            e[idx] = eps * step
            grad[idx] += step * (loss(x + e) - loss(x - e)) / (2 * eps)
    return grad


GRAD_CASES = [(name, kw) for name in ONE_DIM for kw in ({}, {"n": 3}, {"n": 8, "norm": "ortho"})] + \
             [(name, kw) for name in TWO_DIM + N_DIM for kw in ({}, {"s": (3, 8), "norm": "forward"})]


@pytest.mark.parametrize("name,kw", GRAD_CASES, ids=[f"{n}-{kw}" for n, kw in GRAD_CASES])
def test_gradients_match_finite_differences(device, name, kw):
    small_x = X64[:3, :4]
    small_c = C128[:3, :4]
    f = getattr(npusim.fft, name)
    for x in ([small_x] if name in REAL_INPUT else [small_x, small_c]):
        out = f(npusim.tensor(x), **kw)
        w = RNG.standard_normal(tuple(out.shape) + ((2,) if out.is_complex() else ()))
        xt = _t(x, device, requires_grad=True)
        _weighted_loss(f(xt, **kw), _t(w, device)).backward()
        assert xt.grad.dtype is xt.dtype
        np.testing.assert_allclose(_np(xt.grad), _numeric_grad(lambda t: f(t, **kw), x, w), atol=1e-6)


# --- against torch -------------------------------------------------------------------------------------------------

ORACLE_INPUTS = {
    "float32": X3.astype(np.float32), "float64": X64, "complex64": C128.astype(np.complex64), "complex128": C128,
    "int64": np.arange(12).reshape(3, 4),
}
ORACLE_KWARGS_1D = [{}, {"n": 4}, {"n": 9}, {"dim": 0}, {"norm": "ortho"}, {"norm": "forward"}, {"n": 0},
                    {"dim": 3}, {"norm": "x"}, {"n": 1}]
ORACLE_KWARGS_ND = [{}, {"s": (4, 3)}, {"s": (2, -1)}, {"dim": (0,)}, {"dim": (1, 0)}, {"norm": "ortho"},
                    {"norm": "forward"}, {"s": (3,), "dim": (0, 1)}, {"dim": (0, 0)}, {"s": (1, 2, 3, 4)},
                    {"dim": ()}, {"s": ()}]


def _both(torch, device, fname, arr, kw):
    results = []
    for lib, make in ((torch, torch.from_numpy), (npusim, lambda a: npusim.tensor(a, device=device))):
        try:
            results.append(getattr(lib.fft, fname)(make(arr), **kw))
        except Exception as e:  # noqa: BLE001 - the error itself is compared
            results.append(e)
    return results


@pytest.mark.oracle
@pytest.mark.parametrize("name", ONE_DIM + TWO_DIM + N_DIM)
def test_values_dtypes_and_errors_match_torch(torch, device, name):
    grid = ORACLE_KWARGS_1D if name in ONE_DIM else ORACLE_KWARGS_ND
    for dname, arr in ORACLE_INPUTS.items():
        for kw in grid:
            want, got = _both(torch, device, name, arr, kw)
            if isinstance(want, Exception) or isinstance(got, Exception):
                assert type(got) is type(want) and str(got) == str(want), (name, dname, kw)
                continue
            assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1], (name, dname, kw)
            assert tuple(got.shape) == tuple(want.shape), (name, dname, kw)
            a = want.resolve_conj().numpy()
            n = max(int(np.prod(arr.shape)), 2)
            eps = 2.0 ** -23 if a.dtype in (np.float32, np.complex64) else 2.0 ** -52
            np.testing.assert_allclose(_np(got), a, rtol=0, atol=2 * _atol(arr, n, eps=eps) + 1e-30,
                                       err_msg=f"{name} {dname} {kw}")


@pytest.mark.oracle
@pytest.mark.parametrize("name", ["fftshift", "ifftshift", "fftfreq", "rfftfreq"])
def test_frequencies_and_shifts_match_torch(torch, device, name):
    if name.endswith("freq"):
        for n, d, dt in ((5, 1.0, None), (8, 0.3, "float64"), (0, 1.0, None), (3, 0.0, None), (-1, 1.0, None),
                         (4, 1.0, "int64")):
            kw = {} if dt is None else {"dtype": getattr(torch, dt)}
            kn = {} if dt is None else {"dtype": getattr(npusim, dt)}
            try:
                want = getattr(torch.fft, name)(n, d, **kw)
            except Exception as e:  # noqa: BLE001
                with pytest.raises(type(e), match=None):
                    getattr(npusim.fft, name)(n, d, device=device, **kn)
                continue
            got = getattr(npusim.fft, name)(n, d, device=device, **kn)
            np.testing.assert_allclose(_np(got), want.numpy(), rtol=1e-6)
        return
    for arr in (X3, C128, np.arange(7), np.array(1.0)):
        for kw in ({}, {"dim": 0}, {"dim": (0, -1)}, {"dim": 5}):
            want, got = _both(torch, device, name, arr, kw)
            if isinstance(want, Exception):
                assert type(got) is type(want) and str(got) == str(want)
            else:
                np.testing.assert_array_equal(_np(got), want.numpy())


@pytest.mark.oracle
@pytest.mark.parametrize("name", ONE_DIM + TWO_DIM + N_DIM)
def test_gradients_match_torch(torch, device, name):
    one = name in ONE_DIM
    grid = [{}, {"norm": "ortho"}, {"norm": "forward"}] + \
        ([{"n": 3}, {"n": 8}, {"dim": 0}] if one else [{"s": (3, 8)}, {"dim": (1, 0)}])
    for x in ([X64] if name in REAL_INPUT else [X64, C128]):
        for kw in grid:
            xt = torch.from_numpy(x).requires_grad_()
            out_t = getattr(torch.fft, name)(xt, **kw)
            w = RNG.standard_normal(tuple(out_t.shape) + ((2,) if out_t.is_complex() else ()))
            real_t = torch.view_as_real(out_t.resolve_conj()) if out_t.is_complex() else out_t
            (real_t * torch.from_numpy(w)).sum().backward()
            xn = _t(x, device, requires_grad=True)
            _weighted_loss(getattr(npusim.fft, name)(xn, **kw), _t(w, device)).backward()
            np.testing.assert_allclose(_np(xn.grad), xt.grad.resolve_conj().numpy(), atol=1e-10,
                                       err_msg=f"{name} {kw}")


@pytest.mark.oracle
@pytest.mark.parametrize("name", ["rfft", "irfft", "fft", "ihfftn"])
def test_double_backward_matches_torch(torch, device, name):
    # the formulas are made of dispatched ops, so a gradient of a gradient is torch's too
    x = X64[0] if name in REAL_INPUT else C128[0]
    v = RNG.standard_normal(x.shape)
    grads = []
    for lib, make in ((torch, torch.from_numpy), (npusim, lambda a: _t(a, device))):
        xt = make(x).requires_grad_()
        out = getattr(lib.fft, name)(xt)
        real = lib.view_as_real(out.resolve_conj()) if out.is_complex() else out
        w = make(np.linspace(-1, 1, real.numel()).reshape(tuple(real.shape)))
        g, = lib.autograd.grad(((real * w).sum()) ** 2, xt, create_graph=True)
        gr = lib.view_as_real(g) if g.is_complex() else g
        (gr * make(np.stack([v, v], -1) if g.is_complex() else v)).sum().backward()
        grads.append(xt.grad)
    np.testing.assert_allclose(_np(grads[1]), grads[0].resolve_conj().numpy(), atol=1e-9)
