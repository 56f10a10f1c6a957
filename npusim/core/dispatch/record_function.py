"""Operator callbacks (at::RecordFunction, addGlobalCallback, addThreadLocalCallback).

A callback is a pair ``on_enter(fn) -> ctx`` / ``on_exit(fn, ctx)`` that runs around
every operator call, every backward node and every user scope
(``npusim.profiler.record_function``) of the scopes it asks for, with the
probability it asks for.

Cost, by design:

- no callback registered: the dispatcher's fast path is untouched (its one
  ``_SLOW`` check stays false);
- only sampled global callbacks: the dispatcher pops each op's sampling decision
  itself (``_RF_TICK`` in dispatcher.GEN_GLOBALS, see callback_sampling.py), so an
  op sampled out pays one C call and stays on the fast path;
- otherwise every op takes the dispatcher's slow path into ``_on_op``.

Registration is safe while ops run in other threads: the tables the hot path
reads are tuples swapped whole under a lock, and the dispatcher pops sampling
decisions only while no other slow-path reason (autocast, a key guard) is active
(checked under the slow-path lock). Ops run by a callback do not fire callbacks
themselves, and a callback that raises is reported once (a RuntimeWarning) and
never disturbs the op it observes.
"""
from __future__ import annotations

import enum
import inspect
import itertools
import random
import threading
import warnings
from time import perf_counter_ns

from . import dispatch_tls, dispatcher
from .callback_sampling import SamplingCountdown
from ..c10.dispatch_keys import AUTOGRAD_MASK, DispatchKey


class RecordScope(enum.IntEnum):
    """What a RecordFunction stands for (at::RecordScope)."""
    FUNCTION = 0               # an operator call
    BACKWARD_FUNCTION = 1      # a node of the backward pass
    TORCHSCRIPT_FUNCTION = 2
    KERNEL_FUNCTION_DTYPE = 3
    CUSTOM_CLASS = 4
    BUILD_FEATURE = 5
    LITE_INTERPRETER = 6
    USER_SCOPE = 7             # npusim.profiler.record_function
    STATIC_RUNTIME_OP = 8
    STATIC_RUNTIME_MODEL = 9


_ALL_SCOPES = frozenset(RecordScope)
FUNCTION, BACKWARD_FUNCTION, USER_SCOPE = RecordScope.FUNCTION, RecordScope.BACKWARD_FUNCTION, RecordScope.USER_SCOPE


class RecordFunction:
    """What a callback sees of one operator call, backward node or user scope.

    ``inputs`` is None unless a callback running for it asked for inputs (then it
    is the op's arguments in schema order, keyword-only ones last); ``outputs``
    likewise, set on exit. ``seq_nr`` is the sequence number of the autograd node
    a forward op creates, and of the node a BACKWARD_FUNCTION runs, linking the
    two; -1 when there is none. ``handle`` identifies this record uniquely in the
    process.
    """

    # Class-level defaults: a record only stores what differs (it is made on the hot path).
    inputs = None
    outputs = None
    seq_nr = -1
    op = None          # the OpOverload of a FUNCTION
    keyset = 0         # the dispatch key set of a FUNCTION, as an int
    _adopted = False

    def __init__(self, name, scope, thread_id):
        self.name = name
        self.scope = scope
        self.thread_id = thread_id
        self.handle = next(_record_ids)
        self.start_time_ns = 0

    @property
    def overload_name(self) -> str:
        return self.op._schema.overload_name if self.op is not None else ""

    def __repr__(self):
        return (f"RecordFunction(name={self.name!r}, scope={self.scope.name}, seq_nr={self.seq_nr}, "
                f"thread_id={self.thread_id}, handle={self.handle})")


class RecordFunctionCallback:
    """A builder for a callback pair (at::RecordFunctionCallback)::

        RecordFunctionCallback(on_enter, on_exit).needs_inputs(True).sampling_prob(0.01)

    ``on_enter(fn)`` returns an observer context that is handed to
    ``on_exit(fn, ctx)`` (an ``on_exit`` taking one argument gets ``fn`` only).
    Either may be None. The builder is copied when registered.
    """

    def __init__(self, start=None, end=None):
        for what, f in (("start", start), ("end", end)):
            if f is not None and not callable(f):
                raise TypeError(f"RecordFunctionCallback: the {what} callback must be callable or None, "
                                f"not {type(f).__name__}")
        self._start = start
        self._end = end
        self._needs_inputs = False
        self._needs_outputs = False
        self._prob = 1.0
        self._scopes = _ALL_SCOPES

    def needs_inputs(self, needs: bool = True) -> "RecordFunctionCallback":
        self._needs_inputs = bool(needs)
        return self

    def needs_outputs(self, needs: bool = True) -> "RecordFunctionCallback":
        self._needs_outputs = bool(needs)
        return self

    def sampling_prob(self, prob: float) -> "RecordFunctionCallback":
        if isinstance(prob, bool) or not isinstance(prob, (int, float)) or not 0.0 <= prob <= 1.0:
            raise RuntimeError("Invalid sampling probability")
        self._prob = float(prob)
        return self

    def scopes(self, scopes) -> "RecordFunctionCallback":
        scopes = frozenset(scopes)
        for s in scopes:
            if not isinstance(s, RecordScope):
                raise TypeError(f"RecordFunctionCallback.scopes(): expected RecordScope members, got "
                                f"{type(s).__name__}")
        self._scopes = scopes
        return self

    def __repr__(self):
        return (f"RecordFunctionCallback(start={self._start!r}, end={self._end!r}, sampling_prob={self._prob}, "
                f"needs_inputs={self._needs_inputs}, needs_outputs={self._needs_outputs})")


def _takes_one_argument(fn) -> bool:
    """Whether ``fn`` cannot take a second positional argument (an on_exit without a context)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return False
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params) < 2


class _Entry:
    """A registered callback (a frozen copy of its builder)."""

    __slots__ = ("handle", "start", "end", "end_ctx", "needs_inputs", "needs_outputs", "prob", "scopes",
                 "is_global", "removed", "warned", "remaining")

    def __init__(self, cb: RecordFunctionCallback, handle: int, is_global: bool):
        self.handle = handle
        self.start = cb._start
        self.end = cb._end
        self.end_ctx = cb._end is not None and not _takes_one_argument(cb._end)
        self.needs_inputs = cb._needs_inputs
        self.needs_outputs = cb._needs_outputs
        self.prob = cb._prob
        self.scopes = cb._scopes
        self.is_global = is_global
        self.removed = False
        self.warned = False
        self.remaining = 0      # sampled FUNCTION callbacks: kept by SamplingCountdown


# --- per-thread state -----------------------------------------------------------------------------

_thread_ids = itertools.count(1)
_record_ids = itertools.count(1)


class _ThreadState:
    __slots__ = ("enabled", "local", "current", "busy", "thread_id")

    def __init__(self):
        self.enabled = True     # enable_record_function(); on by default, as in torch
        self.local = ()         # thread-local callbacks (_Entry), including ones carried in from a fork
        self.current = None     # the innermost recorded op of this thread (links it to its autograd node)
        self.busy = False       # running callbacks: ops they call are not recorded
        self.thread_id = next(_thread_ids)


class _TLS(threading.local):
    def __init__(self):
        self.state = _ThreadState()


_tls = _TLS()


def _state() -> _ThreadState:
    return _tls.state


# --- the registry ------------------------------------------------------------------------------------

_lock = threading.Lock()
_handles = itertools.count(1)
_registry: dict[int, _Entry] = {}
_G = dispatcher.GEN_GLOBALS
_ALWAYS_SLOW = dispatcher.ALWAYS_SLOW
_CPU_BIT = 1 << DispatchKey.CPU
_rng = random.Random()

# Tables the hot path reads; rebuilt whole under _lock.
_fn_always: tuple = ()     # global, FUNCTION scope, probability 1
_fn_sampled: tuple = ()    # global, FUNCTION scope, 0 < probability < 1 (decided by _sampler)
_by_scope: dict = {}       # other scope -> its global callbacks
_n_local = 0               # thread-local registrations alive (any thread)
_holding_slow = False      # we hold one dispatch_tls slow-path reason
ACTIVE = False             # any callback registered: read by the autograd engine and kernels

# Set at the first registration (the autograd package imports this module).
_next_sequence_nr = None
_grad_tls = None


def _register(cb, is_global: bool) -> int:
    global _n_local
    if not isinstance(cb, RecordFunctionCallback):
        raise TypeError(f"expected a npusim.profiler.RecordFunctionCallback, got {type(cb).__name__}")
    _import_autograd()
    with _lock:
        handle = next(_handles)
        entry = _Entry(cb, handle, is_global)
        if entry.prob == 0.0:
            entry.removed = True    # never fires: kept only so that remove_callback knows the handle
        _registry[handle] = entry
        if not is_global and not entry.removed:
            s = _state()
            s.local = s.local + (entry,)
            _n_local += 1
        _rebuild()
    return handle


def add_global_callback(cb: RecordFunctionCallback) -> int:
    """Run ``cb`` around ops in every thread; returns a handle for ``remove_callback``."""
    return _register(cb, True)


def add_thread_local_callback(cb: RecordFunctionCallback) -> int:
    """Run ``cb`` around ops of this thread (and of tasks it forks); returns a handle."""
    return _register(cb, False)


def remove_callback(handle: int) -> None:
    """Unregister a callback by its handle (from any thread)."""
    global _n_local
    with _lock:
        entry = _registry.pop(handle, None)
        if entry is None:
            warnings.warn("Requested callback is not found", UserWarning, stacklevel=2)
            return
        if not entry.is_global and not entry.removed:
            _n_local -= 1
        entry.removed = True
        _rebuild()
    s = _state()
    if s.local:
        s.local = tuple(e for e in s.local if not e.removed)


def clear_callbacks() -> None:
    """Remove every callback, global and thread-local, of every thread."""
    for handle in list(_registry):
        remove_callback(handle)


def has_global_callbacks() -> bool:
    return bool(_fn_always or _fn_sampled or any(_by_scope.values()))


def has_thread_local_callbacks() -> bool:
    """Whether this thread has thread-local callbacks (its own, or carried in from a fork)."""
    return any(not e.removed for e in _state().local)


def has_callbacks() -> bool:
    """Whether a global callback, or a thread-local one of this thread, is registered."""
    return has_global_callbacks() or has_thread_local_callbacks()


def enable_record_function(enabled: bool = True) -> None:
    """Turn callbacks on or off for ops of this thread (they are on in every thread by default)."""
    _state().enabled = bool(enabled)


def is_record_function_enabled() -> bool:
    return _state().enabled


def _import_autograd():
    global _next_sequence_nr, _grad_tls
    if _next_sequence_nr is None:
        from ..autograd.grad_mode import tls
        from ..autograd.node import next_sequence_nr
        _grad_tls, _next_sequence_nr = tls, next_sequence_nr


def _rebuild() -> None:
    """Recompute the hot-path tables from the registry (caller holds _lock)."""
    global _fn_always, _fn_sampled, _by_scope, _holding_slow, ACTIVE
    live = [e for e in _registry.values() if not e.removed]
    glob = [e for e in live if e.is_global]
    sampled = tuple(e for e in glob if FUNCTION in e.scopes and e.prob < 1.0)
    _sampler.reset(sampled)
    _fn_sampled = sampled
    _fn_always = tuple(e for e in glob if FUNCTION in e.scopes and e.prob >= 1.0)
    _by_scope = {s: tuple(e for e in glob if s in e.scopes) for s in RecordScope if s is not FUNCTION}
    need = bool(live)
    if need and not _holding_slow:
        dispatcher.set_record_function_hook(_on_op)
        _holding_slow = True
        dispatch_tls.enter_slow()
    elif not need and _holding_slow:
        _holding_slow = False
        dispatch_tls.exit_slow()
        dispatcher.set_record_function_hook(None)
    ACTIVE = need
    with dispatch_tls._slow_lock:   # no other slow-path reason may appear between the check and the switch
        _arm(dispatch_tls._slow_reasons)


def _arm(slow_reasons: int) -> None:
    """Let the dispatcher pop the sampling decisions when sampled callbacks are all the slow path is for."""
    ok = _holding_slow and slow_reasons == 1 and _fn_sampled and not _fn_always and not _n_local
    _G["_RF_TICK"] = _sampler.pop if ok else _ALWAYS_SLOW


# Called (under the slow-path lock) whenever a slow-path reason comes or goes.
dispatch_tls.on_slow_change(_arm)


# --- choosing the callbacks of an event ----------------------------------------------------------------

def _pick(scope, s: _ThreadState) -> tuple:
    """Global and thread-local callbacks that fire for one event of ``scope`` (not FUNCTION ops)."""
    picked = []
    rnd = _rng.random
    for e in _by_scope.get(scope, ()):
        if e.prob >= 1.0 or rnd() < e.prob:
            picked.append(e)
    if s.local:
        picked.extend(_local(scope, s))
    return tuple(picked)


def _local(scope, s: _ThreadState) -> list:
    out = []
    rnd = _rng.random
    for e in s.local:
        if not e.removed and scope in e.scopes and (e.prob >= 1.0 or rnd() < e.prob):
            out.append(e)
    return out


# --- running callbacks ------------------------------------------------------------------------------------

_FAILED = object()   # the context of a callback whose on_enter raised: its on_exit is skipped


def _report(entry: _Entry, exc: BaseException) -> None:
    if not entry.warned:
        entry.warned = True
        warnings.warn(f"a record-function callback (handle {entry.handle}) raised {type(exc).__name__}: {exc}. "
                      f"The operation was not affected; later errors of this callback are not reported.",
                      RuntimeWarning, stacklevel=2)


def _enter(entries, rf: RecordFunction, s: _ThreadState) -> list:
    s.busy = True
    ctxs = []
    try:
        rf.start_time_ns = perf_counter_ns()
        for e in entries:
            start = e.start
            if start is None or e.removed:
                ctxs.append(None if start is None else _FAILED)
                continue
            try:
                ctxs.append(start(rf))
            except Exception as exc:   # noqa: BLE001 - a callback never breaks the op
                _report(e, exc)
                ctxs.append(_FAILED)
    finally:
        s.busy = False
    return ctxs


def _exit(entries, ctxs, rf: RecordFunction, s: _ThreadState) -> None:
    s.busy = True
    try:
        for e, ctx in zip(entries, ctxs):
            end = e.end
            if end is None or ctx is _FAILED:
                continue
            try:
                if e.end_ctx:
                    end(rf, ctx)
                else:
                    end(rf)
            except Exception as exc:   # noqa: BLE001
                _report(e, exc)
    finally:
        s.busy = False


def _flags(entries):
    """(needs inputs, needs outputs) of a set of callbacks."""
    ni = no = False
    for e in entries:
        if e.needs_inputs:
            ni = True
        if e.needs_outputs:
            no = True
    return ni, no


_names: dict = {}


def _on_op(op, ks, args, kwargs):
    """The dispatcher's record-function hook: ops on the slow path come here through slow_call."""
    if _fn_sampled:
        due = _sampler.take() if _G["_RF_TICK"] is _ALWAYS_SLOW else _sampler.after_end()
    else:
        due = ()
    return _run(op, ks, args, kwargs, due)


# While the dispatcher pops the sampling decisions itself, it calls these directly (no slow_call:
# the decisions are armed only while no thread-local dispatch state exists anywhere).
def _on_sampled(op, ks, args, kwargs):
    return _run(op, ks or _CPU_BIT, args, kwargs, _sampler.next_due())


def _on_chunk_end(op, ks, args, kwargs):
    return _run(op, ks or _CPU_BIT, args, kwargs, _sampler.after_end())


_sampler = SamplingCountdown(hit=_on_sampled, end=_on_chunk_end)


def _run(op, ks, args, kwargs, due):
    s = _tls.state
    if s.enabled and not s.busy:
        entries = _fn_always
        if due:
            entries = entries + due     # a callback removed meanwhile is skipped by _enter
        if s.local:
            entries = entries + tuple(_local(FUNCTION, s))
        if entries:
            return _record_op(op, ks, args, kwargs, entries, s)
    try:
        fn = op._memo[ks]
    except KeyError:
        fn = dispatcher._resolve(op, ks)
    return fn(*args, **kwargs)


def _record_op(op, ks, args, kwargs, entries, s):
    name = _names.get(op)
    if name is None:
        name = _names[op] = f"{op._ns}::{op._opname}"
    rf = RecordFunction(name, FUNCTION, s.thread_id)
    rf.op = op
    rf.keyset = ks
    if ks & AUTOGRAD_MASK and _grad_tls.enabled:
        rf.seq_nr = _next_sequence_nr()   # the number this op's autograd node will carry (adopt_sequence_nr)
    wants_out = False
    for e in entries:
        if e.needs_inputs:
            rf.inputs = args + tuple(kwargs.values()) if kwargs else args
        if e.needs_outputs:
            wants_out = True
    ctxs = _enter(entries, rf, s)
    prev = s.current
    s.current = rf
    try:
        try:
            fn = op._memo[ks]
        except KeyError:
            fn = dispatcher._resolve(op, ks)
        out = fn(*args, **kwargs)
    except BaseException:
        s.current = prev
        _exit(entries, ctxs, rf, s)
        raise
    s.current = prev
    if wants_out:
        rf.outputs = tuple(out) if isinstance(out, tuple) else (out,)
    _exit(entries, ctxs, rf, s)
    return out


def adopt_sequence_nr(node, op) -> None:
    """Give the autograd node that ``op``'s kernel just made the seq_nr its RecordFunction announced."""
    rf = _tls.state.current
    if rf is not None and rf.op is op and rf.seq_nr >= 0 and not rf._adopted:
        rf._adopted = True
        node._seq = rf.seq_nr


def run_backward_node(node, grads):
    """``node.apply(grads)`` inside BACKWARD_FUNCTION callbacks (called by the engine while ACTIVE)."""
    s = _tls.state
    if not s.enabled or s.busy:
        return node.apply(grads)
    entries = _pick(BACKWARD_FUNCTION, s)
    if not entries:
        return node.apply(grads)
    rf = RecordFunction(node.name(), BACKWARD_FUNCTION, s.thread_id)
    rf.seq_nr = node._seq
    wants_in, wants_out = _flags(entries)
    if wants_in:
        rf.inputs = tuple(grads)
    ctxs = _enter(entries, rf, s)
    try:
        out = node.apply(grads)
    except BaseException:
        _exit(entries, ctxs, rf, s)
        raise
    if wants_out:
        rf.outputs = tuple(out)
    _exit(entries, ctxs, rf, s)
    return out


# --- user scopes ----------------------------------------------------------------------------------------

def enter_user_scope(name: str, args=None):
    """Start a USER_SCOPE named ``name``; returns a token for ``exit_user_scope`` (None: nothing fires)."""
    if not ACTIVE:
        return None
    s = _tls.state
    if not s.enabled or s.busy:
        return None
    entries = _pick(USER_SCOPE, s)
    if not entries:
        return None
    rf = RecordFunction(name, USER_SCOPE, s.thread_id)
    if args is not None and _flags(entries)[0]:
        rf.inputs = (args,)
    return rf, entries, _enter(entries, rf, s)


def exit_user_scope(token) -> None:
    if token is None:
        return
    rf, entries, ctxs = token
    _exit(entries, ctxs, rf, _tls.state)


# --- carrying this thread's callbacks into another thread (fork, see thread_local_state.py) ----------------

def _capture():
    s = _tls.state
    return s.enabled, tuple(e for e in s.local if not e.removed)


def _restore(snapshot):
    """Install a captured (enabled, local callbacks) in this thread; returns what it replaces."""
    s = _tls.state
    prev = (s.enabled, s.local)
    s.enabled, s.local = snapshot
    return prev
