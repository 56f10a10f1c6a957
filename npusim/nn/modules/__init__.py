"""The layers of ``npusim.nn``."""
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401
from .module import Module  # noqa: F401
