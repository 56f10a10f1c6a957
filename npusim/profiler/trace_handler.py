"""``tensorboard_trace_handler``: an ``on_trace_ready`` that writes each finished cycle as a Chrome trace file in a
directory TensorBoard's profiler plugin reads (``<worker>.<time_ns>.pt.trace.json``, as torch names them)."""
from __future__ import annotations

import os
import socket
import time


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None, use_gzip: bool = False,
                              use_python_export: bool = False):
    """A handler for ``profile(on_trace_ready=...)`` writing every trace into ``dir_name`` (made if missing).

    ``worker_name`` tells the workers of a distributed run apart (default ``<hostname>_<pid>``); ``use_gzip``
    writes ``.pt.trace.json.gz``. ``use_python_export`` is accepted for torch's signature: npusim's exporter is
    always its Python one.
    """
    def handler_fn(prof) -> None:
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        # nanoseconds: two traces of one worker never share a name
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json"
        if use_gzip:
            file_name = file_name + ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, file_name))

    return handler_fn


__all__ = ["tensorboard_trace_handler"]
