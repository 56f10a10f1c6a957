"""Empty tensors and numbers at the edge of int64, handled as torch 2.13 handles them.

Each expected value below was read from torch 2.13 (CPU); the tests need no torch. ``..._match_torch`` compares
with torch at runtime (``oracle``).
"""
from __future__ import annotations

import pytest

import npusim
from conftest import checked_on_device, host, reported_later
from npusim.kernels import device_checks


def _like(t, shape, dtype, values):
    assert tuple(t.shape) == shape and t.dtype is dtype, (tuple(t.shape), t.dtype)
    assert host(t).tolist() == values


# --- random draws and factories of empty tensors ------------------------------------------------------------

def test_bernoulli_of_an_empty_integer_tensor_is_empty(device):
    # torch checks bernoulli's floating dtype only when there is an element to draw
    _like(npusim.bernoulli(npusim.ones(0, dtype=npusim.int64, device=device)), (0,), npusim.int64, [])
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        npusim.bernoulli(npusim.ones(2, dtype=npusim.int64, device=device))


def test_linspace_of_bool_with_at_most_one_step(device):
    # torch fills one step with start and none with nothing; its kernel (from two steps on) has no bool
    _like(npusim.linspace(0, 1, 1, dtype=npusim.bool, device=device), (1,), npusim.bool, [False])
    _like(npusim.linspace(3, 1, 1, dtype=npusim.bool, device=device), (1,), npusim.bool, [True])
    _like(npusim.linspace(0, 1, 0, dtype=npusim.bool, device=device), (0,), npusim.bool, [])
    with pytest.raises(NotImplementedError, match="'Bool'"):
        npusim.linspace(0, 1, 2, dtype=npusim.bool, device=device)


def test_linspace_past_the_dtype_with_at_most_one_step(device):
    _like(npusim.linspace(2 ** 63, 1, 1, dtype=npusim.float16, device=device), (1,), npusim.float16,
          [float("inf")])
    _like(npusim.linspace(2 ** 63, 1, 0, dtype=npusim.int64, device=device), (0,), npusim.int64, [])
    _like(npusim.linspace(-1, 1, 1, dtype=npusim.uint8, device=device), (1,), npusim.uint8, [255])
    with pytest.raises(RuntimeError, match="c10::Half without overflow"):
        npusim.linspace(2 ** 63, 1, 3, dtype=npusim.float16, device=device)
    with pytest.raises(RuntimeError, match="int64_t without overflow"):
        npusim.linspace(2 ** 63, 1, 1, dtype=npusim.int64, device=device)


def test_a_single_16_bit_float_element_takes_an_overflowing_fill_as_inf(device):
    # torch's one-element fill converts without the range check; a fill of more elements checks
    inf = float("inf")
    _like(npusim.zeros(1, dtype=npusim.float16, device=device).fill_(70000), (1,), npusim.float16, [inf])
    _like(npusim.full((1, 1), 1e39, dtype=npusim.bfloat16, device=device).float(), (1, 1), npusim.float32, [[inf]])
    _like(npusim.full_like(npusim.zeros(1, dtype=npusim.float16, device=device), 1e5), (1,), npusim.float16, [inf])
    for n in (0, 2):
        with pytest.raises(RuntimeError, match="c10::Half without overflow"):
            npusim.zeros(n, dtype=npusim.float16, device=device).fill_(70000)
    with pytest.raises(RuntimeError, match="type float without overflow"):
        npusim.zeros(1, device=device).fill_(1e39)


def test_fill_with_a_tensor_casts_as_copy_does(device):
    # torch copies a same-device 0-d value: a plain cast, no range check
    t = npusim.zeros(3, dtype=npusim.int32, device=device)
    _like(t.fill_(npusim.tensor(2 ** 40, device=device)), (3,), npusim.int32, [0, 0, 0])
    assert t._version == 1
    _like(npusim.zeros(2, dtype=npusim.float16, device=device).fill_(npusim.tensor(1e5, device=device)), (2,),
          npusim.float16, [float("inf")] * 2)
    a = npusim.arange(3., device=device)
    _like(a.fill_(a[2]), (3,), npusim.float32, [2.0, 2.0, 2.0])


# --- Python numbers past int64 --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,expected", [("uint8", [0, 0]), ("int64", [-2 ** 63] * 2), ("int32", [0, 0]),
                                            ("bool", [True, True]), ("float32", [2.0 ** 63] * 2),
                                            ("float16", [float("inf")] * 2)])
def test_copy_of_two_to_the_63(device, dtype, expected):
    # torch's tensor of 2**63 is uint64: integer targets keep its low bits, floating ones its value
    dt = getattr(npusim, dtype)
    t = npusim.zeros(2, dtype=dt, device=device)
    _like(t.copy_(2 ** 63), (2,), dt, expected)
    assert t._version == 1


def test_copy_of_numbers_casts_without_a_range_check(device):
    _like(npusim.zeros(2, dtype=npusim.uint8, device=device).copy_(2 ** 64 - 1), (2,), npusim.uint8, [255, 255])
    _like(npusim.zeros(2, dtype=npusim.uint8, device=device).copy_(300), (2,), npusim.uint8, [44, 44])
    _like(npusim.zeros(2, device=device).copy_(1e39), (2,), npusim.float32, [float("inf")] * 2)
    with pytest.raises(OverflowError):
        npusim.zeros(2, dtype=npusim.uint8, device=device).copy_(2 ** 64)


# --- reductions and scans over no elements --------------------------------------------------------------------

@pytest.mark.parametrize("name", ["median", "nanmedian"])
@pytest.mark.parametrize("dtype,expected", [("int64", -2 ** 63), ("int32", -2 ** 31), ("int16", 0), ("uint8", 0),
                                            ("bool", True)])
def test_median_of_an_empty_integer_tensor(device, name, dtype, expected):
    # torch fills NaN cast to the dtype as C casts it on x86-64 (the lowest int32 / int64; 0 below 32 bits)
    dt = getattr(npusim, dtype)
    _like(getattr(npusim.ones(0, dtype=dt, device=device), name)(), (), dt, expected)


def test_median_of_bool_still_refused_with_elements(device):
    with pytest.raises(NotImplementedError, match="'Bool'"):
        npusim.ones(1, dtype=npusim.bool, device=device).median()


@pytest.mark.parametrize("op", [lambda a, b: npusim.fmod(a, b), lambda a, b: npusim.remainder(a, b),
                                lambda a, b: npusim.floor_divide(a, b),
                                lambda a, b: npusim.div(a, b, rounding_mode="trunc")],
                         ids=["fmod", "remainder", "floor_divide", "div-trunc"])
def test_integer_division_by_zero_with_no_element_is_empty(device, op):
    # torch's check runs per element divided: an empty result divides nothing
    empty = npusim.ones(0, 1, dtype=npusim.int64, device=device)
    _like(op(empty, 0), (0, 1), npusim.int64, [])
    _like(op(empty, npusim.zeros(3, dtype=npusim.int64, device=device)), (0, 3), npusim.int64, [])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        op(npusim.ones(2, dtype=npusim.int64, device=device), 0)


def test_repeat_of_an_empty_dim_takes_a_negative_count(device):
    # torch refuses only a negative size of the result: -1 times an empty dim is 0
    _like(npusim.ones(0, device=device).repeat(-1), (0,), npusim.float32, [])
    _like(npusim.ones(0, 3, device=device).repeat(-2, 2), (0, 6), npusim.float32, [])
    _like(npusim.ones(0, device=device).repeat(2, -1), (2, 0), npusim.float32, [[], []])
    with pytest.raises(RuntimeError, match=r"negative dimension -2: \[-2\]"):
        npusim.ones(2, device=device).repeat(-1)
    with pytest.raises(RuntimeError, match=r"negative dimension -1: \[-1, 0\]"):
        npusim.ones(0, device=device).repeat(-1, 2)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_and_cummin_of_an_empty_tensor_take_any_dim(device, name):
    # torch wraps the dim only when there is an element to scan; a 0-d tensor takes -1 or 0
    for shape, dim in (((0,), 1), ((2, 0), 1), ((2, 0), 100), ((2, 0), -3)):
        values, indices = getattr(npusim.ones(*shape, device=device), name)(dim)
        _like(values, shape, npusim.float32, npusim.ones(*shape).tolist())
        _like(indices, shape, npusim.int64, npusim.ones(*shape).tolist())
    with pytest.raises(IndexError, match=f"{name}\\(\\): Expected reduction dim -1 or 0 for scalar but got 1"):
        getattr(npusim.tensor(1., device=device), name)(1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        getattr(npusim.ones(2, device=device), name)(1)



def test_aminmax_over_an_empty_dim_is_an_index_error(device):
    for shape, dim in (((0, 3), 0), ((0, 0), 0), ((2, 0), -1)):
        with pytest.raises(IndexError, match="aminmax: Expected reduction dim . to have non-zero size"):
            npusim.ones(*shape, device=device).aminmax(dim=dim)
    lo, hi = npusim.ones(2, 0, device=device).aminmax(dim=0)
    _like(lo, (0,), npusim.float32, [])
    with pytest.raises(RuntimeError, match="no identity"):
        npusim.ones(2, 0, device=device).aminmax()

# --- index_copy_ and index_select ---------------------------------------------------------------------------

def test_index_copy_into_a_0d_tensor(device):
    t = npusim.tensor(1., device=device)
    before = t._version
    _like(t.index_copy_(0, npusim.tensor([0], device=device), npusim.tensor([5.], device=device)), (), npusim.float32,
          5.0)
    assert t._version == before + 1
    _like(t.index_copy(-1, npusim.tensor(0, device=device), npusim.tensor(7., device=device)), (), npusim.float32,
          7.0)
    _like(t.index_copy(0, npusim.tensor([0, 0], device=device), npusim.tensor([5., 6.], device=device)), (),
          npusim.float32, 6.0)
    if checked_on_device(device):   # the cuda path asserts on the device and reports later, as torch's
        with reported_later(device_checks.INDEX_COPY):
            t.index_copy(0, npusim.tensor([1], device=device), npusim.tensor(2., device=device))
        return
    with pytest.raises(IndexError, match="index 1 is out of bounds for dimension 0 with size 1"):
        t.index_copy_(0, npusim.tensor([1], device=device), npusim.tensor(2., device=device))
    assert host(t).tolist() == 5.0


@pytest.mark.parametrize("call,error,message", [
    (lambda L, d: L.zeros(2, 2, 2, device=d).index_copy_(-2, L.tensor([1], device=d), L.tensor(3., device=d)),
     RuntimeError, "same slice shapes. Destination slice shape: 2 2 at dimension 1 and source slice shape:  at"),
    (lambda L, d: L.zeros(3, device=d).index_copy_(0, L.tensor([0], dtype=L.int32, device=d), L.ones(1, device=d)),
     RuntimeError, "Expected a long tensor for index, but got Int"),
    (lambda L, d: L.zeros(3, 2, device=d).index_copy_(1, L.tensor([-1], device=d), L.ones(3, 1, device=d)),
     IndexError, "index -1 is out of bounds for dimension 1 with size 2"),
    (lambda L, d: L.zeros(3, device=d).index_copy_(0, L.tensor([0, 1], device=d), L.tensor(1., device=d)),
     IndexError, "When source is scalar, index should have one element"),
    (lambda L, d: L.zeros(3, device=d).index_copy_(0, L.tensor([[0]], device=d), L.ones(1, 1, device=d)),
     IndexError, r"Index should have dimension 1 or 0 \(got 2\)"),
], ids=["0d-source-into-3d", "int32-index", "negative-index", "scalar-source-two-indices", "2d-index"])
def test_index_copy_refuses_as_torch(device, call, error, message):
    if error is IndexError and "out of bounds" in message and checked_on_device(device):
        with reported_later(device_checks.INDEX_COPY):   # the cuda path asserts on the device, as torch's
            call(npusim, device)
        return
    with pytest.raises(error, match=message):
        call(npusim, device)


def test_index_copy_out_of_bounds_writes_nothing(device):
    if checked_on_device(device):
        pytest.skip("the cuda path asserts on the device and reports later")
    t = npusim.zeros(3, 2, device=device)
    with pytest.raises(IndexError, match="index 5 is out of bounds"):
        t.index_copy_(0, npusim.tensor([0, 5], device=device), npusim.ones(2, 2, device=device))
    assert host(t).tolist() == [[0.0, 0.0]] * 3 and t._version == 0


@pytest.mark.parametrize("shape,dim,error", [((2, 3), 1, RuntimeError), ((2, 2, 2), 1, RuntimeError),
                                             ((2, 0), 0, RuntimeError), ((2, 3), 0, IndexError),
                                             ((2, 2, 2), 2, IndexError), ((3,), 0, IndexError)])
def test_index_select_out_of_range_error_class(device, shape, dim, error):
    # torch's CPU kernel for dim 1 of a tensor of two or more dims (and its check of an empty one) raises
    # RuntimeError; its other paths IndexError
    t = npusim.ones(*shape, device=device)
    if checked_on_device(device):
        with reported_later(device_checks.INDEX_SELECT):
            npusim.index_select(t, dim, npusim.tensor([3], device=device))
        return
    message = f"id=3 axis_dim={shape[dim]}" if error is RuntimeError else "index out of range in self"
    with pytest.raises(error, match=message):
        npusim.index_select(t, dim, npusim.tensor([3], device=device))


@pytest.mark.parametrize("dtype,message", [("int64", "int64_t"), ("int32", "int64_t"), ("uint8", "int64_t"),
                                           ("bool", "int64_t"), ("float16", "c10::Half")])
def test_pow_of_two_to_the_63_is_an_overflow_error(device, dtype, message):
    # torch reads an integral base's exponent as an int64 first, and converts it to a 16-bit float base's dtype
    t = npusim.ones(2, dtype=getattr(npusim, dtype), device=device)
    with pytest.raises(RuntimeError, match=f"type {message} without overflow"):
        npusim.pow(t, 2 ** 63)
    with pytest.raises(RuntimeError, match=f"type {message} without overflow"):
        t.pow_(2 ** 63)
    assert host(t).tolist() == host(npusim.ones(2, dtype=t.dtype)).tolist() and t._version == 0
    _like(npusim.pow(npusim.ones(2, device=device), 2 ** 63), (2,), npusim.float32, [1.0, 1.0])


def test_pow_exponent_past_the_base_dtype(device):
    with pytest.raises(RuntimeError, match="type int without overflow"):
        npusim.pow(npusim.ones(2, dtype=npusim.int32, device=device), 2 ** 40)
    with pytest.raises(RuntimeError, match="type uint8_t without overflow"):
        npusim.pow(npusim.ones(2, dtype=npusim.uint8, device=device), 300)
    _like(npusim.pow(npusim.ones(2, dtype=npusim.int64, device=device), 2 ** 62), (2,), npusim.int64, [1, 1])


@pytest.mark.parametrize("op", ["add", "mul", "floor_divide", "remainder", "eq", "bitwise_and", "true_divide"])
def test_a_bool_tensor_with_an_int_past_int64_is_a_promotion_error(device, op):
    # torch's tensor of 2**63 is uint64, which promotes with no other dtype
    t = npusim.ones(2, dtype=npusim.bool, device=device)
    with pytest.raises(RuntimeError, match="attempted to promote Bool and UInt64"):
        getattr(npusim, op)(t, 2 ** 63)
    _like(npusim.floor_divide(npusim.ones(2, dtype=npusim.int64, device=device), 2 ** 63), (2,), npusim.int64,
          [-1, -1])


def test_xlogy_rounds_a_number_to_a_16_bit_tensor_first(device):
    inf = float("inf")
    _like(npusim.xlogy(npusim.ones(2, dtype=npusim.float16, device=device), 2 ** 63), (2,), npusim.float16, [inf] * 2)


# --- size by keyword --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["randn", "rand", "zeros", "ones", "empty"])
def test_size_by_keyword(device, name):
    f = getattr(npusim, name)
    assert tuple(f(size=(2, 3), device=device).shape) == (2, 3)
    assert tuple(f(size=[4], device=device).shape) == (4,)
    assert tuple(f(size=npusim.Size([]), device=device).shape) == ()
    assert f(size=(2,), dtype=npusim.float64, device=device).dtype is npusim.float64
    for bad in (2, None):
        with pytest.raises(TypeError, match="argument 'size' must be tuple of ints"):
            f(size=bad, device=device)
    with pytest.raises(TypeError):
        f(2, size=(3,), device=device)
    with pytest.raises(TypeError):
        f(device=device)


def test_randint_size_by_keyword(device):
    assert tuple(npusim.randint(3, size=(2,), device=device).shape) == (2,)
    assert tuple(npusim.randint(high=3, size=(2, 2), device=device).shape) == (2, 2)
    r = npusim.randint(low=1, high=3, size=(50,), device=device)
    assert 1 <= int(r.min()) and int(r.max()) < 3
    with pytest.raises(TypeError):
        npusim.randint(size=(2,), device=device)
    with pytest.raises(TypeError):   # a high given as None is no high
        npusim.randint(3, None, (2,), device=device)


# --- which of two bad index items is reported ------------------------------------------------------------------

@pytest.mark.parametrize("shape,index,error,message", [
    ((1, 4), (None, -4, [0, [1]]), IndexError, "index -4 is out of bounds for dimension 1 with size 1"),
    ((2, 2, 2), (2, slice(None, None, -1), [0, [1]]), IndexError, "index 2 is out of bounds for dimension 0"),
    ((2, 1, 3), (slice(None, None, 0), slice(1.5, None)), ValueError, "slice step cannot be zero"),
    ((3, 1), (2 ** 70, slice(1.5, None)), ValueError, "Overflow when unpacking long long"),
    ((2, 1, 3), (slice(None, None, -1), [0, [1]]), ValueError, "step must be greater than zero"),
    ((), slice(None, None, -1), ValueError, "step must be greater than zero"),
], ids=["int-before-ragged-list", "int-before-bad-step", "zero-step-before-float-slice",
        "overflow-before-float-slice", "negative-step-before-ragged-list", "0d-negative-step"])
def test_the_first_bad_index_item_is_reported(device, shape, index, error, message):
    # torch reads and applies the items one by one, in order
    t = npusim.zeros(shape, device=device)
    with pytest.raises(error, match=message):
        t[index]
    with pytest.raises(error, match=message):
        t[index] = 1.0
    assert not host(t).any()


def test_roll_of_an_empty_tensor_takes_any_dim(device):
    # torch copies an empty tensor before it looks at the dims (their number must still match the shifts)
    _like(npusim.ones(0, device=device).roll(3, -3), (0,), npusim.float32, [])
    _like(npusim.ones(2, 0, device=device).roll((1, 2), (5, 6)), (2, 0), npusim.float32, [[], []])
    with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
        npusim.ones(2, 0, device=device).roll((1, 2), (5,))
    with pytest.raises(IndexError, match="Dimension out of range"):
        npusim.ones(3, device=device).roll(3, 5)


def test_index_copy_into_an_empty_tensor(device):
    # torch restrides self to the index's length along dim: past the empty storage it is a RuntimeError; with no
    # element to write, nothing (not even the index) is checked, and the call still counts as a write
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 0"):
        npusim.zeros(0, device=device).index_copy_(0, npusim.tensor([4], device=device),
                                                   npusim.tensor(1., device=device))
    t = npusim.zeros(0, 2, device=device)
    _like(t.index_copy_(1, npusim.tensor([5], device=device), npusim.ones(0, 1, device=device)), (0, 2),
          npusim.float32, [])
    assert t._version == 1
