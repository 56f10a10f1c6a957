"""npusim.npu's torch.cuda names for memory statistics, raw blocks, sensors and capabilities (emulation)."""
import inspect
import os
import warnings

import pytest

import npusim

pytestmark = pytest.mark.emulation_only     # cuda mode reads NVML and CuPy: tests/test_npu_nvml.py


def test_nested_statistics_hold_the_flat_ones():
    keep = npusim.ones(1000, device="npu")
    flat = npusim.npu.memory_stats()
    nested = npusim.npu.memory_stats_as_nested_dict()
    assert nested["allocated_bytes"]["all"]["current"] == flat["allocated_bytes.all.current"] >= 4000
    assert sum(1 for _ in _leaves(nested)) == len(flat)
    del keep


def _leaves(d):
    for v in d.values():
        if isinstance(v, dict):
            yield from _leaves(v)
        else:
            yield v


def test_renamed_cache_functions_warn_and_answer_as_the_new_names():
    keep = npusim.ones(10, device="npu")
    with pytest.warns(FutureWarning, match="memory_cached has been renamed to npu.memory_reserved"):
        assert npusim.npu.memory_cached() == npusim.npu.memory_reserved()
    with pytest.warns(FutureWarning):
        assert npusim.npu.max_memory_cached() == npusim.npu.max_memory_reserved()
    with pytest.warns(FutureWarning):
        npusim.npu.reset_max_memory_cached()
    del keep


def test_the_memory_fraction_reads_back():
    npusim.npu.set_per_process_memory_fraction(0.5)
    try:
        assert npusim.npu.get_per_process_memory_fraction() == pytest.approx(0.5, abs=1e-9)
    finally:
        npusim.npu.set_per_process_memory_fraction(1.0)


def test_raw_blocks_count_until_given_back():
    before = npusim.npu.memory_allocated()
    ptr = npusim.npu.caching_allocator_alloc(1 << 20)
    assert isinstance(ptr, int) and npusim.npu.memory_allocated() >= before + (1 << 20)
    npusim.npu.caching_allocator_delete(ptr)
    assert npusim.npu.memory_allocated() == before
    with pytest.raises(RuntimeError, match="was not allocated by caching_allocator_alloc"):
        npusim.npu.caching_allocator_delete(ptr)
    with pytest.raises(TypeError):
        npusim.npu.caching_allocator_alloc(-1)


def test_the_emulated_device_reports_this_process_and_has_no_sensors():
    keep = npusim.ones(1 << 18, device="npu")
    assert npusim.npu.device_memory_used() == npusim.npu.memory_reserved() >= 1 << 20
    text = npusim.npu.list_gpu_processes()
    assert text.startswith("GPU:0\nprocess ") and str(os.getpid()) in text
    for sensor in ("temperature", "power_draw", "clock_rate", "memory_usage"):
        with pytest.raises(RuntimeError, match=f"npu.{sensor}: the emulated npu has no such sensor"):
            getattr(npusim.npu, sensor)()
    del keep


def test_capabilities_of_the_emulation():
    assert npusim.npu.can_device_access_peer(0, 0) is True
    assert npusim.npu.get_arch_list() == [] and npusim.npu.get_gencode_flags() == ""
    assert npusim.npu.is_tf32_supported() is False
    assert npusim.npu.is_current_stream_capturing() is False
    assert npusim.npu.ipc_collect() is None


@pytest.mark.oracle
def test_signatures_match_torch_cuda(torch):
    for name in ("memory_stats_as_nested_dict", "get_per_process_memory_fraction", "caching_allocator_alloc",
                 "caching_allocator_delete", "device_memory_used", "list_gpu_processes", "memory_usage",
                 "temperature", "power_draw", "clock_rate", "can_device_access_peer", "get_arch_list",
                 "get_gencode_flags", "is_tf32_supported", "ipc_collect", "is_current_stream_capturing"):
        ours = list(inspect.signature(getattr(npusim.npu, name)).parameters)
        theirs = list(inspect.signature(getattr(torch.cuda, name)).parameters)
        assert ours == theirs, name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ("memory_cached", "max_memory_cached", "reset_max_memory_cached"):
            assert list(inspect.signature(getattr(npusim.npu, name)).parameters) == ["device"]
