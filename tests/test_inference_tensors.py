"""Tensors made under inference_mode are inference tensors, with torch's rules outside inference mode."""
from __future__ import annotations

import threading

import pytest

import npusim

INPLACE = r"^Inplace update to inference tensor outside InferenceMode is not allowed\."
SAVE = r"^Inference tensors cannot be saved for backward\."


def made_in_inference_mode(device):
    with npusim.inference_mode():
        return npusim.ones(3, device=device)


def test_tensors_made_in_inference_mode_are_inference_tensors(device):
    with npusim.inference_mode():
        factory = npusim.zeros(2, 3, device=device)
        literal = npusim.tensor([1.0, 2.0], device=device)
        computed = factory + 1
        view = factory[0]
        assert not npusim.ones(1, device=device).add(1).requires_grad
    for t in (factory, literal, computed, view, view.detach(), factory.data):
        assert t.is_inference() and npusim.is_inference(t)
    normal = npusim.zeros(2, device=device)
    assert not normal.is_inference()
    # what is computed from them outside inference mode is a normal tensor
    assert not (factory * 2).is_inference() and not factory.clone().is_inference()


def test_inference_mode_false_and_other_threads_make_normal_tensors(device):
    with npusim.inference_mode():
        with npusim.inference_mode(False):
            assert not npusim.ones(1, device=device).is_inference()
        seen = []
        worker = threading.Thread(target=lambda: seen.append(npusim.ones(1, device=device).is_inference()))
        worker.start()
        worker.join()
        assert seen == [False]
        assert npusim.ones(1, device=device).is_inference()
    assert not npusim.no_grad()(lambda: npusim.ones(1, device=device))().is_inference()


def test_in_place_updates_are_allowed_inside_inference_mode_only(device):
    t = made_in_inference_mode(device)
    with npusim.inference_mode():
        t.add_(1)
        t[0] = 5.0
    assert t.tolist() == [5.0, 2.0, 2.0]
    normal = npusim.full((3,), 7.0, device=device)
    for write in (lambda: t.add_(1), lambda: t[1:].mul_(2), lambda: t.copy_(normal), lambda: t.zero_(),
                  lambda: t.__setitem__(0, 9.0), lambda: npusim.add(normal, normal, out=t),
                  lambda: t.fill_(3.0)):
        with pytest.raises(RuntimeError, match=INPLACE):
            write()
    assert t.tolist() == [5.0, 2.0, 2.0]     # refused before anything was written


def test_saving_an_inference_tensor_for_backward_is_refused(device):
    t = made_in_inference_mode(device)
    w = npusim.ones(3, device=device, requires_grad=True)
    # add saves neither input: allowed, as in torch
    (w + t).sum().backward()
    assert w.grad.tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(RuntimeError, match=SAVE):
        w * t
    # a clone is a normal tensor
    (w * t.clone()).sum().backward()
    assert w.grad.tolist() == [2.0, 2.0, 2.0]


def test_requires_grad_and_version_of_inference_tensors(device):
    t = made_in_inference_mode(device)
    with pytest.raises(RuntimeError, match=r"^Setting requires_grad=True on inference tensor outside InferenceMode "
                                           r"is not allowed\.$"):
        t.requires_grad_()
    assert not t.requires_grad
    with pytest.raises(RuntimeError, match=r"^Inference tensors do not track version counter\.$"):
        t._version
    with npusim.inference_mode():
        t.requires_grad_()
    assert t.requires_grad


def test_a_model_built_in_inference_mode_runs_under_autocast_outside_it(device):
    with npusim.inference_mode():
        model = npusim.nn.Linear(4, 2).to(device)
    x = npusim.ones(3, 4, device=device)
    with npusim.no_grad(), npusim.autocast(device, dtype=npusim.bfloat16):
        assert model(x).shape == (3, 2)


def test_is_inference_needs_a_tensor():
    with pytest.raises(TypeError, match=r"^is_inference\(\): argument 'input' \(position 1\) must be Tensor, not int$"):
        npusim.is_inference(3)


@pytest.mark.oracle
def test_the_same_rules_and_messages_as_torch(torch):
    def outcomes(mod):
        with mod.inference_mode():
            t = mod.ones(3)
        w = mod.ones(3, requires_grad=True)
        results = [t.is_inference(), (t * 2).is_inference(), t[0:2].is_inference()]
        for f in (lambda: t.add_(1), lambda: w * t, lambda: t.requires_grad_(), lambda: t._version,
                  lambda: (w + t).sum().backward()):
            try:
                f()
                results.append("ok")
            except RuntimeError as e:
                results.append(str(e).replace("torch.", "npusim."))
        return results

    assert outcomes(npusim) == outcomes(torch)
