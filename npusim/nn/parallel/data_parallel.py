"""``DataParallel`` and ``data_parallel``: one process, the batch split across the accelerator's devices
(``torch.nn.parallel.data_parallel``).

Each forward scatters the inputs along ``dim``, replicates the module (which must live on ``device_ids[0]``) onto
the devices, runs the replicas in threads and gathers the outputs on ``output_device``. The replicas' parameters
are differentiable copies of the module's, so backward sums every replica's gradient into the module's
parameters on ``device_ids[0]``.
"""
from __future__ import annotations

from itertools import chain

from ...core.c10.device import device as _device
from ..modules.module import Module
from .parallel_apply import parallel_apply
from .replicate import replicate
from .scatter_gather import gather, scatter_kwargs

__all__ = ["DataParallel", "data_parallel"]


def _accelerator_type():
    from ... import accelerator
    return accelerator.current_accelerator().type if accelerator.is_available() else None


def _device_index(device_arg):
    from ... import accelerator
    if isinstance(device_arg, str):
        device_arg = _device(device_arg)
    if isinstance(device_arg, _device) and device_arg.type == "cpu":
        return -1
    return accelerator._get_device_index(device_arg, optional=True)


def _all_device_indices():
    from ... import accelerator
    return list(range(accelerator.device_count()))


class DataParallel(Module):
    """Splits each input batch along ``dim`` over ``device_ids`` (default: every device of the accelerator), runs
    a replica of ``module`` on each part and gathers the outputs on ``output_device`` (default ``device_ids[0]``).
    Without an accelerator it calls ``module`` as it is."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        device_type = _accelerator_type()
        if device_type is None:
            self.module = module
            self.device_ids = []
            return
        if device_ids is None:
            device_ids = _all_device_indices()
        if output_device is None:
            output_device = device_ids[0]
        self.dim = dim
        self.module = module
        self.device_ids = [_device_index(x) for x in device_ids]
        self.output_device = _device_index(output_device)
        self.src_device_obj = _device(device_type, self.device_ids[0])
        if len(self.device_ids) == 1:
            self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for t in chain(self.module.parameters(), self.module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError(f"module must have its parameters and buffers on device {self.src_device_obj} "
                                   f"(device_ids[0]) but found one of them on device: {t.device}")
        inputs, module_kwargs = self.scatter(inputs, kwargs, self.device_ids)
        # a forward without inputs still runs once, on device_ids[0]
        if not inputs and not module_kwargs:
            inputs = ((),)
            module_kwargs = ({},)
        if len(self.device_ids) == 1:
            return self.module(*inputs[0], **module_kwargs[0])
        replicas = self.replicate(self.module, self.device_ids[:len(inputs)])
        outputs = self.parallel_apply(replicas, inputs, module_kwargs)
        return self.gather(outputs, self.output_device)

    def replicate(self, module, device_ids):
        return replicate(module, device_ids, False)

    def scatter(self, inputs, kwargs, device_ids):
        return scatter_kwargs(inputs, kwargs, device_ids, dim=self.dim)

    def parallel_apply(self, replicas, inputs, kwargs):
        return parallel_apply(replicas, inputs, kwargs, self.device_ids[:len(replicas)])

    def gather(self, outputs, output_device):
        return gather(outputs, output_device, dim=self.dim)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """``DataParallel``'s forward as a function: ``module`` (on ``device_ids[0]``) applied to ``inputs`` split
    over ``device_ids``."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    device_type = _accelerator_type()
    if device_type is None:
        raise RuntimeError("device type could not be determined")
    if device_ids is None:
        device_ids = _all_device_indices()
    if output_device is None:
        output_device = device_ids[0]
    device_ids = [_device_index(x) for x in device_ids]
    output_device = _device_index(output_device)
    src_device_obj = _device(device_type, device_ids[0])
    for t in chain(module.parameters(), module.buffers()):
        if t.device != src_device_obj:
            raise RuntimeError(f"module must have its parameters and buffers on device {src_device_obj} "
                               f"(device_ids[0]) but found one of them on device: {t.device}")
    inputs, module_kwargs = scatter_kwargs(inputs, module_kwargs, device_ids, dim)
    if not inputs and not module_kwargs:
        inputs = ((),)
        module_kwargs = ({},)
    if len(device_ids) == 1:
        return module(*inputs[0], **module_kwargs[0])
    used_device_ids = device_ids[:len(inputs)]
    replicas = replicate(module, used_device_ids)
    outputs = parallel_apply(replicas, inputs, module_kwargs, used_device_ids)
    return gather(outputs, output_device, dim)
