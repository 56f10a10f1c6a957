"""Argument checking as torch 2.13's: each call either raises the exception type torch raises, or gives
torch's shape, dtype and values (found by a differential fuzz against torch; see test_fuzz_torch_args.py)."""
from __future__ import annotations

import numpy as np
import pytest

import npusim
from conftest import host


def _run(lib, call):
    try:
        return "ok", call(lib)
    except Exception as e:   # noqa: BLE001 - the exception type is what is compared
        return "raise", e


def _values(r):
    if isinstance(r, (tuple, list)):
        return [_values(x) for x in r]
    if hasattr(r, "shape") and hasattr(r, "dtype"):
        return (tuple(r.shape), str(r.dtype).split(".")[-1], np.asarray(host(r) if isinstance(r, npusim.Tensor)
                                                                       else r.detach().float().numpy()
                                                                       if str(r.dtype) == "torch.bfloat16"
                                                                       else r.detach().numpy()).tolist())
    if type(r).__name__ == "dtype":
        return str(r).split(".")[-1]
    return r


# exceptions torch raises as its own subclasses of these
_SAME = {"OutOfMemoryError": RuntimeError}


def check_like_torch(torch, call):
    """``call(npusim)`` raises what ``call(torch)`` raises, or gives the same shape, dtype and values."""
    kind_t, r_t = _run(torch, call)
    kind_n, r_n = _run(npusim, call)
    assert kind_n == kind_t, f"torch: {kind_t} {r_t!r}; npusim: {kind_n} {r_n!r}"
    if kind_t == "raise":
        want = _SAME.get(type(r_t).__name__, type(r_t))
        assert isinstance(r_n, want), f"torch raised {type(r_t).__name__}: {r_t}; npusim {type(r_n).__name__}: {r_n}"
    else:
        assert _values(r_n) == _values(r_t)


CASES = [
    # dims out of range
    ("movedim-dim-2-of-2d", lambda L: L.ones(2, 3).movedim(2, -2)),
    ("movedim-dim-7-of-1d", lambda L: L.ones(2).movedim(7, 0)),
    ("movedim-repeated", lambda L: L.ones(2, 3).movedim((0, 0), (1, 0))),
    ("movedim-float", lambda L: L.ones(2).movedim(1.5, 0)),
    ("flatten-0d-end-7", lambda L: L.tensor(1.).flatten(-1, 7)),
    ("flatten-0d-ok", lambda L: L.tensor(1.).flatten(0, -1)),
    # None where torch's parser takes no None
    ("squeeze-None", lambda L: L.ones(3, 1).squeeze(None)),
    ("squeeze-dim-None", lambda L: L.squeeze(L.ones(3, 1), dim=None)),
    ("prod-None", lambda L: L.ones(3, 1).prod(None)),
    ("max-None", lambda L: L.ones(3, 1).max(None)),
    ("median-None", lambda L: L.ones(3, 1).median(None)),
    ("max-out-tuple-without-dim", lambda L: L.max(L.ones(2, 2), out=(L.zeros(2), L.zeros(2, dtype=L.long)))),
    # numbers of the wrong kind
    ("chunk-float", lambda L: L.ones(4).chunk(2.5)),
    ("chunk-bool", lambda L: L.ones(4).chunk(True)),
    ("broadcast_to-float-size", lambda L: L.ones(3).broadcast_to((2, 3.0))),
    ("as_strided-float-size", lambda L: L.ones(3).as_strided((2.0,), (1,))),
    ("fill-str", lambda L: L.zeros(2).fill_("1")),
    ("fill-None", lambda L: L.zeros(2).fill_(None)),
    ("masked_fill-str", lambda L: L.zeros(2).masked_fill(L.tensor([True, False]), "3")),
    ("add-alpha-str", lambda L: L.ones(2).add(1, alpha="a")),
    ("random-to-2**70", lambda L: L.zeros(3).random_(0, 2 ** 70)),
    ("chunk-2**70", lambda L: L.ones(4).chunk(2 ** 70)),
    ("zeros-2**70", lambda L: L.zeros(2 ** 70)),
    ("full-2**70", lambda L: L.full((2,), 2 ** 70)),
    ("fill-2**70", lambda L: L.ones(2).fill_(2 ** 70)),
    # Python types as dtypes
    ("ones-dtype-float", lambda L: L.ones(2, dtype=float)),
    ("ones-dtype-int", lambda L: L.ones(2, dtype=int)),
    ("zeros-dtype-bool", lambda L: L.zeros(2, dtype=bool)),
    ("tensor-dtype-float", lambda L: L.tensor([1, 2], dtype=float)),
    ("arange-dtype-float", lambda L: L.arange(3, dtype=float)),
    ("linspace-dtype-float", lambda L: L.linspace(0, 1, 3, dtype=float)),
    ("eye-dtype-int", lambda L: L.eye(2, dtype=int)),
    ("full_like-dtype-int", lambda L: L.full_like(L.ones(2), 3, dtype=int)),
    ("new_zeros-dtype-int", lambda L: L.ones(2).new_zeros(2, dtype=int)),
    ("to-int", lambda L: L.ones(2).to(int)),
    ("to-bool", lambda L: L.ones(2).to(bool)),
    ("to-dtype-kw-float", lambda L: L.ones(2).to(dtype=float)),
    ("to-device-and-int", lambda L: L.ones(2).to("cpu", int)),
    ("to-tensor-and-int", lambda L: L.ones(2).to(L.ones(1), int)),
    ("to-None-float", lambda L: L.ones(2).to(None, float)),
    ("type-float", lambda L: L.ones(2).type(float)),
    ("view-int", lambda L: L.ones(2).view(int)),
    ("sum-dtype-float", lambda L: L.ones(2).sum(dtype=float)),
    ("cumsum-dtype-int", lambda L: L.ones(2).cumsum(0, dtype=int)),
    ("softmax-dtype-float", lambda L: L.ones(2).softmax(0, dtype=float)),
    ("promote_types-python", lambda L: L.promote_types(float, int)),
    ("can_cast-python", lambda L: L.can_cast(float, int)),
    ("finfo-float", lambda L: L.finfo(float).bits),
    ("iinfo-int", lambda L: L.iinfo(int).bits),
    ("set_default_dtype-float", lambda L: L.set_default_dtype(float)),
    ("module-to-float", lambda L: L.nn.Linear(2, 2).to(float).weight.dtype == L.float64),
    # dtypes, autograd and shapes refused as torch refuses them
    ("nanmean-dtype-uint8", lambda L: L.ones(3).nanmean(dtype=L.uint8)),
    ("nanmean-dtype-float64", lambda L: L.ones(3).nanmean(dtype=L.float64)),
    ("detach_-of-a-view", lambda L: L.ones(4)[::2].detach_()),
    ("detach_-of-a-leaf", lambda L: L.ones(4).detach_()),
    ("where-out-requires-grad", lambda L: L.where(L.tensor([True, False]), L.ones(2), L.zeros(2),
                                                  out=L.zeros(2, requires_grad=True))),
    ("where-input-requires-grad-out", lambda L: L.where(L.tensor([True, False]), L.ones(2, requires_grad=True),
                                                        L.zeros(2), out=L.zeros(2))),
    ("index_add-0d-source", lambda L: L.zeros(3).index_add(-1, L.tensor(1), L.tensor(5.))),
    ("index_add-0d-index", lambda L: L.zeros(3).index_add(0, L.tensor(1), L.tensor([5.]))),
    ("index_add-0d-self", lambda L: L.tensor(1.).index_add(0, L.tensor([0]), L.tensor(5.))),
    ("index_add-source-dims", lambda L: L.zeros(2, 3).index_add(1, L.tensor([0]), L.ones(2))),
    ("index_add-source-shape", lambda L: L.zeros(2, 3).index_add(1, L.tensor([0]), L.ones(3, 1))),
    ("isclose-int-other", lambda L: L.isclose(L.ones(2), 1)),
    ("addcmul_-float-tensor1", lambda L: L.ones(2).addcmul_(2.0, L.ones(2))),
    ("addcmul_-value-first", lambda L: L.ones(2).addcmul_(2.0, L.ones(2), L.ones(2))),
    ("addcdiv-float-tensor2", lambda L: L.ones(2).addcdiv(L.ones(2), 2.0)),
    ("copysign-tuple", lambda L: L.copysign(L.ones(2), (2,))),
    # 0-d inputs reduced along a dim stay 0-d
    ("median-0d-dim", lambda L: tuple(L.tensor(3.).median(0))),
    ("median-0d-keepdim", lambda L: tuple(L.tensor(3.).median(0, keepdim=True))),
    ("mode-0d-dim", lambda L: tuple(L.tensor(3.).mode(0))),
    ("nanmedian-0d-dim", lambda L: tuple(L.tensor(3.).nanmedian(-1))),
    ("kthvalue-0d-dim", lambda L: tuple(L.tensor(3.).kthvalue(1, 0))),
    # resize_ from the storage offset, with contiguous strides
    ("resize_-of-a-strided-view", lambda L: L.arange(8.).view(2, 4)[:, ::2].resize_(4)),
    ("resize_-view-writes-its-base", lambda L: _resized_view_base(L)),
    ("out-view-resized-writes-its-base", lambda L: _out_view_base(L)),
    ("resize_-transposed", lambda L: L.arange(6.).view(2, 3).t().resize_(3)),
    # error types
    ("hstack-empty", lambda L: L.hstack([])),
    ("vstack-empty", lambda L: L.vstack([])),
    ("hstack-tensor", lambda L: L.hstack(L.ones(2))),
    ("vstack-int", lambda L: L.vstack([1])),
    ("getitem-str", lambda L: L.ones(2)["a"]),
    ("getitem-None-str", lambda L: L.ones(2)[None, "a"]),
    ("getitem-float", lambda L: L.ones(2)[1.5]),
    # missing functions
    ("angle", lambda L: L.angle(L.tensor([-1., 2., 0., -0.0]))),
    ("angle-method", lambda L: L.tensor([-1., 2.]).angle()),
    ("angle-int", lambda L: L.angle(L.tensor([-1, 2]))),
    ("angle-half", lambda L: L.angle(L.tensor([-1., 2.], dtype=L.float16))),
    ("angle-out", lambda L: L.angle(L.tensor([-3.]), out=L.empty(0))),
    ("set_-tensor", lambda L: _set_shares(L)),
    ("set_-nothing", lambda L: L.zeros(2).set_()),
    ("set_-storage", lambda L: L.zeros(2).set_(L.arange(6.).untyped_storage())),
    ("set_-storage-offset-size-stride", lambda L: L.zeros(2).set_(L.arange(6.).untyped_storage(), 1, (2,), (2,))),
    ("set_-other-dtype", lambda L: L.zeros(2).set_(L.zeros(2, dtype=L.long))),
    ("set_-int", lambda L: L.zeros(2).set_(3)),
    ("set_-leaf-requiring-grad", lambda L: L.zeros(2, requires_grad=True).set_(L.ones(2))),
    ("atleast_2d-nothing", lambda L: L.atleast_2d()),
    ("atleast_1d-nothing", lambda L: L.atleast_1d()),
    ("atleast_2d-two", lambda L: L.atleast_2d(L.ones(2), L.tensor(1.))),
    ("atleast_2d-list", lambda L: L.atleast_2d([L.ones(2)])),
    ("atleast_1d-int", lambda L: L.atleast_1d(1)),
    # found by tests/test_fuzz_torch_args.py
    ("keepdim-int", lambda L: L.ones(3, 1).aminmax(dim=1, keepdim=1)),
    ("keepdim-None-argmax", lambda L: L.ones(2, 3).argmax(keepdim=None)),
    ("keepdim-without-dim-sum", lambda L: L.ones(2, 3).sum(keepdim=False)),
    ("keepdim-without-dim-max", lambda L: L.ones(2, 3).max(keepdim=False)),
    ("keepdim-without-dim-median", lambda L: L.ones(2, 3).median(keepdim=False)),
    ("keepdim-str-std", lambda L: L.ones(2, 3).std(0, keepdim="yes")),
    ("keepdim-str-norm", lambda L: L.ones(2, 3, dtype=L.uint8).norm(dim=-1, keepdim="yes")),
    ("sum-dim-None-keepdim", lambda L: L.ones(2, 3).sum(dim=None, keepdim=True)),
    ("sum-dim-2**70", lambda L: L.ones(2).sum(2 ** 70)),
    ("sum-int-dtype-before-the-dim", lambda L: L.ones(1).sum(dim=1, dtype=3)),
    ("cumprod-int-dtype-before-the-dim", lambda L: L.ones(3, dtype=L.uint8).cumprod(3, dtype=3)),
    ("cumsum-str-dtype-before-the-dim", lambda L: L.cumsum(L.ones(3), dim=2, dtype="float32")),
    ("softmax-int-dtype-before-the-dim", lambda L: L.ones(3).softmax(5, dtype=3)),
    ("amax-empty-dim-before-a-repeated-dim", lambda L: L.ones(0, dtype=L.int64).amax(dim=(0, 0))),
    ("amin-repeated-dim", lambda L: L.ones(2, 3).amin(dim=(1, -1))),
    ("mean-str-dtype-before-the-dim", lambda L: L.ones(1).mean(5, dtype="x")),
    ("nanmean-int-dtype-before-the-input-dtype", lambda L: L.ones(1, dtype=L.int64).nanmean(keepdim=True, dtype=3)),
    ("norm-p-past-uint64-before-the-input-dtype", lambda L: L.ones(1, dtype=L.int32).norm(2 ** 70)),
    ("norm-dim-past-int64-before-the-input-dtype", lambda L: L.ones(1, 4, dtype=L.uint8).norm(dim=2 ** 70)),
    ("logsumexp-dim-2**70", lambda L: L.ones(2).logsumexp(2 ** 70)),
    ("amin-dim-2**70", lambda L: L.amin(L.ones(3, 1), 2 ** 70)),
    ("split-sizes-of-0d", lambda L: L.tensor(1.).split((1,), 0)),
    ("chunk-of-an-empty-dim", lambda L: L.ones(0, 3).chunk(3)),
    ("chunk-of-an-empty-dim-1", lambda L: L.ones(3, 0).chunk(2, 1)),
    ("split_with_sizes", lambda L: L.split_with_sizes(L.arange(6).view(2, 3), (1, 2), 1)),
    ("split_with_sizes-int", lambda L: L.split_with_sizes(L.arange(6).view(2, 3), 3, 1)),
    ("split_with_sizes-0d", lambda L: L.split_with_sizes(L.tensor(1.), [1])),
    ("split-negative-size-before-the-dim", lambda L: L.ones(1).split(-1, -3)),
    ("amax-dim-tuple-2**70", lambda L: L.ones(3, 1).amax((2 ** 70,))),
    ("moveaxis-2**70", lambda L: L.ones(2, 3).moveaxis(0, 2 ** 70)),
    ("requires_grad-int", lambda L: L.empty(2, requires_grad=1)),
    ("full_like-requires_grad-type-before-past-uint64", lambda L: L.full_like(L.ones(3), -2 ** 63 - 1,
                                                                               requires_grad=1)),
    ("arange-bool-before-nan-step", lambda L: L.arange(3, 3, float("nan"), dtype=L.bool)),
    ("index_fill-0d", lambda L: L.tensor(3, dtype=L.uint8).index_fill(0, L.tensor(0), L.tensor(5))),
    ("index_fill-0d-out-of-range", lambda L: L.tensor(3.).index_fill(0, L.tensor(1), 2.5)),
    ("full_like-past-uint64-before-requires_grad", lambda L: L.full_like(L.ones(2, dtype=L.bool), 2 ** 70,
                                                                          dtype=L.int32, requires_grad=True)),
    ("requires_grad-None", lambda L: L.zeros(2, requires_grad=None)),
    ("tensor-requires_grad-int", lambda L: L.tensor([1.], requires_grad=1)),
    ("requires_grad_-None", lambda L: L.ones(2).requires_grad_(None)),
    ("div-rounding_mode-int", lambda L: L.ones(2).div(2, rounding_mode=1)),
    ("div_-beyond-int64", lambda L: L.ones(2).div_(-2 ** 63 - 1)),
    ("add-beyond-uint64", lambda L: L.ones(2).add(2 ** 70)),
    ("copy_-number", lambda L: L.zeros(2, 3, dtype=L.int32).copy_(3)),
    ("copy_-str", lambda L: L.zeros(2).copy_("a")),
    ("broadcast_to-int", lambda L: L.tensor(1).broadcast_to(2)),
    ("expand-nothing", lambda L: L.zeros(2).expand()),
    ("resize_-nothing", lambda L: L.zeros(2).resize_()),
    ("unflatten-int-0", lambda L: L.ones(3, 1).unflatten(0, 0)),
    ("unflatten-int-3", lambda L: L.ones(3, 1).unflatten(0, 3)),
    ("unflatten-0d", lambda L: L.tensor(1.).unflatten(0, (1,))),
    ("unflatten-0d-dim-out-of-range", lambda L: L.tensor(1.).unflatten(1, (1,))),
    ("permute-repeat-before-out-of-range", lambda L: L.ones(2, 2, 2).permute(1, 1, 4)),
    ("permute-out-of-range-before-repeat", lambda L: L.ones(2, 2, 2).permute(1, 4, 1)),
    ("movedim-0d", lambda L: L.tensor(1.).movedim(0, 0)),
    ("masked_scatter_-0d", lambda L: L.zeros(()).masked_scatter_(L.tensor(True), L.tensor(5.))),
    ("masked_scatter-0d", lambda L: L.zeros(()).masked_scatter(L.tensor(True), L.tensor([5., 2.]))),
    ("index_copy_-0d-index", lambda L: L.zeros(1, 4).index_copy_(0, L.tensor(0), L.ones(1, 4))),
    ("index_copy-dims", lambda L: L.zeros(3, 4).index_copy(0, L.tensor(0), L.ones(4))),
    ("index_fill-tensor-value-first", lambda L: L.ones(1, 4).index_fill(2, L.tensor([0]), L.ones(1, 4))),
    ("index_fill-2d-index", lambda L: L.ones(2, 2).index_fill(0, L.ones(2, 2, dtype=L.long), 1)),
    ("index_fill-int-index", lambda L: L.ones(1, 4).index_fill(0, 3, L.tensor(1.))),
    ("index_add_-2d-out-of-range", lambda L: L.zeros(3, 2).index_add_(0, L.tensor([5]), L.ones(1, 2))),
    ("index_add_-1d-out-of-range", lambda L: L.zeros(3).index_add_(0, L.tensor([4]), L.ones(1))),
    ("normal_-empty-int", lambda L: L.zeros(0, dtype=L.int32).normal_()),
    ("normal_-nan-std", lambda L: L.zeros(2).normal_(0, float("nan"))),
    ("kthvalue-bool", lambda L: L.ones(2, 3, dtype=L.bool).kthvalue(1)),
    ("kthvalue-empty", lambda L: L.ones(0).kthvalue(1)),
    ("median-bool", lambda L: L.ones(3, dtype=L.bool).median()),
    ("median-bool-dim", lambda L: L.ones(3, dtype=L.bool).median(0)),
    ("nanmedian-bool", lambda L: L.ones(3, dtype=L.bool).nanmedian()),
    ("narrow-negative-length-first", lambda L: L.ones(3).narrow(0, -5, -1)),
    ("lerp-number-end", lambda L: L.ones(3).lerp(4, 0.5)),
    ("clamp-0d-tensor-and-number", lambda L: L.arange(4.).clamp(L.tensor(1), 2)),
    ("clamp_-number-and-0d-tensor", lambda L: L.arange(4.).clamp_(0, L.tensor(2))),
    ("clamp-1d-tensor-and-number", lambda L: L.arange(4.).clamp(L.zeros(4), 2)),
    ("set_-None", lambda L: L.zeros(2).set_(None)),
    ("set_-float-on-leaf", lambda L: L.zeros(2, requires_grad=True).set_(2.0)),
    ("getitem-2**70-in-tuple", lambda L: L.ones(2, 3)[2 ** 70, 0]),
    ("setitem-2**70", lambda L: _setitem(L, 2 ** 70)),
    ("getitem-ragged-list", lambda L: L.ones(1, 4)[[0, [1]], 1]),
    ("getitem-too-many-before-a-float-slice", lambda L: L.ones(3)[1.5:, 0, 2]),
    ("getitem-bad-step-before-a-float", lambda L: L.ones(2, 1, 3)[L.tensor([0, 1]), ::-1, 1.5]),
    ("getitem-out-of-range-before-a-bad-step", lambda L: L.ones(2, 1, 3)[L.tensor([True, False, True]), 4, ::-1]),
    ("meshgrid-int", lambda L: L.meshgrid(L.ones(2), 1)),
    ("broadcast_tensors-int", lambda L: L.broadcast_tensors(L.ones(2), 1)),
    ("column_stack-None", lambda L: L.column_stack([None, L.ones(2)])),
    ("take-int-index", lambda L: L.take(L.ones(3), 1)),
    ("index_select-float-index", lambda L: L.index_select(L.ones(3), 0, 2.5)),
    ("flip-repeat-before-out-of-range", lambda L: L.ones(1, 4).flip((-1, 1, 3))),
    ("repeat_interleave-None", lambda L: L.ones(2).repeat_interleave(None, None)),
    ("repeat_interleave-repeats-only", lambda L: L.repeat_interleave(L.tensor([1, 2]))),
    ("normal-str-mean", lambda L: L.normal("1", L.ones(2))),
    ("rand-no-size", lambda L: L.rand()),
    ("randn-str-dtype", lambda L: L.randn(2, dtype="float32")),
    ("rand-int-dtype-arg", lambda L: L.rand(2, dtype=3)),
    ("randn-empty-bool", lambda L: L.randn(0, dtype=L.bool)),
    ("randn-bool", lambda L: L.randn(2, dtype=L.bool)),
    ("randint-int-size", lambda L: L.randint(3, 2)),
    ("randint-float-high", lambda L: L.randint(-2, 1.0, (1,))),
    ("randint-python-dtype", lambda L: L.randint(3, (2,), dtype=int).dtype == L.int64),
    ("rand_like-str-dtype", lambda L: L.rand_like(L.ones(2), dtype="float32")),
    ("any-keepdim-None", lambda L: L.ones(2, 3).any(keepdim=None)),
    ("norm-list-p", lambda L: L.ones(2, 2, dtype=L.long).norm([1])),
    ("norm-str-dtype", lambda L: L.ones(2, dtype=L.bool).norm(0, dtype="float32")),
    ("nansum-int-dtype", lambda L: L.ones(3, dtype=L.long).nansum(-2, dtype=3)),
    ("as_strided-negative-offset", lambda L: L.ones(0).as_strided((), (), -3)),
    ("getitem-str-of-0d", lambda L: L.tensor(1.)["a"]),
    ("narrow-length-before-dim", lambda L: L.ones(1, 4).narrow(-3, -3, -3)),
    ("squeeze-repeated-dims", lambda L: L.ones(2, 1).squeeze((1, 1))),
    ("squeeze_-repeated-dims", lambda L: L.ones(2, 1).squeeze_((1, 1))),
    ("squeeze_-None", lambda L: L.ones(2, 1).squeeze_(None)),
    ("squeeze_-nothing", lambda L: L.ones(2, 1).squeeze_()),
    ("prod-str-dtype", lambda L: L.ones((), dtype=L.int32).prod(-3, dtype="float32")),
    ("norm-str-dim", lambda L: L.ones(2, 3, dtype=L.long).norm(dim="0")),
    ("arange-end-None", lambda L: L.arange(3, None)),
    ("arange-nan-step", lambda L: L.arange(0, 3, float("nan"))),
    ("arange-past-int64", lambda L: L.arange(2 ** 63, 2 ** 63, 2 ** 63)),
    ("arange-end-keyword", lambda L: L.arange(end=3)),
    ("arange-bool-before-int64-overflow", lambda L: L.arange(float("inf"), 2 ** 63, dtype=L.bool)),
    ("arange-past-int64-in-float", lambda L: L.arange(0, 2 ** 63, 2 ** 62, dtype=L.float32)),
    ("arange-past-int64-in-int32", lambda L: L.arange(0, 2 ** 63, 2 ** 62, dtype=L.int32)),
    ("arange-past-int64-inferred-int64", lambda L: L.arange(0, 2 ** 63, 2 ** 62)),
    ("arange-inf-to-past-int64", lambda L: L.arange(float("inf"), 2 ** 63)),
    ("arange-int64-inf-step", lambda L: L.arange(0, 3, float("inf"), dtype=int)),
    ("arange-int64-end-past-int64", lambda L: L.arange(0, 1e30, dtype=L.int64)),
    ("arange-int32-huge-step", lambda L: L.arange(0, 3, 1e30, dtype=L.int32)),
    ("arange-int32-huge-start", lambda L: L.arange(-1e30, 3, 1, dtype=L.int32)),
    ("arange-int64-start-inf", lambda L: L.arange(float("inf"), 3, dtype=L.int64)),
    ("getitem-2d-mask-then-0d-bools", lambda L: L.arange(3.).view(3, 1)[L.tensor([[True], [False], [True]]),
                                                                          L.tensor(True), L.tensor(True)]),
    ("getitem-2d-mask-then-index", lambda L: L.arange(24.).view(2, 3, 4)[L.tensor([[True, False, True],
                                                                                   [False, True, False]]),
                                                                         L.tensor([0, 3, 1])]),
]


def _setitem(L, i):
    t = L.zeros(2)
    t[i] = 1
    return t


def _resized_view_base(L):
    b = L.arange(8.)
    b[2:].resize_(3).fill_(-1)
    return b


def _out_view_base(L):
    o = L.zeros(6)
    L.add(L.ones(2), 1, out=o[1:5])
    return o


def _set_shares(L):
    a, b = L.zeros(2), L.arange(6.).view(2, 3)
    a.set_(b[:, 1:])
    a.fill_(7)
    return b, a, a.stride(), a.storage_offset()


@pytest.mark.oracle
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_argument_checks_match_torch(torch, case):
    check_like_torch(torch, case[1])


@pytest.mark.skipif(not npusim.npu.is_available(), reason="needs the npu")
def test_resize_past_the_device_capacity_raises_before_allocating():
    t = npusim.zeros(2, device="npu")
    before = npusim.npu.memory_allocated()
    with pytest.raises(npusim.npu.OutOfMemoryError):
        t.resize_(6 * 2 ** 30)   # 24 GiB of float32 on a 16 GiB device
    assert t.shape == (2,) and npusim.npu.memory_allocated() == before
    assert t.resize_(1000).shape == (1000,)


def test_resize_keeps_a_view_in_its_base_and_grows_a_copy(device):
    b = npusim.arange(8., device=device)
    v = b.view(2, 4)[:, ::2].resize_(4)
    assert host(v).tolist() == [0, 1, 2, 3] and v._base is b
    grown = b[6:].resize_(5)
    assert host(grown[:2]).tolist() == [6, 7] and b.shape == (8,)


def test_set_shares_memory(device):
    a, b = npusim.zeros(2, device=device), npusim.arange(4., device=device)
    a.set_(b)
    a.fill_(1)
    assert host(b).tolist() == [1, 1, 1, 1]
    c = npusim.zeros(1, device=device).set_(b.untyped_storage(), 1, (2,), (2,))
    assert host(c).tolist() == [1, 1] and c.stride() == (2,) and c.storage_offset() == 1


def test_python_types_are_dtypes(device):
    assert npusim.ones(2, dtype=float, device=device).dtype is npusim.float64
    assert npusim.ones(2, device=device).to(int).dtype is npusim.int64
    assert npusim.zeros(2, dtype=bool, device=device).dtype is npusim.bool
    assert npusim.arange(4, device=device).sum(dtype=float).dtype is npusim.float64
    assert npusim.ones(2, dtype=complex, device=device).dtype is npusim.complex128   # as torch's parser reads it


def test_refused_arguments_leave_the_tensor_alone(device):
    t = npusim.zeros(2, device=device)
    for bad in ("1", None, (1,)):
        with pytest.raises(TypeError):
            t.fill_(bad)
    with pytest.raises(TypeError, match="must be int, not float"):
        t.chunk(2.5)
    with pytest.raises(ValueError, match="Overflow"):
        t.random_(0, 2 ** 70)
    assert host(t).tolist() == [0.0, 0.0]
