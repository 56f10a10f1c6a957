"""The user-facing ``Tensor``: an array on a device, plus what torch keeps beside it.

A tensor holds its array (``_a``: NumPy on cpu and the emulated npu, CuPy on a
GPU), its device, its dispatch key set, the base it views (if any), its storage
(made lazily unless the device tracks memory), a version counter shared with its
views, and autograd metadata (None until gradients are involved).

Operators are attached by ``tensor_methods``; this module holds only state and
the properties that need no operator.
"""
from __future__ import annotations

import warnings

import numpy as np

from .c10 import dtype as _dt
from .c10 import limited_dtypes as _limited
from .c10.device import _TYPE_MAP, CPU
from .c10.device_hooks import _FACTORIES, _HOST_READ_HOOKS, _REFUSED, check_access, host_read, storage_factory
from . import inference_tensors as _inference
from .inference_tensors import INFERENCE_VC
from .c10.storage import UntypedStorage, array_address, array_root

_new = object.__new__
_meta = None    # core.autograd.meta, which imports this module: bound on first use (a function-level import
                # costs ~1.5 us a call, and optimizers read and write .grad every step)
_ndarray = np.ndarray
_FROM_NP = _dt.FROM_NUMPY
_C32 = _dt.COMPLEX32_NP
_C32_SET = frozenset({_C32})   # membership: no costly dtype ==
_COMPLEX_NP = frozenset(d.np for d in _dt.COMPLEX_DTYPES)
# inference_mode contexts open in any thread (core.autograd.grad_mode counts them): while none is open,
# make() pays one check for inference tensors
_INFERENCE_OPEN = 0


def _autograd_meta():
    global _meta
    if _meta is None:
        from .autograd import meta
        _meta = meta
    return _meta


def inference_contexts_changed(delta: int) -> None:
    global _INFERENCE_OPEN
    _INFERENCE_OPEN += delta


class Size(tuple):
    """The shape of a tensor (``torch.Size``)."""

    __slots__ = ()

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self):
        return f"npusim.Size([{', '.join(str(s) for s in self)}])"

    def __getitem__(self, item):
        r = tuple.__getitem__(self, item)
        return Size(r) if isinstance(item, slice) else r

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __reduce__(self):
        return (Size, (tuple(self),))


def _complex32_as_complex64(a):
    """complex32 values (NumPy's structured pair of float16) as complex64, for reading them out."""
    r = np.empty(a.shape, np.complex64)
    r.real, r.imag = a["real"], a["imag"]
    return r


def _real_scalar(v, c10_name):
    """A complex value read as a real number: c10 refuses a nonzero imaginary part."""
    if v.__class__ is complex:
        if v.imag:
            raise RuntimeError(f"value cannot be converted to type {c10_name} without overflow")
        return v.real
    return v


class Tensor:
    """A multi-dimensional array on a device (``torch.Tensor``)."""

    __slots__ = ("_a", "_device", "_ks", "_base", "_st", "_vc", "_am", "__dict__", "__weakref__")
    # NumPy defers to our reflected operators (np.float32(2) * t is a Tensor).
    __array_priority__ = 1000
    # The backend's metadata dict (c10::BackendMeta); set per tensor, in ``__dict__``, only when a backend uses it.
    _backend_meta = None
    # A subclass whose data is not its own array (vmap's BatchedTensor) sets this: ``_rewrap(detach)`` gives the
    # alias (detach: without autograd history) that make_view / make_alias would otherwise build from ``_a``.
    _rewrap = None

    def __new__(cls, *args, device=None, dtype=None):
        # torch.Tensor(data) / torch.Tensor(*sizes): the legacy float constructor.
        from .factories import legacy_tensor_new
        return legacy_tensor_new(cls, args, device)

    # --- basic facts ------------------------------------------------------------
    @property
    def dtype(self):
        return _FROM_NP[self._a.dtype]

    @property
    def device(self):
        return self._device

    @property
    def shape(self) -> Size:
        return Size(self._a.shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._a.shape)
        return self._a.shape[_wrap_dim(dim, self._a.ndim)]

    def dim(self) -> int:
        return self._a.ndim

    ndimension = dim

    @property
    def ndim(self) -> int:
        return self._a.ndim

    def numel(self) -> int:
        return int(self._a.size)

    nelement = numel

    def element_size(self) -> int:
        return self._a.itemsize

    @property
    def itemsize(self) -> int:
        return self._a.itemsize

    @property
    def nbytes(self) -> int:
        return int(self._a.nbytes)

    def stride(self, dim=None):
        a = self._a
        isz = a.itemsize
        strides = a.strides
        if a.size == 0 and not any(strides):
            strides = _contiguous_byte_strides(a.shape, isz)  # NumPy zeroes a fresh empty array's strides
        if dim is None:
            return tuple(s // isz for s in strides)
        return strides[_wrap_dim(dim, a.ndim)] // isz

    def storage_offset(self) -> int:
        st = self.untyped_storage()
        return (array_address(self._a) - st.data_ptr()) // self._a.itemsize

    def is_contiguous(self, memory_format=None) -> bool:
        if memory_format not in (None, "contiguous_format"):
            from .c10.memory_format import is_contiguous_in
            return is_contiguous_in(self, memory_format)
        return bool(self._a.flags.c_contiguous)

    def is_floating_point(self) -> bool:
        dt = self._a.dtype
        return dt.kind == "f" or dt == _dt.bfloat16.np or dt.kind == "V" and _FROM_NP[dt].is_floating_point

    def is_complex(self) -> bool:
        dt = self._a.dtype
        return dt in _COMPLEX_NP    # complex32 included: NumPy's structured pair of float16

    def is_signed(self) -> bool:
        return self.dtype.is_signed

    @property
    def is_cpu(self) -> bool:
        return self._device is CPU

    @property
    def is_cuda(self) -> bool:
        # under a device map ("cuda" standing for the npu) the mapped device's tensors are "cuda" ones
        typ = self._device._type
        return typ == "cuda" or (bool(_TYPE_MAP) and _TYPE_MAP.get("cuda") == typ)

    @property
    def is_meta(self) -> bool:
        return self._device._type == "meta"

    is_sparse = False
    is_sparse_csr = False
    is_quantized = False
    is_mkldnn = False
    is_nested = False
    # device types npusim has no backend for (and a PrivateUse1 backend cannot take their names)
    is_xpu = is_mps = is_xla = is_ipu = is_maia = is_mtia = is_vulkan = False

    @property
    def layout(self):
        from .c10.memory_format import strided
        return strided

    def get_device(self) -> int:
        return -1 if self._device is CPU else self._device.index

    # --- storage and versions ---------------------------------------------------
    def untyped_storage(self) -> UntypedStorage:
        return self._st_of()

    def _st_of(self) -> UntypedStorage:
        st = self._st
        if st is None:
            src = self._base if self._base is not None else self
            st = src._st
            if st is None:
                st = src._st = UntypedStorage._wrap(array_root(src._a), src._device)
            self._st = st
        return st

    def data_ptr(self) -> int:
        return array_address(self._a)

    @property
    def _version(self) -> int:
        vc = self._vc
        if vc is INFERENCE_VC:
            raise RuntimeError(_inference.VERSION_MESSAGE)
        return vc[0] if vc is not None else 0

    def _bump_version(self) -> None:
        vc = self._vc
        if vc is None:
            self._vc = [1]
        elif vc is INFERENCE_VC:
            _inference.check_write(self)   # the dispatcher refused earlier; this guards direct writers
        else:
            vc[0] += 1

    def is_inference(self) -> bool:
        """Whether this tensor was made under inference_mode (or views one)."""
        return self._vc is INFERENCE_VC

    def _is_view(self) -> bool:
        return self._base is not None

    # --- conversion to Python and NumPy ------------------------------------------
    def item(self):
        a = self._a
        if a.size != 1:
            raise RuntimeError(f"a Tensor with {a.size} elements cannot be converted to Scalar")
        if self._device is not CPU:
            a = _host_array(self)
        if a.dtype in _C32_SET:
            a = _complex32_as_complex64(a)
        elif a.dtype in _limited.BYTE_TAGGED_NP:     # bytes with a dtype tag: torch has no scalar of them
            raise NotImplementedError(f"\"_local_scalar_dense_{self._device.type}\" not implemented for "
                                      f"'{_dt.SCALAR_TYPE_NAME[self.dtype]}'")
        v = a.reshape(()).item() if a.__class__ is _ndarray else a.item()
        if a.dtype == _dt.bfloat16.np or a.dtype in _limited.FLOAT8_NP:
            v = float(v)
        return v

    def tolist(self):
        a = _host_array(self) if self._device is not CPU else self._a
        if a.dtype == _dt.bfloat16.np or a.dtype in _limited.FLOAT8_NP:
            a = a.astype(np.float32)
        elif a.dtype in _C32_SET:
            a = _complex32_as_complex64(a)
        elif a.dtype in _limited.BYTE_TAGGED_NP:
            raise RuntimeError("load_scalar: invalid type")
        return a.tolist()

    def numpy(self, *, force=False):
        if force:
            return _host_array(self.detach()) if self._device is not CPU else self._a
        if self._device is not CPU:
            raise TypeError(f"can't convert {self._device} device type tensor to numpy. Use Tensor.cpu() to "
                            f"copy the tensor to host memory first.")
        if self.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                               "instead.")
        if self._a.dtype == _dt.bfloat16.np:
            raise TypeError("Got unsupported ScalarType BFloat16")
        if self._a.dtype in _C32_SET:
            raise TypeError("Got unsupported ScalarType ComplexHalf")
        if self._a.dtype in _limited.FLOAT8_NP or self._a.dtype in _limited.BYTE_TAGGED_NP:
            raise TypeError(f"Got unsupported ScalarType {_dt.SCALAR_TYPE_NAME[self.dtype]}")
        return self._a

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()  # torch's __array__ goes through numpy(): same device, grad and dtype errors
        if dtype is not None and np.dtype(dtype) != a.dtype:
            return a.astype(dtype)
        return a.copy() if copy else a

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        from .dlpack import export_dlpack
        return export_dlpack(self, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self):
        from .dlpack import dlpack_device
        return dlpack_device(self)

    # --- Python protocol -----------------------------------------------------------
    def __len__(self):
        if self._a.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._a.shape[0]

    def __iter__(self):
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self):
        n = self._a.size
        if n == 1:
            return bool(self.item())
        if n == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")

    def __int__(self):
        return int(_real_scalar(self._scalar_for("int"), "int64_t"))

    def __float__(self):
        return float(_real_scalar(self._scalar_for("float"), "double"))

    def __complex__(self):
        return complex(self._scalar_for("complex"))

    def __index__(self):
        if self._a.dtype.kind not in "iub" or self._a.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def _scalar_for(self, what):
        if self._a.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __hash__(self):
        return id(self)

    def __contains__(self, element):
        if not isinstance(element, (Tensor, int, float, bool, np.number, np.bool_)):
            raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                               f"{type(element)}.")
        return bool((self == element).any().item())

    def __repr__(self, *, tensor_contents=None):
        from .printing import tensor_repr
        return tensor_repr(self)

    def __format__(self, spec):
        if self._a.ndim == 0 and spec:
            return self.item().__format__(spec)
        return object.__format__(self, spec) if spec else repr(self)

    def __reduce_ex__(self, protocol):
        from .pickling import reduce_tensor
        return reduce_tensor(self)

    def __copy__(self):
        """A new tensor over the same memory (torch's shallow copy shares the storage)."""
        new = make_alias(self._a, self)
        if new._vc is not INFERENCE_VC:
            new._vc = None
        if self.requires_grad:
            new.requires_grad_(True)
        return new

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                               "protocol at the moment.  If you were attempting to deepcopy a module, this may "
                               "be because of a npusim.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        new = _deepcopy_data(self, memo)
        if type(self) is not Tensor:
            new = type(self)._from_tensor_for_copy(new, self)
        new.requires_grad_(self.requires_grad)
        if self.grad is not None:
            new.grad = self.grad.__deepcopy__(memo)
        if self.__dict__:
            import copy
            new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        memo[id(self)] = new
        return new

    # --- autograd state (the engine lives in core.autograd) -----------------------
    @property
    def requires_grad(self) -> bool:
        am = self._am
        return am is not None and am.requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        (_meta or _autograd_meta()).set_requires_grad(self, requires_grad)
        return self

    @property
    def grad(self):
        am = self._am
        if am is None:
            return None
        if am.grad_fn is None or am.retains_grad:
            return am.grad      # read_grad's answer without its warning (a leaf, or a non-leaf that retains it)
        return (_meta or _autograd_meta()).read_grad(self)

    @grad.setter
    def grad(self, value):
        (_meta or _autograd_meta()).write_grad(self, value)

    @grad.deleter
    def grad(self):
        (_meta or _autograd_meta()).write_grad(self, None)

    @property
    def grad_fn(self):
        am = self._am
        return None if am is None else am.grad_fn

    @property
    def is_leaf(self) -> bool:
        am = self._am
        return am is None or am.grad_fn is None

    @property
    def data(self):
        # Like detach() but with a version counter of its own: in-place writes through .data are
        # invisible to autograd's saved-tensor checks, as in torch.
        t = make_alias(self._a, self)
        if t._vc is not INFERENCE_VC:   # an inference tensor's .data is one too
            t._vc = None
        return t

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, not {type(value).__name__}")
        # Swap the payload but keep this tensor's identity and autograd state (torch's set_data).
        rg = self.requires_grad
        self._a = value._a
        self._device = value._device
        self._ks = value._device._grad_ks if rg else value._device._ks
        self._st = value._st_of()
        self._base = None
        if value._backend_meta is not None or self._backend_meta is not None:
            self._backend_meta = value._backend_meta  # set_data takes the new data's backend metadata

    @property
    def output_nr(self) -> int:
        am = self._am
        return 0 if am is None else am.output_nr

    # --- transposes that read like attributes ---------------------------------------
    @property
    def T(self):  # noqa: N802 - torch's name
        n = self._a.ndim
        if n == 2:
            return self.t()
        if n == 0:
            warnings.warn("Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases.",
                          UserWarning, stacklevel=2)
        else:
            warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
                          "deprecated and it will throw an error in a future release. Consider `x.mT` to transpose "
                          "batches of matrices or `x.permute(*npusim.arange(x.ndim - 1, -1, -1))` to reverse the "
                          "dimensions of a tensor.", UserWarning, stacklevel=2)
        return self.permute(*range(n - 1, -1, -1))

    @property
    def mT(self):  # noqa: N802
        if self._a.ndim < 2:
            raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got "
                               f"{self._a.ndim}-D tensor.")
        return self.transpose(-2, -1)

    @property
    def H(self):  # noqa: N802
        t = self.T
        return t.conj() if self.is_complex() else t     # the conjugate transpose

    @property
    def mH(self):  # noqa: N802
        t = self.mT
        return t.conj() if self.is_complex() else t


# --- construction helpers used by kernels ----------------------------------------

def make(a, dev) -> Tensor:
    """A new tensor owning ``a`` (a fresh array) on ``dev``."""
    t = _new(Tensor)
    t._a = a
    t._device = dev
    t._ks = dev._ks
    t._base = None
    t._vc = INFERENCE_VC if _INFERENCE_OPEN and _inference.grad_tls.inference else None
    t._am = None
    if dev is CPU:
        t._st = None
    else:
        try:    # storage_factory's memo, read here: every npu op makes its result through this line
            f = _FACTORIES[id(dev)]
        except KeyError:
            f = storage_factory(dev)
        t._st = f(a) if f is not None else None
    return t


def make_view(a, base: Tensor) -> Tensor:
    """A tensor viewing ``base``'s memory through the array ``a``; shares its version counter."""
    if base.__class__ is not Tensor and base._rewrap is not None:
        return base._rewrap(False)
    t = _new(Tensor)
    t._a = a
    dev = t._device = base._device
    t._ks = dev._ks
    root = base._base
    t._base = root if root is not None else base
    t._st = base._st
    vc = base._vc
    if vc is None:
        vc = base._vc = [0]
    t._vc = vc
    t._am = None
    return t


def make_alias(a, base: Tensor) -> Tensor:
    """Like make_view, for aliases torch does not report as views (detach)."""
    if base.__class__ is not Tensor and base._rewrap is not None:
        return base._rewrap(True)
    t = make_view(a, base)
    t._base = None
    t._st = base._st_of()
    if base._backend_meta is not None:  # detach and shallow copies keep it (torch's copy_tensor_metadata)
        t._backend_meta = dict(base._backend_meta)
    return t


def tensor_over_storage(st: UntypedStorage) -> Tensor:
    """A 1-D uint8 tensor aliasing all bytes of ``st``."""
    t = _new(Tensor)
    t._a = st._bytes()
    t._device = st._device
    t._ks = st._device._ks
    t._base = None
    t._st = st
    t._vc = None
    t._am = None
    return t


def _deepcopy_data(t: Tensor, memo) -> Tensor:
    """A copy of ``t``'s data; tensors that shared memory in ``memo``'s copy keep sharing it (as in torch)."""
    a = t._a
    root = array_root(a)
    if a.__class__ is not _ndarray or not (root.flags.c_contiguous or root.flags.f_contiguous):
        return t.detach().clone()
    key = ("npusim-storage", id(root))
    new_root = memo.get(key)
    if new_root is None:
        new_root = memo[key] = root.copy(order="K")
        memo.setdefault("npusim-keep", []).append(root)  # keep id(root) from being reused while copying
    offset = array_address(a) - array_address(root)
    buf = new_root.reshape(-1, order="A").view(np.uint8)
    r = np.ndarray(a.shape, a.dtype, buffer=buf, offset=offset, strides=a.strides)
    return make(r, t._device)


def _contiguous_byte_strides(shape, itemsize):
    """torch's contiguous strides (size-0 and size-1 dims count as 1), in bytes."""
    out = []
    acc = itemsize
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def _host_array(t: Tensor):
    """A NumPy copy (or alias, for emulated devices) of a non-cpu tensor's data."""
    if _REFUSED:    # a child forked after its parent initialised the device may not read it
        check_access(t._device)
    if _HOST_READ_HOOKS:    # a synchronizing read: the backend's sync checks
        host_read(t._device)
    a = t._a
    if a.__class__ is _ndarray:
        return a
    return a.get()


def _wrap_dim(dim, ndim, *, allow_scalar=True) -> int:
    """Normalise a possibly negative dim, raising torch's IndexError when out of range."""
    if dim.__class__ is not int:
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
            if isinstance(dim, Tensor) and dim.numel() == 1 and not dim.is_floating_point():
                dim = int(dim.item())
            else:
                raise TypeError(f"dim must be an int, not {type(dim).__name__}")
        dim = int(dim)
    n = ndim if ndim > 0 else 1
    if -n <= dim < n:
        return dim + n if dim < 0 else dim
    raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
