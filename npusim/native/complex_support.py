"""Which kernels take complex tensors, and the guard that makes every other kernel refuse them.

A kernel written for real numbers would quietly drop the imaginary part of a complex input (NumPy casts
complex to real with only a warning), so support is an allow-list: the dispatcher runs every aten kernel it
resolves through ``guard`` (``set_kernel_wrapper``), which puts the kernels of ops not in ``COMPLEX_OPS``
behind a generated check: a complex tensor, a Python complex number or a complex ``dtype=`` among its
arguments raises torch's error before the kernel runs. An op joins the list only once its kernel computes in
complex and a test holds it to torch (tests/test_complex_guard.py walks every registered op).
"""
from __future__ import annotations

import numpy as np

from ..core import promotion
from ..core.c10 import codegen
from ..core.c10 import dtype as D
from ..core.tensor import Tensor, make
from ..kernels import complex as KX
from . import limited_dtype_support as LDS

# Ops (overload packet names) whose kernels handle complex tensors.
COMPLEX_OPS = frozenset({
    # views and copies: they move elements without looking at them
    "view", "reshape", "permute", "transpose", "t", "expand", "squeeze", "unsqueeze", "flatten", "unflatten",
    "narrow", "select", "slice", "as_strided", "contiguous", "clone", "detach", "alias", "diagonal", "unbind",
    "split", "split_with_sizes", "chunk", "_reshape_alias", "view_as", "expand_as", "movedim", "moveaxis",
    "swapaxes", "swapdims", "ravel", "reshape_as", "squeeze_", "unsqueeze_", "transpose_", "t_", "resize_",
    "detach_", "lift_fresh", "_unsafe_view",
    # factories, copy and fill
    "empty", "empty_strided", "zeros", "ones", "full", "scalar_tensor", "empty_like", "zeros_like", "ones_like",
    "full_like", "copy_", "fill_", "zero_", "_local_scalar_dense", "_to_copy", "to", "type_as",
    "new_empty", "new_zeros", "new_ones", "new_full", "new_empty_strided", "eye", "linspace", "logspace",
    "normal_", "uniform_", "randn", "rand", "randn_like", "rand_like",
    # the complex ops themselves (api/complex.py and native/complex_views.py)
    "real", "imag", "view_as_real", "view_as_complex", "view_as_real_copy", "view_as_complex_copy", "conj",
    "conj_physical", "conj_physical_", "_conj", "_conj_physical", "resolve_conj", "resolve_neg", "adjoint",
    "is_conj", "is_neg",
    "polar", "complex", "angle", "abs", "absolute",
    # arithmetic and math (NumPy's complex ufuncs; tests/test_complex_ops.py holds them to torch)
    "add", "add_", "sub", "sub_", "rsub", "mul", "mul_", "div", "div_", "neg", "neg_", "negative", "reciprocal",
    "reciprocal_", "pow", "pow_", "exp", "exp_", "log", "log_", "sqrt", "sqrt_", "sin", "sin_", "cos", "cos_",
    "tan", "tan_", "sinh", "sinh_", "cosh", "cosh_", "tanh", "tanh_", "sigmoid", "sigmoid_", "rsqrt", "rsqrt_",
    "square", "square_", "log2", "log10", "log1p", "expm1", "exp2", "asin", "acos", "atan", "asinh", "acosh",
    "atanh", "sgn", "sgn_", "addcmul", "addcmul_",
    # comparisons and predicates that are defined for complex numbers
    "eq", "ne", "isnan", "isinf", "isfinite", "isclose", "allclose", "equal",
    # reductions and scans
    "sum", "mean", "prod", "cumsum", "cumprod", "logsumexp", "any", "all", "count_nonzero", "var", "std",
    "var_mean", "std_mean", "linalg_vector_norm", "norm",
    # products
    "matmul", "mm", "bmm", "mv", "einsum", "dot", "vdot", "outer", "addmm", "addmm_", "linear",
    # joins, indexing and selection (elements moved, not computed on)
    "cat", "stack", "index", "index_put", "index_put_", "_index_put_impl_", "where", "masked_fill",
    "masked_fill_", "index_select", "gather", "flip", "roll", "repeat", "tril", "triu", "diag", "trace", "kron",
    "nonzero", "masked_select", "take",
    # torch.fft, stft / istft and linalg.eig: complex by design (native/spectral*.py, native/linalg_eig*.py;
    # their own tests hold them to torch)
    "_fft_r2c", "_fft_c2r", "_fft_c2c", "fft_fft", "fft_ifft", "fft_rfft", "fft_irfft", "fft_hfft", "fft_ihfft",
    "fft_fft2", "fft_ifft2", "fft_rfft2", "fft_irfft2", "fft_hfft2", "fft_ihfft2", "fft_fftn", "fft_ifftn",
    "fft_rfftn", "fft_irfftn", "fft_hfftn", "fft_ihfftn", "fft_fftfreq", "fft_rfftfreq", "fft_fftshift",
    "fft_ifftshift", "stft", "istft", "linalg_eig", "_linalg_eigvals", "linalg_eigvals",
})

# complex32 supports even less in torch: creation, copies and views (torch's "ComplexHalf" kernels are few).
COMPLEX32_OPS = frozenset({
    "view", "reshape", "permute", "transpose", "t", "expand", "squeeze", "unsqueeze", "flatten", "unflatten",
    "narrow", "select", "slice", "as_strided", "contiguous", "clone", "detach", "alias", "diagonal", "unbind",
    "split", "split_with_sizes", "chunk", "_reshape_alias", "view_as", "expand_as", "movedim", "moveaxis",
    "swapaxes", "swapdims", "ravel", "reshape_as", "squeeze_", "unsqueeze_", "transpose_", "t_", "detach_",
    "lift_fresh", "_unsafe_view", "resize_",
    "empty", "empty_strided", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like", "full_like",
    "copy_", "fill_", "zero_", "_local_scalar_dense", "_to_copy", "to", "type_as", "new_empty", "new_zeros",
    "new_ones", "new_full", "new_empty_strided", "normal_", "uniform_", "randn", "rand", "randn_like",
    "rand_like", "real", "imag", "view_as_real", "view_as_complex", "view_as_real_copy", "view_as_complex_copy",
    "conj", "_conj", "resolve_conj", "resolve_neg", "adjoint", "complex", "is_conj", "is_neg", "conj_physical",
    "conj_physical_", "_conj_physical",
})

# complex32 ops torch computes in complex64 (its ComplexHalf kernels' opmath): npusim widens the arguments, runs
# the kernel and rounds the result back (complex results to complex32, real ones to float16)
COMPLEX32_WIDENED = frozenset({
    "add", "sub", "mul", "neg", "eq", "ne", "sgn", "abs", "isnan", "isfinite", "cat", "stack", "where",
    "masked_fill", "index", "index_put", "repeat",
})

# torch's own words for ops whose refusal is not the generic "<op>_cpu" not implemented (torch 2.13, CPU)
_SORT = (RuntimeError, " Sort does not support complex dtypes on CPU")
_MESSAGES = {
    "floor": (NotImplementedError, "floor is not supported for complex inputs"),
    "ceil": (NotImplementedError, "ceil is not supported for complex inputs"),
    "trunc": (NotImplementedError, "trunc is not supported for complex inputs"),
    "fix": (NotImplementedError, "trunc is not supported for complex inputs"),
    "sign": (NotImplementedError, "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
                                  "torch.sgn instead."),
    "clamp": (NotImplementedError, "clamp is not supported for complex types"),
    "clamp_min": (NotImplementedError, "clamp is not supported for complex types"),
    "clamp_max": (NotImplementedError, "clamp is not supported for complex types"),
    "clip": (NotImplementedError, "clamp is not supported for complex types"),
    "relu": (NotImplementedError, "clamp is not supported for complex types"),
    "abs_": (RuntimeError, "In-place abs is not supported for complex tensors."),
    "absolute_": (RuntimeError, "In-place abs is not supported for complex tensors."),
    "nansum": (RuntimeError, "nansum on CPU does not support complex inputs"),
    "signbit": (NotImplementedError, "signbit is not implemented for complex tensors."),
    "sort": _SORT, "argsort": _SORT, "msort": _SORT,
    "topk": (RuntimeError, " topk does not support complex dtypes on CPU"),
    "max": (NotImplementedError, "\"max_all\" not implemented for '{name}'"),
    "min": (NotImplementedError, "\"min_all\" not implemented for '{name}'"),
    "amax": (NotImplementedError, "\"max_values_cpu\" not implemented for '{name}'"),
    "amin": (NotImplementedError, "\"min_values_cpu\" not implemented for '{name}'"),
    "aminmax": (NotImplementedError, "\"aminmax_cpu\" not implemented for '{name}'"),
    "argmax": (RuntimeError, "argmax(): does not support complex input"),
    "hash_tensor": (NotImplementedError, "\"xor_sum_cpu\" not implemented for '{name}'"),
    "argmin": (RuntimeError, "argmin(): does not support complex input"),
    "maximum": (RuntimeError, "maximum not implemented for complex tensors."),
    "minimum": (RuntimeError, "minimum not implemented for complex tensors."),
    "fmax": (RuntimeError, "fmax not implemented for complex tensors."),
    "fmin": (RuntimeError, "fmin not implemented for complex tensors."),
    "heaviside": (RuntimeError, "heaviside is not yet implemented for complex tensors."),
    "isneginf": (RuntimeError, "isneginf does not support complex inputs."),
    "isposinf": (RuntimeError, "isposinf does not support complex inputs."),
    "floor_divide": (NotImplementedError, "\"div_floor_cpu\" not implemented for '{name}'"),
    "round": (NotImplementedError, "\"round_vml_cpu\" not implemented for '{name}'"),
    "softmax": (NotImplementedError, "\"softmax_lastdim_kernel_impl\" not implemented for '{name}'"),
    "_softmax": (NotImplementedError, "\"softmax_lastdim_kernel_impl\" not implemented for '{name}'"),
    "log_softmax": (NotImplementedError, "\"log_softmax_lastdim_kernel_impl\" not implemented for '{name}'"),
    "_log_softmax": (NotImplementedError, "\"log_softmax_lastdim_kernel_impl\" not implemented for '{name}'"),
}

# torch's CPU kernels of these are "<op>_vml_cpu"
_MESSAGES.update({op: (NotImplementedError, f"\"{op}_vml_cpu\" not implemented for '{{name}}'")
                  for op in ("erf", "erfc", "erfinv", "lgamma")})


_COMPLEX_NP = frozenset(d.np for d in D.COMPLEX_DTYPES)
_C32 = D.COMPLEX32_NP   # compared by value: the limited dtypes' one-byte tags are structured dtypes too
# the dtypes the generated check looks for: complex, and the dtypes with limited support (limited_dtype_support)
GUARDED_NP = _COMPLEX_NP | LDS.LIMITED_NP


def _complex_in(values):
    """The first complex tensor's dtype among ``values`` (lists of tensors looked into), True for a Python
    complex number, else None."""
    for v in values:
        if isinstance(v, Tensor):
            if v._a.dtype in _COMPLEX_NP:      # complex32 included (a set: no structured-dtype ==)
                return v
        elif v.__class__ is complex:
            return True
        elif v.__class__ is list or v.__class__ is tuple:
            for w in v:
                if isinstance(w, Tensor) and w._a.dtype in _COMPLEX_NP:
                    return w
    return None


def _promoted(args):
    """The complex dtype torch computes in for tensors and a Python complex number (float64 + 1j: complex128)."""
    operands = [v for v in args if isinstance(v, (Tensor, bool, int, float, complex))]
    try:
        return promotion.result_type(*operands)
    except (TypeError, KeyError):
        return D.default_complex_dtype()


def _is_complex32(found) -> bool:
    return found is D.complex32 or isinstance(found, Tensor) and found._a.dtype == _C32


def refusal(op: str, found) -> Exception:
    """torch's error for ``op`` given a complex argument: a tensor, True for a Python complex number, or the
    complex dtype asked for."""
    if found is True:
        name, device = "ComplexDouble", "cpu"
    elif found.__class__ is D.dtype:
        name, device = D.SCALAR_TYPE_NAME[found], "cpu"
    else:
        name, device = D.SCALAR_TYPE_NAME[D.FROM_NUMPY[found._a.dtype]], found._device.type
    exc, text = _MESSAGES.get(op, (NotImplementedError, f"\"{op}_{device}\" not implemented for '{{name}}'"))
    return exc(text.format(name=name))


def _widen(v):
    if isinstance(v, Tensor):
        if v._a.dtype == _C32:
            return make(KX.widen(v._a), v._device)
        return v
    if v.__class__ is list or v.__class__ is tuple:
        return v.__class__(_widen(w) for w in v)
    return v


def _narrow(r):
    if isinstance(r, Tensor):
        dt = r._a.dtype
        if dt == np.complex64:
            return make(KX.cast(r._a, KX.COMPLEX32), r._device)
        if dt == np.float32:
            return make(r._a.astype(np.float16), r._device)
        return r
    if r.__class__ is tuple:
        return tuple(_narrow(x) for x in r)
    return r


def _widened_call(fn, args, kwargs):
    """``fn`` on complex32 arguments, computed in complex64 and rounded back, as torch's ComplexHalf kernels do."""
    return _narrow(fn(*[_widen(a) for a in args], **{k: _widen(v) for k, v in kwargs.items()}))


def check_arguments(op: str, args, kwargs, fn=None):
    """Raise torch's error if ``op`` (a packet name) may not take these arguments' complex values (or their
    dtypes with limited support: limited_dtype_support). For an op torch computes complex32 in complex64
    (COMPLEX32_WIDENED), ``(result,)`` of ``fn`` run that way; else None, and the kernel runs as it is."""
    LDS.check_arguments(op, args, kwargs)
    found = _complex_in(args)
    if found is True:
        found = _promoted(args)
    if found is None and kwargs:
        found = _complex_in(kwargs.values())
        if found is True:
            found = _promoted(args)
        if found is None:
            dt = kwargs.get("dtype")
            if dt is not None and dt.__class__ is D.dtype and dt.is_complex:
                found = dt     # a complex result asked of a real computation (arange(dtype=cfloat))
    if found is not None and _is_complex32(found) and op in COMPLEX32_WIDENED and fn is not None:
        return (_widened_call(fn, args, kwargs),)
    if found is not None and (op not in COMPLEX_OPS or _is_complex32(found) and op not in COMPLEX32_OPS):
        raise refusal(op, found)
    return None


def argument_conditions(sig, schema, tensor_cls, dtype_cls, guarded_np):
    """One Python expression per argument that could need the check: true for a tensor of a guarded dtype (complex
    or limited), anything but a number or a tensor in a tensor slot, a non-empty list in a tensor-list or
    Scalar-list slot, a complex number in a Scalar slot, a guarded dtype in a ScalarType slot. ``tensor_cls``,
    ``dtype_cls`` and ``guarded_np`` name ``Tensor``, ``dtype`` and ``GUARDED_NP`` where the expressions run."""
    conditions = []
    for p, a in zip(sig.params, schema.arguments):
        t, n = a.type, p.name
        if t.base == "Tensor" and not t.is_list:
            conditions.append(f"({n}._a.dtype in {guarded_np} if {n}.__class__ is {tensor_cls} or "
                              f"isinstance({n}, {tensor_cls}) else {n} is not None and {n}.__class__ is not float "
                              f"and {n}.__class__ is not int)")
        elif t.base == "Tensor" or t.base == "Scalar" and t.is_list:
            conditions.append(f"{n}")
        elif t.base == "Scalar":
            conditions.append(f"{n}.__class__ is complex")
        elif t.base == "ScalarType":
            conditions.append(f"{n}.__class__ is {dtype_cls} and {n}.np in {guarded_np}")
    return conditions


def is_guarded(op) -> bool:
    """Whether ``guard`` puts ``op``'s kernels behind the check."""
    return not (op._opname in COMPLEX32_OPS and op._opname in LDS.ALLOWED_FOR_ALL and
                op.name_ not in LDS.ALWAYS_CHECKED)


def dispatch_conditions(op, sig):
    """For the dispatcher's generated function (``set_kernel_wrapper``): ``(conditions, env)``, the expressions
    that are all false exactly when ``guard``'s check would let the call through untouched (the kernel can then
    be called without it), with the names they read; None for an op whose kernels ``guard`` leaves unwrapped."""
    if not is_guarded(op):
        return None
    tensor_cls, dtype_cls, guarded_np = map(sig.fresh, ("_Tensor", "_dtype", "_guarded_np"))
    return (argument_conditions(sig, op._schema, tensor_cls, dtype_cls, guarded_np),
            {tensor_cls: Tensor, dtype_cls: D.dtype, guarded_np: GUARDED_NP})


def _check_lines(sig, schema, check, tensor_cls, dtype_cls, guarded_np):
    """Generated lines that call ``check`` when an argument could need it (``argument_conditions``)."""
    conditions = argument_conditions(sig, schema, tensor_cls, dtype_cls, guarded_np)
    if not conditions:
        return []
    r = sig.fresh("_r")
    # the check raises, or gives (result,) when it ran the op itself (complex32 computed in complex64)
    return codegen.if_any(conditions) + [f"    {r} = {check}({sig.args_tuple}, {sig.kwargs_dict})",
                                         f"    if {r} is not None:", f"        return {r}[0]"]


_factories: dict = {}   # op -> its wrapper factory


def _factory(op):
    schema = op._schema
    sig = codegen.Signature.of_schema(schema, schema_keys=True)
    fn_, check, tensor_cls, dtype_cls, guarded_np = map(sig.fresh, ("_fn", "_check", "_Tensor", "_dtype",
                                                                     "_guarded_np"))
    lines = _check_lines(sig, schema, check, tensor_cls, dtype_cls, guarded_np)
    # the operator's own parameters, taken and passed on as the dispatcher passes them (as the device guard does)
    src = (f"def _make({fn_}, {check}, {tensor_cls}, {dtype_cls}, {guarded_np}, {', '.join(sig.defaults)}):\n"
           f"    def complex_checked({sig.parameters}):\n" + codegen.indent(lines + [f"return {fn_}({sig.call})"], 2)
           + "    return complex_checked\n")
    make = codegen.compile_function(src, codegen.COMPLEX_CHECK)
    name = f"{schema.name}_complex_check"
    named = {c: codegen.named_code(c, codegen.COMPLEX_CHECK, op.name_, name) for c in codegen.inner_codes(make)}

    def factory(fn):
        packet = schema.name.split("::")[-1]
        checked = make(fn, lambda args, kwargs: check_arguments(packet, args, kwargs, fn), Tensor, D.dtype,
                       GUARDED_NP, **sig.defaults)
        checked.__code__ = named[checked.__code__]
        checked.__name__ = checked.__qualname__ = name
        checked.__wrapped__ = fn
        return checked
    return factory


def guard(op, fn):
    """The callable the dispatcher runs for aten ``op``'s kernel ``fn``: ``fn`` itself when the op supports every
    complex dtype, else ``fn`` behind a generated check that raises torch's error for the complex arguments it
    does not take (before the kernel runs; real arguments cost a few attribute reads)."""
    if not is_guarded(op):
        return fn
    factory = _factories.get(op)
    if factory is None:
        factory = _factories[op] = _factory(op)
    return factory(fn)


__all__ = ["COMPLEX_OPS", "COMPLEX32_OPS", "GUARDED_NP", "check_arguments", "dispatch_conditions", "guard",
           "is_guarded", "refusal"]
