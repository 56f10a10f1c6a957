"""npusim.utils.data: datasets, random_split, samplers, default_collate, DataLoader (also with worker processes)."""
from __future__ import annotations

import collections
import math
import os
import warnings

import numpy as np
import pytest

import npusim
from npusim.utils.data import (
    BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset, IterableDataset, RandomSampler, Sampler,
    SequentialSampler, StackDataset, Subset, SubsetRandomSampler, TensorDataset, WeightedRandomSampler,
    default_collate, default_convert, get_worker_info, random_split,
)
from conftest import host

Point = collections.namedtuple("Point", ["x", "y"])


class Squares(Dataset):
    """Map-style: sample i is (i, i*i) as cpu tensors."""

    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return npusim.tensor([float(i)]), i * i

    def __len__(self):
        return self.n


class Counting(IterableDataset):
    """Iterable: 0..n-1, split between workers by worker id."""

    def __init__(self, n, report_len=None):
        self.n = n
        self.report_len = report_len

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))

    def __len__(self):
        return self.n if self.report_len is None else self.report_len


class WorkerReport(Dataset):
    """Sample i describes the process that loaded it."""

    def __getitem__(self, i):
        info = get_worker_info()
        from threadpoolctl import threadpool_info
        threads = max([lib["num_threads"] for lib in threadpool_info()] or [1])
        return {"index": i, "worker": -1 if info is None else info.id, "pid": os.getpid(),
                "seed": -1 if info is None else info.seed % 1000, "threads": threads,
                "rand": npusim.rand(1).item(), "init": os.environ.get("NPUSIM_TEST_WORKER_INIT", "")}

    def __len__(self):
        return 8


class Failing(Dataset):
    def __getitem__(self, i):
        if i == 3:
            raise ValueError("sample 3 is broken")
        return i

    def __len__(self):
        return 6


def mark_worker(worker_id):
    os.environ["NPUSIM_TEST_WORKER_INIT"] = f"init-{worker_id}"


# --- datasets ----------------------------------------------------------------------------------------------

def test_tensor_dataset(device):
    x = npusim.arange(12.0, device=device).reshape(4, 3)
    y = npusim.tensor([0, 1, 0, 1], device=device)
    ds = TensorDataset(x, y)
    assert len(ds) == 4
    xi, yi = ds[2]
    assert host(xi).tolist() == [6.0, 7.0, 8.0] and yi.item() == 0 and xi.device.type == device
    xs, ys = ds[1:3]
    assert xs.shape == (2, 3) and host(ys).tolist() == [1, 0]


def test_tensor_dataset_size_mismatch():
    with pytest.raises(AssertionError, match="^Size mismatch between tensors$"):
        TensorDataset(npusim.zeros(3, 2), npusim.zeros(4))


@pytest.mark.oracle
def test_tensor_dataset_size_mismatch_matches_torch(torch):
    with pytest.raises(AssertionError, match="^Size mismatch between tensors$"):
        torch.utils.data.TensorDataset(torch.zeros(3, 2), torch.zeros(4))


def test_subset_concat_and_add():
    base = Squares(5)
    sub = Subset(base, [4, 0, 2])
    assert len(sub) == 3 and sub[0][1] == 16 and [s[1] for s in sub.__getitems__([1, 2])] == [0, 4]
    cat = base + Squares(3)
    assert isinstance(cat, ConcatDataset) and len(cat) == 8 and cat.cumulative_sizes == [5, 8]
    assert cat[5][1] == 0 and cat[7][1] == 4 and cat[-1][1] == 4 and cat[-8][1] == 0
    with pytest.raises(ValueError, match="^absolute value of index should not exceed dataset length$"):
        cat[-9]


def test_concat_dataset_errors():
    with pytest.raises(AssertionError, match="^datasets should not be an empty iterable$"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="^ConcatDataset does not support IterableDataset$"):
        ConcatDataset([Counting(3)])


def test_chain_and_stack_datasets():
    chain = Counting(2) + Counting(3)
    assert isinstance(chain, ChainDataset) and list(chain) == [0, 1, 0, 1, 2] and len(chain) == 5
    stacked = StackDataset(a=Squares(3), b=[10, 11, 12])
    assert len(stacked) == 3 and stacked[1]["b"] == 11
    with pytest.raises(ValueError, match="^Size mismatch between datasets$"):
        StackDataset(Squares(3), [1])
    with pytest.raises(NotImplementedError, match="Subclasses of Dataset should implement __getitem__."):
        Dataset()[0]


def test_random_split_lengths_are_disjoint_and_cover():
    parts = random_split(range(10), [3, 7], generator=npusim.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))


def test_random_split_is_deterministic_for_a_seed():
    def split(seed):
        return [p.indices for p in random_split(range(20), [5, 15], generator=npusim.Generator().manual_seed(seed))]
    assert split(3) == split(3)
    assert split(3) != split(4)
    npusim.manual_seed(11)
    first = [p.indices for p in random_split(range(20), [0.5, 0.5])]
    npusim.manual_seed(11)
    assert [p.indices for p in random_split(range(20), [0.5, 0.5])] == first


@pytest.mark.parametrize("n,fractions", [(10, [0.33, 0.33, 0.34]), (7, [0.5, 0.5]), (11, [0.1, 0.2, 0.7]),
                                         (5, [0.25, 0.25, 0.25, 0.25])])
def test_random_split_fractions_deal_the_remainder_round_robin(n, fractions):
    lengths = [math.floor(n * f) for f in fractions]
    for i in range(n - sum(lengths)):
        lengths[i % len(lengths)] += 1
    parts = random_split(range(n), fractions, generator=npusim.Generator().manual_seed(0))
    assert [len(p) for p in parts] == lengths


@pytest.mark.oracle
@pytest.mark.parametrize("n,fractions", [(10, [0.33, 0.33, 0.34]), (7, [0.5, 0.5]), (3, [0.1, 0.9]),
                                         (11, [0.1, 0.2, 0.7])])
def test_random_split_fraction_lengths_match_torch(torch, n, fractions):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = [len(p) for p in random_split(range(n), fractions)]
        theirs = [len(p) for p in torch.utils.data.random_split(range(n), fractions)]
    assert ours == theirs


def test_random_split_errors_and_warning():
    with pytest.raises(ValueError, match="^Sum of input lengths does not equal the length of the input dataset!$"):
        random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match="^Fraction at index 1 is not between 0 and 1$"):
        random_split(range(10), [0.5, 1.5, -1.0])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0. This might result in an empty dataset."):
        random_split(range(2), [0.1, 0.1, 0.8])


# --- samplers ----------------------------------------------------------------------------------------------

def test_sequential_and_random_samplers():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3] and len(SequentialSampler(range(4))) == 4
    perm = list(RandomSampler(range(10), generator=npusim.Generator().manual_seed(5)))
    assert sorted(perm) == list(range(10))
    assert perm == list(RandomSampler(range(10), generator=npusim.Generator().manual_seed(5)))


def test_random_sampler_num_samples_and_replacement():
    g = npusim.Generator().manual_seed(0)
    longer = list(RandomSampler(range(4), num_samples=10, generator=g))
    assert len(longer) == 10 and sorted(longer[:4]) == [0, 1, 2, 3] and sorted(longer[4:8]) == [0, 1, 2, 3]
    drawn = list(RandomSampler(range(3), replacement=True, num_samples=70, generator=g))
    assert len(drawn) == 70 and set(drawn) == {0, 1, 2}
    assert len(RandomSampler(range(3), replacement=True, num_samples=70)) == 70


def test_unseeded_random_sampler_follows_manual_seed():
    npusim.manual_seed(123)
    a = list(RandomSampler(range(16)))
    npusim.manual_seed(123)
    assert list(RandomSampler(range(16))) == a


def test_subset_and_weighted_samplers():
    g = npusim.Generator().manual_seed(0)
    assert sorted(SubsetRandomSampler([7, 8, 9], generator=g)) == [7, 8, 9]
    picks = list(WeightedRandomSampler([0.0, 1.0, 0.0], num_samples=5, generator=g))
    assert picks == [1] * 5


def test_batch_sampler():
    assert list(BatchSampler(range(7), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3 and len(BatchSampler(range(7), 3, True)) == 2


def _sampler_errors(mod):
    d = mod.utils.data
    return [
        (lambda: d.RandomSampler(range(3), replacement=1), TypeError,
         "replacement should be a boolean value, but got replacement=1"),
        (lambda: d.RandomSampler(range(3), num_samples=0), ValueError,
         "num_samples should be a positive integer value, but got num_samples=0"),
        (lambda: d.BatchSampler(range(3), 0, False), ValueError,
         "batch_size should be a positive integer value, but got batch_size=0"),
        (lambda: d.BatchSampler(range(3), True, False), ValueError,
         "batch_size should be a positive integer value, but got batch_size=True"),
        (lambda: d.BatchSampler(range(3), 2, 1), ValueError,
         "drop_last should be a boolean value, but got drop_last=1"),
        (lambda: d.WeightedRandomSampler([[1.0]], 2), ValueError,
         "weights should be a 1d sequence but given weights have shape (1, 1)"),
    ]


@pytest.mark.parametrize("case", range(6))
def test_sampler_errors(case):
    fn, exc, msg = _sampler_errors(npusim)[case]
    with pytest.raises(exc) as err:
        fn()
    assert str(err.value) == msg


@pytest.mark.oracle
@pytest.mark.parametrize("case", range(6))
def test_sampler_errors_match_torch(torch, case):
    fn, exc, msg = _sampler_errors(torch)[case]
    with pytest.raises(exc) as err:
        fn()
    assert str(err.value) == msg


# --- collate -----------------------------------------------------------------------------------------------

def test_default_collate_stacks_and_converts():
    batch = default_collate([
        {"x": npusim.tensor([1.0, 2.0]), "n": 1, "f": 0.5, "name": "a", "p": Point(1, np.float32(2.0)),
         "arr": np.array([1, 2], dtype=np.int32), "t": (True, 3)},
        {"x": npusim.tensor([3.0, 4.0]), "n": 2, "f": 1.5, "name": "b", "p": Point(3, np.float32(4.0)),
         "arr": np.array([3, 4], dtype=np.int32), "t": (False, 4)},
    ])
    assert host(batch["x"]).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert batch["n"].dtype == npusim.int64 and host(batch["n"]).tolist() == [1, 2]
    assert batch["f"].dtype == npusim.float64 and host(batch["f"]).tolist() == [0.5, 1.5]
    assert batch["name"] == ["a", "b"]
    assert isinstance(batch["p"], Point) and batch["p"].y.dtype == npusim.float32
    assert batch["arr"].dtype == npusim.int32 and batch["arr"].shape == (2, 2)
    assert isinstance(batch["t"], list) and batch["t"][0].dtype == npusim.bool
    assert host(batch["t"][1]).tolist() == [3, 4]


def test_default_collate_keeps_device(device):
    out = default_collate([npusim.ones(2, device=device), npusim.zeros(2, device=device)])
    assert out.device.type == device and out.shape == (2, 2)


def test_default_collate_lists_and_numpy_scalars():
    assert [host(t).tolist() for t in default_collate([[1, 2], [3, 4]])] == [[1, 3], [2, 4]]
    scal = default_collate([np.int32(1), np.int32(5)])
    assert scal.dtype == npusim.int32 and host(scal).tolist() == [1, 5]


def test_default_collate_errors():
    with pytest.raises(RuntimeError, match="^each element in list of batch should be of equal size$"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="^default_collate: batch must contain tensors, numpy arrays, numbers, dicts "
                                        "or lists; found <class 'object'>$"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="found <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])


@pytest.mark.oracle
def test_default_collate_matches_torch(torch):
    def sample(mod, i):
        return {"x": mod.arange(3.0) + i, "label": i, "w": 0.5 * i, "np": np.full((2,), i, dtype=np.int16),
                "pair": (np.float64(i), [i, i + 1]), "p": Point(i, float(i))}

    def flatten(v, prefix=""):
        if isinstance(v, dict):
            return {k2: v2 for k, x in v.items() for k2, v2 in flatten(x, f"{prefix}/{k}").items()}
        if isinstance(v, (list, tuple)):
            return {k2: v2 for i, x in enumerate(v) for k2, v2 in flatten(x, f"{prefix}/{i}").items()}
        return {prefix: v}

    ours = flatten(default_collate([sample(npusim, i) for i in range(3)]))
    theirs = flatten(torch.utils.data.default_collate([sample(torch, i) for i in range(3)]))
    assert sorted(ours) == sorted(theirs)
    for key, t in theirs.items():
        assert str(ours[key].dtype).split(".")[1] == str(t.dtype).split(".")[1], key
        assert host(ours[key]).tolist() == t.tolist(), key


def test_default_convert():
    out = default_convert({"a": np.arange(3), "b": (np.float32(1.0), "s")})
    assert isinstance(out["a"], npusim.Tensor) and out["a"].dtype == npusim.int64
    assert isinstance(out["b"], list) and out["b"][0].dtype == npusim.float32 and out["b"][1] == "s"


# --- DataLoader, main process ---------------------------------------------------------------------------------

def test_loader_batches_in_order(device):
    x = npusim.arange(10.0, device=device).reshape(10, 1)
    loader = DataLoader(TensorDataset(x, npusim.arange(10, device=device)), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and [b[0].shape[0] for b in batches] == [4, 4, 2]
    assert host(batches[2][1]).tolist() == [8, 9] and batches[0][0].device.type == device


def test_loader_drop_last_and_len():
    loader = DataLoader(Squares(10), batch_size=4, drop_last=True)
    assert len(loader) == 2 and [host(b[1]).tolist() for b in loader] == [[0, 1, 4, 9], [16, 25, 36, 49]]


def test_loader_shuffle_is_reproducible_with_a_generator():
    def epoch(seed):
        loader = DataLoader(Squares(12), batch_size=5, shuffle=True, generator=npusim.Generator().manual_seed(seed))
        return [host(b[0]).ravel().tolist() for b in loader]
    a = epoch(0)
    assert a == epoch(0) and a != epoch(1)
    assert sorted(v for batch in a for v in batch) == [float(i) for i in range(12)]


def test_loader_reshuffles_each_epoch():
    loader = DataLoader(Squares(20), batch_size=20, shuffle=True, generator=npusim.Generator().manual_seed(0))
    first, second = (host(next(iter(loader))[0]).ravel().tolist() for _ in range(2))
    assert first != second


def test_loader_custom_collate_sampler_and_batch_sampler():
    loader = DataLoader(Squares(6), batch_size=2, collate_fn=lambda samples: [s[1] for s in samples])
    assert list(loader) == [[0, 1], [4, 9], [16, 25]]
    loader = DataLoader(Squares(6), batch_size=3, sampler=[5, 4, 3, 2, 1, 0])
    assert [host(b[1]).tolist() for b in loader] == [[25, 16, 9], [4, 1, 0]]
    loader = DataLoader(Squares(6), batch_sampler=[[0, 5], [2]])
    assert [host(b[1]).tolist() for b in loader] == [[0, 25], [4]] and len(loader) == 2


def test_loader_without_auto_batching():
    loader = DataLoader(Squares(3), batch_size=None)
    items = list(loader)
    assert len(loader) == 3 and items[2][1] == 4 and host(items[2][0]).tolist() == [2.0]


def test_loader_over_an_iterable_dataset():
    loader = DataLoader(Counting(10), batch_size=4)
    assert [host(b).tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert len(loader) == 3
    assert len(DataLoader(Counting(10), batch_size=4, drop_last=True)) == 2
    assert [host(b).tolist() for b in DataLoader(Counting(10), batch_size=4, drop_last=True)] == [[0, 1, 2, 3],
                                                                                                  [4, 5, 6, 7]]


def test_iterable_dataset_longer_than_reported_warns():
    loader = DataLoader(Counting(4, report_len=2), batch_size=None)
    assert len(loader) == 2
    with pytest.warns(UserWarning, match="was reported to be 2"):
        list(loader)


def test_training_from_a_loader(device):
    g = npusim.Generator().manual_seed(0)
    x = npusim.randn(64, 2, generator=g)
    y = x @ npusim.tensor([[2.0], [-1.0]])
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True, generator=g)
    w = npusim.zeros(2, 1, device=device, requires_grad=True)
    opt = npusim.optim.SGD([w], lr=0.2)
    for _ in range(15):
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            opt.zero_grad()
            ((xb @ w - yb) ** 2).mean().backward()
            opt.step()
    np.testing.assert_allclose(host(w).ravel(), [2.0, -1.0], atol=1e-3)


def _loader_errors(mod):
    d = mod.utils.data
    ds = list(range(5))

    class Stream(d.IterableDataset):
        def __iter__(self):
            return iter(range(3))

    def set_batch_size():
        d.DataLoader(ds).batch_size = 3

    return [
        (lambda: d.DataLoader(ds, sampler=[0, 1], shuffle=True), "sampler option is mutually exclusive with shuffle"),
        (lambda: d.DataLoader(ds, batch_sampler=[[0]], batch_size=2),
         "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"),
        (lambda: d.DataLoader(ds, batch_sampler=[[0]], shuffle=True),
         "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"),
        (lambda: d.DataLoader(ds, batch_sampler=[[0]], sampler=[0]),
         "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"),
        (lambda: d.DataLoader(ds, batch_sampler=[[0]], drop_last=True),
         "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"),
        (lambda: d.DataLoader(ds, batch_size=None, drop_last=True),
         "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"),
        (lambda: d.DataLoader(Stream(), shuffle=True),
         "DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle=True"),
        (lambda: d.DataLoader(Stream(), sampler=[0]),
         "DataLoader with IterableDataset: expected unspecified sampler option, but got sampler=[0]"),
        (lambda: d.DataLoader(Stream(), batch_sampler=[[0]]),
         "DataLoader with IterableDataset: expected unspecified batch_sampler option, but got batch_sampler=[[0]]"),
        (lambda: d.DataLoader(ds, num_workers=-1),
         "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing."),
        (lambda: d.DataLoader(ds, timeout=-1), "timeout option should be non-negative"),
        (lambda: d.DataLoader(ds, prefetch_factor=2),
         "prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 to enable "
         "multiprocessing, otherwise set prefetch_factor to None."),
        (lambda: d.DataLoader(ds, persistent_workers=True), "persistent_workers option needs num_workers > 0"),
        (lambda: d.DataLoader(ds, multiprocessing_context="fork"),
         "multiprocessing_context can only be used with multi-process loading (num_workers > 0), but got "
         "num_workers=0"),
        (lambda: d.DataLoader(ds, num_workers=1, multiprocessing_context="thread"),
         "multiprocessing_context option should specify a valid start method in ['fork', 'spawn', 'forkserver'], "
         "but got multiprocessing_context='thread'"),
        (set_batch_size, "batch_size attribute should not be set after DataLoader is initialized"),
    ]


@pytest.mark.parametrize("case", range(16))
def test_loader_option_errors(case):
    fn, msg = _loader_errors(npusim)[case]
    with pytest.raises(ValueError) as err:
        fn()
    assert str(err.value) == msg


@pytest.mark.oracle
@pytest.mark.parametrize("case", range(16))
def test_loader_option_errors_match_torch(torch, case):
    fn, msg = _loader_errors(torch)[case]
    with pytest.raises(ValueError) as err:
        fn()
    assert str(err.value) == msg


def test_loader_bad_multiprocessing_context_type():
    with pytest.raises(TypeError, match="multiprocessing_context option should be a valid context object or a string"):
        DataLoader(Squares(2), num_workers=1, multiprocessing_context=3)


def test_sampler_base_class():
    with pytest.raises(NotImplementedError):
        iter(Sampler())


# --- DataLoader with workers ----------------------------------------------------------------------------------

def test_workers_give_the_same_batches_as_the_main_process():
    ds = Squares(23)
    single = [(host(a).tolist(), host(b).tolist()) for a, b in DataLoader(ds, batch_size=4)]
    multi_loader = DataLoader(ds, batch_size=4, num_workers=2)
    multi = [(host(a).tolist(), host(b).tolist()) for a, b in multi_loader]
    assert multi == single and len(multi_loader) == 6


def test_workers_run_init_fn_are_seeded_and_single_threaded():
    loader = DataLoader(WorkerReport(), batch_size=None, num_workers=2, worker_init_fn=mark_worker,
                        generator=npusim.Generator().manual_seed(0))
    reports = list(loader)
    assert [r["index"] for r in reports] == list(range(8))
    assert {r["worker"] for r in reports} == {0, 1}
    assert len({r["pid"] for r in reports}) == 2 and os.getpid() not in {r["pid"] for r in reports}
    assert all(r["init"] == f"init-{r['worker']}" for r in reports)
    assert all(r["threads"] == 1 for r in reports)
    seeds = {r["worker"]: r["seed"] for r in reports}
    assert (seeds[1] - seeds[0]) % 1000 == 1  # worker seed = base seed + worker id
    again = list(DataLoader(WorkerReport(), batch_size=None, num_workers=2, worker_init_fn=mark_worker,
                            generator=npusim.Generator().manual_seed(0)))
    assert [r["rand"] for r in again] == [r["rand"] for r in reports]
    assert get_worker_info() is None


def test_worker_error_is_reraised_in_the_main_process():
    loader = DataLoader(Failing(), batch_size=2, num_workers=2)
    with pytest.raises(ValueError, match="(?s)Caught ValueError in DataLoader worker process 1.*sample 3 is broken"):
        list(loader)


def test_iterable_dataset_sharded_across_workers():
    loader = DataLoader(Counting(11), batch_size=3, num_workers=2)
    values = sorted(v for batch in loader for v in host(batch).tolist())
    assert values == list(range(11))


def test_persistent_workers_serve_several_epochs():
    loader = DataLoader(Squares(7), batch_size=3, num_workers=2, persistent_workers=True)
    first = [host(b[1]).tolist() for b in loader]
    second = [host(b[1]).tolist() for b in loader]
    assert first == second == [[0, 1, 4], [9, 16, 25], [36]]
    loader._iterator._shutdown_workers()


def test_workers_feed_an_npu_parent(device):
    npusim.ones(1, device=device)  # the parent has used the device before forking
    loader = DataLoader(Squares(6), batch_size=3, num_workers=2, multiprocessing_context="fork")
    batches = [b[0].to(device) for b in loader]
    assert [b.device.type for b in batches] == [device, device]
    assert host(batches[1]).ravel().tolist() == [3.0, 4.0, 5.0]


def test_spawned_workers():
    loader = DataLoader(Squares(5), batch_size=2, num_workers=1, multiprocessing_context="spawn",
                        worker_init_fn=mark_worker)
    assert [host(b[1]).tolist() for b in loader] == [[0, 1], [4, 9], [16]]
