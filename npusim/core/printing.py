"""``repr(tensor)`` exactly as torch formats it, and ``set_printoptions``.

The formatting decisions (integer mode, scientific mode, column width,
summarisation with edge items, line wrapping, suffixes) follow torch's
``_tensor_str``; values are read from a host copy in float64.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .c10 import dtype as D
from .c10 import limited_dtypes as _limited
from .c10.device import CPU
from .c10.device_hooks import check_access, get_device_hooks, host_read


@dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrintOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """Set the options used by ``repr(tensor)`` (torch.set_printoptions)."""
    if profile is not None:
        presets = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}
        if profile not in presets:
            raise ValueError(f"Invalid profile: {profile}")
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = presets[profile]
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    return dict(PRINT_OPTS.__dict__)


class _Formatter:
    def __init__(self, values: np.ndarray, floating: bool):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        p = PRINT_OPTS.precision
        flat = values.reshape(-1)
        if not floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
        else:
            vals = flat[np.isfinite(flat) & (flat != 0)]
            if vals.size:
                absv = np.abs(vals)
                lo, hi = float(absv.min()), float(absv.max())
                self.int_mode = bool(np.all(vals == np.ceil(vals)))
                if PRINT_OPTS.sci_mode is None:
                    self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
                else:
                    self.sci_mode = PRINT_OPTS.sci_mode
                # the width is measured in the notation the values will be printed in
                if self.sci_mode:
                    widths = (len(f"{v:.{p}e}") for v in vals.tolist())
                elif self.int_mode:
                    widths = (len(f"{v:.0f}") + 1 for v in vals.tolist())
                else:
                    widths = (len(f"{v:.{p}f}") for v in vals.tolist())
                self.max_width = max(self.max_width, max(widths))

    def format(self, v) -> str:
        p = PRINT_OPTS.precision
        if self.floating:
            if self.sci_mode:
                s = f"{v:{self.max_width}.{p}e}"
            elif self.int_mode:
                s = f"{v:.0f}"
                if not (math.isinf(v) or math.isnan(v)):
                    s += "."
            else:
                s = f"{v:.{p}f}"
        else:
            s = f"{v}"
        return " " * (self.max_width - len(s)) + s


class _ComplexFormatter:
    """torch's pair of formatters for complex values: one for the real parts, one for the imaginary parts."""

    def __init__(self, values: np.ndarray):
        self.real = _Formatter(values.real, True)
        self.imag = _Formatter(values.imag, True)
        self.max_width = self.real.max_width + self.imag.max_width + 1     # the "j"

    def format(self, v) -> str:
        real_str = self.real.format(v.real)
        imag_str = (self.imag.format(v.imag) + "j").lstrip()
        # a negative imaginary part (or -0.0, nan) brings its own sign
        return real_str + imag_str if imag_str[0] in "+-" else real_str + "+" + imag_str


def _summarized(a: np.ndarray) -> np.ndarray:
    e = PRINT_OPTS.edgeitems
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate((a[:e], a[-e:])) if a.shape[0] > 2 * e else a
    if not e:
        return np.empty([0] * a.ndim, a.dtype)
    rows = list(range(e)) + list(range(a.shape[0] - e, a.shape[0])) if a.shape[0] > 2 * e else range(a.shape[0])
    return np.stack([_summarized(a[i]) for i in rows])


def _vector(a, indent, summarize, fmt, length):
    e = PRINT_OPTS.edgeitems
    per_line = max(1, int(math.floor((PRINT_OPTS.linewidth - indent) / (fmt.max_width + 2))))
    if summarize and not e:
        data = ["..."]
    elif summarize and length > 2 * e:
        data = [fmt.format(v) for v in a[:e].tolist()] + [" ..."] + [fmt.format(v) for v in a[-e:].tolist()]
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _format(a, indent, summarize, fmt, shape):
    """``a`` formatted; ``shape`` is the tensor's own, of which a summarised ``a`` holds only the edge items."""
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector(a, indent, summarize, fmt, shape[0])
    e, inner = PRINT_OPTS.edgeitems, shape[1:]
    if summarize and shape[0] > 2 * e:
        parts = ([_format(a[i], indent + 1, summarize, fmt, inner) for i in range(e)] + ["..."]
                 + [_format(a[i], indent + 1, summarize, fmt, inner) for i in range(a.shape[0] - e, a.shape[0])])
    else:
        parts = [_format(a[i], indent + 1, summarize, fmt, inner) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _edges(t):
    """The items a summarised repr prints: the first and last ``edgeitems`` along every dimension longer than
    twice that, gathered where the tensor lives (a huge expanded view is never materialised)."""
    a, e = t._a, PRINT_OPTS.edgeitems
    if a.ndim == 0:
        return a
    xp = np if t._device is CPU else get_device_hooks(t._device.type).array_namespace(t._device)
    index = [xp.concatenate((xp.arange(e), xp.arange(n - e, n))) if n > 2 * e else xp.arange(n) for n in a.shape]
    return a[xp.ix_(*index)]


def _host(t, summarize=False):
    check_access(t._device)     # a forked child may not read its parent's device memory
    host_read(t._device)
    a = _edges(t) if summarize else t._a
    if a.__class__ is not np.ndarray:
        a = a.get()
    return a


def _as_complex128(a):
    if a.dtype == D.COMPLEX32_NP:       # complex32: the structured pair of float16
        r = np.empty(a.shape, np.complex128)
        r.real, r.imag = a["real"], a["imag"]
        return r
    return a.astype(np.complex128)


def tensor_body(t, indent: int) -> str:
    if t._a.size == 0:
        return "[]"
    summarize = t._a.size > PRINT_OPTS.threshold
    a = _host(t, summarize)
    if t.is_complex():
        a = _as_complex128(a)
        return _format(a, indent, summarize, _ComplexFormatter(_summarized(a) if summarize else a), t._a.shape)
    if a.dtype in _limited.BYTE_TAGGED_NP:
        if t.dtype is not _limited.float4_e2m1fn_x2:
            raise NotImplementedError(f"\"_local_scalar_dense_{t._device.type}\" not implemented for "
                                      f"'{D.SCALAR_TYPE_NAME[t.dtype]}'")
        a = a.view(np.uint8)      # torch prints float4_e2m1fn_x2's bytes as numbers
    floating = t.is_floating_point()
    if floating:
        a = a.astype(np.float64)
    fmt = _Formatter(_summarized(a) if summarize else a, floating)
    return _format(a, indent, summarize, fmt, t._a.shape)


def _add_suffixes(body, suffixes, indent):
    parts = [body]
    last = len(body) - body.rfind("\n") + 1
    for s in suffixes:
        if last + len(s) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + s)
            last = indent + len(s)
        else:
            parts.append(", " + s)
            last += len(s) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t, prefix="tensor(") -> str:
    indent = len(prefix)
    suffixes = []
    if t._device is not CPU:
        suffixes.append(f"device='{t._device}'")
    dt = t.dtype
    # torch's default complex dtype here is complex128 with a float64 default, else complex64
    default_complex = D.complex128 if D.get_default_dtype() is D.float64 else D.complex64
    default_dtype = dt in (D.get_default_dtype(), default_complex, D.int64, D.bool)
    if t._a.size == 0:
        if t._a.ndim != 1:
            suffixes.append(f"size={tuple(t._a.shape)}")
        if dt is not D.get_default_dtype():
            suffixes.append(f"dtype={dt}")
        body = "[]"
    else:
        if not default_dtype:
            suffixes.append(f"dtype={dt}")
        body = tensor_body(t, indent)
    fn = t.grad_fn
    if fn is not None:
        suffixes.append(f"grad_fn=<{type(fn).__name__}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    am = t._am
    if am is not None and am.fw_grads:   # a dual tensor of forward-mode AD shows its tangent, as torch's does
        suffixes.append("tangent=" + tensor_repr(am.fw_grads[max(am.fw_grads)]))
    return _add_suffixes(prefix + body, suffixes, indent)
