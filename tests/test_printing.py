"""repr(tensor): torch's formatting with ``torch.`` written ``npusim.``, and set_printoptions."""
from __future__ import annotations

import numpy as np
import pytest

import npusim

SPECS = [
    "L.tensor([1, 2, 3])", "L.tensor([1., 2., 3.])", "L.tensor([1.5, 2.25, -3.125])", "L.tensor(3.)", "L.tensor(3)",
    "L.tensor(True)", "L.tensor([True, False])", "L.tensor([1e-5, 1.0])", "L.tensor([1e10, 1.0])",
    "L.tensor([123456789.0])", "L.tensor([1e8, 1.0])", "L.tensor([0.0001, 1.0])", "L.tensor([0.00011, 1.5])",
    "L.tensor([1000.0, 1.0])", "L.tensor([1001.0, 1.0])", "L.tensor([1.0, 1001.5])", "L.tensor([nan, inf, -inf, 1.0])",
    "L.tensor([nan])", "L.tensor([inf, -inf])", "L.tensor([nan, 1.5])", "L.tensor([0.0, -0.0])", "L.tensor([0.])",
    "L.tensor([-1.0, 2.0])", "L.tensor([1e-10])", "L.tensor([1e-10, 0.])", "L.tensor([1., 2.], dtype=L.float16)",
    "L.tensor([1.5, 2.25], dtype=L.bfloat16)", "L.tensor([1.1, 2.2], dtype=L.float64)",
    "L.tensor([1, 2], dtype=L.int8)", "L.tensor([1, 2], dtype=L.uint8)", "L.tensor([1, 2], dtype=L.int32)",
    "L.tensor([1, 2], dtype=L.int16)", "L.tensor(2.5, dtype=L.float16)", "L.tensor(7, dtype=L.int32)",
    "L.tensor([])", "L.tensor([], dtype=L.int64)", "L.tensor([], dtype=L.float64)", "L.zeros(0, 3)", "L.zeros(2, 0)",
    "L.zeros(2, 0, dtype=L.int32)", "L.zeros(0, dtype=L.bool)", "L.zeros(1, 0, 2)", "L.arange(1001)",
    "L.arange(2000.)", "L.arange(1200).reshape(30, 40)", "L.arange(24).reshape(2, 3, 4)",
    "L.arange(24.).reshape(2, 3, 4) / 7", "L.arange(5000).reshape(10, 10, 50)", "L.arange(60.) * 1.5",
    "L.arange(30) * 1000003", "L.arange(40.) / 3", "L.ones(2, 3)", "L.ones(3, 40)", "L.arange(100.) ** 3",
    "L.tensor([1.5, 2.5], requires_grad=True)", "L.tensor([[1.5, 2.5]], requires_grad=True)",
    "L.tensor(2., requires_grad=True)", "L.tensor([1., 2.], dtype=L.float64, requires_grad=True)",
    "L.arange(40., requires_grad=True)", "L.tensor([1e-5, 2.], requires_grad=True)",
    "L.zeros(0, 2, requires_grad=True)", "L.tensor([[1, -2], [30, 4]])", "L.tensor([[1.5, -2], [30, 4]])",
    "L.tensor([[1e-3, -2e5], [30, 4]])", "L.ones(1, 1, 1, 1)", "L.tensor([True] * 30)", "L.tensor([-1.0, -2.5, 3.0])",
    "L.tensor([0.1234567, 123.456])", "L.tensor([9.99995, 1.0])", "L.tensor([99999.5, 1.0])",
    "L.tensor([65504.], dtype=L.float16)", "L.tensor([3.4e38], dtype=L.float32)", "L.tensor([1e-45])",
    "L.tensor([2**62, -2**62])", "L.tensor([-9223372036854775808])", "L.arange(10.).reshape(2, 5).t()",
    "L.arange(6.)[::2]", "L.arange(3000.).reshape(3, 1000)", "L.tensor([[nan, 1.], [inf, 2.]])",
    "L.tensor([1.0, 2.0]) * 1e-3", "L.tensor([0.5] * 20, dtype=L.float64)", "L.tensor([1, 2, 3], dtype=L.float16) / 3",
    "L.tensor([100.5, 1.0], dtype=L.bfloat16)", "L.tensor([1e5, 1e-5], dtype=L.float16)",
    "L.zeros(3, 4, dtype=L.bool)", "L.arange(1010) % 2 == 0", "L.tensor(nan)", "L.tensor(-inf)", "L.tensor(1e20)",
    "L.tensor(123456.)", "L.tensor(-0.0)", "L.arange(1001.).reshape(1001, 1)", "L.arange(2 * 3 * 400).reshape(2, 3, 400)",
    # huge expanded views: only the printed items are read
    "L.zeros(1).expand(2 ** 40)", "L.arange(6.).reshape(2, 1, 3).expand(2, 2 ** 33, 3)",
    "(L.arange(8) * 1000).reshape(1, 8).expand(2 ** 31, 8)", "(L.arange(5.) * 1e9).expand(2 ** 20, 2 ** 20, 5)",
]
OPTIONS = [dict(precision=2), dict(sci_mode=True), dict(sci_mode=False), dict(threshold=5),
           dict(edgeitems=1, threshold=10), dict(linewidth=40), dict(profile="full"), dict(profile="short")]
OPTION_SPECS = ["L.tensor([1.23456, 2.5])", "L.arange(20.) / 3", "L.tensor([1e-5, 1.0])", "L.arange(100).reshape(10, 10)",
                "L.arange(2000.)", "L.tensor([0.0, 0.0])", "L.tensor([1.5], requires_grad=True)"]


def _build(L, spec):
    return eval(spec, {"L": L, "nan": float("nan"), "inf": float("inf")})  # noqa: S307 - fixed test expressions


def _default_options(L):
    L.set_printoptions(profile="default")
    L.set_printoptions(sci_mode=None)


@pytest.mark.oracle
@pytest.mark.parametrize("spec", SPECS)
def test_repr_matches_torch(spec, torch):
    assert repr(_build(npusim, spec)) == repr(_build(torch, spec)).replace("torch.", "npusim.")


@pytest.mark.oracle
@pytest.mark.parametrize("options", OPTIONS, ids=[str(o) for o in OPTIONS])
def test_printoptions_match_torch(options, torch):
    try:
        for spec in OPTION_SPECS:
            torch.set_printoptions(**options)
            npusim.set_printoptions(**options)
            expected = repr(_build(torch, spec)).replace("torch.", "npusim.")
            assert repr(_build(npusim, spec)) == expected, spec
    finally:
        _default_options(torch)
        _default_options(npusim)


# --- literal expectations (no torch needed) -----------------------------------------------------------

def test_repr_of_common_tensors():
    cases = {
        "L.tensor([1, 2, 3])": "tensor([1, 2, 3])",
        "L.tensor([1., 2., 3.])": "tensor([1., 2., 3.])",
        "L.tensor([1.5, 2.25, -3.125])": "tensor([ 1.5000,  2.2500, -3.1250])",
        "L.tensor(3.)": "tensor(3.)",
        "L.tensor(True)": "tensor(True)",
        "L.tensor([1e-5, 1.0])": "tensor([1.0000e-05, 1.0000e+00])",
        "L.tensor([1e10, 1.0])": "tensor([1.0000e+10, 1.0000e+00])",
        "L.tensor([nan, inf, -inf, 1.0])": "tensor([nan, inf, -inf, 1.])",
        "L.tensor([1., 2.], dtype=L.float16)": "tensor([1., 2.], dtype=npusim.float16)",
        "L.tensor([1.5, 2.25], dtype=L.bfloat16)": "tensor([1.5000, 2.2500], dtype=npusim.bfloat16)",
        "L.tensor([1, 2], dtype=L.int8)": "tensor([1, 2], dtype=npusim.int8)",
        "L.tensor([])": "tensor([])",
        "L.zeros(0, 3)": "tensor([], size=(0, 3))",
        "L.zeros(2, 0, dtype=L.int32)": "tensor([], size=(2, 0), dtype=npusim.int32)",
        "L.tensor([], dtype=L.int64)": "tensor([], dtype=npusim.int64)",
        "L.tensor([1.5, 2.5], requires_grad=True)": "tensor([1.5000, 2.5000], requires_grad=True)",
        "L.tensor([[1, -2], [30, 4]])": "tensor([[ 1, -2],\n        [30,  4]])",
        "L.arange(1001)": "tensor([   0,    1,    2,  ...,  998,  999, 1000])",
    }
    for spec, expected in cases.items():
        assert repr(_build(npusim, spec)) == expected, spec


def test_long_rows_wrap_at_80_columns():
    r = repr(npusim.arange(40.0) / 3)
    lines = r.split("\n")
    assert len(lines) > 1 and all(len(line) <= 80 for line in lines)
    assert lines[0].startswith("tensor([ 0.0000,  0.3333,") and lines[1].startswith("         ")


def test_summarised_2d_and_3d():
    r = repr(npusim.arange(1200).reshape(30, 40))
    assert r.count("...") == 7 and r.startswith("tensor([[   0,    1,    2,  ...,   37,   38,   39],")
    r3 = repr(npusim.arange(5000).reshape(10, 10, 50))
    assert "\n\n        ...,\n\n" in r3 and r3.endswith("4998, 4999]]])")


def test_device_suffix_and_str(device):
    t = npusim.tensor([1.0, 2.0], device=device)
    expected = "tensor([1., 2.])" if device == "cpu" else f"tensor([1., 2.], device='{t.device}')"
    assert repr(t) == expected and str(t) == expected


def test_repr_of_a_huge_expanded_tensor_reads_only_the_printed_items(device):
    # materialising these would take TiBs (NumPy's MemoryError before)
    t = npusim.zeros(1, device=device).expand(2 ** 40)
    suffix = "" if device == "cpu" else f", device='{t.device}'"
    assert repr(t) == f"tensor([0., 0., 0.,  ..., 0., 0., 0.]{suffix})"
    rows = "\n".join(["tensor([[[0, 1, 2],"] + ["         [0, 1, 2],"] * 2 + ["         ...,"]
                     + ["         [0, 1, 2],"] * 2 + ["         [0, 1, 2]],", "", "        [[3, 4, 5],"]
                     + ["         [3, 4, 5],"] * 2 + ["         ...,"] + ["         [3, 4, 5],"] * 2
                     + [f"         [3, 4, 5]]]{suffix})"])
    assert repr(npusim.arange(6, device=device).reshape(2, 1, 3).expand(2, 2 ** 40, 3)) == rows
    try:
        npusim.set_printoptions(edgeitems=1)
        assert repr(npusim.arange(3.0, device=device).expand(2 ** 40, 3)) == \
            f"tensor([[0.,  ..., 2.],\n        ...,\n        [0.,  ..., 2.]]{suffix})"
    finally:
        _default_options(npusim)


def test_set_printoptions():
    try:
        npusim.set_printoptions(precision=2)
        assert repr(npusim.tensor([1.23456])) == "tensor([1.23])"
        npusim.set_printoptions(sci_mode=True)
        assert repr(npusim.tensor([1.5, 2.5])) == "tensor([1.50e+00, 2.50e+00])"
        npusim.set_printoptions(threshold=3, edgeitems=1)
        assert repr(npusim.arange(10)) == "tensor([0,  ..., 9])"
        assert npusim.get_printoptions()["precision"] == 2
        with pytest.raises(ValueError, match="^Invalid profile: fancy$"):
            npusim.set_printoptions(profile="fancy")
    finally:
        _default_options(npusim)
    assert repr(npusim.tensor([1.23456])) == "tensor([1.2346])"


def test_repr_reads_values_without_changing_them():
    x = npusim.tensor(np.array([1.0, 2.0], dtype=np.float32))
    before = x._version
    repr(x)
    assert x._version == before and x.tolist() == [1.0, 2.0]
