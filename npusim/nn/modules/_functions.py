"""autograd Functions behind modules, as torch.nn.modules._functions: the legacy cross-channel LRN's own forward
and backward (the same running-window sums as torch's, in the same order)."""
from __future__ import annotations

from ...autograd import Function
from ...api.factories import zeros as _zeros, zeros_like as _zeros_like

__all__ = ["CrossMapLRN2d"]


class CrossMapLRN2d(Function):
    """The legacy cross-channel LRN with its own backward (torch.nn.modules._functions.CrossMapLRN2d)."""

    @staticmethod
    def forward(ctx, input, size, alpha=1e-4, beta=0.75, k=1):
        ctx.size, ctx.alpha, ctx.beta, ctx.k = size, alpha, beta, k
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        channels = input.size(1)
        input_square = input.pow(2)
        scale = _zeros_like(input)
        pre_pad = int((size - 1) / 2 + 1)
        pre_pad_crop = min(pre_pad, channels)
        scale_first = scale.select(1, 0)
        for c in range(pre_pad_crop):   # the first channel's window
            scale_first.add_(input_square.select(1, c))
        # each next window: the previous one, plus the channel entering, minus the one leaving (from c > pre_pad
        # on, as the legacy kernel does)
        for c in range(1, channels):
            scale_current = scale.select(1, c)
            scale_current.copy_(scale.select(1, c - 1))
            if c < channels - pre_pad + 1:
                scale_current.add_(input_square.select(1, c + pre_pad - 1), alpha=1)
            if c > pre_pad:
                scale_current.add_(input_square.select(1, c - pre_pad), alpha=-1)
        scale.mul_(alpha / size).add_(k)
        ctx.scale = scale
        output = scale.pow(-beta).mul_(input)
        ctx.save_for_backward(input, output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, output = ctx.saved_tensors
        batch_size, channels, height, width = input.shape
        padded_ratio = _zeros(channels + ctx.size - 1, height, width, dtype=input.dtype, device=input.device)
        cache_ratio_value = 2 * ctx.alpha * ctx.beta / ctx.size
        inverse_pre_pad = int(ctx.size - (ctx.size - 1) / 2)
        grad_input = ctx.scale.pow(-ctx.beta).mul_(grad_output)
        padded_ratio_center = padded_ratio.narrow(0, inverse_pre_pad, channels)
        for n in range(batch_size):
            padded_ratio_center.copy_(grad_output[n] * output[n])
            padded_ratio_center.div_(ctx.scale[n])
            accum_ratio = padded_ratio.narrow(0, 0, ctx.size - 1).sum(0)
            for c in range(channels):
                accum_ratio.add_(padded_ratio[c + ctx.size - 1])
                grad_input[n][c].addcmul_(input[n][c], accum_ratio, value=-cache_ratio_value)
                accum_ratio.add_(padded_ratio[c], alpha=-1)
        return grad_input, None, None, None, None
