"""npu graphs: capture the kernels a stretch of code issues, replay them on the same memory (torch.cuda graphs).

Capture records at the dispatcher: while a graph captures, the npu's kernels are registered again for the
PrivateUse1 key (``Library("aten", "IMPL")``), each wrapped so that a call issued on the capturing stream is
recorded as a node (the kernel, its arguments, the tensors it made). ``replay()`` runs the nodes again in order:
in-place and ``out=`` kernels write into the same tensors, and a kernel that made new tensors writes its fresh
result into the tensors it made at capture, so static inputs refilled in place give new values in the static
outputs. This works alike in emulation and in cuda mode (CuPy's kernels run again; CuPy's own stream capture,
``cupy.cuda.Graph``, is not used, so one mechanism serves both).

As CUDA's capture, which issues no work: memory that existed before the capture is left as it was (each
tensor an in-place kernel writes is saved first and restored at ``capture_end``), and the default generator's
state is restored, so every replay draws fresh random numbers, the generator advancing as torch's Philox offset
does. Tensors made during the capture belong to the graph (its pool) and stay allocated until ``reset``.
A synchronizing operation during capture (``item()``, ``.cpu()``, ``synchronize()``, an op that runs through the
CPU fallback) raises the error CUDA gives and invalidates the capture. Views, which do no device work, are not
recorded: they stay views of the same memory.
"""
from __future__ import annotations

import itertools
import threading
import warnings

import npusim as _npusim
from ..library import Library
from ..privateuse1 import array_of, privateuse1_backend_name
from . import streams, sync_debug
from .runtime import runtime

__all__ = ["CUDAGraph", "graph_pool_handle", "is_current_stream_capturing", "record_kernels"]

_graph_pool_ids = itertools.count(1)
_lock = threading.Lock()
_kernel_table = None      # fn() -> {aten overload name: the npu's kernel}, given by the backend's registration
_active = None            # the _Capture underway (one at a time in the process, as torch documents)
_tls = threading.local()  # depth: > 0 inside a recorded kernel, whose inner ops belong to it


def record_kernels(table) -> None:
    """``table()`` gives the npu's kernels by aten overload name: the ones a capture wraps."""
    global _kernel_table
    _kernel_table = table


def graph_pool_handle() -> tuple:
    """An opaque token naming a graph memory pool, to share it between captures."""
    return (next(_graph_pool_ids), 0)


def _error(text: str):
    return _npusim.AcceleratorError(f"{privateuse1_backend_name()} error: {text}")


# --- what a kernel reads and writes (from its schema) ----------------------------------------------------------

def _overload(name: str):
    packet, _, overload = name.partition(".")
    return getattr(getattr(_npusim.ops.aten, packet), overload or "default")


class _Effects:
    """An op's written arguments (position, name) and whether each return aliases an input."""

    __slots__ = ("written", "alias_returns", "view_only")

    def __init__(self, op):
        schema = op._schema
        self.written = [(i, a.name) for i, a in enumerate(schema.arguments) if a.type.is_write]
        self.alias_returns = [r.type.alias is not None for r in schema.returns]
        self.view_only = bool(schema.returns) and all(self.alias_returns) and not self.written


def _tensors(value):
    if isinstance(value, _npusim.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, _npusim.Tensor)]
    return []


def _flat_outputs(result):
    """The returned tensors, one slot per return (a list return counts each of its tensors in turn)."""
    if isinstance(result, _npusim.Tensor):
        return [result]
    if isinstance(result, (list, tuple)):
        out = []
        for r in result:
            out.extend(_tensors(r) if isinstance(r, (list, tuple)) else [r])
        return out
    return []


class _Node:
    """One recorded kernel call; ``fresh`` pairs (output slot, tensor made at capture) to refill on replay."""

    __slots__ = ("name", "fn", "args", "kwargs", "fresh")

    def __init__(self, name, fn, args, kwargs, fresh):
        self.name, self.fn, self.args, self.kwargs, self.fresh = name, fn, args, kwargs, fresh

    def run(self):
        result = self.fn(*self.args, **self.kwargs)
        if self.fresh:
            outs = _flat_outputs(result)
            for slot, dst in self.fresh:
                array_of(dst)[...] = array_of(outs[slot])


def _pool_key(t) -> int:
    return t.untyped_storage().data_ptr()


class _Capture:
    """The state of one capture: the wrapped kernels, the recorded nodes, what to restore at its end."""

    def __init__(self, graph, device_index, stream_id, mode):
        self.graph, self.device_index, self.stream_id, self.mode = graph, device_index, stream_id, mode
        self.thread = threading.get_ident()
        self.nodes: list = []
        self.pool_storages: set = set()     # storages made during the capture (the graph's pool)
        self.saved: list = []               # (tensor, its values before the capture wrote it), in order
        self.saved_ids: set = set()
        self.error = None
        self.rng_state = _npusim.npu.get_rng_state(device_index)
        self.generator_states = [(g, g.get_state()) for g in graph._generators]
        self.library = None

    def issued_here(self) -> bool:
        """Whether the calling thread's current stream is the capturing one (its work is captured)."""
        return streams.current_id(self.device_index) == self.stream_id and threading.get_ident() == self.thread

    def refuse(self, what: str) -> None:
        """A synchronizing operation: CUDA refuses it on a capturing stream and invalidates the capture."""
        if self.mode != "global" and threading.get_ident() != self.thread:
            return
        if self.mode == "relaxed" and not self.issued_here():
            return
        self.error = _error(f"operation not permitted when stream is capturing ({what} during graph capture)")
        raise self.error

    def preserve(self, t) -> None:
        if id(t) in self.saved_ids or _pool_key(t) in self.pool_storages:
            return
        self.saved_ids.add(id(t))
        self.saved.append((t, array_of(t).copy()))

    def record(self, name, fn, effects, args, kwargs):
        for pos, arg_name in effects.written:
            value = args[pos] if pos < len(args) else kwargs.get(arg_name)
            for t in _tensors(value):
                self.preserve(t)
        _tls.depth = 1
        try:
            result = fn(*args, **kwargs)
        finally:
            _tls.depth = 0
        if effects.view_only:
            return result
        inputs = {id(t) for v in itertools.chain(args, kwargs.values()) for t in _tensors(v)}
        fresh = []
        alias = effects.alias_returns
        for slot, t in enumerate(_flat_outputs(result)):
            if id(t) in inputs or (slot < len(alias) and alias[slot]):
                continue
            fresh.append((slot, t))
            self.pool_storages.add(_pool_key(t))
        self.nodes.append(_Node(name, fn, tuple(args), dict(kwargs), fresh))
        return result

    def finish(self) -> None:
        """Undo what the capture did to memory and the generator that existed before it."""
        for t, values in reversed(self.saved):
            array_of(t)[...] = values
        self.saved.clear()
        _npusim.npu.set_rng_state(self.rng_state, self.device_index)
        for g, state in self.generator_states:
            g.set_state(state)


def _recording(name, fn, effects):
    def recording_kernel(*args, **kwargs):
        cap = _active
        if cap is None or getattr(_tls, "depth", 0) or not cap.issued_here():
            return fn(*args, **kwargs)
        if cap.error is not None:
            raise _error("operation not permitted when stream is capturing (the capture was invalidated)")
        return cap.record(name, fn, effects, args, kwargs)
    recording_kernel.__name__ = getattr(fn, "__name__", name)
    recording_kernel.__wrapped__ = fn
    return recording_kernel


_effects_cache: dict = {}


def _wrap_kernels() -> Library:
    lib = Library("aten", "IMPL")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # overriding the npu's own kernels for the capture is intended
        for name, fn in _kernel_table().items():
            effects = _effects_cache.get(name)
            if effects is None:
                effects = _effects_cache[name] = _Effects(_overload(name))
            lib.impl(name, _recording(name, fn, effects), "PrivateUse1")
    return lib


def is_current_stream_capturing() -> bool:
    cap = _active
    if cap is None or not runtime.initialized:
        return False
    return cap.issued_here() and runtime.current_device() == cap.device_index


# --- the graph object ---------------------------------------------------------------------------------------

class CUDAGraph:
    """A graph of npu work (``torch.cuda.CUDAGraph``): ``capture_begin`` / ``capture_end`` record the kernels
    issued on the current stream in between, ``replay`` runs them again on the same memory."""

    def __init__(self, keep_graph: bool = False):    # keep_graph: accepted as torch's; the nodes always stay
        self._nodes = None          # the recorded nodes once a capture succeeded
        self._pool = None
        self._debug = False
        self._device_index = None
        self._generators: list = []     # generators besides the default one whose draws the graph replays

    def register_generator_state(self, generator) -> None:
        """Have a capture leave ``generator`` as it was, as the default generator (each replay then draws fresh
        numbers from it)."""
        if not isinstance(generator, _npusim.Generator):
            raise TypeError(f"register_generator_state(): expected a Generator, got {type(generator).__name__}")
        if all(g is not generator for g in self._generators):
            self._generators.append(generator)

    @staticmethod
    def get_currently_capturing_graph():
        """The graph being captured (torch raises when there is none)."""
        cap = _active
        if cap is None:
            raise RuntimeError("No graph is currently being captured")
        return cap.graph

    def capture_begin(self, pool=None, capture_error_mode: str = "global", check_input_liveness: bool = False):
        """Begin capturing npu work on the current stream (``graph`` and ``make_graphed_callables`` call it)."""
        global _active
        if capture_error_mode not in ("global", "thread_local", "relaxed"):
            raise RuntimeError(f"Unknown capture error mode. Expected `global`, `thread_local`, or `relaxed`, "
                               f"got {capture_error_mode}")
        if self._nodes is not None:
            raise RuntimeError("This CUDAGraph instance already owns a captured graph. To capture a new graph, "
                               "create a new instance.")
        if _kernel_table is None:
            raise RuntimeError(f"{privateuse1_backend_name()} graphs need the backend's kernel table")
        runtime.lazy_init()
        index = runtime.current_device()
        stream_id = streams.current_id(index)
        if stream_id == 0:
            raise RuntimeError(f"{privateuse1_backend_name()} graphs must be captured on a non-default stream. "
                               f"(However, after capture, it's ok to replay them on the default stream.)")
        with _lock:
            if _active is not None:
                raise RuntimeError("Another graph capture is underway in this process; npusim captures one graph "
                                   "at a time")
            cap = _Capture(self, index, stream_id, capture_error_mode)
            cap.library = _wrap_kernels()
            _active = cap
        sync_debug.set_capture_check(cap.refuse)
        self._pool = tuple(pool) if pool is not None else graph_pool_handle()
        self._device_index = index

    def capture_end(self) -> None:
        """End the capture; ``replay`` may be called from now on."""
        global _active
        cap = _active
        if cap is None or cap.graph is not self:
            raise RuntimeError("Called CUDAGraph::capture_end without a preceding capture_begin on this graph.")
        with _lock:
            _active = None
        sync_debug.set_capture_check(None)
        cap.library._destroy()
        cap.finish()
        if cap.error is not None:
            self._pool = None
            raise _error("operation failed due to a previous error during capture")
        self._nodes = cap.nodes

    def instantiate(self) -> None:
        """Make the captured graph ready to replay (done by ``capture_end``; kept for torch's API)."""
        if self._nodes is None:
            raise RuntimeError("Called CUDAGraph::instantiate without a preceding successful capture.")

    def replay(self) -> None:
        """Run the captured work again."""
        if self._nodes is None:
            raise RuntimeError("Called CUDAGraph::replay without a preceding successful capture.")
        if _active is not None and _active.issued_here():
            raise _error("operation not permitted when stream is capturing (replaying a graph during a capture)")
        with _npusim.npu.device(self._device_index):
            for node in self._nodes:
                node.run()

    def reset(self) -> None:
        """Delete the captured graph (its pool's tensors are freed); the instance may capture again."""
        self._nodes = None
        self._pool = None

    def pool(self) -> tuple:
        """The token of this graph's memory pool, to pass to another capture that may share it."""
        if self._pool is None:
            raise RuntimeError("Called CUDAGraph::pool() without a preceding successful capture.")
        return self._pool

    def enable_debug_mode(self) -> None:
        """Keep what ``debug_dump`` writes."""
        self._debug = True

    def debug_dump(self, debug_path: str) -> None:
        """Write the captured graph, one node per kernel in replay order, as a Graphviz DOT file."""
        if not self._debug:
            warnings.warn("CUDA Graphs debug not enabled, set with [graph].enable_debug_mode()", UserWarning,
                          stacklevel=2)
            return
        nodes = self._nodes or []
        lines = ["digraph npu_graph {"]
        for i, node in enumerate(nodes):
            lines.append(f'  n{i} [label="{i}: {node.name}"];')
            if i:
                lines.append(f"  n{i - 1} -> n{i};")
        lines.append("}")
        with open(debug_path, "w") as f:
            f.write("\n".join(lines) + "\n")

    def __repr__(self):
        state = "empty" if self._nodes is None else f"{len(self._nodes)} kernels"
        return f"<{privateuse1_backend_name()} graph ({state})>"


class graph:    # noqa: N801 - torch's name
    """``with npusim.npu.graph(g):`` captures the block's npu work into ``g`` (torch.cuda.graph): it
    synchronizes, empties the cache and captures on ``stream`` (default: a side stream of its own)."""

    default_capture_stream = None

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode: str = "global",
                 enable_annotations: bool = False, check_input_liveness: bool = False):
        if stream is None and self.__class__.default_capture_stream is None:
            self.__class__.default_capture_stream = streams.Stream()
        self.pool = () if pool is None else (pool,)
        self.capture_stream = stream if stream is not None else self.__class__.default_capture_stream
        self.stream_ctx = streams.stream(self.capture_stream)
        self.cuda_graph = cuda_graph
        self.capture_error_mode = capture_error_mode
        self.check_input_liveness = check_input_liveness

    def __enter__(self):
        _npusim.npu.synchronize()
        _npusim.npu.empty_cache()
        self.stream_ctx.__enter__()
        try:
            self.cuda_graph.capture_begin(*self.pool, capture_error_mode=self.capture_error_mode,
                                          check_input_liveness=self.check_input_liveness)
        except BaseException:
            self.stream_ctx.__exit__(None, None, None)     # a refused capture leaves the current stream as it was
            raise

    def __exit__(self, *args):
        try:
            self.cuda_graph.capture_end()
        finally:
            self.stream_ctx.__exit__(*args)
