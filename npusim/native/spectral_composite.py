"""torch.fft's functions as ATen's composites over _fft_r2c, _fft_c2r and _fft_c2c (SpectralOps.cpp).

Each promotes its input as torch does (integers to the default float dtype; float32 and float64 only, as
torch's CPU kernels; complex when the transform needs it), crops or zero-pads the signal to the requested
sizes, maps ``norm`` to a normalization mode and calls one primitive, so autograd sees the primitives'
formulas and the pads and slices around them. fftfreq / rfftfreq build on arange, fftshift /
ifftshift on roll.
"""
from __future__ import annotations

import numpy as np

from ..core.c10 import dtype as D
from ..core.dispatch.ops_namespace import aten
from . import common as C
from ..kernels.fft import BY_N, BY_ROOT_N, NONE


def norm_mode(norm, forward):
    """ATen's norm_from_string: the scaling a transform applies for ``norm`` ("backward" by default)."""
    if norm is None or norm == "backward":
        return NONE if forward else BY_N
    if norm == "forward":
        return BY_N if forward else NONE
    if norm == "ortho":
        return BY_ROOT_N
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def promote(t, require_complex=False):
    """ATen's promote_tensor_fft: integral inputs become the default float dtype; only float32 / float64 (and
    their complex types) are transformed."""
    dt = t.dtype
    if dt.is_complex:
        return t
    new = dt if dt.is_floating_point else D.get_default_dtype()
    if new not in (D.float32, D.float64):
        raise RuntimeError(f"Unsupported dtype {C.tname(new)}")
    if require_complex:
        new = new.to_complex()
    return t if new is dt else aten._to_copy.default(t, dtype=new)


def resize_input(x, dims, sizes):
    """Crop or zero-pad each of ``dims`` to its size in ``sizes`` (ATen's resize_fft_input)."""
    pad = [0] * (2 * x.dim())   # constant_pad_nd's order: the last dim's (before, after) first
    for d, n in zip(dims, sizes):
        have = x.shape[d]
        if have > n:
            x = aten.slice.Tensor(x, d, 0, n)
        elif have < n:
            pad[2 * (x.dim() - 1 - d) + 1] = n - have
    if any(pad):
        x = on_real_view(x, lambda r, extra: aten.constant_pad_nd.default(r, extra + pad, 0))
    return x


def on_real_view(x, fn):
    """``fn(x, [])`` for a real ``x``; for a complex one, ``fn`` runs on its real view (a trailing dim of 2,
    hence the ``[0, 0]`` of pad for it) and the result is viewed as complex again."""
    if not x.dtype.is_complex:
        return fn(x, [])
    r = fn(aten.view_as_real.default(x), [0, 0])
    return aten.view_as_complex.default(r)


def _conj(t):
    return aten.conj.default(t)


def _check_n(n):
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


# --- one-dimensional transforms --------------------------------------------------------------------------------

def _c2c(name, x, n, dim, norm, forward):
    if not x.dtype.is_complex:
        raise RuntimeError(f"{name} expects a complex input tensor, but got {C.tname(x.dtype)}")
    d = C.sized_dim(dim, x.dim())
    n = x.shape[d] if n is None else n
    _check_n(n)
    x = resize_input(x, [d], [n])
    return aten._fft_c2c.default(x, [d], norm_mode(norm, forward), forward)


def _r2c(name, x, n, dim, norm, forward, onesided):
    if x.dtype.is_complex:
        raise RuntimeError(f"{name} expects a real input tensor, but got {C.tname(x.dtype)}")
    x = promote(x)
    d = C.sized_dim(dim, x.dim())
    n = x.shape[d] if n is None else n
    _check_n(n)
    x = resize_input(x, [d], [n])
    r = aten._fft_r2c.default(x, [d], norm_mode(norm, forward), onesided)
    return r if forward else _conj(r)   # ATen has no native inverse r2c: the conjugate of the forward one


def _c2r(name, x, n, dim, norm, forward):
    x = promote(x, require_complex=True)
    d = C.sized_dim(dim, x.dim())
    n = 2 * (x.shape[d] - 1) if n is None else n
    _check_n(n)
    x = resize_input(x, [d], [n // 2 + 1])
    if forward:   # hfft: the forward c2r of x is the inverse c2r of its conjugate
        x = _conj(x)
    return aten._fft_c2r.default(x, [d], norm_mode(norm, forward), n)


def fft_fft(self, n=None, dim=-1, norm=None):
    if self.dtype.is_complex:
        return _c2c("fft", self, n, dim, norm, True)
    return _r2c("fft", self, n, dim, norm, True, False)


def fft_ifft(self, n=None, dim=-1, norm=None):
    if self.dtype.is_complex:
        return _c2c("ifft", self, n, dim, norm, False)
    return _r2c("ifft", self, n, dim, norm, False, False)


def fft_rfft(self, n=None, dim=-1, norm=None):
    return _r2c("rfft", self, n, dim, norm, True, True)


def fft_irfft(self, n=None, dim=-1, norm=None):
    return _c2r("irfft", self, n, dim, norm, False)


def fft_hfft(self, n=None, dim=-1, norm=None):
    return _c2r("hfft", self, n, dim, norm, True)


def fft_ihfft(self, n=None, dim=-1, norm=None):
    return _r2c("ihfft", self, n, dim, norm, False, True)


# --- n-dimensional transforms ----------------------------------------------------------------------------------

def shape_and_dims(x, s, dim):
    """ATen's canonicalize_fft_shape_and_dim_args: the signal sizes and the wrapped, unique dims."""
    ndim = x.dim()
    dims = None
    if dim is not None:
        dims = [C.sized_dim(d, ndim) for d in C.int_list(dim)]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        s = C.int_list(s)
        if dims is not None and len(dims) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {ndim} dimensions.")
        if dims is None:   # the last len(s) dims
            dims = list(range(ndim - len(s), ndim))
        shape = [x.shape[d] if n == -1 else n for d, n in zip(dims, s)]
    elif dims is None:
        dims, shape = list(range(ndim)), list(x.shape)
    else:
        shape = [x.shape[d] for d in dims]
    for n in shape:
        _check_n(n)
    return shape, dims


def _c2r_shape_and_dims(name, x, s, dim):
    """canonicalize_fft_c2r_shape_and_dim_args: the one-sided input sizes, the dims and the last dim's output
    size."""
    shape, dims = shape_and_dims(x, s, dim)
    if not shape:
        raise RuntimeError(f"{name} must transform at least one axis")
    s = None if s is None else C.int_list(s)
    last = 2 * (x.shape[dims[-1]] - 1) if s is None or s[-1] == -1 else shape[-1]
    _check_n(last)
    shape[-1] = last // 2 + 1
    return shape, dims, last


def _fftn_c2c(self, s, dim, norm, forward):
    shape, dims = shape_and_dims(self, s, dim)
    x = resize_input(promote(self, require_complex=True), dims, shape)
    return aten._fft_c2c.default(x, dims, norm_mode(norm, forward), forward)


def fft_fftn(self, s=None, dim=None, norm=None):
    return _fftn_c2c(self, s, dim, norm, True)


def fft_ifftn(self, s=None, dim=None, norm=None):
    return _fftn_c2c(self, s, dim, norm, False)


def fft_rfftn(self, s=None, dim=None, norm=None):
    if self.dtype.is_complex:
        raise RuntimeError(f"rfftn expects a real-valued input tensor, but got {C.tname(self.dtype)}")
    shape, dims = shape_and_dims(self, s, dim)
    if not shape:
        raise RuntimeError("rfftn must transform at least one axis")
    x = resize_input(promote(self), dims, shape)
    return aten._fft_r2c.default(x, dims, norm_mode(norm, True), True)


def fft_irfftn(self, s=None, dim=None, norm=None):
    shape, dims, last = _c2r_shape_and_dims("irfftn", self, s, dim)
    x = resize_input(promote(self, require_complex=True), dims, shape)
    return aten._fft_c2r.default(x, dims, norm_mode(norm, False), last)


def fft_hfftn(self, s=None, dim=None, norm=None):
    shape, dims, last = _c2r_shape_and_dims("hfftn", self, s, dim)
    x = resize_input(promote(self, require_complex=True), dims, shape)
    mode = norm_mode(norm, True)
    if len(dims) > 1:
        x = aten._fft_c2c.default(x, dims[:-1], mode, True)
    return aten._fft_c2r.default(_conj(x), [dims[-1]], mode, last)


def fft_ihfftn(self, s=None, dim=None, norm=None):
    shape, dims = shape_and_dims(self, s, dim)
    if not shape:
        raise RuntimeError("ihfftn must transform at least one axis")
    if self.dtype.is_complex:
        raise RuntimeError(f"Only supports floating-point dtypes, but found: {C.tname(self.dtype)}")
    x = resize_input(promote(self), dims, shape)
    mode = norm_mode(norm, False)
    r = aten._fft_r2c.default(x, [dims[-1]], mode, True)
    r = _conj(r)   # the inverse transform of a real signal is the conjugate of its forward one
    if len(dims) == 1:
        return r
    return aten._fft_c2c.default(aten.resolve_conj.default(r), dims[:-1], mode, False)


def _two_dim(fn):
    def run(self, s=None, dim=(-2, -1), norm=None):
        return fn(self, s, dim, norm)
    run.__name__ = fn.__name__[:-1] + "2"
    return run


fft_fft2, fft_ifft2, fft_rfft2, fft_irfft2, fft_hfft2, fft_ihfft2 = (
    _two_dim(f) for f in (fft_fftn, fft_ifftn, fft_rfftn, fft_irfftn, fft_hfftn, fft_ihfftn))


# --- frequencies and shifts ------------------------------------------------------------------------------------

def _reciprocal(n, d):
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.float64(1.0) / np.float64(n * d))   # 1/0 is inf, as in C++


def _freq_check(name, dtype):
    dt = D.get_default_dtype() if dtype is None else dtype
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{name} requires a floating point or complex dtype")
    if dt.is_complex:   # ATen builds the frequencies with arange, which has no complex kernel
        raise NotImplementedError(f'"arange_cpu" not implemented for \'{C.tname(dt)}\'')
    return dt


def fft_fftfreq(n, d=1.0, *, dtype=None, layout=None, device=None, pin_memory=None):
    dt = _freq_check("fftfreq", dtype)
    k = aten.arange.default(n, dtype=D.int64, device=device)
    k = aten.where.self(aten.ge.Scalar(k, (n + 1) // 2), aten.sub.Scalar(k, n), k)   # 0, 1, ..., -n//2, ..., -1
    return aten.mul.Scalar(aten._to_copy.default(k, dtype=dt), _reciprocal(n, d))


def fft_rfftfreq(n, d=1.0, *, dtype=None, layout=None, device=None, pin_memory=None):
    dt = _freq_check("rfftfreq", dtype)
    half = n // 2 if n >= 0 else -(-n // 2)   # C++'s n / 2 truncates toward zero
    k = aten.arange.default(half + 1, dtype=dt, device=device)
    return aten.mul.Scalar(k, _reciprocal(n, d))


def _shift(self, dim, half):
    ndim = self.dim()
    dims = list(range(ndim)) if dim is None else [C.sized_dim(d, ndim) for d in C.int_list(dim)]
    shifts = [half(self.shape[d]) for d in dims]
    return on_real_view(self, lambda x, _: aten.roll.default(x, shifts, dims))


def fft_fftshift(self, dim=None):
    return _shift(self, dim, lambda n: n // 2)


def fft_ifftshift(self, dim=None):
    return _shift(self, dim, lambda n: (n + 1) // 2)


COMPOSITE_IMPLICIT = {
    "fft_fft": fft_fft, "fft_ifft": fft_ifft, "fft_rfft": fft_rfft, "fft_irfft": fft_irfft,
    "fft_hfft": fft_hfft, "fft_ihfft": fft_ihfft,
    "fft_fft2": fft_fft2, "fft_ifft2": fft_ifft2, "fft_rfft2": fft_rfft2, "fft_irfft2": fft_irfft2,
    "fft_hfft2": fft_hfft2, "fft_ihfft2": fft_ihfft2,
    "fft_fftn": fft_fftn, "fft_ifftn": fft_ifftn, "fft_rfftn": fft_rfftn, "fft_irfftn": fft_irfftn,
    "fft_hfftn": fft_hfftn, "fft_ihfftn": fft_ihfftn,
    "fft_fftfreq": fft_fftfreq, "fft_rfftfreq": fft_rfftfreq,
    "fft_fftshift": fft_fftshift, "fft_ifftshift": fft_ifftshift,
}
