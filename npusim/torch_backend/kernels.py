"""npusim's npu kernels as torch's PrivateUse1 kernels, through a zero-copy adapter.

For every aten op torch dispatches to a backend (not a CompositeImplicitAutograd one: torch decomposes those
itself; not a view, which torch's composites make over the same storage) that npusim can run on its npu (its
own kernel, or its composite), one adapter is registered: torch npu tensors become npusim npu tensors viewing
the same arrays, the npusim op runs (its dispatcher, capacity check and kernel: NumPy in emulation, CuPy on a
GPU), and its results are adopted as torch npu tensors without a copy. In-place and ``out=`` results are the
torch arguments themselves; an ``out=`` npusim resized is moved onto its new memory. An argument npusim cannot
see (a dtype it lacks) sends the call to the CPU fallback.
"""
from __future__ import annotations

import torch

import npusim
from npusim.privateuse1 import array_of, device_of

from . import fallback
from .adoption import NPUSIM_CPU, NotAdoptable, adopt, npusim_view, set_onto
from .copy import host_npusim
from .dtypes import LAYOUT, MEMORY_FORMAT, NPUSIM, TORCH, TORCH_MEMORY_FORMAT
from .errors import refuse

_Tensor = torch.Tensor
_NpusimTensor = npusim.Tensor
_OOM = npusim.npu.OutOfMemoryError

#: ops with a kernel of this package's own (metadata, memory, copies) or torch's composite that must stay
HANDLED_ELSEWHERE = frozenset({
    "view", "as_strided", "_reshape_alias", "unfold", "view_as_real", "view_as_complex", "set_", "resize_",
    "copy_", "_copy_from", "_copy_from_and_resize", "_local_scalar_dense", "empty", "empty_strided", "_to_copy",
    "to", "is_pinned", "_pin_memory", "record_stream", "lift_fresh", "lift", "alias", "_nested_view_from_buffer",
    "as_strided_", "as_strided_scatter", "resize_as_", "_has_same_storage_numel", "is_set_to", "equal",
    "_resize_output_", "clone",
    # the fused RNN cells: rnn_cells.py registers torch-op versions of them
    "_thnn_fused_lstm_cell", "_thnn_fused_lstm_cell_backward_impl", "_thnn_fused_gru_cell",
    "_thnn_fused_gru_cell_backward",
    # backward ops that backward_kernels.py registers on the arrays
    "threshold_backward", "native_layer_norm_backward", "mse_loss_backward", "_softmax_backward_data",
    "silu_backward", "elu_backward", "softplus_backward",
    # the gradient scaler's ops: amp_kernels.py registers them on the arrays
    "_amp_foreach_non_finite_check_and_unscale_", "_amp_update_scale_",
})


def _device_of(v):
    if v.type == "npu" and v.index not in (None, 0):
        refuse(f"device {v}", "torch's Python hooks serve one device, npu:0")
    return npusim.device(v.type, v.index) if v.index is not None else npusim.device(v.type)


def _to_npusim(v, pairs):
    if isinstance(v, _Tensor):
        n = host_npusim(v) if v.is_cpu else npusim_view(v)
        pairs.append((n, v, array_of(n)))
        return n
    cls = v.__class__
    if cls is torch.dtype:
        try:
            return NPUSIM[v]
        except KeyError:
            raise NotAdoptable(f"npusim has no {v}") from None
    if cls is list or cls is tuple:
        return cls(_to_npusim(x, pairs) for x in v) if v and not isinstance(v[0], int) else v
    if cls is torch.device:
        return _device_of(v)
    if cls is torch.memory_format:
        return MEMORY_FORMAT[v]
    if cls is torch.layout:
        return LAYOUT[v]
    if cls is torch._C.Generator:
        refuse("a torch.Generator for an npu op", "npu random numbers come from npusim's generator, seeded by "
               "torch.manual_seed / torch.npu.manual_seed; torch 2.13 has no Python generator hook")
    return v


def _to_torch(v, pairs):
    if isinstance(v, _NpusimTensor):
        for n, t, _ in pairs:
            if n is v:
                return t
        if device_of(v) is not NPUSIM_CPU:      # npusim's devices are interned
            return adopt(v)
        return torch.from_numpy(array_of(v).copy()) if v.dtype is not npusim.bfloat16 else \
            torch.from_numpy(array_of(v).view("uint16").copy()).view(torch.bfloat16)
    cls = v.__class__
    if cls is tuple or cls is list:
        return cls(_to_torch(x, pairs) for x in v)
    if v in TORCH:
        return TORCH[v]
    if v in TORCH_MEMORY_FORMAT:
        return TORCH_MEMORY_FORMAT[v]
    return v


def adapter(op, nop, mutates: bool):
    """The PrivateUse1 kernel of torch op ``op``: npusim op ``nop`` on zero-copy views."""
    def kernel(*args, **kwargs):
        pairs = []
        try:
            nargs = [_to_npusim(a, pairs) for a in args]
            nkwargs = {k: _to_npusim(v, pairs) for k, v in kwargs.items()} if kwargs else kwargs
        except NotAdoptable:
            return fallback.cpu_fallback(op, *args, **kwargs)
        try:
            out = nop(*nargs, **nkwargs)
        except (_OOM, MemoryError) as e:     # npusim's capacity, or a GPU's allocation itself
            raise torch.OutOfMemoryError(str(e)) from None
        if mutates:
            for n, t, a in pairs:
                if array_of(n) is not a:     # npusim resized an out= (new memory)
                    set_onto(t, n)
        return _to_torch(out, pairs)
    kernel.__name__ = f"npu_{op._schema.name.split('::')[-1]}"
    return kernel


def _npusim_op(qualname: str):
    name, _, overload = qualname.partition(".")
    packet = getattr(npusim.ops.aten, name, None)
    if packet is None:
        return None
    nop = getattr(packet, overload or "default", None)
    if nop is None:
        return None
    for key in ("PrivateUse1", "CompositeExplicitAutograd", "CompositeImplicitAutograd"):
        if nop.has_kernel_for_dispatch_key(key):
            return nop
    return None


def candidates():
    """(torch op name without 'aten::', torch OpOverload, npusim op) for every op the adapter serves."""
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    for full in sorted(torch._C._dispatch_get_all_op_names()):
        if not full.startswith("aten::"):
            continue
        qual = full[6:]
        if qual.partition(".")[0] in HANDLED_ELSEWHERE or has(full, "CompositeImplicitAutograd"):
            continue
        nop = _npusim_op(qual)
        if nop is None:
            continue
        name, _, overload = qual.partition(".")
        try:
            op = getattr(getattr(torch.ops.aten, name), overload or "default")
        except AttributeError:
            continue
        if any(r.alias_info is not None and not r.alias_info.is_write for r in op._schema.returns):
            continue    # a view: torch's composite makes it over the same storage, sharing the version counter
        yield qual, op, nop


def adapters() -> dict:
    """The adapter of every op npusim serves, by op name ('add.Tensor'); registration.py registers them."""
    served = {}
    for qual, op, nop in candidates():
        mutates = any(a.alias_info is not None and a.alias_info.is_write for a in op._schema.arguments)
        served[qual] = adapter(op, nop, mutates)
    return served
