"""einsum as torch's CompositeImplicitAutograd kernel (ATen's Linear.cpp).

Diagonals, unsqueezes and permutes align every operand to one order of dimensions
(output dimensions first, then the contracted ones); pairs of operands then contract
through ``bmm`` (``mul`` when nothing is summed between them). Every step is a
dispatched op, so autograd differentiates the parts and autocast casts the matmuls,
as torch's einsum does; dtypes and errors come from the same ops as torch's.

What einsum decides from the equation and the shapes is planned once per
(equation, shapes, path) and cached: models call einsum in loops.
"""
from __future__ import annotations

import functools
import math
import string

from ..core.dispatch.ops_namespace import aten

# torch numbers labels A-Z then a-z; implicit outputs list them in that order
_LETTERS = string.ascii_uppercase + string.ascii_lowercase
_LABEL = {ch: i for i, ch in enumerate(_LETTERS)}
_ELLIPSIS = -1


def _parse(equation, shapes):
    """torch's equation parsing and checks.

    Returns the labels of each operand (``_ELLIPSIS`` for "..."), the output labels (the implicit output
    is the ellipsis, then the labels seen exactly once), the count of each label and the number of
    dimensions the ellipsis covers.
    """
    num_ops = len(shapes)
    arrow = equation.find("->")
    lhs = equation if arrow < 0 else equation[:arrow]
    op_labels = [[] for _ in range(num_ops)]
    cur, ell_seen, i = 0, False, 0
    while i < len(lhs):
        ch = lhs[i]
        if ch == ".":
            if ell_seen:
                raise RuntimeError(f"einsum(): found '.' for operand {cur} for which an ellipsis was already found")
            if not (i + 2 < len(lhs) and lhs[i + 1] == "." and lhs[i + 2] == "."):
                raise RuntimeError(f"einsum(): found '.' for operand {cur} that is not part of any ellipsis")
            op_labels[cur].append(_ELLIPSIS)
            ell_seen = True
            i += 2
        elif ch == ",":
            cur += 1
            if cur >= num_ops:
                raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
            ell_seen = False
        elif ch != " ":
            label = _LABEL.get(ch)
            if label is None:
                raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation string, "
                                   f"subscripts must be in [a-zA-Z]")
            op_labels[cur].append(label)
        i += 1
    if cur != num_ops - 1:
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")

    counts = [0] * len(_LETTERS)
    ell_ndim = 0
    for i, (labels, shape) in enumerate(zip(op_labels, shapes)):
        has_ell = _ELLIPSIS in labels
        nlabels = len(labels) - has_ell
        for label in labels:
            if label != _ELLIPSIS:
                counts[label] += 1
        if has_ell:
            ell_ndim = max(ell_ndim, len(shape) - nlabels)
        if (nlabels > len(shape)) if has_ell else (nlabels != len(shape)):
            if has_ell:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({nlabels}) is more than "
                                   f"the number of dimensions ({len(shape)}) for operand {i}")
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({nlabels}) does not match the "
                               f"number of dimensions ({len(shape)}) for operand {i} and no ellipsis was given")

    if arrow < 0:
        out = [_ELLIPSIS] + [label for label in range(len(_LETTERS)) if counts[label] == 1]
    else:
        out = []
        rhs = equation[arrow + 2:]
        i = 0
        while i < len(rhs):
            ch = rhs[i]
            if ch == ".":
                if _ELLIPSIS in out:
                    raise RuntimeError("einsum(): found '.' for output but an ellipsis (...) was already found")
                if not (i + 2 < len(rhs) and rhs[i + 1] == "." and rhs[i + 2] == "."):
                    raise RuntimeError("einsum(): found '.' for output that is not part of any ellipsis (...)")
                out.append(_ELLIPSIS)
                i += 2
            elif ch != " ":
                label = _LABEL.get(ch)
                if label is None:
                    raise RuntimeError(f"einsum(): invalid subscript given at index {len(lhs) + 2 + i} in the "
                                       f"equation string, subscripts must be in [a-zA-Z]")
                if label in out:
                    raise RuntimeError(f"einsum(): output subscript {ch} appears more than once in the output")
                if not counts[label]:
                    raise RuntimeError(f"einsum(): output subscript {ch} does not appear in the equation for any "
                                       f"input operand")
                out.append(label)
            i += 1
    return op_labels, out, counts, ell_ndim


def _align(i, labels, shape, slot_of, ell_index, ell_ndim, nslots, label_size, ell_sizes, dim_counts):
    """Operand ``i``'s place in the common order of dimensions (torch's loop, with its checks).

    Returns the diagonals to take (torch's ``diagonal(0, prev, dim).movedim(-1, prev)``), the operand's
    shape after them, and for each slot of the common order the operand dimension that fills it (None
    for a dimension of size 1 that torch unsqueezes).
    """
    shape = list(shape)
    permutation = [-1] * nslots
    diagonals = []
    dim = 0
    for label in labels:
        if label == _ELLIPSIS:
            covered = len(shape) - (len(labels) - 1)
            for j in range(ell_ndim - covered, ell_ndim):
                n = shape[dim]
                if n != 1:
                    if ell_sizes[j] != 1 and ell_sizes[j] != n:
                        raise RuntimeError(f"einsum(): dimension {dim} covered by ellipsis in operand {i}has size "
                                           f"{n} which does not broadcast with previously seen ellipsis with size "
                                           f"{ell_sizes[j]} for the respective dimension")
                    ell_sizes[j] = n
                    dim_counts[ell_index + j] += 1
                permutation[ell_index + j] = dim
                dim += 1
        elif permutation[slot_of[label]] == -1:
            n = shape[dim]
            if n != 1:
                if label_size[label] != 1 and label_size[label] != n:
                    raise RuntimeError(f"einsum(): subscript {_LETTERS[label]} has size {n} for operand {i} which "
                                       f"does not broadcast with previously seen size {label_size[label]}")
                label_size[label] = n
                dim_counts[slot_of[label]] += 1
            permutation[slot_of[label]] = dim
            dim += 1
        else:  # a repeated label takes the diagonal, in the place of the label's first dimension
            prev = permutation[slot_of[label]]
            if shape[dim] != shape[prev]:
                raise RuntimeError(f"einsum(): subscript {_LETTERS[label]} is repeated for operand {i} but the "
                                   f"sizes don't match, {shape[dim]} != {shape[prev]}")
            del shape[dim]
            order = list(range(len(shape) - 1))     # movedim(-1, prev): None when it moves nothing
            order.insert(prev, len(shape) - 1)
            diagonals.append((prev, dim, None if prev == len(shape) - 1 else order))
    return tuple(diagonals), tuple(shape), tuple(None if p == -1 else p for p in permutation)


# The plan keeps each operand as (shape, slots): a tensor of that shape whose dimension slots[d] is
# dimension d of torch's aligned operand (None: size 1, absent). The aligned operand is never built
# unless needed: each step permutes and reshapes the tensor straight into what the step takes.

def _sizes(shape, slots):
    return tuple(1 if s is None else shape[s] for s in slots)


def _into(shape, slots, order, target):
    """The permute (None: identity) and reshape (None: not needed) that lay the dimensions out in the
    slots' ``order`` with the sizes ``target``."""
    perm = [slots[d] for d in order if slots[d] is not None]
    laid = tuple(shape[p] for p in perm)
    return (None if perm == sorted(perm) else perm), (None if laid == tuple(target) else list(target))


def _pair_plan(a, b, sum_dims):
    """torch's sumproduct_pair(left, right, sum_dims, keepdim=True) on operands ``a`` and ``b`` (each a
    (shape, slots) pair): one bmm between permutes and reshapes, or mul when nothing is summed.
    Returns the step and the (shape, slots) of the result."""
    (sa, ma), (sb, mb) = a, b
    left, right = _sizes(sa, ma), _sizes(sb, mb)
    nslots = len(left)
    identity = tuple(range(nslots))
    if not sum_dims:
        shape = tuple(r if n == 1 else n for n, r in zip(left, right))   # broadcast (0 beats 1)
        return ("mul", _into(sa, ma, identity, left), _into(sb, mb, identity, right)), (shape, identity)
    lro, lo, ro = [], [], []
    for d in range(nslots):
        if d in sum_dims:
            continue
        if left[d] != 1 and right[d] != 1:
            lro.append(d)
        elif left[d] != 1:
            lo.append(d)
        else:  # dimensions of size 1 on both sides count as right-only
            ro.append(d)
    # torch multiplies right by left when all right-only dimensions come first (one permute less after)
    swap = bool(lo and ro and ro[-1] < lo[0])
    if swap:
        (sa, ma), (sb, mb), left, right, lo, ro = (sb, mb), (sa, ma), right, left, ro, lo
    lro_size = math.prod(left[d] for d in lro)
    lo_size = math.prod(left[d] for d in lo)
    ro_size = math.prod(right[d] for d in ro)
    sum_size = math.prod(left[d] for d in sum_dims)
    kept = lro + lo + ro
    shape = tuple(right[d] if d in ro else left[d] for d in kept)
    slots = tuple(kept.index(d) if d in kept else None for d in range(nslots))
    step = ("bmm", swap, _into(sa, ma, lro + lo + sum_dims + ro, (lro_size, lo_size, sum_size)),
            _into(sb, mb, lro + sum_dims + ro + lo, (lro_size, sum_size, ro_size)),
            None if shape == (lro_size, lo_size, ro_size) else list(shape))
    return step, (shape, slots)


def _sum_plan(operand, slots_to_sum):
    """Sum the given slots of an operand (keepdim, as torch): the dims to sum and the operand after."""
    if not slots_to_sum:
        return operand, None
    shape, slots = operand
    dims = [slots[d] for d in slots_to_sum]
    return (tuple(1 if p in dims else n for p, n in enumerate(shape)), slots), dims


class _PathError:
    """A bad step of a given contraction path: raised when the contraction reaches it, as torch does."""

    def __init__(self, message):
        self.message = message


@functools.lru_cache(maxsize=512)
def _plan(equation, shapes, path):
    op_labels, out, counts, ell_ndim = _parse(equation, shapes)

    # torch's label_perm_index: output dimensions first, then the ellipsis if summed, then contracted labels
    slot_of = [-1] * len(_LETTERS)
    slot, ell_index = 0, None
    for label in out:
        if label == _ELLIPSIS:
            ell_index = slot
            slot += ell_ndim
        else:
            slot_of[label] = slot
            slot += 1
    out_ndim = slot
    if ell_index is None:
        ell_index = slot
        slot += ell_ndim
    for label in range(len(_LETTERS)):
        if counts[label] and slot_of[label] == -1:
            slot_of[label] = slot
            slot += 1
    nslots = slot

    label_size = [1] * len(_LETTERS)
    ell_sizes = [1] * ell_ndim
    dim_counts = [0] * nslots
    diagonals, pending = [], []
    for i, (labels, shape) in enumerate(zip(op_labels, shapes)):
        diag, shape, slots = _align(i, labels, shape, slot_of, ell_index, ell_ndim, nslots, label_size, ell_sizes,
                                    dim_counts)
        diagonals.append(diag)
        pending.append((shape, slots))

    # contract pairs (from the left, or in the path's order), summing a dimension as soon as one operand
    # is its last: alone in one operand by a sum, between the pair by their bmm
    steps, step = [], 0
    while len(pending) > 1:
        i, j = 0, 1
        if path is not None:
            i, j = path[step], path[step + 1]
            step += 2
            if j < i:
                i, j = j, i
            if i == j or i < 0 or j >= len(pending):
                steps.append(_PathError(f"einsum(): invalid contraction ({i}, {j}) "
                                        + ("cannot contract an operand with itself" if i == j
                                           else "operand index is out of bounds")))
                break
        a, b = pending[i], pending[j]
        del pending[j], pending[i]
        sa, sb = _sizes(*a), _sizes(*b)
        sum_dims, a_sum, b_sum = [], [], []
        for d in range(out_ndim, nslots):
            if sa[d] != 1 and sb[d] != 1:
                dim_counts[d] -= 1
                if dim_counts[d] == 1:
                    sum_dims.append(d)
                    dim_counts[d] = 0
            elif dim_counts[d] == 1:
                if sa[d] != 1:
                    a_sum.append(d)
                    dim_counts[d] = 0
                elif sb[d] != 1:
                    b_sum.append(d)
                    dim_counts[d] = 0
        a, a_sum = _sum_plan(a, a_sum)
        b, b_sum = _sum_plan(b, b_sum)
        pair, result = _pair_plan(a, b, sum_dims)
        steps.append((i, j, a_sum, b_sum, pair))
        if path is not None:
            pending.append(result)
        else:
            pending.insert(0, result)

    shape, slots = pending[0]
    summed = None
    if len(shapes) == 1 and nslots > out_ndim:
        # one operand sums the contracted dimensions itself
        summed = sorted(slots[d] for d in range(out_ndim, nslots))
        kept = [p for p in range(len(shape)) if p not in summed]
        shape = tuple(shape[p] for p in kept)
        slots = tuple(kept.index(slots[d]) for d in range(out_ndim))
    # the output: its dimensions in order, the contracted ones (of size 1 by now) dropped
    perm, size = _into(shape, slots, range(len(slots)), _sizes(shape, slots)[:out_ndim])
    return tuple(diagonals), tuple(steps), (summed, perm, size)


def _lay(t, how):
    perm, shape = how
    if perm is not None:
        t = aten.permute.default(t, perm)
    return t if shape is None else aten.reshape.default(t, shape)


def _diagonals(t, diagonals):
    for prev, dim, order in diagonals:
        t = aten.diagonal.default(t, 0, prev, dim)
        if order is not None:
            t = aten.permute.default(t, order)
    return t


def einsum(equation, tensors, *, path=None):
    """torch.einsum over dispatched ops: views, sum, mul and bmm."""
    if not tensors:
        raise RuntimeError("einsum(): must provide at least one operand")
    num_ops = len(tensors)
    if path is not None:
        path = tuple(path)
        expected = 1 if num_ops == 1 else 2 * (num_ops - 1)
        if len(path) != expected:
            raise RuntimeError(f"einsum(): expected contraction path given in path parameter to have size "
                               f"{expected} but got {len(path)}")
    diagonals, steps, (summed, perm, size) = _plan(equation, tuple([t._a.shape for t in tensors]), path)
    ops = [_diagonals(t, d) if d else t for t, d in zip(tensors, diagonals)]
    for s in steps:
        if s.__class__ is _PathError:
            raise RuntimeError(s.message)
        i, j, a_sum, b_sum, pair = s
        a, b = ops[i], ops[j]
        del ops[j], ops[i]
        if a_sum:
            a = aten.sum.dim_IntList(a, a_sum, True)
        if b_sum:
            b = aten.sum.dim_IntList(b, b_sum, True)
        if pair[0] == "mul":
            r = aten.mul.Tensor(_lay(a, pair[1]), _lay(b, pair[2]))
        else:
            _, swap, lay_left, lay_right, shape = pair
            if swap:
                a, b = b, a
            r = aten.bmm.default(_lay(a, lay_left), _lay(b, lay_right))
            if shape is not None:
                r = aten.view.default(r, shape)
        if path is not None:
            ops.append(r)
        else:
            ops.insert(0, r)
    result = ops[0]
    if summed is not None:
        result = aten.sum.dim_IntList(result, summed, False)
    if perm is None and size is None and result is tensors[0]:
        return aten.permute.default(result, list(range(result.dim())))   # a view, as torch's, not the operand
    return _lay(result, (perm, size))


COMPOSITE_IMPLICIT = {"einsum": einsum}
