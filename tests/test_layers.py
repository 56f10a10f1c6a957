"""The layers of docs/architecture.md: core imports no API package, kernels, native kernels, backend, amp or
serialization, and core's own layers import only downward.

``lint-imports`` checks every contract in pyproject.toml over the whole import
graph; the other tests are a cheap direct scan of npusim/core that needs no tool.
"""
from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "npusim" / "core"
FORBIDDEN_IN_CORE = ("api", "kernels", "native", "backend", "amp", "serialization")


def test_import_linter_contracts_hold():
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter is not installed (pip install import-linter)")
    r = subprocess.run([exe, "--no-cache", "--no-logo", "--config", str(ROOT / "pyproject.toml")], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert " 0 broken" in r.stdout


def absolute_module(package: str, level: int, module: str | None) -> str:
    """The module a ``from`` import in ``package`` names (``level`` leading dots)."""
    if not level:
        return module or ""
    parts = package.split(".")
    parts = parts[:len(parts) - (level - 1)]
    return ".".join(parts + ([module] if module else []))


def imported_modules(source: str, package: str):
    """(line, absolute module name) for every import in ``source``, a module of ``package``."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            module = absolute_module(package, node.level, node.module)
            yield node.lineno, module
            for alias in node.names:  # "from .. import backend" imports a module too
                yield node.lineno, f"{module}.{alias.name}"


def forbidden(modules):
    return [(line, m) for line, m in modules
            if m.split(".")[0] == "npusim" and len(m.split(".")) > 1 and m.split(".")[1] in FORBIDDEN_IN_CORE]


def test_core_never_imports_the_api_kernels_native_backend_amp_or_serialization():
    offenders = []
    for path in sorted(CORE.rglob("*.py")):
        package = ".".join(("npusim",) + path.relative_to(ROOT / "npusim").parts[:-1])
        for line, module in forbidden(imported_modules(path.read_text(), package)):
            offenders.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not offenders, "\n".join(offenders)


def test_the_scan_catches_every_spelling_of_a_forbidden_import():
    source = ("from ..backend import runtime\nfrom .. import native\nimport npusim.kernels.elementwise\n"
              "from npusim.amp import autocast\nfrom . import dispatcher\nfrom ..utils import data\n"
              "def lazy():\n    from ..serialization import save\nfrom ..api import operators\n")
    found = forbidden(imported_modules(source, "npusim.core"))
    assert sorted({line for line, _ in found}) == [1, 2, 3, 4, 8, 9]
    assert absolute_module("npusim.core.autograd", 3, "backend") == "npusim.backend"
