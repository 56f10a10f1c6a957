"""Whether the engine holds a leaf's first gradient to the gradient layout contract (the thread's setting).

Enforced (the default), a leaf that is not row-major contiguous gets its gradient copied into its own layout. Relaxed
(``autograd.enforce_grad_layout_policy(False)``), a gradient nothing else refers to is kept as it came, whatever its
layout, sparing the copy; one that must be copied is still copied into the leaf's layout (torch's rule).
"""
from __future__ import annotations

import threading


class _PolicyTLS(threading.local):
    def __init__(self):
        self.enforced = True


tls = _PolicyTLS()
