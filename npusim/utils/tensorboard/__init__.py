"""``npusim.utils.tensorboard.SummaryWriter``: torch's TensorBoard writer, on tensorboardX.

tensorboardX writes the same event files as torch.utils.tensorboard (it is where torch's writer came from)
and takes NumPy arrays; this writer hands it npusim tensors as NumPy arrays (read back from any device,
detached) and otherwise keeps its signatures, which are torch's. Install it with
``pip install -e ".[tensorboard]"``. ``add_graph`` and the other graph exporters need a traced program,
which npusim leaves out: they raise saying so.
"""
from __future__ import annotations

import functools

try:
    import tensorboardX as _tbx
except ImportError as e:   # the optional extra is missing
    raise ImportError("npusim.utils.tensorboard needs tensorboardX: pip install -e \".[tensorboard]\" "
                      "(or pip install tensorboardX)") from e

from ...core.tensor import Tensor

__all__ = ["SummaryWriter"]

_GRAPHS = ("add_graph", "add_onnx_graph", "add_openvino_graph")


def _host(value):
    """Tensors (also inside dicts, lists and tuples) as NumPy arrays; 0-dim ones as Python numbers."""
    if isinstance(value, Tensor):
        t = value.detach().cpu()
        return t.item() if t.dim() == 0 else t.numpy()
    if isinstance(value, dict):
        return {k: _host(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_host(v) for v in value)
    return value


def _converting(method):
    @functools.wraps(method)
    def add(self, *args, **kwargs):
        return method(self, *[_host(a) for a in args], **{k: _host(v) for k, v in kwargs.items()})
    return add


def _refusing(name):
    def add(self, *args, **kwargs):
        raise RuntimeError(f"SummaryWriter.{name} is not supported by npusim: it traces the model into a graph "
                           f"(torch.jit/torch.export), which npusim deliberately leaves out")
    add.__name__ = name
    return add


class SummaryWriter(_tbx.SummaryWriter):
    """Writes TensorBoard event files under ``log_dir`` (default ``runs/<date>_<host><comment>``), as torch's."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix=""):
        super().__init__(logdir=log_dir, comment=comment, purge_step=purge_step, max_queue=max_queue,
                         flush_secs=flush_secs, filename_suffix=filename_suffix)

    def get_logdir(self) -> str:
        """The directory the event files go to."""
        return self.logdir


for _name in dir(_tbx.SummaryWriter):
    if _name.startswith("add_"):
        setattr(SummaryWriter, _name, _refusing(_name) if _name in _GRAPHS
                else _converting(getattr(_tbx.SummaryWriter, _name)))
del _name
