"""The npu's op table: each op's facts (CPU fallback, CuPy specialisation, capacity bound, autocast category)
declared once."""
import pytest

import npusim
from npusim import backend
from npusim.backend import capacity, cupy_kernels, op_table
from npusim.backend.op_table import Bound, NpuOp
from npusim.native.registration import KERNELS


def test_every_declared_name_is_an_aten_op_or_overload():
    from npusim.backend.amp.autocast_registration import missing_ops
    for op in op_table.OPS:
        name, _, overload = op.name.partition(".")
        if op == NpuOp(op.name, autocast=op.autocast, autocast_overloads=op.autocast_overloads) and \
                not hasattr(npusim.ops.aten, name):
            # torch's autocast lists name ops npusim lacks; they are reported, not registered
            assert {f"{name}.{ov}" if ov != "default" else name for ov in op.autocast_overloads} <= \
                set(missing_ops()), op.name
            continue
        packet = getattr(npusim.ops.aten, name)
        assert overload == "" or overload in packet.overloads(), op.name
        for ov in op.cupy:
            assert ov in packet.overloads(), (op.name, ov)


def test_the_backend_reads_its_tables_from_the_op_table():
    assert backend.FALLBACK_OPS == op_table.FALLBACK_OPS
    assert set(op_table.FALLBACK_OPS) == {"sort", "argsort", "topk", "_unique2", "unique_dim", "unique_consecutive",
                                          "nonzero", "masked_select"}
    assert cupy_kernels.HOT_OPS == op_table.HOT_OPS == ("add.Tensor", "sigmoid", "gelu", "linalg_vector_norm")


def test_fallback_ops_have_no_npu_kernel_and_the_cupy_and_checked_ones_do():
    for name in op_table.FALLBACK_OPS:
        packet = getattr(npusim.ops.aten, name)
        assert not any(getattr(packet, ov).has_kernel_for_dispatch_key("PrivateUse1") for ov in packet.overloads())
    assert npusim.ops.aten.add.Tensor.has_kernel_for_dispatch_key("PrivateUse1")
    assert npusim.ops.aten.sigmoid.default.has_kernel_for_dispatch_key("PrivateUse1")
    assert npusim.ops.aten.outer.default.has_kernel_for_dispatch_key("PrivateUse1")


def test_exactly_the_ops_with_a_capacity_bound_get_a_capacity_check():
    checked = {name for name, fn in backend._npu_kernels.items()
               if getattr(fn, "__code__", None) is not None and fn.__code__.co_name == "kernel_with_capacity_check"}
    declared = {name for name in KERNELS if not name.split(".")[0].endswith("_")
                and (op_table.facts(name) or NpuOp("")).capacity is not None}
    assert checked == declared
    assert {"add.Tensor", "max.other", "sin", "where.self", "cat"} <= checked
    assert not {"max", "max.dim", "add_.Tensor", "sort"} & checked


def test_every_unary_math_kernel_is_declared_with_a_bound():
    """The op table replaced a test of the kernel's module name: every kernel of sin's module is listed."""
    module = KERNELS["sin"].__module__
    unary = [name for name, fn in KERNELS.items()
             if getattr(fn, "__module__", "") == module and not name.split(".")[0].endswith("_")]
    assert len(unary) > 30
    assert [name for name in unary if (op_table.facts(name) or NpuOp("")).capacity is None] == []


def test_gates_follow_the_bound_unless_declared():
    gate = {name: op_table.facts(name).capacity_gate
            for name in ("sin", "isnan", "add", "eq", "mm", "outer", "addmm", "where", "lerp", "cat", "max.other")}
    assert gate == {"sin": 1, "isnan": 1, "add": 2, "eq": 2, "mm": 2, "outer": 2, "addmm": (1, 2), "where": 0,
                    "lerp": 0, "cat": 0, "max.other": 2}
    assert set(capacity._BOUNDS) == set(Bound)


def test_an_op_is_declared_once():
    with pytest.raises(ValueError, match="declares 'max' twice"):
        op_table._by_name([NpuOp("max.other"), NpuOp("max", fallback=True)])
    assert op_table.facts("max.other").capacity is Bound.BROADCAST and op_table.facts("max.dim") is None


def test_a_same_as_self_bound_never_exceeds_the_result():
    # the capacity check refuses a call whose bound exceeds free memory, so a bound above the real result's
    # bytes would refuse results that fit: a one-argument op bounded by self's bytes must return self's dtype
    x = npusim.linspace(-2.0, 2.0, 7, dtype=npusim.float64)
    for op in op_table.OPS:
        if op.capacity is not Bound.SAME_AS_SELF or "." in op.name:
            continue
        fn = getattr(npusim, op.name, None)
        if fn is None:
            continue
        try:
            result = fn(x)
        except (TypeError, RuntimeError):
            continue  # needs more arguments, or not defined for float64 (bitwise_not)
        assert result.element_size() >= x.element_size(), op.name


def test_autocast_categories_come_from_the_op_table():
    npu = npusim.ops.aten
    assert op_table.facts("mm").autocast is op_table.Amp.LOWER
    assert op_table.facts("pow.Scalar").autocast is op_table.Amp.FP32
    assert "pow.Tensor_Scalar" in op_table.autocast_policies()["fp32"]
    assert npu.softmax.int.has_kernel_for_dispatch_key("AutocastPrivateUse1")
    assert not npu.sin.default.has_kernel_for_dispatch_key("AutocastPrivateUse1")   # on no list: untouched
    with npusim.autocast("npu", dtype=npusim.float16):
        x = npusim.ones(2, 2, device="npu")
        assert npusim.mm(x, x).dtype is npusim.float16
        assert npusim.exp(x.half()).dtype is npusim.float32
