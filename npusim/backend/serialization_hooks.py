"""The npu's backend metadata and how it rides in archives (TensorBackendMetaRegistry).

An npu tensor may carry a storage-format tag, the way Ascend NPU tensors carry
their ACL format: ``tensor._backend_meta = {"npu_format": 29}``. The emulation
keeps the data in plain strided layout whatever the tag says; the tag is what a
real device would use to pick kernels, and it must survive ``npusim.save`` /
``npusim.load``. The serialized map holds the format code and the version of
this layout, so a later layout can still read today's archives. Values are ints:
torch stores these maps as ``str -> bool`` and must be able to skip them.
"""
from __future__ import annotations

from ..privateuse1 import register_backend_meta_serialization

FORMAT_KEY = "npu_format"
VERSION_KEY = "npu_meta_version"
META_VERSION = 1

# ACL storage formats (codes as in CANN's aclFormat)
FORMATS = {"NCHW": 0, "NHWC": 1, "ND": 2, "NC1HWC0": 3, "FRACTAL_Z": 4, "NC1HWC0_C04": 12, "HWCN": 16,
           "NDHWC": 27, "FRACTAL_NZ": 29, "NCDHW": 30, "NDC1HWC0": 32, "FRACTAL_Z_3D": 33}
_KNOWN_CODES = frozenset(FORMATS.values())


def serialize(tensor, m: dict) -> None:
    meta = tensor._backend_meta
    if not meta:
        return
    m[FORMAT_KEY] = meta[FORMAT_KEY]
    m[VERSION_KEY] = META_VERSION


def deserialize(tensor, m: dict) -> None:
    version = m.get(VERSION_KEY, META_VERSION)
    if type(version) is not int or version < 1:
        raise RuntimeError(f"npu backend metadata: '{VERSION_KEY}' must be a positive int, got {version!r}")
    if version > META_VERSION:
        raise RuntimeError(f"npu backend metadata has version {version}, but this npusim reads versions up to "
                           f"{META_VERSION}: upgrade npusim, or load with map_location='cpu' to drop it")
    if FORMAT_KEY not in m:
        return
    code = m[FORMAT_KEY]
    if type(code) is not int or code not in _KNOWN_CODES:
        known = ", ".join(f"{name}={c}" for name, c in FORMATS.items())
        raise RuntimeError(f"npu backend metadata: '{FORMAT_KEY}' must be one of the format codes {known}; "
                           f"got {code!r}")
    tensor._backend_meta = {FORMAT_KEY: code}


register_backend_meta_serialization("npu", serialize, deserialize)
