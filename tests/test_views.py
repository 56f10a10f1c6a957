"""View ops: shapes, strides, storage offsets, ``_base``, shared memory and version counters, errors.

Each view op is checked against PyTorch (oracle) for everything a user can observe about the
result, and against explicit expectations without torch.
"""
from __future__ import annotations

import numpy as np
import pytest

import npusim
from conftest import host


def _base(L, shape=(2, 3, 4), dt="float32", device="cpu"):
    n = int(np.prod(shape)) if shape else 1
    if L is npusim:
        t = npusim.arange(n, dtype=getattr(npusim, dt), device=device)
    else:
        t = L.arange(n, dtype=getattr(L, dt))
    return t.reshape(shape).clone() if shape else t.reshape(()).clone()


def _facts(base, v):
    """Everything observable about a view ``v`` of ``base`` (lists of views are described element-wise)."""
    if isinstance(v, (list, tuple)):
        return [_facts(base, x) for x in v]
    values = v.detach().cpu()
    values = values.float() if str(values.dtype).endswith("bfloat16") else values
    return {
        "dtype": str(v.dtype).split(".")[-1], "shape": tuple(v.shape), "values": values.numpy().tolist(),
        "stride": tuple(v.stride()), "offset": v.storage_offset(), "contiguous": v.is_contiguous(),
        "shares_storage": v.untyped_storage().data_ptr() == base.untyped_storage().data_ptr(),
        "base_is_input": (v._base is base) if v._base is not None else None, "is_view": v._is_view(),
        "same_version": v._version == base._version, "is_input": v is base,
    }


def _observe(L, fn, shape, dt, device):
    base = _base(L, shape, dt, device)
    try:
        return ("ok", _facts(base, fn(L, base)))
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return ("err", type(e).__name__, str(e).split("\n")[0].replace("torch.", "npusim."))


VIEWS = {
    "view": lambda L, x: x.view(4, 6),
    "view_infer": lambda L, x: x.view(-1, 4),
    "view_size": lambda L, x: x.view(L.Size([24])),
    "view_bad_numel": lambda L, x: x.view(5, 5),
    "view_two_infer": lambda L, x: x.view(-1, -1),
    "view_negative": lambda L, x: x.view(-2, 12),
    "view_incompatible_strides": lambda L, x: x.transpose(0, 1).view(12, 2),
    "view_compatible_strides": lambda L, x: x.transpose(0, 1).view(3, 2, 2, 2),
    "view_empty_ambiguous": lambda L, x: x[:0].view(-1, 0),
    "view_as": lambda L, x: x.view_as(L.empty(24)),
    "view_dtype_same_size": lambda L, x: x.view(L.int32),
    "view_dtype_smaller": lambda L, x: x.view(L.int16),
    "view_dtype_larger": lambda L, x: x.view(L.float64),
    "view_dtype_larger_odd_last_dim": lambda L, x: x[:, :, :3].view(L.float64),
    "view_dtype_stride": lambda L, x: x.transpose(1, 2).view(L.int16),
    "view_dtype_0dim": lambda L, x: x[0, 0, 0].view(L.int16),
    "view_dtype_0dim_same_size": lambda L, x: x[0, 0, 0].view(L.int32),
    "view_dtype_storage_offset": lambda L, x: x.view(L.int8)[0, 0, 1:5].view(L.int32),
    "view_dtype_other_stride": lambda L, x: x[:, :, :2].view(L.float64),
    "reshape_view": lambda L, x: x.reshape(6, 4),
    "reshape_copy": lambda L, x: x.transpose(0, 2).reshape(24),
    "reshape_bad": lambda L, x: x.reshape(7, -1),
    "reshape_fn": lambda L, x: L.reshape(x, (-1,)),
    "reshape_as": lambda L, x: x.reshape_as(L.empty(4, 6)),
    "permute": lambda L, x: x.permute(2, 0, 1),
    "permute_negative": lambda L, x: x.permute(-1, 0, 1),
    "permute_list": lambda L, x: x.permute([1, 2, 0]),
    "permute_fn": lambda L, x: L.permute(x, (2, 1, 0)),
    "permute_duplicate": lambda L, x: x.permute(0, 0, 1),
    "permute_length": lambda L, x: x.permute(0, 1),
    "permute_out_of_range": lambda L, x: x.permute(0, 1, 3),
    "transpose": lambda L, x: x.transpose(0, 2),
    "transpose_negative": lambda L, x: x.transpose(-1, -2),
    "transpose_out_of_range": lambda L, x: x.transpose(0, 3),
    "swapaxes": lambda L, x: L.swapaxes(x, 0, 1),
    "swapdims": lambda L, x: x.swapdims(1, 2),
    "t_3d": lambda L, x: x.t(),
    "t_2d": lambda L, x: x[0].t(),
    "t_1d": lambda L, x: x[0, 0].t(),
    "T": lambda L, x: x.T,
    "mT": lambda L, x: x.mT,
    "mT_1d": lambda L, x: x[0, 0].mT,
    "expand": lambda L, x: x[:, :1].expand(2, 5, 4),
    "expand_keep": lambda L, x: x[:, :1].expand(-1, 3, -1),
    "expand_new_dims": lambda L, x: x.expand(3, 2, 3, 4),
    "expand_mismatch": lambda L, x: x.expand(2, 5, 4),
    "expand_too_few": lambda L, x: x.expand(3, 4),
    "expand_new_dim_negative": lambda L, x: x.expand(-1, 2, 3, 4),
    "expand_as": lambda L, x: x[:1].expand_as(x),
    "expand_same_size_keeps_strides": lambda L, x: x[:1, :1].expand(1, 1, 4),
    "expand_new_size_one_dim": lambda L, x: x[0].expand(1, 3, 4),
    "expand_new_dims_mixed": lambda L, x: x[0].expand(2, 1, 3, 4),
    "expand_transposed": lambda L, x: x[0].t().expand(1, 4, 3),
    "expand_unbroadcast_is_writable": lambda L, x: x[:1].expand(1, 3, 4).add_(1),
    "expand_broadcast_refuses_writes": lambda L, x: x[:1].expand(2, 3, 4).add_(1),
    "broadcast_to": lambda L, x: L.broadcast_to(x[:, :1], (2, 3, 4)),
    "squeeze_all": lambda L, x: x[:, :1, None].squeeze(),
    "squeeze_dim": lambda L, x: x[:, :1].squeeze(1),
    "squeeze_dim_not_one": lambda L, x: x.squeeze(0),
    "squeeze_dims": lambda L, x: x[:1, :1].squeeze((0, 1)),
    "squeeze_out_of_range": lambda L, x: x.squeeze(5),
    "squeeze_0d": lambda L, x: x[0, 0, 0].squeeze(0),
    "squeeze_0d_out_of_range": lambda L, x: x[0, 0, 0].squeeze(1),
    "unsqueeze": lambda L, x: x.unsqueeze(1),
    "unsqueeze_negative": lambda L, x: x.unsqueeze(-1),
    "unsqueeze_end": lambda L, x: x.unsqueeze(3),
    "unsqueeze_out_of_range": lambda L, x: x.unsqueeze(4),
    "unsqueeze_transposed": lambda L, x: x.transpose(0, 2).unsqueeze(1),
    "unsqueeze_transposed_end": lambda L, x: x.transpose(0, 2).unsqueeze(3),
    "unsqueeze_keeps_size_one_strides": lambda L, x: x[None, 1].unsqueeze(3),
    "flatten": lambda L, x: x.flatten(),
    "flatten_tail": lambda L, x: x.flatten(1),
    "flatten_head": lambda L, x: x.flatten(0, 1),
    "flatten_single_dim": lambda L, x: x.flatten(1, 1),
    "flatten_reversed": lambda L, x: x.flatten(2, 1),
    "flatten_copy": lambda L, x: x.transpose(0, 2).flatten(),
    "flatten_0d": lambda L, x: x[0, 0, 0].flatten(),
    "unflatten": lambda L, x: x.unflatten(2, (2, 2)),
    "unflatten_infer": lambda L, x: x.unflatten(-1, (-1, 2)),
    "unflatten_bad": lambda L, x: x.unflatten(2, (3, 2)),
    "unflatten_empty": lambda L, x: x.unflatten(2, ()),
    "narrow": lambda L, x: x.narrow(2, 1, 2),
    "narrow_negative": lambda L, x: x.narrow(-1, -3, 2),
    "narrow_too_long": lambda L, x: x.narrow(2, 3, 2),
    "narrow_bad_start": lambda L, x: x.narrow(2, 5, 0),
    "narrow_negative_length": lambda L, x: x.narrow(2, 0, -1),
    "narrow_tensor_start": lambda L, x: L.narrow(x, 1, L.tensor(1), 2),
    "narrow_0d": lambda L, x: x[0, 0, 0].narrow(0, 0, 1),
    "select": lambda L, x: x.select(1, 2),
    "select_negative": lambda L, x: x.select(-1, -1),
    "select_out_of_range": lambda L, x: x.select(1, 3),
    "select_0d": lambda L, x: x[0, 0, 0].select(0, 0),
    "slice": lambda L, x: x[:, 1:3],
    "slice_step": lambda L, x: x[:, :, ::2],
    "slice_int": lambda L, x: x[1],
    "slice_aten": lambda L, x: L.ops.aten.slice.Tensor(x, 2, 1, 4, 2),
    "slice_aten_step": lambda L, x: L.ops.aten.slice.Tensor(x, 2, 0, None, 0),
    "as_strided": lambda L, x: x.as_strided((3, 3), (1, 3)),
    "as_strided_offset": lambda L, x: x.as_strided((2, 2), (4, 1), 5),
    "as_strided_out_of_bounds": lambda L, x: x.as_strided((5, 5), (5, 1)),
    "as_strided_negative_stride": lambda L, x: x.as_strided((2,), (-1,)),
    "as_strided_lengths": lambda L, x: x.as_strided((2, 2), (1,)),
    "as_strided_of_view": lambda L, x: x[1].as_strided((2, 2), (1, 2)),
    "as_strided_fn": lambda L, x: L.as_strided(x, (4,), (2,), 1),
    "diagonal": lambda L, x: x.diagonal(),
    "diagonal_offset": lambda L, x: x.diagonal(1, 1, 2),
    "diagonal_negative_offset": lambda L, x: x.diagonal(-1, 2, 1),
    "diagonal_past_the_end": lambda L, x: x.diagonal(5, 1, 2),
    "diagonal_same_dims": lambda L, x: x.diagonal(0, 1, 1),
    "diagonal_2d": lambda L, x: x[0].diagonal(-1),
    "diagonal_fn": lambda L, x: L.diagonal(x, 0, -1, -2),
    "split": lambda L, x: x.split(2, 2),
    "split_uneven": lambda L, x: x.split(3, 2),
    "split_sizes": lambda L, x: x.split([1, 3], 2),
    "split_sizes_bad": lambda L, x: x.split([1, 2], 2),
    "split_fn": lambda L, x: L.split(x, 1),
    "split_zero": lambda L, x: x.split(0, 2),
    "split_negative": lambda L, x: x.split(-1),
    "split_larger_than_dim": lambda L, x: x.split(10, 2),
    "chunk": lambda L, x: x.chunk(2, 2),
    "chunk_3": lambda L, x: x.chunk(3, 2),
    "chunk_more_than_size": lambda L, x: x.chunk(5, 2),
    "chunk_zero": lambda L, x: x.chunk(0),
    "chunk_fn": lambda L, x: L.chunk(x, 2, -1),
    "unbind": lambda L, x: x.unbind(1),
    "unbind_fn": lambda L, x: L.unbind(x, -1),
    "unbind_0d": lambda L, x: x[0, 0, 0].unbind(),
    "detach": lambda L, x: x.detach(),
    "detach_fn": lambda L, x: L.detach(x),
    "alias": lambda L, x: L.ops.aten.alias(x),
    "contiguous_same": lambda L, x: x.contiguous(),
    "contiguous_copy": lambda L, x: x.transpose(0, 1).contiguous(),
    "contiguous_of_step": lambda L, x: x[:, :, ::2].contiguous(),
    "clone": lambda L, x: x.clone(),
    "clone_keeps_permutation": lambda L, x: x.transpose(0, 1).clone(),
    "clone_contiguous_format": lambda L, x: x.transpose(0, 1).clone(memory_format=L.contiguous_format),
    "clone_expanded": lambda L, x: x[:, :1].expand(2, 3, 4).clone(),
    "clone_step": lambda L, x: x[:, :, ::2].clone(),
    "movedim": lambda L, x: x.movedim(0, 2),
    "moveaxis": lambda L, x: L.moveaxis(x, (0, 1), (2, 0)),
    "view_of_view": lambda L, x: x[1].view(12)[::3],
    "empty_view": lambda L, x: x[:, :0].view(2, 0, 4),
    "empty_reshape": lambda L, x: x[:, :0].reshape(0, 5),
    "empty_transpose": lambda L, x: x[:, :0].transpose(0, 2),
}

ZERO_DIM = {
    "view_1": lambda L, x: x.view(1),
    "view_empty_size": lambda L, x: x.view(()),
    "reshape": lambda L, x: x.reshape(1, 1),
    "unsqueeze": lambda L, x: x.unsqueeze(0),
    "unsqueeze_negative": lambda L, x: x.unsqueeze(-1),
    "t": lambda L, x: x.t(),
    "transpose": lambda L, x: x.transpose(0, -1),
    "permute": lambda L, x: x.permute(()),
    "expand": lambda L, x: x.expand(3, 2),
    "expand_ones": lambda L, x: x.expand(1, 1),
    "squeeze": lambda L, x: x.squeeze(),
    "flatten": lambda L, x: x.flatten(),
    "diagonal": lambda L, x: x.diagonal(),
    "split": lambda L, x: x.split(1),
    "chunk": lambda L, x: x.chunk(1),
    "select": lambda L, x: x.select(0, 0),
}

DTYPE_VIEWS = [
    ((4,), "int16", lambda L, x: x.view(L.uint8)),
    ((4,), "uint8", lambda L, x: x.view(L.bool)),
    ((4,), "float16", lambda L, x: x.view(L.int16)),
    ((4,), "bfloat16", lambda L, x: x.view(L.float16)),
    ((6,), "int8", lambda L, x: x.view(L.int32)),
    ((8,), "int8", lambda L, x: x[1:5].view(L.int32)),
    ((4, 3), "int32", lambda L, x: x[:, :1].view(L.int16)),
    ((4, 3), "int32", lambda L, x: x[:, :2].view(L.int64)),
    ((4, 4), "int16", lambda L, x: x.as_strided((4, 1), (4, 2)).view(L.int8)),
]


@pytest.mark.oracle
@pytest.mark.filterwarnings("ignore:The use of `x.T`")
@pytest.mark.parametrize("name", sorted(VIEWS))
def test_view_matches_torch(name, device, torch):
    fn = VIEWS[name]
    assert _observe(npusim, fn, (2, 3, 4), "float32", device) == _observe(torch, fn, (2, 3, 4), "float32", "cpu")


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(ZERO_DIM))
def test_zero_dim_view_matches_torch(name, device, torch):
    fn = ZERO_DIM[name]
    assert _observe(npusim, fn, (), "float32", device) == _observe(torch, fn, (), "float32", "cpu")


@pytest.mark.oracle
@pytest.mark.parametrize("case", range(len(DTYPE_VIEWS)))
def test_dtype_view_matches_torch(case, device, torch):
    shape, dt, fn = DTYPE_VIEWS[case]
    assert _observe(npusim, fn, shape, dt, device) == _observe(torch, fn, shape, dt, "cpu")


# --- without torch ----------------------------------------------------------------------------------

def test_views_share_memory_and_versions(device):
    x = npusim.arange(12.0, device=device).reshape(3, 4)
    views = [x.view(4, 3), x.t(), x[1], x[:, ::2], x.unsqueeze(0), x.expand(2, 3, 4), x.narrow(1, 1, 2),
             x.select(0, 2), x.diagonal(), x.as_strided((2, 2), (1, 4), 1), x.split(2)[1], x.unflatten(1, (2, 2)),
             x.flatten(), x.squeeze(), x.permute(1, 0), x.chunk(2, 1)[0], x.unbind(1)[3], x.view(npusim.int32)]
    for v in views:
        assert v.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
        assert v.device == x.device
    x.add_(1)
    assert all(v._version == 1 for v in views)
    assert host(x.t())[1, 2] == 10.0 and host(x.diagonal()).tolist() == [1.0, 6.0, 11.0]
    x.t()[0, 1] = 100.0  # writes through a view reach the base
    assert host(x)[1, 0] == 100.0 and x._version == 2
    assert all(v._version == 2 for v in views)


def test_base_points_to_the_root_tensor(device):
    x = npusim.ones(4, 4, device=device)
    v = x[1:].t()[0]
    assert v._base is x and v._is_view() and not x._is_view() and x._base is None
    assert x.detach()._base is None and not x.detach()._is_view()
    assert x.detach().data_ptr() == x.data_ptr()
    assert x.view(npusim.int32)._base is None  # torch reports dtype views as aliases
    assert x.contiguous() is x and x.flatten(1, 1) is x
    c = x.clone()
    assert c._base is None and c.data_ptr() != x.data_ptr()


def test_strides_and_offsets(device):
    x = npusim.arange(24.0, device=device).reshape(2, 3, 4)
    assert x.stride() == (12, 4, 1) and x.stride(-1) == 1
    assert x.t().stride() if False else x.transpose(0, 2).stride() == (1, 4, 12)
    assert x[:, 1:, ::2].stride() == (12, 4, 2) and x[:, 1:, ::2].storage_offset() == 4
    assert x.unsqueeze(1).stride() == (12, 12, 4, 1)
    assert x.expand(5, 2, 3, 4).stride() == (0, 12, 4, 1)
    assert x.diagonal(0, 1, 2).stride() == (12, 5)
    assert x.select(2, 3).storage_offset() == 3
    assert x.as_strided((2, 2), (1, 2), 7).storage_offset() == 7
    assert host(x.as_strided((2, 2), (1, 2), 7)).tolist() == [[7.0, 9.0], [8.0, 10.0]]
    assert npusim.zeros(2, 0, 3, device=device).stride() == (3, 3, 1)  # empty tensors keep contiguous strides
    assert x.view(npusim.int16).stride() == (24, 8, 1)


def test_view_values_match_numpy(device):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = npusim.tensor(a, device=device)
    np.testing.assert_array_equal(host(x.permute(2, 0, 1)), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(host(x.reshape(4, 6)), a.reshape(4, 6))
    np.testing.assert_array_equal(host(x.transpose(0, 2).reshape(-1)), a.transpose(2, 1, 0).reshape(-1))
    np.testing.assert_array_equal(host(x.diagonal(1, 1, 2)), np.diagonal(a, 1, 1, 2))
    np.testing.assert_array_equal(host(x.diagonal(-1, 2, 1)), np.diagonal(a, -1, 2, 1))
    for got, want in zip(x.split([1, 3], 2), np.split(a, [1], 2)):
        np.testing.assert_array_equal(host(got), want)
    for got, want in zip(x.chunk(3, 2), np.array_split(a, [2], 2)):
        np.testing.assert_array_equal(host(got), want)
    np.testing.assert_array_equal(host(x.unflatten(2, (2, -1))), a.reshape(2, 3, 2, 2))
    np.testing.assert_array_equal(host(x.view(npusim.int32)), a.view(np.int32))
    np.testing.assert_array_equal(host(x.movedim(0, 2)), np.moveaxis(a, 0, 2))


def test_diagonal_is_writable(device):
    x = npusim.zeros(3, 3, device=device)
    x.diagonal().fill_(1.0)
    assert host(x).tolist() == np.eye(3).tolist()


def test_reshape_copies_only_when_needed(device):
    x = npusim.arange(6.0, device=device).reshape(2, 3).clone()
    assert x.reshape(3, 2)._base is x
    y = x.t().reshape(6)
    assert y._base is None and y.data_ptr() != x.data_ptr() and host(y).tolist() == [0, 3, 1, 4, 2, 5]


def test_view_errors(device):
    x = npusim.arange(24.0, device=device).reshape(2, 3, 4)
    cases = [
        (lambda: x.view(5, 5), RuntimeError, r"^shape '\[5, 5\]' is invalid for input of size 24$"),
        (lambda: x.view(-1, -1), RuntimeError, "^only one dimension can be inferred$"),
        (lambda: x.view(-2, 12), RuntimeError, r"^invalid shape dimension -2 at index 0 of shape \[-2, 12\]$"),
        (lambda: x[:0].view(-1, 0), RuntimeError, r"^cannot reshape tensor of 0 elements into shape \[-1, 0\] because "
                                                  r"the unspecified dimension size -1 can be any value and is ambiguous$"),
        (lambda: x.transpose(0, 1).view(12, 2), RuntimeError, r"^view size is not compatible with input tensor's size "
                                                              r"and stride \(at least one dimension spans across two "
                                                              r"contiguous subspaces\). Use .reshape\(...\) instead.$"),
        (lambda: x[:, :, :3].view(npusim.float64), RuntimeError, r"^self.size\(-1\) must be divisible by 2 to view "
                                                                 r"Float as Double \(different element sizes\), but "
                                                                 r"got 3$"),
        (lambda: x.transpose(1, 2).view(npusim.int16), RuntimeError, r"^self.stride\(-1\) must be 1 to view Float as "
                                                                     r"Short \(different element sizes\), but got 4$"),
        (lambda: x[0, 0, 0].view(npusim.int16), RuntimeError, r"^self.dim\(\) cannot be 0 to view Float as Short "
                                                              r"\(different element sizes\)$"),
        (lambda: x.permute(0, 0, 1), RuntimeError, r"^permute\(\): duplicate dims are not allowed.$"),
        (lambda: x.permute(0, 1, 3), IndexError, r"^Dimension out of range \(expected to be in range of \[-3, 2\], but "
                                                 r"got 3\)$"),
        (lambda: x.transpose(0, 3), IndexError, r"^Dimension out of range \(expected to be in range of \[-3, 2\]"),
        (lambda: x.t(), RuntimeError, r"^t\(\) expects a tensor with <= 2 dimensions, but self is 3D$"),
        (lambda: x.expand(2, 5, 4), RuntimeError, r"^The expanded size of the tensor \(5\) must match the existing size "
                                                  r"\(3\) at non-singleton dimension 1.  Target sizes: \[2, 5, 4\].  "
                                                  r"Tensor sizes: \[2, 3, 4\]$"),
        (lambda: x.expand(-1, 2, 3, 4), RuntimeError, r"^The expanded size of the tensor \(-1\) isn't allowed in a "
                                                      r"leading, non-existing dimension 0$"),
        (lambda: x.unsqueeze(4), IndexError, r"^Dimension out of range \(expected to be in range of \[-4, 3\], but got "
                                             r"4\)$"),
        (lambda: x.flatten(2, 1), RuntimeError, r"^flatten\(\) has invalid args: start_dim cannot come after end_dim$"),
        (lambda: x.unflatten(2, (3, 2)), RuntimeError, r"^unflatten: Provided sizes \[3, 2\] don't multiply up to the "
                                                       r"size of dim 2 \(4\) in the input tensor$"),
        (lambda: x.narrow(2, 3, 2), RuntimeError, r"^start \(3\) \+ length \(2\) exceeds dimension size \(4\).$"),
        (lambda: x.narrow(2, 5, 0), IndexError, r"^start out of range \(expected to be in range of \[-4, 4\], but got "
                                                r"5\)$"),
        (lambda: x.select(1, 3), IndexError, r"^select\(\): index 3 out of range for tensor of size \[2, 3, 4\] at "
                                             r"dimension 1$"),
        (lambda: x[0, 0, 0].select(0, 0), IndexError, r"^select\(\) cannot be applied to a 0-dim tensor.$"),
        (lambda: x.as_strided((5, 5), (5, 1)), RuntimeError, r"^setStorage: sizes \[5, 5\], strides \[5, 1\], storage "
                                                             r"offset 0, and itemsize 4 requiring a storage size of "
                                                             r"100 are out of bounds for storage of size 96$"),
        (lambda: x.as_strided((2,), (-1,)), RuntimeError, r"^as_strided: Negative strides are not supported at the "
                                                          r"moment, got strides: \[-1\]$"),
        (lambda: x.diagonal(0, 1, 1), RuntimeError, "^diagonal dimensions cannot be identical 1, 1$"),
        (lambda: x.split([1, 2], 2), RuntimeError, r"^split_with_sizes expects split_sizes to sum exactly to 4 "
                                                   r"\(input tensor's size at dimension 2\), but got "
                                                   r"split_sizes=\[1, 2\]$"),
        (lambda: x.split(0, 2), RuntimeError, "^split_size can only be 0 if dimension size is 0, but got dimension "
                                              "size of 4$"),
        (lambda: x.chunk(0), RuntimeError, "^chunk expects `chunks` to be greater than 0, got: 0$"),
        (lambda: x[0, 0, 0].unbind(), IndexError, r"^Dimension specified as 0 but tensor has no dimensions$"),
        (lambda: x.reshape(2.5), TypeError, r"^reshape\(\): argument 'shape' \(position 1\) must be tuple of ints, "
                                            r"not float$"),
        (lambda: x.view(2, 2.5), TypeError, r"^view\(\): argument 'size' failed to unpack the object at pos 2 with "
                                            r"error \"type must be tuple of ints,but got float\"$"),
        (lambda: x.view(2.5), TypeError, r"^view\(\) received an invalid combination of arguments - got \(float\), "
                                         r"but expected one of:"),
        (lambda: npusim.reshape(x, 2.5), TypeError, r"^reshape\(\): argument 'shape' \(position 2\) must be tuple of "
                                                    r"ints, not float$"),
    ]
    for fn, exc, pattern in cases:
        with pytest.raises(exc, match=pattern):
            fn()


def test_squeeze_and_unsqueeze_shapes(device):
    x = npusim.ones(1, 3, 1, 2, device=device)
    assert x.squeeze().shape == (3, 2) and x.squeeze(0).shape == (3, 1, 2) and x.squeeze(1).shape == x.shape
    assert x.squeeze((0, 2)).shape == (3, 2) and npusim.squeeze(x, -2).shape == (1, 3, 2)
    assert x.unsqueeze(-1).shape == (1, 3, 1, 2, 1) and x.unsqueeze(0).shape == (1, 1, 3, 1, 2)
    s = npusim.tensor(5.0, device=device)
    assert s.unsqueeze(0).shape == (1,) and s.squeeze().shape == () and s.view(1, 1).shape == (1, 1)


def test_contiguous_and_clone_layouts(device):
    x = npusim.arange(24.0, device=device).reshape(2, 3, 4).permute(2, 0, 1)
    assert not x.is_contiguous()
    c = x.contiguous()
    assert c.is_contiguous() and c.stride() == (6, 3, 1) and host(c).tolist() == host(x).tolist()
    assert x.clone().stride() == x.stride()  # preserve_format keeps a dense permutation
    assert x.clone(memory_format=npusim.contiguous_format).stride() == (6, 3, 1)
    e = npusim.ones(2, 1, device=device).expand(2, 3)
    assert e.clone().stride() == (3, 1)  # overlapping memory cannot be preserved
