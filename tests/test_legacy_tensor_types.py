"""torch's legacy tensor types: npusim.FloatTensor & co. and npusim.npu.FloatTensor & co."""
import pickle

import numpy as np
import pytest

import npusim

TYPES = ["BoolTensor", "ByteTensor", "CharTensor", "ShortTensor", "IntTensor", "LongTensor", "HalfTensor",
         "BFloat16Tensor", "FloatTensor", "DoubleTensor"]


def _types_for(device):
    return npusim if device == "cpu" else npusim.npu


@pytest.mark.parametrize("name", TYPES)
def test_sizes_give_an_uninitialised_tensor_of_the_type(device, name):
    cls = getattr(_types_for(device), name)
    t = cls(2, 3)
    assert t.shape == (2, 3) and t.dtype is cls.dtype and t.device.type == device
    assert isinstance(t, cls) and t.type() == f"npusim.{'' if device == 'cpu' else 'npu.'}{name}"
    assert cls().shape == (0,) and cls(npusim.Size([4])).shape == (4,)


def test_sequences_give_their_values(device):
    types = _types_for(device)
    assert types.FloatTensor([1, 2]).tolist() == [1.0, 2.0]
    assert types.FloatTensor((2, 3)).tolist() == [2.0, 3.0]            # a tuple is data, not sizes
    assert types.LongTensor([1.7, -2.5]).tolist() == [1, -2]
    assert types.BoolTensor([1, 0]).tolist() == [True, False]
    assert types.DoubleTensor(np.array([1, 2])).dtype is npusim.float64


def test_isinstance_checks_dtype_and_device(device):
    types, other = _types_for(device), (npusim.npu if device == "cpu" else npusim)
    x = npusim.randn(2, device=device)
    assert isinstance(x, types.FloatTensor) and isinstance(x, npusim.Tensor)
    assert not isinstance(x, types.DoubleTensor) and not isinstance(x, other.FloatTensor)
    assert not isinstance(2.0, types.FloatTensor)


def test_a_tensor_of_the_type_gives_a_view_and_another_type_is_refused(device):
    types = _types_for(device)
    x = npusim.randn(3, device=device, requires_grad=True)
    y = types.FloatTensor(x)
    assert y._base is x and y.requires_grad and y.data_ptr() == x.data_ptr()
    with pytest.raises(TypeError, match=r"expected npusim\.(npu\.)?FloatTensor \(got npusim\.(npu\.)?LongTensor\)"):
        types.FloatTensor(npusim.tensor([1], device=device))
    with pytest.raises(TypeError, match=r"data must be a sequence \(got float\)"):
        types.FloatTensor(2.5)


def test_a_device_of_another_type_is_refused_and_type_moves_tensors():
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: cpu but device type: npu"):
        npusim.FloatTensor(2, device="npu")
    assert npusim.npu.FloatTensor(2, device="npu:0").device == npusim.device("npu:0")
    x = npusim.ones(2)
    assert x.type(npusim.DoubleTensor).dtype is npusim.float64
    moved = x.type(npusim.npu.HalfTensor)
    assert moved.device.type == "npu" and moved.dtype is npusim.float16
    with pytest.raises(ValueError, match="invalid type: 'float'"):
        x.type(float)


def test_types_pickle_by_reference():
    for cls in (npusim.FloatTensor, npusim.npu.LongTensor):
        assert pickle.loads(pickle.dumps(cls)) is cls
    assert repr(npusim.npu.FloatTensor) == "<class 'npusim.npu.FloatTensor'>"


@pytest.mark.oracle
def test_the_same_calls_as_torch(torch):
    for name in TYPES:
        ours, theirs = getattr(npusim, name), getattr(torch, name)
        assert ours.dtype.name == str(theirs.dtype).split(".")[1]
        assert ours([1, 0, 2]).tolist() == theirs([1, 0, 2]).tolist()
        assert ours(2, 3).shape == theirs(2, 3).shape
    assert isinstance(npusim.randn(2), npusim.FloatTensor) == isinstance(torch.randn(2), torch.FloatTensor)
