"""Intra-op parallelism for array kernels: large ufunc calls, copies, reductions and ranges in chunks.

The framework installs its thread pool with ``configure(num_threads, run,
grain_size)``; ``run(fn, items)`` calls ``fn(item)`` for every item on the pool
(the calling thread included) and returns when all are done. Until then, with
one thread, for CuPy arrays and for anything smaller than ``2 * grain_size``
elements (``4 * grain_size`` for reductions, which do half the work per element),
every function here is the plain NumPy call: one size check.

How the work is split: the output (and every operand that spans it) is cut
along its outermost axis, or flat when all of them are C-contiguous, into at
most ``num_threads`` chunks of at least ``grain_size`` elements, and the ufunc
runs on each chunk with ``out=`` a view of the result. NumPy releases the GIL in
its loops, so the chunks run at the same time. Each element is computed by the
same loop as in one call: elementwise results are bit-identical to the serial
ones. Reductions reduce each chunk, then combine the partial results, so
floating-point sums may differ from the one-call order in the last bits.

The split is skipped (the plain call runs) wherever it could change what NumPy
returns or writes: a result NumPy would not lay out C-contiguously, an ``out=``
array that overlaps an input or itself, a ufunc with several outputs.
"""
from __future__ import annotations

import sys
import threading

import numpy as np

from . import half_casts as _hc
from . import half_ufuncs as _hu
from . import out_destination as _od

_ndarray = np.ndarray
_ufunc = np.ufunc
_F16 = np.dtype(np.float16)
_ALIGN = 64          # chunk boundaries on multiples of 64 elements: whole cache lines per thread

_num_threads = 1
_run = None
_grain = 1 << 19
_min_size = sys.maxsize          # outputs at least this large are split; maxsize while there is one thread
_min_reduce_size = sys.maxsize   # the same for the inputs of reductions


def configure(num_threads: int, run, grain_size: int) -> None:
    """Install the intra-op pool's runner (called by the framework whenever the thread count changes)."""
    global _num_threads, _run, _grain, _min_size, _min_reduce_size
    _num_threads, _run, _grain = int(num_threads), run, int(grain_size)
    split = _num_threads > 1 and run is not None
    _min_size = 2 * _grain if split else sys.maxsize
    _min_reduce_size = 4 * _grain if split else sys.maxsize


# --- chunking -------------------------------------------------------------------------------------------

def _bounds(length: int, parts: int, align: int = 1):
    """[(start, stop)] cutting range(length) into ``parts`` near-equal pieces starting on multiples of ``align``."""
    step = -(-length // parts)
    step = -(-step // align) * align
    return [(s, min(s + step, length)) for s in range(0, length, step)]


def _parts(size: int, length: int) -> int:
    return min(_num_threads, size // _grain, length)


def _no_self_overlap(a) -> bool:
    """True when no two elements of ``a`` share memory (a sufficient test, on the strides)."""
    if a.flags.c_contiguous or a.flags.f_contiguous:
        return True
    extent = a.itemsize
    for stride, n in sorted((abs(st), n) for st, n in zip(a.strides, a.shape) if n > 1):
        if stride < extent:
            return False
        extent += stride * (n - 1)
    return True


def _flat(x):
    """An operand of a flat split: a 1-d view, or a 0-d array for one element (it broadcasts)."""
    if x.__class__ is not _ndarray:
        return x
    return x.reshape(-1) if x.size > 1 else x.reshape(())


def _sliced(x, out_ndim, length, flat):
    """How an operand follows the chunks: 'flat' (a 1-d view), 'rows' (sliced on axis 0) or None (whole)."""
    if x.__class__ is not _ndarray or x.ndim == 0 or x.size == 1:
        return None
    if flat:
        return "flat"
    if x.ndim == out_ndim and x.shape[0] == length:
        return "rows"
    return None


def _fill(ufunc, operands, out) -> bool:
    """``ufunc(*operands, out=out)`` in chunks; False (nothing done) when the layout does not allow it."""
    shape = out.shape
    flat = all(x.__class__ is not _ndarray or x.size == 1 or (x.shape == shape and x.flags.c_contiguous)
               for x in operands) and out.flags.c_contiguous
    if flat:
        length = out.size
        target = out.reshape(-1)
        views = [_flat(x) for x in operands]
    else:
        if out.ndim == 0:
            return False
        length = shape[0]
        target = out
        views = list(operands)
    half = ufunc in _hu.UFUNCS and len(operands) == 2 and any(x.__class__ is _ndarray and x.dtype is _F16
                                                              for x in operands)
    parts = _parts(out.size * (_hu.WORK if half else 1), length)
    if parts < 2:
        return False
    kinds = [_sliced(x, out.ndim, length, flat) for x in views]
    ranges = _bounds(length, parts, _ALIGN if flat else 1)

    def chunk(r):
        s, e = r
        args = [v[s:e] if k is not None else v for v, k in zip(views, kinds)]
        if half and _hu.binary(ufunc, *args, out=target[s:e]) is not None:
            return
        ufunc(*args, out=target[s:e])
    _run(chunk, ranges)
    return True


def _safe_out(out, operands) -> bool:
    """An ``out=`` array may be split when no input overlaps it (other than being it) and it has no aliases."""
    if not _no_self_overlap(out):
        return False
    for x in operands:
        if x.__class__ is _ndarray and x is not out and np.may_share_memory(x, out):
            if not (x.shape == out.shape and x.strides == out.strides
                    and x.__array_interface__["data"][0] == out.__array_interface__["data"][0]):
                return False
    return True


def _dtype_arg(x):
    if x.__class__ is _ndarray or isinstance(x, np.generic):
        return x.dtype
    if x.__class__ in (int, float, complex):
        return x.__class__   # a weak Python scalar (NEP 50)
    raise TypeError


def _c_layout(operands) -> bool:
    """Whether NumPy's own result would be C-contiguous: every array operand of 2+ elements is."""
    return all(x.__class__ is not _ndarray or x.size <= 1 or x.flags.c_contiguous for x in operands)


def _split_call(ufunc, operands, out):
    """The split path of ``binary`` / ``unary``; None when the plain call must run instead."""
    if ufunc.__class__ is not _ufunc or ufunc.nout != 1 or ufunc.nin != len(operands):
        return None
    try:
        if out is None:
            if not _c_layout(operands):
                return None
            shapes = [x.shape for x in operands if x.__class__ is _ndarray]
            shape = np.broadcast_shapes(*shapes)
            dt = ufunc.resolve_dtypes(tuple(_dtype_arg(x) for x in operands) + (None,))[-1]
            out = np.empty(shape, dt)
            return out if _fill(ufunc, operands, out) else None
        if out.__class__ is not _ndarray or not _safe_out(out, operands):
            return None
        shapes = [x.shape for x in operands if x.__class__ is _ndarray]
        if np.broadcast_shapes(out.shape, *shapes) != out.shape:
            return None
        return out if _fill(ufunc, operands, out) else None
    except (TypeError, ValueError):
        return None   # the plain call raises NumPy's own error


def _destination(ufunc, operands):
    """The offered ``out=`` array (kernels/out_destination.py) when it is exactly this result's shape and dtype."""
    if ufunc.__class__ is not _ufunc or ufunc.nout != 1:
        return None
    if any(hasattr(x, "__cuda_array_interface__") for x in operands):
        return None   # device arrays run their own kernels, not NumPy's ufunc loops
    try:
        types = tuple(x.dtype if hasattr(x, "dtype") else type(x) for x in operands)
        dt = ufunc.resolve_dtypes(types + (None,))[-1]
        shape = np.broadcast_shapes(*(np.shape(x) for x in operands))
    except (TypeError, ValueError):
        return None
    dest = _od.take(shape, dt)
    return dest if dest is None or dest.__class__ is _ndarray else None


# --- public entry points --------------------------------------------------------------------------------

def binary(ufunc, a, b, out=None):
    """``ufunc(a, b)`` (or with ``out=``), split over the intra-op threads when large."""
    if out is None and _od._tls.array is not None:
        out = _destination(ufunc, (a, b))
    m = _min_size
    half = a.__class__ is _ndarray and a.dtype is _F16 or b.__class__ is _ndarray and b.dtype is _F16
    if half:
        m //= _hu.WORK
    if (a.size if a.__class__ is _ndarray else 0) < m and (b.size if b.__class__ is _ndarray else 0) < m:
        if half:
            r = _hu.binary(ufunc, a, b, out)    # float16 through float32 arrays: NumPy's bits, faster
            if r is not None:
                return r
        return ufunc(a, b) if out is None else ufunc(a, b, out=out)
    r = _split_call(ufunc, (a, b), out)
    if r is None:
        return ufunc(a, b) if out is None else ufunc(a, b, out=out)
    return r


def unary(ufunc, a, out=None):
    """``ufunc(a)`` (or with ``out=``), split over the intra-op threads when large."""
    if out is None and _od._tls.array is not None:
        out = _destination(ufunc, (a,))
    if a.__class__ is not _ndarray or a.size < _min_size:
        return ufunc(a) if out is None else ufunc(a, out=out)
    r = _split_call(ufunc, (a,), out)
    if r is None:
        return ufunc(a) if out is None else ufunc(a, out=out)
    return r


def copyto(dst, src, casting="same_kind"):
    """``np.copyto(dst, src, casting=...)`` for a NumPy ``dst``, split when ``dst`` is large."""
    n = dst.size * _hc.work(getattr(src, "dtype", None), dst.dtype)
    if n < _min_size and _hc.copyto(dst, src, casting):
        return None
    if n < _min_size or not (src.__class__ is _ndarray or isinstance(src, (np.generic, int, float, complex))):
        return np.copyto(dst, src, casting=casting)
    if not _copy_split(dst, src, casting):
        np.copyto(dst, src, casting=casting)
    return None


def _copy_split(dst, src, casting) -> bool:
    if not dst.flags.writeable or not _safe_out(dst, (src,)):
        return False
    if src.__class__ is _ndarray:
        try:
            if np.broadcast_shapes(dst.shape, src.shape) != dst.shape:
                return False
        except ValueError:
            return False
        if not np.can_cast(src.dtype, dst.dtype, casting=casting):
            return False
    shape = dst.shape
    flat = dst.flags.c_contiguous and (src.__class__ is not _ndarray or src.size == 1 or
                                       (src.shape == shape and src.flags.c_contiguous))
    if flat:
        length, target = dst.size, dst.reshape(-1)
        view = _flat(src)
    else:
        if dst.ndim == 0:
            return False
        length, target, view = shape[0], dst, src
    parts = _parts(dst.size * _hc.work(getattr(src, "dtype", None), dst.dtype), length)
    if parts < 2:
        return False
    sliced = _sliced(view, dst.ndim, length, flat) is not None

    def chunk(r):
        s, e = r
        part, part_src = target[s:e], view[s:e] if sliced else view
        if not _hc.copyto(part, part_src, casting):
            np.copyto(part, part_src, casting=casting)
    _run(chunk, _bounds(length, parts, _ALIGN if flat else 1))
    return True


def astype(a, dtype):
    """``a.astype(dtype, order="K", copy=True)``, split when large (C-contiguous arrays only)."""
    if (a.__class__ is not _ndarray or a.size * _hc.work(a.dtype, np.dtype(dtype)) < _min_size
            or not a.flags.c_contiguous):
        r = _hc.astype(a, dtype)    # float16 <-> float32 in ml_dtypes' faster loop, else None
        return a.astype(dtype, order="K", copy=True) if r is None else r
    out = np.empty(a.shape, dtype)
    if not _copy_split(out, a, "unsafe"):
        np.copyto(out, a, casting="unsafe")
    return out


# --- reductions -----------------------------------------------------------------------------------------

def _axes_tuple(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        return (int(axis) % ndim,)
    return tuple(int(d) % ndim for d in axis)


def reduce(ufunc, method: str, a, axis, keepdims: bool, dtype=None):
    """``a.<method>(axis=axis, dtype=dtype, keepdims=keepdims)``, in chunks when ``a`` is large.

    ``ufunc`` is the method's ufunc (np.add for sum, np.maximum for max...): it
    reduces each chunk and then combines the chunks' partial results. ``dtype``
    None means the method takes none (max, min).
    """
    if a.__class__ is not _ndarray or a.size < _min_reduce_size:
        if dtype is None:
            return getattr(a, method)(axis=axis, keepdims=keepdims)
        return getattr(a, method)(axis=axis, dtype=dtype, keepdims=keepdims)
    r = _split_reduce(ufunc, a, axis, keepdims, dtype)
    if r is None:
        if dtype is None:
            return getattr(a, method)(axis=axis, keepdims=keepdims)
        return getattr(a, method)(axis=axis, dtype=dtype, keepdims=keepdims)
    return r


def _split_reduce(ufunc, a, axis, keepdims, dtype):
    ndim = a.ndim
    if ndim == 0:
        return None
    axes = _axes_tuple(axis, ndim)
    if len(set(axes)) != len(axes):
        return None
    if not a.flags.c_contiguous and (keepdims or ndim - len(axes) > 1):
        return None   # NumPy lays such a result out after the input's strides; ours would be C-contiguous
    if len(axes) == ndim and a.flags.c_contiguous:
        # everything reduced: cut the flat array, reduce each piece, combine the pieces
        flat = a.reshape(-1)
        parts = _parts(a.size, a.size)
        if parts < 2:
            return None
        ranges = _bounds(a.size, parts, _ALIGN)
        partial = [None] * len(ranges)

        def piece(i):
            s, e = ranges[i]
            partial[i] = ufunc.reduce(flat[s:e], dtype=dtype)
        _run(piece, list(range(len(ranges))))
        stacked = np.stack(partial)
        r = ufunc.reduce(stacked, dtype=stacked.dtype)
        return r.reshape((1,) * ndim) if keepdims else r
    length = a.shape[0]
    parts = _parts(a.size, length)
    if parts < 2:
        return None
    ranges = _bounds(length, parts)
    if 0 not in axes:
        # the leading axis survives: each chunk of rows reduces into its rows of the result
        probe = ufunc.reduce(a[:1], axis=axes, dtype=dtype, keepdims=keepdims)
        out = np.empty((length,) + probe.shape[1:], probe.dtype)

        def rows(r):
            s, e = r
            ufunc.reduce(a[s:e], axis=axes, dtype=dtype, keepdims=keepdims, out=out[s:e])
        _run(rows, ranges)
        return out
    partial = [None] * len(ranges)

    def block(i):
        s, e = ranges[i]
        partial[i] = ufunc.reduce(a[s:e], axis=axes, dtype=dtype, keepdims=True)
    _run(block, list(range(len(ranges))))
    stacked = np.concatenate(partial, axis=0)
    r = ufunc.reduce(stacked, axis=0, dtype=stacked.dtype, keepdims=True)
    return r if keepdims else r.reshape(tuple(n for d, n in enumerate(r.shape) if d not in axes))


# --- index ranges -----------------------------------------------------------------------------------------

def for_ranges(n: int, align: int, work) -> None:
    """Call ``work(start, stop)`` over [0, n) in chunks starting on multiples of ``align``, in parallel when large."""
    if n < _min_size:
        work(0, n)
        return
    parts = _parts(n, n)
    if parts < 2:
        work(0, n)
        return
    _run(lambda r: work(*r), _bounds(n, parts, align))


# --- cache-sized blocks ---------------------------------------------------------------------------------------

BLOCK = 1 << 16     # elements per block of a multi-pass kernel: its few block-sized temporaries stay in cache


def for_blocks(n: int, block: int, fn) -> None:
    """Call ``fn(start, stop)`` over [0, n) in consecutive pieces of ``block`` elements (the last may be shorter),
    each thread's share of the pieces in order, the shares split over the intra-op threads when ``n`` is large: a
    kernel that makes several passes over each piece touches memory about once. ``fn`` may take this thread's
    ``scratch`` arrays (every piece on one thread runs after the previous one returned)."""
    for_ranges(n, block, lambda start, stop: _blocks(fn, block, start, stop))


def _blocks(fn, block, start, stop):
    for s in range(start, stop, block):
        fn(s, min(s + block, stop))


class _Scratch(threading.local):
    def __init__(self):
        self.arrays = {}


_scratch = _Scratch()


def scratch(name, size: int, dtype):
    """An uninitialised 1-d NumPy array of ``size`` elements of ``dtype`` kept for this thread under ``name``: the
    work arrays of blocked kernels, reused between calls (a fresh large allocation would page-fault every time).
    Taken inside one kernel call and never returned or kept by it; two arrays in use at once need two names."""
    held = _scratch.arrays.get(name)
    if held is None or held.dtype != dtype or held.size < size:
        held = _scratch.arrays[name] = np.empty(size, dtype)
    return held[:size]
