"""Differential fuzz of argument handling against torch 2.13.

Hypothesis draws calls over a broad slice of the public API (creation, views and shape ops, reductions with
dim/keepdim/dtype, elementwise ops with every kind of Python scalar, indexing, in-place ops on views and
leaves), with valid and invalid arguments alike. Each call runs on torch and on npusim: either both raise
(exception types compared; see ``_EQUIVALENT``) or both succeed with the same shapes, dtypes and values, and
leave their inputs the same.

``NPUSIM_FUZZ_EXAMPLES`` sets the examples per test (CI keeps the default: about a thousand calls, ~10 s);
``NPUSIM_FUZZ_RANDOM=1`` draws new examples instead of the fixed ones;
``NPUSIM_FUZZ_COLLECT=1`` reports every disagreement at the end instead of failing at the first one (for
long local runs). Deliberate differences from torch are listed in docs/torch_differences.md and skipped
here by ``_deliberate``.
"""
from __future__ import annotations

import math
import os
import warnings

import numpy as np
import pytest

import npusim

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

pytestmark = pytest.mark.oracle

EXAMPLES = int(os.environ.get("NPUSIM_FUZZ_EXAMPLES", "150"))
COLLECT = os.environ.get("NPUSIM_FUZZ_COLLECT") == "1"
# CI draws the same examples every run; NPUSIM_FUZZ_RANDOM=1 draws new ones (for local exploration)
FUZZ = settings(max_examples=EXAMPLES, derandomize=os.environ.get("NPUSIM_FUZZ_RANDOM") != "1", deadline=None,
                database=None, suppress_health_check=list(HealthCheck))

DISAGREEMENTS: list = []
CALLS = [0]

# --- specs: plain data that builds the same arguments for either library ------------------------------------

DTYPES = ["float32", "float64", "int64", "int32", "uint8", "bool", "float16"]


class T:
    """A tensor spec: shape, dtype, seed; ``view`` makes it a view of a larger base (``"slice"``, ``"t"``)."""

    def __init__(self, shape, dtype="float32", seed=0, requires_grad=False, view=None):
        self.shape, self.dtype, self.seed, self.requires_grad, self.view = tuple(shape), dtype, seed, \
            requires_grad, view

    def __repr__(self):
        extra = (", grad" if self.requires_grad else "") + (f", view={self.view}" if self.view else "")
        return f"T({self.shape}, {self.dtype}{extra})"

    def values(self, shape=None):
        shape = self.shape if shape is None else shape
        rng = np.random.default_rng(self.seed)
        n = math.prod(shape)
        if self.dtype == "bool":
            return (rng.integers(0, 2, n) == 1).reshape(shape)
        if self.dtype == "uint8":
            return rng.integers(0, 6, n).astype(np.uint8).reshape(shape)
        if self.dtype.startswith("int"):
            return rng.integers(-4, 6, n).astype(self.dtype).reshape(shape)
        v = np.round(rng.uniform(-3, 3, n), 1)
        return v.astype(np.float64).reshape(shape)

    def build(self, lib):
        dt = getattr(lib, self.dtype)
        if self.view == "slice":   # every other element of a longer tensor along dim 0
            big = (max(2 * self.shape[0], 1),) + self.shape[1:] if self.shape else (2,)
            base = lib.tensor(self.values(big).tolist(), dtype=dt)
            t = base[::2] if self.shape else base[0]
        elif self.view == "t" and len(self.shape) == 2:
            base = lib.tensor(self.values(self.shape[::-1]).tolist(), dtype=dt)
            t = base.t()
        else:
            t = lib.tensor(self.values().tolist(), dtype=dt)
        if self.requires_grad and t.is_floating_point():
            t = t.detach().requires_grad_() if self.view is None else \
                t.detach().clone().requires_grad_() * 1   # a non-leaf that requires grad
        return t


class Dt:
    """A dtype by name (``Dt("int64")`` is torch.int64 / npusim.int64)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"Dt({self.name})"


class Attr:
    """``lib.<name>`` (a function or an object of the library)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


def build(lib, v):
    if isinstance(v, T):
        return v.build(lib)
    if isinstance(v, Dt):
        return getattr(lib, v.name)
    if isinstance(v, Attr):
        return getattr(lib, v.name)
    if isinstance(v, list):
        return [build(lib, x) for x in v]
    if isinstance(v, tuple):
        return tuple(build(lib, x) for x in v)
    if isinstance(v, dict):
        return {k: build(lib, x) for k, x in v.items()}
    return v


# --- strategies -----------------------------------------------------------------------------------------------

shapes = st.sampled_from([(), (0,), (1,), (3,), (2, 3), (3, 1), (1, 4), (2, 1, 3), (2, 2, 2)])
dtypes = st.sampled_from(DTYPES)


@st.composite
def tensors(draw, shape=None, dtype=None, views=False, grad=False):
    s = draw(shapes) if shape is None else shape
    d = draw(dtypes) if dtype is None else dtype
    view = draw(st.sampled_from([None, None, "slice", "t"])) if views else None
    rg = draw(st.booleans()) if grad and d in ("float32", "float64") else False
    return T(s, d, draw(st.integers(0, 5)), rg, view)


floats_tensors = tensors(dtype="float32")
small_ints = st.integers(-4, 4)
# every kind of Python value where a number goes
scalars = st.one_of(st.integers(-3, 5), st.sampled_from([0.5, -1.5, 2.0, float("nan"), float("inf"), True, False]),
                    st.sampled_from([None, "1", "a", (2,), [1.0], 2 ** 70, -(2 ** 63) - 1, 2 ** 63]))
ints_or_junk = st.one_of(st.integers(-4, 4), st.sampled_from([1.0, 2.5, True, None, "1", (1,), 2 ** 70]))
dims = st.one_of(st.integers(-4, 3), st.sampled_from([None, (0,), (0, 1), (-1, 0), (0, 0), [1], 1.0, "0", 2 ** 70]))
dtype_args = st.sampled_from([None, Dt("float32"), Dt("float64"), Dt("int64"), Dt("int32"), Dt("uint8"),
                              Dt("bool"), Dt("float16"), float, int, bool, "float32", 3])
size_args = st.one_of(st.lists(st.integers(-1, 4), max_size=3).map(tuple), st.integers(-1, 4),
                      st.sampled_from([(2, 3.0), (2.0,), (2, None), (2, "3"), (2 ** 70,), [2, 2], (True, 2)]))


# --- comparing ------------------------------------------------------------------------------------------------

def _exc_name(e):
    return type(e).__name__


# torch's exception classes that npusim raises as their base (or as the base of both)
_EQUIVALENT = {
    "AcceleratorError": RuntimeError, "OutOfMemoryError": RuntimeError, "LinAlgError": RuntimeError,
    "NotImplementedError": NotImplementedError,
}


def _run(lib, fn, args, kwargs, inplace_of):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, k = build(lib, args), build(lib, kwargs)
        try:
            r = fn(lib, *a, **k)
            return "ok", r, a
        except Exception as e:   # noqa: BLE001 - the type is what is compared
            return "raise", e, a


def _as_numpy(x):
    if isinstance(x, npusim.Tensor):
        x = x.detach().cpu()
        if x.dtype is npusim.bfloat16:
            x = x.float()
        return x.numpy()
    x = x.detach().cpu()
    return x.numpy()


def _summary(x):
    """Shape, dtype and values of a result (nested tuples of tensors, numbers, dtypes...)."""
    if isinstance(x, (tuple, list)):
        return type(x).__name__ in ("tuple", "list") and [_summary(v) for v in x] or \
            [_summary(v) for v in x]
    if hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "detach"):
        return ("tensor", tuple(x.shape), str(x.dtype).split(".")[-1], _as_numpy(x))
    if type(x).__name__ == "dtype":
        return ("dtype", str(x).split(".")[-1])
    if type(x).__name__ == "Size":
        return ("size", tuple(x))
    if isinstance(x, float) and math.isnan(x):
        return ("nan",)
    return x


def _same(a, b, values=True) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y, values) for x, y in zip(a, b))
    if isinstance(a, tuple) and a and a[0] == "tensor" and isinstance(b, tuple) and b and b[0] == "tensor":
        if a[1] != b[1] or a[2] != b[2]:
            return False
        if not values:
            return True
        x, y = a[3].astype(np.float64), b[3].astype(np.float64)
        tol = 1e-2 if a[2] in ("float16", "bfloat16") else 1e-5
        return bool(np.allclose(x, y, rtol=tol, atol=tol, equal_nan=True))
    return a == b


class Call:
    def __init__(self, name, fn, args=(), kwargs=None, values=True):
        self.name, self.fn, self.args, self.kwargs, self.values = name, fn, args, kwargs or {}, values

    def __repr__(self):
        kw = "".join(f", {k}={v!r}" for k, v in self.kwargs.items())
        return f"{self.name}({', '.join(map(repr, self.args))}{kw})"


def check(torch, call: Call):
    """The disagreement of ``call`` between torch and npusim, or None."""
    CALLS[0] += 1
    kt, rt, at = _run(torch, call.fn, call.args, call.kwargs, None)
    kn, rn, an = _run(npusim, call.fn, call.args, call.kwargs, None)
    why = _deliberate(call, kt, rt, kn, rn)
    if why:
        return None
    if kt != kn:
        return f"{call}: torch {kt} {_exc_name(rt) + ': ' + str(rt)[:150] if kt == 'raise' else ''}; " \
               f"npusim {kn} {_exc_name(rn) + ': ' + str(rn)[:150] if kn == 'raise' else ''}"
    if kt == "raise":
        want = _EQUIVALENT.get(_exc_name(rt), type(rt))
        if not isinstance(rn, want) and _exc_name(rn) != _exc_name(rt):
            return f"{call}: torch raised {_exc_name(rt)}: {str(rt)[:150]}; npusim {_exc_name(rn)}: {str(rn)[:150]}"
        return None
    if not _same(_summary(rt), _summary(rn), call.values):
        return f"{call}: torch gave {_short(_summary(rt))}; npusim {_short(_summary(rn))}"
    # inputs written in place agree too
    if not _same(_summary(list(at)), _summary(list(an)), call.values):
        return f"{call}: inputs after the call differ: torch {_short(_summary(list(at)))}; " \
               f"npusim {_short(_summary(list(an)))}"
    return None


def _short(s):
    return repr(s)[:300]


def _deliberate(call, kt, rt, kn, rn) -> str | None:
    """Why a disagreement is deliberate (docs/torch_differences.md), or None."""
    if kn == "raise" and "no complex dtypes" in str(rn):
        return "npusim has no complex dtypes"
    if kt == kn == "raise" and "leaf Variable that requires grad" in str(rt):
        return "several errors in one call: torch reports the in-place write on a leaf first, npusim another"
    if kt == kn == "raise" and call.name == "norm" and any(isinstance(a, str) for a in call.args):
        return "several errors in one call: torch's norm with a str p reports a later argument's type first"
    if call.name == "resize_" and kt == "ok" and kn == "raise" and "negative dimension" in str(rn):
        return "torch's resize_ keeps a negative size when another size is 0; npusim refuses negative sizes"
    parse_errors = (TypeError, ValueError, OverflowError)
    if kt == kn == "raise" and isinstance(rt, parse_errors) and isinstance(rn, parse_errors) and \
            _invalid_values(call) >= 2:
        return "several unparsable arguments in one call: torch and npusim may name a different one first"
    if kt == kn == "raise" and call.name == "index_add_" and "out of" in str(rt) and "out of" in str(rn):
        return "torch's index_add_ kernels raise IndexError or RuntimeError for an out-of-range index by layout"
    if kt == "raise" and kn == "ok" and "without overflow" in str(rt) and "float16" in repr(call.args):
        return "npusim does not range-check every Scalar (alpha) against a float16 tensor's dtype"
    if kt == "ok" and kn == "raise" and any(d < 0 for d in getattr(rt, "shape", ())):
        return "torch 2.13 lets a 0-d tensor expand to a shape with -1 in a new dim when the result is empty"
    if call.name == "floor_divide" and "out" in call.kwargs and kt == "ok" and "out=... arguments" in str(rn):
        return "npusim refuses out= with an input requiring grad for floor_divide too (torch: a not-implemented grad)"
    return None


def _invalid_values(call) -> int:
    """How many argument values torch's parser refuses outright (ints past int64, non-int sizes, strs where no
    str goes, a keepdim that is not a bool, an int for a dtype)."""
    def bad(v, name=None):
        if v.__class__ is int and not -2 ** 63 <= v < 2 ** 63:
            return 1
        if isinstance(v, tuple) and any(isinstance(x, (float, str)) or x is None or bad(x) for x in v):
            return 1
        if isinstance(v, str) and name != "rounding_mode":
            return 1
        if name == "keepdim" and v.__class__ is not bool or name == "dtype" and v.__class__ is int:
            return 1
        if v.__class__ is float and call.name in VIEW_OPS:   # their numbers are ints (dims, sizes, counts)
            return 1
        if name == "alpha" and not isinstance(v, (int, float)):
            return 1
        return 0
    return sum(bad(v) for v in call.args) + sum(bad(v, k) for k, v in call.kwargs.items())


def verdict(torch, call):
    problem = check(torch, call)
    if problem is None:
        return
    if COLLECT:
        DISAGREEMENTS.append(problem)
        return
    pytest.fail(problem)


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    if COLLECT:
        print(f"\n{CALLS[0]} fuzz calls, {len(DISAGREEMENTS)} disagreements")
        for d in DISAGREEMENTS:
            print(" -", d)


def f_(name):
    """``lib.name(*args)``"""
    def fn(lib, *a, **k):
        f = lib
        for part in name.split("."):
            f = getattr(f, part)
        return f(*a, **k)
    fn.__name__ = name
    return fn


def m_(name):
    """``args[0].name(*args[1:])``"""
    def fn(lib, self, *a, **k):
        return getattr(self, name)(*a, **k)
    fn.__name__ = name
    return fn


# --- the calls ------------------------------------------------------------------------------------------------

@st.composite
def creation_calls(draw):
    name = draw(st.sampled_from(["zeros", "ones", "empty", "full", "arange", "linspace", "eye", "tensor",
                                 "zeros_like", "full_like", "ones_like", "new_zeros", "new_full", "empty_like",
                                 "as_tensor", "scalar_tensor"]))
    kw = {}
    if draw(st.booleans()):
        kw["dtype"] = draw(dtype_args)
    if draw(st.integers(0, 4)) == 0:
        kw["requires_grad"] = draw(st.sampled_from([True, False, 1, None]))
    values = name not in ("empty", "empty_like")
    if name in ("zeros", "ones", "empty"):
        size = draw(size_args)
        args = size if isinstance(size, tuple) and draw(st.booleans()) else (size,)
        return Call(name, f_(name), args, kw, values)
    if name == "full":
        return Call(name, f_(name), (draw(size_args), draw(scalars)), kw)
    if name == "arange":
        n = draw(st.integers(1, 3))
        return Call(name, f_(name), tuple(draw(scalars) for _ in range(n)), kw)
    if name == "linspace":
        return Call(name, f_(name), (draw(scalars), draw(scalars), draw(ints_or_junk)), kw)
    if name == "eye":
        return Call(name, f_(name), tuple(draw(ints_or_junk) for _ in range(draw(st.integers(1, 2)))), kw)
    if name in ("tensor", "as_tensor"):
        data = draw(st.sampled_from([[1, 2], [1.5, 2], [True, False], [[1, 2], [3, 4]], [[1], [2, 3]], 3, 2.5,
                                     [], [[]], "abc", None, [1, "a"], (1, 2), [2 ** 70], [None]]))
        return Call(name, f_(name), (data,), kw)
    if name == "scalar_tensor":
        return Call(name, f_(name), (draw(scalars),), kw)
    t = draw(tensors())
    if name in ("zeros_like", "ones_like", "empty_like"):
        return Call(name, f_(name), (t,), kw, values)
    if name == "full_like":
        return Call(name, f_(name), (t, draw(scalars)), kw)
    if name == "new_zeros":
        return Call(name, m_(name), (t, draw(size_args)), kw)
    return Call(name, m_(name), (t, draw(size_args), draw(scalars)), kw)


VIEW_OPS = ["reshape", "view", "transpose", "permute", "squeeze", "unsqueeze", "flatten", "movedim", "narrow",
            "select", "expand", "broadcast_to", "chunk", "split", "t", "flip", "roll", "diagonal", "unflatten",
            "as_strided", "unbind", "repeat", "tile", "swapaxes", "contiguous", "view_as", "expand_as",
            "tensor_split", "moveaxis", "squeeze_", "unsqueeze_", "t_", "transpose_"]


@st.composite
def view_calls(draw):
    name = draw(st.sampled_from(VIEW_OPS))
    t = draw(tensors(views=True))
    d = draw(dims)
    if name in ("reshape", "view", "expand", "broadcast_to", "repeat", "tile"):
        size = draw(size_args)
        if name == "view" and draw(st.integers(0, 3)) == 0:
            size = draw(dtype_args)
        args = (size,) if not isinstance(size, tuple) or draw(st.booleans()) or name == "broadcast_to" \
            else size
        return Call(name, m_(name), (t,) + args)
    if name in ("transpose", "swapaxes", "transpose_"):
        return Call(name, m_(name), (t, draw(dims), draw(dims)))
    if name == "permute":
        return Call(name, m_(name), (t, draw(size_args)))
    if name in ("squeeze", "unsqueeze", "squeeze_", "unsqueeze_"):
        args = () if name.startswith("squeeze") and draw(st.booleans()) else (d,)
        return Call(name, m_(name), (t,) + args)
    if name == "flatten":
        return Call(name, m_(name), (t, draw(dims), draw(dims)))
    if name in ("movedim", "moveaxis"):
        return Call(name, m_(name), (t, draw(dims), draw(dims)))
    if name == "narrow":
        return Call(name, m_(name), (t, d, draw(ints_or_junk), draw(ints_or_junk)))
    if name == "select":
        return Call(name, m_(name), (t, d, draw(ints_or_junk)))
    if name in ("chunk", "tensor_split"):
        return Call(name, m_(name), (t, draw(ints_or_junk), d))
    if name == "split":
        return Call(name, m_(name), (t, draw(st.one_of(ints_or_junk, size_args)), d))
    if name in ("t", "contiguous", "t_"):
        return Call(name, m_(name), (t,))
    if name == "flip":
        return Call(name, m_(name), (t, draw(size_args)))
    if name == "roll":
        return Call(name, m_(name), (t, draw(ints_or_junk), d))
    if name == "diagonal":
        return Call(name, m_(name), (t, draw(small_ints), draw(dims), draw(dims)))
    if name == "unflatten":
        return Call(name, m_(name), (t, d, draw(size_args)))
    if name == "as_strided":
        return Call(name, m_(name), (t, draw(size_args), draw(size_args), draw(st.one_of(st.just(0), ints_or_junk))))
    if name == "unbind":
        return Call(name, m_(name), (t, d))
    other = draw(tensors())
    return Call(name, m_(name), (t, other))


REDUCTIONS = ["sum", "mean", "prod", "amax", "amin", "max", "min", "argmax", "argmin", "std", "var", "all", "any",
              "logsumexp", "cumsum", "cumprod", "median", "mode", "nansum", "nanmean", "norm", "count_nonzero",
              "nanmedian", "kthvalue", "softmax", "log_softmax", "aminmax", "cummax", "sort", "argsort", "topk"]


@st.composite
def reduction_calls(draw):
    name = draw(st.sampled_from(REDUCTIONS))
    t = draw(tensors(views=True))
    args, kw = [], {}
    if name == "kthvalue" or name == "topk":
        args.append(draw(st.one_of(st.integers(0, 3), ints_or_junk)))
    if draw(st.integers(0, 4)):
        d = draw(dims)
        if name == "aminmax":
            kw["dim"] = d
        elif draw(st.booleans()):
            args.append(d)
        else:
            kw["dim"] = d
    if draw(st.booleans()):
        kw["keepdim"] = draw(st.sampled_from([True, False, 1, None, "yes"]))
    if name in ("sum", "mean", "prod", "cumsum", "cumprod", "nansum", "nanmean", "softmax", "log_softmax",
                "norm") and draw(st.booleans()):
        kw["dtype"] = draw(dtype_args)
    if name in ("max", "min", "median", "mode", "kthvalue", "sort", "cummax", "argsort", "topk") and "keepdim" \
            in kw and name in ("sort", "cummax", "argsort", "topk"):
        del kw["keepdim"]
    values = name not in ("sort", "argsort", "topk", "mode", "median", "nanmedian", "kthvalue", "argmax",
                          "argmin", "max", "min", "cummax")
    call = Call(name, m_(name) if draw(st.booleans()) else f_(name), tuple([t] + args), kw, values)
    return call


BINARY = ["add", "sub", "mul", "div", "pow", "remainder", "fmod", "maximum", "minimum", "clamp", "eq", "lt", "ge",
          "where", "masked_fill", "fill_", "copysign", "atan2", "lerp", "addcmul", "addcdiv", "isclose",
          "floor_divide", "bitwise_and", "logical_and", "add_", "mul_", "div_", "clamp_", "sub_", "hypot", "true_divide",
          "rsub", "xlogy", "index_fill", "masked_fill_", "angle", "abs", "neg", "sign", "float_power"]


@st.composite
def elementwise_calls(draw):
    name = draw(st.sampled_from(BINARY))
    t = draw(tensors(views=True, grad=True))
    other = draw(st.one_of(scalars, tensors(), tensors(shape=t.shape)))
    kw = {}
    if name in ("abs", "neg", "sign", "angle"):
        return Call(name, f_(name), (t,))
    if name in ("add", "sub", "add_", "sub_", "rsub") and draw(st.integers(0, 3)) == 0:
        kw["alpha"] = draw(scalars)
    if name in ("div", "div_") and draw(st.integers(0, 3)) == 0:
        kw["rounding_mode"] = draw(st.sampled_from(["floor", "trunc", None, "round", 1]))
    if name in ("clamp", "clamp_"):
        return Call(name, m_(name), (t, other, draw(st.one_of(scalars, tensors()))))
    if name == "where":
        cond = draw(tensors(dtype="bool", shape=t.shape))
        if draw(st.integers(0, 3)) == 0:
            kw["out"] = draw(tensors(grad=True, dtype=t.dtype))
        return Call(name, f_(name), (cond, t, other), kw)
    if name in ("masked_fill", "masked_fill_"):
        mask = draw(st.one_of(tensors(dtype="bool", shape=t.shape), tensors()))
        return Call(name, m_(name), (t, mask, other))
    if name == "fill_":
        return Call(name, m_(name), (t, other))
    if name in ("lerp", "addcmul", "addcdiv"):
        third = draw(st.one_of(scalars, tensors(shape=t.shape)))
        if draw(st.booleans()):
            kw["value" if name != "lerp" else "weight"] = draw(scalars)
            return Call(name, m_(name), (t, other, third) if name != "lerp" else (t, other), kw)
        return Call(name, m_(name), (t, other, third))
    if name == "index_fill":
        return Call(name, m_(name), (t, draw(dims), draw(st.one_of(tensors(dtype="int64"), ints_or_junk)), other))
    if draw(st.integers(0, 5)) == 0 and not name.endswith("_"):
        kw["out"] = draw(tensors(views=True, grad=True))
    fn = m_(name) if name.endswith("_") or name in ("isclose",) or draw(st.booleans()) else f_(name)
    return Call(name, fn, (t, other), kw)


index_items = st.one_of(
    st.integers(-4, 4), st.sampled_from([None, Ellipsis, True, False, 1.5, "a", slice(None), slice(1, None),
                                         slice(None, None, 2), slice(None, None, -1), slice(None, None, 0),
                                         slice(1.5, None), [0, 1], [True, False], [], 2 ** 70, (), [0, [1]]]),
    tensors(dtype="int64", shape=(2,)), tensors(dtype="bool"))


@st.composite
def indexing_calls(draw):
    t = draw(tensors(views=True))
    n = draw(st.integers(1, 3))
    idx = draw(index_items) if n == 1 else tuple(draw(index_items) for _ in range(n))
    if draw(st.booleans()):
        value = draw(st.one_of(scalars, tensors(), tensors(dtype=t.dtype, shape=(1,))))

        def setitem(lib, x, i, v):
            x[i] = v
            return x
        return Call("setitem", setitem, (t, idx, value))

    def getitem(lib, x, i):
        return x[i]
    return Call("getitem", getitem, (t, idx))


INPLACE = ["add_", "mul_", "fill_", "zero_", "clamp_", "resize_", "detach_", "unsqueeze_", "t_", "copy_",
           "requires_grad_", "random_", "uniform_", "normal_", "set_", "abs_", "neg_", "exp_", "floor_",
           "index_add_", "index_copy_", "scatter_", "masked_scatter_", "resize_as_", "squeeze_", "clamp_min_"]


@st.composite
def inplace_calls(draw):
    name = draw(st.sampled_from(INPLACE))
    t = draw(tensors(views=True, grad=True))
    values = name not in ("random_", "uniform_", "normal_", "resize_", "resize_as_")
    if name in ("zero_", "detach_", "t_", "abs_", "neg_", "exp_", "floor_", "squeeze_"):
        return Call(name, m_(name), (t,))
    if name in ("add_", "mul_", "fill_", "clamp_min_"):
        return Call(name, m_(name), (t, draw(st.one_of(scalars, tensors()))))
    if name == "clamp_":
        return Call(name, m_(name), (t, draw(scalars), draw(scalars)))
    if name == "resize_":
        size = draw(size_args)
        return Call(name, m_(name), (t, size), values=False) if draw(st.booleans()) else \
            Call(name, m_(name), (t,) + (size if isinstance(size, tuple) else (size,)), values=False)
    if name == "resize_as_":
        return Call(name, m_(name), (t, draw(tensors())), values=False)
    if name == "unsqueeze_":
        return Call(name, m_(name), (t, draw(dims)))
    if name == "copy_":
        return Call(name, m_(name), (t, draw(st.one_of(tensors(), tensors(shape=t.shape), scalars))))
    if name == "requires_grad_":
        return Call(name, m_(name), (t, draw(st.sampled_from([True, False, 1, None, "x"]))))
    if name == "random_":
        n = draw(st.integers(0, 2))
        return Call(name, m_(name), (t,) + tuple(draw(st.one_of(st.integers(-3, 10), ints_or_junk))
                                                 for _ in range(n)), values=False)
    if name in ("uniform_", "normal_"):
        return Call(name, m_(name), (t, draw(scalars), draw(scalars)), values=False)
    if name == "set_":
        return Call(name, m_(name), (t, draw(st.one_of(tensors(), tensors(dtype=t.dtype), scalars))))
    if name in ("index_add_", "index_copy_"):
        src = draw(st.one_of(tensors(dtype=t.dtype), tensors(dtype=t.dtype, shape=t.shape)))
        return Call(name, m_(name), (t, draw(dims), draw(st.one_of(tensors(dtype="int64", shape=(1,)),
                                                                   tensors(dtype="int64", shape=()))), src))
    if name == "scatter_":
        idx = draw(tensors(dtype="int64", shape=t.shape))
        return Call(name, m_(name), (t, draw(dims), Attr("zeros_like"), draw(scalars))) if False else \
            Call(name, m_(name), (t, draw(dims), idx, draw(st.one_of(scalars, tensors(dtype=t.dtype,
                                                                                          shape=t.shape)))))
    mask = draw(tensors(dtype="bool", shape=t.shape))
    return Call(name, m_(name), (t, mask, draw(tensors(dtype=t.dtype))))


JOINING = ["cat", "stack", "hstack", "vstack", "dstack", "column_stack", "gather", "index_select", "take",
           "masked_select", "tril", "triu", "diag", "repeat_interleave", "meshgrid", "broadcast_tensors", "flip",
           "rand", "randn", "randint", "randperm", "rand_like", "randint_like", "normal", "bernoulli"]


@st.composite
def joining_calls(draw):
    name = draw(st.sampled_from(JOINING))
    t = draw(tensors(views=True))
    d = draw(dims)
    if name in ("cat", "stack", "hstack", "vstack", "dstack", "column_stack", "meshgrid", "broadcast_tensors"):
        seq = draw(st.lists(st.one_of(tensors(shape=t.shape, dtype=t.dtype), tensors(shape=t.shape), tensors(),
                                      st.sampled_from([1, None, "a"])), max_size=3))
        seq = draw(st.sampled_from([seq, tuple(seq)])) if seq else draw(st.sampled_from([[], (), t]))
        if name in ("cat", "stack"):
            return Call(name, f_(name), (seq,) if draw(st.booleans()) else (seq, d))
        if name in ("meshgrid", "broadcast_tensors"):
            args = tuple(seq) if isinstance(seq, (list, tuple)) else (seq,)
            return Call(name, f_(name), args)
        return Call(name, f_(name), (seq,))
    if name == "gather":
        return Call(name, f_(name), (t, d, draw(st.one_of(tensors(dtype="int64", shape=t.shape), tensors(dtype="int64"),
                                                           tensors()))))
    if name == "index_select":
        return Call(name, f_(name), (t, d, draw(st.one_of(tensors(dtype="int64", shape=(2,)), tensors(dtype="int64",
                                                                                                    shape=()),
                                                           tensors(dtype="int32", shape=(1,)), ints_or_junk))))
    if name == "take":
        return Call(name, f_(name), (t, draw(st.one_of(tensors(dtype="int64"), tensors(), ints_or_junk))))
    if name == "masked_select":
        return Call(name, f_(name), (t, draw(st.one_of(tensors(dtype="bool", shape=t.shape), tensors(dtype="bool"),
                                                        tensors()))))
    if name in ("tril", "triu", "diag"):
        return Call(name, f_(name), (t, draw(ints_or_junk)) if draw(st.booleans()) else (t,))
    if name == "repeat_interleave":
        return Call(name, f_(name), (t, draw(st.one_of(ints_or_junk, tensors(dtype="int64", shape=(1,)))), d))
    if name == "flip":
        return Call(name, f_(name), (t, draw(size_args)))
    kw = {}
    if draw(st.booleans()):
        kw["dtype"] = draw(dtype_args)
    if name in ("rand", "randn"):
        size = draw(size_args)
        return Call(name, f_(name), size if isinstance(size, tuple) else (size,), kw, values=False)
    if name == "randint":
        n = draw(st.integers(1, 2))
        return Call(name, f_(name), tuple(draw(st.one_of(st.integers(-2, 6), ints_or_junk)) for _ in range(n))
                    + (draw(size_args),), kw, values=False)
    if name == "randperm":
        return Call(name, f_(name), (draw(st.one_of(st.integers(-1, 5), ints_or_junk)),), kw, values=False)
    if name == "rand_like":
        return Call(name, f_(name), (t,), kw, values=False)
    if name == "randint_like":
        return Call(name, f_(name), (t, draw(st.one_of(st.integers(-1, 6), ints_or_junk))), kw, values=False)
    if name == "normal":
        return Call(name, f_(name), (draw(st.one_of(scalars, tensors(dtype="float32"))),
                                     draw(st.one_of(scalars, tensors(dtype="float32")))), values=False)
    return Call(name, f_(name), (draw(st.one_of(tensors(dtype="float32"), tensors())),), values=False)


# random and uninitialised values only compare shape and dtype; indices of ties may differ


@FUZZ
@given(creation_calls())
def test_creation_calls_match_torch(torch, call):
    verdict(torch, call)


@FUZZ
@given(view_calls())
def test_view_and_shape_calls_match_torch(torch, call):
    verdict(torch, call)


@FUZZ
@given(reduction_calls())
def test_reduction_calls_match_torch(torch, call):
    verdict(torch, call)


@FUZZ
@given(elementwise_calls())
def test_elementwise_calls_match_torch(torch, call):
    verdict(torch, call)


@FUZZ
@given(joining_calls())
def test_joining_gathering_and_random_calls_match_torch(torch, call):
    verdict(torch, call)


@FUZZ
@given(indexing_calls())
def test_indexing_calls_match_torch(torch, call):
    verdict(torch, call)


@FUZZ
@given(inplace_calls())
def test_inplace_calls_match_torch(torch, call):
    verdict(torch, call)
