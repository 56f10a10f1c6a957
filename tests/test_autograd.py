"""The autograd engine: graph structure, backward and grad, hooks, grad modes, in-place rules.

Every test body runs on cpu and npu. Error types and messages are torch's; the
``oracle`` tests run the same code in torch and compare.
"""
from __future__ import annotations

import re
import threading
import warnings

import numpy as np
import pytest

import npusim
from conftest import host


def leaf(values, device, dtype=None):
    return npusim.tensor(values, dtype=dtype or npusim.float32, device=device, requires_grad=True)


def same_error(torch, fn_torch, fn_npusim, exc=RuntimeError):
    """``fn_npusim`` raises the exception ``fn_torch`` raises, with the same message (torch's names mapped)."""
    with pytest.raises(exc) as t_err:
        fn_torch()
    msg = str(t_err.value).replace("torch.", "npusim.")
    with pytest.raises(exc, match=re.escape(msg)):
        fn_npusim()


# --- requires_grad ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int64", "int32", "bool", "uint8"])
def test_only_floating_tensors_can_require_grad(dtype, device):
    t = npusim.zeros(2, dtype=getattr(npusim, dtype), device=device)
    with pytest.raises(RuntimeError, match="^only Tensors of floating point dtype can require gradients$"):
        t.requires_grad_()
    with pytest.raises(RuntimeError, match="^only Tensors of floating point and complex dtype can require"):
        t.requires_grad = True
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype can require"):
        npusim.ones(2, dtype=getattr(npusim, dtype), device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype can require"):
        npusim.nn.Parameter(t)
    assert not npusim.nn.Parameter(t, requires_grad=False).requires_grad
    t.requires_grad_(False)   # turning it off is always fine
    assert not t.requires_grad


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_floating_tensors_can_require_grad(dtype, device):
    t = npusim.zeros(2, dtype=getattr(npusim, dtype), device=device).requires_grad_()
    assert t.requires_grad and t.is_leaf and t.grad_fn is None and t.grad is None


@pytest.mark.oracle
def test_requires_grad_error_messages_match_torch(torch):
    same_error(torch, lambda: torch.tensor([1, 2]).requires_grad_(), lambda: npusim.tensor([1, 2]).requires_grad_())
    same_error(torch, lambda: setattr(torch.tensor([1]), "requires_grad", True),
               lambda: setattr(npusim.tensor([1]), "requires_grad", True))
    same_error(torch, lambda: (torch.ones(2, requires_grad=True) * 2).requires_grad_(False),
               lambda: (npusim.ones(2, requires_grad=True) * 2).requires_grad_(False))


def test_results_require_grad_when_an_input_does(device):
    x = leaf([1.0, 2.0], device)
    c = npusim.tensor([3.0, 4.0], device=device)
    assert (x * c).requires_grad
    assert not (c * c).requires_grad
    assert not (c * c).is_leaf is False   # a result of untracked inputs is a leaf
    assert (c * c).grad_fn is None


# --- graph structure -------------------------------------------------------------------------------------

def test_grad_fn_names_and_next_functions(device):
    x = leaf([1.0, 2.0], device)
    y = leaf([3.0, 4.0], device)
    z = (x * y).sum()
    assert z.grad_fn.name() == "SumBackward0"
    assert type(z.grad_fn).__name__ == "SumBackward0"
    ((mul, nr),) = z.grad_fn.next_functions
    assert mul.name() == "MulBackward0" and nr == 0
    (acc_x, _), (acc_y, _) = mul.next_functions
    assert type(acc_x).__name__ == "AccumulateGrad" and acc_x.variable is x and acc_y.variable is y
    assert not z.is_leaf and x.is_leaf
    assert "grad_fn=<SumBackward0>" in repr(z)


def test_constants_have_no_edge(device):
    x = leaf([1.0, 2.0], device)
    c = npusim.tensor([3.0, 4.0], device=device)
    (_, _), (none, nr) = (x * c).grad_fn.next_functions
    assert none is None and nr == 0


def test_multi_output_ops_number_their_outputs(device):
    x = leaf([[1.0, 2.0], [3.0, 4.0]], device)
    a, b = x.unbind(0)
    assert a.grad_fn is b.grad_fn and a.output_nr == 0 and b.output_nr == 1


def test_grad_is_accumulated_across_backward_calls(device):
    x = leaf([1.0, 2.0], device)
    (x * 3).sum().backward()
    first = x.grad
    (x * 3).sum().backward()
    np.testing.assert_allclose(host(x.grad), [6.0, 6.0])
    assert x.grad is first   # accumulated in place, as torch does
    x.grad = None
    (x * x).sum().backward()
    np.testing.assert_allclose(host(x.grad), [2.0, 4.0])


def test_grad_of_a_leaf_used_twice_sums(device):
    x = leaf([1.0, 2.0], device)
    (x * x + x).sum().backward()
    np.testing.assert_allclose(host(x.grad), [3.0, 5.0])


def test_grad_has_the_leaf_dtype_and_device(device):
    x = leaf([1.0, 2.0], device, dtype=npusim.float64)
    (x.float() * 2).sum().backward()
    assert x.grad.dtype is npusim.float64 and x.grad.device == x.device


def test_gradient_of_a_non_leaf_is_not_kept_without_retain_grad(device):
    x = leaf([1.0, 2.0], device)
    y = x * 2
    y.sum().backward()
    with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed"):
        assert y.grad is None


def test_retain_grad(device):
    x = leaf([1.0, 2.0], device)
    y = x * 2
    y.retain_grad()
    assert y.retains_grad
    (y * y).sum().backward()
    np.testing.assert_allclose(host(y.grad), [4.0, 8.0])
    x.retain_grad()   # a no-op on leaves
    assert not x.retains_grad
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        npusim.ones(2, device=device).retain_grad()


def test_retain_grad_follows_in_place_changes(device):
    x = leaf([1.0, 2.0], device)
    y = x * 2
    y.retain_grad()
    y.mul_(3)
    (y * y).sum().backward()
    # the retained gradient is the one of y's latest value, as in torch
    np.testing.assert_allclose(host(y.grad), [12.0, 24.0])


# --- hooks -----------------------------------------------------------------------------------------------------

def test_hooks_on_leaves_see_and_replace_the_gradient(device):
    x = leaf([1.0, 2.0], device)
    seen = []
    h1 = x.register_hook(lambda g: seen.append(host(g).copy()))
    x.register_hook(lambda g: g * 10)
    (x * 3).sum().backward()
    np.testing.assert_allclose(seen[0], [3.0, 3.0])
    np.testing.assert_allclose(host(x.grad), [30.0, 30.0])
    h1.remove()
    (x * 3).sum().backward()
    assert len(seen) == 1
    np.testing.assert_allclose(host(x.grad), [60.0, 60.0])


def test_hooks_apply_to_gradients_autograd_grad_returns(device):
    x = leaf([1.0, 2.0], device)
    x.register_hook(lambda g: g * 10)
    y = x * 1
    y.register_hook(lambda g: g + 1)
    np.testing.assert_allclose(host(npusim.autograd.grad((x * 2).sum(), x)[0]), [20.0, 20.0])
    np.testing.assert_allclose(host(npusim.autograd.grad((y * 2).sum(), y)[0]), [3.0, 3.0])


def test_hooks_on_non_leaves_change_what_flows_on(device):
    x = leaf([1.0, 2.0], device)
    y = x * 2
    handle = y.register_hook(lambda g: g * 0 + 1)
    (y * y).sum().backward()
    np.testing.assert_allclose(host(x.grad), [2.0, 2.0])
    handle.remove()
    x.grad = None
    y = x * 2
    (y * y).sum().backward()
    np.testing.assert_allclose(host(x.grad), [8.0, 16.0])


def test_hook_on_a_tensor_that_does_not_require_grad_is_refused(device):
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        npusim.ones(2, device=device).register_hook(lambda g: g)


def test_node_hooks_and_post_accumulate_hooks(device):
    x = leaf([1.0, 2.0], device)
    y = x * 3
    calls = []
    y.grad_fn.register_prehook(lambda grad_outputs: calls.append("pre"))
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0] * 2, grad_inputs[1]))
    x.register_post_accumulate_grad_hook(lambda t: calls.append(("post", host(t.grad).tolist())))
    y.sum().backward()
    assert calls == ["pre", ("post", [6.0, 6.0])]


# --- backward arguments ----------------------------------------------------------------------------------------

def test_backward_with_an_explicit_gradient(device):
    x = leaf([1.0, 2.0], device)
    (x * 3).backward(npusim.tensor([1.0, -1.0], device=device))
    np.testing.assert_allclose(host(x.grad), [3.0, -3.0])


def test_backward_casts_the_gradient_to_the_output_dtype(device):
    x = leaf([1.0, 2.0], device)
    (x * 3).backward(npusim.tensor([1.0, 2.0], dtype=npusim.float64, device=device))
    assert x.grad.dtype is npusim.float32
    np.testing.assert_allclose(host(x.grad), [3.0, 6.0])


def test_backward_errors(device):
    x = leaf([1.0, 2.0], device)
    with pytest.raises(RuntimeError, match="^grad can be implicitly created only for scalar outputs$"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match=re.escape("Mismatch in shape: grad_output[0] has a shape of "
                                                     "npusim.Size([3]) and output[0] has a shape of "
                                                     "npusim.Size([2]).")):
        (x * 2).backward(npusim.ones(3, device=device))
    with pytest.raises(RuntimeError, match="^element 0 of tensors does not require grad and does not have a "
                                           "grad_fn$"):
        npusim.ones(2, device=device).sum().backward()
    with pytest.raises(RuntimeError, match="^element 1 of tensors does not require grad"):
        npusim.autograd.backward([x.sum(), npusim.ones(1, device=device).sum()])
    with pytest.raises(RuntimeError, match="^got 2 tensors and 1 gradients$"):
        npusim.autograd.backward([x * 2, x * 3], [npusim.ones(2, device=device)])
    with pytest.raises(TypeError, match="gradients can be either Tensors or None, but got float"):
        npusim.autograd.backward([x.sum()], [1.0])
    with pytest.raises(RuntimeError, match="`inputs` argument to `backward\\(\\)` cannot be empty."):
        x.sum().backward(inputs=[])


@pytest.mark.oracle
def test_backward_error_messages_match_torch(torch):
    for m, fn in [(torch, lambda m, x: (x * 2).backward()),
                  (torch, lambda m, x: (x * 2).backward(m.ones(3))),
                  (torch, lambda m, x: m.ones(2).sum().backward()),
                  (torch, lambda m, x: m.autograd.backward([x * 2, x * 3], [m.ones(2)])),
                  (torch, lambda m, x: m.autograd.grad((x * 2).sum(), [x, m.ones(2, requires_grad=True)])),
                  (torch, lambda m, x: m.autograd.grad((x * 2).sum(), [m.ones(2)])),
                  (torch, lambda m, x: m.autograd.grad((x * 2).sum(), [])),
                  (torch, lambda m, x: m.autograd.grad((x * 2).sum(), [x, 3])),
                  (torch, lambda m, x: (x * 2).sum().backward(inputs=[m.ones(2)]))]:
        same_error(torch, lambda: fn(torch, torch.ones(2, requires_grad=True)),
                   lambda: fn(npusim, npusim.ones(2, requires_grad=True)))


def test_backward_twice_needs_retain_graph(device):
    x = leaf([1.0, 2.0], device)
    z = (x * x).sum()
    z.backward(retain_graph=True)
    z.backward()
    np.testing.assert_allclose(host(x.grad), [4.0, 8.0])
    with pytest.raises(RuntimeError, match="^Trying to backward through the graph a second time .*Specify "
                                           "retain_graph=True"):
        z.backward()
    # a graph that saved no tensor can be walked again, as in torch
    x.grad = None
    s = (x + npusim.ones(2, device=device)).sum()
    s.backward()
    s.backward()
    np.testing.assert_allclose(host(x.grad), [2.0, 2.0])


def test_saved_tensor_modified_in_place_is_detected(device):
    x = leaf([1.0, 2.0], device)
    y = x * 1
    z = y * y   # saves y
    y.add_(1)
    with pytest.raises(RuntimeError, match=re.escape(
            "one of the variables needed for gradient computation has been modified by an inplace operation: "
            "[npusim.FloatTensor [2]], which is output 0 of Add, is at version 1; expected version 0 instead.")):
        z.sum().backward()
    w = (x * 1).exp()   # saves its own output
    w.add_(1)
    with pytest.raises(RuntimeError, match=r"\[npusim.FloatTensor \[2\]\], which is output 0 of Exp, is at "
                                           r"version 1; expected version 0 instead. Hint: enable anomaly"):
        w.sum().backward()


@pytest.mark.oracle
def test_version_error_matches_torch(torch):
    def fn(m):
        x = m.ones(2, 3, requires_grad=True)
        w = (x * 1).sigmoid()
        w.mul_(2)
        w.sum().backward()
    same_error(torch, lambda: fn(torch), lambda: fn(npusim))


def test_version_counter(device):
    a = npusim.ones(3, device=device)
    assert a._version == 0
    b = a[1:]
    b.add_(1)
    assert a._version == 1 and b._version == 1
    d = a.detach()
    d.mul_(2)
    assert a._version == 2
    out = npusim.empty(3, device=device)
    npusim.add(a, a, out=out)
    assert out._version == 1
    x = leaf([1.0], device)
    y = x * 2
    assert y._version == 0
    y.exp_()
    assert y._version == 1


# --- autograd.grad ---------------------------------------------------------------------------------------------

def test_autograd_grad_returns_without_accumulating(device):
    x = leaf([1.0, 2.0], device)
    y = leaf([3.0, 4.0], device)
    gx, gy = npusim.autograd.grad((x * y).sum(), [x, y])
    np.testing.assert_allclose(host(gx), [3.0, 4.0])
    np.testing.assert_allclose(host(gy), [1.0, 2.0])
    assert x.grad is None and y.grad is None


def test_autograd_grad_allow_unused_and_materialize(device):
    x = leaf([1.0, 2.0], device)
    unused = leaf([5.0], device)
    z = (x * 2).sum()
    with pytest.raises(RuntimeError, match="^The differentiated Tensor at index 1 appears to not have been used in "
                                           "the graph. Set allow_unused=True if this is the desired behavior.$"):
        npusim.autograd.grad(z, [x, unused], retain_graph=True)
    gx, gu = npusim.autograd.grad(z, [x, unused], retain_graph=True, allow_unused=True)
    assert gu is None
    gx, gu = npusim.autograd.grad(z, [x, unused], retain_graph=True, materialize_grads=True)
    np.testing.assert_allclose(host(gu), [0.0])
    with pytest.raises(ValueError, match="Expected allow_unused to be True or not passed when "
                                         "materialize_grads=True, but got: allow_unused=False."):
        npusim.autograd.grad(z, [x], materialize_grads=True, allow_unused=False)
    with pytest.raises(RuntimeError, match="^One of the differentiated Tensors does not require grad$"):
        npusim.autograd.grad(z, [npusim.ones(2, device=device)])


def test_autograd_grad_of_an_intermediate_tensor(device):
    x = leaf([1.0, 2.0], device)
    y = x * 3
    z = (y * y).sum()
    (gy,) = npusim.autograd.grad(z, y)
    np.testing.assert_allclose(host(gy), [6.0, 12.0])


def test_autograd_grad_with_grad_outputs(device):
    x = leaf([1.0, 2.0], device)
    (g,) = npusim.autograd.grad(x * x, x, grad_outputs=npusim.tensor([1.0, 10.0], device=device))
    np.testing.assert_allclose(host(g), [2.0, 40.0])


def test_double_backward_through_create_graph(device):
    x = leaf([1.0, 2.0], device)
    y = (x ** 3).sum()
    (g,) = npusim.autograd.grad(y, x, create_graph=True)
    assert g.requires_grad
    np.testing.assert_allclose(host(g), [3.0, 12.0])
    (h,) = npusim.autograd.grad(g.sum(), x, create_graph=True)
    np.testing.assert_allclose(host(h), [6.0, 12.0])
    h.sum().backward()
    np.testing.assert_allclose(host(x.grad), [6.0, 6.0])


def test_backward_create_graph_keeps_a_differentiable_grad(device):
    x = leaf([1.0, 2.0], device)
    (x * x).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    npusim.autograd.grad(x.grad.sum(), x)


def test_backward_inputs_limits_accumulation(device):
    x = leaf([1.0, 2.0], device)
    y = leaf([3.0, 4.0], device)
    (x * y).sum().backward(inputs=[x])
    np.testing.assert_allclose(host(x.grad), [3.0, 4.0])
    assert y.grad is None
    h = x * 2
    (h * y).sum().backward(inputs=[h])   # a non-leaf input gets its .grad too
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(host(h.grad), [3.0, 4.0])
    assert y.grad is None


def test_long_chain_needs_no_recursion():
    # the walk is the same for every device: one run on the cpu keeps the file fast
    x = leaf([1.0], "cpu")
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.sum().backward()
    np.testing.assert_allclose(host(x.grad), [1.0])


def test_diamond_graph_runs_each_node_once(device):
    x = leaf([2.0], device)
    a = x * 3
    calls = []
    a.grad_fn.register_prehook(lambda g: calls.append(1))
    (a * a + a.exp()).sum().backward()
    assert len(calls) == 1
    np.testing.assert_allclose(host(x.grad), [2 * 6.0 * 3 + np.exp(6.0) * 3], rtol=1e-5)


# --- grad modes --------------------------------------------------------------------------------------------------

def test_no_grad_context_and_decorators(device):
    x = leaf([1.0], device)
    with npusim.no_grad():
        assert not npusim.is_grad_enabled()
        assert not (x * 2).requires_grad
        with npusim.enable_grad():
            assert (x * 2).requires_grad
    assert npusim.is_grad_enabled()

    @npusim.no_grad()
    def f():
        return x * 2

    @npusim.no_grad
    def g():
        return x * 2

    @npusim.enable_grad
    def h():
        return x * 2

    assert not f().requires_grad and not g().requires_grad
    with npusim.no_grad():
        assert h().requires_grad


def test_no_grad_decorates_generators(device):
    @npusim.no_grad()
    def gen():
        yield npusim.is_grad_enabled()
        yield npusim.is_grad_enabled()

    it = gen()
    assert next(it) is False
    assert npusim.is_grad_enabled()   # not while the caller runs
    assert next(it) is False


def test_set_grad_enabled_as_function_and_context(device):
    x = leaf([1.0], device)
    npusim.set_grad_enabled(False)
    try:
        assert not (x * 2).requires_grad
    finally:
        npusim.set_grad_enabled(True)
    with npusim.set_grad_enabled(False):
        assert not npusim.is_grad_enabled()
    assert npusim.is_grad_enabled()

    @npusim.set_grad_enabled(False)
    def f():
        return npusim.is_grad_enabled()

    assert npusim.is_grad_enabled() and f() is False
    with pytest.raises(TypeError, match=r"set_grad_enabled\(\): argument 'enabled' \(position 1\) must be bool, "
                                        r"not int"):
        npusim.set_grad_enabled(1)


def test_grad_mode_is_thread_local(device):
    seen = {}
    ready, done = threading.Event(), threading.Event()

    def other():
        ready.wait()
        seen["other"] = npusim.is_grad_enabled()
        x = leaf([1.0], device)
        seen["recorded"] = (x * 2).requires_grad
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with npusim.no_grad():
        ready.set()
        done.wait()
    t.join()
    assert seen == {"other": True, "recorded": True}


def test_inference_mode(device):
    x = leaf([1.0], device)
    assert not npusim.is_inference_mode_enabled()
    with npusim.inference_mode():
        assert npusim.is_inference_mode_enabled() and not npusim.is_grad_enabled()
        assert not (x * 2).requires_grad
        with npusim.inference_mode(False):
            assert not npusim.is_inference_mode_enabled()
    assert not npusim.is_inference_mode_enabled() and npusim.is_grad_enabled()

    @npusim.inference_mode
    def f():
        return npusim.is_inference_mode_enabled()

    assert f() is True


# --- anomaly mode ---------------------------------------------------------------------------------------------------

def test_detect_anomaly_reports_nan_gradients(device):
    x = leaf([0.0], device)
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        with npusim.autograd.detect_anomaly():
            assert npusim.autograd.is_anomaly_enabled()
            y = (x * 0).sqrt()   # sqrt'(0) = inf, times 0 -> nan
            # sqrt'(0) is inf; the product's backward turns inf * 0 into the first nan
            with pytest.raises(RuntimeError, match="Function 'MulBackward0' returned nan values in its 0th "
                                                   "output."):
                y.sum().backward()
    assert not npusim.autograd.is_anomaly_enabled()



def test_set_detect_anomaly_sets_now_and_restores_on_exit():
    assert not npusim.autograd.is_anomaly_enabled()
    with npusim.autograd.set_detect_anomaly(True, check_nan=False):
        assert npusim.autograd.is_anomaly_enabled() and not npusim.autograd.is_anomaly_check_nan_enabled()
    assert not npusim.autograd.is_anomaly_enabled() and npusim.autograd.is_anomaly_check_nan_enabled()
    setter = npusim.autograd.set_detect_anomaly(True)
    try:
        assert npusim.autograd.is_anomaly_enabled()
        # as in torch it is no decorator: decorating would leave the mode set for good
        with pytest.raises(TypeError, match="'set_detect_anomaly' object is not callable"):
            setter(lambda: None)
    finally:
        setter.__exit__(None, None, None)
    assert not npusim.autograd.is_anomaly_enabled()


# --- in-place operations ------------------------------------------------------------------------------------------

def test_in_place_on_a_leaf_that_requires_grad_is_refused(device):
    x = leaf([1.0, 2.0], device)
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad is being used in an in-place "
                                           "operation.$"):
        x.mul_(2)
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad is being used in an "
                                           "in-place operation.$"):
        x[0].mul_(2)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable"):
        x[0] = 5.0
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad"):
        x.uniform_()
    with npusim.no_grad():
        x.mul_(2)   # fine without recording
    np.testing.assert_allclose(host(x), [2.0, 4.0])


@pytest.mark.oracle
def test_in_place_leaf_errors_match_torch(torch):
    def leaf_view(m):
        x = m.arange(6.0).reshape(2, 3).requires_grad_()
        x.mul_(2)

    same_error(torch, lambda: leaf_view(torch), lambda: leaf_view(npusim))
    same_error(torch, lambda: torch.ones(3, requires_grad=True)[1:].add_(1),
               lambda: npusim.ones(3, requires_grad=True)[1:].add_(1))


def test_in_place_on_a_non_leaf(device):
    x = leaf([1.0, 2.0], device)
    y = x * 2
    y.exp_()
    assert y.grad_fn.name() == "ExpBackward0" and y._version == 1
    y.sum().backward()
    np.testing.assert_allclose(host(x.grad), 2 * np.exp([2.0, 4.0]), rtol=1e-6)


def test_setitem_on_a_result_routes_gradients(device):
    x = leaf([[1.0, 2.0], [3.0, 4.0]], device)
    y = x * 1
    y[0] = 5.0
    assert y.grad_fn.name() == "CopySlices"
    (y * y).sum().backward()
    np.testing.assert_allclose(host(x.grad), [[0.0, 0.0], [6.0, 8.0]])


def test_in_place_on_a_column_view(device):
    x = leaf([[1.0, 2.0], [3.0, 4.0]], device)
    y = x * 1
    col = y[:, 1]
    col.mul_(2)
    assert y.grad_fn.name() == "CopySlices"
    assert col.grad_fn.name() == "AsStridedBackward0"
    assert col.grad_fn.next_functions[0][0] is y.grad_fn
    ((mul, _), (none, _)) = y.grad_fn.next_functions
    assert mul.name() == "MulBackward0" and none is None
    (y * y).sum().backward()
    np.testing.assert_allclose(host(x.grad), [[2.0, 16.0], [6.0, 32.0]])
    np.testing.assert_allclose(host(y), [[1.0, 4.0], [3.0, 8.0]])


def test_in_place_on_a_flat_view(device):
    x = leaf([[1.0, 2.0], [3.0, 4.0]], device)
    y = x * 1
    v = y.view(-1)
    v.add_(1)
    v2 = v * 3   # the view's own history now reads through the base
    (y.sum() + v2.sum()).backward()
    np.testing.assert_allclose(host(x.grad), np.full((2, 2), 4.0))
    assert y._version == 1 and v._version == 1


def test_in_place_on_a_view_with_a_tensor_operand(device):
    x = leaf([1.0, 2.0, 3.0], device)
    w = leaf([10.0, 20.0], device)
    y = x * 1
    y[1:].mul_(w)
    (y * y).sum().backward()
    np.testing.assert_allclose(host(x.grad), [2.0, 2 * 20.0 * 10.0, 2 * 60.0 * 20.0])
    np.testing.assert_allclose(host(w.grad), [2 * 20.0 * 2.0, 2 * 60.0 * 3.0])


def test_in_place_on_a_view_of_a_constant_makes_the_base_require_grad(device):
    base = npusim.zeros(2, 3, device=device)
    a = leaf([1.0, 2.0, 3.0], device)
    row = base[0]
    row.add_(a * 2)
    assert base.requires_grad and base.grad_fn.name() == "CopySlices"
    assert row.requires_grad and row.grad_fn.name() == "AsStridedBackward0"
    (base * base).sum().backward()
    np.testing.assert_allclose(host(a.grad), 8.0 * np.array([1.0, 2.0, 3.0]))


def test_base_changed_in_place_rebuilds_its_views_history(device):
    x = leaf([1.0, 2.0], device)
    y = x * 1
    v = y[0]
    y.mul_(3)
    assert v.grad_fn.name() == "AsStridedBackward0"
    (v * 1).backward()
    np.testing.assert_allclose(host(x.grad), [3.0, 0.0])


def test_saved_output_of_an_in_place_op_on_a_view(device):
    x = leaf([1.0, 2.0, 3.0], device)
    y = x * 1
    y[1:].exp_()
    y.sum().backward()
    np.testing.assert_allclose(host(x.grad), [1.0, np.exp(2.0), np.exp(3.0)], rtol=1e-6)


def test_double_backward_through_an_in_place_view_update(device):
    x = leaf([1.0, 2.0], device, dtype=npusim.float64)
    y = x * 1
    y[0].mul_(x[1])   # y = [x0 * x1, x1]
    (g,) = npusim.autograd.grad((y * y).sum(), x, create_graph=True)
    # d/dx of (x0 x1)^2 + x1^2 = [2 x0 x1^2, 2 x0^2 x1 + 2 x1]
    np.testing.assert_allclose(host(g), [8.0, 8.0])
    (h,) = npusim.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(host(h), [2 * 4.0 + 4 * 2.0, 4 * 2.0 + 2 * 1.0 + 2.0])


def test_views_of_multi_output_ops_cannot_change_in_place(device):
    x = leaf([[1.0, 2.0], [3.0, 4.0]], device)
    a, b = (x * 1).unbind(0)
    with pytest.raises(RuntimeError, match="^Output 0 of Unbind is a view and is being modified inplace. This view "
                                           "is the output of a function that returns multiple views."):
        a.mul_(2)
    y = x * 1
    p, q = y.split(1)
    y.mul_(2)
    with pytest.raises(RuntimeError, match="^Output 0 of Split is a view and its base or another view of its base "
                                           "has been modified inplace."):
        p.grad_fn


def test_views_made_under_no_grad_cannot_change_in_place(device):
    x = leaf([1.0, 2.0], device)
    y = x * 1
    with npusim.no_grad():
        v = y[0]
    assert v.requires_grad and v.grad_fn is None and v.is_leaf   # torch's view of a tensor that requires grad
    with pytest.raises(RuntimeError, match="^A view was created in no_grad mode and is being modified inplace with "
                                           "grad mode enabled."):
        v.mul_(2)
    with npusim.no_grad():
        v.mul_(2)   # both in no_grad: fine
    np.testing.assert_allclose(host(y), [2.0, 2.0])


@pytest.mark.oracle
def test_view_in_place_errors_match_torch(torch):
    def multi(m):
        a, _ = (m.ones(2, 2, requires_grad=True) * 1).unbind(0)
        a.mul_(2)

    def chunked(m):
        y = m.ones(4, requires_grad=True) * 1
        p, _ = y.chunk(2)
        p.add_(1)

    def no_grad_view(m):
        y = m.ones(2, requires_grad=True) * 1
        with m.no_grad():
            v = y[:1]
        v.add_(1)

    for fn in (multi, chunked, no_grad_view):
        same_error(torch, lambda: fn(torch), lambda: fn(npusim))


@pytest.mark.oracle
def test_in_place_view_gradients_match_torch(torch, device):
    def run(m, dev):
        x = m.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=dev, requires_grad=True)
        w = m.tensor([0.5, -1.0], device=dev, requires_grad=True)
        y = x * 2
        y[:, 1].mul_(w)
        y[1] += 1.0
        z = y.t()
        z[0].mul_(3.0)
        v = y.view(-1)
        v[::2].pow_(2)
        (y * y.exp()).sum().backward()
        return [host(t.grad) if dev != "cpu" or m is npusim else t.grad.numpy() for t in (x, w)] + [
            host(y) if m is npusim else y.detach().numpy()]

    for got, want in zip(run(npusim, device), run(torch, "cpu")):
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_resize_of_a_tensor_that_requires_grad_is_refused(device):
    x = leaf([1.0, 2.0], device)
    for t in (x, x * 1):
        with pytest.raises(RuntimeError, match="^cannot resize variables that require grad$"):
            t.resize_(3)
    with npusim.no_grad(), pytest.raises(RuntimeError, match="^cannot resize variables that require grad$"):
        x.resize_(3)
    assert x.detach().resize_(3).shape == (3,)


def test_out_argument_refused_while_recording(device):
    x = leaf([1.0, 2.0], device)
    with pytest.raises(RuntimeError, match=r"^add\(\): functions with out=... arguments don't support automatic "
                                           r"differentiation, but one of the arguments requires grad.$"):
        npusim.add(x, 1, out=npusim.empty(2, device=device))


def test_ops_without_a_derivative_fail_at_backward(device):
    x = leaf([3.0, 5.0], device)
    y = npusim.floor_divide(x, 2)
    assert y.requires_grad and y.grad_fn.name() == "npusim::autograd::NotImplemented"
    with pytest.raises(RuntimeError, match="^derivative for aten::floor_divide is not implemented$"):
        y.sum().backward()


def test_detach_and_data_stop_gradients(device):
    x = leaf([1.0, 2.0], device)
    d = x.detach()
    assert not d.requires_grad and d.is_leaf
    (x * d).sum().backward()
    np.testing.assert_allclose(host(x.grad), [1.0, 2.0])


def test_contiguous_of_a_contiguous_tensor_keeps_its_history(device):
    x = leaf([1.0, 2.0], device)
    assert x.contiguous() is x and x.is_leaf
    y = x * 2
    assert y.contiguous() is y and y.grad_fn.name() == "MulBackward0"


def _in_place_patterns(m, dev):
    """Common in-place idioms on results and their views; returns every gradient they produce."""
    out = {}
    x = m.tensor([[1.0, 2.0], [3.0, 4.0]], device=dev, requires_grad=True)

    def grad_and_reset():
        g = x.grad
        x.grad = None
        return g

    y = x * 1
    y.retain_grad()
    y[0] = 5.0
    (y * y).sum().backward()
    out["retained after setitem"] = y.grad
    out["setitem"] = grad_and_reset()
    y = x * 1
    y[m.tensor([0, 0], device=dev)] += 1.0
    (y * y).sum().backward()
    out["index +="] = grad_and_reset()
    y = x * 2
    y[y > 4] = 0.0
    (y * x).sum().backward()
    out["mask setitem"] = grad_and_reset()
    y = x * 1
    y.diagonal().mul_(3)
    y.sum().backward()
    out["diagonal mul_"] = grad_and_reset()
    y = x * 1
    y.t()[0].add_(x[1])
    (y ** 2).sum().backward()
    out["transposed row add_"] = grad_and_reset()
    y = x * 1
    y.view(4)[1:3].copy_(m.tensor([7.0, 8.0], device=dev))
    (y * x).sum().backward()
    out["copy_ into a view"] = grad_and_reset()
    a = x * 1
    b = a.view(-1)
    a.add_(1)
    (b * b).sum().backward()
    out["view read after base add_"] = grad_and_reset()
    y = x * 1
    y.index_put_((m.tensor([1], device=dev),), m.tensor([9.0, 9.0], device=dev))
    y.scatter_(1, m.tensor([[1], [0]], device=dev), 0.0)
    y.clamp_(min=2.5)
    y.sum().backward()
    out["index_put_ scatter_ clamp_"] = grad_and_reset()
    return out


@pytest.mark.oracle
def test_in_place_patterns_match_torch(torch, device):
    got, want = _in_place_patterns(npusim, device), _in_place_patterns(torch, "cpu")
    for name, w in want.items():
        np.testing.assert_allclose(host(got[name]), w.numpy(), err_msg=name)


@pytest.mark.parametrize("form", ["method", "operator", "function", "aten_tensor_overload"])
def test_pow_with_a_float_exponent_keeps_float64_precision_in_backward(device, form):
    # a number exponent is a double, never a float32 scalar tensor: the gradient is exact to rounding
    a = np.random.default_rng(0).random(6) + 0.5
    x = npusim.tensor(a, device=device, requires_grad=True)
    y = {"method": lambda: x.pow(1 / 3), "operator": lambda: x ** (1 / 3), "function": lambda: npusim.pow(x, 1 / 3),
         "aten_tensor_overload": lambda: npusim.ops.aten.pow.Tensor_Tensor(x, 1 / 3)}[form]()
    y.sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad.cpu().tolist()), (1 / 3) * a ** (-2 / 3), rtol=1e-14)
    if form != "aten_tensor_overload":
        assert y.grad_fn.name() == "PowBackward0"     # torch picks the Scalar overload for a number
