"""Every public ``npusim.*`` name is written out in the source, so grep and editors find it: a ``def``, a
``class`` or an assignment (no ``globals()[name] = ...`` loops), or a line of a checked-in ``.pyi`` stub."""
from __future__ import annotations

import pathlib
import re

import npusim
from npusim.api import inplace, nn as api_nn

PACKAGE = pathlib.Path(npusim.__file__).parent


def _source_text():
    return "\n".join(p.read_text() for p in sorted(PACKAGE.rglob("*.py")) + sorted(PACKAGE.rglob("*.pyi")))


def test_every_public_name_is_defined_where_grep_finds_it():
    text = _source_text()
    missing = []
    for name in npusim.__all__:
        n = re.escape(name)
        definition = rf"^\s*(?:def|class)\s+{n}\b|^\s*(?:\w+\s*=\s*)*{n}\s*(?::[^=\n]*)?=(?!=)"
        is_module = (PACKAGE / f"{name}.py").exists() or (PACKAGE / name / "__init__.py").exists()
        if not (is_module or re.search(definition, text, re.MULTILINE)):
            missing.append(name)
    assert not missing, missing


def test_public_names_are_bound_once():
    """``npusim.__all__`` is the modules' ``__all__`` lists joined: no name comes from two of them."""
    assert len(set(npusim.__all__)) == len(npusim.__all__)
    for module in (api_nn, inplace):
        for name in module.__all__:
            assert getattr(npusim, name) is getattr(module, name), name


def test_inplace_functions_are_torchs_where_the_tensor_method_exists():
    """The written-out ``npusim.<op>_`` functions are exactly torch's in-place functions npusim's Tensor has."""
    expected = [n for n in inplace._TORCH_INPLACE if callable(getattr(npusim.Tensor, n, None))]
    assert inplace._INPLACE_FUNCTIONS == [n for n in expected if n not in inplace._WRITTEN_ELSEWHERE]
    for name in inplace._WRITTEN_ELSEWHERE:     # the others are npusim functions of their own
        assert name in expected and callable(getattr(npusim, name)) and not hasattr(inplace, name), name
