"""``SyncBatchNorm``: batch norm whose batch statistics are those of the whole batch across the ranks of a
process group (``torch.nn.SyncBatchNorm``).

Without an initialised ``npusim.distributed`` (or in a group of one) it is plain batch norm. Otherwise the
per-channel sums and counts, then the sums of squared deviations from the global mean, are all-reduced; the
all-reduce is differentiable (its backward all-reduces the gradient), so backward gives every rank the gradient
of the global statistics, as torch's kernel does with its all-reduced ``sum_dy`` and ``sum_dy_xmu``.
"""
from __future__ import annotations

from ...api.operators import cat
from ...autograd import Function
from ...core.autograd.grad_mode import no_grad
from ...core.c10 import dtype as D
from ...core.factories import tensor as _tensor
from .. import functional as F
from .batchnorm import _BatchNorm

__all__ = ["SyncBatchNorm"]


class _AllReduceSum(Function):
    """Sum over the group in forward; the gradient, summed over the group, in backward."""

    @staticmethod
    def forward(ctx, input, group):
        from ... import distributed
        ctx.group = group
        output = input.clone()
        distributed.all_reduce(output, group=group)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        from ... import distributed
        grad = grad_output.clone()
        distributed.all_reduce(grad, group=ctx.group)
        return grad, None


def _sync_batch_norm(input, weight, bias, running_mean, running_var, eps, momentum, group):
    channels = input.shape[1]
    dims = [0] + list(range(2, input.dim()))
    shape = [1, channels] + [1] * (input.dim() - 2)
    count = _tensor([input.numel() // max(channels, 1)], dtype=input.dtype, device=input.device)
    sums = _AllReduceSum.apply(cat([input.sum(dims), count], 0), group)
    total = sums[channels:].detach()
    if float(total.item()) <= 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {list(input.shape)}")
    mean = sums[:channels] / total
    centered = input - mean.reshape(shape)
    var = _AllReduceSum.apply((centered * centered).sum(dims), group) / total
    if running_mean is not None:
        with no_grad():
            n = float(total.item())
            running_mean.mul_(1 - momentum).add_(mean.detach().to(running_mean.dtype) * momentum)
            running_var.mul_(1 - momentum).add_(var.detach().to(running_var.dtype) * (momentum * n / (n - 1)))
    out = centered * (var + eps).rsqrt().reshape(shape)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


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
        return _sync_batch_norm(input, self.weight, self.bias, running_mean, running_var, self.eps,
                                exponential_average_factor, group)

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
