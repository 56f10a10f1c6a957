"""nn.functional.scaled_mm / scaled_grouped_mm and their enums, as torch 2.13's CPU build has them."""
from __future__ import annotations

import numpy as np
import pytest

import npusim
import npusim.nn.functional as F

S = F.ScalingType


def _cuda_mode(device) -> bool:
    if device != "npu":
        return False
    from npusim.backend.runtime import runtime
    return runtime.probe() == "cuda"


def _operands(lib, device="cpu"):
    g = np.random.default_rng(0)
    a = lib.tensor(g.standard_normal((8, 32)).astype(np.float32), device=device).to(lib.float8_e4m3fn)
    b = lib.tensor(g.standard_normal((16, 32)).astype(np.float32), device=device).to(lib.float8_e4m3fn).t()
    return a, b


def test_enums():
    assert [m.name for m in S] == ["TensorWise", "RowWise", "BlockWise1x16", "BlockWise1x32", "BlockWise1x128",
                                   "BlockWise128x128"]
    assert int(S.RowWise) == 1 and repr(S.TensorWise) == "<_ScalingType.TensorWise: 0>"
    assert [int(m) for m in F.SwizzleType] == [0, 1] and F.SwizzleType.SWIZZLE_32_4_4.name == "SWIZZLE_32_4_4"


def test_tensorwise_and_rowwise(device):
    if _cuda_mode(device):
        pytest.skip("float8 is not on the npu in cuda mode (CuPy has no float8)")
    a, b = _operands(npusim, device)
    sa, sb = npusim.tensor(0.5, device=device), npusim.tensor(2.0, device=device)
    r = F.scaled_mm(a, b, sa, S.TensorWise, sb, S.TensorWise, output_dtype=npusim.float32)
    want = (a.float() * 0.5) @ (b.float() * 2.0)
    assert r.dtype is npusim.float32 and r.device == a.device and np.allclose(r.cpu().numpy(), want.cpu().numpy())
    assert F.scaled_mm(a, b, sa, S.TensorWise, sb, S.TensorWise).dtype is npusim.bfloat16
    assert F.scaled_mm(a, b, sa, S.TensorWise, sb, S.TensorWise, output_dtype=None).dtype is npusim.float8_e4m3fn
    rows, cols = npusim.rand(8, 1, device=device) + 0.5, npusim.rand(1, 16, device=device) + 0.5
    bias = npusim.arange(16.0, device=device)
    r = F.scaled_mm(a, b, rows, S.RowWise, cols, S.RowWise, bias=bias, output_dtype=npusim.float32)
    want = (a.float() * rows) @ (b.float() * cols) + bias
    assert np.allclose(r.cpu().numpy(), want.cpu().numpy(), rtol=1e-6, atol=1e-5)


def test_errors():
    a, b = _operands(npusim)
    one = npusim.tensor(1.0)
    with pytest.raises(ValueError, match="mat_a must be a matrix"):
        F.scaled_mm(a[None], b, one, S.TensorWise, one, S.TensorWise)
    with pytest.raises(ValueError, match="mat_a and mat_b shapes cannot be multiplied \\(8x32 and 8x16\\)"):
        F.scaled_mm(a, b[:8], one, S.TensorWise, one, S.TensorWise)
    with pytest.raises(ValueError, match="Invalid scaling configuration.\n- For TensorWise scaling"):
        F.scaled_mm(a.float(), b, one, S.TensorWise, one, S.TensorWise)
    with pytest.raises(ValueError, match="Invalid scaling configuration"):
        F.scaled_mm(a, b, one, S.BlockWise1x32, one, S.BlockWise1x32)
    with pytest.raises(ValueError, match="expected scale_a.stride\\(1\\) to be 1, but got 8"):
        F.scaled_mm(a, b, npusim.ones(1, 8).t(), S.RowWise, npusim.ones(1, 16), S.RowWise)
    with pytest.raises(ValueError, match="Bias must be size 16 but got 3"):
        F.scaled_mm(a, b, one, S.TensorWise, one, S.TensorWise, bias=npusim.ones(3))
    with pytest.raises(AttributeError, match="'int' object has no attribute 'value'"):
        F.scaled_mm(a, b, one, 0, one, 0)
    with pytest.raises(NotImplementedError, match="Could not run 'aten::_scaled_grouped_mm_v2' with arguments from "
                                                  "the 'CPU' backend"):
        F.scaled_grouped_mm(a, b, one, S.TensorWise, one, S.TensorWise, offs=npusim.tensor([8], dtype=npusim.int32))


@pytest.mark.oracle
def test_matches_torch(torch):
    ta, tb = _operands(torch)
    a, b = _operands(npusim)
    g = np.random.default_rng(1)
    rows, cols, bias = (g.random((8, 1)) + 0.5, g.random((1, 16)) + 0.5, g.standard_normal(16))
    for recipe, sa, sb in ((S.TensorWise, np.float32(0.25), np.float32(3.0)), (S.RowWise, rows, cols)):
        for out_dtype in ("bfloat16", "float32", "float16", None, "float8_e4m3fn"):
            for with_bias in (False, True):
                results = []
                for lib, x, y in ((torch, ta, tb), (npusim, a, b)):
                    trecipe = getattr(lib.nn.functional.ScalingType, recipe.name)
                    got = lib.nn.functional.scaled_mm(
                        x, y, lib.tensor(sa, dtype=lib.float32), trecipe, lib.tensor(sb, dtype=lib.float32), trecipe,
                        bias=lib.tensor(bias, dtype=lib.bfloat16) if with_bias else None,
                        output_dtype=None if out_dtype is None else getattr(lib, out_dtype))
                    results.append((str(got.dtype).split(".")[1], got.float().numpy()))
                assert results[0][0] == results[1][0]
                np.testing.assert_allclose(results[1][1], results[0][1], rtol=2 ** -7, atol=1e-5)
    for lib in (torch, npusim):     # both refuse a half scale with the same words
        x, y = (ta, tb) if lib is torch else (a, b)
        with pytest.raises(ValueError) as e:
            lib.nn.functional.scaled_mm(x, y, lib.ones(1).half(), lib.nn.functional.ScalingType.TensorWise,
                                        lib.ones(1), lib.nn.functional.ScalingType.TensorWise)
        if lib is torch:
            want = str(e.value)
    assert str(e.value) == want
