"""``parallel_apply``: run each replica on its inputs in a thread of its own (``torch.nn.parallel``).

Each thread takes the caller's grad mode and the accelerator's autocast state and makes the replica's device
current; an exception in any thread is raised in the caller, naming the replica.
"""
from __future__ import annotations

import threading

from ...core.autograd.grad_mode import is_grad_enabled, set_grad_enabled
from ...core.tensor import Tensor

__all__ = ["parallel_apply"]


def _first_tensor_device(obj):
    if isinstance(obj, Tensor):
        return obj.device
    if isinstance(obj, (list, tuple)):
        for item in obj:
            found = _first_tensor_device(item)
            if found is not None:
                return found
    if isinstance(obj, dict):
        return _first_tensor_device(list(obj.values()))
    return None


def parallel_apply(modules, inputs, kwargs_tup=None, devices=None):
    """``[modules[i](*inputs[i], **kwargs_tup[i])]``, computed concurrently on the replicas' devices."""
    from ... import accelerator, autocast, get_autocast_dtype, is_autocast_enabled
    from .scatter_gather import _as_device
    if len(modules) != len(inputs):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number of inputs "
                             f"{len(inputs)}")
    if kwargs_tup is not None:
        if len(modules) != len(kwargs_tup):
            raise AssertionError(f"The number of modules {len(modules)} is not equal to the number of kwargs "
                                 f"{len(kwargs_tup)}")
    else:
        kwargs_tup = tuple({} for _ in modules)
    if devices is not None:
        if len(modules) != len(devices):
            raise AssertionError(f"The number of modules {len(modules)} is not equal to the number of devices "
                                 f"{len(devices)}")
    else:
        devices = [None] * len(modules)
    devices = [None if d is None else _as_device(d) for d in devices]
    device_type = accelerator.current_accelerator().type if accelerator.is_available() else "cpu"
    grad_enabled = is_grad_enabled()
    autocast_enabled = is_autocast_enabled(device_type)
    autocast_dtype = get_autocast_dtype(device_type)
    results = {}
    lock = threading.Lock()

    def worker(i, module, input, kwargs, device):
        try:
            if device is None:
                device = _first_tensor_device(input)
            with set_grad_enabled(grad_enabled), \
                    autocast(device_type, dtype=autocast_dtype, enabled=autocast_enabled):
                if device is not None and device.type == device_type and device.index is not None:
                    with accelerator.device_index(device.index):
                        output = module(*_as_tuple(input), **kwargs)
                else:
                    output = module(*_as_tuple(input), **kwargs)
            with lock:
                results[i] = output
        except Exception as error:          # raised again in the caller's thread, below
            with lock:
                results[i] = _Failure(error, i, device)

    jobs = list(zip(modules, inputs, kwargs_tup, devices))
    if len(jobs) > 1:
        threads = [threading.Thread(target=worker, args=(i, *job)) for i, job in enumerate(jobs)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    elif jobs:
        worker(0, *jobs[0])
    outputs = []
    for i in range(len(inputs)):
        output = results[i]
        if isinstance(output, _Failure):
            output.reraise()
        outputs.append(output)
    return outputs


def _as_tuple(input):
    return input if isinstance(input, (list, tuple)) else (input,)


class _Failure:
    """An exception caught in a worker thread, raised again (same type, where it can be built) in the caller."""

    def __init__(self, error, index, device):
        self.error, self.where = error, f"in replica {index} on device {device}"

    def reraise(self):
        message = f"Caught {type(self.error).__name__} {self.where}.\nOriginal: {self.error}"
        try:
            new = type(self.error)(message)
        except Exception:
            raise RuntimeError(message) from self.error
        raise new from self.error
