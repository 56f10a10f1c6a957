"""The guard of the dtypes torch supports in part (uint16-64, float8, float4_e2m1fn_x2, int1-int7, uint1-uint7):
every aten op either takes them (its dtype's allow-list) or refuses them before computing anything.

An op that ran a kernel written for the common dtypes on these (NumPy computes on uint16 or on ml_dtypes' float8
happily) would give results torch never gives; this walks every registered op with each dtype.
"""
from __future__ import annotations

import warnings

import pytest

import npusim
from npusim.core.c10 import limited_dtypes as L
from npusim.core.dispatch import dispatcher
from npusim.native import limited_dtype_support as LDS
from schema_arguments import schema_argument


def _cuda_mode(device) -> bool:
    if device != "npu":
        return False
    from npusim.backend.runtime import runtime
    return runtime.probe() == "cuda"


def _call(op, x, device):
    args, kwargs = [], {}
    for a in op._schema.arguments:
        if a.has_default and not a.type.is_write:
            continue
        v = schema_argument(a, x, device)
        if a.kwarg_only:
            kwargs[a.name] = v
        else:
            args.append(v)
    return op(*args, **kwargs)


def _tensor(dtype, device):
    if dtype in L.BYTE_TAGGED:
        return npusim.tensor([[1, 2], [3, 4]], dtype=npusim.uint8, device=device).view(dtype)
    return npusim.tensor([[1, 2], [3, 4]], device=device).to(dtype)


@pytest.mark.parametrize("dtype", L.LIMITED_DTYPES, ids=str)
def test_every_op_refuses_a_limited_dtype_unless_it_takes_it(device, dtype):
    if _cuda_mode(device) and dtype not in L.BAREBONES_UNSIGNED:
        pytest.skip("float8, float4 and the sub-byte integers are not on the npu in cuda mode (CuPy has no such types)")
    base = _tensor(dtype, device)
    allowed = LDS.ALLOWED[dtype]
    unguarded = []
    for name in sorted(n for n in dispatcher._OPS if n.startswith("aten::")):
        op = dispatcher._OPS[name]
        if not any(a.type.base == "Tensor" for a in op._schema.arguments):
            continue
        if name.split("::")[1].split(".")[0] in allowed:
            continue    # taken: test_extra_dtypes.py checks their values against torch
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                _call(op, base, device)
            except RuntimeError:
                continue    # refused: torch's NotImplementedError (a RuntimeError), or its promotion / mean error
        unguarded.append(name)
    assert not unguarded, f"ops that ran on {dtype} without taking it: {unguarded}"


def test_a_limited_dtype_argument_is_refused_by_ops_without_it():
    with pytest.raises(NotImplementedError, match="\"arange_cpu\" not implemented for 'UInt16'"):
        npusim.arange(3, dtype=npusim.uint16)
    with pytest.raises(NotImplementedError, match="\"normal_kernel_cpu\" not implemented for 'Float8_e4m3fn'"):
        npusim.randn(3, dtype=npusim.float8_e4m3fn)
    with pytest.raises(NotImplementedError, match="\"fill_cpu\" not implemented for 'Int3'"):
        npusim.ones(3, dtype=npusim.int3)


def test_common_dtypes_are_untouched_by_the_guard(device):
    x = npusim.tensor([1.0, -2.0], device=device)
    assert (x + x).tolist() == [2.0, -4.0] and x.sort()[0].tolist() == [-2.0, 1.0]
    i = npusim.tensor([3, 1], device=device)
    assert (i - 1).tolist() == [2, 0] and i.max().item() == 3
