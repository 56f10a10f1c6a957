"""torch's smaller top-level names and Tensor methods: constants, build flags, anomaly switches, legacy helpers,
dispatcher classes, dim_order, as_subclass & co."""
import math
import warnings

import numpy as np
import pytest

import npusim


def test_constants():
    assert npusim.pi == math.pi and npusim.e == math.e and npusim.inf == math.inf
    assert math.isnan(npusim.nan) and npusim.newaxis is None
    x = npusim.arange(3)
    assert x[npusim.newaxis].shape == (1, 3)


def test_build_flags_answer_for_npusim():
    assert npusim.has_lapack is True
    assert npusim.has_mkl is npusim.backends.mkl.is_available()
    assert npusim.has_openmp is npusim.backends.openmp.is_available()
    assert npusim.has_spectral is hasattr(npusim, "fft")


def test_set_flush_denormal_takes_a_bool():
    assert npusim.set_flush_denormal(True) is False and npusim.set_flush_denormal(False) is False
    with pytest.raises(RuntimeError, match="flush_denormal expects a bool, but got int"):
        npusim.set_flush_denormal(1)
    with pytest.raises(TypeError):
        npusim.set_flush_denormal()


def test_init_num_threads_keeps_the_count():
    n = npusim.get_num_threads()
    assert npusim.init_num_threads() is None and npusim.get_num_threads() == n


def test_anomaly_switches():
    try:
        npusim.set_anomaly_enabled(True)
        assert npusim.is_anomaly_enabled() and npusim.is_anomaly_check_nan_enabled()
        assert npusim.autograd.is_anomaly_enabled()
        npusim.set_anomaly_enabled(True, False)
        assert npusim.is_anomaly_enabled() and not npusim.is_anomaly_check_nan_enabled()
    finally:
        npusim.set_anomaly_enabled(False)
    assert not npusim.is_anomaly_enabled() and npusim.is_anomaly_check_nan_enabled()
    with pytest.raises(TypeError, match="argument 'enabled' \\(position 1\\) must be bool, not int"):
        npusim.set_anomaly_enabled(1)


def test_anomaly_switch_makes_the_engine_check_nan(device):
    x = npusim.tensor([0.0], device=device, requires_grad=True)
    try:
        npusim.set_anomaly_enabled(True)
        with pytest.raises(RuntimeError, match="returned nan values"):
            (x / x).sum().backward()
    finally:
        npusim.set_anomaly_enabled(False)


def test_set_default_tensor_type(device):
    try:
        with pytest.warns(UserWarning, match="deprecated as of PyTorch 2.1"):
            npusim.set_default_tensor_type(npusim.DoubleTensor)
        assert npusim.get_default_dtype() is npusim.float64 and npusim.tensor([1.5]).dtype is npusim.float64
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            npusim.set_default_tensor_type("torch.FloatTensor")
            assert npusim.get_default_dtype() is npusim.float32
            types = npusim if device == "cpu" else npusim.npu
            npusim.set_default_tensor_type(types.DoubleTensor)
            assert npusim.empty(2).device.type == device and npusim.empty(2).dtype is npusim.float64
            npusim.set_default_tensor_type(npusim.FloatTensor)
            assert npusim.empty(2).device.type == "cpu"
            with pytest.raises(TypeError, match="only floating-point types are supported as the default type"):
                npusim.set_default_tensor_type(types.LongTensor)
            with pytest.raises(TypeError, match="invalid type object"):
                npusim.set_default_tensor_type(npusim.float64)
    finally:
        npusim.set_default_dtype(npusim.float32)
        npusim.set_default_device(None)


def test_to_dlpack_round_trips_on_the_cpu():
    x = npusim.arange(4.0, requires_grad=True)
    capsule = npusim.to_dlpack(x)
    assert type(capsule).__name__ == "PyCapsule"
    y = npusim.from_dlpack(npusim.arange(3))     # the protocol path still works
    assert y.tolist() == [0, 1, 2]
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        npusim.to_dlpack(3)


@pytest.mark.emulation_only
def test_to_dlpack_refuses_the_emulated_npu():
    with pytest.raises(BufferError, match="cannot be exported"):
        npusim.to_dlpack(npusim.ones(2, device="npu"))


def test_thread_safe_generator_is_none_outside_thread_workers():
    assert npusim.thread_safe_generator() is None


def test_fatal_error_is_an_exception():
    assert issubclass(npusim.FatalError, Exception) and npusim.FatalError.__module__ == "npusim"


def test_future_and_grad_scaler_are_the_packages():
    assert npusim.Future is npusim.futures.Future and npusim.GradScaler is npusim.amp.GradScaler


def test_dispatch_key_classes_are_the_dispatchers():
    keys = npusim.DispatchKeySet(npusim.DispatchKey.CPU) | npusim.DispatchKeySet("AutogradCPU")
    assert keys.has(npusim.DispatchKey.CPU) and keys.highestPriorityTypeId() is npusim.DispatchKey.AutogradCPU
    assert npusim.DispatchKey is npusim.library.DispatchKey


def test_tags_are_recorded_on_library_ops():
    lib = npusim.library.Library("misc_names_test", "DEF")
    lib.define("scaled(Tensor x) -> Tensor", tags=(npusim.Tag.pointwise,))
    assert npusim.ops.misc_names_test.scaled.default.tags == (npusim.Tag.pointwise,)
    assert str(npusim.Tag.core) == "Tag.core" and npusim.Tag.inplace == 6


def test_is_distributed(device):
    x = npusim.ones(2, device=device)
    assert npusim.is_distributed(x) is False and x.is_distributed() is False
    with pytest.raises(TypeError, match="is_distributed\\(\\): argument 'input' \\(position 1\\) must be Tensor"):
        npusim.is_distributed(3)


def test_const_data_ptr_and_name(device):
    x = npusim.ones(3, device=device)
    assert x.const_data_ptr() == x.data_ptr() == x[0:].const_data_ptr()
    assert x.name is None
    with pytest.raises(AttributeError):
        x.name = "x"


class _Marked(npusim.Tensor):
    pass


def test_as_subclass_aliases_and_keeps_the_graph(device):
    x = npusim.ones(3, device=device, requires_grad=True)
    y = x.as_subclass(_Marked)
    assert type(y) is _Marked and y.data_ptr() == x.data_ptr() and y.requires_grad
    (y * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    z = npusim.zeros(2, device=device)
    w = z.as_subclass(_Marked)
    w.add_(1)
    assert z.tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="does not inherit from Tensor"):
        z.as_subclass(int)
    with pytest.raises(TypeError, match="cls must be a type \\(got int\\)"):
        z.as_subclass(3)


def test_dim_order(device):
    empty = lambda *s, **k: npusim.empty(*s, device=device, **k)  # noqa: E731
    assert empty(2, 3, 5, 7).dim_order() == (0, 1, 2, 3)
    assert empty(2, 3, 5, 7).transpose(1, 2).dim_order() == (0, 2, 1, 3)
    assert empty(2, 3, 5, 7, memory_format=npusim.channels_last).dim_order() == (0, 2, 3, 1)
    assert empty(1, 2, 3, 4).dim_order() == (0, 1, 2, 3)
    with pytest.raises(RuntimeError, match="does not have unique dim order"):
        empty(1, 2, 3, 4).dim_order(ambiguity_check=True)
    assert empty(1, 2, 3, 4).dim_order(ambiguity_check=[npusim.contiguous_format, npusim.channels_last]) == \
        (0, 1, 2, 3)
    with pytest.raises(TypeError, match="must be a bool or a list of memory formats"):
        empty(2).dim_order(ambiguity_check="ILLEGAL")
    assert empty(()).dim_order() == () and empty(4).dim_order() == (0,)


CASES = [((2, 3, 4, 5), (3, 0, 2, 1)), ((2, 3, 4, 5), None), ((4, 3), (1, 0)), ((2, 1, 3), (2, 1, 0)),
         ((3, 3), (1, 0)), ((2, 3, 4), (1, 2, 0))]


@pytest.mark.oracle
@pytest.mark.parametrize("shape,perm", CASES)
@pytest.mark.parametrize("check", [False, True])
def test_dim_order_as_torch(torch, shape, perm, check):
    def run(mod):
        t = mod.empty(*shape)
        t = t.permute(*perm) if perm else t[:, ::2] if len(shape) > 2 else t
        try:
            return t.dim_order(ambiguity_check=check)
        except RuntimeError as err:
            return str(err)
    assert run(npusim) == run(torch)


@pytest.mark.oracle
def test_values_as_torch(torch):
    for name in ("pi", "e", "inf", "newaxis", "has_lapack"):
        assert getattr(npusim, name) == getattr(torch, name)
    assert {t.name: int(t) for t in npusim.Tag} == {k: int(v) for k, v in torch.Tag.__members__.items()}
    assert npusim.is_distributed(npusim.ones(1)) == torch.is_distributed(torch.ones(1))
    assert npusim.ones(2).name == torch.ones(2).name
    assert npusim.thread_safe_generator() == torch.thread_safe_generator()
    for call in (lambda m: m.set_flush_denormal(1), lambda m: m.set_anomaly_enabled(1),
                 lambda m: m.is_distributed(2), lambda m: m.ones(2).as_subclass(int)):
        errors = []
        for mod in (npusim, torch):
            with pytest.raises(Exception) as info:
                call(mod)
            errors.append((type(info.value).__name__, str(info.value)))
        assert errors[0] == errors[1]
    x = np.arange(4.0)
    assert npusim.from_dlpack(torch.from_dlpack(x)).tolist() == x.tolist()


def test_aten_ops_carry_torchs_tags():
    aten = npusim.ops.aten
    assert npusim.Tag.pointwise in aten.add.Tensor.tags and npusim.Tag.core in aten.add.Tensor.tags
    assert aten.add_.Tensor.tags == (npusim.Tag.inplace, npusim.Tag.pointwise, npusim.Tag.pt2_compliant_tag)
    assert npusim.Tag.out in aten.add.out.tags and npusim.Tag.reduction in aten.sum.default.tags
    assert npusim.Tag.inplace_view in aten.transpose_.default.tags
    assert all(npusim.Tag.pt2_compliant_tag in op.tags for op in (aten.mm.default, aten.exp.default))


@pytest.mark.oracle
def test_aten_tags_as_torch(torch):
    import op_tags_from_torch
    from npusim.core.dispatch import dispatcher
    from npusim.core.dispatch.op_tags_table import TAGGED
    table = {name for names in TAGGED.values() for name in names}
    theirs = op_tags_from_torch.torch_tags()
    assert {n: t for n, t in theirs.items() if n in table} == \
        {name: names for names, ops in TAGGED.items() for name in ops}
    for qual, op in dispatcher._OPS.items():
        name = qual[len("aten::"):]
        if qual.startswith("aten::") and name in table:
            base, _, overload = name.partition(".")
            assert [t.name for t in op.tags] == \
                [t.name for t in getattr(getattr(torch.ops.aten, base), overload or "default").tags], qual


# --- Tensor.grad_dtype -----------------------------------------------------------------------------------------
def _grad_dtype_story(mod, device="cpu"):
    """What torch 2.13 documents and does with grad_dtype, as (label, result) pairs."""
    out = []

    class Double(mod.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g.double()

    def attempt(fn):
        try:
            return fn()
        except (RuntimeError, TypeError) as e:
            return f"{type(e).__name__}: {e}"

    x = mod.ones(2, device=device, requires_grad=True)
    out.append(("default", str(x.grad_dtype)))
    y = x * 2
    out.append(("non-leaf get", attempt(lambda: y.grad_dtype)))
    out.append(("non-leaf set", attempt(lambda: setattr(y, "grad_dtype", mod.float16))))
    out.append(("bad value", attempt(lambda: setattr(x, "grad_dtype", 3))))
    Double.apply(x).sum().backward()
    out.append(("custom default", str(x.grad.dtype)))
    x.grad = None
    x.grad_dtype = None
    out.append(("none", str(x.grad_dtype)))
    Double.apply(x).sum().backward()
    out.append(("custom none", str(x.grad.dtype)))
    out.append(("set with grad", attempt(lambda: setattr(x, "grad_dtype", mod.float16))))
    x.grad = None
    x.grad_dtype = mod.float64
    x.backward(mod.ones(2, device=device))
    out.append(("root cast", str(x.grad.dtype)))
    (x * 3).sum().backward()
    out.append(("accumulated", str(x.grad.dtype), x.grad.tolist()))
    out.append(("assign wrong", attempt(lambda: setattr(x, "grad", mod.ones(2, device=device)))))
    z = mod.ones(2, device=device, requires_grad=True)
    out.append(("assign default", attempt(lambda: setattr(z, "grad", mod.ones(2, dtype=mod.int64, device=device)))))
    z.grad_dtype = None
    z.grad = mod.ones(2, dtype=mod.float64, device=device)
    out.append(("assign any", str(z.grad.dtype)))
    v = mod.ones(2, device=device, requires_grad=True)
    v.grad_dtype = mod.float16
    out.append(("autograd.grad", str(mod.autograd.grad((v * 2).sum(), v)[0].dtype)))
    w = mod.ones(2, device=device)
    w.grad_dtype = mod.float16
    out.append(("no-grad leaf", str(w.grad_dtype)))
    return [tuple(s.replace("torch.", "").replace("npusim.", "") if isinstance(s, str) else s for s in item)
            for item in out]


def test_grad_dtype(device):
    story = dict((k, v if len(rest) == 0 else (v, *rest)) for k, v, *rest in _grad_dtype_story(npusim, device))
    assert story["default"] == "float32" and story["none"] == "None"
    assert story["non-leaf get"] == "RuntimeError: grad_dtype can only be accessed on leaf tensors."
    assert story["custom default"] == "float32" and story["custom none"] == "float64"
    assert story["root cast"] == "float64" and story["accumulated"] == ("float64", [4.0, 4.0])
    assert story["set with grad"].startswith("RuntimeError: Cannot set grad_dtype to 'Half'")
    assert "with dtype 'float' to a tensor with grad_dtype 'Double'" in story["assign wrong"]
    assert story["assign any"] == "float64" and story["no-grad leaf"] == "float16"
    assert story["autograd.grad"] == "float16"


@pytest.mark.oracle
def test_grad_dtype_as_torch(torch):
    assert _grad_dtype_story(npusim) == _grad_dtype_story(torch)
