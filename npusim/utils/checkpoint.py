"""``npusim.utils.checkpoint``: activation checkpointing (``torch.utils.checkpoint``).

A checkpointed function runs without keeping its intermediate activations; backward runs it again
(with the cpu and npu RNG states and the autocast state of the forward restored) and differentiates
the recomputed graph.

Both variants are built on a custom ``autograd.Function``, because npusim has no saved-tensor hooks
(``torch.autograd.graph.saved_tensors_hooks``), which torch's non-reentrant variant uses:

- ``use_reentrant=True`` is torch's ``CheckpointFunction``: the forward runs under ``no_grad``, the
  backward re-runs it and calls ``autograd.backward`` inside, which accumulates into the ``.grad`` of
  the parameters the function uses. As in torch, if no tensor input requires grad the output does not
  either (with the "None of the inputs have requires_grad=True" warning), and keyword arguments are
  rejected. Unlike torch, ``autograd.grad`` / ``backward(inputs=...)`` through it are not detected and
  refused: they give the right gradients for the checkpoint's inputs, but parameters used inside
  still have their ``.grad`` accumulated.
- ``use_reentrant=False`` runs the forward with grad enabled on detached inputs, walks the new graph
  to find the leaf tensors it reaches (the parameters), then drops that graph, so the activations
  are freed when the checkpoint returns (peak memory inside the segment is that of an ordinary
  forward; torch's variant never holds them). The inputs and those leaves are the inputs of the
  Function, so gradients reach parameters even when no input requires grad, ``autograd.grad`` and
  ``backward(inputs=...)`` work, keyword arguments are passed through and outputs may be nested
  tuples, lists and dicts. If the function uses a non-leaf tensor that requires grad and is not
  one of its arguments (a tensor with history captured from outside), the segment is not
  checkpointed: its graph is kept, with a warning, so gradients stay right.
  ``determinism_check="default"`` compares the shapes, dtypes and devices of the recomputed outputs
  with the forward's (torch compares every saved tensor); ``debug`` and ``early_stop`` are accepted
  and have no effect.
"""
from __future__ import annotations

import contextlib
import warnings

import npusim

from ..core.autograd.node import next_sequence_nr

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction", "check_backward_validity",
           "detach_variable", "get_device_states", "set_device_states", "noop_context_fn"]

_DEFAULT_DETERMINISM_MODE = "default"
_checkpoint_debug_enabled = None


class CheckpointError(RuntimeError):
    pass


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs):
    if isinstance(inputs, tuple):
        out = []
        for inp in inputs:
            if not isinstance(inp, npusim.Tensor):
                out.append(inp)
                continue
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            out.append(x)
        return tuple(out)
    raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: ", type(inputs).__name__)


def check_backward_validity(inputs) -> None:
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, npusim.Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


def _default_device_type():
    return npusim.api.seeding.privateuse1_backend_name()


def _get_device_module(device_type):
    return getattr(npusim, device_type, None)


def _flatten(obj, out):
    """The tensors of a nested tuple/list/dict, in order (the rest of the structure is kept by ``_rebuild``)."""
    if isinstance(obj, npusim.Tensor):
        out.append(obj)
    elif isinstance(obj, (tuple, list)):
        for o in obj:
            _flatten(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _flatten(o, out)
    return out


def _rebuild(obj, it):
    if isinstance(obj, npusim.Tensor):
        return next(it)
    if isinstance(obj, (tuple, list)):
        items = [_rebuild(o, it) for o in obj]
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):   # namedtuple
            return type(obj)(*items)
        return type(obj)(items)
    if isinstance(obj, dict):
        return type(obj)((k, _rebuild(v, it)) for k, v in obj.items())
    return obj


def _infer_device_type(*args):
    device_types = []
    for arg in _flatten(args, []):
        if arg.device.type != "cpu":
            device_types.append(arg.device.type)
    if len(device_types) > 1 and len(set(device_types)) > 1:
        warnings.warn("Tensor arguments, excluding CPU tensors, are detected on at least two types of devices. "
                      "Device state will only be saved for devices of a single device type, and the remaining "
                      "devices will be ignored. Consequently, if any checkpointed functions involve randomness, "
                      "this may result in incorrect gradients. (Note that if CUDA devices are among the devices "
                      "detected, it will be prioritized; otherwise, the first device encountered will be selected.)"
                      f"\nDevice types: {sorted(set(device_types))} first device type: {device_types[0]}",
                      stacklevel=2)
    return device_types[0] if device_types else _default_device_type()


def get_device_states(*args):
    """The ids of the non-cpu devices of the tensor arguments, and each one's RNG state."""
    ids = [a.get_device() for a in _flatten(args, []) if a.device.type not in ("cpu", "meta")]
    mod = _get_device_module(_infer_device_type(*args))
    return ids, [mod.get_rng_state(i) for i in ids]


def set_device_states(devices, states, *, device_type=None) -> None:
    mod = _get_device_module(_default_device_type() if device_type is None else device_type)
    for device, state in zip(devices, states):
        mod.set_rng_state(state, device)


def _get_autocast_kwargs(device_type):
    if npusim.amp.is_autocast_available(device_type):
        device_kwargs = {"enabled": npusim.is_autocast_enabled(device_type),
                         "dtype": npusim.get_autocast_dtype(device_type),
                         "cache_enabled": npusim.is_autocast_cache_enabled()}
    else:
        device_kwargs = None
    cpu_kwargs = {"enabled": npusim.is_autocast_enabled("cpu"), "dtype": npusim.get_autocast_dtype("cpu"),
                  "cache_enabled": npusim.is_autocast_cache_enabled()}
    return device_kwargs, cpu_kwargs


class _ForwardState:
    """What the recomputation restores: the RNG states and the autocast state of the forward."""

    def __init__(self, preserve_rng_state, args):
        self.preserve = preserve_rng_state
        self.device_type = _infer_device_type(*args)
        self.device_autocast, self.cpu_autocast = _get_autocast_kwargs(self.device_type)
        self.had_device = False
        if preserve_rng_state:
            self.cpu_state = npusim.get_rng_state()
            # as torch: never initialise the device by accident, only save its state if it is in use
            mod = _get_device_module(self.device_type)
            init = getattr(mod, "is_initialized", None)
            if init is not None and init():
                self.had_device = True
                self.devices, self.device_states = get_device_states(*args)

    def reset_rng(self):
        if self.preserve:
            npusim.set_rng_state(self.cpu_state)
            if self.had_device:
                set_device_states(self.devices, self.device_states, device_type=self.device_type)

    @contextlib.contextmanager
    def restored(self):
        devices = self.devices if self.preserve and self.had_device else []
        with npusim.random.fork_rng(devices=devices, enabled=self.preserve, device_type=self.device_type):
            self.reset_rng()
            dev_ctx = (npusim.amp.autocast(device_type=self.device_type, **self.device_autocast)
                       if self.device_autocast is not None else contextlib.nullcontext())
            with npusim.enable_grad(), dev_ctx, npusim.amp.autocast("cpu", **self.cpu_autocast):
                yield


class CheckpointFunction(npusim.autograd.Function):
    """The reentrant checkpoint (``use_reentrant=True``): recompute, then ``backward`` inside backward."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.fwd = _ForwardState(preserve_rng_state, args)
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if isinstance(arg, npusim.Tensor):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with npusim.no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        inputs = list(ctx.inputs)
        for i, idx in enumerate(ctx.tensor_indices):
            inputs[idx] = ctx.saved_tensors[i]
        with ctx.fwd.restored():
            detached_inputs = detach_variable(tuple(inputs))
            outputs = ctx.run_function(*detached_inputs)
        if isinstance(outputs, npusim.Tensor):
            outputs = (outputs,)
        outputs_with_grad, args_with_grad = [], []
        for i in range(len(outputs)):
            if isinstance(outputs[i], npusim.Tensor) and outputs[i].requires_grad:
                outputs_with_grad.append(outputs[i])
                args_with_grad.append(args[i])
        if len(outputs_with_grad) == 0:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        npusim.autograd.backward(outputs_with_grad, args_with_grad)
        grads = tuple(inp.grad if isinstance(inp, npusim.Tensor) else None for inp in detached_inputs)
        return (None, None) + grads


class _NonReentrantCheckpoint(npusim.autograd.Function):
    """``use_reentrant=False``: inputs are the checkpoint's tensor inputs and the leaves its graph reached."""

    @staticmethod
    def forward(ctx, state, *tensors):
        ctx.state = state
        ctx.save_for_backward(*tensors)
        outs = state.outputs
        state.outputs = None
        return outs

    @staticmethod
    def backward(ctx, *grad_outputs):
        s = ctx.state
        saved = ctx.saved_tensors
        n_in = len(s.input_pos)
        args, kwargs = s.rebuild_inputs(saved[:n_in])
        with s.fwd.restored(), s.recompute_ctx_fn():
            out = s.function(*args, **kwargs)
        outs = _flatten(out, [])
        if s.determinism_check == "default":
            meta = [(tuple(o.shape), o.dtype, o.device) for o in outs]
            if meta != s.out_meta:
                raise CheckpointError(
                    "torch.utils.checkpoint: Recomputed values for the following tensors have different metadata "
                    "than during the forward pass.\n" + "".join(
                        f"tensor at position {i}:\nsaved metadata: {a}\nrecomputed metadata: {b}\n"
                        for i, (a, b) in enumerate(zip(s.out_meta, meta)) if a != b)
                    + ("" if len(meta) == len(s.out_meta) else
                       f"number of outputs: {len(s.out_meta)} in the forward, {len(meta)} recomputed\n"))
        pairs = [(o, g) for o, g in zip(outs, grad_outputs) if o.requires_grad and g is not None]
        targets = list(s.detached_args) + list(saved[n_in:])
        wanted = [i for i, t in enumerate(targets) if t.requires_grad]
        grads = [None] * len(targets)
        if pairs and wanted:
            res = npusim.autograd.grad([o for o, _ in pairs], [targets[i] for i in wanted],
                                       [g for _, g in pairs], allow_unused=True)
            for i, g in zip(wanted, res):
                grads[i] = g
        s.detached_args = ()
        return (None,) + tuple(grads)


class _State:
    def __init__(self, function, preserve, args, kwargs, determinism_check, recompute_ctx_fn):
        self.function = function
        self.determinism_check = determinism_check
        self.recompute_ctx_fn = recompute_ctx_fn
        self.fwd = _ForwardState(preserve, (args, kwargs))
        self.structure = (args, kwargs)
        self.input_pos = list(range(len(_flatten((args, kwargs), []))))
        self.detached_args = ()

    def rebuild_inputs(self, tensors):
        """The arguments again, their tensors detached (requires_grad as the originals)."""
        det = []
        for t in tensors:
            d = t.detach()
            d.requires_grad = t.requires_grad
            det.append(d)
        self.detached_args = tuple(det)
        return _rebuild(self.structure, iter(det))


def _leaves_of(roots, inputs, seq0):
    """The leaves requiring grad that ``roots``' graph reaches, other than ``inputs``; None if it reaches an
    older node (a tensor with history from outside)."""
    input_ids = {id(t) for t in inputs}
    leaves, seen, stack = {}, set(), [r.grad_fn for r in roots if r.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        var = getattr(node, "variable", None)
        if var is not None:
            if id(var) not in input_ids:
                leaves.setdefault(id(var), var)
            continue
        if node._sequence_nr() < seq0:
            return None
        stack.extend(n for n, _ in node.next_functions)
    return list(leaves.values())


def _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check, args, kwargs):
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    if not npusim.is_grad_enabled():
        fwd_ctx, _ = context_fn()
        with fwd_ctx:
            return function(*args, **kwargs)
    fwd_ctx, recompute_ctx = context_fn()
    # the recomputation's context manager: context_fn gives it with the forward's, use that one
    used = [False]

    def recompute_ctx_fn():
        if used[0]:
            return context_fn()[1]
        used[0] = True
        return recompute_ctx

    state = _State(function, preserve, args, kwargs, determinism_check, recompute_ctx_fn)
    orig = _flatten((args, kwargs), [])
    dargs, dkwargs = state.rebuild_inputs(orig)
    seq0 = next_sequence_nr()
    with fwd_ctx:
        out = function(*dargs, **dkwargs)
    outs = _flatten(out, [])
    leaves = _leaves_of([o for o in outs if o.requires_grad], state.detached_args, seq0)
    if leaves is None:
        warnings.warn("checkpoint: the function uses a tensor with autograd history that is not one of its "
                      "arguments; this segment is not checkpointed (its activations are kept).", stacklevel=3)
        # the graph of that run starts at detached inputs: run again on the real ones, from the same RNG state
        del out, outs, dargs, dkwargs
        state.fwd.reset_rng()
        return function(*args, **kwargs)
    state.detached_args = ()
    state.out_meta = [(tuple(o.shape), o.dtype, o.device) for o in outs]
    state.outputs = tuple(o.detach() for o in outs)
    if not state.outputs:
        return out
    del dargs, dkwargs
    res = _NonReentrantCheckpoint.apply(state, *orig, *leaves)
    res = res if isinstance(res, tuple) else (res,)
    # outputs that did not require grad in the forward do not after it either
    final = [r if o.requires_grad else r.detach() for r, o in zip(res, outs)]
    return _rebuild(out, iter(final))


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn, determinism_check="default",
               debug=False, early_stop=True, **kwargs):
    """Run ``function(*args, **kwargs)`` without keeping its activations; backward recomputes them."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
            "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. use_reentrant=False "
            "is recommended, but if you need to preserve the current default behavior, you can pass "
            "use_reentrant=True. Refer to docs for more details on the differences between the two variants.",
            stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    return _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check, args, kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run ``functions`` (a list or ``nn.Sequential``) in ``segments`` chunks, all but the last checkpointed."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
            "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
            "use_reentrant=False is recommended, but if you need to preserve the current default behavior, you "
            "can pass use_reentrant=True. Refer to docs for more details on the differences between the two "
            "variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    if isinstance(functions, npusim.nn.Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
