"""Name coverage against torch: per namespace, the public names torch has and npusim lacks.

Run ``python bench/coverage_vs_torch.py`` with torch installed. For each namespace (torch, Tensor methods, nn,
nn.functional, ..., the device module ``npusim.npu`` against ``torch.cuda``, backends) it counts torch's public
names, drops the ones out of scope (each by a named rule below), and prints how many of the rest npusim has, with
the percentage per namespace and in total. ``--missing`` lists the missing names, ``--excluded`` the names each
rule left out.

What counts as one of torch's public names: an attribute of the torch module (or class) that does not start with
``_``, is not a module (submodules are namespaces of their own here, or out of scope), and is torch's own (a value
whose ``__module__`` names a non-torch package, such as ``typing.Optional`` or ``datetime.timedelta`` re-exported
by torch's source, is not). ``torch.backends`` is counted as ``<submodule>.<name>`` for its in-scope submodules.
"""
from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
import types
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

# (label, torch module, npusim module); "Tensor" compares the classes' attributes.
NAMESPACES = [
    ("torch", "torch", "npusim"),
    ("Tensor", "torch.Tensor", "npusim.Tensor"),
    ("nn", "torch.nn", "npusim.nn"),
    ("nn.functional", "torch.nn.functional", "npusim.nn.functional"),
    ("nn.init", "torch.nn.init", "npusim.nn.init"),
    ("optim", "torch.optim", "npusim.optim"),
    ("optim.lr_scheduler", "torch.optim.lr_scheduler", "npusim.optim.lr_scheduler"),
    ("utils.data", "torch.utils.data", "npusim.utils.data"),
    ("autograd", "torch.autograd", "npusim.autograd"),
    ("amp", "torch.amp", "npusim.amp"),
    ("npu vs cuda", "torch.cuda", "npusim.npu"),
    ("accelerator", "torch.accelerator", "npusim.accelerator"),
    ("linalg", "torch.linalg", "npusim.linalg"),
    ("fft", "torch.fft", "npusim.fft"),
    ("special", "torch.special", "npusim.special"),
    ("distributions", "torch.distributions", "npusim.distributions"),
    ("distributed", "torch.distributed", "npusim.distributed"),
    ("profiler", "torch.profiler", "npusim.profiler"),
    ("testing", "torch.testing", "npusim.testing"),
    ("func", "torch.func", "npusim.func"),
    ("backends", "torch.backends", "npusim.backends"),
]

# torch.backends' submodules in scope; the others are other vendors' libraries (mps, miopen, mkldnn, kleidiai,
# nnpack, xnnpack), sparse (cusparselt), quantization (quantized) or the compiler's kernel DSLs (python_native).
BACKENDS_IN_SCOPE = ("cpu", "cuda", "cudnn", "mha", "mkl", "openmp", "opt_einsum")

# --- out-of-scope rules: group name -> {namespace label or "*": regular expression over the whole name} -----------
_SPARSE = (r".*sparse.*|.*_csr|.*_csc|.*_bsr|.*_bsc|(c?col|crow|row)_indices(_copy)?|indices(_copy)?|values_copy|"
           r"coalesce|is_coalesced|dense_dim|sparse_dim|to_dense|[hd]?smm|hspmm|hsmm|sspaddmm|saddmm|spmm")
_QUANT = (r".*quantiz.*|quantized_.*|q_.*|qint\d+|quint.*|qscheme|int_repr|dequantize|per_(channel|tensor)_.*|"
          r"fake_quantize.*|fbgemm_.*|choose_qparams.*|fused_moving_avg_obs_fake_quant|bits\d.*|Q[U]?Int.*Storage")
OUT_OF_SCOPE = {
    "compile/TorchScript/jit/fx/export": {
        "torch": r"compile|cond|while_loop|export|fork|wait|sym_\w+|Sym(Int|Float|Bool)|import_ir_module.*|"
                 r"parse_ir|parse_schema|parse_type_comment|merge_type_from_type_comment|PRIVATE_OPS|"
                 r"is_dynamo_compiling|compiled_with_cxx11_abi|get_file_path|prepare_multiprocessing_environment|"
                 r"LoggerBase|JITException|unify_type_list|AVG|SUM",
        "nn.functional": r"BroadcastingList\d|boolean_dispatch|assert_int_or_pair",
        "testing": r"FileCheck",
        # torch's C++ (pybind11) classes at the top level are the TorchScript IR and compiler: Graph, Node, Value,
        # the JIT types (IntType, ...), ScriptModule, CompilationUnit, ... (see _pybind_is_jit)
        "Tensor": r"module_load|apply_|map_|map2_",
    },
    "quantization": {"torch": _QUANT, "Tensor": _QUANT},
    # SparseAdam's step refuses dense gradients ("SparseAdam does not support dense gradients, please consider Adam
    # instead"): it is useless without sparse tensors
    # Tensor.values is a sparse COO tensor's values (torch raises on a dense tensor); torch.native_norm has sparse
    # kernels only (a dense tensor gets "Could not run 'aten::native_norm' with arguments from the 'CPU' backend")
    "sparse": {"torch": _SPARSE + r"|native_norm", "Tensor": _SPARSE + r"|values", "nn.functional": r"sparse_support_notes",
               "optim": r"SparseAdam"},
    # Tensor.index binds positions to functorch.dim's first-class dimensions (Dim objects), which npusim does not
    # have; func.rearrange, their one in-scope use, is written without them
    "first-class dimensions (functorch.dim)": {"Tensor": r"index"},
    "nested": {"*": r"nested.*|jagged|to_padded_tensor"},
    "other vendors' backends": {
        "torch": r"cudnn_.*|miopen_.*|mkldnn_.*",
        "*": r"to_mkldnn|.*_mps|mps|xpu|mtia|ipu|is_vulkan_available|"
             r".*autocast_(ipu|xla|xpu|hpu)_.*|is_xccl_available|is_ucc_available|native_channel_shuffle|"
             r"profiler_allow_cudagraph_cupti_lazy_reinit_cuda12|preferred_rocm_fa_library|is_ck_sdpa_available",
        # torch defines ProcessGroupGloo only when built with Gloo; npusim has no Gloo (is_gloo_available() is False,
        # mpi serves cpu tensors)
        "distributed": r"ProcessGroupGloo",
        # CUDA toolkit internals with no npu meaning: the runtime and library handles, nvcc's build flags
        "npu vs cuda": r"cudart|cudaStatus|CudaError|check_error|current_blas_handle|current_solver_handle|"
                       r"has_magma|get_gencode_flags|PYTORCH_RELEASES_CODE_CC|DEVICE_REQUIREMENT|GreenContext|"
                       r"CUDAPluggableAllocator|get_stream_from_external|ExternalStream",
    },
    "deprecated or removed": {
        # torch raises "deprecated ... and is now removed" for these, or documents them as deprecated
        "torch": r"lstsq|eig|symeig|solve|matrix_rank|chain_matmul|get_autocast_(cpu|gpu)_dtype|"
                 r"set_autocast_(cpu|gpu)_(dtype|enabled)|is_autocast_cpu_enabled|legacy_contiguous_format",
        "Tensor": r"lstsq|eig|symeig|solve|reinforce|volatile|resize|resize_as",
        "nn": r"NLLLoss2d|Container",
        "nn.functional": r"upsample|upsample_bilinear|upsample_nearest",
        "npu vs cuda": r"memory_cached|max_memory_cached|reset_max_memory_cached|has_half",
        # DataPipes (torch.utils.data.datapipes) are deprecated and frozen
        "utils.data": r".*DataPipe|DataChunk|functional_datapipe|guaranteed_datapipes_determinism|non_deterministic|"
                      r"runtime_validation|runtime_validation_disabled|argument_validation",
        "autograd": r"Variable|variable|NestedIOFunction",
    },
    "module-source helpers (not API)": {
        # names torch's module source defines for itself: docstring fragments, TYPE_CHECKING, re-imported Tensor,
        # __torch_function__ override plumbing, build flags
        "*": r"TYPE_CHECKING|USE_GLOBAL_DEPS|USE_RTLD_GLOBAL_WITH_LIBTORCH|.*_notes|common_args|factory_common_args|"
             r"multi_dim_common|handle_torch_function|has_torch_function.*|factory_kwargs|classproperty",
        "backends": r"ContextProp|PropModule|\w+Module|m|cuFFTPlanCache\w*|deprecated",
        "nn.functional": r"Tensor|GRID_SAMPLE_\w+",
        "nn.init": r"Tensor",
        "fft": r"Tensor",
        "special": r"Tensor",
    },
}


def _pybind_is_jit(name, value):
    """torch's top-level pybind11 classes are TorchScript's IR and compiler, except those listed as in scope."""
    in_scope = {"Generator", "Future", "Tag", "DispatchKey", "DispatchKeySet", "Stream", "Event", "Size", "dtype",
                "device", "layout", "memory_format", "finfo", "iinfo", "OutOfMemoryError", "AcceleratorError",
                "FatalError"}
    return type(value).__name__ == "pybind11_type" and name not in in_scope


def _is_torch_own(value):
    if isinstance(value, types.ModuleType):
        return False
    owner = getattr(value, "__module__", None)
    if not isinstance(owner, str) or isinstance(value, (int, float, str, bool)):
        return True                                  # constants (torch.pi, torch.float32 ...) count as torch's
    return owner.split(".")[0] == "torch"


def _resolve(path):
    module_path, _, attr = path.rpartition(".")
    try:
        return importlib.import_module(path)
    except ImportError:
        if not module_path:
            return None
    try:
        return getattr(importlib.import_module(module_path), attr)
    except (ImportError, AttributeError):
        return None


def _public_names(obj):
    names = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in dir(obj):
            if name.startswith("_"):
                continue
            try:
                value = getattr(obj, name)
            except Exception:                        # a lazily failing attribute is still a name
                value = None
            if isinstance(obj, type) or _is_torch_own(value):
                names[name] = value
    return names


def _backend_names(backends):
    names = {}
    for sub in BACKENDS_IN_SCOPE:
        module = getattr(backends, sub, None)
        if module is None:
            continue
        inner = getattr(module, "m", module)         # torch wraps some in a property module around .m
        subnames = dict(_public_names(inner))
        for klass_attr in vars(type(module)):
            if not klass_attr.startswith("_") and type(module) is not types.ModuleType:
                subnames[klass_attr] = None
        for name, value in subnames.items():
            names[f"{sub}.{name}"] = value
    return names


def _has(npusim_obj, label, name):
    if npusim_obj is None:
        return False
    if label == "backends":
        sub, _, attr = name.partition(".")
        module = getattr(npusim_obj, sub, None)
        return module is not None and hasattr(module, attr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return hasattr(npusim_obj, name)
        except Exception:
            return False


def _exclusion(label, name, value):
    """The out-of-scope group a name falls in, or None."""
    for group, rules in OUT_OF_SCOPE.items():
        for where, pattern in rules.items():
            if where in ("*", label) and re.fullmatch(pattern, name.rpartition(".")[2]):
                return group
    if label == "torch" and _pybind_is_jit(name, value):
        return "compile/TorchScript/jit/fx/export"
    return None


def count():
    """Per namespace: (in-scope torch names, missing names, {group: excluded names})."""
    import npusim  # noqa: F401  (imported so npusim's submodules resolve)
    rows = []
    for label, torch_path, npusim_path in NAMESPACES:
        torch_obj = _resolve(torch_path)
        npusim_obj = _resolve(npusim_path)
        names = _backend_names(torch_obj) if label == "backends" else _public_names(torch_obj)
        in_scope, excluded = [], {}
        for name, value in sorted(names.items()):
            group = _exclusion(label, name, value)
            if group is None:
                in_scope.append(name)
            else:
                excluded.setdefault(group, []).append(name)
        missing = [n for n in in_scope if not _has(npusim_obj, label, n)]
        rows.append((label, in_scope, missing, excluded))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missing", action="store_true", help="list the missing names per namespace")
    parser.add_argument("--excluded", action="store_true", help="list the names each out-of-scope rule left out")
    args = parser.parse_args(argv)
    import torch
    rows = count()
    print(f"npusim names against torch {torch.__version__} (in-scope public names)")
    print(f"{'namespace':<20} {'torch':>6} {'npusim':>6} {'missing':>7} {'coverage':>8}")
    total = have = 0
    for label, in_scope, missing, excluded in rows:
        n, m = len(in_scope), len(missing)
        total, have = total + n, have + n - m
        print(f"{label:<20} {n:>6} {n - m:>6} {m:>7} {100.0 * (n - m) / max(n, 1):>7.1f}%")
        if args.missing and missing:
            print("    missing: " + " ".join(missing))
        if args.excluded:
            for group, names in excluded.items():
                print(f"    out of scope ({group}): " + " ".join(names))
    print(f"{'total':<20} {total:>6} {have:>6} {total - have:>7} {100.0 * have / max(total, 1):>7.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
