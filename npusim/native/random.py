"""Random ops: every draw goes through a Generator's Philox (seed, offset) state.

The array math lives in ``npusim.kernels.random``; here are torch's argument
rules, dtype defaults and errors, and the choice of generator (the one passed,
checked against the op's device, or the device's default).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..core.c10.user_frames import user_stacklevel
from ..core.c10 import dtype as D
from ..core.c10.generator import generator_for
from ..core.tensor import Tensor
from ..kernels import device_checks as DC
from ..kernels import complex as KX
from ..kernels import random as KR
from ..kernels.array_api import namespace_of
from . import common as C
from . import factories as F

# torch's ScalarType codes, as schema defaults write them ("ScalarType? dtype=4" is long)
_SCALAR_TYPE_CODES = {0: D.uint8, 1: D.int8, 2: D.int16, 3: D.int32, 4: D.int64, 5: D.float16, 6: D.float32,
                      7: D.float64, 11: D.bool, 15: D.bfloat16}
# How torch's C++ names each scalar type in range messages (its scalar_t type names).
_CPP_NAME = {D.bool: "bool", D.uint8: "unsigned char", D.int8: "signed char", D.int16: "short", D.int32: "int",
             D.int64: "long", D.float16: "c10::Half", D.bfloat16: "c10::BFloat16", D.float32: "float",
             D.float64: "double"}
_MANTISSA_DIGITS = {D.float16: 11, D.bfloat16: 8, D.float32: 24, D.float64: 53}


def _dtype_arg(dtype, default):
    if dtype is None:
        return default
    if isinstance(dtype, int) and not isinstance(dtype, bool):
        return _SCALAR_TYPE_CODES[dtype]
    return dtype


def _num(v) -> str:
    """A number as torch's C++ messages print it (2.0 -> "2", 0.5 -> "0.5")."""
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _require_float(dt, kernel):
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{C.TORCH_NAME[dt]}'")


def _complex_draw(draw, dt):
    """``draw`` made complex when ``dt`` is, as torch draws complex tensors: the real and imaginary parts as a
    trailing pair of the parts' dtype (``draw`` already holds torch's std / sqrt(2) for normal draws)."""
    if not dt.is_complex:
        return draw

    def complex_draw(xp, key, c, s, d):
        parts, blocks = draw(xp, key, c, tuple(s) + (2,), dt.to_real().np)
        return KX.from_parts(xp, parts, d), blocks
    return complex_draw


def _real(dt):
    return dt.to_real() if dt.is_complex else dt


def _draw_new(size, dtype, device, layout, generator, draw):
    """A new tensor filled by ``draw(xp, key, counter, shape, np_dtype) -> (array, blocks)``."""
    dt, dev = F._target(dtype, device, layout)
    shape = F._checked_shape(size)
    g = generator_for(generator, dev)
    return F._allocate(lambda xp, s, d: g.draw(lambda key, c: draw(xp, key, c, s, d)), shape, dt, dev)


def _fill(self, generator, draw, into=False):
    """Fill ``self`` in place with ``draw(xp, key, counter, shape, np_dtype)``.

    ``into``: ``draw`` also takes ``out=``, a C-contiguous host array of a real dtype to draw straight into (the
    same values, without a temporary the size of ``self`` and the copy); it reads no array of ``self``'s."""
    a = self._a
    g = generator_for(generator, self._device)
    if into and a.__class__ is np.ndarray and a.flags.c_contiguous and a.flags.writeable \
            and not self.dtype.is_complex:
        g.draw(lambda key, c: draw(np, key, c, a.shape, a.dtype, out=a))
        return C.write_out(self, a)
    xp = namespace_of(a)
    values = g.draw(lambda key, c: draw(xp, key, c, a.shape, a.dtype))
    return C.write_out(self, values)


# --- range checks (torch's check_from_to_in_range and check_uniform_bounds) -------------------------------

def _check_range(low, high):
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")


def _check_in_dtype(dt, low, high_inclusive):
    """Integer draws must fit the dtype; floats beyond their exact-integer range only warn, as in torch."""
    if dt.is_floating_point:
        digits = _MANTISSA_DIGITS[dt]
        for value, name in ((low, "from"), (high_inclusive, "to - 1")):
            if not -(2 ** digits) <= value <= 2 ** digits:
                warnings.warn(f"{name} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision limitations "
                              f"{_CPP_NAME[dt]} can support discrete uniform distribution "
                              f"only within this range. This warning will become an error in version 1.7 release, "
                              f"please fix the code in advance", UserWarning, stacklevel=user_stacklevel())
        return
    lo, hi = (0, 1) if dt is D.bool else (int(np.iinfo(dt.np).min), int(np.iinfo(dt.np).max))
    for value, name in ((low, "from"), (high_inclusive, "to - 1")):
        if not lo <= value <= hi:
            raise RuntimeError(f"{name} is out of bounds for {_CPP_NAME[dt]}")


def _integers(dt, low, high):
    """The draw of integers in [low, high) for dtype ``dt``, after torch's checks."""
    _check_range(low, high)
    _check_in_dtype(dt, low, high - 1)
    return lambda xp, key, c, s, d, out=None: KR.integers(xp, key, c, s, low, high, d, out)


def _dtype_range(dt):
    """random_()'s default range: [0, 2**mantissa] for floats, [0, max] for integers."""
    if dt.is_floating_point:
        return 0, 2 ** _MANTISSA_DIGITS[dt] + 1
    if dt is D.bool:
        return 0, 2
    return 0, int(np.iinfo(dt.np).max) + 1


def _check_uniform(dt, low, high):
    _require_float(dt, "check_uniform_bounds")
    if dt.is_floating_point:
        info = D.finfo(dt)
        lo, hi = float(info.min), float(info.max)
        for value, name in ((low, "from"), (high, "to")):
            if not lo <= value <= hi:
                raise RuntimeError(f"{name} is out of bounds for {_CPP_NAME[dt]}")
    if low > high:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={_num(low)} > "
                           f"to={_num(high)}")
    if high - low > float(D.finfo(dt).max):
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<{C.TORCH_NAME[dt]}>::max(), but found "
                           f"to={_num(high)} and from={_num(low)} which result in to-from to exceed the limit")


def _check_std(std):
    if not std >= 0:   # NaN too
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")


# --- factories ---------------------------------------------------------------------------------------

def rand(size, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    dt = _dtype_arg(dtype, D.get_default_dtype())
    _check_uniform(_real(dt), 0.0, 1.0)
    return _draw_new(size, dt, device, layout, generator, _complex_draw(KR.uniform, dt))


def randn(size, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    dt = _dtype_arg(dtype, D.get_default_dtype())
    if 0 not in tuple(size):   # torch's normal kernel (and its dtype check) never runs for no elements
        _require_float(_real(dt), "normal_kernel_cpu")
    return _draw_new(size, dt, device, layout, generator, _complex_draw(_normal(dt), dt))


def randint(high, size, generator=None, dtype=4, layout=None, device=None, pin_memory=None):
    return randint_low(0, high, size, generator=generator, dtype=dtype, layout=layout, device=device)


def randint_low(low, high, size, generator=None, dtype=4, layout=None, device=None, pin_memory=None):
    dt = _dtype_arg(dtype, D.int64)
    return _draw_new(size, dt, device, layout, generator, _integers(dt, low, high))


_PERMUTATION_LIMIT = {D.float16: (2049, "2049", "Half"), D.float32: (2 ** 24 + 1, "2^24+1", "Float"),
                      D.float64: (2 ** 53 + 1, "2^53+1", "Double")}


def randperm(n, generator=None, dtype=4, layout=None, device=None, pin_memory=None):
    dt = _dtype_arg(dtype, D.int64)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    if dt is D.bool:
        raise NotImplementedError("\"randperm\" not implemented for 'Bool'")
    limit = _PERMUTATION_LIMIT.get(dt)
    if limit is not None and n > limit[0]:
        raise RuntimeError(f"n cannot be greater than {limit[1]} for {limit[2]} type.")
    if not dt.is_floating_point and n - 1 > int(np.iinfo(dt.np).max):
        raise RuntimeError(f"value cannot be converted to type {dt.np.name}_t without overflow")
    return _draw_new((n,), dt, device, layout, generator,
                     lambda xp, key, c, s, d: KR.permutation(xp, key, c, n, d))


def normal_float_float(mean, std, size, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    _check_std(std)
    dt = _dtype_arg(dtype, D.get_default_dtype())
    _require_float(dt, "normal_kernel_cpu")
    return _draw_new(size, dt, device, layout, generator,
                     lambda xp, key, c, s, d: KR.normal(xp, key, c, s, d, mean, std))


def _like(self, dtype, device, generator, draw, memory_format=None):
    dt = self.dtype if dtype is None else _dtype_arg(dtype, self.dtype)
    dev = self._device if device is None else device
    t = _draw_new(self._a.shape, dt, dev, None, generator, draw)
    if memory_format in (None, "preserve_format") and self._a.flags.c_contiguous:
        return t
    # laid out as empty_like would (self's dense stride order, or the memory format asked for)
    out = F.empty_like(self, dtype=t.dtype, device=t._device, memory_format=memory_format)
    return C.write_out(out, t._a)


def rand_like(self, generator=None, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    dt = self.dtype if dtype is None else _dtype_arg(dtype, self.dtype)
    _check_uniform(_real(dt), 0.0, 1.0)
    return _like(self, dtype, device, generator, _complex_draw(KR.uniform, dt), memory_format)


def randn_like(self, generator=None, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    dt = self.dtype if dtype is None else _dtype_arg(dtype, self.dtype)
    _require_float(_real(dt), "normal_kernel_cpu")
    return _like(self, dtype, device, generator, _complex_draw(_normal(dt), dt), memory_format)


def _normal(dt, mean=0.0, std=1.0):
    """Normal draws of ``dt``'s parts: torch gives each part of a complex value the variance std ** 2 / 2."""
    if dt.is_complex:
        std = std / math.sqrt(2.0)
    if mean == 0.0 and std == 1.0:
        return KR.normal
    return lambda xp, key, c, s, d, out=None: KR.normal(xp, key, c, s, d, mean, std, out)


def randint_like(self, high, generator=None, dtype=None, layout=None, device=None, pin_memory=None,
                 memory_format=None):
    return randint_like_low(self, 0, high, generator=generator, dtype=dtype, device=device,
                            memory_format=memory_format)


def randint_like_low(self, low, high, generator=None, dtype=None, layout=None, device=None, pin_memory=None,
                     memory_format=None):
    dt = self.dtype if dtype is None else _dtype_arg(dtype, self.dtype)
    return _like(self, dtype, device, generator, _integers(dt, low, high), memory_format)


# --- in-place fills -----------------------------------------------------------------------------------------

def uniform_(self, from_=0.0, to=1.0, generator=None):
    _check_uniform(_real(self.dtype), from_, to)
    def draw(xp, key, c, s, d, out=None):
        return KR.uniform(xp, key, c, s, d, from_, to, out)
    return _fill(self, generator, _complex_draw(draw, self.dtype), into=True)


def normal_(self, mean=0.0, std=1.0, generator=None):
    _check_std(std)
    if self.numel() == 0:   # torch's kernel (and its dtype check) never runs for no elements
        return self
    _require_float(_real(self.dtype), "normal_kernel_cpu")
    return _fill(self, generator, _complex_draw(_normal(self.dtype, mean, std), self.dtype), into=True)


def exponential_(self, lambd=1.0, generator=None):
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"Exponential distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {C.TORCH_NAME[self.dtype]}")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_num(lambd)}")
    return _fill(self, generator, lambda xp, key, c, s, d, out=None: KR.exponential(xp, key, c, s, d, lambd, out),
                 into=True)


# torch's C++ type names in the Cauchy dtype message (typeid names, not ScalarType names)
_CAUCHY_TYPE_NAME = {D.bool: "bool", D.uint8: "unsigned char", D.int8: "signed char", D.int16: "short int",
                     D.int32: "int", D.int64: "long int"}


def cauchy_(self, median=0.0, sigma=1.0, generator=None):
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"Cauchy distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {_CAUCHY_TYPE_NAME.get(self.dtype, self.dtype)}")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_num(sigma)}")
    return _fill(self, generator, lambda xp, key, c, s, d: KR.cauchy(xp, key, c, s, d, median, sigma))


def log_normal_(self, mean=1.0, std=2.0, generator=None):
    _require_float(self.dtype, "log_normal_cpu")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_num(std)}")
    return _fill(self, generator, lambda xp, key, c, s, d: KR.log_normal(xp, key, c, s, d, mean, std))


def geometric_(self, p, generator=None):
    if self.dtype is D.bool:
        raise NotImplementedError("\"geometric_cpu\" not implemented for 'Bool'")
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_num(p)}")
    return _fill(self, generator, lambda xp, key, c, s, d: KR.geometric(xp, key, c, s, d, p))


def random_(self, generator=None):
    low, high = _dtype_range(self.dtype)
    return _fill(self, generator, lambda xp, key, c, s, d, out=None: KR.integers(xp, key, c, s, low, high, d, out),
                 into=True)


def random_from(self, from_, to=None, generator=None):
    if to is None:
        high = _dtype_range(self.dtype)[1]
        if self.dtype is D.int64 and from_ == -2 ** 63:
            high = 2 ** 63   # the full 64-bit range, as torch's random_full_64_bits_range
    else:
        high = to
    return _fill(self, generator, _integers(self.dtype, from_, high), into=True)


def random_to(self, to, generator=None):
    return random_from(self, 0, to, generator)


# --- distributions parameterised by tensors ----------------------------------------------------------------

def _bernoulli_p_check(p):
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_num(p)}")


def bernoulli_float_(self, p=0.5, generator=None):
    _bernoulli_p_check(p)
    return _fill(self, generator, lambda xp, key, c, s, d, out=None: KR.bernoulli(xp, key, c, p, s, d, out),
                 into=True)


def _probabilities(p, dev):
    pa = C.array_operand(p, np.dtype(np.float64), dev)
    xp = namespace_of(pa) if hasattr(pa, "shape") else np
    if hasattr(pa, "shape") and DC.deferred(pa):   # as torch's CUDA kernel: asserted on the device
        DC.record(xp.any((pa < 0) | (pa > 1)), DC.BERNOULLI_P)
    elif bool(xp.any((pa < 0) | (pa > 1))):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message "
                           "be improved?  If so, please report an enhancement request to PyTorch.)")
    return pa


def _check_expandable(shape, target):
    """torch's expand check: ``p`` must broadcast to ``self``'s shape without growing it."""
    if len(shape) > len(target):
        raise RuntimeError(f"expand: the number of sizes provided ({len(target)}) must be greater or equal to the "
                           f"number of dimensions in the tensor ({len(shape)})")
    for i in range(1, len(shape) + 1):
        if shape[-i] != target[-i] and shape[-i] != 1:
            raise RuntimeError(f"The expanded size of the tensor ({target[-i]}) must match the existing size "
                               f"({shape[-i]}) at non-singleton dimension {len(target) - i}.  Target sizes: "
                               f"{list(target)}.  Tensor sizes: {list(shape)}")


def bernoulli_tensor_(self, p, generator=None):
    if isinstance(p, Tensor):
        _check_expandable(tuple(p._a.shape), tuple(self._a.shape))
    pa = _probabilities(p, self._device)
    return _fill(self, generator, lambda xp, key, c, s, d: KR.bernoulli(xp, key, c, pa, s, d))


def bernoulli(self, generator=None):
    """Each element is 1 with the probability given by ``self``."""
    if self.numel():   # torch's kernel checks the dtype only when it has an element to draw
        _require_float(self.dtype, "bernoulli_tensor_cpu_p_")
    out = F.empty_like(self)
    return bernoulli_tensor_(out, self, generator)


def bernoulli_p(self, p, generator=None):
    _bernoulli_p_check(p)
    out = F.empty_like(self)
    return bernoulli_float_(out, p, generator)


def bernoulli_t(self, p, generator=None):
    out = F.empty_like(self)
    return bernoulli_tensor_(out, p, generator)


def _normal_tensor(mean, std, generator):
    dev = C.common_device(mean, std)
    dt = (mean if isinstance(mean, Tensor) else std).dtype   # torch: the output takes mean's options
    _require_float(dt, "normal_kernel_cpu")
    m = C.array_operand(mean, dt.np, dev) if isinstance(mean, Tensor) else mean
    s = C.array_operand(std, dt.np, dev) if isinstance(std, Tensor) else std
    xp = namespace_of(m if hasattr(m, "shape") else s)
    if bool(xp.any(xp.asarray(s) < 0)):
        raise RuntimeError("normal expects all elements of std >= 0.0")
    shape = C.broadcast_shapes(np.shape(m), np.shape(s))
    g = generator_for(generator, dev)
    z = g.draw(lambda key, c: KR.normal(xp, key, c, shape, np.float64))
    return C.make((z * s + m).astype(dt.np), dev)


def normal_tensor_float(mean, std=1.0, generator=None):
    _check_std(std)
    return _normal_tensor(mean, std, generator)


def normal_float_tensor(mean, std, generator=None):
    return _normal_tensor(mean, std, generator)


def normal_tensor_tensor(mean, std, generator=None):
    return _normal_tensor(mean, std, generator)


def multinomial(self, num_samples, replacement=False, generator=None):
    a = self._a
    if a.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not self.is_floating_point():
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{C.tname(a.dtype)}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n_cat = a.shape[-1]
    if not replacement and num_samples > n_cat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    rows = a.size // max(n_cat, 1)
    C.check_capacity(rows * num_samples * 8, self._device)     # the int64 samples (and as many float64 draws)
    C.check_capacity(a.size * 8, self._device)                 # the float64 copy of an expanded input
    xp = namespace_of(a)
    p = a.astype(np.float64).reshape(-1, n_cat)
    invalid = xp.any(~xp.isfinite(p) | (p < 0))
    total = p.sum(axis=1)
    empty = xp.any(total <= 0)
    if DC.deferred(p):   # on a GPU checked on the device and reported later (kernels/device_checks.py)
        DC.record(invalid, DC.MULTINOMIAL)
        DC.record(empty & ~invalid, DC.MULTINOMIAL_SUM)
    elif bool(invalid):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    elif bool(empty):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rows = p.shape[0]
    g = generator_for(generator, self._device)
    if replacement:
        u = g.draw(lambda key, c: KR.uniform(xp, key, c, (rows, num_samples), np.float64))
        cdf = xp.cumsum(p / total[:, None], axis=1)
        cdf[:, -1] = 1.0
        offsets = xp.arange(rows, dtype=np.float64)[:, None]
        # one search over all rows: row r's CDF lives in [r, r + 1]
        flat = (cdf + offsets).reshape(-1)
        idx = xp.searchsorted(flat, (u + offsets).reshape(-1), side="right").reshape(rows, num_samples)
        idx = xp.minimum(idx - (xp.arange(rows)[:, None] * n_cat), n_cat - 1)
    else:
        # exponential race: the k smallest of E_i / p_i are a sample without replacement
        e = g.draw(lambda key, c: KR.exponential(xp, key, c, (rows, n_cat), np.float64))
        with np.errstate(divide="ignore"):
            keys = xp.where(p > 0, e / p, np.inf)
        idx = xp.argsort(keys, axis=1, kind="stable")[:, :num_samples]
    out = idx.astype(np.int64)
    return C.make(out.reshape(num_samples) if a.ndim == 1 else out, self._device)


def dropout(input, p, train):
    """CompositeImplicitAutograd: input * Bernoulli(1 - p) mask / (1 - p)."""
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not train or p == 0:
        return input
    from ..core.dispatch.ops_namespace import aten
    if p == 1:
        return aten.mul.Tensor(input, 0.0)
    mask = aten.bernoulli.p(aten.empty_like.default(input), 1 - p)
    return aten.mul.Tensor(aten.mul.Tensor(input, mask), 1.0 / (1 - p))


def native_dropout(input, p, train=None):
    if train is False:
        xp = namespace_of(input._a)
        return C.make(input._a.copy(), input._device), C.make(xp.ones(input._a.shape, dtype=np.bool_),
                                                              input._device)
    keep = bernoulli_p(F.empty_like(input, dtype=D.bool), 1 - p)
    scale = 0.0 if p == 1 else 1.0 / (1 - p)
    out = (input._a * keep._a * scale).astype(input._a.dtype)
    return C.make(out, input._device), keep


KERNELS = {
    "rand": rand, "rand.generator": rand, "randn": randn, "randn.generator": randn,
    "randint": randint, "randint.generator": randint, "randint.low": randint_low,
    "randint.low_generator": randint_low, "randperm": randperm, "randperm.generator": randperm,
    "normal.float_float": normal_float_float, "normal.Tensor_float": normal_tensor_float,
    "normal.float_Tensor": normal_float_tensor, "normal.Tensor_Tensor": normal_tensor_tensor,
    "normal_": normal_, "uniform_": uniform_, "exponential_": exponential_,
    "cauchy_": cauchy_, "log_normal_": log_normal_, "geometric_": geometric_,
    "random_": random_, "random_.from": random_from, "random_.to": random_to,
    "bernoulli": bernoulli, "bernoulli.p": bernoulli_p, "bernoulli.Tensor": bernoulli_t,
    "bernoulli_.float": bernoulli_float_, "bernoulli_.Tensor": bernoulli_tensor_,
    "multinomial": multinomial, "rand_like": rand_like, "rand_like.generator": rand_like,
    "randn_like": randn_like, "randn_like.generator": randn_like, "randint_like": randint_like,
    "randint_like.generator": randint_like, "randint_like.low_dtype": randint_like_low,
    "randint_like.low_generator_dtype": randint_like_low, "native_dropout": native_dropout,
}
# dropout decomposes into ops that each dispatch (so autograd and profiling see them)
COMPOSITE_IMPLICIT = {"dropout": dropout}
