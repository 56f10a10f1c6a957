"""``npusim.func.rearrange``: einops' rearrange (transpose, reshape, squeeze, unsqueeze, stack and concatenate
written as a pattern), as torch.func's.

torch binds the pattern's axes to first-class dimensions; here the same binding is computed up front: every axis
of the left side gets a size (from the tensor, ``axes_lengths``, or inferred inside a group, with functorch.dim's
checks and messages), the tensor is reshaped to one dimension per axis, permuted into the right side's order and
reshaped to its groups, so the result is a view whenever torch's is. A unitary axis of the left side (``1``) that
the right side drops is summed away, as torch's first-class dims do.
"""
from __future__ import annotations

import functools

from ..core.tensor import Tensor
from .einops_pattern import ELLIPSIS, AnonymousAxis, parse_pattern, validate_rearrange


class DimensionBindError(Exception):
    """A pattern's axes do not fit the tensor's sizes (functorch.dim's error)."""


class _Axis:
    """A first-class dimension of the plan: its name (``d0``...) and its size once bound."""

    __slots__ = ("name", "size")

    def __init__(self, name: str):
        self.name = name
        self.size = None

    def __repr__(self) -> str:
        return self.name


def _bind_pack(size: int, pack: list) -> None:
    """Give the axes of a group their sizes so that their product is ``size`` (functorch.dim's rules)."""
    product = 1
    for i, axis in enumerate(pack):
        if axis.size is None:
            for other in pack[i + 1:]:
                if other.size is None:
                    raise DimensionBindError(f"cannot infer the sizes of two dimensions at once {axis!r} and "
                                             f"{other!r}")
                product *= other.size
            if size % product != 0:
                sizes = tuple(a.size if a.size is not None else "?" for a in pack)
                raise DimensionBindError(f"inferred dimension does not evenly fit into larger dimension: {size} vs "
                                         f"{sizes}")
            axis.size = size // product
            product = size
            break
        product *= axis.size
    if product != size:
        raise DimensionBindError(f"Dimension sizes to do not match ({size} != {product}) when matching dimension pack "
                                 f"{tuple(pack)}")


@functools.lru_cache(256)
def _plan(ndim: int, pattern: str, **axes_lengths):
    """What rearrange does to tensors of ``ndim`` dimensions: the left side's packs of axes (one per tensor
    dimension), the right side's groups, the summed unitary axes and the sizes given. Memoised, as torch's."""
    left, right = parse_pattern(pattern, axes_lengths)
    validate_rearrange(left, right, axes_lengths)
    n_anonymous = sum(not entry for entry in left.composition)
    if left.has_ellipsis:
        n_ellipsis = ndim - (len(left.composition) - 1)
        n_named = len(left.identifiers) - 1
        if n_anonymous + n_named > ndim:
            raise ValueError(f"Number of dimensions in pattern ({n_anonymous + n_named}) must be less than or equal "
                             f"to the number of dimensions in the tensor ({ndim})")
    else:
        n_ellipsis = 0
        n_named = len(left.identifiers)
        if len(left.composition) != ndim:
            raise ValueError(f"Number of dimensions in pattern ({len(left.composition)}) must be equal to the number "
                             f"of dimensions in the tensor ({ndim})")
    n_axes = n_named + n_ellipsis + n_anonymous
    if n_axes == 0:
        return None                                   # a 0-d tensor: the identity
    of_name = {}                                      # name (or unitary axis, or ELLIPSIS) -> its axis numbers
    anonymous = []
    packs = []                                        # per tensor dimension: its axis numbers, and whether a pack
    next_axis = 0
    for entry in left.composition:
        if entry == ELLIPSIS:
            numbers = list(range(next_axis, next_axis + n_ellipsis))
            of_name[ELLIPSIS] = numbers
            packs.extend(([n], False) for n in numbers)
            next_axis += n_ellipsis
            continue
        numbers = []
        for name in entry:
            of_name[name] = [next_axis]
            numbers.append(next_axis)
            next_axis += 1
        if not entry:                                 # a unitary axis ("1" or "()"): its own axis, summed at the end
            unit = AnonymousAxis("1")
            of_name[unit] = [next_axis]
            anonymous.append(next_axis)
            numbers.append(next_axis)
            next_axis += 1
        packs.append((numbers, True))
    groups = []                                       # the right side: per result dimension, its axis numbers
    for entry in right.composition:
        if entry == ELLIPSIS:
            groups.extend([n] for n in of_name[ELLIPSIS])
        else:
            groups.append([n for name in entry for n in of_name[name]])
    given = tuple((of_name[name][0], length) for name, length in axes_lengths.items())
    return n_axes, tuple(packs), tuple(map(tuple, groups)), tuple(anonymous), given


def _rearrange_one(tensor: Tensor, plan):
    n_axes, packs, groups, anonymous, given = plan
    axes = [_Axis(f"d{i}") for i in range(n_axes)]
    for number, length in given:
        axes[number].size = length
    for size, (numbers, is_pack) in zip(tensor.shape, packs):
        if is_pack:
            _bind_pack(size, [axes[n] for n in numbers])
        else:
            axes[numbers[0]].size = size
    r = tensor.reshape([a.size for a in axes])
    order = [n for group in groups for n in group] + list(anonymous)
    r = r.permute(order)
    sizes = [1 for _ in groups]
    for i, group in enumerate(groups):
        for n in group:
            sizes[i] *= axes[n].size
    r = r.reshape(sizes + [axes[n].size for n in anonymous])
    if anonymous:
        # a new tensor in the result's own order, as torch's sum over first-class dims gives
        r = r.sum(tuple(range(len(groups), len(groups) + len(anonymous)))).contiguous()
    return r


def rearrange(tensor, pattern: str, **axes_lengths: int) -> Tensor:
    """einops' ``rearrange``: reorder, split, merge, add and drop axes of ``tensor`` (or of a list of tensors,
    stacked first) as ``pattern`` says, e.g. ``"b h w c -> b c h w"``, ``"b (h1 h) w c -> (b h1) h w c"`` with
    ``h1=2``. A name is an axis, ``(...)`` a group of axes as one dimension, ``...`` the dimensions no name covers,
    ``1`` or ``()`` a dimension of size 1; ``axes_lengths`` give the sizes an inside-group split cannot infer.
    """
    if not isinstance(tensor, Tensor):
        from ..api.operators import stack
        tensor = stack(tensor)
    plan = _plan(tensor.dim(), pattern, **axes_lengths)
    if plan is None:
        return tensor
    return _rearrange_one(tensor, plan)


__all__ = ["rearrange"]
