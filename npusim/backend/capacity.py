"""Capacity checks before npu kernels whose result can outgrow their inputs.

In emulation NumPy allocates a kernel's result before the allocator sees it, so
an outer product of two 100k vectors would first take 37 GiB of host memory and
only then fail the device's accounting. The npu registers the kernels of such
ops wrapped in a check: a cheap *lower bound* of the result's bytes (the
broadcast shape, the matmul shape, the repeated size...) is compared with the
device's free memory first, and an oversized request raises OutOfMemoryError
before NumPy allocates anything. Being a lower bound, the check never refuses a
result that would fit; the exact accounting still happens when the result's
storage is made. Small inputs skip the arithmetic (one multiplication). Which ops
are checked, with which kind of bound, is declared in the npu's op table (``op_table.py``).

In cuda mode CuPy's own allocation fails cleanly, so the checks step aside.
"""
from __future__ import annotations

import functools
import inspect
import math

import numpy as np

from .. import Tensor
from ..privateuse1 import array_of, device_of
from ..privateuse1 import codegen
from . import op_table
from .memory import memory
from .op_table import Bound

# Results below this many bytes are never worth checking early: NumPy making them is harmless.
_EARLY = 1 << 20
_WIDEST = 16    # the largest itemsize (complex128): bounds a result's bytes from above before any shape math


def _floor_itemsize(a) -> int:
    """A lower bound of the itemsize of results computed from ``a`` (complex inputs may give real results)."""
    dt = a.dtype
    return dt.itemsize // 2 if dt.kind == "c" else dt.itemsize


def _tensors(values):
    for v in values:
        if isinstance(v, Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            for w in v:
                if isinstance(w, Tensor):
                    yield w


def _device_of(values):
    for t in _tensors(values):
        if device_of(t).type != "cpu":
            return device_of(t)
    return None


# --- lower bounds of result bytes, per kind of op (0: nothing worth checking) ----------------------------------
# A bound may raise on bad arguments (TypeError, IndexError...): the check then steps aside and the kernel
# raises torch's error for them.

def _broadcast(args, kwargs, bool_result=False) -> int:
    """Elementwise ops: the broadcast of every tensor input (not ``out``)."""
    arrays = []
    for v in args:
        if isinstance(v, Tensor):
            arrays.append(array_of(v))
        elif isinstance(v, (list, tuple)):
            arrays.extend(array_of(w) for w in v if isinstance(w, Tensor))
    if not arrays:
        return 0
    upper = 1
    for a in arrays:
        upper *= a.size or 1
    if upper * _WIDEST <= _EARLY:
        return 0
    item = 8 if bool_result else min(8, *(_floor_itemsize(a) for a in arrays))
    out = kwargs.get("out")
    if isinstance(out, Tensor) and not bool_result:
        item = min(item, _floor_itemsize(array_of(out)))
    return _broadcast_elements([a.shape for a in arrays]) * (1 if bool_result else item)


def _broadcast_elements(shapes) -> int:
    """The element count of the broadcast of ``shapes`` (ValueError when they do not broadcast); plain Python,
    as NumPy's broadcast_shapes costs microseconds per call and every large elementwise npu op asks."""
    result = shapes[0]
    for s in shapes[1:]:
        if s != result:
            result = _broadcast_pair(result, s)
    return math.prod(result)


def _broadcast_pair(a, b):
    if len(a) < len(b):
        a, b = b, a
    k = len(a) - len(b)
    dims = list(a[:k])
    for x, y in zip(a[k:], b):
        if x == y or y == 1:
            dims.append(x)
        elif x == 1:
            dims.append(y)
        else:
            raise ValueError("shapes do not broadcast")
    return dims


def _matmul(args, kwargs) -> int:
    """``mm``/``bmm``/``matmul`` (self, other) and ``addmm``/``baddbmm`` (input, m1, m2): batch x n x p."""
    a, b = (args[1], args[2]) if len(args) > 2 and isinstance(args[2], Tensor) else (args[0], args[1])
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
        return 0
    sa, sb = array_of(a).shape, array_of(b).shape
    if not sa or not sb:
        return 0
    if array_of(a).size and array_of(b).size and array_of(a).size * array_of(b).size * _WIDEST <= _EARLY:
        return 0        # n x p <= (n x k) * (k x p) when k >= 1; an empty operand (k == 0) is bounded below
    n = sa[-2] if len(sa) >= 2 else 1
    p = sb[-1] if len(sb) >= 2 else 1
    return _broadcast_elements([sa[:-2], sb[:-2]]) * n * p * min(_floor_itemsize(array_of(a)), _floor_itemsize(array_of(b)))


def _outer(args, kwargs) -> int:
    a, b = args[0], args[1]
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
        return 0
    return array_of(a).size * array_of(b).size * min(_floor_itemsize(array_of(a)), _floor_itemsize(array_of(b)))


def _same_as_self(args, kwargs, itemsize=None) -> int:
    """Unary ops and copies: ``self``'s elements as it is viewed (an expanded view materialises them all).

    ``itemsize`` is given for ops whose result dtype may be narrower than the input's (a bool result,
    a ``dtype=`` argument).
    """
    a = args[0]
    if not isinstance(a, Tensor):
        return 0
    a = array_of(a)
    return a.size * (itemsize or _floor_itemsize(a))


def _repeat(args, kwargs) -> int:
    """``repeat(self, repeats)`` and ``tile(self, dims)``: self's elements times the product of the counts."""
    a, counts = array_of(args[0]), args[1]
    times = math.prod(int(c) for c in counts)
    return a.size * max(times, 0) * _floor_itemsize(a)


def _repeat_interleave(args, kwargs) -> int:
    if len(args) < 2:
        return 0    # repeat_interleave(repeats): the result is indices, bounded by the repeats' sum
    a, repeats = array_of(args[0]), args[1]
    if isinstance(repeats, Tensor):
        r = array_of(repeats)
        if r.size != 1:
            dim = args[2] if len(args) > 2 else kwargs.get("dim")
            rows = a.size // max(a.shape[dim], 1) if dim is not None and a.ndim else 1
            return int(np.sum(r, dtype=np.int64)) * rows * _floor_itemsize(a)
        repeats = r.reshape(-1)[0]
    return a.size * max(int(repeats), 0) * _floor_itemsize(a)


def _index_select(args, kwargs) -> int:
    """``index_select(self, dim, index)``: self's rows along ``dim`` replaced by the index's length."""
    a, dim, index = array_of(args[0]), args[1], args[2]
    if not isinstance(index, Tensor) or not isinstance(dim, int) or a.ndim == 0 or not -a.ndim <= dim < a.ndim:
        return 0
    return a.size // max(a.shape[dim], 1) * array_of(index).size * _floor_itemsize(a)


def _gather(args, kwargs) -> int:
    """``gather(self, dim, index)``: the index's shape."""
    index = args[2]
    return array_of(index).size * _floor_itemsize(array_of(args[0])) if isinstance(index, Tensor) else 0


def _embedding(args, kwargs) -> int:
    weight, indices = array_of(args[0]), args[1]
    if weight.ndim != 2 or not isinstance(indices, Tensor):
        return 0
    return array_of(indices).size * weight.shape[1] * _floor_itemsize(weight)


def _one_hot(args, kwargs) -> int:
    classes = args[1] if len(args) > 1 else kwargs.get("num_classes", -1)
    if not isinstance(classes, int) or classes <= 0:
        return 0
    return array_of(args[0]).size * classes * 8


def _joined(args, kwargs) -> int:
    """``cat``/``stack``: every input's elements."""
    ts = list(_tensors(args[:1]))
    if not ts:
        return 0
    return sum(array_of(t).size for t in ts) * min(_floor_itemsize(array_of(t)) for t in ts)


def _padded(args, kwargs) -> int:
    """``constant_pad_nd(self, pad)``: pads (before, after) the last dimensions, last first."""
    a, pad = array_of(args[0]), args[1]
    shape = list(a.shape)
    for i in range(min(len(pad) // 2, len(shape))):
        shape[-1 - i] += int(pad[2 * i]) + int(pad[2 * i + 1])
    return math.prod(max(s, 0) for s in shape) * _floor_itemsize(a)


def _upsampled(args, kwargs) -> int:
    """``upsample_*2d(self, output_size, ...)``: N x C x output height x output width."""
    a, size = array_of(args[0]), args[1] if len(args) > 1 else kwargs.get("output_size")
    if a.ndim != 4 or size is None or len(size) != 2:
        return 0
    return a.shape[0] * a.shape[1] * max(int(size[0]), 0) * max(int(size[1]), 0) * _floor_itemsize(a)


# each kind of bound the op table declares -> the function computing it
_BOUNDS = {
    Bound.BROADCAST: _broadcast,
    Bound.BROADCAST_BOOL: functools.partial(_broadcast, bool_result=True),
    Bound.MATMUL: _matmul,
    Bound.OUTER: _outer,
    Bound.SAME_AS_SELF: _same_as_self,
    Bound.SELF_ELEMENTS: functools.partial(_same_as_self, itemsize=1),
    Bound.REPEAT: _repeat,
    Bound.REPEAT_INTERLEAVE: _repeat_interleave,
    Bound.INDEX_SELECT: _index_select,
    Bound.GATHER: _gather,
    Bound.EMBEDDING: _embedding,
    Bound.ONE_HOT: _one_hot,
    Bound.JOINED: _joined,
    Bound.PADDED: _padded,
    Bound.UPSAMPLED: _upsampled,
}


def _check(bound, args, kwargs) -> None:
    try:
        nbytes = bound(args, kwargs)
    except (TypeError, ValueError, IndexError, AttributeError, OverflowError):
        return  # bad arguments: the kernel raises torch's error for them
    if nbytes > _EARLY:
        dev = _device_of(args)
        alloc = memory.emulated(dev.index) if dev is not None else None
        if alloc is not None:
            alloc.check(nbytes)


# Every npu call of these ops pays the wrapper, so it is generated with the kernel's own signature (no
# *args/**kwargs packing) and its common small case costs an attribute read or two and a comparison: the
# product of the sizes of the leading ``gate`` tensor arguments (declared in the op table) bounds the result's
# elements from above, and only a product past _EARLY_ELEMENTS computes the real bound. Gate 0 checks on
# every call (rare ops).
_EARLY_ELEMENTS = _EARLY // _WIDEST

def _checked(kernel, bound, gate, served: str):
    """``kernel`` preceded by the capacity check of ``bound``, gated by its first ``gate`` arguments (or by the
    arguments at the positions a tuple ``gate`` names)."""
    positions = range(gate) if isinstance(gate, int) else gate
    sig = codegen.Signature.of_callable(inspect.signature(kernel), reserved=_HELPERS, default_name="_default{i}")
    if sig is None:
        # a kernel that forwards its arguments: so does the wrapper
        parameters, call, args, kwargs, defaults = "*args, **kwargs", "*args, **kwargs", "args", "kwargs", {}
        gated = [f"(args[{i}] if len(args) > {i} else None)" for i in positions]
    else:
        parameters, call, defaults = sig.parameters, sig.call, sig.defaults
        args, kwargs = sig.args_tuple, sig.kwargs_dict
        gated = [sig.positional[i] for i in positions]
    check = f"_check(_bound, {args}, {kwargs})"
    if not gated:
        body = [check]
    else:
        # a plain tensor's size is two attribute reads; anything else (a number, None) counts 1 as before
        # an empty tensor counts as past the gate: an empty operand bounds nothing ((n, 0) @ (0, p) is n x p)
        sizes = " * ".join(f"(({n}._a.size or {_EARLY_ELEMENTS + 1}) if {n}.__class__ is _Tensor else "
                           f"getattr(getattr({n}, '_a', None), 'size', 1))" for n in gated)
        body = [f"if {sizes} > _early:", f"    {check}"]
    src = (f"def _make({', '.join(_HELPERS + tuple(defaults))}):\n"
           f"    def kernel_with_capacity_check({parameters}):\n"
           + codegen.indent(body + [f"return _kernel({call})"], 2)
           + "    return kernel_with_capacity_check\n")
    # one compile per distinct source (many kernels share a signature and a gate); its globals name this
    # module, so frames of the wrapper count as npusim's own (e.g. for warnings)
    wrapper = codegen.compile_function(src, codegen.CAPACITY_CHECK, _GEN_GLOBALS)(
        kernel, bound, _check, _EARLY_ELEMENTS, Tensor, **defaults)
    codegen.name_function(wrapper, codegen.CAPACITY_CHECK, served)
    functools.update_wrapper(wrapper, kernel)
    return wrapper


_HELPERS = ("_kernel", "_bound", "_check", "_early", "_Tensor")
_GEN_GLOBALS = {"__name__": __name__}


def with_capacity_checks(kernels: dict) -> dict:
    """The kernel table with the kernels of ops that can outgrow their inputs wrapped in a capacity check.

    In-place overloads (``add_``) write into an existing tensor and stay as they are.
    """
    out = dict(kernels)
    for name, fn in kernels.items():
        if name.split(".")[0].endswith("_"):
            continue
        op = op_table.facts(name)
        if op is not None and op.capacity is not None:
            out[name] = _checked(fn, _BOUNDS[op.capacity], op.capacity_gate,
                                 name if "::" in name else "aten::" + name)
    return out
