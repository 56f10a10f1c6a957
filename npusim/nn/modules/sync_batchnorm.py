"""``SyncBatchNorm``: batch norm whose batch statistics are those of the whole batch across the ranks of a
process group (``torch.nn.SyncBatchNorm``).

Without an initialised ``npusim.distributed`` (or in a group of one) it is plain batch norm. Otherwise it runs
torch's steps: each rank's per-channel mean and invstd (``batch_norm_stats``) and element count are all-gathered
and combined (``batch_norm_gather_stats_with_counts``, which also updates the running statistics), and the input
normalised with them (``batch_norm_elemt``). Backward takes each rank's per-channel sums
(``batch_norm_backward_reduce``), all-reduces them, and forms the input's gradient
(``batch_norm_backward_elemt``); weight and bias get their rank's share, as torch's do.
"""
from __future__ import annotations

from ...api.nn_batch_norm_functions import (
    batch_norm_backward_elemt, batch_norm_backward_reduce, batch_norm_elemt, batch_norm_gather_stats_with_counts,
    batch_norm_stats,
)
from ...api.operators import cat
from ...autograd import Function
from ...core.autograd.grad_mode import no_grad
from ...core.c10 import dtype as D
from ...core.dispatch.ops_namespace import aten
from .. import functional as F
from .batchnorm import _BatchNorm

__all__ = ["SyncBatchNorm"]


class _SyncBatchNormFunction(Function):
    """torch's ``torch.nn.modules._functions.SyncBatchNorm``: forward and backward over the batch_norm_* steps."""

    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum, group, world_size):
        from ... import distributed
        input = input.contiguous()
        if weight is not None:
            weight = weight.contiguous()
        size = input.numel() // input.size(1)
        if size == 1 and world_size < 2:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")
        channels = input.shape[1]
        if input.numel() > 0:
            mean, invstd = batch_norm_stats(input, eps)
            count = aten.full.default([1], float(size), dtype=mean.dtype, device=mean.device)
            combined = cat([mean, invstd, count], 0)
        else:
            combined = aten.zeros.default([2 * channels + 1], dtype=input.dtype, device=input.device)
        gathered = aten.empty.memory_format([world_size * combined.numel()], dtype=combined.dtype,
                                            device=combined.device)
        distributed.all_gather_into_tensor(gathered, combined, group)
        gathered = gathered.reshape(world_size, combined.numel())
        mean_all, invstd_all, count_all = gathered.split(channels, 1)
        if float(count_all.sum().item()) == 1 and world_size < 2:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")
        keep = count_all.squeeze(-1) >= 1          # ranks with an empty input take no part
        count_all, mean_all, invstd_all = count_all[keep], mean_all[keep], invstd_all[keep]
        counts = count_all.reshape(-1)
        if running_mean is not None and counts.dtype != running_mean.dtype:
            counts = counts.to(running_mean.dtype)
        mean, invstd = batch_norm_gather_stats_with_counts(input, mean_all, invstd_all, running_mean, running_var,
                                                           momentum, eps, counts)
        ctx.save_for_backward(input, weight, mean, invstd, count_all.to(D.int32))
        ctx.group = group
        if input.numel() > 0:
            return batch_norm_elemt(input, weight, bias, mean, invstd, eps)
        return aten.empty_like.default(input)

    @staticmethod
    def backward(ctx, grad_output):
        from ... import distributed
        grad_output = grad_output.contiguous()
        saved_input, weight, mean, invstd, count_tensor = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        needs = ctx.needs_input_grad
        channels = saved_input.shape[1]
        if saved_input.numel() > 0:
            sum_dy, sum_dy_xmu, grad_weight, grad_bias = batch_norm_backward_reduce(
                grad_output, saved_input, mean, invstd, weight, needs[0], needs[1], needs[2])
            if needs[0]:
                combined = cat([sum_dy, sum_dy_xmu], 0)
                distributed.all_reduce(combined, group=ctx.group)
                sum_dy, sum_dy_xmu = combined.split(channels)
                grad_input = batch_norm_backward_elemt(grad_output, saved_input, mean, invstd, weight, sum_dy,
                                                       sum_dy_xmu, count_tensor)
            if weight is None or not needs[1]:
                grad_weight = None
            if weight is None or not needs[2]:
                grad_bias = None
        elif needs[0]:
            # an empty input still joins the all-reduce the other ranks wait on
            combined = aten.zeros.default([2 * channels], dtype=saved_input.dtype, device=saved_input.device)
            distributed.all_reduce(combined, group=ctx.group)
        return grad_input, grad_weight, grad_bias, None, None, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    """Batch norm over (N, C, +) inputs with statistics taken over the batch of every rank in ``process_group``
    (default: the world) when ``npusim.distributed`` is initialised and the module is training."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device=device, dtype=dtype,
                         bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _check_non_zero_input_channels(self, input):
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, input):
        from ... import distributed
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        if self.momentum is None:
            exponential_average_factor = 0.0
        else:
            exponential_average_factor = self.momentum
        if self.training and self.track_running_stats:
            if self.num_batches_tracked is None:
                raise AssertionError("num_batches_tracked must not be None")
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                exponential_average_factor = 1.0 / self.num_batches_tracked.item()
            else:
                exponential_average_factor = self.momentum
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        running_mean = self.running_mean if not self.training or self.track_running_stats else None
        running_var = self.running_var if not self.training or self.track_running_stats else None
        need_sync = bn_training and self.training and distributed.is_available() and distributed.is_initialized()
        if need_sync:
            if input.device.type == "cpu":
                raise ValueError(f"SyncBatchNorm expected input tensor to be on GPU or XPU or npu, but got "
                                 f"{input.device.type}")
            group = self.process_group or distributed.group.WORLD
            need_sync = distributed.get_world_size(group) > 1
        if not need_sync:
            return F.batch_norm(input, running_mean, running_var, self.weight, self.bias, bn_training,
                                exponential_average_factor, self.eps)
        if not bn_training:
            raise AssertionError("SyncBatchNorm syncs statistics only in training")
        return _SyncBatchNormFunction.apply(input, self.weight, self.bias, running_mean, running_var, self.eps,
                                            exponential_average_factor, group, distributed.get_world_size(group))

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every ``BatchNorm*D`` layer replaced by a ``SyncBatchNorm`` holding the same parameters,
        buffers and training mode (the module itself when it is one)."""
        module_output = module
        if isinstance(module, _BatchNorm):
            module_output = SyncBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                                          module.track_running_stats, process_group, bias=module.bias is not None)
            if module.affine:
                with no_grad():
                    module_output.weight = module.weight
                    module_output.bias = module.bias
            module_output.running_mean = module.running_mean
            module_output.running_var = module.running_var
            module_output.num_batches_tracked = module.num_batches_tracked
            module_output.training = module.training
            if hasattr(module, "qconfig"):
                module_output.qconfig = module.qconfig
        for name, child in module.named_children():
            module_output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return module_output
