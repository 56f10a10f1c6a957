"""Help text: every public name of npusim, of npusim.nn.functional, npusim.linalg and npusim.special, and every
public Tensor method and property has a docstring (``help(npusim.add)`` says what it does)."""
from __future__ import annotations

import __future__
import inspect

import pytest

import npusim
import npusim.nn.functional as F


def _public(namespace):
    """The public names of a module: not private, not a submodule, not a ``from __future__`` flag."""
    return [n for n in dir(namespace) if not n.startswith("_") and not inspect.ismodule(getattr(namespace, n))
            and not isinstance(getattr(namespace, n), __future__._Feature)]


def _undocumented(namespace, names):
    out = []
    for name in names:
        obj = getattr(namespace, name)
        if obj is None:     # npusim.newaxis is None, as torch's: a constant that cannot carry help text
            continue
        if not (inspect.getdoc(obj) or "").strip():
            out.append(name)
    return out


@pytest.mark.parametrize("namespace, names", [
    (npusim, npusim.__all__),
    (F, _public(F)), (npusim.linalg, _public(npusim.linalg)), (npusim.special, _public(npusim.special)),
], ids=["npusim", "nn.functional", "linalg", "special"])
def test_public_names_have_docstrings(namespace, names):
    assert _undocumented(namespace, names) == []


def test_tensor_methods_and_properties_have_docstrings():
    missing = []
    for name in dir(npusim.Tensor):
        if name.startswith("_"):
            continue
        attr = inspect.getattr_static(npusim.Tensor, name)
        if isinstance(attr, (staticmethod, classmethod)):
            attr = attr.__func__
        if not (getattr(attr, "__doc__", None) or "").strip():
            missing.append(name)
    assert missing == []


def test_derived_docstrings_say_what_they_are():
    assert inspect.getdoc(npusim.add).startswith("Adds ``other``, scaled by ``alpha``, to ``input``")
    assert inspect.getdoc(npusim.Tensor.add) == "See ``npusim.add``."
    assert inspect.getdoc(npusim.Tensor.add_) == "In-place version of ``Tensor.add``."
    assert inspect.getdoc(npusim.t_copy) == "The result of ``t`` in memory of its own (a copy, not a view)."
    assert inspect.getdoc(npusim.Tensor.half) == "``self.to(npusim.float16)``."
    assert npusim.Tensor.shape.__doc__ == "The tensor's size, an ``npusim.Size``."
