"""Every check of the proof, in the order they run, with its time budget in seconds.

Device checks come first and the speed checks after them, on a quiet GPU; the two
test-suite runs come last, as they take whatever time is left of the total budget.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    name: str
    module: str        # gpu_proof.<module>.run(ctx) does the work, in a child process
    budget_s: float
    speed: bool = False


DEVICE_CHECKS = [
    Check("nvml", "check_nvml", 60),
    Check("dlpack", "check_dlpack", 90),
    Check("events", "check_events", 60),
    Check("oom_recovery", "check_oom", 90),
    Check("nccl_single_rank", "check_nccl", 90),
    Check("rng_parity", "check_rng", 150),
    Check("speed_elementwise_bandwidth", "speed_bandwidth", 90, speed=True),
    Check("speed_matmul", "speed_matmul", 120, speed=True),
    Check("speed_small_latency", "speed_latency", 90, speed=True),
    Check("speed_demo_step", "speed_demo", 150, speed=True),
]

GPU_TESTS = "gpu_tests"
NPU_SUITE = "npu_suite_cuda"
SUITES = [GPU_TESTS, NPU_SUITE]

ALL_NAMES = [c.name for c in DEVICE_CHECKS] + SUITES


def by_name(name: str) -> Check:
    for c in DEVICE_CHECKS:
        if c.name == name:
            return c
    raise KeyError(f"no device check named {name!r}; known: {', '.join(c.name for c in DEVICE_CHECKS)}")
