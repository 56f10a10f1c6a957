"""``npusim.autograd.functional`` (torch.autograd.functional): jacobian, hessian, vjp, jvp, hvp, vhp.

Built on ``autograd.grad`` as torch's are: ``jvp`` and ``hvp`` use the double-backward trick (the backward
of the backward, which is linear in its incoming gradient). ``vectorize=True`` and the forward-mode
strategies give torch's results and errors but are computed one row at a time in reverse mode: npusim has no
batched gradients and no forward-mode AD.
"""
from __future__ import annotations

from ..core.autograd.api import grad as _grad
from ..core.autograd.grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from ..api.operators import stack as _stack
from ..api.factories import zeros_like as _zeros_like
from ..core.tensor import Tensor

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _as_tuple_nocheck(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _as_tuple(inp, arg_name=None, fn_name=None):
    """(whether ``inp`` was a tuple, ``inp`` as a tuple of Tensors), with torch's TypeError otherwise."""
    if arg_name is None and fn_name is None:
        return _as_tuple_nocheck(inp)
    is_inp_tuple = True
    if not isinstance(inp, tuple):
        inp = (inp,)
        is_inp_tuple = False
    for i, el in enumerate(inp):
        if not isinstance(el, Tensor):
            if is_inp_tuple:
                raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors "
                                f"but the value at index {i} has type {type(el)}.")
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                            f"the given {arg_name} has type {type(el)}.")
    return is_inp_tuple, inp


def _tuple_postprocess(res, to_unpack):
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    # with create_graph the result must stay connected to the caller's graph: a view keeps the link
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view_as(inp))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs, create_graph):
    if isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.size()} but got {el_v.size()}.")


def _check_requires_grad(inputs, input_type, strict):
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This is not "
                               f"allowed in strict mode.")
        if not inp.requires_grad:
            if input_type == "hessian":
                raise RuntimeError(
                    f"The hessian of the user-provided function with respect to input {i} is independent of the "
                    f"input. This is not allowed in strict mode. You should ensure that your function is thrice "
                    f"differentiable and that the hessian depends on the inputs.")
            if input_type == "jacobian":
                raise RuntimeError(
                    f"While computing the hessian, found that the jacobian of the user-provided function with "
                    f"respect to input {i} is independent of the input. This is not allowed in strict mode. You "
                    f"should ensure that your function is twice differentiable and that the jacobian depends on "
                    f"the inputs (this would be violated by a linear function for example).")
            if input_type == "grad_inputs":
                raise RuntimeError(f"The gradient with respect to input {i} is independent of the inputs of the "
                                   f"user-provided function. This is not allowed in strict mode.")
            raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The outputs "
                               f"must be computed in a differentiable manner from the input when running in strict "
                               f"mode.")


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """``autograd.grad`` over the outputs that require grad; all None when none does."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    new_outputs, new_grad_outputs = (), ()
    for out, grad_out in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            new_outputs += (out,)
            new_grad_outputs += (grad_out,)
    if not new_outputs:
        return (None,) * len(inputs)
    return _grad(new_outputs, inputs, new_grad_outputs, allow_unused=True, create_graph=create_graph,
                 retain_graph=retain_graph)


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    res = ()
    for i, grads_i in enumerate(grads):
        if grads_i is None:
            if strict:
                if stage == "back":
                    raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This "
                                       f"is not allowed in strict mode.")
                if stage == "back_trick":
                    raise RuntimeError(f"The gradient with respect to the input is independent of entry {i} in the "
                                       f"grad_outputs when using the double backward trick to compute forward mode "
                                       f"gradients. This is not allowed in strict mode.")
                if stage == "double_back":
                    raise RuntimeError(f"The jacobian of the user-provided function is independent of input {i}. "
                                       f"This is not allowed in strict mode.")
                raise RuntimeError(f"The hessian of the user-provided function is independent of entry {i} in the "
                                   f"grad_jacobian. This is not allowed in strict mode as it prevents from using the "
                                   f"double backward trick to replace forward mode AD.")
            grads_i = _zeros_like(refs[i])
        elif strict and create_graph and not grads_i.requires_grad:
            if "double" not in stage:
                raise RuntimeError(f"The jacobian of the user-provided function is independent of input {i}. This "
                                   f"is not allowed in strict mode when create_graph=True.")
            raise RuntimeError(f"The hessian of the user-provided function is independent of input {i}. This is not "
                               f"allowed in strict mode when create_graph=True.")
        res += (grads_i,)
    return res


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), v^T J)``: the vector-Jacobian product at ``inputs``."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple)
        elif len(outputs) != 1 or outputs[0].nelement() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function returns a single Tensor "
                               "with a single element.")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(res, is_inputs_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), J v)``: the Jacobian-vector product, by the double-backward trick."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        if v is not None:
            _, v = _as_tuple(v, "v", "jvp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, inputs, is_inputs_tuple)
        elif len(inputs) != 1 or inputs[0].nelement() != 1:
            raise RuntimeError("The vector v can only be None if the input to the user-provided function is a single "
                               "Tensor with a single element.")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        # the backward is linear in grad_outputs: differentiating it with respect to them gives J v
        grad_outputs = tuple(_zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(res, is_outputs_tuple)


def _check_forward_mode(strict, vectorize, create_graph):
    """torch's restrictions on ``strategy="forward-mode"`` (its result here is computed in reverse mode)."""
    if create_graph:
        raise NotImplementedError('npusim.autograd.functional.jacobian: `create_graph=True` and '
                                  '`strategy="forward-mode"` are not supported together (yet). Please either set '
                                  '`create_graph=False` or `strategy="reverse-mode"`.')
    if strict:
        raise RuntimeError('npusim.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are not '
                           'supported together (yet). Please either set `strict=False` or '
                           '`strategy="reverse-mode"`.')
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian isonly "
                                  "implemented for `vectorize=True`.")


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: entry [i][j] has shape ``outputs[i].shape + inputs[j].shape``."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                             'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                             'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        _check_forward_mode(strict, vectorize, create_graph)
        _as_tuple(inputs, "inputs", "jacobian")
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict=strict)
        if vectorize and strict:
            raise RuntimeError("npusim.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
                               "supported together. Please either set `strict=False` or `vectorize=False`.")
        jac = ()
        for i, out in enumerate(outputs):
            jac_i = tuple([] for _ in range(len(inputs)))
            flat = out.reshape(-1)
            for j in range(out.nelement()):
                vj = _autograd_grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
                for el_idx, (jac_i_el, vj_el, inp_el) in enumerate(zip(jac_i, vj, inputs)):
                    if vj_el is not None:
                        if strict and create_graph and not vj_el.requires_grad:
                            raise RuntimeError(f"The jacobian of the user-provided function is independent of input "
                                               f"{i}. This is not allowed in strict mode when create_graph=True.")
                        jac_i_el.append(vj_el)
                    else:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is independent of input "
                                               f"{el_idx}. This is not allowed in strict mode.")
                        jac_i_el.append(_zeros_like(inp_el))
            jac += (tuple(_stack_rows(jac_i_el, inputs[el_idx]).view(out.size() + inputs[el_idx].size())
                          for el_idx, jac_i_el in enumerate(jac_i)),)
        jac = _grad_postprocess(jac, create_graph)
        if strategy == "forward-mode":
            jac = [list(row) for row in jac]   # torch's forward-mode result nests lists, not tuples
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def _stack_rows(rows, like):
    # an output with no elements has no rows: its Jacobian block is empty
    return _stack(rows, dim=0) if rows else like.new_zeros((0,) + tuple(like.shape))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of the scalar function ``func`` at ``inputs``."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.nelement() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return out.squeeze()

    def jac_func(*inp):
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _hv_prologue(func, inputs, v, create_graph, strict, name):
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    if v is not None:
        _, v = _as_tuple(v, "v", name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, inputs, is_inputs_tuple)
    elif len(inputs) != 1 or inputs[0].nelement() != 1:
        raise RuntimeError("The vector v can only be None if the input to the user-provided function is a single "
                           "Tensor with a single element.")
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    if is_outputs_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {name} should contain a single element")
    jac = _autograd_grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict=strict)
    return is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), v^T H)``: the vector-Hessian product of a scalar function."""
    with enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac = _hv_prologue(func, inputs, v, create_graph,
                                                                                  strict, "vhp")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(res, is_inputs_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), H v)``: the Hessian-vector product of a scalar function, by the double-backward trick."""
    with enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac = _hv_prologue(func, inputs, v, create_graph,
                                                                                  strict, "hvp")
        grad_jac = tuple(_zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(res, is_inputs_tuple)
