"""The layers of DESIGN.md section 2: core imports no kernels, native kernels, backend, amp or serialization.

``lint-imports`` checks every contract in pyproject.toml over the whole import
graph; the other tests are a cheap direct scan of npusim/core that needs no tool.
"""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "npusim" / "core"
FORBIDDEN_IN_CORE = ("kernels", "native", "backend", "amp", "serialization")


def module_exists(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def linter_config_for_existing_modules(tmp_path: Path) -> Path:
    """pyproject.toml's contracts, minus packages not written yet (import-linter refuses unknown modules)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    lines = ["[importlinter]", f"root_package = {config['root_package']}"]
    kept = 0
    for i, contract in enumerate(config["contracts"]):
        sources = [m for m in contract["source_modules"] if module_exists(m)]
        forbidden = [m for m in contract["forbidden_modules"] if module_exists(m)]
        if not sources or not forbidden:
            continue
        kept += 1
        lines += [f"[importlinter:contract:{i}]", f"name = {contract['name']}", f"type = {contract['type']}",
                  "source_modules =", *(f"    {m}" for m in sources),
                  "forbidden_modules =", *(f"    {m}" for m in forbidden)]
        for key, value in contract.items():  # ignore_imports, allow_indirect_imports, ... as written
            if key not in ("name", "type", "source_modules", "forbidden_modules"):
                lines += [f"{key} =", *(f"    {v}" for v in value)] if isinstance(value, list) else \
                    [f"{key} = {value}"]
    assert kept, "no contract applies to the modules that exist"
    path = tmp_path / "importlinter.ini"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_import_linter_contracts_hold(tmp_path):
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter is not installed (pip install import-linter)")
    config = linter_config_for_existing_modules(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([exe, "--no-cache", "--no-logo", "--config", str(config)], cwd=ROOT, env=env,
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


def test_core_never_imports_kernels_native_backend_amp_or_serialization():
    offenders = []
    for path in sorted(CORE.rglob("*.py")):
        package = ".".join(("npusim",) + path.relative_to(ROOT / "npusim").parts[:-1])
        for line, module in forbidden(imported_modules(path.read_text(), package)):
            offenders.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not offenders, "\n".join(offenders)


def test_the_scan_catches_every_spelling_of_a_forbidden_import():
    source = ("from ..backend import runtime\nfrom .. import native\nimport npusim.kernels.elementwise\n"
              "from npusim.amp import autocast\nfrom . import dispatcher\nfrom ..utils import data\n"
              "def lazy():\n    from ..serialization import save\n")
    found = forbidden(imported_modules(source, "npusim.core"))
    assert sorted({line for line, _ in found}) == [1, 2, 3, 4, 8]
    assert absolute_module("npusim.core.autograd", 3, "backend") == "npusim.backend"
