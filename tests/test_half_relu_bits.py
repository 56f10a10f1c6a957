"""relu on float16 (maximum with +0) runs on the int16 bits: NumPy's float16 loop's result for every bit pattern
(-0 stays -0, NaNs keep their payloads), in place, transposed, split over two threads, and through npusim.relu."""
import numpy as np
import pytest

import npusim
from npusim.kernels import half_ufuncs as HU
from npusim.kernels import parallel as P

ALL = np.arange(65536, dtype=np.uint16).view(np.float16)


def _want(x):
    with np.errstate(all="ignore"):
        return np.maximum(x, np.float16(0))


def test_every_float16_bit_pattern():
    got = HU.binary(np.maximum, ALL, np.float16(0))
    assert np.array_equal(got.view(np.uint16), _want(ALL).view(np.uint16))
    inplace = ALL.copy()
    assert HU.binary(np.maximum, inplace, np.float16(0), out=inplace) is inplace
    assert np.array_equal(inplace.view(np.uint16), _want(ALL).view(np.uint16))


def test_transposed_keeps_its_layout_and_other_cases_decline():
    t = ALL.reshape(256, 256).T
    got = HU.binary(np.maximum, t, np.float16(0))
    assert got.flags.f_contiguous and np.array_equal(got.view(np.uint16), _want(t).view(np.uint16))
    assert HU._max_with_zero(ALL, np.float16(-0.0), None) is None          # -0: NumPy's loop decides
    assert HU._max_with_zero(ALL[::2], np.float16(0), None) is None        # strided
    assert HU._max_with_zero(ALL, np.float16(0), ALL[1:].copy()) is None   # out of another shape


@pytest.mark.parametrize("threads", [1, 2])
def test_relu_through_the_split_and_the_op(threads, device):
    before = npusim.get_num_threads()
    npusim.set_num_threads(threads)
    try:
        x = np.tile(ALL, 5)
        assert np.array_equal(P.binary(np.maximum, x, np.float16(0)).view(np.uint16), _want(x).view(np.uint16))
        t = npusim.tensor(x.view(np.int16), device=device).view(npusim.float16)
        got = npusim.relu(t).cpu().view(npusim.int16).numpy()
        assert np.array_equal(got.view(np.uint16), _want(x).view(np.uint16))
        npusim.relu_(t)
        assert np.array_equal(t.cpu().view(npusim.int16).numpy().view(np.uint16), _want(x).view(np.uint16))
    finally:
        npusim.set_num_threads(before)
