"""cupy.cuda.runtime for the stand-in's devices."""
from __future__ import annotations

from .. import _core as K

is_hip = False


class CUDARuntimeError(RuntimeError):
    def __init__(self, status=0, msg=""):
        self.status = status
        super().__init__(msg or f"CUDA runtime error {status}")


def getDeviceCount():
    return K.DEVICE_COUNT


def getDevice():
    return K.CURRENT.device


def setDevice(index):
    if not 0 <= index < K.DEVICE_COUNT:
        raise CUDARuntimeError(101, "cudaErrorInvalidDevice: invalid device ordinal")
    K.CURRENT.device = index


def deviceSynchronize():
    pass


def runtimeGetVersion():
    return 13000


def driverGetVersion():
    return 13000


def getDeviceProperties(index):
    if not 0 <= index < K.DEVICE_COUNT:
        raise CUDARuntimeError(101, "cudaErrorInvalidDevice: invalid device ordinal")
    return {"name": b"CuPy stand-in (host memory)", "totalGlobalMem": K.CAPACITY, "major": 9, "minor": 0,
            "multiProcessorCount": 132, "warpSize": 32, "maxThreadsPerBlock": 1024, "uuid": bytes(16),
            "pciBusID": index, "pciDeviceID": 0, "pciDomainID": 0, "l2CacheSize": 50 * 2**20,
            "clockRate": 1_980_000, "memoryClockRate": 2_619_000, "memoryBusWidth": 5120,
            "integrated": 0, "isMultiGpuBoard": 0}


def memGetInfo():
    from .memory import _pool
    dev = K.CURRENT.device
    used = _pool._used[dev] + _pool._cached[dev]
    return K.CAPACITY - used, K.CAPACITY
