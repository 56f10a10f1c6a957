"""The complex guard: every aten op either supports complex tensors or refuses them with torch's error.

An op that silently computed on the real parts of a complex input (NumPy casts complex to real with only a
warning) would be the worst kind of bug; this walks every registered op with complex arguments.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import npusim
from npusim.core.dispatch import dispatcher
from npusim.native import complex_support as CS
from schema_arguments import schema_argument


def _aten_overloads():
    return sorted(name for name in dispatcher._OPS if name.startswith("aten::"))


def _call(op, x, device):
    args, kwargs = [], {}
    for a in op._schema.arguments:
        if a.has_default and not a.type.is_write:
            continue
        v = schema_argument(a, x, device, npusim.complex64)
        if a.kwarg_only:
            kwargs[a.name] = v
        else:
            args.append(v)
    return op(*args, **kwargs)


def _has_tensor_argument(op):
    return any(a.type.base == "Tensor" for a in op._schema.arguments)


def _outputs(r):
    if isinstance(r, npusim.Tensor):
        return [r]
    if isinstance(r, (tuple, list)):
        return [t for t in r if isinstance(t, npusim.Tensor)]
    return []


@pytest.mark.parametrize("dtype", [npusim.complex64, npusim.complex32])
def test_every_op_refuses_complex_unless_it_supports_it(device, dtype):
    """Ops outside the allow-list must raise before computing; ops in it must give complex results or real ones
    only where they are documented (abs, angle, the real views)."""
    if dtype is npusim.complex32 and device == "npu":
        from npusim.backend.runtime import runtime
        if runtime.probe() == "cuda":
            pytest.skip("complex32 needs NumPy arrays: not on the npu in cuda mode")
    base = npusim.tensor([[1 + 2j, -3 + 0.5j], [0.25 - 1j, 2j]], dtype=dtype, device=device)
    allowed = CS.COMPLEX32_OPS | CS.COMPLEX32_WIDENED if dtype is npusim.complex32 else CS.COMPLEX_OPS
    unguarded = []
    for name in _aten_overloads():
        op = dispatcher._OPS[name]
        if not _has_tensor_argument(op):
            continue
        packet = name.split("::")[1].split(".")[0]
        x = base.clone()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                r = _call(op, x, device)
            except (RuntimeError, TypeError, ValueError, IndexError):
                continue    # refused (NotImplementedError is a RuntimeError), or the arguments did not fit
        if packet in allowed:
            continue        # supported: test_complex.py checks its values
        for out in _outputs(r):
            if out.is_complex() or out.dtype is npusim.bool or not out.is_floating_point():
                continue
            unguarded.append(name)
    assert not unguarded, f"ops that computed on complex input without supporting it: {unguarded}"


@pytest.mark.parametrize("name, call, error, message", [
    ("erf", lambda x: x.erf(), NotImplementedError, "\"erf_vml_cpu\" not implemented for 'ComplexFloat'"),
    ("lt", lambda x: x < x, NotImplementedError, "\"lt_cpu\" not implemented for 'ComplexFloat'"),
    ("floor", lambda x: x.floor(), NotImplementedError, "floor is not supported for complex inputs"),
    ("sort", lambda x: x.sort(), RuntimeError, "Sort does not support complex dtypes on CPU"),
    ("max", lambda x: x.max(), NotImplementedError, "\"max_all\" not implemented for 'ComplexFloat'"),
    ("clamp", lambda x: x.clamp(0, 1), NotImplementedError, "clamp is not supported for complex types"),
    ("maximum", lambda x: npusim.maximum(x, x), RuntimeError, "maximum not implemented for complex tensors."),
    ("argmax", lambda x: x.argmax(), RuntimeError, "argmax\\(\\): does not support complex input"),
    ("sign", lambda x: x.sign(), NotImplementedError, "Unlike NumPy, torch.sign is not intended to support"),
])
def test_refusals_use_torchs_words(name, call, error, message):
    x = npusim.tensor([1 + 2j, 3 - 4j])
    with pytest.raises(error, match=message):
        call(x)


def test_a_complex_python_number_is_refused_by_real_ops():
    with pytest.raises(NotImplementedError, match="\"lt_cpu\" not implemented for 'ComplexFloat'"):
        npusim.ones(2).lt(1j)


def test_a_complex_dtype_argument_is_refused_by_real_ops():
    with pytest.raises(NotImplementedError, match="\"arange_cpu\" not implemented for 'ComplexFloat'"):
        npusim.arange(3, dtype=npusim.complex64)
    with pytest.raises(NotImplementedError, match="\"randperm_cpu\" not implemented for 'ComplexFloat'"):
        npusim.randperm(3, dtype=npusim.complex64)


@pytest.mark.oracle
def test_refusals_match_torch(torch):
    for call in (lambda L, x: x.floor(), lambda L, x: x.sort(), lambda L, x: x.max(),
                 lambda L, x: x.clamp(0, 1), lambda L, x: L.maximum(x, x), lambda L, x: x.argmax(),
                 lambda L, x: x.sign(), lambda L, x: x.erf(), lambda L, x: L.atan2(x, x)):
        errors = []
        for lib in (torch, npusim):
            x = lib.tensor([1 + 2j, 3 - 4j])
            with pytest.raises(Exception) as e:
                call(lib, x)
            errors.append((type(e.value), str(e.value).split("\n")[0]))
        assert errors[0] == errors[1]


def test_real_ops_are_untouched_by_the_guard(device):
    x = npusim.tensor([1.0, -2.0], device=device)
    assert x.exp().dtype is npusim.float32 and x.sort()[0].tolist() == [-2.0, 1.0]
    np.testing.assert_allclose(x.abs().cpu().numpy(), [1.0, 2.0])
