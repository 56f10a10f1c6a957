"""The CuPy stand-in holds code to CuPy's rules (it runs in a child: the main suite may hold real CuPy)."""
from __future__ import annotations

import os
import subprocess
import sys

STANDIN = os.path.join(os.path.dirname(__file__), "cupy_standin")

_PROGRAM = r'''
import numpy as np, ml_dtypes, cupy
assert cupy._NPUSIM_STANDIN
a = cupy.arange(6, dtype=cupy.float32).reshape(2, 3)
assert type(a) is cupy.ndarray and not isinstance(a, np.ndarray)

def raises(exc, fn, text=""):
    try:
        fn()
    except exc as e:
        assert text in str(e), (text, str(e))
    else:
        raise AssertionError(f"no {exc.__name__}")

raises(TypeError, lambda: np.asarray(a), "Implicit conversion to a NumPy array is not allowed")
raises(TypeError, lambda: cupy.add(a, np.ones(3)), "Unsupported type")
raises(TypeError, lambda: a + np.ones(3), "Unsupported type")
raises(AttributeError, lambda: a.flags.writeable)
raises(AttributeError, lambda: cupy.nditer)        # not a CuPy name
assert type(a.sum()) is cupy.ndarray and a.sum().ndim == 0   # 0-d arrays, never scalars
assert type(np.add(a, 1)) is cupy.ndarray                     # NumPy ufuncs route to CuPy's
raises(TypeError, lambda: cupy.add.at(cupy.zeros(3, cupy.int64), cupy.array([0]), 1), "scatter_add")
raises(TypeError, lambda: cupy.bitwise_and(cupy.zeros(2, ml_dtypes.bfloat16), 1), "Wrong type")
raises(TypeError, lambda: cupy.matmul(cupy.ones((2, 2), ml_dtypes.bfloat16), cupy.ones((2, 2), ml_dtypes.bfloat16)))
cupy.matmul(a, a.T)

cupy._standin_reset_counts()
float(a.sum()); a.tolist(); a.get(); int(a[0, 0]); a[a > 2]
assert cupy._standin_counts() == {"host_syncs": 5, "h2d_copies": 0}, cupy._standin_counts()
cupy.asarray(np.ones(2))
assert cupy._standin_counts()["h2d_copies"] == 1

k = cupy.ElementwiseKernel("T x, T y, S alpha", "T z", "z = x + alpha * y", "k")
raises(KeyError, lambda: k(a, a, np.float32(2)))               # CuPy issue 2091
k2 = cupy.ElementwiseKernel("T x, T y, float32 alpha", "T z", "z = x + alpha * y", "k2")
assert k2(a, a, np.float32(2)).get().tolist() == (np.arange(6.).reshape(2, 3) * 3).tolist()

with cupy.cuda.Device(1):
    b = cupy.ones(3)
raises(ValueError, lambda: b + 1, "Array device must be same as the current device")
assert a.T.get(order="C").flags.c_contiguous                   # get() does not keep strides

# launches from several host threads at once each see their own blockIdx/threadIdx (as each GPU launch does)
import threading
iota = cupy.RawKernel(r"""extern "C" __global__ void iota(unsigned int n, unsigned int* out) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = 0;
    for (int k = 0; k < 64; ++k) out[i] += 1;   // a write that may alias the indices: they are read again
    out[i] += blockIdx.x * blockDim.x + threadIdx.x - 64;
}""", "iota")
bad = []
def launch():
    for _ in range(20):
        out = cupy.empty(20000, dtype=cupy.uint32)
        iota((79,), (256,), (np.uint32(20000), out))
        if not (out.get() == np.arange(20000)).all():
            bad.append(1)
threads = [threading.Thread(target=launch) for _ in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
assert not bad, f"{len(bad)} launches from threads wrote wrong indices"
print("ok")
'''


def test_standin_follows_cupys_rules():
    env = dict(os.environ, PYTHONPATH=STANDIN + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]
