"""``Reducer`` and ``Logger``: torch.distributed's DistributedDataParallel internals, usable on their own.

``Reducer(params, bucket_indices, per_bucket_size_limits, process_group, ...)`` averages the gradients of
``params`` over the group in the buckets given (lists of parameter indices, each of one device and dtype): call
``prepare_for_forward()`` before a forward and ``prepare_for_backward(outputs)`` after it, and backward fills every
parameter's ``.grad`` with the group's average, bucket by bucket as gradients become ready. It is the reducer of
npusim's ``DistributedDataParallel`` with torch's constructor. ``Logger(reducer)`` keeps DDP's logging data
(``_get_ddp_logging_data()``): the construction data given to ``set_construction_data_and_log``, the reducer's
figures and, per ``set_runtime_stats_and_log``, the iteration and backward compute time.
"""
from __future__ import annotations

import time
import weakref

from ..nn.parallel.distributed import _Bucket, _Reducer


class Reducer(_Reducer):
    """Gradient bucketing and averaging over a process group (torch's ``dist.Reducer``)."""

    def __init__(self, params, bucket_indices, per_bucket_size_limits, process_group, expect_sparse_gradients=(),
                 bucket_bytes_cap=26214400, find_unused_parameters=False, gradient_as_bucket_view=False,
                 param_to_name_mapping=None, first_bucket_bytes_cap=1048576, skip_all_reduce_unused_params=False,
                 use_python_reducer=False, bucket_bytes_cap_list=(), batched_grad_copy=False):
        params = list(params)
        if any(expect_sparse_gradients):
            raise RuntimeError("npusim's Reducer has no sparse gradients")
        seen = sorted(i for bucket in bucket_indices for i in bucket)
        if seen != list(range(len(params))):
            raise RuntimeError("Expected bucket_indices to name every parameter exactly once")
        for bucket in bucket_indices:
            kinds = {(params[i].device, params[i].dtype) for i in bucket}
            if len(kinds) > 1:
                raise RuntimeError("All parameters in a bucket must have the same dtype and live on the same device")
        self._bucket_indices = [list(b) for b in bucket_indices]
        self.bucket_bytes_cap = bucket_bytes_cap
        names = param_to_name_mapping or {}
        super().__init__(params, [names.get(i, f"param{i}") for i in range(len(params))], process_group,
                         bucket_bytes_cap, find_unused_parameters, gradient_as_bucket_view)
        self._logger = None
        self._backward_start = None
        self._backward_stats = [0] * len(params)

    def _assign_buckets(self, cap_bytes):
        """The buckets given, in the order given (torch's: reduced in that order)."""
        return [_Bucket(index, members, self.params[members[0]].device, self.params[members[0]].dtype,
                        [self.params[i].numel() for i in members])
                for index, members in enumerate(self._bucket_indices) if members]

    def prepare_for_backward(self, output):
        """Expect a backward of ``output`` (a tensor or a list of tensors): every parameter's gradient in it."""
        super().prepare_for_backward(output)
        self._backward_start = time.perf_counter_ns()
        self._backward_stats = [0] * len(self.params)

    def on_grad_ready(self, i):
        if self.expecting and not self.ready[i] and self._backward_start is not None:
            self._backward_stats[i] = time.perf_counter_ns() - self._backward_start
        super().on_grad_ready(i)

    def get_backward_stats(self) -> list:
        """Per parameter: nanoseconds from the start of the last backward to its gradient being ready."""
        return list(self._backward_stats)

    def set_logger(self, logger) -> None:
        """The Logger that reports this reducer's figures (kept weakly, as torch's)."""
        self._logger = weakref.ref(logger)


class Logger:
    """DDP's logging data for one reducer (torch's ``dist.Logger``)."""

    def __init__(self, reducer: Reducer):
        self._reducer = reducer
        group = reducer.group
        params = reducer.params
        self._data = {
            "world_size": group.size(), "rank": group.rank(), "backend_name": _backend_name(group),
            "bucket_cap_bytes": getattr(reducer, "bucket_bytes_cap", 26214400),
            "find_unused_parameters": int(reducer.find_unused), "gradient_as_bucket_view": int(reducer.as_bucket_view),
            "num_parameter_tensors": len(params),
            "total_parameter_size_bytes": sum(p.numel() * p.element_size() for p in params),
            "dtypes": ", ".join(sorted({_C_NAME.get(p.dtype.name, p.dtype.name) for p in params})),
            "bucket_sizes": ", ".join(str(b.buffer.numel() * b.buffer.element_size()) for b in reducer.buckets),
            "is_multi_device_module": int(len({p.device for p in params}) > 1), "iteration": 0,
        }

    def set_construction_data_and_log(self, module_name: str, device_ids, output_device: int,
                                      broadcast_buffers: bool, has_sync_bn: bool, static_graph: bool) -> None:
        """Record how DDP was built (the module's class name, devices, switches)."""
        self._data.update(module_name=module_name, device_ids=", ".join(str(d) for d in device_ids),
                          output_device=output_device, broadcast_buffers=int(broadcast_buffers),
                          has_sync_bn=int(has_sync_bn), static_graph=int(static_graph))

    def set_runtime_stats_and_log(self) -> None:
        """Record one more iteration and the last backward's compute time (its slowest gradient)."""
        self._data["iteration"] += 1
        stats = self._reducer.get_backward_stats()
        self._data["backward_compute_time"] = max(stats) if stats else 0
        runs = self._data["iteration"]
        average = self._data.get("avg_backward_compute_time", 0)
        self._data["avg_backward_compute_time"] = (average * (runs - 1) + self._data["backward_compute_time"]) // runs
        self._data["num_buckets_reduced"] = len(self._reducer.buckets)

    def set_error_and_log(self, error: str) -> None:
        """Record that DDP failed, with the message."""
        self._data.update(has_error=1, error=error)

    def _set_comm_hook_name(self, name: str) -> None:
        self._data["comm_hook"] = name

    def _set_static_graph(self) -> None:
        self._data["static_graph"] = 1

    def _set_uneven_input_join(self) -> None:
        self._data["join_uneven_inputs"] = 1

    def _get_ddp_logging_data(self) -> dict:
        """What has been logged: a dict of str keys to ints and strs."""
        return dict(self._data)


_C_NAME = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16"}


def _backend_name(group) -> str:
    config = getattr(group, "_config", {})
    return next(iter(config.values()), "undefined")


__all__ = ["Reducer", "Logger"]
