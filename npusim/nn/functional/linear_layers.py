"""torch.nn.functional's ``linear`` and ``bilinear``."""
from __future__ import annotations

from ...core.dispatch.ops_namespace import aten
from .arguments import _check_tensor

__all__ = [
    "linear", "bilinear",
]


def linear(input, weight, bias=None):
    _check_tensor(input, "linear")
    _check_tensor(weight, "linear", "weight", 2)
    if bias is not None:
        _check_tensor(bias, "linear", "bias", 3)
    return aten.linear.default(input, weight, bias)


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = x1[..., :] @ weight[o] @ x2[..., :] + bias[o], with aten::bilinear's checks."""
    _check_tensor(input1, "bilinear", "input1", 1)
    _check_tensor(input2, "bilinear", "input2", 2)
    _check_tensor(weight, "bilinear", "weight", 3)
    if bias is not None:
        _check_tensor(bias, "bilinear", "bias", 4)
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}")
    for i in range(input1.dim() - 1):
        if input1.size(i) != input2.size(i):
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: got {input1.size(i)} "
                               f"and {input2.size(i)}")
    out_features, in1, in2 = weight.shape
    if input1.size(-1) != in1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {input1.size(-1)} but "
                           f"expected {in1}")
    if input2.size(-1) != in2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {input2.size(-1)} but "
                           f"expected {in2}")
    if bias is not None and bias.size(0) != out_features:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {bias.size(0)} but expected "
                           f"{out_features}")
    # One matmul against weight laid out as (in1, out * in2), then a product-sum over in2.
    mixed = input1.matmul(weight.permute(1, 0, 2).reshape(in1, out_features * in2))
    mixed = mixed.unflatten(-1, (out_features, in2))
    out = (mixed * input2.unsqueeze(-2)).sum(-1)
    return out if bias is None else out + bias
