"""``npusim.stft`` and ``npusim.istft`` (and their Tensor methods): torch's short-time Fourier transforms.

Both are aten composites (native/spectral_stft.py) over the FFT primitives, so gradients flow through the
frames, the window and the transforms as in torch.
"""
from __future__ import annotations

from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor

__all__ = ["stft", "istft"]


def _check_input(fname, input):  # noqa: A002 - torch's name
    if not isinstance(input, Tensor):
        raise TypeError(f"{fname}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",  # noqa: A002
         normalized=False, onesided=None, return_complex=None, align_to_window=None):
    """stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode='reflect', \
normalized=False, onesided=None, return_complex=None, align_to_window=None) -> Tensor

    The short-time Fourier transform: frames of ``n_fft`` samples every ``hop_length`` (default n_fft // 4),
    each multiplied by ``window`` (zero-padded to n_fft when shorter; all ones when None) and transformed.
    The result is (batch?, n_fft // 2 + 1 or n_fft, n_frames); ``return_complex`` must be given for a real
    input (True is the supported form). With ``center`` the signal's ends are first padded by n_fft // 2
    with ``pad_mode``; ``normalized`` scales by 1/sqrt(n_fft).
    """
    _check_input("stft", input)
    return aten.stft.center(input, n_fft, hop_length, win_length, window, center, pad_mode, normalized, onesided,
                            return_complex, align_to_window)


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,  # noqa: A002
          onesided=None, length=None, return_complex=False):
    """istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False, \
onesided=None, length=None, return_complex=False) -> Tensor

    The inverse of :func:`stft`: each frame transformed back, windowed again and overlap-added, divided by
    the overlapped squared window (which must not vanish anywhere in the kept range). ``length`` trims or
    zero-pads the signal to that many samples.
    """
    _check_input("istft", input)
    return aten.istft.default(input, n_fft, hop_length, win_length, window, center, normalized, onesided, length,
                              return_complex)


def _stft_method(self, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
                 normalized=False, onesided=None, return_complex=None, align_to_window=None):
    return stft(self, n_fft, hop_length, win_length, window, center, pad_mode, normalized, onesided, return_complex,
                align_to_window)


def _istft_method(self, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
                  onesided=None, length=None, return_complex=False):
    return istft(self, n_fft, hop_length, win_length, window, center, normalized, onesided, length, return_complex)


_stft_method.__name__ = _stft_method.__qualname__ = "stft"
_istft_method.__name__ = _istft_method.__qualname__ = "istft"
_stft_method.__doc__ = "stft(n_fft, hop_length=None, ...) -> Tensor\n\nSee :func:`npusim.stft`."
_istft_method.__doc__ = "istft(n_fft, hop_length=None, ...) -> Tensor\n\nSee :func:`npusim.istft`."
Tensor.stft = _stft_method
Tensor.istft = _istft_method
