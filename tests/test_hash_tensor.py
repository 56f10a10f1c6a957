"""torch.hash_tensor: the XOR of the elements' 64-bit patterns, as uint64, on cpu and npu."""
from __future__ import annotations

import struct

import pytest

import npusim


def _bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def test_floats_hash_as_the_xor_of_their_float64_bits(device):
    x = npusim.tensor([0.0, 1.0, 2.0, 3.0], device=device)
    h = npusim.hash_tensor(x)
    assert h.dtype is npusim.uint64 and h.shape == () and h.device == x.device
    assert h.item() == _bits(0.0) ^ _bits(1.0) ^ _bits(2.0) ^ _bits(3.0) == 4609434218613702656


def test_integers_and_bools_widen_to_int64(device):
    x = npusim.tensor([[-3, 1], [2, 0]], dtype=npusim.int8, device=device)
    assert npusim.hash_tensor(x, 1).tolist() == [(-3 ^ 1) % 2 ** 64, 2]
    assert npusim.hash_tensor(npusim.tensor([True, False, True], device=device)).item() == 0


def test_dims_and_keepdim(device):
    x = npusim.arange(6.0, device=device).reshape(2, 3)
    assert npusim.hash_tensor(x, 0, keepdim=True).shape == (1, 3)
    assert npusim.hash_tensor(x, (0, 1)).item() == npusim.hash_tensor(x).item() == npusim.hash_tensor(x, []).item()
    assert x.hash_tensor(1).tolist() == [_bits(0.0) ^ _bits(1.0) ^ _bits(2.0), _bits(3.0) ^ _bits(4.0) ^ _bits(5.0)]
    assert npusim.hash_tensor(npusim.tensor(2.5, device=device)).item() == _bits(2.5)


def test_equal_tensors_hash_equally_and_odd_lengths_fold(device):
    x = npusim.randn(7, 5, device=device)
    assert npusim.hash_tensor(x, 1).tolist() == npusim.hash_tensor(x.clone(), 1).tolist()
    expected = 0
    for v in x.double().reshape(-1).tolist():
        expected ^= _bits(v)
    assert npusim.hash_tensor(x).item() == expected


def test_out(device):
    out = npusim.empty(0, dtype=npusim.uint64, device=device)
    r = npusim.hash_tensor(npusim.ones(2, 3, device=device), 1, out=out)
    assert r is out and out.tolist() == [_bits(1.0)] * 2


def test_errors(device):
    with pytest.raises(RuntimeError, match="Unknown hash_tensor mode: 1"):
        npusim.hash_tensor(npusim.ones(2, device=device), mode=1)
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified for input.numel\\(\\) == 0"):
        npusim.hash_tensor(npusim.empty(0, device=device))
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        npusim.hash_tensor(npusim.empty(0, 3, device=device), 0)
    with pytest.raises(NotImplementedError, match="\"xor_sum_cpu\" not implemented for 'UInt32'"):
        npusim.hash_tensor(npusim.ones(2, dtype=npusim.uint32))


def test_no_gradient(device):
    x = npusim.ones(3, device=device, requires_grad=True)
    assert not npusim.hash_tensor(x).requires_grad


@pytest.mark.oracle
def test_matches_torch(torch):
    cases = [(lambda L: L.arange(12.0).reshape(3, 4) - 5.5, ()), (lambda L: L.arange(12).reshape(3, 4) - 5, (1,)),
             (lambda L: L.tensor([float("nan"), -0.0, float("inf")]), ()),
             (lambda L: L.tensor([0.1, -2.5], dtype=L.float16), ()), (lambda L: L.tensor([0.1, 3.0], dtype=L.bfloat16), ()),
             (lambda L: L.tensor([[True, False], [True, True]]), (0,)), (lambda L: L.arange(24.0).reshape(2, 3, 4), (0, 2))]
    for make, dim in cases:
        for keepdim in (False, True):
            want = torch.hash_tensor(make(torch), dim, keepdim=keepdim)
            got = npusim.hash_tensor(make(npusim), dim, keepdim=keepdim)
            assert got.tolist() == want.tolist() and tuple(got.shape) == tuple(want.shape)
    for lib in (torch, npusim):
        with pytest.raises(NotImplementedError, match="\"xor_sum_cpu\" not implemented for 'UInt16'"):
            lib.hash_tensor(lib.ones(2, dtype=lib.uint16))
