"""Which ops take the dtypes torch supports only in part (uint16/32/64, float8, float4_e2m1fn_x2, int1..int7,
uint1..uint7: core/c10/limited_dtypes.py), and torch's error for every other op.

Support is an allow-list per dtype, as torch 2.13's CPU kernels have it: an op not on a dtype's list refuses a
tensor of that dtype (or a ``dtype=`` asking for it) before its kernel runs, so a kernel written for the common
dtypes never computes a wrong result quietly. ``complex_support.guard`` runs ``check_arguments`` in its generated
check, beside the complex one. tests/test_extra_dtypes_guard.py walks every registered op on each dtype.
"""
from __future__ import annotations

from ..core import promotion
from ..core.c10 import dtype as D
from ..core.c10.device import CPU, device as _device
from ..core.c10.device_hooks import get_device_hooks
from ..core.c10 import limited_dtypes as L
from ..core.tensor import Tensor

# ops that only look at metadata or move bytes unread
_VIEWS = frozenset("""view reshape permute transpose t expand squeeze unsqueeze flatten unflatten narrow select slice
as_strided diagonal unbind split split_with_sizes chunk _reshape_alias view_as expand_as movedim moveaxis swapaxes
swapdims ravel reshape_as squeeze_ unsqueeze_ transpose_ t_ detach detach_ alias lift_fresh _unsafe_view
tensor_split hsplit vsplit dsplit unfold""".split())
# creation without values, and the byte-wise joins torch runs for every dtype
_BYTES = _VIEWS | frozenset("""empty empty_strided empty_like new_empty new_empty_strided zeros zeros_like new_zeros
zero_ cat concat concatenate stack hstack vstack""".split())
# creation with values, copies and reading values out
_VALUES = _BYTES | frozenset("""ones ones_like new_ones full full_like new_full scalar_tensor clone contiguous copy_
fill_ _to_copy to type_as _local_scalar_dense resize_ index index_put_ index_put _index_put_impl_ roll eq ne
where isnan all any equal""".split())

UNSIGNED_OPS = _VALUES | frozenset("""random_ randint randint_like mul div true_divide sum prod cumsum cumprod sort
argsort msort unique _unique _unique2 unique_consecutive bitwise_and bitwise_or bitwise_xor __and__ __or__
__xor__ isinf isfinite hash_tensor""".split())   # hash_tensor: its uint64 out=; its kernel refuses these inputs
FLOAT8_OPS = _VALUES | frozenset("mul index_select abs".split())
# float8_e8m0fnu (powers of two, no sign): no abs; isfinite works
FLOAT8_E8M0_OPS = (FLOAT8_OPS - {"abs"}) | {"isfinite"}
FLOAT4_OPS = _BYTES | frozenset("clone contiguous copy_ resize_ index_put_".split())
SUB_BYTE_OPS = _BYTES

ALLOWED = {d: UNSIGNED_OPS for d in L.BAREBONES_UNSIGNED}
ALLOWED.update({d: FLOAT8_OPS for d in L.FLOAT8_DTYPES})
ALLOWED[L.float8_e8m0fnu] = FLOAT8_E8M0_OPS
ALLOWED[L.float4_e2m1fn_x2] = FLOAT4_OPS
ALLOWED.update({d: SUB_BYTE_OPS for d in L.SUB_BYTE_INTS + L.SUB_BYTE_UINTS})
# ops every limited dtype takes: the guard leaves their kernels unwrapped (the factories check the npu in cuda mode
# themselves, where they know the array module: native/factories.py), except view(dtype), which can make an npu
# tensor one of these dtypes
ALLOWED_FOR_ALL = frozenset.intersection(*ALLOWED.values())
ALWAYS_CHECKED = frozenset({"aten::view.dtype"})

# the kernel names torch's errors print where they are not "<op>_cpu" (torch 2.13, CPU)
_KERNEL_NAME = {
    "add": "add_stub", "add_": "add_stub", "sub": "add_stub", "sub_": "add_stub", "rsub": "add_stub",
    "max": "max_all", "min": "min_all", "floor_divide": "div_floor_cpu", "remainder": "remainder_cpu",
    "pow": "pow", "bitwise_left_shift": "lshift_cpu", "__lshift__": "lshift_cpu",
    "bitwise_right_shift": "rshift_cpu", "__rshift__": "rshift_cpu", "nonzero": "nonzero_count_cpu",
    "count_nonzero": "nonzero_count_cpu", "gather": "scatter_gather_tensor_cpu", "masked_fill": "masked_fill",
    "masked_fill_": "masked_fill", "index_select": "index_select", "mm": "addmm_impl_cpu_",
    "addmm": "addmm_impl_cpu_", "matmul": "addmm_impl_cpu_", "clamp": "clamp_scalar_cpu", "randperm": "randperm",
    "normal_": "normal_kernel_cpu", "normal": "normal_kernel_cpu", "randn": "normal_kernel_cpu",
    "randn_like": "normal_kernel_cpu", "uniform_": "check_uniform_bounds", "rand": "check_uniform_bounds",
    "rand_like": "check_uniform_bounds", "index": "index_cpu", "equal": "equal_notnan_cpu", "fill_": "fill_cpu",
    "ones": "fill_cpu", "full": "fill_cpu", "ones_like": "fill_cpu", "full_like": "fill_cpu",
    "new_ones": "fill_cpu", "new_full": "fill_cpu", "_local_scalar_dense": "_local_scalar_dense_cpu",
    "isinf": "isinf", "isfinite": "isfinite", "hash_tensor": "xor_sum_cpu",
}
_FLOAT8_KERNEL_NAME = {"cumsum": "cumsum_out_cpu", "cumprod": "cumprod_out_cpu", "prod": "prod_out_cpu",
                       "unique": "unique", "_unique2": "unique", "random_": "random_update_from_to",
                       "randint": "random_update_from_to", "randint_like": "random_update_from_to",
                       "sort": "sorting_kernel_method_name",
                       "argsort": "sorting_kernel_method_name", "gather": "gather_expanded_index", "mean": "sum_cpu",
                       "sum": "sum_cpu", "div": "div_cpu", "true_divide": "div_cpu",
                       "mul": "mul_cpu_reduced_float"}
# the byte-tagged dtypes: copies between tensors of them are "copy_kernel", casts to or from them "copy_"
_BYTE_KERNEL_NAME = {"copy_": "copy_kernel", "clone": "copy_kernel", "contiguous": "copy_kernel",
                     "resize_": "copy_kernel", "index_put_": "copy_kernel", "_to_copy": "copy_", "to": "copy_",
                     "type_as": "copy_"}

LIMITED_NP = L.LIMITED_NP
# ops whose operands promote together (TensorIterator's): torch checks the promotion before the kernel's dtype
_ELEMENTWISE = frozenset("""add sub rsub mul div true_divide floor_divide remainder fmod pow atan2 hypot copysign
lt le gt ge eq ne maximum minimum fmax fmin logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor
bitwise_left_shift bitwise_right_shift __and__ __or__ __xor__ __lshift__ __rshift__ where lerp addcmul addcdiv
xlogy nextafter heaviside""".split())


def refusal(op: str, dt: D.dtype, device: str = "cpu") -> Exception:
    """torch's error for ``op`` given a tensor of the limited dtype ``dt`` (or asked to make one)."""
    name = D.SCALAR_TYPE_NAME[dt]
    if op == "mean" and dt in L.BAREBONES_UNSIGNED:
        return RuntimeError("mean(): could not infer output dtype. Input dtype must be either a floating point or "
                            f"complex dtype. Got: {name}")
    kernel = None
    if dt is L.float4_e2m1fn_x2 and op in ("_to_copy", "to", "type_as"):
        kernel = "copy_kernel"
    elif dt in L.BYTE_TAGGED:
        kernel = _BYTE_KERNEL_NAME.get(op)
    elif dt in L.FLOAT8_DTYPES:
        kernel = _FLOAT8_KERNEL_NAME.get(op)
    if kernel is None:
        kernel = _KERNEL_NAME.get(op, f"{op}_{device}")
    return NotImplementedError(f"\"{kernel}\" not implemented for '{name}'")


def _first_limited(values):
    """The first tensor of a limited dtype among ``values`` (lists of tensors looked into), else None."""
    for v in values:
        if isinstance(v, Tensor):
            if v._a.dtype in LIMITED_NP:
                return v
        elif v.__class__ is list or v.__class__ is tuple:
            for w in v:
                if isinstance(w, Tensor) and w._a.dtype in LIMITED_NP:
                    return w
    return None


# reductions and softmaxes whose dtype= argument converts the input first: torch runs them on any input dtype it can
# convert, so a limited input with a common dtype asked is taken (a limited dtype asked is refused by its name)
# (nansum / nanmean are compositions that look at the input before converting it: they refuse it, a difference)
_CONVERTING_FIRST = frozenset("sum mean prod cumsum cumprod softmax log_softmax".split())


def _asked_dtypes(args, kwargs):
    """The dtypes among the arguments: a dtype= keyword, or one in a positional slot (softmax's, view(dtype))."""
    asked = [v for v in args if v.__class__ is D.dtype]
    if kwargs and kwargs.get("dtype").__class__ is D.dtype:
        asked.append(kwargs["dtype"])
    return asked


def _float8_scalar_operand(op, args) -> bool:
    """float8 ``mul`` takes dimensioned tensors only: a Python number or a 0-dim tensor as the other operand goes
    to torch's reduced-float scalar kernel, which refuses."""
    if op != "mul" or len(args) < 2:
        return False
    other = args[1]
    return not isinstance(other, Tensor) or other._a.ndim == 0


def _check_promotion(op, args):
    """torch works out an op's dtype before it looks for a kernel: mixing a limited dtype with another refuses with
    the promotion error first (uint16 + int64 tensors: "Promotion for uint16, ..." rather than "add_stub")."""
    if op not in _ELEMENTWISE:
        return
    tensors = [v for v in args if isinstance(v, Tensor)]
    if len(tensors) > 1:
        promotion.result_type(*tensors)


def _check_device(dt, found, kwargs) -> None:
    """float8, float4 and the sub-byte integers live only in NumPy arrays: CuPy has none of these types, so the npu
    in cuda mode refuses them (uint16/32/64 are CuPy's own)."""
    if dt in L.BAREBONES_UNSIGNED:
        return
    devices = [found._device] if found is not None else []
    target = kwargs.get("device") if kwargs else None
    if target is not None:
        devices.append(_device(target) if isinstance(target, str) else target)
    for dev in devices:
        if dev is None or dev is CPU or getattr(dev, "type", "cpu") == "cpu":
            continue
        if get_device_hooks(dev.type).array_namespace(dev).__name__ != "numpy":
            raise cupy_refusal(dt, dev)


def cupy_refusal(dt, dev) -> TypeError:
    """The error for a float8 / float4 / sub-byte tensor asked of a device whose arrays are CuPy's."""
    return TypeError(f"{dt} tensors cannot be on {dev} in cuda mode: CuPy has no {dt.name} type (keep them on the "
                     "cpu, or run the npu's emulation)")


def check_arguments(op: str, args, kwargs) -> None:
    """Raise torch's error if ``op`` (an overload packet name) may not take these arguments' limited dtypes."""
    found = _first_limited(args)
    if found is None and kwargs:
        found = _first_limited(kwargs.values())
    asked = _asked_dtypes(args, kwargs)
    if found is not None:
        dt = D.FROM_NUMPY[found._a.dtype]
        if op in _CONVERTING_FIRST and asked:
            pass    # the kernel converts the input to the dtype asked first (a limited one is checked below)
        elif op not in ALLOWED[dt] or dt in L.FLOAT8_DTYPES and _float8_scalar_operand(op, args):
            _check_promotion(op, args)
            if dt in L.BYTE_TAGGED and op in _ELEMENTWISE and any(v.__class__ in (bool, int, float) for v in args):
                # torch first converts the number to the dtype: its copy refuses
                raise NotImplementedError(f"\"copy_\" not implemented for '{D.SCALAR_TYPE_NAME[dt]}'")
            raise refusal(op, dt, found._device.type)
        _check_device(dt, found, kwargs)
    for dt in asked:
        if dt.np in LIMITED_NP:
            if op not in ALLOWED[dt]:
                raise refusal(op, dt)     # a limited result asked of an op without it (arange(dtype=uint16))
            if found is None:     # the device asked for, or the tensor's (a view of an npu tensor as the dtype)
                found = next((v for v in args if isinstance(v, Tensor)), None)
            _check_device(dt, found, kwargs)


def is_limited_array(a) -> bool:
    return a.dtype in LIMITED_NP


__all__ = ["ALLOWED", "ALLOWED_FOR_ALL", "ALWAYS_CHECKED", "check_arguments", "cupy_refusal", "is_limited_array",
           "refusal"]
