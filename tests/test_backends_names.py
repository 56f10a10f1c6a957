"""torch.backends' newer names: the attention-backend questions, BLAS workspaces and FFT plan caches of
backends.cuda, cuDNN's precision switches, mha's fast path, mkl.verbose and opt_einsum.set_flags."""
from __future__ import annotations

import warnings

import pytest

import npusim
from npusim import backends


def _params(device, mask=False, causal=False):
    q = npusim.randn(2, 4, 8, 16, device=device)
    m = npusim.ones(8, 8, dtype=npusim.bool, device=device) if mask else None
    return backends.cuda.SDPAParams(q, q, q, m, 0.0, causal, False)


def test_sdpa_params_hold_the_call(device):
    p = _params(device, mask=True, causal=False)
    assert p.query.shape == (2, 4, 8, 16) and p.attn_mask.dtype is npusim.bool and p.dropout == 0.0
    assert p.is_causal is False and p.enable_gqa is False
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        backends.cuda.SDPAParams(p.query, p.key, p.value)
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        backends.cuda.SDPAParams(p.query, p.key, 3, None, 0.0, False, False)


def test_only_the_math_attention_can_run(device):
    p = _params(device)
    for ask in (backends.cuda.can_use_flash_attention, backends.cuda.can_use_efficient_attention,
                backends.cuda.can_use_cudnn_attention):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert ask(p) is False                        # no warning without debug
        with pytest.warns(UserWarning, match="only the math implementation runs"):
            assert ask(p, True) is False
    backends.cuda.enable_flash_sdp(False)
    try:
        with pytest.warns(UserWarning, match="Flash attention has been runtime disabled"):
            backends.cuda.can_use_flash_attention(p, debug=True)
    finally:
        backends.cuda.enable_flash_sdp(True)
    assert backends.cuda.is_flash_attention_available() is False
    with pytest.raises(TypeError):
        backends.cuda.can_use_flash_attention(None)


def test_sdp_backend_values():
    b = backends.cuda.SDPBackend
    assert (b.ERROR, b.MATH, b.FLASH_ATTENTION, b.EFFICIENT_ATTENTION, b.CUDNN_ATTENTION, b.OVERRIDEABLE) == \
        (-1, 0, 1, 2, 3, 4)


def test_fp16_bf16_reduction_switch_is_stored():
    assert backends.cuda.fp16_bf16_reduction_math_sdp_allowed() is False
    try:
        backends.cuda.allow_fp16_bf16_reduction_math_sdp(True)
        assert backends.cuda.fp16_bf16_reduction_math_sdp_allowed() is True
    finally:
        backends.cuda.allow_fp16_bf16_reduction_math_sdp(False)


def test_workspace_sizes(monkeypatch):
    from npusim.backends import cuda_workspace
    monkeypatch.setattr(cuda_workspace, "_sizes", {})
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    assert backends.cuda.cublas_workspace_size() == 4096 * 1024 * 8
    assert backends.cuda.cublas_workspace_size(1 << 20) == 1 << 20 and backends.cuda.cublas_workspace_size() == 1 << 20
    monkeypatch.setenv("CUBLASLT_WORKSPACE_SIZE", "2048")
    assert backends.cuda.cublaslt_workspace_size() == 2048 * 1024
    assert backends.cuda.blas_workspace_size() == 1 << 20                       # the preferred library: cublas
    assert backends.cuda.blas_workspace_size(4096, backend="cublaslt") == 4096
    assert backends.cuda.cublaslt_workspace_size() == 4096
    with pytest.raises(RuntimeError, match="CK backend does not use a workspace"):
        backends.cuda.blas_workspace_size(backend="ck")
    with pytest.raises(RuntimeError, match="Unknown backend string. Choose from: default, cublas"):
        backends.cuda.blas_workspace_size(backend="foo")
    with pytest.raises(RuntimeError, match="Unknown backend type"):
        backends.cuda.blas_workspace_size(backend=3)
    with pytest.raises(RuntimeError, match="non-negative"):
        backends.cuda.cublas_workspace_size(-1)


def test_cufft_plan_cache_per_device():
    cache = backends.cuda.cufft_plan_cache
    n = npusim.npu.device_count()
    assert cache[0].size == 0 and cache[0].max_size == 4096 and cache.max_size == 4096
    old = cache[n - 1].max_size
    try:
        cache[n - 1].max_size = 10
        assert cache[f"npu:{n - 1}"].max_size == 10 and cache[0].max_size == 4096
    finally:
        cache[n - 1].max_size = old
    with pytest.raises(RuntimeError, match="read-only property"):
        cache.size = 3
    with pytest.raises(RuntimeError, match=f"expected 0 <= device index < {n}, but got device with index {n}"):
        cache[n]
    assert cache.clear() is None


def test_cudnn_precision_switches():
    cudnn = backends.cudnn
    assert cudnn.fp32_precision == "none" and cudnn.conv.fp32_precision == "tf32"
    assert cudnn.depthwise_kernel == "auto" and cudnn.CUDNN_TENSOR_DTYPES == {npusim.half, npusim.float,
                                                                              npusim.double}
    with pytest.raises(RuntimeError, match="Unknown precision: bad"):
        cudnn.fp32_precision = "bad"
    with pytest.raises(RuntimeError, match="does not support precision 'bf16'"):
        cudnn.conv.fp32_precision = "bf16"
    with pytest.raises(RuntimeError, match="Unknown cuDNN depthwise kernel mode: x. Expected one of: auto, cudnn"):
        cudnn.depthwise_kernel = "x"
    with pytest.raises(AttributeError, match="Unknown attribute foo"):
        cudnn.conv.foo = 1
    try:
        cudnn.conv.fp32_precision = "ieee"
        assert cudnn.conv.fp32_precision == "ieee"
    finally:
        cudnn.conv.fp32_precision = "tf32"
    old = cudnn.set_flags(_depthwise_kernel="native", _deterministic=True)
    try:
        assert old == (True, False, None, False, True, "none", "auto")
        assert cudnn.depthwise_kernel == "native" and cudnn.deterministic is True
    finally:
        cudnn.set_flags(*old)
    assert cudnn.depthwise_kernel == "auto" and cudnn.deterministic is False
    with cudnn.flags(fp32_precision="ieee", depthwise_kernel="cudnn"):
        assert cudnn.fp32_precision == "ieee" and cudnn.depthwise_kernel == "cudnn"
    assert cudnn.fp32_precision == "none" and cudnn.depthwise_kernel == "auto"


def test_mha_fastpath_switch():
    assert backends.mha.get_fastpath_enabled() is True
    try:
        backends.mha.set_fastpath_enabled(False)
        assert backends.mha.get_fastpath_enabled() is False
    finally:
        backends.mha.set_fastpath_enabled(True)


def test_mkl_verbose_without_mkl():
    assert (backends.mkl.VERBOSE_OFF, backends.mkl.VERBOSE_ON) == (0, 1)
    with backends.mkl.verbose(backends.mkl.VERBOSE_OFF):
        pass
    with pytest.raises(AssertionError, match="Failed to set MKL into verbose mode"):
        with backends.mkl.verbose(backends.mkl.VERBOSE_ON):
            pass


def test_opt_einsum_set_flags():
    oe = backends.opt_einsum
    if oe.is_available():
        old = oe.set_flags(True, "greedy")
        try:
            assert oe.strategy == "greedy"
            with pytest.raises(ValueError, match="must be one of the following"):
                oe.set_flags(_strategy="fast")
        finally:
            oe.set_flags(*old)
    else:
        assert oe.set_flags() == (False, None)
        with pytest.raises(ValueError, match="opt_einsum is not available"):
            oe.set_flags(True)
        with pytest.raises(ValueError, match="opt_einsum is not available"):
            oe.set_flags(_strategy="auto")
        assert oe.set_flags(False) == (False, None) and oe.enabled is False


@pytest.mark.oracle
def test_as_torch(torch):
    tb = torch.backends
    assert {k: int(v) for k, v in tb.cuda.SDPBackend.__members__.items()} == \
        {k: int(v) for k, v in backends.cuda.SDPBackend.__members__.items()}
    assert backends.cuda.is_flash_attention_available() == tb.cuda.is_flash_attention_available()
    q = torch.randn(2, 4, 8, 16)
    tp = tb.cuda.SDPAParams(q, q, q, None, 0.0, False, False)
    p = _params("cpu")
    for name in ("can_use_flash_attention", "can_use_efficient_attention", "can_use_cudnn_attention"):
        assert getattr(backends.cuda, name)(p) == getattr(tb.cuda, name)(tp)
    assert backends.cuda.fp16_bf16_reduction_math_sdp_allowed() == tb.cuda.fp16_bf16_reduction_math_sdp_allowed()
    assert {str(d).split(".")[1] for d in tb.cudnn.CUDNN_TENSOR_DTYPES} == \
        {d.name for d in backends.cudnn.CUDNN_TENSOR_DTYPES}
    assert (backends.cudnn.fp32_precision, backends.cudnn.conv.fp32_precision, backends.cudnn.depthwise_kernel) == \
        (tb.cudnn.fp32_precision, tb.cudnn.conv.fp32_precision, tb.cudnn.depthwise_kernel)
    assert backends.cudnn.set_flags() == tb.cudnn.set_flags()
    for value in ("bad", "bf16"):
        errors = []
        for target in (backends.cudnn.conv, tb.cudnn.conv):
            with pytest.raises(RuntimeError) as info:
                target.fp32_precision = value
            errors.append(str(info.value))
        assert errors[0] == errors[1]
    assert backends.mha.get_fastpath_enabled() == tb.mha.get_fastpath_enabled()
    assert (backends.mkl.VERBOSE_OFF, backends.mkl.VERBOSE_ON) == (tb.mkl.VERBOSE_OFF, tb.mkl.VERBOSE_ON)
    assert backends.opt_einsum.set_flags() == tb.opt_einsum.set_flags()
