"""``ExecutionTraceObserver``: torch's execution trace, a JSON record of every operator call with its arguments
and results (tensors by id, storage, offset, sizes and strides), in torch's Chakra schema.

Between ``start()`` and ``stop()`` a record_function callback (asking for inputs and outputs) turns each op,
backward node and user scope into a node: ``ctrl_deps`` is the enclosing node (a thread's root node at the top),
``inputs``/``outputs`` hold ``values``, ``shapes``, ``types`` and ``strides``, ``attrs`` torch's attributes
(``rf_id``, ``seq_id``, ``scope``, ``tid``, ``op_schema``...). Nodes are written as they finish; the file is
complete once ``unregister_callback()`` (or ``cleanup()``) has run. Node, tensor and storage ids share one counter,
as torch's do. Process-group configuration records and the replay extras (generated kernels) are not written:
npusim generates no kernels.
"""
from __future__ import annotations

import gzip
import json
import os
import tempfile
import threading
import time
import weakref
from warnings import warn

from ..core.c10.device import device as _device_type
from ..core.c10.dtype import dtype as _dtype_type
from ..core.dispatch.record_function import (
    BACKWARD_FUNCTION, FUNCTION, RecordFunctionCallback, add_global_callback, remove_callback,
)
from ..core.tensor import Tensor

SCHEMA = "1.1.1-chakra.0.0.4"
_ROOT_SCOPE = 7                      # torch's RecordScope::USER_SCOPE, which its root nodes carry
_CPP_TYPE = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
             "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
             "uint8": "unsigned char", "bool": "bool"}
_SCALAR_TYPE = {"uint8": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "float16": 5, "float32": 6, "float64": 7,
                "bool": 11, "bfloat16": 15}
_MEMORY_FORMAT = {"contiguous_format": 0, "preserve_format": 1, "channels_last": 2, "channels_last_3d": 3}


class _Recorder:
    """The nodes of one observer, with its id counter and the per-thread stacks of open nodes."""

    def __init__(self):
        self.lock = threading.Lock()
        self.next_id = 2                      # 1 is the process node
        self.nodes = []
        self.tensor_ids = {}                  # id(tensor) -> (weakref, tensor id)
        self.storage_ids = {}                 # (device, data pointer) -> storage id
        self.threads = {}                     # thread ident -> (tid, root node id)
        self.local = threading.local()

    def new_id(self) -> int:
        with self.lock:
            self.next_id += 1
            return self.next_id - 1

    # --- values --------------------------------------------------------------------------------------------
    def _tensor_id(self, t) -> int:
        entry = self.tensor_ids.get(id(t))
        if entry is not None and entry[0]() is t:
            return entry[1]
        tid = self.new_id()
        self.tensor_ids[id(t)] = (weakref.ref(t), tid)
        return tid

    def _storage_id(self, t) -> int:
        key = (str(t.device), t.untyped_storage().data_ptr())
        sid = self.storage_ids.get(key)
        if sid is None:
            sid = self.storage_ids[key] = self.new_id()
        return sid

    def encode(self, v):
        """(value, shape, type, strides) of one argument or result, as torch writes them."""
        if isinstance(v, Tensor):
            name = str(v.dtype).rpartition(".")[2]
            value = [self._tensor_id(v), self._storage_id(v), v.storage_offset(), v.numel(), v.element_size(),
                     str(v.device)]
            return value, list(v.shape), f"Tensor({_CPP_TYPE.get(name, name)})", list(v.stride())
        if v is None:
            return "<None>", [], "None", []
        if isinstance(v, bool):
            return v, [], "Bool", []
        if isinstance(v, int):
            return v, [], "Int", []
        if isinstance(v, float):
            return v, [], "Double", []
        if isinstance(v, _dtype_type):
            return _SCALAR_TYPE.get(str(v).rpartition(".")[2], -1), [], "Int", []
        if isinstance(v, _device_type):
            return str(v), [], "Device", []
        if isinstance(v, str):
            if v in _MEMORY_FORMAT:
                return _MEMORY_FORMAT[v], [], "Int", []
            return v, [], "String", []
        if isinstance(v, (list, tuple)):
            parts = [self.encode(x) for x in v]
            return ([p[0] for p in parts], [p[1] for p in parts],
                    "GenericList[" + ",".join(p[2] for p in parts) + "]", [p[3] for p in parts])
        return "<None>", [], type(v).__name__, []

    def encode_all(self, values) -> dict:
        parts = [self.encode(v) for v in (values or ())]
        return {"values": [p[0] for p in parts], "shapes": [p[1] for p in parts], "types": [p[2] for p in parts],
                "strides": [p[3] for p in parts]}

    # --- nodes ---------------------------------------------------------------------------------------------
    def _thread(self):
        ident = threading.get_ident()
        entry = self.threads.get(ident)
        if entry is None:
            tid, root = len(self.threads) + 1, self.new_id()
            entry = self.threads[ident] = (tid, root)
            self.nodes.append(_node(root, "[pytorch|profiler|execution_trace|thread]", 1, _empty(), _empty(),
                                    _attrs(0, 0, -1, _ROOT_SCOPE, tid, 0, "")))
        return entry

    def enter(self, fn):
        tid, root = self._thread()
        stack = getattr(self.local, "stack", None)
        if stack is None:
            stack = self.local.stack = []
        node_id = self.new_id()
        parent = stack[-1][0] if stack else root
        stack.append((node_id, parent, tid))
        return node_id, self.encode_all(fn.inputs)

    def exit(self, fn, ctx) -> None:
        node_id, inputs = ctx
        stack = self.local.stack
        while stack and stack[-1][0] != node_id:      # a scope left by an exception: drop what it left open
            stack.pop()
        if not stack:
            return
        _, parent, tid = stack.pop()
        backward = fn.scope == BACKWARD_FUNCTION
        schema = f"{fn.op._ns}::{fn.op._schema}" if fn.scope == FUNCTION and fn.op is not None else ""
        attrs = _attrs(fn.handle, parent if backward else 0, fn.seq_nr, int(fn.scope), tid, 1 if backward else 0,
                       schema)
        self.nodes.append(_node(node_id, fn.name, parent, inputs, self.encode_all(fn.outputs), attrs))


def _empty() -> dict:
    return {"values": [], "shapes": [], "types": [], "strides": []}


def _attrs(rf_id, fw_parent, seq_id, scope, tid, fw_tid, schema) -> list:
    return [{"name": "rf_id", "type": "uint64", "value": rf_id},
            {"name": "fw_parent", "type": "uint64", "value": fw_parent},
            {"name": "seq_id", "type": "int64", "value": seq_id},
            {"name": "scope", "type": "uint64", "value": scope},
            {"name": "tid", "type": "uint64", "value": tid},
            {"name": "fw_tid", "type": "uint64", "value": fw_tid},
            {"name": "op_schema", "type": "string", "value": schema},
            {"name": "kernel_backend", "type": "string", "value": ""},
            {"name": "kernel_file", "type": "string", "value": ""},
            {"name": "tensor_range", "type": "string", "value": ""}]


def _node(node_id, name, parent, inputs, outputs, attrs) -> dict:
    return {"id": node_id, "name": name, "ctrl_deps": parent, "inputs": inputs, "outputs": outputs, "attrs": attrs}


class ExecutionTraceObserver:
    """Records an execution trace into a file: ``register_callback(path)``, then ``start()`` / ``stop()`` around
    what to record, and ``unregister_callback()`` to finish the file (a path ending in ``.gz`` is gzipped)."""

    def __init__(self) -> None:
        self._registered = False
        self._execution_trace_running = False
        self.extra_resources_collection = False
        self.resources_dir: str = ""
        self.output_file_path: str = ""
        self.output_file_path_observer: str = ""
        self._recorder = None
        self._handle = None
        self._start_ts = 0

    def __del__(self) -> None:
        self.unregister_callback()

    @staticmethod
    def build_execution_trace_obs_from_env():
        """An observer writing to a temporary ``.et.json`` file when ``ENABLE_PYTORCH_EXECUTION_TRACE=1``, else
        None (``ENABLE_PYTORCH_EXECUTION_TRACE_EXTRAS=1`` also asks for the replay extras)."""
        if os.environ.get("ENABLE_PYTORCH_EXECUTION_TRACE", "0") != "1":
            return None
        try:
            with tempfile.NamedTemporaryFile("w+t", suffix=".et.json", delete=False) as fp:
                filename = fp.name
        except Exception as e:
            warn(f"Execution trace will not be recorded. Exception on creating default temporary file: {e}",
                 stacklevel=2)
            return None
        et = ExecutionTraceObserver()
        et.register_callback(filename)
        et.set_extra_resource_collection(os.environ.get("ENABLE_PYTORCH_EXECUTION_TRACE_EXTRAS", "0") == "1")
        return et

    def set_extra_resource_collection(self, val) -> None:
        """Ask for the replay extras' directory next to the trace (``<trace>_resources``)."""
        self.extra_resources_collection = val
        if self.extra_resources_collection:
            self.get_resources_dir(can_create=True)

    def register_callback(self, output_file_path: str) -> "ExecutionTraceObserver":
        """Attach the observer, to write to ``output_file_path``; a second call while attached does nothing."""
        if not self._registered:
            self.output_file_path = output_file_path
            self.output_file_path_observer = output_file_path
            self._recorder = _Recorder()
            self._start_ts = time.monotonic_ns() // 1_000_000
            self._registered = True
        return self

    def get_resources_dir(self, can_create=False):
        """The directory of the replay extras, or None when they are not collected (or it cannot be made)."""
        if not self.extra_resources_collection:
            return None
        if self.resources_dir:
            return self.resources_dir
        path = ExecutionTraceObserver.get_resources_dir_for_et_path(self.output_file_path, create_dir=can_create)
        if not path:
            return None
        self.resources_dir = path
        return self.resources_dir

    @staticmethod
    def get_resources_dir_for_et_path(trace_path, create_dir: bool = False):
        """``<trace name>_resources`` beside ``trace_path``: its path if it exists (or was made), else None."""
        work_dir, file_name = os.path.split(trace_path)
        resource_dir = os.path.join(work_dir, os.path.splitext(file_name)[0] + "_resources")
        if not os.path.exists(resource_dir):
            if not create_dir:
                return None
            try:
                os.mkdir(resource_dir)
            except Exception:
                warn(f"Execution trace exception when creating {resource_dir}", stacklevel=2)
                return None
        return resource_dir

    def unregister_callback(self) -> None:
        """Stop, detach and write the finished trace file."""
        if not getattr(self, "_registered", False):
            return
        self.stop()
        self._write()
        self._registered = False
        self._recorder = None

    @property
    def is_registered(self):
        """Whether the observer is attached."""
        return self._registered

    def is_running(self):
        """Whether the observer is recording."""
        return self._execution_trace_running

    def start(self) -> None:
        """Start recording (when attached)."""
        if self._registered and not self._execution_trace_running:
            recorder = self._recorder
            callback = RecordFunctionCallback(recorder.enter, recorder.exit).needs_inputs(True).needs_outputs(True)
            self._handle = add_global_callback(callback)
            self._execution_trace_running = True

    def stop(self) -> None:
        """Stop recording; what was recorded stays for the file."""
        if self._execution_trace_running:
            remove_callback(self._handle)
            self._handle = None
            self._execution_trace_running = False

    def cleanup(self) -> None:
        """``unregister_callback()``."""
        self.unregister_callback()

    def get_output_file_path(self):
        """The trace file's path, or None before ``register_callback``."""
        return self.output_file_path or None

    def _write(self) -> None:
        recorder = self._recorder
        nodes = list(recorder.nodes)
        nodes.append(_node(1, "[pytorch|profiler|execution_trace|process]", 1, _empty(), _empty(),
                           _attrs(0, 0, -1, _ROOT_SCOPE, 0, 0, "")))
        trace = {"schema": SCHEMA, "pid": os.getpid(), "time": time.strftime("%Y-%m-%d %H:%M:%S"),
                 "start_ts": self._start_ts, "nodes": nodes, "finish_ts": time.monotonic_ns() // 1_000_000}
        path = self.output_file_path
        opener = gzip.open if path.endswith("gz") else open
        with opener(path, "wt") as f:
            json.dump(trace, f)


__all__ = ["ExecutionTraceObserver"]
