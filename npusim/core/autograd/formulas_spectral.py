"""Backward formulas of the FFT primitives (torch's derivatives.yaml and FunctionsManual.cpp).

Each transform is linear, so its gradient is the adjoint transform with the same normalization mode:

- ``_fft_c2c``: the c2c transform the other way;
- ``_fft_r2c``: the real part of the inverse c2c of the gradient, first zero-filled to the full length when
  the forward was one-sided (the discarded half had no effect);
- ``_fft_c2r``: the one-sided r2c of the gradient with the entries whose mirror image the one-sided form
  dropped (1 .. n - (n // 2 + 1) of the last dim) doubled.

Complex tensors are zero-filled and scaled through their real view (``view_as_real``), so the formulas are made
of dispatched ops and differentiate again.
"""
from __future__ import annotations

from ..dispatch.ops_namespace import aten
from .derivatives import complex_ready, derivative


def _wrapped(d, ndim):
    return d + ndim if d < 0 else d


def _pad_complex(g, dim, extra):
    """``g`` with ``extra`` zeros appended along ``dim``."""
    r = aten.view_as_real.default(g)
    pad = [0] * (2 * (r.dim() - 1 - dim)) + [0, extra]
    return aten.view_as_complex.default(aten.constant_pad_nd.default(r, pad, 0))


def _doubled_along(g, dim, double):
    """``g`` (complex) with the entries 1 .. ``double`` of ``dim`` doubled."""
    r = aten.view_as_real.default(g)
    kw = {"dtype": r.dtype, "device": r.device}
    n = r.shape[dim]
    w = aten.cat.default([aten.ones.default([1], **kw), aten.full.default([double], 2.0, **kw),
                          aten.ones.default([n - 1 - double], **kw)])
    shape = [1] * r.dim()
    shape[dim] = n
    return aten.view_as_complex.default(aten.mul.Tensor(r, aten.reshape.default(w, shape)))


@derivative("_fft_c2c", inputs=("self",), save=("dim", "normalization", "forward"), name="FftC2CBackward0")
def fft_c2c_backward(ctx, g):
    return aten._fft_c2c.default(g, ctx.dim, ctx.normalization, not ctx.forward)


@derivative("_fft_r2c", inputs=("self",), save=("self_meta", "dim", "normalization", "onesided"),
            name="FftR2CBackward0")
def fft_r2c_backward(ctx, g):
    dims = [_wrapped(d, g.dim()) for d in ctx.dim]
    if ctx.onesided:
        last = dims[-1]
        missing = ctx.self_meta.shape[last] - g.shape[last]
        if missing > 0:
            g = _pad_complex(g, last, missing)
    return aten.real.default(aten._fft_c2c.default(g, dims, ctx.normalization, False))


@derivative("_fft_c2r", inputs=("self",), save=("dim", "normalization"), name="FftC2RBackward0")
def fft_c2r_backward(ctx, g):
    dims = [_wrapped(d, g.dim()) for d in ctx.dim]
    gi = aten._fft_r2c.default(g, dims, ctx.normalization, True)
    last = dims[-1]
    double = g.shape[last] - gi.shape[last]
    if double > 0:
        gi = _doubled_along(gi, last, double)
    return gi


# the transforms are linear and their adjoints are written for complex gradients, as torch's
complex_ready("_fft_r2c", "_fft_c2r", "_fft_c2c")
