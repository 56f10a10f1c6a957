"""Defects of the npu's cuda mode, each held fixed on the CuPy stand-in (tests/cupy_standin).

These run when the npu is in cuda mode: in CI's second pass, with the stand-in first on PYTHONPATH,
and on a real GPU. In the emulation they skip.
"""
from __future__ import annotations

import numpy as np
import pytest

import npusim
from npusim.backend.runtime import runtime

from conftest import host

pytestmark = pytest.mark.skipif(not npusim.npu.is_available() or runtime.probe() != "cuda",
                                reason="the npu is not in cuda mode")


def test_philox_kernel_carries_into_the_second_counter_word():
    # the CUDA source itself runs (compiled for the host on the stand-in); counters near 2^64 wrap
    from npusim.kernels import random_cuda as cupy_philox
    for counter in (2 ** 64 - 3, 2 ** 64 - 1, 12345):
        bg = np.random.Philox(key=np.array([7, 0], dtype=np.uint64),
                              counter=np.array([counter, 0, 0, 0], dtype=np.uint64))
        assert np.array_equal(cupy_philox.philox_raw(7, counter, 24).get(), bg.random_raw(24))


@pytest.mark.parametrize("dtype", ["int64", "int8", "bool", "bfloat16", "float32"])
def test_scatter_add_works_for_dtypes_cupy_has_no_atomic_for(dtype):
    dt = getattr(npusim, dtype)
    idx = npusim.tensor([0, 0, 2, 4, 4, 4], device="npu")
    src = npusim.tensor([1, 2, 3, 1, 1, 1], device="npu").to(dt)
    got = npusim.zeros(5, dtype=dt, device="npu").scatter_add_(0, idx, src)
    want = npusim.zeros(5, dtype=dt).scatter_add_(0, idx.cpu(), src.cpu())
    assert np.array_equal(host(got), host(want))
    put = npusim.zeros(5, dtype=dt, device="npu").index_put_((idx,), src, accumulate=True)
    assert np.array_equal(host(put), host(want))


def test_int8_scatter_add_wraps_as_the_dtype():
    idx = npusim.tensor([1] * 3, device="npu")
    got = npusim.full((2,), 100, dtype=npusim.int8, device="npu").scatter_add_(
        0, idx, npusim.full((3,), 100, dtype=npusim.int8, device="npu"))
    assert host(got).tolist() == [100, 400 - 512]     # 100 + 3 * 100 = 400, i.e. -112 mod 2^8


def test_writes_into_expanded_tensors_are_refused():
    x = npusim.zeros(1, device="npu").expand(3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        npusim.add(npusim.ones(3, device="npu"), 1, out=x)


def test_cpu_copy_keeps_a_transposed_layout():
    x = npusim.rand(3, 4, device="npu")
    assert x.t().cpu().stride() == (1, 4)
    y = npusim.rand(2, 3, 4, device="npu").permute(2, 0, 1)
    assert y.cpu().stride() == (1, 12, 4)        # torch's .cpu() keeps a dense permuted layout
    assert np.array_equal(host(y), host(y.contiguous()))


@pytest.mark.skipif(npusim.npu.device_count() < 2, reason="needs two npu devices")
def test_copies_to_a_second_device_land_there():
    a = npusim.tensor([0., .5, 1.], device="npu:1")
    assert a._a.device.id == 1 and host(a).tolist() == [0., .5, 1.]
    b = npusim.arange(6., device="npu:0").view(2, 3).t().to("npu:1")
    assert b._a.device.id == 1 and b.device.index == 1
    assert np.array_equal(host(b), np.arange(6.).reshape(2, 3).T)
    c = b.to("npu:0")
    assert c._a.device.id == 0 and np.array_equal(host(c), host(b))


def test_number_first_operands_stay_on_the_device():
    t = npusim.tensor([2, 3], device="npu")
    assert host(npusim.remainder(5, t)).tolist() == [1, 2]
    assert host(7 // t).tolist() == [3, 2]
    assert host(npusim.pow(2, npusim.tensor([1, 2, -1], device="npu"))).tolist() == [2, 4, 0]


def test_bfloat16_with_a_number():
    r = npusim.ones(3, dtype=npusim.bfloat16, device="npu") + 1.5
    assert r.dtype is npusim.bfloat16 and host(r).tolist() == [2.5] * 3
