"""The native kernel tables are found by walking npusim.native: no module list to keep in step by hand."""
import re
import sys
import textwrap

import pytest

import npusim  # noqa: F401  (registers everything)
from npusim.native import registration as R


def _package(tmp_path, monkeypatch, modules):
    root = tmp_path / "fake_native"
    root.mkdir()
    (root / "__init__.py").write_text("")
    for name, source in modules.items():
        (root / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "fake_native" or m.startswith("fake_native.")]:
        monkeypatch.delitem(sys.modules, name)
    import fake_native
    return fake_native


def test_a_new_module_s_tables_are_registered_without_being_listed(tmp_path, monkeypatch):
    package = _package(tmp_path, monkeypatch, {
        "a_family": "def k(x): return x\nKERNELS = {'a_op': k, 'a_op.out': k}\n",
        "b_family": "def c(x): return x\nCOMPOSITE_IMPLICIT = {'b_op': c}\nCOMPOSITE = {'b_copy': c}\n",
        "common": "KERNELS = {'not_a_kernel_module': None}\n",
        "helpers_only": "def helper(): pass\n",
    })
    modules = R.kernel_modules(package)
    assert [m.__name__ for m in modules] == ["fake_native.a_family", "fake_native.b_family",
                                             "fake_native.helpers_only"]
    tables = R.merge_tables(modules, base={"KERNELS": {"core_op": len}})
    assert tables["KERNELS"] == {"core_op": len, "a_op": package.a_family.k, "a_op.out": package.a_family.k}
    assert tables["COMPOSITE_IMPLICIT"] == {"b_op": package.b_family.c}
    assert tables["COMPOSITE"] == {"b_copy": package.b_family.c}


def test_a_name_two_modules_define_is_an_error_not_a_silent_override(tmp_path, monkeypatch):
    package = _package(tmp_path, monkeypatch, {
        "a_family": "KERNELS = {'op': abs}\n",
        "b_family": "KERNELS = {'op': len}\n",
    })
    with pytest.raises(RuntimeError, match=r"fake_native\.b_family\.KERNELS defines 'op', already defined by "
                                           r"fake_native\.a_family"):
        R.merge_tables(R.kernel_modules(package))
    with pytest.raises(RuntimeError, match="already defined by the core table"):
        R.merge_tables(R.kernel_modules(package)[:1], base={"KERNELS": {"op": len}})


def test_every_table_of_every_native_module_is_registered():
    for module in R.kernel_modules():
        for table in R.TABLES:
            for name, fn in getattr(module, table, {}).items():
                if table == "KERNELS" and name in R.COMPOSITE_IMPLICIT:
                    continue   # a decomposition replaces the backend kernel (see registration.py)
                assert getattr(R, table).get(name) is fn, f"{module.__name__}.{table}[{name!r}] is not registered"


def test_no_native_module_silently_lacks_its_tables():
    core_modules = {fn.__module__ for fn in R.KERNELS.values()}
    table_like = re.compile(r"^_?(KERNEL|COMPOSITE)\w*$")
    for module in R.kernel_modules():
        misnamed = [n for n, v in vars(module).items() if table_like.match(n) and n not in R.TABLES
                    and isinstance(v, dict)]
        assert not misnamed, f"{module.__name__} defines {misnamed}, which registration does not read"
        for table in R.TABLES:
            assert isinstance(getattr(module, table, {}), dict), f"{module.__name__}.{table} is not a dict"
        has_table = any(getattr(module, table, None) for table in R.TABLES)
        assert has_table or module.__name__ in core_modules, (
            f"{module.__name__} defines no KERNELS / COMPOSITE / COMPOSITE_IMPLICIT table and none of its "
            "functions is registered: add its table, or list it in registration.NOT_KERNEL_MODULES")


def test_every_formulas_module_of_autograd_is_loaded():
    import pkgutil

    import npusim.core.autograd as autograd
    names = [info.name for info in pkgutil.iter_modules(autograd.__path__) if info.name.startswith("formulas_")]
    assert names and all(f"npusim.core.autograd.{name}" in sys.modules for name in names)


def test_node_names_of_max_and_min_are_torchs():
    # torch numbers the overloads' nodes in its derivatives.yaml order: max.dim's is MaxBackward0, the full
    # reduction's MaxBackward1, and max(x, y) is maximum (MaximumBackward0)
    x = npusim.tensor([1.0, 3.0, 2.0], requires_grad=True)
    assert npusim.max(x).grad_fn.name() == "MaxBackward1"
    assert npusim.min(x).grad_fn.name() == "MinBackward1"
    assert npusim.max(x, 0).values.grad_fn.name() == "MaxBackward0"
    assert npusim.min(x, 0, keepdim=True)[0].grad_fn.name() == "MinBackward0"
    assert npusim.max(x, x).grad_fn.name() == "MaximumBackward0"
    assert npusim.min(x, x).grad_fn.name() == "MinimumBackward0"
