"""The Philox4x64-10 stream on a GPU: one CUDA thread per counter block.

Mirrors ``random.philox4x64_reference`` (and so NumPy's C Philox): block ``b``
of a draw starting at counter ``c`` is philox(c + 1 + b, (key, 0)), the counter
a 256-bit number (a wrapped low word carries into the next), and its four
words are values 4b..4b+3. The kernel is declared through ``cuda_registry``
and compiled once, on first use.
"""
from __future__ import annotations

from . import cuda_registry as cuda

_SOURCE = r"""
extern "C" __global__
void philox4x64_raw(unsigned long long key, unsigned long long counter, unsigned long long n,
                    unsigned long long* out) {
    unsigned long long b = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long nblocks = (n + 3) / 4;
    if (b >= nblocks) return;
    unsigned long long c0 = counter + 1 + b, c2 = 0, c3 = 0;
    // the counter is NumPy's 256-bit one: a low word that wraps carries into the next word
    unsigned long long c1 = c0 < counter ? 1ULL : 0ULL;
    unsigned long long k0 = key, k1 = 0;
    const unsigned long long M0 = 0xD2E7470EE14C6C93ULL, M1 = 0xCA5A826395121157ULL;
    const unsigned long long W0 = 0x9E3779B97F4A7C15ULL, W1 = 0xBB67AE8584CAA73BULL;
    #pragma unroll
    for (int r = 0; r < 10; ++r) {
        if (r) { k0 += W0; k1 += W1; }
        unsigned long long hi0 = __umul64hi(M0, c0), lo0 = M0 * c0;
        unsigned long long hi1 = __umul64hi(M1, c2), lo1 = M1 * c2;
        unsigned long long n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
    }
    unsigned long long base = 4 * b;
    if (base < n) out[base] = c0;
    if (base + 1 < n) out[base + 1] = c1;
    if (base + 2 < n) out[base + 2] = c2;
    if (base + 3 < n) out[base + 3] = c3;
}
"""

_WORD = cuda.numpy_scalar("uint64")    # each scalar goes as a NumPy uint64: a 64-bit unsigned parameter
PHILOX_RAW = cuda.raw("philox4x64_raw", _SOURCE, calls=[(_WORD, _WORD, _WORD, cuda.array_of("uint64"))])

_kernel = None


def philox_raw(key: int, counter: int, n: int):
    """``n`` raw words on the current CUDA device (cupy uint64 array)."""
    global _kernel
    import cupy
    if _kernel is None:
        _kernel = cuda.build(PHILOX_RAW, cupy)
    out = cupy.empty(n, dtype=cupy.uint64)
    if n:
        nblocks = (n + 3) // 4
        threads = 256
        _kernel(((nblocks + threads - 1) // threads,), (threads,),
                (cupy.uint64(key & 0xFFFFFFFFFFFFFFFF), cupy.uint64(counter & 0xFFFFFFFFFFFFFFFF),
                 cupy.uint64(n), out))
    return out
