"""``npusim.thread_safe_generator``: the generator random code in a DataLoader worker thread should use."""
from __future__ import annotations


def thread_safe_generator():
    """The calling DataLoader thread worker's own ``Generator``; ``None`` in the main process and in process
    workers, where the default generator is safe to use (npusim's workers are processes, so always ``None``
    until thread workers exist)."""
    from ..utils.data import get_worker_info
    info = get_worker_info()
    if info is not None and getattr(info, "worker_method", None) == "thread" and getattr(info, "rng", None):
        return info.rng.torch_generator
    return None


__all__ = ["thread_safe_generator"]
