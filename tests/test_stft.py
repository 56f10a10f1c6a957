"""npusim.stft / istft (and the Tensor methods) on cpu and npu.

Frames, windows and centring against a NumPy reference built from the definition, the round trip
istft(stft(x)) = x, torch's checks and messages, finite-difference gradients, and a grid of cases against
torch (``oracle``): values (float32 results within 1e-4 of the signal's scale: a length-8 FFT's float32 error
is a few eps times the sum of 8 windowed samples), dtypes, shapes and errors, and gradients.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import npusim

pytestmark = pytest.mark.skipif(not hasattr(npusim, "complex64"), reason="needs npusim's complex dtypes")

RNG = np.random.default_rng(5)
SIG = RNG.standard_normal(40)
SIG2 = RNG.standard_normal((3, 37))
HANN8 = np.hanning(8)


def _np(t):
    return t.detach().cpu().resolve_conj().numpy()


def _t(a, device, requires_grad=False):
    return None if a is None else npusim.tensor(a, device=device, requires_grad=requires_grad)


def _reference_stft(x, n_fft, hop, window, center=True, pad_mode="reflect", onesided=True):
    if center:
        x = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(n_fft // 2, n_fft // 2)], mode=pad_mode)
    n_frames = 1 + (x.shape[-1] - n_fft) // hop
    frames = np.stack([x[..., k * hop:k * hop + n_fft] for k in range(n_frames)], -2) * window
    spec = np.fft.rfft(frames, axis=-1) if onesided else np.fft.fft(frames, axis=-1)
    return np.swapaxes(spec, -1, -2)


@pytest.mark.parametrize("kw", [{}, {"center": False}, {"hop_length": 3}, {"pad_mode": "constant"},
                                {"onesided": False}])
def test_stft_matches_the_definition(device, kw):
    for x in (SIG, SIG2):
        r = npusim.stft(_t(x, device), 8, window=_t(HANN8, device), return_complex=True, **kw)
        want = _reference_stft(x, 8, kw.get("hop_length", 2), HANN8, kw.get("center", True),
                               kw.get("pad_mode", "reflect"), kw.get("onesided", True))
        assert r.dtype is npusim.complex128 and tuple(r.shape) == want.shape and r.device.type == device
        np.testing.assert_allclose(_np(r), want, atol=1e-12)


def test_stft_windows_shorter_than_n_fft_and_normalized(device):
    x = _t(SIG.astype(np.float32), device)
    short = np.hanning(6).astype(np.float32)
    r = npusim.stft(x, 8, win_length=6, window=_t(short, device), normalized=True, return_complex=True)
    assert r.dtype is npusim.complex64
    padded = np.concatenate([[0.0], short, [0.0]])
    want = _reference_stft(SIG, 8, 2, padded) / np.sqrt(8)
    np.testing.assert_allclose(_np(r), want, atol=1e-5)
    window = _t(HANN8.astype(np.float32), device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        real = npusim.stft(x, 8, window=window, return_complex=False)   # deprecated: the real view
    assert real.shape == (5, 21, 2) and real.dtype is npusim.float32
    np.testing.assert_array_equal(_np(x.stft(8, window=window, return_complex=True)),
                                  _np(npusim.view_as_complex(real)))


@pytest.mark.parametrize("kw", [{}, {"hop_length": 2}, {"normalized": True}, {"center": False}])
def test_istft_inverts_stft(device, kw):
    window = _t(np.hanning(10)[1:-1] if kw.get("center", True) else np.ones(8), device)
    for x in (SIG, SIG2[:, :36]):   # frames cover every sample: (length - n_fft) a multiple of the hop
        spec = npusim.stft(_t(x, device), 8, window=window, return_complex=True, **kw)
        y = npusim.istft(spec, 8, window=window, length=x.shape[-1], **kw)
        assert y.dtype is npusim.float64 and y.shape == x.shape
        np.testing.assert_allclose(_np(y), x, atol=1e-12)
        np.testing.assert_allclose(_np(spec.istft(8, window=window, length=x.shape[-1], **kw)), x, atol=1e-12)


def test_istft_length_pads_and_return_complex(device):
    window = _t(np.ones(8), device)   # a Hann window's envelope vanishes at the padded ends: torch refuses it
    spec = npusim.stft(_t(SIG, device), 8, window=window, return_complex=True, onesided=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = npusim.istft(spec, 8, window=window, length=60, return_complex=True)
    assert y.dtype is npusim.complex128 and y.shape == (60,)
    np.testing.assert_allclose(_np(y)[:40], SIG, atol=1e-12)
    np.testing.assert_allclose(_np(y)[44:], 0)   # 40 samples, 4 of the reflected padding, then zeros


@pytest.mark.parametrize("call,message", [
    (lambda x, w: npusim.stft(x, 8, window=w), "stft requires the return_complex parameter be given for real "
                                               "inputs"),
    (lambda x, w: npusim.stft(x, 8, window=w, return_complex=True, align_to_window=True),
     "stft align_to_window should only be set when center = false"),
    (lambda x, w: npusim.stft(x, 64, return_complex=True, center=False),
     r"stft\(npusim\.(npu\.)?DoubleTensor\[40\], n_fft=64, hop_length=16, win_length=64, window=None, "
     r"normalized=0, onesided=None, return_complex=1, align_to_window=None\) : expected 0 < n_fft < 40, but got "
     r"n_fft=64"),
    (lambda x, w: npusim.stft(x, 8, hop_length=0, window=w, return_complex=True),
     "expected hop_length > 0, but got hop_length=0"),
    (lambda x, w: npusim.stft(x, 8, window=w[:5], return_complex=True),
     r"expected a 1D window tensor of size equal to win_length=8, but got window with size \[5\]"),
    (lambda x, w: npusim.stft(x.reshape(2, 2, 10), 8, window=w, return_complex=True), "expected a 1D or 2D tensor"),
    (lambda x, w: npusim.stft(x.long(), 8, window=w, return_complex=True),
     "expected a tensor of floating point or complex values"),
    (lambda x, w: npusim.istft(x, 8), "istft requires a complex-valued input tensor matching the output from stft"),
    (lambda x, w: npusim.istft(npusim.stft(x, 8, window=w, return_complex=True), 8, hop_length=9),
     "expected 0 < hop_length <= win_length"),
    (lambda x, w: npusim.istft(npusim.stft(x, 8, window=w, return_complex=True), 10),
     r"expected the frequency dimension \(3rd to the last\) of the input tensor to match n_fft / 2 \+ 1 when "
     "onesided=True, but got 5"),
    (lambda x, w: npusim.istft(npusim.stft(x, 8, window=w, return_complex=True), 8, window=w * 0),
     "window overlap add min: 1"),
])
def test_errors_are_torchs(device, call, message):
    with pytest.raises(RuntimeError, match=message):
        call(_t(SIG, device), _t(HANN8, device))


def test_complex_input_is_two_sided(device):
    x = SIG + 1j * SIG[::-1]
    r = npusim.stft(_t(x, device), 8, window=_t(HANN8, device))
    assert r.dtype is npusim.complex128 and r.shape == (8, 21)
    np.testing.assert_allclose(_np(r), _reference_stft(x, 8, 2, HANN8, onesided=False), atol=1e-12)
    with pytest.raises(RuntimeError, match="Cannot have onesided output if window or input is complex"):
        npusim.stft(_t(x, device), 8, window=_t(HANN8, device), onesided=True)


def _numeric_grad(f, x, eps=1e-6):
    grad = np.zeros(x.shape, dtype=x.dtype)
    steps = (1.0, 1j) if np.iscomplexobj(x) else (1.0,)
    for idx in np.ndindex(x.shape):
        for step in steps:
            e = np.zeros(x.shape, dtype=x.dtype)
            e[idx] = eps * step
            grad[idx] += step * (f(x + e) - f(x - e)) / (2 * eps)
    return grad


def test_gradients_match_finite_differences(device):
    x = SIG[:16]
    w_out = RNG.standard_normal((5, 9, 2))

    def loss_np(a):
        r = _np(npusim.stft(npusim.tensor(a), 8, window=npusim.tensor(HANN8), return_complex=True))
        return float((np.stack([r.real, r.imag], -1) * w_out).sum())
    xt = _t(x, device, requires_grad=True)
    win = _t(HANN8, device, requires_grad=True)
    spec = npusim.stft(xt, 8, window=win, return_complex=True)
    (npusim.view_as_real(spec) * _t(w_out, device)).sum().backward()
    np.testing.assert_allclose(_np(xt.grad), _numeric_grad(loss_np, x), atol=1e-6)
    assert win.grad is not None and win.grad.shape == (8,)

    spec_np = _np(npusim.stft(npusim.tensor(x), 8, window=npusim.tensor(HANN8), return_complex=True))
    w_sig = RNG.standard_normal(16)

    def inverse_loss(s):
        return float((_np(npusim.istft(npusim.tensor(s), 8, window=npusim.tensor(HANN8), length=16)) * w_sig).sum())
    st = _t(spec_np, device, requires_grad=True)
    (npusim.istft(st, 8, window=_t(HANN8, device), length=16) * _t(w_sig, device)).sum().backward()
    np.testing.assert_allclose(_np(st.grad), _numeric_grad(inverse_loss, spec_np), atol=1e-6)


# --- against torch -------------------------------------------------------------------------------------------------

def _torch_and_npusim(torch, device, fname, arr, win, kw):
    results = []
    for lib, make in ((torch, lambda a: None if a is None else torch.from_numpy(a)), (npusim, lambda a: _t(a, device))):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                results.append(getattr(lib, fname)(make(arr), window=make(win), **kw))
        except Exception as e:  # noqa: BLE001 - the error itself is compared
            results.append(e)
    return results


def _same_error(want, got, device):
    text = str(want).replace("torch.", "npusim.")
    if device != "cpu":   # torch's message names the cpu tensor types
        text = text.replace("npusim.", "npusim.npu.").replace("CPU", "NPU")
    assert type(got) is type(want) and str(got) == text


@pytest.mark.oracle
def test_stft_matches_torch(torch, device):
    x1, xc = SIG.astype(np.float32), (SIG + 1j * SIG[::-1]).astype(np.complex64)
    h6 = np.hanning(6)
    for arr in (x1, SIG2, xc):
        for win in (None, HANN8.astype(np.float32), h6, HANN8.astype(np.complex64)):
            wl = 6 if win is h6 else None
            for kw in (dict(return_complex=True), dict(), dict(return_complex=False),
                       dict(return_complex=True, center=False), dict(return_complex=True, hop_length=3, win_length=wl),
                       dict(return_complex=True, normalized=True, onesided=False),
                       dict(return_complex=True, pad_mode="constant"), dict(return_complex=True, pad_mode="replicate"),
                       dict(return_complex=True, center=False, align_to_window=True, win_length=wl, hop_length=3),
                       dict(return_complex=True, align_to_window=False), dict(return_complex=True, hop_length=0),
                       dict(return_complex=True, win_length=9), dict(return_complex=True, onesided=True)):
                want, got = _torch_and_npusim(torch, device, "stft", arr, win, dict(n_fft=8, **kw))
                if isinstance(want, Exception) or isinstance(got, Exception):
                    _same_error(want, got, device)
                    continue
                assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
                assert tuple(got.shape) == tuple(want.shape)
                np.testing.assert_allclose(_np(got), want.resolve_conj().numpy(), rtol=0, atol=1e-4)


@pytest.mark.oracle
def test_istft_matches_torch(torch, device):
    h6 = np.hanning(6)
    for arr in (SIG.astype(np.float32), SIG2):
        for win in (None, HANN8, h6):
            wl = 6 if win is h6 else None
            for kw in (dict(), dict(normalized=True), dict(center=False), dict(hop_length=2), dict(onesided=False),
                       dict(length=30), dict(length=60), dict(return_complex=True)):
                spec = torch.stft(torch.from_numpy(arr), 8, window=None if win is None else torch.from_numpy(win),
                                  win_length=wl, return_complex=True, hop_length=kw.get("hop_length"),
                                  normalized=kw.get("normalized", False), center=kw.get("center", True),
                                  onesided=False if kw.get("return_complex") else kw.get("onesided"))
                want, got = _torch_and_npusim(torch, device, "istft", spec.numpy(), win,
                                              dict(n_fft=8, win_length=wl, **kw))
                if isinstance(want, Exception) or isinstance(got, Exception):
                    _same_error(want, got, device)
                    continue
                assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
                np.testing.assert_allclose(_np(got), want.numpy(), rtol=0, atol=1e-4)
    spec = torch.stft(torch.from_numpy(SIG), 8, window=torch.ones(8), return_complex=True).numpy()
    for arr, kw in ((spec, dict(n_fft=8, hop_length=9)), (spec, dict(n_fft=8, win_length=9)),
                    (spec, dict(n_fft=10)), (spec, dict(n_fft=14, onesided=True)), (spec.real.copy(), dict(n_fft=8)),
                    (spec[:, :0], dict(n_fft=8)), (spec[0], dict(n_fft=8))):
        want, got = _torch_and_npusim(torch, device, "istft", arr, None, kw)
        _same_error(want, got, device)


@pytest.mark.oracle
def test_gradients_match_torch(torch, device):
    x = SIG[:24]
    w_out = RNG.standard_normal((5, 13, 2))
    spec_np = torch.stft(torch.from_numpy(x), 8, window=torch.ones(8), hop_length=2, return_complex=True).numpy()
    grads = []
    for lib, make in ((torch, torch.from_numpy), (npusim, lambda a: _t(a, device))):
        xs, win = make(x).requires_grad_(), make(np.hanning(8)).requires_grad_()
        spec = lib.stft(xs, 8, window=win, hop_length=2, return_complex=True)
        (lib.view_as_real(spec) * make(w_out)).sum().backward()
        s, win2 = make(spec_np).requires_grad_(), make(np.hanning(8)).requires_grad_()
        y = lib.istft(s, 8, window=win2, hop_length=2, length=24)
        (y * y).sum().backward()
        grads.append([xs.grad, win.grad, s.grad, win2.grad])
    for want, got in zip(*grads):
        np.testing.assert_allclose(_np(got), want.resolve_conj().numpy(), atol=1e-9)
