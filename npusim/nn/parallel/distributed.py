"""``DistributedDataParallel``: data-parallel training over a process group (``torch.nn.parallel``).

Every rank holds the whole model and runs its own share of the batch. At
construction rank 0's parameters and buffers are broadcast, so all replicas start
equal. During backward each parameter's post-accumulate-grad hook copies its
gradient into a flat bucket; a full bucket is all-reduced (averaged) at once,
without blocking, while backward goes on with the earlier layers. Buckets start
in the same order on every rank (the order MPI matches collectives in). When the
last bucket has started, the reduced gradients are written back.

``no_sync()`` skips the reduction (gradients accumulate locally until the next
synchronised backward). ``find_unused_parameters=True`` walks the graph of the
forward's outputs to find parameters the loss cannot reach, so their buckets
still complete; their gradient stays None unless another rank used them.

``register_comm_hook(state, hook)`` replaces the averaging all-reduce: each full bucket
goes, undivided, to ``hook(state, bucket)`` as a ``GradBucket``, and the tensor the
returned future holds becomes the bucket's gradients (see
``npusim.distributed.algorithms.ddp_comm_hooks``).
"""
from __future__ import annotations

import inspect
import weakref
from contextlib import contextmanager

from ...core.c10 import dtype as _dtype
from ...core.autograd import grad_mode
from ...core.autograd.grad_mode import no_grad
from ...core.c10.device import device as _device
from ...core.factories import tensor as _tensor
from ...api.operators import cat as _cat
from ...core.runtime.futures import Future
from ...api.factories import zeros as _zeros
from ...core.tensor import Tensor
from ..modules.module import Module

_FIRST_BUCKET_BYTES = 1024 * 1024      # torch's first bucket: small, so communication starts early
_DEFAULT_BUCKET_CAP_MB = 25


def _dist():
    from ... import distributed
    return distributed


class _Bucket:
    """Parameters of one device and dtype whose gradients are reduced together, and their flat buffer."""

    def __init__(self, index, params, device, dtype, sizes):
        self.index = index
        self.params = params                   # indices into the reducer's parameter list
        self.offsets = []
        total = 0
        for n in sizes:
            self.offsets.append(total)
            total += n
        self.lengths = list(sizes)
        self.buffer = _zeros(total, dtype=dtype, device=device)
        self.pending = 0
        self.work = None
        self.future = None                     # what a communication hook returned


class _Reducer:
    """The gradient bucketing and reduction state of one DistributedDataParallel module."""

    def __init__(self, params, names, process_group, bucket_cap_bytes, find_unused, as_bucket_view):
        self.params = params
        self.names = names
        self.group = process_group
        self.find_unused = find_unused
        self.as_bucket_view = as_bucket_view
        self.comm_hook = None
        self.comm_state = None
        self.buckets = self._assign_buckets(bucket_cap_bytes)
        self.bucket_of = {}
        self.slot_of = {}
        for bucket in self.buckets:
            for slot, i in enumerate(bucket.params):
                self.bucket_of[i] = bucket
                self.slot_of[i] = slot
        self.views = [None] * len(params)
        self.expecting = False
        self.ready = [False] * len(params)
        self.used = [True] * len(params)
        self.next_bucket = 0
        self.unused = []
        self.handles = []
        ref = weakref.ref(self)
        for i, p in enumerate(params):
            self.handles.append(p.register_post_accumulate_grad_hook(_make_hook(ref, i)))

    def __del__(self):
        for handle in getattr(self, "handles", ()):
            handle.remove()

    # --- buckets -----------------------------------------------------------------------------------------
    def _assign_buckets(self, cap_bytes):
        """torch's assignment: parameters in reverse order (the order backward produces gradients), grouped by
        device and dtype; a 1 MiB first bucket, then buckets of ``bucket_cap_mb``."""
        open_buckets = {}
        done = []
        for i in reversed(range(len(self.params))):
            p = self.params[i]
            key = (p.device, p.dtype)
            entry = open_buckets.get(key)
            if entry is None:
                entry = open_buckets[key] = {"params": [], "bytes": 0, "limit": min(_FIRST_BUCKET_BYTES, cap_bytes)}
            entry["params"].append(i)
            entry["bytes"] += p.numel() * p.element_size()
            if entry["bytes"] >= entry["limit"]:
                done.append((key, entry["params"]))
                open_buckets[key] = {"params": [], "bytes": 0, "limit": cap_bytes}
        for key, entry in open_buckets.items():
            if entry["params"]:
                done.append((key, entry["params"]))
        buckets = []
        for index, ((device, dtype), members) in enumerate(done):
            buckets.append(_Bucket(index, members, device, dtype, [self.params[i].numel() for i in members]))
        return buckets

    # --- an iteration ------------------------------------------------------------------------------------
    def prepare_for_forward(self):
        if self.expecting and not all(self.ready):
            missing = [self.names[i] for i, r in enumerate(self.ready) if not r]
            self._drain()
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new one. This error "
                "indicates that your module has parameters that were not used in producing loss. You can enable "
                "unused parameter detection by passing the keyword argument `find_unused_parameters=True` to "
                "`npusim.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs "
                "participate in calculating loss.\nParameters which did not receive grad for rank "
                f"{self.group.rank()}: {' '.join(missing)}")

    def prepare_for_backward(self, outputs):
        self.expecting = True
        self.ready = [False] * len(self.params)
        self.used = [True] * len(self.params)
        self.next_bucket = 0
        for bucket in self.buckets:
            bucket.pending = len(bucket.params)
            bucket.work = None
            bucket.future = None
        self.unused = []
        if self.find_unused:
            reached = _leaves_reached(outputs)
            self.unused = [i for i, p in enumerate(self.params) if id(p) not in reached]
            for i in self.unused:
                self.used[i] = False

    def on_grad_ready(self, i):
        if not self.expecting or self.ready[i]:
            return
        # unused parameters count as ready once backward starts (not in forward: a collective the user runs
        # between forward and backward must meet the same collectives on every rank)
        unused, self.unused = self.unused, []
        for j in unused:
            self._mark_ready(j, None)
        if self.expecting and not self.ready[i]:
            self._mark_ready(i, self.params[i].grad)

    def _mark_ready(self, i, grad):
        self.ready[i] = True
        bucket = self.bucket_of[i]
        slot = self.slot_of[i]
        start = bucket.offsets[slot]
        if grad is None or grad is not self.views[i]:     # a bucket-view gradient is already in place
            with no_grad():     # tensor ops, not raw arrays: they run on the bucket's device whatever is current
                view = bucket.buffer[start:start + self.params[i].numel()]
                if grad is None:
                    view.zero_()
                else:
                    view.copy_(grad.reshape(-1))
        bucket.pending -= 1
        if bucket.pending == 0:
            self._launch_ready_buckets()
        for b in self.buckets[:self.next_bucket]:   # let in-flight reductions progress
            if b.work is not None:
                b.work.is_completed()
            elif b.future is not None:
                b.future.done()
        if self.next_bucket == len(self.buckets):
            self._finalize()

    def _launch_ready_buckets(self):
        dist = _dist()
        while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:
            bucket = self.buckets[self.next_bucket]
            self.next_bucket += 1
            if self.comm_hook is None:
                bucket.work = dist.all_reduce(bucket.buffer, op=dist.ReduceOp.AVG, group=self.group, async_op=True)
            else:
                bucket.future = self._run_comm_hook(bucket)

    def _run_comm_hook(self, bucket):
        """Hand the bucket (gradients not divided) to the hook; its future of the new gradients."""
        grad_bucket = _dist().GradBucket(bucket.index, len(self.buckets), bucket.buffer, bucket.offsets,
                                         bucket.lengths, [self.params[i].shape for i in bucket.params],
                                         [self.params[i] for i in bucket.params])
        try:
            future = self.comm_hook(self.comm_state, grad_bucket)
            if not isinstance(future, Future):
                kind = type(future)
                raise RuntimeError("DDP communication hook's callback must return a npusim.futures.Future object, "
                                   f"but got {kind.__module__}.{kind.__qualname__}")
        except BaseException:
            self._drain()       # abandon the iteration: the next one starts afresh
            raise
        return future

    def _hook_result(self, bucket):
        """The tensor the hook's future holds, checked, flat, in the bucket's dtype and device."""
        future, bucket.future = bucket.future, None
        result = future.wait()
        numel = bucket.buffer.numel()
        if not isinstance(result, Tensor) or result.numel() != numel:
            got = f"a tensor of {result.numel()} elements" if isinstance(result, Tensor) else \
                f"{type(result).__module__}.{type(result).__qualname__}"
            raise RuntimeError(f"DDP communication hook's future must hold a single tensor of the bucket's size "
                               f"({numel} elements), but got {got}")
        if result is bucket.buffer:
            return result
        with no_grad():
            result = result.detach().reshape(-1).to(device=bucket.buffer.device, dtype=bucket.buffer.dtype)
            if self.as_bucket_view:     # the gradients are views of the bucket: the result goes there
                bucket.buffer.copy_(result)
                return bucket.buffer
        return result

    def _finalize(self):
        self.expecting = False
        globally_used = None
        if self.find_unused:
            dist = _dist()
            flags = _tensor([1 if u else 0 for u in self.used], dtype=_dtype.uint8, device=self.params[0].device)
            dist.all_reduce(flags, op=dist.ReduceOp.MAX, group=self.group)
            globally_used = flags.tolist()
        results = []
        try:
            for bucket in self.buckets:
                if bucket.future is not None:
                    results.append(self._hook_result(bucket))
                else:
                    bucket.work.wait()
                    bucket.work = None
                    results.append(bucket.buffer)
        except BaseException:
            self._drain()
            raise
        with no_grad():
            for bucket, result in zip(self.buckets, results):
                for slot, i in enumerate(bucket.params):
                    if globally_used is not None and not globally_used[i]:
                        continue
                    self._write_back(i, bucket, slot, result)

    def _write_back(self, i, bucket, slot, result):
        p = self.params[i]
        start = bucket.offsets[slot]
        flat = result[start:start + p.numel()]
        if self.as_bucket_view:
            if p.grad is not self.views[i]:
                self.views[i] = flat.view(p.shape)
                p.grad = self.views[i]
            return
        if p.grad is None:
            p.grad = flat.view(p.shape).clone()
        else:
            with no_grad():
                p.grad.copy_(flat.view(p.grad.shape))

    def _drain(self):
        """Wait for the reductions already started (every rank started the same ones) and reset."""
        for bucket in self.buckets[:self.next_bucket]:
            if bucket.work is not None:
                bucket.work.wait()
                bucket.work = None
            future, bucket.future = bucket.future, None
            # a work's future completes when waited on; a plain future nothing completes would block forever
            if future is not None and (future.done() or getattr(future, "_task", None) is not None):
                try:
                    future.wait()
                except Exception:   # noqa: BLE001 - the hook's failure is not the error being reported
                    pass
        self.expecting = False


def _make_hook(reducer_ref, i):
    def hook(param):
        reducer = reducer_ref()
        if reducer is not None:
            reducer.on_grad_ready(i)
    return hook


def _leaves_reached(outputs) -> set:
    """ids of the leaf tensors the autograd graph of ``outputs`` reaches."""
    stack, seen, leaves = [], set(), set()

    def collect(obj):
        if isinstance(obj, Tensor):
            if obj.grad_fn is not None:
                stack.append(obj.grad_fn)
            elif obj.requires_grad:
                leaves.add(id(obj))
        elif isinstance(obj, (list, tuple)):
            for o in obj:
                collect(o)
        elif isinstance(obj, dict):
            for o in obj.values():
                collect(o)

    collect(outputs)
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if variable is not None:
            leaves.add(id(variable))
        for child, _ in node.next_functions:
            if child is not None:
                stack.append(child)
    return leaves


def _move_to(obj, device):
    if isinstance(obj, Tensor):
        return obj if obj.device == device else obj.to(device)
    if isinstance(obj, tuple):
        return tuple(_move_to(o, device) for o in obj)
    if isinstance(obj, list):
        return [_move_to(o, device) for o in obj]
    if isinstance(obj, dict):
        return {k: _move_to(v, device) for k, v in obj.items()}
    return obj


class DistributedDataParallel(Module):
    """Data parallelism across processes: wrap the model, train as usual, gradients are averaged over ranks."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=None, init_sync=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False):
        super().__init__()
        from ...distributed.process_group import resolve_group
        group = resolve_group(process_group)
        if group is None:
            raise ValueError("DistributedDataParallel: this rank is not a member of the given process group")
        named = [(n, p) for n, p in module.named_parameters()]
        if not any(p.requires_grad for _, p in named):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter that "
                               "requires a gradient.")
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        device_types = {p.device.type for _, p in named}
        if len(device_types) != 1:
            raise ValueError("DistributedDataParallel's input module must be on the same type of devices, but input "
                             f"module parameters locate in {device_types}.")
        self.module = module
        self.process_group = group
        self.dim = dim
        self.device_type = next(iter(device_types))
        self.device_ids = None
        self.output_device = None
        if device_ids and self.device_type != "cpu":
            first = device_ids[0]
            index = first if isinstance(first, int) else _device(first).index
            self.device_ids = [index]
            self.device = _device(self.device_type, index)
            self.output_device = self.device if output_device is None else _device(output_device)
        else:
            self.device = named[0][1].device
        self.broadcast_buffers = True if broadcast_buffers is None else bool(broadcast_buffers)
        self.find_unused_parameters = bool(find_unused_parameters or static_graph)
        self.static_graph = static_graph
        self.gradient_as_bucket_view = bool(gradient_as_bucket_view)
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self._comm_hooks = []
        cap_mb = _DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb
        self.bucket_bytes_cap = int(cap_mb * 1024 * 1024)
        self._verify_same_model(named)
        if init_sync:
            self._sync_module_states()
        trained = [(n, p) for n, p in named if p.requires_grad]
        self._reducer = _Reducer([p for _, p in trained], [n for n, _ in trained], group, self.bucket_bytes_cap,
                                 self.find_unused_parameters, self.gradient_as_bucket_view)

    # --- setup ---------------------------------------------------------------------------------------------
    def _verify_same_model(self, named):
        shapes = "; ".join(f"{n}: {str(p.dtype).rsplit('.', 1)[-1]}{list(p.shape)}" for n, p in named)
        self.process_group._store.check_agreement(
            f"DistributedDataParallel on rank {self.process_group.rank()}",
            f"a model of {len(named)} parameters ({shapes})")

    def _coalesced_broadcast(self, tensors):
        """Broadcast ``tensors`` from rank 0, one flat buffer per device and dtype."""
        dist = _dist()
        groups = {}
        for t in tensors:
            groups.setdefault((t.device, t.dtype), []).append(t)
        with no_grad():
            for (device, dtype), members in groups.items():
                flat = _cat([t.detach().reshape(-1) for t in members]) if len(members) > 1 else \
                    members[0].detach().reshape(-1).clone()
                dist.broadcast(flat, src=self.process_group._ranks[0], group=self.process_group)
                at = 0
                for t in members:
                    n = t.numel()
                    t.copy_(flat[at:at + n].view(t.shape))
                    at += n

    def _sync_module_states(self):
        tensors = [p for p in self.module.parameters()] + [b for b in self.module.buffers()]
        if tensors and self.process_group.size() > 1:
            self._coalesced_broadcast(tensors)

    # --- training ------------------------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        sync = grad_mode.is_grad_enabled() and self.require_backward_grad_sync
        if sync:
            self._reducer.prepare_for_forward()
        if self.broadcast_buffers and self.process_group.size() > 1 and self.require_forward_param_sync:
            buffers = list(self.module.buffers())
            if buffers:
                self._coalesced_broadcast(buffers)
        if self.device_ids:
            inputs, kwargs = _move_to(inputs, self.device), _move_to(kwargs, self.device)
        output = self.module(*inputs, **kwargs)
        if sync:
            self._reducer.prepare_for_backward(output)
        return output

    # --- communication hooks -------------------------------------------------------------------------------
    def register_comm_hook(self, state: object, hook) -> None:
        """Reduce each bucket with ``hook(state, bucket) -> Future[Tensor]`` instead of the averaging all-reduce.

        ``bucket`` is a ``npusim.distributed.GradBucket`` whose gradients are not divided by the world size;
        the tensor the future holds (the bucket's size) becomes the bucket's gradients. Register once, before
        backward. ``npusim.distributed.algorithms.ddp_comm_hooks.default_hooks`` has ``allreduce_hook`` (the
        behaviour without a hook), ``fp16_compress_hook``, ``bf16_compress_hook`` and their wrappers.
        """
        self._check_comm_hook(hook)
        if self._reducer.comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        self._comm_hooks.append((hook, state))
        self._reducer.comm_hook = hook
        self._reducer.comm_state = state

    def _register_builtin_comm_hook(self, comm_hook_type) -> None:
        """Reduce buckets with a hook DDP has built in (``npusim.distributed.BuiltinCommHookType``)."""
        from ...distributed.builtin_comm_hooks import register_builtin_comm_hook
        register_builtin_comm_hook(self, comm_hook_type)

    def _check_comm_hook(self, hook):
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        sig = inspect.signature(hook)
        if (sig.parameters["bucket"].annotation != inspect.Parameter.empty
                and sig.parameters["bucket"].annotation != _dist().GradBucket):
            raise ValueError("Communication hook: bucket annotation should be dist.GradBucket.")
        if sig.return_annotation != inspect.Signature.empty and sig.return_annotation != Future[Tensor]:
            raise ValueError("Communication hook: return annotation should be npusim.futures.Future[npusim.Tensor].")

    @contextmanager
    def no_sync(self):
        """Inside, backward does not reduce gradients: they accumulate locally until a synchronised backward."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old
