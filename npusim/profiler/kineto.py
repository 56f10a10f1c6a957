"""What npusim's profiler is built on: not torch's Kineto library, and not Meta's internal (fbcode) build.

npusim's ``profile`` records host ops through record_function callbacks and npu kernels through the backend's
profiler hooks, and writes its traces itself.
"""
from __future__ import annotations


def kineto_available() -> bool:
    """False: npusim's profiler does not use the Kineto library."""
    return False


def is_fbcode() -> bool:
    """False: this is not Meta's internal build of torch."""
    return False


__all__ = ["kineto_available", "is_fbcode"]
