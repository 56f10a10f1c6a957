"""npusim: a PyTorch-style framework with a second device, ``npu``, on every machine.

``import npusim`` builds the host framework (``npusim.core``), registers the CPU
kernels, then plugs in the npu backend through the public PrivateUse1 extension
points, exactly as a third-party backend would.
"""
from __future__ import annotations

import sys as _sys

__version__ = "0.1.0"

from .core.dispatch import aten_ops as _aten_ops  # noqa: F401  (defines the aten operators)
from .native import dtype_guard as _dtype_guard  # noqa: F401  (before any dispatch function is generated)
from .api import tensor_methods as _tensor_methods  # noqa: F401  (binds Tensor methods)
from .core.c10.device import device
from .core.c10.device_context import get_default_device, set_default_device
from .core.dlpack import from_dlpack
from .core.c10.dtype import (  # noqa: F401
    bfloat16, bool, can_cast, double, dtype, finfo, float, float16, float32, float64, get_default_dtype, half,
    iinfo, int, int8, int16, int32, int64, long, promote_types, set_default_dtype, short, uint8,
)
from .core.factories import as_tensor, asarray, from_numpy, tensor
from .api.operators import *  # noqa: F401,F403  (torch's operator functions)
from .api.operators import __all__ as _functional_all
# more operator functions, each module binding its Tensor methods too
from .api.reductions_structure import *  # noqa: F401,F403  (median, index_add, diag, tensor_split...)
from .api.linear_algebra import *  # noqa: F401,F403  (det, inverse, svd...)
from .api.pointwise import *  # noqa: F401,F403  (acosh, erfc, xlogy, gcd...)
from .api import linear_algebra as _linear_algebra, pointwise as _pointwise
from .api.misc import *  # noqa: F401,F403  (searchsorted, meshgrid, windows, cov, flags...)
from .api import misc as _misc
from .api.spectral import istft, stft  # noqa: F401  (torch.stft / istft, and their Tensor methods)
from .api.math_extras import *  # noqa: F401,F403  (quantile, histogram, gradient, geqrf / ormqr...)
from .api.legacy_tensor_types import *  # noqa: F401,F403,E402  (FloatTensor & co.: torch's legacy constructors)
from .api.complex import *  # noqa: F401,F403  (real, imag, view_as_real, conj, polar, complex...)
from .core.c10.dtype import cdouble, cfloat, chalf, complex32, complex64, complex128  # noqa: F401,E402
from .api import reductions_structure as _reductions_structure
from .core.c10.memory_format import (  # noqa: F401
    channels_last, channels_last_3d, contiguous_format, layout, memory_format, preserve_format, strided,
)
from .core.dispatch.ops_namespace import ops
from .core.c10.generator import Generator, default_generator
from .core.c10.stream import Event, Stream
from .api.seeding import get_rng_state, initial_seed, manual_seed, seed, set_rng_state
from .api import seeding as _seeding
from .core.printing import get_printoptions, set_printoptions
from .api.factories import (  # noqa: F401
    arange, empty, empty_like, empty_strided, eye, full, full_like, linspace, ones, ones_like, scalar_tensor,
    zeros, zeros_like,
)
from .api.random import (  # noqa: F401
    _sample_dirichlet, _standard_gamma, bernoulli, binomial, multinomial, normal, poisson, rand, rand_like, randint,
    randint_like, randn, randn_like, randperm,
)
from .core.c10.storage import UntypedStorage
from .core.tensor import Size, Tensor
from .core import return_types  # noqa: F401
from . import library  # noqa: F401
from .core import autograd as _autograd_core  # noqa: F401  (registers the Autograd kernels)
from .core.autograd import (  # noqa: F401
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled,
)
from . import autograd  # noqa: F401
from .api import linalg  # noqa: F401
from .api import special  # noqa: F401
from . import fft  # noqa: F401  (torch.fft: the transforms are aten composites over three primitives)
from . import native as _native  # noqa: F401
from .native import cpu_registration as _cpu_registration  # noqa: F401
from .core.runtime import parallel_config as _parallel_config, thread_pool as _thread_pool
from .kernels import parallel as _kernels_parallel

# the array kernels split large ops over core's intra-op pool, sized by the thread setting
_parallel_config.on_num_threads_change(
    lambda n: _kernels_parallel.configure(n, _thread_pool.run_intraop, _parallel_config.GRAIN_SIZE))
from .core.runtime.parallel_config import (  # noqa: F401,E402
    get_num_interop_threads, get_num_threads, set_num_interop_threads, set_num_threads,
)
from .core.autocast import cpu_policy as _autocast_cpu_policy  # noqa: F401  (AutocastCPU kernels, as torch's core)
from .core.autocast.state import (  # noqa: F401
    autocast, autocast_decrement_nesting, autocast_increment_nesting, clear_autocast_cache, get_autocast_dtype,
    is_any_autocast_enabled, is_autocast_available, is_autocast_cache_enabled, is_autocast_enabled,
    set_autocast_cache_enabled, set_autocast_dtype, set_autocast_enabled,
)
from ._device_module import _register_device_module  # noqa: F401
from ._device_module import get_device, get_device_module  # noqa: F401,E402
from .core.c10.exceptions import AcceleratorError, OutOfMemoryError  # noqa: F401,E402  (torch's, shared by device modules)
from . import utils  # noqa: F401
from . import nn  # noqa: F401
from . import optim  # noqa: F401
from . import amp  # noqa: F401  (autocast, GradScaler, custom_fwd: every device type's)
from . import backend as _backend  # noqa: F401  (the npu, through the PrivateUse1 extension points)
from . import serialization  # noqa: F401  (archives; the npu registered its backend-meta hooks above)
from .serialization import load, save  # noqa: F401
from . import _utils  # noqa: F401
from . import accelerator  # noqa: F401
from . import cuda  # noqa: F401  (torch.cuda as in a build without CUDA, pointing to the npu)
from . import cpu  # noqa: F401  (torch.cpu: the cpu's device module for device-agnostic code)
from . import backends, onnx  # noqa: F401  (torch.backends' switches; torch.onnx, whose export is out of scope)
from .compile_eager import compile  # noqa: F401,A001  (runs the program eagerly: compilation is out of scope)
from . import profiler  # noqa: F401
from . import __config__, futures, jit  # noqa: F401  (parallel_info; Future; fork / wait)
from .core.dispatch.api_usage import log_api_usage_once as _log_api_usage_once, set_api_usage_logger  # noqa: F401

# torch.random, torch.linalg and torch.special are modules: so are npusim's, though they live in npusim.api
# (npusim.random is api/seeding.py, so no file shadows the stdlib's random)
random = _seeding
_sys.modules[__name__ + ".random"] = _seeding
_sys.modules[__name__ + ".linalg"] = linalg
_sys.modules[__name__ + ".special"] = special


def __getattr__(name):
    # npusim.distributed, distributions, func and testing load on first use: most programs never need them,
    # and import time matters
    if name in ("distributed", "distributions", "func", "testing"):
        import importlib
        return importlib.import_module("." + name, __name__)
    if name == "Storage":   # torch.Storage: the legacy storage class of the default dtype
        return _legacy_storage_types.default_storage_class()
    if name == "vmap":   # torch.vmap is torch.func.vmap
        from .func import vmap
        return vmap
    from .missing_names import explain
    why = explain(name)
    raise AttributeError(f"module 'npusim' has no attribute '{name}'" + (f": {why}" if why else ""))


__all__ = ["Tensor", "Size", "device", "dtype", "tensor", "as_tensor", "asarray", "from_numpy", "from_dlpack",
           "ops", "library", "utils", "UntypedStorage"] + list(_functional_all) + list(_reductions_structure.__all__) \
    + list(_linear_algebra.__all__) + list(_pointwise.__all__) + list(_misc.__all__) \
    + ["poisson", "binomial"]   # of api.random's names, the samplers of distributions (rand & co. unlisted)

# torch's nn ops in the top-level namespace, the *_copy functions and torch.<op>_ (names no module above has)
from .api.nn import *  # noqa: F401,F403,E402  (relu_, dropout, pdist...)
from .api.inplace import *  # noqa: F401,F403,E402  (exp_, index_reduce, view_copy...)
from .api import inplace as _inplace_functions, nn as _torch_namespace_nn  # noqa: E402
__all__ += list(_torch_namespace_nn.__all__) + list(_inplace_functions.__all__)
from .api import math_extras as _math_extras  # noqa: E402
__all__ += list(_math_extras.__all__)
# torch's functional recurrences, native norms, batch norm's sync steps and aten-form nn ops (aten's arguments)
from .api.nn_rnn_functions import *  # noqa: F401,F403,E402  (lstm, gru, lstm_cell...)
from ._lowrank import pca_lowrank, svd_lowrank  # noqa: E402  (torch/_lowrank.py's algorithms)
from ._lobpcg import lobpcg  # noqa: E402  (torch/_lobpcg.py's solver)
__all__ += ["pca_lowrank", "svd_lowrank", "lobpcg"]
from .api.nn_batch_norm_functions import *  # noqa: F401,F403,E402  (native_batch_norm, batch_norm_stats...)
from .api.nn_functions import *  # noqa: F401,F403,E402  (native_dropout, convolution, grid_sampler, ctc_loss...)
from .api.segment_reduce import segment_reduce  # noqa: F401,E402
from .api import nn_rnn_functions as _nn_rnn, nn_batch_norm_functions as _nn_bn, nn_functions as _nn_aten  # noqa: E402
__all__ += list(_nn_rnn.__all__) + list(_nn_bn.__all__) + list(_nn_aten.__all__) + ["segment_reduce"]

# torch's smaller top-level names: constants, build flags, anomaly switches, legacy helpers, dispatcher classes
from .api.torch_constants import e, inf, nan, newaxis, pi  # noqa: F401,E402
from .api.build_flags import (  # noqa: F401,E402
    has_lapack, has_mkl, has_openmp, has_spectral, init_num_threads, set_flush_denormal,
)
from .api.anomaly_switch import is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled  # noqa: F401,E402
from .api.default_tensor_type import set_default_tensor_type  # noqa: F401,E402
from .api.dlpack_legacy import to_dlpack  # noqa: F401,E402
from .api.worker_generator import thread_safe_generator  # noqa: F401,E402
from .api.fatal_error import FatalError  # noqa: F401,E402
from .api.tensor_identity import torch_is_distributed as is_distributed  # noqa: F401,E402  (and Tensor methods)
from .api import dim_order as _dim_order  # noqa: F401,E402  (Tensor.dim_order)
from .api import tensor_grad_dtype as _tensor_grad_dtype  # noqa: F401,E402  (Tensor.grad_dtype)
from .core.c10.dispatch_keys import DispatchKey, DispatchKeySet  # noqa: F401,E402
from .core.dispatch.op_tags import Tag, tag_aten_ops as _tag_aten_ops  # noqa: F401,E402
_tag_aten_ops()
from .futures import Future  # noqa: F401,E402
from .amp import GradScaler  # noqa: F401,E402

# torch's storage classes and the Tensor methods about storage and host memory (docs/storage.md)
from .core.c10.storage import StorageBase  # noqa: F401,E402
from .api.typed_storage import TypedStorage  # noqa: F401,E402
from .api.legacy_storage_types import *  # noqa: F401,F403,E402  (FloatStorage & co.: torch's legacy constructors)
from .api import legacy_storage_types as _legacy_storage_types  # noqa: E402
from .api.from_file import from_file  # noqa: F401,E402
from .api import tensor_storage_methods as _tensor_storage_methods  # noqa: F401,E402  (Tensor.storage() & co.)
from . import storage  # noqa: F401,E402  (npusim.storage, as torch.storage)
__all__ += ["TypedStorage", "from_file"] + list(_legacy_storage_types.__all__)

# help text for the public functions and Tensor methods that have none of their own (one table, as torch's)
from .api import docstrings as _docstrings  # noqa: E402
from .nn import functional as _nn_functional  # noqa: E402
for _namespace, _names in ((_sys.modules[__name__], __all__), (_nn_functional, dir(_nn_functional)),
                           (linalg, dir(linalg)), (special, dir(special))):
    _docstrings.install_function_docs(_namespace, [n for n in _names if not n.startswith("_")])
_docstrings.install_tensor_docs(Tensor, _sys.modules[__name__])
del _namespace, _names

_log_api_usage_once("python.import")

# torch 2.13's dtypes with limited support (uint16-uint64, float8_*, float4_e2m1fn_x2, int1-int7, uint1-uint7, bit)
from .core.c10.limited_dtypes import *  # noqa: F401,F403,E402
# torch.hash_tensor (and Tensor.hash_tensor)
from .api.hash_tensor import hash_tensor  # noqa: F401,E402
__all__ += ["hash_tensor"]

# torch's __all__ in its order (factories, grad modes, dtypes, seeding... included), then npusim's own names
from ._torch_all import TORCH_ALL as _TORCH_ALL  # noqa: E402
_me = _sys.modules[__name__]
__all__ = list(dict.fromkeys([n for n in _TORCH_ALL if hasattr(_me, n)] + __all__))
_docstrings.install_function_docs(_me, __all__)     # help text for the names torch's list added
del _me
