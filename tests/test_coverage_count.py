"""bench/coverage_vs_torch.py counts torch's in-scope public names per namespace and the ones npusim lacks."""
from __future__ import annotations

import importlib.util
import pathlib

import pytest

pytestmark = pytest.mark.oracle

SCRIPT = pathlib.Path(__file__).resolve().parent.parent / "bench" / "coverage_vs_torch.py"


@pytest.fixture(scope="module")
def coverage():
    pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("coverage_vs_torch", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rows(coverage):
    return {label: (in_scope, missing, excluded) for label, in_scope, missing, excluded in coverage.count()}


def test_every_namespace_is_counted(coverage, rows):
    assert list(rows) == [label for label, _, _ in coverage.NAMESPACES]
    for label, (in_scope, missing, _) in rows.items():
        assert in_scope, label
        assert set(missing) <= set(in_scope), label


def test_names_npusim_has_are_not_missing_and_out_of_scope_ones_are_named(rows):
    in_scope, missing, excluded = rows["torch"]
    assert "matmul" in in_scope and "matmul" not in missing
    assert "compile" in excluded["compile/TorchScript/jit/fx/export"]
    assert "quantize_per_tensor" in excluded["quantization"]
    assert "sparse_coo_tensor" in excluded["sparse"]
    assert "lstsq" in excluded["deprecated or removed"]
    assert "quantile" in in_scope                       # a name containing "quant" that is not quantization
    assert "sparse_" in rows["nn.init"][0]               # dense sparse initialisation, not a sparse tensor
    assert "Linear" in rows["nn"][0] and "Linear" not in rows["nn"][1]


def test_the_script_prints_a_row_per_namespace_and_a_total(coverage, capsys):
    assert coverage.main(["--missing"]) == 0
    out = capsys.readouterr().out
    assert "npu vs cuda" in out and "nn.functional" in out
    total = [line for line in out.splitlines() if line.startswith("total")]
    assert len(total) == 1 and total[0].rstrip().endswith("%")
