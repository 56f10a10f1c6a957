"""DistributedDataParallel communication hooks and ``Work.get_future``.

Across 2 ranks (real processes over MPI, cpu and npu): the default hooks average the ranks' gradients, a custom
hook sees every bucket once per backward, fp16 training keeps the replicas identical, ``no_sync`` skips the hook,
unused parameters. In one process (a group of one on a backend registered through the public API): the
registration checks, the ``GradBucket`` API, hooks that misbehave, and the futures of works.
"""
from __future__ import annotations

import importlib.util
import re

import numpy as np
import pytest

import npusim
import npusim.distributed as dist
from conftest import host
from distributed_scripts.harness import Job, check_lines, mpiexec_command
from npusim import nn
from npusim.distributed.algorithms.ddp_comm_hooks import DDPCommHookType, default_hooks, register_ddp_comm_hook
from npusim.futures import Future
from npusim.nn.parallel import DistributedDataParallel as DDP

HAS_MPI = importlib.util.find_spec("mpi4py") is not None
CHECKS = ["default_hooks_average", "custom_hook_calls", "fp16_training_keeps_replicas_identical",
          "no_sync_skips_the_hook", "unused_parameters_with_a_hook", "noop_hook_keeps_local_gradients"]


@pytest.fixture(scope="module")
def job():
    if not HAS_MPI:
        pytest.skip("mpi4py and an MPI library are not installed (pip install 'npusim[distributed]')")
    started = Job(mpiexec_command(2, "ddp_comm_hook_check.py"), 90)
    yield started
    started.kill()


# --- two ranks ----------------------------------------------------------------------------------------------
@pytest.mark.skipif(not HAS_MPI, reason="mpi4py and an MPI library are not installed")
def test_comm_hook_job_finishes(job):
    code, out, err, _ = job.result()
    assert code == 0, err
    assert sorted(re.findall(r"^\[(\d+)\] DONE$", out, re.MULTILINE)) == ["0", "1"]


@pytest.mark.skipif(not HAS_MPI, reason="mpi4py and an MPI library are not installed")
@pytest.mark.parametrize("check", CHECKS)
def test_comm_hooks_across_ranks(job, device, check):
    results = check_lines(job.result()[1])
    for rank in range(2):
        assert results.get((rank, device, check)) == "PASS", results.get((rank, device, check), "no result line")


# --- one process --------------------------------------------------------------------------------------------
def _model(device="cpu", seed=0):
    npusim.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)


def _completed(value):
    fut = Future()
    fut.set_result(value)
    return fut


def _noop(state, bucket):
    return _completed(bucket.buffer())


def test_registering_twice_raises(world_of_one):
    ddp = DDP(_model())
    ddp.register_comm_hook(None, _noop)
    with pytest.raises(RuntimeError, match=re.escape("register_comm_hook or register_builtin_comm_hook can only be "
                                                     "called once.")):
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    with pytest.raises(RuntimeError, match="can only be called once"):
        register_ddp_comm_hook(DDPCommHookType.FP16_COMPRESS, ddp)
    assert ddp._comm_hooks == [(_noop, None)]


def test_hook_signature_checks(world_of_one):
    ddp = DDP(_model())
    with pytest.raises(TypeError, match=r"^Communication hook must be callable\.$"):
        ddp.register_comm_hook(None, "allreduce")

    def wrong_bucket(state, bucket):
        return _noop(state, bucket)

    def wrong_return(state, bucket):
        return _noop(state, bucket)

    def no_bucket(state, grads):
        return _noop(state, grads)

    def annotated(state, bucket):
        return _noop(state, bucket)

    # annotations as objects (this module's are strings, which the check, as torch's, rejects)
    wrong_bucket.__annotations__ = {"bucket": int}
    wrong_return.__annotations__ = {"bucket": dist.GradBucket, "return": Future[int]}
    annotated.__annotations__ = {"bucket": dist.GradBucket, "return": Future[npusim.Tensor]}
    with pytest.raises(ValueError, match=r"^Communication hook: bucket annotation should be dist\.GradBucket\.$"):
        ddp.register_comm_hook(None, wrong_bucket)
    with pytest.raises(ValueError, match=r"^Communication hook: return annotation should be "
                                         r"npusim\.futures\.Future\[npusim\.Tensor\]\.$"):
        ddp.register_comm_hook(None, wrong_return)
    with pytest.raises(KeyError, match="bucket"):      # torch looks the parameter up by name
        ddp.register_comm_hook(None, no_bucket)
    assert ddp._reducer.comm_hook is None               # nothing registered by the failed calls
    ddp.register_comm_hook(None, annotated)
    assert ddp._reducer.comm_hook is annotated


def test_default_hooks_are_accepted(world_of_one):
    for hook in (default_hooks.allreduce_hook, default_hooks.fp16_compress_hook, default_hooks.bf16_compress_hook,
                 default_hooks.fp16_compress_wrapper(default_hooks.allreduce_hook),
                 default_hooks.bf16_compress_wrapper(default_hooks.allreduce_hook)):
        DDP(_model()).register_comm_hook(None, hook)
    assert [t.name for t in DDPCommHookType] == ["ALLREDUCE", "FP16_COMPRESS", "BF16_COMPRESS"]


def test_grad_bucket_api(world_of_one, device):
    model = _model(device)
    ddp = DDP(model, bucket_cap_mb=1e-6)              # a bucket per parameter
    plain = _model(device)
    x = npusim.randn(5, 4, device=device)
    plain(x).pow(2).mean().backward()
    expected = {id(q): host(p.grad) for p, q in zip(plain.parameters(), model.parameters())}
    seen = []

    def recording(state, bucket):
        assert isinstance(bucket, dist.GradBucket)
        buffer = bucket.buffer()
        assert buffer is ddp._reducer.buckets[bucket.index()].buffer and buffer.dim() == 1
        params, grads = bucket.parameters(), bucket.gradients()
        seen.append((state, bucket.index(), bucket.is_last(), [id(p) for p in params]))
        for p, g in zip(params, grads):
            assert g.shape == p.shape and g.device == p.device
            np.testing.assert_allclose(host(g), expected[id(p)], rtol=1e-6, atol=1e-7)
        new = buffer * 3
        bucket.set_buffer(new)                         # gradients() follow the new buffer
        assert bucket.buffer() is new
        np.testing.assert_allclose(host(bucket.gradients()[0]), 3 * expected[id(params[0])], rtol=1e-6)
        return _completed(new)

    ddp.register_comm_hook("my state", recording)
    for _ in range(2):
        seen.clear()
        ddp.zero_grad()
        ddp(x).pow(2).mean().backward()
        assert [s[1] for s in seen] == [0, 1, 2, 3]
        assert [s[2] for s in seen] == [False, False, False, True]
        assert {s[0] for s in seen} == {"my state"}
        assert [i for s in seen for i in s[3]] == [id(p) for p in reversed(list(model.parameters()))]
        for p in model.parameters():                   # the future's tensor became the gradients, undivided
            np.testing.assert_allclose(host(p.grad), 3 * expected[id(p)], rtol=1e-6, atol=1e-7)


def test_hook_result_as_bucket_view(world_of_one):
    ddp = DDP(_model(), gradient_as_bucket_view=True)
    ddp.register_comm_hook(None, lambda state, bucket: _completed(bucket.buffer() * 2))
    x = npusim.randn(3, 4)
    ddp(x).sum().backward()
    bucket = ddp._reducer.buckets[0].buffer
    grad = next(iter(ddp.parameters())).grad
    assert grad.untyped_storage().data_ptr() == bucket.untyped_storage().data_ptr()
    reference = _model()
    reference(x).sum().backward()
    np.testing.assert_allclose(host(grad), 2 * host(next(iter(reference.parameters())).grad), rtol=1e-6)


def test_compress_hooks_send_16_bits(world_of_one):
    x = npusim.randn(5, 4)
    plain = _model()
    plain(x).pow(2).mean().backward()
    for hook_type, sent, tol in ((DDPCommHookType.ALLREDUCE, "float32", 1e-7),
                                 (DDPCommHookType.FP16_COMPRESS, "float16", 1e-3),
                                 (DDPCommHookType.BF16_COMPRESS, "bfloat16", 1e-2)):
        ddp = DDP(_model())
        register_ddp_comm_hook(hook_type, ddp, state=dist.group.WORLD)
        world_of_one.calls.clear()
        ddp(x).pow(2).mean().backward()
        assert [(op, [str(d) for d in dtypes]) for op, dtypes in world_of_one.calls] == [("all_reduce", [sent])]
        for p, q in zip(ddp.parameters(), plain.parameters()):
            assert p.grad.dtype is npusim.float32
            np.testing.assert_allclose(host(p.grad), host(q.grad), rtol=tol, atol=tol)


def test_no_sync_skips_the_hook(world_of_one):
    calls = []
    ddp = DDP(_model())
    ddp.register_comm_hook(None, lambda state, bucket: calls.append(bucket.index()) or _noop(state, bucket))
    x = npusim.randn(3, 4)
    with ddp.no_sync():
        ddp(x).sum().backward()
    assert calls == [] and world_of_one.calls == []
    ddp(x).sum().backward()
    assert calls == [0]


def test_a_hook_that_misbehaves(world_of_one):
    ddp = DDP(_model())
    ddp.register_comm_hook(None, lambda state, bucket: bucket.buffer())
    x = npusim.randn(3, 4)
    with pytest.raises(RuntimeError, match=r"DDP communication hook's callback must return a npusim\.futures\.Future "
                                           r"object, but got npusim\.core\.tensor\.Tensor"):
        ddp(x).sum().backward()
    ddp._reducer.comm_hook = lambda state, bucket: _completed(bucket.buffer()[:3])
    with pytest.raises(RuntimeError, match=r"must hold a single tensor of the bucket's size \(58 elements\), but got "
                                           r"a tensor of 3 elements"):
        ddp(x).sum().backward()

    def failing(state, bucket):
        fut = Future()
        fut.set_exception(ValueError("compression failed"))
        return fut
    ddp._reducer.comm_hook = failing
    with pytest.raises(ValueError, match="compression failed"):
        ddp(x).sum().backward()
    ddp._reducer.comm_hook = _noop                    # each failure abandoned its iteration: training goes on
    ddp.zero_grad()
    ddp(x).sum().backward()
    assert next(iter(ddp.parameters())).grad is not None

    small = DDP(_model(), bucket_cap_mb=1e-6)

    def pending_then_raise(state, bucket):
        if bucket.index() == 1:
            raise ZeroDivisionError("hook bug")
        return Future()                                # a future nothing will complete: not waited for

    small.register_comm_hook(None, pending_then_raise)
    with pytest.raises(ZeroDivisionError, match="hook bug"):
        small(x).sum().backward()
    small._reducer.comm_hook = _noop
    small(x).sum().backward()


def test_unused_parameters_with_a_hook(world_of_one):
    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2)
            self.b = nn.Linear(2, 2)

        def forward(self, x):
            return self.a(x)

    ddp = DDP(TwoHeads(), find_unused_parameters=True)
    buffers = []
    ddp.register_comm_hook(None, lambda state, bucket: buffers.append(host(bucket.buffer()).copy()) or
                           default_hooks.allreduce_hook(state, bucket))
    for _ in range(2):
        ddp(npusim.ones(1, 2)).sum().backward()
    assert ddp.module.b.weight.grad is None and ddp.module.a.weight.grad is not None
    assert len(buffers) == 2 and not buffers[0][:6].any()     # the unused parameters' slots are zeros


# --- Work.get_future --------------------------------------------------------------------------------------------
class _Slow(dist.Work):
    """Completes after a few polls (or fails, with ``error``)."""

    def __init__(self, polls=3, error=None):
        super().__init__("slow", timeout_s=5)
        self.polls, self.error = polls, error
        self._result = ["the result"]

    def _test(self):
        self.polls -= 1
        if self.polls > 0:
            return False
        if self.error is not None:
            raise self.error
        return True


def test_work_future_of_a_collective(world_of_one):
    t = npusim.ones(3)
    fut = dist.all_reduce(t, async_op=True).get_future()
    assert isinstance(fut, Future)
    assert fut.wait()[0] is t and fut.done()
    assert dist.Work(result=[t]).get_future().value()[0] is t      # already complete: done at once


def test_work_future_completes_with_the_work():
    work = _Slow(polls=5)
    fut = work.get_future()
    chained = fut.then(lambda f: f.value() + ["then"]).then(lambda f: len(f.value()))
    assert not fut.done() and not chained.done()
    assert chained.wait() == 2                  # waiting on a chained future drives the work
    assert fut.done() and fut.value() == ["the result"] and work.is_completed()
    polled = _Slow(polls=3)                     # get_future() polls once, done() polls once more
    fut = polled.get_future()
    assert not fut.done()
    assert fut.done() and fut.value() == ["the result"]


def test_work_future_carries_the_error():
    fut = _Slow(polls=2, error=OSError("link down")).get_future()
    chained = fut.then(lambda f: f.value())
    with pytest.raises(RuntimeError, match="error when running the callback: DistBackendError: slow failed: link "
                                           "down"):
        chained.wait()
    with pytest.raises(dist.DistBackendError, match="link down"):
        fut.wait()
