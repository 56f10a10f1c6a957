"""stft and istft as ATen's composites (SpectralOps.cpp): frames cut with unfold, windowed, transformed by
_fft_r2c / _fft_c2c, and, for istft, transformed back, windowed again and overlap-added with index_add
(ATen's unfold_backward) before dividing by the summed squared window.

Messages, warnings and their order are torch's; a tensor is named by its legacy type
(``npusim.FloatTensor``) where torch prints ``torch.FloatTensor``.
"""
from __future__ import annotations

import warnings

from ..core.c10 import dtype as D
from ..core.c10.user_frames import user_stacklevel
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import _wrap_dim
from ..kernels.fft import BY_N, BY_ROOT_N, NONE

_warned = set()


def _warn_once(key, message):
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, UserWarning, stacklevel=user_stacklevel())


def _opt(v):
    return "None" if v is None else str(int(v) if isinstance(v, bool) else v)


def _type_name(t):
    """torch's Tensor::toString: the legacy type name, and "CPUComplexFloatType" for the types without one."""
    if t.dtype.is_complex:
        return f"{t.device.type.upper()}{D.SCALAR_TYPE_NAME[t.dtype]}Type"
    return t.type()


def _tensor_repr(t):
    return f"{_type_name(t)}{list(t.shape)}"


def _window_repr(window):
    return "None" if window is None else f"{_type_name(window)}{{{list(window.shape)}}}"


def per_part(x, fn):
    """``fn(x)``; for a complex ``x``, ``fn`` of its real and imaginary parts put together again."""
    if not x.dtype.is_complex:
        return fn(x)
    x = aten.resolve_conj.default(x)
    return aten.complex.default(fn(aten.real.default(x)), fn(aten.imag.default(x)))


def mul_complex(a, b):
    """a * b (broadcast) where either may be complex, through real views: the dtypes promote as torch's."""
    if not (a.dtype.is_complex or b.dtype.is_complex):
        return aten.mul.Tensor(a, b)
    if not b.dtype.is_complex:
        a, b = b, a
    # b is complex from here
    if not a.dtype.is_complex:   # real times complex: scale both parts
        return aten.view_as_complex.default(aten.mul.Tensor(aten.unsqueeze.default(a, -1),
                                                            aten.view_as_real.default(aten.resolve_conj.default(b))))
    ar = aten.view_as_real.default(aten.resolve_conj.default(a))
    br = aten.view_as_real.default(aten.resolve_conj.default(b))
    a_re, a_im = aten.select.int(ar, -1, 0), aten.select.int(ar, -1, 1)
    b_re, b_im = aten.select.int(br, -1, 0), aten.select.int(br, -1, 1)
    re = aten.sub.Tensor(aten.mul.Tensor(a_re, b_re), aten.mul.Tensor(a_im, b_im))
    im = aten.add.Tensor(aten.mul.Tensor(a_re, b_im), aten.mul.Tensor(a_im, b_re))
    return aten.view_as_complex.default(aten.stack.default([re, im], -1))


def _check_window_device(name, self, window):
    if window is not None and window.device != self.device:
        raise RuntimeError(f"{name} input and window must be on the same device but got self on {self.device} and "
                           f"window on {window.device}")


def _centered_window(window, n_fft, win_length, like):
    """The window zero-padded on both sides to n_fft (all ones when None), as ATen centres a short one."""
    if window is None:
        window = aten.ones.default([win_length], dtype=like.dtype, device=like.device)
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = aten.constant_pad_nd.default(window, [left, n_fft - win_length - left], 0)
    return window


def stft(self, n_fft, hop_length=None, win_length=None, window=None, normalized=False, onesided=None,
         return_complex=None, align_to_window=None):
    _check_window_device("stft", self, window)
    if window is None:
        _warn_once("stft_window", "A window was not provided. A rectangular window will be applied,which is known "
                   "to cause spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are "
                   "recommended to reduce spectral leakage.To suppress this warning and use a rectangular window, "
                   "explicitly set `window=torch.ones(n_fft, device=<device>)`.")
    hop = n_fft >> 2 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    complex_result = (self.dtype.is_complex or (window is not None and window.dtype.is_complex)
                      if return_complex is None else return_complex)
    if not complex_result:
        if return_complex is None:
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will "
                               "further require that return_complex=True in a future PyTorch release.")
        _warn_once("stft_real", "stft with return_complex=False is deprecated. In a future pytorch release, stft "
                   "will return complex tensors for all inputs, and return_complex=False will raise an error.\n"
                   "Note: you can still call torch.view_as_real on the complex output to recover the old return "
                   "format.")

    def fail(what):
        raise RuntimeError(
            f"stft({_tensor_repr(self)}, n_fft={n_fft}, hop_length={hop}, win_length={win}, "
            f"window={_window_repr(window)}, normalized={int(bool(normalized))}, onesided={_opt(onesided)}, "
            f"return_complex={_opt(return_complex)}, align_to_window={_opt(align_to_window)}) : {what}")

    if not (self.dtype.is_floating_point or self.dtype.is_complex):
        fail("expected a tensor of floating point or complex values")
    if self.dim() not in (1, 2):
        fail("expected a 1D or 2D tensor")
    x = aten.unsqueeze.default(self, 0) if self.dim() == 1 else self
    length = x.shape[1]
    if n_fft <= 0 or n_fft > length:
        fail(f"expected 0 < n_fft < {length}, but got n_fft={win}")
    if hop <= 0:
        fail(f"expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        fail(f"expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        fail(f"expected a 1D window tensor of size equal to win_length={win}, but got window with size "
             f"{list(window.shape)}")
    full_window = _centered_window(window, n_fft, win, self) if (window is not None or win < n_fft) else None
    if align_to_window:
        # the window's start, not the frame's, sits at each hop: frames counted by the window's length
        n_frames = 1 + (length - win) // hop
        left = (n_fft - win) // 2
        right = (n_frames - 1) * hop + n_fft - length - left
        if right < 0:
            x, right = aten.slice.Tensor(x, 1, 0, length + right), 0
        x = per_part(x, lambda p: aten.constant_pad_nd.default(p, [left, right], 0))
    frames = per_part(x, lambda p: aten.unfold.default(p, -1, n_fft, hop))   # (batch, n_frames, n_fft)
    if full_window is not None:
        frames = mul_complex(frames, full_window)
    complex_fft = frames.dtype.is_complex
    one_sided = (not complex_fft) if onesided is None else onesided
    mode = BY_ROOT_N if normalized else NONE
    if complex_fft:
        if one_sided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        out = aten._fft_c2c.default(frames, [2], mode, True)
    else:
        if frames.dtype.itemsize == 2:
            raise RuntimeError(f"MKL FFT doesn't support tensors of type: {D.SCALAR_TYPE_NAME[frames.dtype]}")
        out = aten._fft_r2c.default(frames, [2], mode, one_sided)
    out = aten.transpose.int(out, 1, 2)
    if self.dim() == 1:
        out = aten.squeeze.dim(out, 0)
    return out if complex_result else aten.view_as_real.default(out)


def stft_center(self, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
                normalized=False, onesided=None, return_complex=None, align_to_window=None):
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if center:   # torch.stft pads the signal's ends by n_fft // 2 with F.pad's pad_mode
        signal_dim = self.dim()
        extended = [1] * (3 - signal_dim) + list(self.shape)
        pad = n_fft // 2
        padded = per_part(aten.view.default(self, extended), lambda p: aten.pad.default(p, [pad, pad], pad_mode))
        self = aten.view.default(padded, list(padded.shape[-signal_dim:]))
    return stft(self, n_fft, hop_length, win_length, window, normalized, onesided, return_complex,
                align_to_window)


def istft(self, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    _check_window_device("istft", self, window)
    hop = n_fft >> 2 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if not self.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")

    def fail(what):
        raise RuntimeError(
            f"istft({_tensor_repr(self)}, n_fft={n_fft}, hop_length={hop}, win_length={win}, "
            f"window={_window_repr(window)}, center={int(bool(center))}, normalized={int(bool(normalized))}, "
            f"onesided={_opt(onesided)}, length={_opt(length)}, return_complex={int(bool(return_complex))}) "
            f"{what}")

    for d in (-2, -3):   # torch reads the frame and frequency sizes of the real view before any check
        _wrap_dim(d, self.dim() + 1)
    if self.numel() == 0:
        fail(": input tensor cannot be empty.")
    if self.dim() not in (2, 3):
        fail(f": expected a tensor with 3 or 4 dimensions of complex dtype, but got {self.dim() + 1}")
    n_frames, fft_size = self.shape[-1], self.shape[-2]
    one_sided = (fft_size != n_fft) if onesided is None else onesided
    if one_sided:
        if n_fft // 2 + 1 != fft_size:
            fail(": expected the frequency dimension (3rd to the last) of the input tensor to match n_fft / 2 + 1 "
                 f"when onesided=True, but got {fft_size}")
    elif n_fft != fft_size:
        fail(": expected the frequency dimension (3rd to the last) of the input tensor to match n_fft when "
             f"onesided=False, but got {fft_size}")
    if not 0 < hop <= win:
        fail(": expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        fail(": expected 0 < win_length <= n_fft")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        fail(": Invalid window shape. window has to be 1D and length of `win_length`")
    real_dtype = self.dtype.to_real()
    full_window = _centered_window(window, n_fft, win, aten.empty.memory_format(
        [0], dtype=real_dtype, device=self.device))
    x = aten.unsqueeze.default(self, 0) if self.dim() == 2 else self
    x = aten.transpose.int(x, 1, 2)   # (channel, n_frames, fft_size)
    mode = BY_ROOT_N if normalized else BY_N
    if return_complex:
        if one_sided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = aten._fft_c2c.default(x, [2], mode, False)
    else:
        if window is not None and window.dtype.is_complex:
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not one_sided:
            x = aten.slice.Tensor(x, -1, 0, n_fft // 2 + 1)
        frames = aten._fft_c2r.default(x, [2], mode, n_fft)   # (channel, n_frames, n_fft)
    frames = mul_complex(frames, full_window)
    expected_len = n_fft + hop * (n_frames - 1)
    y = per_part(frames, lambda p: _overlap_add(p, hop, expected_len))
    envelope = _overlap_add(aten.expand.default(aten.pow.Tensor_Scalar(full_window, 2), [1, n_frames, n_fft]),
                            hop, expected_len)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    else:
        end = expected_len - n_fft // 2 if center else expected_len
    y = aten.slice.Tensor(y, 1, start, end)
    envelope = aten.slice.Tensor(envelope, 1, start, end)
    lowest = aten.abs.default(envelope)
    if lowest.numel() and bool(aten.lt.Scalar(aten.min.default(lowest), 1e-11).item()):
        # torch prints the bool tensor of its check
        fail(f"window overlap add min: 1\n[ {self.device.type.upper()}BoolType{{}} ]")
    y = per_part(y, lambda p: aten.div.Tensor(p, envelope))
    if self.dim() == 2:
        y = aten.squeeze.dim(y, 0)
    if end > expected_len:
        _warn_once("istft_length", "The length of signal is shorter than the length parameter. Result is being "
                   "padded with zeros in the tail. Please check your center and hop_length settings.")
        y = per_part(y, lambda p: aten.constant_pad_nd.default(p, [0, end - expected_len], 0))
    return y


def _overlap_add(frames, hop, total):
    """Sum the (channel, n_frames, n_fft) frames into (channel, total), frame k starting at k * hop."""
    channels, n_frames, n_fft = frames.shape
    kw = {"dtype": frames.dtype, "device": frames.device}
    index = aten.add.Tensor(aten.unsqueeze.default(aten.mul.Scalar(
        aten.arange.default(n_frames, dtype=D.int64, device=frames.device), hop), 1),
        aten.arange.default(n_fft, dtype=D.int64, device=frames.device))
    out = aten.zeros.default([channels, total], **kw)
    return aten.index_add.default(out, 1, aten.reshape.default(index, [-1]),
                                  aten.reshape.default(frames, [channels, n_frames * n_fft]))


COMPOSITE_IMPLICIT = {"stft": stft, "stft.center": stft_center, "istft": istft}
