"""``npusim.nn``: modules, parameters and functional ops for building networks (torch.nn's API)."""
from . import functional, init, utils  # noqa: F401
from . import parallel  # noqa: F401
from .modules import *  # noqa: F401,F403
# a dataclass, not a layer: exported beside the layers, out of the modules' __all__ that the layer tests walk
from .modules import LinearCrossEntropyOptions  # noqa: F401
from .modules import Module, ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401
from .parallel import DataParallel  # noqa: F401
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401
