"""Names programs reach for at torch's own paths: nn classes in their torch.nn.modules files, Tensor predicates."""
from __future__ import annotations

import importlib
import inspect

import pytest

import npusim
from npusim.core.c10.device import map_device_type

# torch.nn classes npusim does not have yet (issue tracker), or keeps out (Container, NLLLoss2d: deprecated)
NOT_HERE = {"CTCLoss", "Container", "NLLLoss2d", "SyncBatchNorm"}


@pytest.mark.oracle
def test_nn_classes_live_at_torchs_module_paths(torch):
    misplaced = []
    for name in dir(torch.nn):
        cls = getattr(torch.nn, name)
        if not inspect.isclass(cls) or not cls.__module__.startswith("torch.nn.modules") or name in NOT_HERE:
            continue
        path = "npusim" + cls.__module__[len("torch"):]
        try:
            module = importlib.import_module(path)
        except ModuleNotFoundError:
            misplaced.append(f"{path} (no such module) for {name}")
            continue
        if getattr(module, name, None) is not getattr(npusim.nn, name, None):
            misplaced.append(f"{path}.{name}")
    assert not misplaced, misplaced


@pytest.mark.oracle
def test_tensors_have_torchs_device_predicates(torch, device):
    t = torch.ones(1)
    predicates = [n for n in dir(t) if n.startswith("is_") and not callable(getattr(t, n))]
    ours = npusim.ones(1, device=device)
    missing = [n for n in predicates if not hasattr(ours, n)]
    assert not missing
    for n in predicates:
        if n not in ("is_cpu", "is_leaf", "is_cuda"):
            assert getattr(ours, n) is False, n
    assert ours.is_cpu == (device == "cpu") and ours.is_leaf


def test_is_cuda_follows_the_device_map():
    if not npusim.npu.is_available():
        pytest.skip("no npu")
    x = npusim.ones(1, device="npu")
    assert not x.is_cuda
    map_device_type("cuda", "npu")
    try:
        assert x.is_cuda and not npusim.ones(1).is_cuda
    finally:
        map_device_type("cuda", None)
    assert not x.is_cuda
