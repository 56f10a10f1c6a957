"""``pin_memory=True`` pins: factories return page-locked cpu tensors, and a DataLoader made with it hands out
batches whose tensors are pinned (npusim's npu is always an available accelerator), as torch's do."""
import collections
import warnings

import pytest

import npusim
from npusim.utils.data import DataLoader, Dataset, TensorDataset
from npusim.utils.data.pin_memory import pin_memory

Pair = collections.namedtuple("Pair", "x y")


@pytest.mark.parametrize("make", [
    lambda: npusim.empty(3, pin_memory=True), lambda: npusim.zeros(2, 2, pin_memory=True),
    lambda: npusim.ones(size=(2,), pin_memory=True), lambda: npusim.full((2,), 7.0, pin_memory=True),
    lambda: npusim.arange(4, pin_memory=True), lambda: npusim.linspace(0, 1, 5, pin_memory=True),
    lambda: npusim.eye(3, pin_memory=True), lambda: npusim.tensor([1.0, 2.0], pin_memory=True),
    lambda: npusim.rand(3, pin_memory=True), lambda: npusim.randn(3, pin_memory=True),
    lambda: npusim.randint(0, 5, (3,), pin_memory=True), lambda: npusim.randperm(4, pin_memory=True),
    lambda: npusim.empty_strided((2, 2), (1, 2), pin_memory=True),
], ids=["empty", "zeros", "ones", "full", "arange", "linspace", "eye", "tensor", "rand", "randn", "randint",
        "randperm", "empty_strided"])
def test_factories_with_pin_memory_return_pinned_cpu_tensors(make):
    t = make()
    assert t.is_pinned() and t.device.type == "cpu"
    assert not npusim.empty(1).is_pinned()


def test_pinned_factory_values_and_gradients_are_the_unpinned_ones():
    t = npusim.full((2, 3), 2.5, pin_memory=True, requires_grad=True)
    assert t.is_pinned() and t.is_leaf and t.requires_grad
    (t * t).sum().backward()
    assert t.grad.tolist() == [[5.0] * 3] * 2
    npusim.manual_seed(3)
    a = npusim.randn(5, pin_memory=True)
    npusim.manual_seed(3)
    assert npusim.equal(a, npusim.randn(5))


def test_pinning_a_device_factory_is_refused():
    with pytest.raises(RuntimeError, match="Only dense CPU tensors can be pinned"):
        npusim.ones(2, device="npu", pin_memory=True)
    with pytest.raises(RuntimeError, match="Only dense CPU tensors can be pinned"):
        npusim.tensor([1.0], device="npu", pin_memory=True)


def test_pin_memory_walks_nested_batches_and_keeps_their_types():
    x, y = npusim.ones(2), npusim.zeros(2)
    out = pin_memory({"a": [x, (y, "label")], "p": Pair(x, 3), "s": b"raw"})
    assert out["a"][0].is_pinned() and out["a"][1][0].is_pinned() and out["a"][1][1] == "label"
    assert type(out["p"]) is Pair and out["p"].x.is_pinned() and out["p"].y == 3
    assert out["s"] == b"raw" and not x.is_pinned()
    ordered = pin_memory(collections.OrderedDict(b=x, a=y))
    assert type(ordered) is collections.OrderedDict and list(ordered) == ["b", "a"]


class _Dicts(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        return {"x": npusim.full((2,), float(i)), "i": i}


@pytest.mark.parametrize("workers", [0, 2])
def test_dataloader_pins_its_batches(workers):
    loader = DataLoader(TensorDataset(npusim.arange(8.0), npusim.arange(8)), batch_size=4, pin_memory=True,
                        num_workers=workers)
    batches = list(loader)
    assert [b[0].tolist() for b in batches] == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]
    assert all(t.is_pinned() for b in batches for t in b)
    batch = next(iter(DataLoader(_Dicts(), batch_size=3, pin_memory=True, num_workers=workers)))
    assert batch["x"].is_pinned() and batch["i"].is_pinned() and batch["i"].tolist() == [0, 1, 2]
    assert not any(t.is_pinned() for t in next(iter(DataLoader(TensorDataset(npusim.ones(4)), batch_size=2))))


def test_pinned_batches_count_in_host_memory_stats():
    stats = npusim.npu.host_memory_stats
    before = stats()["num_host_alloc"]
    list(DataLoader(TensorDataset(npusim.ones(4, 8)), batch_size=2, pin_memory=True))
    assert stats()["num_host_alloc"] - before == 2


def test_pin_memory_device_is_deprecated():
    loader = DataLoader(TensorDataset(npusim.ones(2)), batch_size=1, pin_memory=True, pin_memory_device="npu")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert next(iter(loader))[0].is_pinned()
    assert any("pin_memory_device is deprecated" in str(w.message) for w in caught)
