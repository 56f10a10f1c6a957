"""``import torch`` answered by npusim: the import hook behind ``python -m npusim run``.

:func:`install` puts a module named ``torch`` in ``sys.modules`` whose attributes are npusim's, and a finder
first on ``sys.meta_path`` that answers every ``torch.<a>.<b>`` import with npusim's module of the same path
(``torch.nn.functional`` is ``npusim.nn.functional``), or, where npusim keeps it elsewhere, with the object
``torch.<a>`` holds as attribute ``<b>`` (``torch.cuda.amp``). A name npusim does not have fails as a missing
module does (``ModuleNotFoundError``), saying so.

With a device map (``{"cuda": "npu"}``) device strings of the mapped type mean the target device
(``npusim.core.c10.device.map_device_type``) and ``torch.cuda`` is the target's device module, so a program
written for CUDA runs on the npu: ``torch.cuda.is_available()`` is true, ``.cuda()``, ``"cuda:0"``,
``autocast("cuda")`` and ``torch.cuda.amp`` mean the npu.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types

import npusim
from .core.c10.device import map_device_type

TORCH = "torch"


class _Alias(types.ModuleType):
    """``torch.<name>`` for an npusim object that is not a package: the target's attributes, read and written
    through, and a ``__path__`` so that imports of its children reach the finder."""

    def __init__(self, name: str, target):
        super().__init__(name, getattr(target, "__doc__", None))
        object.__setattr__(self, "_alias_target", target)
        object.__setattr__(self, "__path__", [])

    def __getattr__(self, attr):
        return getattr(object.__getattribute__(self, "_alias_target"), attr)

    def __setattr__(self, attr, value):
        if attr.startswith("__") and attr.endswith("__"):
            object.__setattr__(self, attr, value)   # the import system's own bookkeeping
        else:
            setattr(object.__getattribute__(self, "_alias_target"), attr, value)

    def __dir__(self):
        return dir(object.__getattribute__(self, "_alias_target"))


def _torch_module(overrides: dict) -> types.ModuleType:
    """The ``torch`` module: npusim's namespace (copied, so lookups are plain dict reads) with ``overrides``
    on top; names npusim gains later still resolve through ``__getattr__``."""
    torch = types.ModuleType(TORCH, npusim.__doc__)
    for name, value in vars(npusim).items():
        if not (name.startswith("__") and name.endswith("__")):
            torch.__dict__[name] = value
    torch.__dict__.update(overrides)
    torch.__path__ = []
    torch.__file__ = npusim.__file__
    torch.__version__ = npusim.__version__

    def __getattr__(name):
        if name in overrides:
            return overrides[name]
        return getattr(npusim, name)
    torch.__getattr__ = __getattr__
    return torch


class _Loader(importlib.abc.Loader):
    """Hands the import system a module that already exists; its own ``__spec__`` is kept."""

    def __init__(self, module):
        self.module = module
        self.spec = getattr(module, "__spec__", None)

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        if self.spec is not None and not isinstance(module, _Alias):
            try:
                module.__spec__ = self.spec   # npusim's modules keep their real identity
            except AttributeError:
                pass


class _TorchFinder(importlib.abc.MetaPathFinder):
    """Answers ``torch.*`` imports with npusim's modules (see the module docstring)."""

    def __init__(self, overrides: dict):
        self.overrides = overrides

    def find_spec(self, fullname, path=None, target=None):
        if fullname != TORCH and not fullname.startswith(TORCH + "."):
            return None
        module = self._resolve(fullname)
        # a plain module stays one: the import system would otherwise give npusim's module a __path__
        return importlib.machinery.ModuleSpec(fullname, _Loader(module), is_package=hasattr(module, "__path__"))

    def _resolve(self, fullname: str):
        if fullname == TORCH:
            return sys.modules.get(TORCH) or _torch_module(self.overrides)
        parent_name, _, child = fullname.rpartition(".")
        if parent_name == TORCH and child in self.overrides:
            return _as_module(fullname, self.overrides[child])
        inner = "npusim" + fullname[len(TORCH):]
        try:
            return importlib.import_module(inner)
        except ModuleNotFoundError as e:
            if e.name != inner:
                raise   # a module npusim's own code imports is missing: that error is the real one
        parent = sys.modules.get(parent_name)
        value = getattr(parent, child, None) if parent is not None else None
        if isinstance(value, types.ModuleType) or (value is not None and not callable(value)
                                                   and hasattr(value, "__dict__")):
            return _as_module(fullname, value)
        from .missing_names import explain
        why = explain(child) if parent_name == TORCH else ""
        raise ModuleNotFoundError(f"No module named '{fullname}': npusim, which stands in for torch in this "
                                  f"program, has no '{inner}'" + (f" ({why})" if why else ""), name=fullname)


def _as_module(fullname: str, value):
    if isinstance(value, types.ModuleType) and hasattr(value, "__path__"):
        return value
    return _Alias(fullname, value)


def install(device_map: dict | None = None) -> types.ModuleType:
    """Make ``import torch`` (and every ``torch.*`` submodule) resolve to npusim in this process.

    ``device_map`` maps device types npusim has no backend for onto ones it has (``{"cuda": "npu"}``).
    Returns the ``torch`` module. Refuses when the real torch is already imported: one process cannot hold both
    under one name.
    """
    existing = sys.modules.get(TORCH)
    if existing is not None and not getattr(existing, "_npusim_alias", False):
        raise RuntimeError("the real torch is already imported in this process; npusim cannot stand in for it")
    overrides = {"cuda": npusim.cuda}
    for name, target in (device_map or {}).items():
        map_device_type(name, target)
        if name == "cuda":
            overrides["cuda"] = getattr(npusim, target)   # torch.cuda is the target's device module
    torch = _torch_module(overrides)
    torch._npusim_alias = True
    finder = _TorchFinder(overrides)
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _TorchFinder)]
    sys.meta_path.insert(0, finder)
    for name in [n for n in sys.modules if n.startswith(TORCH + ".")]:
        del sys.modules[name]
    sys.modules[TORCH] = torch
    return torch
