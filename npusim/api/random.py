"""Public random ops (``npusim.rand``, ``randn``, ``randint``...), the samplers of distributions (``poisson``,
``binomial``, ``_standard_gamma``, ``_sample_dirichlet``) and the in-place Tensor methods."""
from __future__ import annotations

from ..core.autograd.derivatives import derivative
from ..core.factories import parse_size
from ..core.dispatch.ops_namespace import aten
from .factories import NO_SIZE, _check_dtype, _finish, size_arguments
from ..core.tensor import Tensor

# (torch exports _standard_gamma and _sample_dirichlet without listing them)
__all__ = ["rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal",
           "bernoulli", "multinomial", "poisson", "binomial"]


def rand(*sizes, size=NO_SIZE, generator=None, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False):
    sizes = size_arguments("rand", sizes, size)
    dtype = _check_dtype("rand", dtype)
    t = aten.rand.generator(parse_size(sizes, "rand"), generator=generator, dtype=dtype, layout=layout,
                            device=device)
    return _finish(t, requires_grad, out, pin_memory)


def randn(*sizes, size=NO_SIZE, generator=None, out=None, dtype=None, layout=None, device=None,
          requires_grad=False, pin_memory=False):
    sizes = size_arguments("randn", sizes, size)
    dtype = _check_dtype("randn", dtype)
    t = aten.randn.generator(parse_size(sizes, "randn"), generator=generator, dtype=dtype, layout=layout,
                             device=device)
    return _finish(t, requires_grad, out, pin_memory)


def randint(first=NO_SIZE, /, high=NO_SIZE, size=None, *, low=NO_SIZE, generator=None, out=None, dtype=None,
            layout=None, device=None, requires_grad=False, pin_memory=False):
    """``randint(high, size)`` or ``randint(low, high, size)``, by position or keyword.

    A lone first argument is ``high``; ``low`` by keyword needs ``high`` too (torch's two signatures).
    """
    if low is not NO_SIZE:
        if first is not NO_SIZE:
            raise TypeError("randint() received an invalid combination of arguments - got low both by position "
                            "and by keyword")
        if high is NO_SIZE or high is None:
            raise TypeError('randint() missing 1 required positional argument: "high" (low was given by keyword)')
        if size is None:
            raise TypeError("randint() missing required argument 'size'")
    else:
        low = first
    if size is None:
        if high is None or high is NO_SIZE:
            raise TypeError("randint() missing required argument 'size'")
        low, high, size = 0, low, high
    elif high is None or high is NO_SIZE and low is NO_SIZE:
        raise TypeError("randint() missing required argument 'high'")
    elif high is NO_SIZE:
        low, high = 0, low   # randint(high, size=...)
    low = 0 if low is NO_SIZE else low
    for v in (low, high):
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError(f"randint() received an invalid combination of arguments - got ({type(low).__name__}, "
                            f"{type(high).__name__}, {type(size).__name__}): low and high must be ints")
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"randint(): argument 'size' must be tuple of ints, not {type(size).__name__}")
    dtype = _check_dtype("randint", dtype)
    t = aten.randint.low_generator(int(low), int(high), parse_size((size,), "randint"), generator=generator,
                                   dtype=dtype, layout=layout, device=device)
    return _finish(t, requires_grad, out, pin_memory)


def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False):
    dtype = _check_dtype("randperm", dtype)
    t = aten.randperm.generator(n, generator=generator, dtype=dtype, layout=layout, device=device)
    return _finish(t, requires_grad, out, pin_memory)


def rand_like(input, *, generator=None, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None):
    dtype = _check_dtype("rand_like", dtype)
    t = aten.rand_like.generator(input, generator=generator, dtype=dtype, device=device,
                                 memory_format=memory_format)
    return _finish(t, requires_grad, None)


def randn_like(input, *, generator=None, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None):
    dtype = _check_dtype("randn_like", dtype)
    t = aten.randn_like.generator(input, generator=generator, dtype=dtype, device=device,
                                  memory_format=memory_format)
    return _finish(t, requires_grad, None)


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, layout=None, device=None,
                 requires_grad=False, memory_format=None):
    """``randint_like(input, high)`` or ``randint_like(input, low, high)``."""
    if high is None:
        low, high = 0, low
    dtype = _check_dtype("randint_like", dtype)
    t = aten.randint_like.low_generator_dtype(input, low, high, generator=generator, dtype=dtype, device=device,
                                              memory_format=memory_format)
    return _finish(t, requires_grad, None)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
           requires_grad=False, pin_memory=False):
    """normal(mean, std) with tensors or numbers; normal(mean, std, size) for numbers."""
    mt, st = isinstance(mean, Tensor), isinstance(std, Tensor)
    for v in (mean, std):
        if not (isinstance(v, (Tensor, int, float)) or type(v).__module__ == "numpy"):
            raise TypeError(f"normal() received an invalid combination of arguments - got ({type(mean).__name__}, "
                            f"{type(std).__name__}): mean and std must be Tensors or numbers")
    if mt and st:
        t = aten.normal.Tensor_Tensor(mean, std, generator=generator)
    elif mt:
        t = aten.normal.Tensor_float(mean, float(std), generator=generator)
    elif st:
        t = aten.normal.float_Tensor(float(mean), std, generator=generator)
    else:
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments: with float mean and std, "
                            "size is required")
        t = aten.normal.float_float(float(mean), float(std), parse_size((size,), "normal"), generator=generator,
                                    dtype=dtype, layout=layout, device=device)
    return _finish(t, requires_grad, out, pin_memory)


def bernoulli(input, p=None, *, generator=None, out=None):
    """``bernoulli(input)`` draws with the probabilities in ``input``; ``bernoulli(input, p)`` with a float ``p``."""
    if p is None:
        t = aten.bernoulli.default(input, generator=generator)
    elif isinstance(p, Tensor):
        raise TypeError("bernoulli() received an invalid combination of arguments - got (Tensor, Tensor), but "
                        "expected one of:\n * (Tensor input, *, npusim.Generator generator = None, Tensor out = None)"
                        "\n * (Tensor input, float p, *, npusim.Generator generator = None)\n")
    else:
        t = aten.bernoulli.p(input, float(p), generator=generator)
    return _finish(t, False, out)


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    return _finish(aten.multinomial.default(input, num_samples, replacement, generator=generator), False, out)


# --- samplers of distributions ------------------------------------------------------------------------

def _standard_gamma(input, generator=None):
    return aten._standard_gamma.default(input, generator=generator)


def _sample_dirichlet(input, generator=None):
    return aten._sample_dirichlet.default(input, generator=generator)


def poisson(input, generator=None):
    return aten.poisson.default(input, generator=generator)


def binomial(count, prob, generator=None):
    return aten.binomial.default(count, prob, generator=generator)


@derivative("poisson")
def _poisson_backward(ctx, g):
    """Zero: the samples are piecewise constant in the rate (torch's derivative)."""
    return aten.zeros_like.default(g)


# --- Tensor methods --------------------------------------------------------------------------------------

def _uniform_(self, from_=0.0, to=1.0, *, generator=None, **kw):
    if "from" in kw:
        from_ = kw.pop("from")
    return aten.uniform_.default(self, from_, to, generator=generator)


def _normal_(self, mean=0.0, std=1.0, *, generator=None):
    return aten.normal_.default(self, mean, std, generator=generator)


def _exponential_(self, lambd=1.0, *, generator=None):
    return aten.exponential_.default(self, lambd, generator=generator)


def _bernoulli_(self, p=0.5, *, generator=None):
    if isinstance(p, Tensor):
        return aten.bernoulli_.Tensor(self, p, generator=generator)
    return aten.bernoulli_.float(self, p, generator=generator)


def _cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    return aten.cauchy_.default(self, median, sigma, generator=generator)


def _log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    return aten.log_normal_.default(self, mean, std, generator=generator)


def _geometric_(self, p, *, generator=None):
    return aten.geometric_.default(self, p, generator=generator)


_UNSET = object()


def _random_(self, *args, generator=None, **kw):
    """``random_()``, ``random_(to)``, ``random_(from, to)`` (``to`` may be None: up to the dtype's maximum)."""
    if len(args) > 2:
        raise TypeError(f"random_() takes at most 2 positional arguments ({len(args)} given)")
    frm = kw.pop("from", _UNSET)
    to = kw.pop("to", _UNSET)
    if kw:
        raise TypeError(f"random_() got an unexpected keyword argument '{next(iter(kw))}'")
    if args:
        if frm is not _UNSET and len(args) >= 1:
            raise TypeError("random_() got multiple values for argument 'from'")
        if len(args) == 2:
            frm, to = args
        elif to is _UNSET:
            to = args[0]
        else:
            frm = args[0]
    if frm is _UNSET and to is _UNSET:
        return aten.random_.default(self, generator=generator)
    if frm is _UNSET:
        return aten.random_.to(self, to, generator=generator)
    return getattr(aten.random_, "from")(self, frm, None if to is _UNSET else to,
                                         generator=generator)  # "from" is a Python keyword


Tensor.uniform_ = _uniform_
Tensor.normal_ = _normal_
Tensor.exponential_ = _exponential_
Tensor.cauchy_ = _cauchy_
Tensor.log_normal_ = _log_normal_
Tensor.geometric_ = _geometric_
Tensor.bernoulli_ = _bernoulli_
Tensor.random_ = _random_
Tensor.bernoulli = lambda self, p=None, *, generator=None: bernoulli(self, p, generator=generator)
Tensor.multinomial = lambda self, num_samples, replacement=False, *, generator=None: multinomial(
    self, num_samples, replacement, generator=generator)
