"""torch.nn.functional's activations: the ReLU family, shrinks, RReLU and the softmax family."""
from __future__ import annotations

import warnings

from ...core.autograd.grad_mode import no_grad
from ...core.c10 import dtype as D
from ...core.dispatch.ops_namespace import aten
from .arguments import _check_tensor, _dtype_name, _floating_only

__all__ = [
    "relu", "relu_", "relu6", "elu", "elu_", "selu", "celu", "gelu", "silu", "mish", "hardtanh", "hardtanh_",
    "hardsigmoid", "hardswish", "leaky_relu", "leaky_relu_", "softplus", "logsigmoid", "threshold", "threshold_",
    "glu", "prelu", "tanh", "sigmoid", "softsign", "tanhshrink", "hardshrink", "softshrink", "rrelu", "rrelu_",
    "softmax", "log_softmax", "softmin", "gumbel_softmax", "selu_", "celu_",
]


def relu(input, inplace=False):
    _check_tensor(input, "relu")
    return aten.relu_.default(input) if inplace else aten.relu.default(input)


def relu_(input):
    _check_tensor(input, "relu_")
    return aten.relu_.default(input)


def relu6(input, inplace=False):
    _check_tensor(input, "relu6")
    return aten.relu6_.default(input) if inplace else aten.relu6.default(input)


def elu(input, alpha=1.0, inplace=False):
    _check_tensor(input, "elu")
    return aten.elu_.default(input, alpha) if inplace else aten.elu.default(input, alpha)


def elu_(input, alpha=1.0):
    _check_tensor(input, "elu_")
    return aten.elu_.default(input, alpha)


def selu(input, inplace=False):
    _check_tensor(input, "selu")
    return aten.selu_.default(input) if inplace else aten.selu.default(input)


def celu(input, alpha=1.0, inplace=False):
    _check_tensor(input, "celu")
    return aten.celu_.default(input, alpha) if inplace else aten.celu.default(input, alpha)


def selu_(input):
    """In-place ``selu``."""
    return selu(input, inplace=True)


def celu_(input, alpha=1.0):
    """In-place ``celu``."""
    return celu(input, alpha, inplace=True)


def gelu(input, approximate="none"):
    _check_tensor(input, "gelu")
    return aten.gelu.default(input, approximate=approximate)


def silu(input, inplace=False):
    _check_tensor(input, "silu")
    return aten.silu_.default(input) if inplace else aten.silu.default(input)


def mish(input, inplace=False):
    _check_tensor(input, "mish")
    return aten.mish_.default(input) if inplace else aten.mish.default(input)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    _check_tensor(input, "hardtanh")
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    op = aten.hardtanh_.default if inplace else aten.hardtanh.default
    return op(input, min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def hardsigmoid(input, inplace=False):
    _check_tensor(input, "hardsigmoid")
    return aten.hardsigmoid_.default(input) if inplace else aten.hardsigmoid.default(input)


def hardswish(input, inplace=False):
    _check_tensor(input, "hardswish")
    return aten.hardswish_.default(input) if inplace else aten.hardswish.default(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    _check_tensor(input, "leaky_relu")
    op = aten.leaky_relu_.default if inplace else aten.leaky_relu.default
    return op(input, negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def softplus(input, beta=1.0, threshold=20.0):
    _check_tensor(input, "softplus")
    return aten.softplus.default(input, beta, threshold)


def logsigmoid(input):
    _check_tensor(input, "log_sigmoid")
    return aten.log_sigmoid.default(input)


def _threshold(input, threshold, value, inplace):
    _check_tensor(input, "threshold")
    op = aten.threshold_.default if inplace else aten.threshold.default
    return op(input, threshold, value)


def threshold(input, threshold, value, inplace=False):
    """``value`` where input <= threshold, input elsewhere."""
    return _threshold(input, threshold, value, inplace)


def threshold_(input, threshold, value):
    return _threshold(input, threshold, value, True)


def glu(input, dim=-1):
    _check_tensor(input, "glu")
    return aten.glu.default(input, dim)


def prelu(input, weight):
    _check_tensor(input, "prelu")
    _check_tensor(weight, "prelu", "weight", 2)
    return aten.prelu.default(input, weight)


def tanh(input):
    return input.tanh()


def sigmoid(input):
    return input.sigmoid()


def softsign(input):
    return aten.div.Tensor(input, aten.add.Scalar(aten.abs.default(input), 1))


def tanhshrink(input):
    return aten.sub.Tensor(input, aten.tanh.default(input))


# --- shrinks and randomized leaky ReLU ------------------------------------------------------------------------------

_DTYPE_MAX = {D.float16: 65504.0, D.bfloat16: 3.3895313892515355e38, D.float32: 3.4028234663852886e38,
              D.float64: 1.7976931348623157e308}


def hardshrink(input, lambd=0.5):
    """0 where -lambd <= x <= lambd, x elsewhere (NaN stays NaN)."""
    _check_tensor(input, "hardshrink")
    _floating_only(input, "hardshrink_cpu")
    inside = (input >= -lambd) & (input <= lambd)
    return aten.masked_fill.Scalar(input, inside, 0)


def softshrink(input, lambd=0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 between (x * 0, so -0 and NaN as torch's)."""
    _check_tensor(input, "softshrink")
    _floating_only(input, "softshrink_check")
    hi = _DTYPE_MAX[input.dtype]
    if not 0 <= lambd <= hi:
        raise RuntimeError(f"lambda must be in range [0, {hi:g}] for input dtype {_dtype_name(input)}, but found "
                           f"{lambd:g}")
    middle = aten.where.self(input < -lambd, input + lambd, input * 0)
    return aten.where.self(input > lambd, input - lambd, middle)


def _rrelu(input, lower, upper, training, inplace):
    _check_tensor(input, "rrelu_" if inplace else "rrelu")
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    _floating_only(input, "rrelu_with_noise_out_cpu")
    # Negative (and zero) inputs are scaled by a slope drawn from U(lower, upper) by the default generator.
    with no_grad():
        slope = aten.empty_like.default(input).uniform_(lower, upper)
        factor = aten.where.self(input <= 0, slope, aten.ones_like.default(input))
    return input.mul_(factor) if inplace else input * factor


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    return _rrelu(input, lower, upper, training, inplace)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return _rrelu(input, lower, upper, training, True)


# --- softmax family -------------------------------------------------------------------------------------------------

def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as "
                  f"an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("softmax", input.dim(), _stacklevel)
    return aten.softmax.int(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim(), _stacklevel)
    return aten.log_softmax.int(input, dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("softmin", input.dim(), _stacklevel)
    return aten.softmax.int(aten.neg.default(input), dim, dtype)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """Samples from the Gumbel-softmax distribution: softmax((logits + g) / tau) with g = -log(Exp(1)) drawn from
    npusim's generator (so ``manual_seed`` repeats it); ``hard`` returns the one-hot of the argmax with the soft
    sample's gradient (straight-through)."""
    _check_tensor(logits, "gumbel_softmax")
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.")
    gumbels = -aten.empty_like.default(logits).exponential_().log()
    y_soft = aten.softmax.int((logits + gumbels) / tau, dim, None)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = aten.zeros_like.default(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft
