"""The npu's mixed precision: its ``AutocastPrivateUse1`` policies and ``npusim.npu.amp``.

``register()`` registers the policy kernels and the fallthrough fallback
(``autocast_registration``) and installs ``npusim.npu.amp`` (``npu_amp``) on the
device module. The AMP backend functions (``get_amp_supported_dtype``,
``is_autocast_enabled``...) live in the device module ``npusim.npu`` itself, where
the PrivateUse1 tutorial puts them.
"""
from __future__ import annotations


def register() -> None:
    """Register the npu's autocast kernels and install ``npusim.npu.amp`` (after the device module)."""
    from . import autocast_registration, npu_amp
    autocast_registration.register()
    npu_amp.install()
