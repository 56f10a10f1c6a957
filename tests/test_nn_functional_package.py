"""``npusim.nn.functional`` is a package of concept modules that import each other without cycles, and an
``__init__`` that only re-exports their names."""
from __future__ import annotations

import ast
import importlib
import pathlib

import npusim.nn.functional as F

PACKAGE = pathlib.Path(F.__file__).parent


def _modules():
    return sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")


def _sibling_imports(name):
    """The sibling modules ``name`` imports (``from .x import ...``); the package itself counts as ``__init__``."""
    tree = ast.parse((PACKAGE / f"{name}.py").read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            out.add(node.module or "__init__")
        elif isinstance(node, ast.ImportFrom) and node.level == 2 and node.module in (None, "functional"):
            out.add("__init__")
    return out


def test_modules_never_import_the_package_or_each_other_in_a_circle():
    graph = {m: _sibling_imports(m) for m in _modules()}
    assert not any("__init__" in deps for deps in graph.values()), graph
    done, visiting = set(), []

    def visit(m):
        assert m not in visiting, f"import cycle: {' -> '.join(visiting + [m])}"
        if m in done:
            return
        visiting.append(m)
        for dep in graph[m]:
            visit(dep)
        visiting.pop()
        done.add(m)

    for m in graph:
        visit(m)


def test_init_only_reexports_each_modules_public_names():
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    for node in tree.body:
        is_doc = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        is_all = isinstance(node, ast.Assign) and [t.id for t in node.targets] == ["__all__"]
        assert is_doc or is_all or isinstance(node, ast.ImportFrom), ast.dump(node)[:80]
    exported = []
    for m in _modules():
        module = importlib.import_module(f"{F.__name__}.{m}")
        for name in getattr(module, "__all__", []):
            assert getattr(F, name) is getattr(module, name), name
            exported.append(name)
    assert sorted(exported) == sorted(F.__all__)
    assert len(set(F.__all__)) == len(F.__all__)


def test_no_module_shadows_a_function_of_the_same_name():
    """A submodule named like a function (``linear``, ``dropout``, ``pad``) would replace it on the package."""
    assert not set(_modules()) & set(F.__all__)
    assert all(callable(getattr(F, name)) for name in F.__all__)
