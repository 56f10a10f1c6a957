"""npusim.backends (torch.backends) and npusim.onnx answer as torch's do where npusim has no such library."""
from __future__ import annotations

import pytest

import npusim
from npusim import backends


def test_switches_have_torchs_defaults_and_are_stored():
    assert (backends.cudnn.enabled, backends.cudnn.benchmark, backends.cudnn.deterministic,
            backends.cudnn.allow_tf32) == (True, False, False, True)
    assert not backends.cudnn.is_available() and backends.cudnn.version() is None
    assert backends.cuda.matmul.allow_tf32 is False
    assert backends.cuda.matmul.allow_fp16_reduced_precision_reduction is True
    assert not backends.mps.is_available() and not backends.mps.is_built()
    saved = backends.cudnn.benchmark
    try:
        backends.cudnn.benchmark = True
        assert backends.cudnn.benchmark is True
    finally:
        backends.cudnn.benchmark = saved


def test_flags_hold_for_the_block_only():
    with backends.cudnn.flags(enabled=False, deterministic=True):
        assert backends.cudnn.enabled is False and backends.cudnn.deterministic is True
    assert backends.cudnn.enabled is True and backends.cudnn.deterministic is False
    with backends.mkldnn.flags(enabled=False):
        assert backends.mkldnn.enabled is False
    assert backends.mkldnn.enabled is True


def test_matmul_switches_refuse_unknown_names():
    with pytest.raises(AttributeError, match="Unknown attribute allow_tf33"):
        backends.cuda.matmul.allow_tf33 = True
    backends.cuda.matmul.allow_tf32 = True
    try:
        assert backends.cuda.matmul.allow_tf32 is True
    finally:
        backends.cuda.matmul.allow_tf32 = False


def test_attention_backend_switches():
    assert backends.cuda.flash_sdp_enabled() and backends.cuda.math_sdp_enabled()
    with pytest.warns(FutureWarning, match="sdp_kernel\\(\\)` is deprecated"):
        with backends.cuda.sdp_kernel(enable_flash=False):
            assert not backends.cuda.flash_sdp_enabled()
    assert backends.cuda.flash_sdp_enabled()
    backends.cuda.enable_mem_efficient_sdp(False)
    try:
        assert not backends.cuda.mem_efficient_sdp_enabled()
    finally:
        backends.cuda.enable_mem_efficient_sdp(True)
    assert backends.cuda.preferred_linalg_library() == "default"
    with pytest.raises(RuntimeError, match="Unknown input value"):
        backends.cuda.preferred_linalg_library("lapack")


def test_cpu_capability_is_one_of_torchs_names():
    assert backends.cpu.get_cpu_capability() in ("DEFAULT", "AVX2", "AVX512")


@pytest.mark.oracle
def test_names_and_defaults_match_torch(torch):
    tb = torch.backends
    for name in ("enabled", "benchmark", "deterministic", "allow_tf32", "benchmark_limit"):
        assert getattr(backends.cudnn, name) == getattr(tb.cudnn, name), name
    for name in ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        assert getattr(backends.cuda.matmul, name) == getattr(tb.cuda.matmul, name), name
    for name in ("flash", "mem_efficient", "math", "cudnn"):
        assert getattr(backends.cuda, f"{name}_sdp_enabled")() == getattr(tb.cuda, f"{name}_sdp_enabled")()
    assert backends.mkldnn.enabled == tb.mkldnn.enabled


def test_onnx_export_is_refused_without_writing(tmp_path):
    target = tmp_path / "model.onnx"
    with pytest.raises(npusim.onnx.OnnxExporterError, match="npusim does not export to ONNX"):
        npusim.onnx.export(npusim.nn.Linear(2, 2), (npusim.ones(1, 2),), str(target))
    assert not target.exists()
    assert npusim.onnx.is_in_onnx_export() is False
    assert issubclass(npusim.onnx.OnnxExporterError, RuntimeError)
