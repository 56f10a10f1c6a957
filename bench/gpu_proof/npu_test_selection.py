"""A pytest plugin for the cuda-mode suite run: deselect the tests parametrized for the cpu device.

``-k "not cpu"`` would also drop every test whose name merely mentions the cpu
(``..._match_torch_cpu_autocast...``, ``test_valid_strings[cpu:0-cpu-0]``): npu tests
among them. This drops exactly the items whose ``device`` parameter is the cpu.

    python -m pytest -p gpu_proof.npu_test_selection ...
"""
from __future__ import annotations


def _is_cpu(value) -> bool:
    return value == "cpu" or getattr(value, "type", None) == "cpu"


def runs_on_cpu(item) -> bool:
    callspec = getattr(item, "callspec", None)
    return callspec is not None and "device" in callspec.params and _is_cpu(callspec.params["device"])


def pytest_collection_modifyitems(config, items):
    dropped = [item for item in items if runs_on_cpu(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if not runs_on_cpu(item)]
