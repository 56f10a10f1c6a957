"""Host syncs and host-to-device copies of the npu's cuda mode, counted on the CuPy stand-in.

A GPU runs ahead of the host until the host reads a value back (a sync) or copies pageable memory up
(which waits for the stream too). These tests hold the hot paths to what torch's CUDA kernels do: a
training step of the demo model reads back only its loss, and indexing, embedding, the class-index
losses, pooling and ranges read nothing back, checking index values on the device instead
(``npusim/kernels/device_checks.py``). They run in cuda mode on the stand-in only (it counts); the
tests at the end run in the emulation and hold its eager checks with torch's errors.
"""
from __future__ import annotations

import contextlib
import sys
import traceback

import numpy as np
import pytest

import npusim
import npusim.nn.functional as F
from npusim import nn
from npusim.backend.runtime import runtime
from npusim.kernels import device_checks as DC

from conftest import host

CUDA_MODE = npusim.npu.is_available() and runtime.probe() == "cuda"
ON_STANDIN = CUDA_MODE and getattr(sys.modules.get("cupy"), "_NPUSIM_STANDIN", False)
standin_only = pytest.mark.skipif(not ON_STANDIN or DC.EAGER, reason="counts need the npu in cuda mode on the CuPy "
                                                                   "stand-in, without NPUSIM_LAUNCH_BLOCKING")
emulation_only_npu = pytest.mark.skipif(CUDA_MODE or not npusim.npu.is_available(),
                                        reason="the emulated npu's eager checks")
D = "npu"


class Counts:
    syncs = 0
    h2d = 0
    sync_sites: list = []
    h2d_sites: list = []

    def explain(self):
        lines = [f"{self.syncs} host syncs, {self.h2d} host-to-device copies"]
        lines += [f"  sync ({what}) at " + " <- ".join(reversed(stack[-3:])) for what, stack in self.sync_sites]
        lines += ["  h2d copy at " + " <- ".join(reversed(stack[-8:])) for stack in self.h2d_sites]
        return "\n".join(lines)


@contextlib.contextmanager
def counted(monkeypatch):
    """Count (and record where) the body's syncs and host-to-device copies."""
    import cupy
    core = sys.modules["cupy._core"]
    monkeypatch.setattr(core, "RECORD_SITES", True)
    sites = []
    count_h2d = core.count_h2d

    def recording_h2d():
        sites.append([f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno} {f.name}" for f in traceback.extract_stack()[:-1]
                      if "cupy_standin" not in f.filename][-14:])
        count_h2d()
    monkeypatch.setattr(core, "count_h2d", recording_h2d)
    DC.pending()   # no failure left over from another test
    c = Counts()
    cupy._standin_reset_counts()
    yield c
    got = cupy._standin_counts()
    c.syncs, c.h2d = got["host_syncs"], got["h2d_copies"]
    c.sync_sites = [(what, [s.rsplit("/", 1)[-1] for s in stack]) for what, stack in cupy._standin_sync_sites()]
    c.h2d_sites = sites


def assert_no_sync(c):
    assert c.syncs == 0 and c.h2d == 0, c.explain()


# --- a training step of the demo model ------------------------------------------------------------------------

@standin_only
def test_a_demo_training_step_reads_back_only_its_loss(monkeypatch):
    from npusim.demo import CharTransformer, batches, load_corpus
    npusim.manual_seed(0)
    device = npusim.device("npu", 0)
    vocab, train, _ = load_corpus()
    model = CharTransformer(len(vocab)).to(device)
    opt = npusim.optim.AdamW(model.parameters(), lr=4e-3, weight_decay=0.01)
    gen = npusim.Generator().manual_seed(0)

    def step():
        x, y = batches(train, 8, gen, device)          # the inputs: two copies up
        with npusim.autocast("npu", dtype=npusim.float16):
            logits = model(x)
            loss = F.cross_entropy(logits.flatten(0, 1).float(), y.flatten())
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
        return loss.item()                             # the one read

    first = step()   # warm-up: the optimizer's state is created
    with counted(monkeypatch) as c:
        second = step()
    assert c.syncs == 1 and c.sync_sites[0][1][-1].endswith("_host_array"), c.explain()
    assert c.h2d == 2 and all(any("batches" in s for s in stack) for stack in c.h2d_sites), c.explain()
    assert np.isfinite([first, second]).all()
    assert DC.pending() == []


@standin_only
def test_a_grad_scaler_step_reads_back_what_torchs_does(monkeypatch):
    # torch's GradScaler reads one flag per step (step() skips the optimizer after an inf); unscaling, the inf
    # checks and the scale update stay on the device
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to("npu")
    opt = npusim.optim.SGD(model.parameters(), lr=0.1)
    scaler = npusim.amp.GradScaler("npu", growth_interval=1)
    x, y = npusim.randn(8, 16, device="npu"), npusim.randint(0, 4, (8,), device="npu")

    def step():
        with npusim.autocast("npu", dtype=npusim.float16):
            loss = F.cross_entropy(model(x).float(), y)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()

    step()
    scale = scaler.get_scale()
    with counted(monkeypatch) as c:
        step()
    assert c.syncs == 1 and c.h2d == 0, c.explain()
    assert scaler.get_scale() == scale * 2.0   # growth_interval=1: the clean step grew the scale


# --- ops that read nothing back ---------------------------------------------------------------------------------

@standin_only
def test_embedding_forward_and_backward(monkeypatch):
    w = npusim.randn(10, 4, device=D, requires_grad=True)
    idx = npusim.randint(0, 10, (3, 5), device=D)
    for kwargs in ({}, {"padding_idx": 2}, {"scale_grad_by_freq": True}):
        with counted(monkeypatch) as c:
            F.embedding(idx, w, **kwargs).sum().backward()
        assert_no_sync(c)
    want = np.zeros((10, 4))
    np.add.at(want, host(idx), 1.0)
    w.grad = None
    F.embedding(idx, w).sum().backward()
    np.testing.assert_allclose(host(w.grad), want)


@standin_only
@pytest.mark.parametrize("ignore", [-100, 1])
def test_cross_entropy_and_nll_loss_with_class_indices(monkeypatch, ignore):
    x = npusim.randn(6, 5, device=D, requires_grad=True)
    t = npusim.tensor([0, 4, 1, -100, 3, 1], device=D)
    with counted(monkeypatch) as c:
        F.cross_entropy(x, t, ignore_index=ignore).backward()
        F.nll_loss(F.log_softmax(x, 1), t, ignore_index=ignore, reduction="sum").backward()
        F.cross_entropy(x.view(2, 3, 5).transpose(1, 2), t.view(2, 3), ignore_index=ignore, reduction="none")
    assert_no_sync(c)
    assert DC.pending() == ([] if ignore == -100 else [f"{DC.NLL_TARGET} (npu:0)"])   # -100 is a target then


@standin_only
def test_indexing_ops(monkeypatch):
    x = npusim.randn(4, 6, device=D)
    i = npusim.tensor([3, 0, 3], device=D)
    g = npusim.tensor([[0, 5], [2, 1]], device=D)
    with counted(monkeypatch) as c:
        npusim.index_select(x, 1, i)
        npusim.gather(x, 1, g)
        x.clone().scatter_(1, g, 1.0)
        x.clone().scatter_add_(1, g, npusim.ones(2, 2, device=D))
        x[i]
        x[i, -1]
        x[:, i]
        x.clone().index_put_((i,), npusim.ones(6, device=D), accumulate=True)
        x.clone().index_add_(0, i, npusim.ones(3, 6, device=D))
        x.clone().scatter_reduce_(1, g, npusim.ones(2, 2, device=D), "sum")
    assert_no_sync(c)
    assert DC.pending() == []


@standin_only
def test_max_pool2d_with_indices_and_other_pooling(monkeypatch):
    x = npusim.randn(2, 3, 9, 8, device=D, requires_grad=True)
    with counted(monkeypatch) as c:
        y, idx = F.max_pool2d(x, 3, 2, 1, return_indices=True)
        y.sum().backward()
        F.avg_pool2d(x, 3, 2, 1, count_include_pad=False).sum().backward()
        F.adaptive_avg_pool2d(x, (4, 3)).sum().backward()
        F.adaptive_max_pool2d(x, (4, 3)).sum().backward()
        F.interpolate(x, scale_factor=2, mode="nearest").sum().backward()
        F.interpolate(x, size=(5, 11), mode="bilinear").sum().backward()
    assert_no_sync(c)


@standin_only
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8"])
def test_arange_and_linspace_are_made_on_the_device(monkeypatch, dtype):
    dt = getattr(npusim, dtype)
    with counted(monkeypatch) as c:
        a = npusim.arange(1, 40, 3, dtype=dt, device=D)
        lin = npusim.linspace(2, 30, 17, dtype=dt, device=D)
        one = npusim.linspace(3, 3, 1, dtype=dt, device=D)
    assert_no_sync(c)
    for got, want in ((a, npusim.arange(1, 40, 3, dtype=dt)), (lin, npusim.linspace(2, 30, 17, dtype=dt)),
                      (one, npusim.linspace(3, 3, 1, dtype=dt))):
        assert np.array_equal(host(got), host(want))   # the same values as the cpu, bit for bit


@standin_only
def test_other_device_checked_ops(monkeypatch):
    p = npusim.rand(4, 6, device=D)
    boundaries = npusim.arange(60., device=D).view(30, 2)
    lu, piv = npusim.linalg.lu_factor(npusim.randn(3, 5, 5, device=D, dtype=npusim.float64))
    classes = npusim.tensor([0, 3, 2], device=D)
    with counted(monkeypatch) as c:
        npusim.multinomial(p, 3, replacement=True)
        npusim.multinomial(p, 2)
        npusim.bernoulli(p)
        F.one_hot(classes, 4)
        npusim.searchsorted(boundaries, npusim.ones(30, 3, device=D))
        npusim.lu_unpack(lu, piv)
    assert_no_sync(c)


# --- out-of-range values on the device: recorded, reported when read ----------------------------------------

def _t(values, **kw):
    return npusim.tensor(values, device=D, **kw)


# (id, inputs, op, the check that fails)
BAD = [
    ("embedding", lambda: (_t([1, 6]), npusim.randn(6, 3, device=D)), F.embedding, DC.EMBEDDING),
    ("cross_entropy", lambda: (npusim.randn(2, 3, device=D), _t([0, 3])), F.cross_entropy, DC.NLL_TARGET),
    ("index_select", lambda: (npusim.zeros(3, device=D), 0, _t([-1])), npusim.index_select, DC.INDEX_SELECT),
    ("gather", lambda: (npusim.zeros(3, device=D), 0, _t([3])), npusim.gather, DC.GATHER),
    ("scatter", lambda: (npusim.zeros(3, device=D), 0, _t([5]), 1.0), npusim.scatter, DC.SCATTER),
    ("index", lambda: (npusim.zeros(3, device=D), _t([3])), lambda x, i: x[i], DC.INDEX),
    ("index_put", lambda: (npusim.zeros(3, device=D), (_t([-4]),), npusim.ones(1, device=D)), npusim.index_put,
     DC.INDEX_PUT),
    ("bce", lambda: (_t([2.]), _t([1.])), F.binary_cross_entropy, DC.BCE_INPUT),
    ("multinomial", lambda: (_t([1., -1.]), 1), npusim.multinomial, DC.MULTINOMIAL),
    ("one_hot", lambda: (_t([0, 4]), 4), F.one_hot, DC.ONE_HOT),
]


@standin_only
@pytest.mark.parametrize("name, inputs, op, check", BAD, ids=[b[0] for b in BAD])
def test_out_of_range_values_are_reported_at_the_next_read(monkeypatch, name, inputs, op, check):
    args = inputs()
    with counted(monkeypatch) as c:
        op(*args)   # no error at the op, and no read
    assert_no_sync(c)
    with pytest.raises(RuntimeError, match=r"npu error: device-side assert triggered: .*NPUSIM_LAUNCH_BLOCKING=1") \
            as info:
        DC.raise_pending()
    assert check in str(info.value)
    DC.raise_pending()   # reading clears the flags


@standin_only
def test_a_user_sees_the_failed_check_at_synchronize():
    table = npusim.randn(6, 3, device=D)
    F.embedding(_t([7]), table)   # out of range: no error at the op
    with pytest.raises(RuntimeError, match=r"device-side assert triggered: embedding: index out of range"):
        npusim.npu.synchronize()
    npusim.npu.synchronize()   # reported once: the flags were cleared
    F.embedding(_t([5]), table)
    npusim.npu.synchronize()   # a valid index leaves nothing to report


@standin_only
def test_launch_blocking_checks_at_the_op_with_torchs_errors(monkeypatch):
    monkeypatch.setattr(DC, "EAGER", True)
    with pytest.raises(IndexError, match="^index out of range in self$"):
        F.embedding(npusim.tensor([1, 6], device=D), npusim.randn(6, 3, device=D))
    with pytest.raises(IndexError, match=r"^Target 3 is out of bounds\.$"):
        F.cross_entropy(npusim.randn(2, 3, device=D), npusim.tensor([0, 3], device=D))
    with pytest.raises(RuntimeError, match="^index 3 is out of bounds for dimension 0 with size 3$"):
        npusim.gather(npusim.zeros(3, device=D), 0, npusim.tensor([3], device=D))
    with pytest.raises(IndexError, match="^index 3 is out of bounds for dimension 0 with size 3$"):
        npusim.zeros(3, device=D)[npusim.tensor([3], device=D)]
    assert DC.pending() == []


@standin_only
def test_host_indices_are_still_checked_at_once(monkeypatch):
    x = npusim.zeros(3, 4, device=D)
    with counted(monkeypatch) as c:
        with pytest.raises(IndexError, match="^index 5 is out of bounds for dimension 0 with size 4$"):
            x[:, [5]]
        with pytest.raises(IndexError, match="^index -4 is out of bounds for dimension 0 with size 3$"):
            x[npusim.tensor([-4])]
    assert c.syncs == 0, c.explain()


# --- the emulation keeps its eager checks -------------------------------------------------------------------------

EAGER_ERRORS = [
    (lambda d: F.embedding(npusim.tensor([1, 6], device=d), npusim.randn(6, 3, device=d)), IndexError,
     "index out of range in self"),
    (lambda d: F.cross_entropy(npusim.randn(2, 3, device=d), npusim.tensor([0, 3], device=d)), IndexError,
     "Target 3 is out of bounds."),
    (lambda d: F.nll_loss(npusim.randn(2, 3, device=d), npusim.tensor([-1, 0], device=d)), IndexError,
     "Target -1 is out of bounds."),
    (lambda d: npusim.index_select(npusim.zeros(3, device=d), 0, npusim.tensor([3], device=d)), IndexError,
     "index out of range in self"),
    (lambda d: npusim.gather(npusim.zeros(3, device=d), 0, npusim.tensor([-1], device=d)), RuntimeError,
     "index -1 is out of bounds for dimension 0 with size 3"),
    (lambda d: npusim.zeros(3, device=d).scatter_(0, npusim.tensor([3], device=d), 1.0), RuntimeError,
     "index 3 is out of bounds for dimension 0 with size 3"),
    (lambda d: npusim.zeros(3, device=d)[npusim.tensor([3], device=d)], IndexError,
     "index 3 is out of bounds for dimension 0 with size 3"),
]


@emulation_only_npu
@pytest.mark.parametrize("case", range(len(EAGER_ERRORS)))
def test_the_emulation_raises_torchs_errors_at_the_op(case):
    call, error, message = EAGER_ERRORS[case]
    for d in ("cpu", "npu"):
        with pytest.raises(error) as info:
            call(d)
        assert str(info.value) == message
    assert DC.pending() == []


@pytest.mark.oracle
@pytest.mark.parametrize("case", range(len(EAGER_ERRORS)))
def test_the_eager_errors_are_torchs(torch, case):
    call, error, message = EAGER_ERRORS[case]
    with pytest.raises(error) as info:
        call_torch = {0: lambda: torch.nn.functional.embedding(torch.tensor([1, 6]), torch.randn(6, 3)),
                      1: lambda: torch.nn.functional.cross_entropy(torch.randn(2, 3), torch.tensor([0, 3])),
                      2: lambda: torch.nn.functional.nll_loss(torch.randn(2, 3), torch.tensor([-1, 0])),
                      3: lambda: torch.index_select(torch.zeros(3), 0, torch.tensor([3])),
                      4: lambda: torch.gather(torch.zeros(3), 0, torch.tensor([-1])),
                      5: lambda: torch.zeros(3).scatter_(0, torch.tensor([3]), 1.0),
                      6: lambda: torch.zeros(3)[torch.tensor([3])]}[case]
        call_torch()
    assert str(info.value) == message
