"""``npusim.fft``: torch.fft's discrete Fourier transforms, frequencies and shifts.

Every transform is an aten composite (``fft_fft``, ``fft_rfftn``...) over the three primitives
``_fft_r2c``, ``_fft_c2r`` and ``_fft_c2c``, as in torch, so gradients are torch's. ``norm`` is
``"backward"`` (the default: no scaling forward, 1/n on the inverse), ``"ortho"`` (1/sqrt(n) both ways)
or ``"forward"`` (1/n forward, none on the inverse). Real float32 / integer inputs give complex64, float64
gives complex128; half precision is refused, as by torch's CPU kernels.
"""
from __future__ import annotations

from ..core.c10 import dtype as _D
from ..core.c10.memory_format import strided as _strided
from ..core.dispatch.ops_namespace import aten as _aten
from ..core.tensor import Tensor as _Tensor

__all__ = [
    "fft", "ifft", "rfft", "irfft", "hfft", "ihfft",
    "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2",
    "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn",
    "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]

# which kind of output each transform writes: its out= must be complex, or real floating
_REAL_OUT = {"irfft", "hfft", "irfft2", "hfft2", "irfftn", "hfftn"}


def _type_name(v):
    return type(v).__name__


def _check_args(op, input, sizes=None, sizes_name="n", norm=None):
    """The checks torch's argument parser makes, with its messages."""
    if not isinstance(input, _Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {_type_name(input)}")
    if sizes is not None:
        items = sizes if isinstance(sizes, (list, tuple)) and sizes_name == "s" else [sizes]
        for v in items:
            if isinstance(v, bool) or not isinstance(v, int):
                what = "tuple of ints" if sizes_name == "s" else "int"
                raise TypeError(f"{op}(): argument '{sizes_name}' must be {what}, not {_type_name(sizes)}")
    if norm is not None and not isinstance(norm, str):
        raise TypeError(f"{op}(): argument 'norm' must be str, not {_type_name(norm)}")


def _finish(name, r, out):
    if out is None:
        return r
    if name in _REAL_OUT:
        if not out.dtype.is_floating_point:
            raise RuntimeError(f"{name} expects a floating point output tensor, but got "
                               f"{_D.SCALAR_TYPE_NAME[out.dtype]}")
    elif not out.dtype.is_complex:
        raise RuntimeError(f"{name} expects a complex output tensor, but got {_D.SCALAR_TYPE_NAME[out.dtype]}")
    if out.shape != r.shape:
        _aten.resize_.default(out, r.shape)
    return _aten.copy_.default(out, r)


def _one_dim(name, summary):
    op = getattr(_aten, f"fft_{name}").default

    def fn(input, n=None, dim=-1, norm=None, *, out=None):  # noqa: A002 - torch's names
        _check_args(f"fft_{name}", input, n, "n", norm)
        return _finish(name, op(input, n, dim, norm), out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{name}(input, n=None, dim=-1, norm=None, *, out=None) -> Tensor\n\n{summary}"
    return fn


def _n_dim(name, summary, default_dim):
    op = getattr(_aten, f"fft_{name}").default

    def fn(input, s=None, dim=default_dim, norm=None, *, out=None):  # noqa: A002
        _check_args(f"fft_{name}", input, s, "s", norm)
        return _finish(name, op(input, s, dim, norm), out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{name}(input, s=None, dim={default_dim}, norm=None, *, out=None) -> Tensor\n\n{summary}"
    return fn


fft = _one_dim("fft", "The one-dimensional discrete Fourier transform of ``input`` along ``dim``.")
ifft = _one_dim("ifft", "The one-dimensional inverse discrete Fourier transform of ``input`` along ``dim``.")
rfft = _one_dim("rfft", "The one-dimensional Fourier transform of real ``input``: the n // 2 + 1 non-negative "
                        "frequencies.")
irfft = _one_dim("irfft", "The inverse of :func:`rfft`: a real signal of length ``n`` (default 2 * (m - 1)) from "
                          "its one-sided spectrum.")
hfft = _one_dim("hfft", "The Fourier transform of a Hermitian-symmetric signal given by its one-sided half: a "
                        "real spectrum.")
ihfft = _one_dim("ihfft", "The inverse of :func:`hfft`: the one-sided half of the inverse transform of a real "
                          "signal.")
fft2 = _n_dim("fft2", "The two-dimensional discrete Fourier transform over ``dim``.", (-2, -1))
ifft2 = _n_dim("ifft2", "The two-dimensional inverse discrete Fourier transform over ``dim``.", (-2, -1))
rfft2 = _n_dim("rfft2", "The two-dimensional Fourier transform of real ``input`` (one-sided in the last dim).",
               (-2, -1))
irfft2 = _n_dim("irfft2", "The inverse of :func:`rfft2`.", (-2, -1))
hfft2 = _n_dim("hfft2", "The two-dimensional Fourier transform of a Hermitian-symmetric signal given by its "
                        "one-sided half.", (-2, -1))
ihfft2 = _n_dim("ihfft2", "The inverse of :func:`hfft2`.", (-2, -1))
fftn = _n_dim("fftn", "The N-dimensional discrete Fourier transform over ``dim`` (every dim by default).", None)
ifftn = _n_dim("ifftn", "The N-dimensional inverse discrete Fourier transform over ``dim``.", None)
rfftn = _n_dim("rfftn", "The N-dimensional Fourier transform of real ``input`` (one-sided in the last dim).", None)
irfftn = _n_dim("irfftn", "The inverse of :func:`rfftn`.", None)
hfftn = _n_dim("hfftn", "The N-dimensional Fourier transform of a Hermitian-symmetric signal given by its "
                        "one-sided half.", None)
ihfftn = _n_dim("ihfftn", "The inverse of :func:`hfftn`.", None)


def _frequencies(name, summary):
    op = getattr(_aten, f"fft_{name}").default

    def fn(n, d=1.0, *, out=None, dtype=None, layout=_strided, device=None, requires_grad=False):
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"fft_{name}(): argument 'n' (position 1) must be int, not {_type_name(n)}")
        if isinstance(d, bool) or not isinstance(d, (int, float)):
            raise TypeError(f"fft_{name}(): argument 'd' (position 2) must be float, not {_type_name(d)}")
        if out is not None:
            r = op(n, float(d), dtype=out.dtype, device=out.device)
            if out.shape != r.shape:
                _aten.resize_.default(out, r.shape)
            r = _aten.copy_.default(out, r)
        else:
            r = op(n, float(d), dtype=dtype, device=device)
        if requires_grad:
            r.requires_grad_(True)
        return r
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{name}(n, d=1.0, *, out=None, dtype=None, layout=npusim.strided, device=None, "
                  f"requires_grad=False) -> Tensor\n\n{summary}")
    return fn


fftfreq = _frequencies("fftfreq", "The sample frequencies of a length-``n`` DFT with sample spacing ``d``: "
                                  "0, 1, ..., then the negative ones, over (n * d).")
rfftfreq = _frequencies("rfftfreq", "The n // 2 + 1 non-negative sample frequencies of :func:`rfft`'s output.")


def fftshift(input, dim=None):  # noqa: A002
    """Move the zero frequency to the centre of ``dim`` (every dim by default): a roll by n // 2."""
    _check_args("fft_fftshift", input)
    return _aten.fft_fftshift.default(input, dim)


def ifftshift(input, dim=None):  # noqa: A002
    """The inverse of :func:`fftshift`: a roll by -(n // 2)."""
    _check_args("fft_ifftshift", input)
    return _aten.fft_ifftshift.default(input, dim)
