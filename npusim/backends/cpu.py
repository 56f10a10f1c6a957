"""torch.backends.cpu: the vector instructions the CPU kernels can use (NumPy's dispatch sees the same CPU)."""
from __future__ import annotations


def get_cpu_capability() -> str:
    """ "AVX512", "AVX2" or "DEFAULT" on x86-64 (torch's names), from the CPU features NumPy detected."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:   # NumPy 1.x
        from numpy.core._multiarray_umath import __cpu_features__ as features
    if all(features.get(f) for f in ("AVX512F", "AVX512BW", "AVX512VL", "AVX512DQ")):
        return "AVX512"
    if features.get("AVX2") and features.get("FMA3"):
        return "AVX2"
    return "DEFAULT"
