"""npusim.amp.GradScaler on the cpu and the npu: scaling, unscaling, skipped steps, scale updates,
state dicts, pickling, torch's errors, and a step-by-step comparison with torch's GradScaler."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import npusim
from conftest import host

INF = float("inf")


def setup(device, values=(1.0, 2.0, 3.0), **kw):
    p = npusim.tensor(list(values), device=device, requires_grad=True)
    opt = npusim.optim.SGD([p], lr=0.1)
    return p, opt, npusim.amp.GradScaler(device, **kw)


def backward_with_grad(scaler, p, grad):
    """Make ``p.grad`` equal ``scale * grad`` through a scaled backward pass."""
    g = npusim.tensor(grad, device=p.device.type)
    scaler.scale((p * g).sum()).backward()


def test_scale_multiplies_by_the_scale_factor(device):
    p, opt, scaler = setup(device, init_scale=8.0)
    assert scaler.is_enabled() and scaler.get_scale() == 8.0
    loss = (p * 2).sum()
    scaled = scaler.scale(loss)
    assert scaled.device.type == device and scaled.dtype is npusim.float32
    assert scaled.item() == 8.0 * loss.item()
    a, (b, c) = scaler.scale([loss, (loss, loss * 2)])
    assert [a.item(), b.item(), c.item()] == [96.0, 96.0, 192.0]
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        scaler.scale([loss, 3])


def test_step_unscales_gradients_and_steps(device):
    p, opt, scaler = setup(device, init_scale=1024.0)
    backward_with_grad(scaler, p, [1.0, -2.0, 0.5])
    np.testing.assert_array_equal(host(p.grad), [1024.0, -2048.0, 512.0])
    scaler.step(opt)
    np.testing.assert_array_equal(host(p.grad), [1.0, -2.0, 0.5])
    np.testing.assert_allclose(host(p), [0.9, 2.2, 2.95], rtol=1e-6)
    scaler.update()
    assert scaler.get_scale() == 1024.0 and scaler._get_growth_tracker() == 1


@pytest.mark.parametrize("bad", [INF, -INF, float("nan")])
def test_step_is_skipped_on_non_finite_gradients_and_the_scale_backs_off(device, bad):
    p, opt, scaler = setup(device, init_scale=1024.0, backoff_factor=0.25)
    backward_with_grad(scaler, p, [1.0, 1.0, 1.0])
    with npusim.no_grad():
        p.grad[1] = bad
    assert scaler.step(opt) is None
    np.testing.assert_array_equal(host(p), [1.0, 2.0, 3.0])  # the parameters are untouched
    scaler.update()
    assert scaler.get_scale() == 256.0 and scaler._get_growth_tracker() == 0


def test_scale_grows_after_growth_interval_clean_steps(device):
    p, opt, scaler = setup(device, init_scale=4.0, growth_factor=3.0, growth_interval=3)
    scales = []
    for _ in range(7):
        opt.zero_grad()
        backward_with_grad(scaler, p, [1.0, 1.0, 1.0])
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    assert scales == [4.0, 4.0, 12.0, 12.0, 12.0, 36.0, 36.0]


def test_a_grown_scale_that_would_overflow_is_kept(device):
    p, opt, scaler = setup(device, init_scale=2.0 ** 127, growth_interval=1)
    backward_with_grad(scaler, p, [1e-30, 1e-30, 1e-30])
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 2.0 ** 127 and scaler._get_growth_tracker() == 0


def test_unscale_then_step_unscales_once(device):
    p, opt, scaler = setup(device, init_scale=16.0)
    backward_with_grad(scaler, p, [1.0, 2.0, 3.0])
    scaler.unscale_(opt)
    np.testing.assert_array_equal(host(p.grad), [1.0, 2.0, 3.0])
    npusim.nn.utils.clip_grad_norm_([p], 1.0)
    scaler.step(opt)
    np.testing.assert_allclose(host(p.grad), np.array([1, 2, 3]) / np.sqrt(14), rtol=1e-5)
    scaler.update()


def test_update_with_an_explicit_new_scale(device):
    p, opt, scaler = setup(device)
    backward_with_grad(scaler, p, [1.0, 1.0, 1.0])
    scaler.step(opt)
    scaler.update(3.0)
    assert scaler.get_scale() == 3.0
    scaler.scale(p.sum()).backward()
    scaler.step(opt)
    scaler.update(npusim.tensor([5.0], device=device))
    assert scaler.get_scale() == 5.0


def test_state_dict_round_trip(device):
    p, opt, scaler = setup(device, init_scale=64.0, growth_interval=5)
    for _ in range(2):
        backward_with_grad(scaler, p, [1.0, 1.0, 1.0])
        scaler.step(opt)
        scaler.update()
    sd = scaler.state_dict()
    assert sd == {"scale": 64.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 5,
                  "_growth_tracker": 2}
    other = npusim.amp.GradScaler(device)
    other.load_state_dict(sd)
    assert other.state_dict() == sd
    # a scaler whose tensors exist takes the loaded values too
    backward_with_grad(other, p, [1.0, 1.0, 1.0])
    other.load_state_dict(dict(sd, scale=8.0, _growth_tracker=4))
    assert other.get_scale() == 8.0 and other._get_growth_tracker() == 4


def test_pickling_keeps_the_scale(device):
    p, opt, scaler = setup(device, init_scale=32.0)
    backward_with_grad(scaler, p, [1.0, INF, 1.0])
    scaler.step(opt)
    scaler.update()
    copy = pickle.loads(pickle.dumps(scaler))
    assert copy.get_scale() == 16.0 and copy.state_dict() == scaler.state_dict()
    backward_with_grad(scaler, p, [1.0, 1.0, 1.0])
    with pytest.raises(AssertionError, match="A GradScaler instance may only be pickled at the beginning of an "
                                             "iteration, or at the end after scaler.update()."):
        scaler.unscale_(opt)
        pickle.dumps(scaler)


def test_disabled_scaler_is_a_pass_through(device):
    p, opt, scaler = setup(device, enabled=False)
    loss = p.sum()
    assert scaler.scale(loss) is loss and scaler.get_scale() == 1.0 and not scaler.is_enabled()
    loss.backward()
    scaler.step(opt)
    np.testing.assert_allclose(host(p), [0.9, 1.9, 2.9], rtol=1e-6)
    scaler.update()
    assert scaler.state_dict() == {}


def test_grad_scaler_for_cuda_warns_and_disables_itself():
    with pytest.warns(UserWarning, match="torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                                         "Disabling."):
        scaler = npusim.amp.GradScaler()
    assert not scaler.is_enabled()


def test_npu_amp_grad_scaler_is_the_npu_scaler():
    with pytest.warns(FutureWarning, match=r"`npusim\.npu\.amp\.GradScaler\(args\.\.\.\)` is deprecated\. "
                                           r"Please use `npusim\.amp\.GradScaler\('npu', args\.\.\.\)` instead\."):
        scaler = npusim.npu.amp.GradScaler(init_scale=4.0)
    assert scaler.is_enabled() and scaler._device == "npu"
    p, opt, _ = setup("npu")
    out = scaler.scale(p.sum())
    assert out.item() == 24.0 and out.device.type == "npu"


def test_training_with_float16_gradients_needs_float32_master_weights():
    p = npusim.ones(3, device="npu", dtype=npusim.float16, requires_grad=True)
    opt = npusim.optim.SGD([p], lr=0.1)
    scaler = npusim.amp.GradScaler("npu")
    scaler.scale(p.float().sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        scaler.step(opt)


def test_misuse_raises_torchs_errors(device):
    p, opt, scaler = setup(device)
    with pytest.raises(AssertionError, match=r"Attempted step but _scale is None\.  This may indicate your script "
                                             r"did not use scaler\.scale\(loss or outputs\) earlier"):
        scaler.step(opt)
    with pytest.raises(AssertionError, match="Attempted update but _scale is None."):
        scaler.update()
    with pytest.raises(AssertionError, match="Attempted unscale_ but _scale is None."):
        scaler.unscale_(opt)
    backward_with_grad(scaler, p, [1.0, 1.0, 1.0])
    with pytest.raises(RuntimeError, match="Closure use is not currently supported if GradScaler is enabled."):
        scaler.step(opt, closure=lambda: 0)
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called on this optimizer since the last "
                                           r"update\(\)\."):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) is being called after step\(\)\."):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"step\(\) has already been called since the last update\(\)\."):
        scaler.step(opt)
    scaler.update()
    with pytest.raises(AssertionError, match="No inf checks were recorded prior to update."):
        scaler.update()
    with pytest.raises(AssertionError, match="new_scale should be a float or a 1-element"):
        scaler.update(npusim.tensor([1.0, 2.0], device=device))
    with pytest.raises(RuntimeError, match="The source state dict is empty, possibly because it was saved from a "
                                           "disabled instance of GradScaler."):
        scaler.load_state_dict({})
    with pytest.raises(AssertionError, match="The growth factor must be > 1.0."):
        npusim.amp.GradScaler(device, growth_factor=1.0)
    with pytest.raises(AssertionError, match="The backoff factor must be < 1.0."):
        npusim.amp.GradScaler(device, backoff_factor=1.0)


def test_grad_scaler_needs_a_real_device_type():
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, .* device type at start of device string: "
                                           "gpu"):
        npusim.amp.GradScaler("gpu")


def test_no_gradients_means_no_inf_checks(device):
    p, opt, scaler = setup(device)
    scaler.scale(p.sum())
    with pytest.raises(AssertionError, match="No inf checks were recorded for this optimizer."):
        scaler.step(opt)


# --- the oracle ------------------------------------------------------------------------------------------------

GRAD_SEQUENCE = [[1.0, 2.0, 3.0], [1.0, INF, 3.0], [0.5, 0.5, 0.5], [1.0, 1.0, 1.0], [float("nan"), 1.0, 1.0],
                 [2.0, 2.0, 2.0], [1.0, 1.0, 1.0], [3.0, 1.0, 1.0]]


@pytest.mark.oracle
def test_scale_params_and_state_follow_torch_step_by_step(torch, device):
    kw = dict(init_scale=2.0 ** 10, growth_factor=4.0, backoff_factor=0.25, growth_interval=2)
    p, opt, scaler = setup(device, **kw)
    tp = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    topt = torch.optim.SGD([tp], lr=0.1)
    tscaler = torch.amp.GradScaler("cpu", **kw)
    for grad in GRAD_SEQUENCE:
        opt.zero_grad()
        topt.zero_grad()
        backward_with_grad(scaler, p, grad)
        tscaler.scale((tp * torch.tensor(grad)).sum()).backward()
        scaler.step(opt)
        tscaler.step(topt)
        scaler.update()
        tscaler.update()
        assert scaler.state_dict() == tscaler.state_dict()
        np.testing.assert_allclose(host(p), tp.detach().numpy(), rtol=1e-6)
    ours, theirs = scaler.state_dict(), tscaler.state_dict()
    assert ours == theirs


@pytest.mark.oracle
def test_errors_match_torch(torch):
    tp = torch.tensor([1.0], requires_grad=True)
    topt = torch.optim.SGD([tp], lr=0.1)
    p, opt, scaler = setup("cpu", values=(1.0,))
    tscaler = torch.amp.GradScaler("cpu")
    for ours, theirs in [(lambda: scaler.step(opt), lambda: tscaler.step(topt)),
                         (lambda: scaler.load_state_dict({}), lambda: tscaler.load_state_dict({})),
                         (lambda: npusim.amp.GradScaler("cpu", growth_factor=0.5),
                          lambda: torch.amp.GradScaler("cpu", growth_factor=0.5))]:
        with pytest.raises(Exception) as a:
            ours()
        with pytest.raises(Exception) as b:
            theirs()
        assert type(a.value) is type(b.value) and str(a.value) == str(b.value)
