"""The npu's kernels: every case runs the same body on cpu tensors and on npu tensors made from
the same data, and the results must agree in values, dtype and shape, with npu results on the
inputs' npu device. Gradients are compared the same way. Tests marked ``gpu`` check the CuPy
specialisations of hot ops against the generic kernels on a GPU.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import npusim
from conftest import host

ROOT = Path(__file__).resolve().parents[1]
F = npusim.nn.functional
RNG = np.random.default_rng(7)
A = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal((3, 4)).astype(np.float32)
M = RNG.standard_normal((4, 5)).astype(np.float32)
BATCH = RNG.standard_normal((2, 3, 4)).astype(np.float32)
IDX = np.array([2, 0, 1], dtype=np.int64)
INTS = RNG.integers(-5, 6, (3, 4)).astype(np.int64)
IMG = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)
KER = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)


def _results(value):
    if isinstance(value, npusim.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [r for v in value for r in _results(v)]
    return [value]


def on_both(body, *arrays, device="npu:1", rtol=1e-5, atol=1e-6):
    """Run ``body(*tensors)`` on the cpu and on ``device``; compare every result."""
    cpu_in = [npusim.from_numpy(a.copy()) for a in arrays]
    dev_in = [npusim.from_numpy(a.copy()).to(device) for a in arrays]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Operator '.*' is not currently supported on the npu backend")
        expected, got = _results(body(*cpu_in)), _results(body(*dev_in))
    assert len(expected) == len(got)
    for e, g in zip(expected, got):
        if not isinstance(e, npusim.Tensor):
            assert e == g
            continue
        assert g.device == npusim.device(device), "a result left the inputs' device"
        assert g.dtype is e.dtype and g.shape == e.shape
        np.testing.assert_allclose(host(g), host(e), rtol=rtol, atol=atol)
    for c, d in zip(cpu_in, dev_in):    # in-place ops changed both the same way
        np.testing.assert_allclose(host(d), host(c), rtol=rtol, atol=atol)
    return got


CASES = {
    # elementwise, with type promotion and scalars
    "add alpha": (lambda a, b: npusim.add(a, b, alpha=2.5), A, B),
    "sub mul div": (lambda a, b: (a - b) * b / (a.abs() + 1), A, B),
    "int true div": (lambda i: i / 2, INTS),
    "int floor div": (lambda i: i // 3, INTS),
    "pow": (lambda a: a.abs() ** 1.5, A),
    "compare": (lambda a, b: (a < b, a == a, a >= 0.5), A, B),
    "where": (lambda a, b: npusim.where(a > b, a, b), A, B),
    "clamp": (lambda a: a.clamp(-0.5, 0.5), A),
    "unary": (lambda a: (a.exp(), a.sin(), a.tanh(), a.sigmoid(), a.abs().sqrt(), a.neg(), a.sign()), A),
    "broadcast": (lambda a, b: a[:, :1] * b[:1, :] + 1, A, B),
    "float16": (lambda a: (a.half() * 3).float(), A),
    "bfloat16": (lambda a: (a.bfloat16() + 1).float(), A),
    "in-place": (lambda a, b: a.mul_(2).add_(b, alpha=-1), A, B),
    # reductions
    "sum mean": (lambda a: (a.sum(), a.sum(1), a.mean(0, keepdim=True)), A),
    "max argmax": (lambda a: (a.max(), a.max(1), a.argmax(), a.amin(0)), A),
    "var std": (lambda a: (a.var(), a.std(1, correction=0)), A),
    "int sum": (lambda i: (i.sum(), i.prod(0)), INTS),
    "cumsum softmax": (lambda a: (a.cumsum(1), a.softmax(-1), a.log_softmax(0)), A),
    "norm": (lambda a: (npusim.ops.aten.linalg_vector_norm.default(a), a.norm(dim=1)), A),
    # linear algebra
    "matmul": (lambda a, m: a @ m, A, M),
    "mm addmm": (lambda a, m: (npusim.mm(a, m), npusim.addmm(npusim.ones(5, device=a.device), a, m)), A, M),
    "bmm": (lambda x: npusim.bmm(x, x.transpose(1, 2)), BATCH),
    "outer dot": (lambda a: (npusim.outer(a[0], a[1]), npusim.dot(a[0], a[1])), A),
    # shapes, views and joins
    "views": (lambda a: (a.t().contiguous(), a.reshape(2, 6), a.permute(1, 0)[1:], a.unsqueeze(0).expand(2, 3, 4)),
              A),
    "cat stack": (lambda a, b: (npusim.cat([a, b], 1), npusim.stack([a, b])), A, B),
    "repeat flip": (lambda a: (a.repeat(2, 1), a.flip(0), a.roll(1, 1), a.tril(), a.tile((2,))), A),
    "split": (lambda a: a.split([1, 3], dim=1), A),
    # indexing
    "getitem": (lambda a, i: (a[1], a[:, 1:3], a[i], a[a > 0], a[..., None]), A, IDX),
    "setitem": (lambda a, i: a.__setitem__(i, 0.0) or a, A, IDX),
    "index ops": (lambda a, i: (a.index_select(0, i), a.gather(1, i[:, None].expand(3, 2)),
                                a.masked_fill(a < 0, 1.0)), A, IDX),
    "scatter": (lambda a, i: npusim.zeros(3, 4, device=a.device).scatter_add(0, i[:, None].expand(3, 4), a), A, IDX),
    # nn
    "activations": (lambda a: (F.gelu(a), F.gelu(a, approximate="tanh"), F.silu(a), F.relu(a), F.elu(a)), A),
    "layer norm": (lambda a: F.layer_norm(a, (4,)), A),
    "linear": (lambda a, m: F.linear(a, m.t()), A, M),
    "conv2d": (lambda x, w: F.conv2d(x, w, padding=1), IMG, KER),
    "pool": (lambda x: (F.max_pool2d(x, 2), F.avg_pool2d(x, 2)), IMG),
    "cross entropy": (lambda a, i: F.cross_entropy(a, i), A, IDX),
    # ops that run through the cpu fallback
    "fallback": (lambda a: (a.sort(1), a.topk(2), npusim.einsum("ij,ij->i", a, a), a.nonzero()), A),
}


@pytest.mark.parametrize("name", list(CASES))
def test_npu_matches_cpu(name):
    body, *arrays = CASES[name]
    on_both(body, *arrays, rtol=2e-5, atol=1e-5)


def test_results_stay_on_npu_0_too():
    on_both(lambda a, b: (a + b).sum(1), A, B, device="npu:0")


def test_scalar_results_and_conversions():
    x = npusim.tensor([1.5, -2.0]).npu()
    assert x.sum().item() == -0.5 and x.tolist() == [1.5, -2.0]
    assert float(x[0]) == 1.5 and int(x[1]) == -2 and bool(x[0] > 0)
    assert x.to(npusim.int64).cpu().tolist() == [1, -2]
    assert x.to("cpu", npusim.float64).dtype is npusim.float64


@pytest.mark.parametrize("name", ["unary", "sub mul div", "matmul", "layer norm", "conv2d", "cross entropy",
                                  "fallback"])
def test_gradients_match_cpu(name):
    body, *arrays = CASES[name]
    floats = [a for a in arrays if a.dtype.kind == "f"]
    grads = {}
    for device in ("cpu", "npu:1"):
        inputs = [npusim.from_numpy(a.copy()).to(device) for a in arrays]
        for t, a in zip(inputs, arrays):
            if a.dtype.kind == "f":
                t.requires_grad_()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Operator '.*' is not currently supported")
            outs = [r for r in _results(body(*inputs)) if isinstance(r, npusim.Tensor) and r.requires_grad]
        sum(o.float().sum() for o in outs).backward()
        grads[device] = [host(t.grad) for t in inputs if t.requires_grad]
        assert all(t.grad.device == npusim.device(device) for t in inputs if t.requires_grad)
    assert len(grads["cpu"]) == len(floats)
    for g_cpu, g_npu in zip(grads["cpu"], grads["npu:1"]):
        np.testing.assert_allclose(g_npu, g_cpu, rtol=2e-5, atol=1e-5)


def test_errors_are_the_same_on_both_devices():
    for device in ("cpu", "npu"):
        a = npusim.ones(2, 3, device=device)
        with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x3\)"):
            a @ a
        with pytest.raises(RuntimeError, match="The size of tensor a \\(3\\) must match the size of tensor b \\(2\\)"):
            a + npusim.ones(2, device=device)
        with pytest.raises(IndexError, match="Dimension out of range"):
            a.sum(5)


# --- the CuPy specialisations (cuda mode, on a GPU) -------------------------------------------------------

def run_cuda(code: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NPUSIM_")}
    # the CuPy stand-in, when it is on the path, stays there
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]),
               NPUSIM_BACKEND="cuda")
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300,
                       cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.gpu
def test_cupy_kernels_replace_the_hot_ops_and_agree_with_numpy():
    out = run_cuda("""
        import numpy as np
        import npusim
        import npusim.backend as backend
        F = npusim.nn.functional
        npusim.npu.init()
        print(sorted(backend._hot_kernels.active) == sorted(backend.HOT_OPS),
              backend._hot_kernels.active is not backend._hot_kernels.generic)
        rng = np.random.default_rng(0)
        for dt, tol in ((npusim.float32, 1e-6), (npusim.float64, 1e-12), (npusim.float16, 1e-3)):
            a = rng.standard_normal((64, 33)).astype(np.float32)
            b = rng.standard_normal((64, 33)).astype(np.float32)
            x, y = npusim.from_numpy(a).to(dt), npusim.from_numpy(b).to(dt)
            xn, yn = x.npu(), y.npu()
            cases = [(npusim.add(x, y, alpha=0.5), npusim.add(xn, yn, alpha=0.5)),
                     (x.sigmoid(), xn.sigmoid()), (F.gelu(x), F.gelu(xn)),
                     (F.gelu(x, approximate="tanh"), F.gelu(xn, approximate="tanh"))]
            if dt is not npusim.float16:
                norm = npusim.ops.aten.linalg_vector_norm.default
                cases.append((norm(x), norm(xn)))
            for c, n in cases:
                assert n.dtype is c.dtype and n.shape == c.shape and n.is_npu
                np.testing.assert_allclose(n.cpu().double().numpy(), c.double().numpy(), rtol=tol * 10, atol=tol)
        # outside the plain case the generic kernels answer, with their promotion and errors
        xi = npusim.arange(4, device="npu")
        print(npusim.add(xi, xi, alpha=2).cpu().tolist(), xi.sigmoid().dtype, xi[::2].float().sigmoid().shape)
        try:
            F.gelu(npusim.ones(2, device="npu"), approximate="fast")
        except RuntimeError as e:
            print("error:", e)
    """)
    lines = out.splitlines()
    assert lines[0] == "True True"
    assert lines[1] == "[0, 3, 6, 9] npusim.float32 npusim.Size([2])"
    assert lines[2].startswith("error: ")


class _StandInCupy:
    """Enough of CuPy's kernel API to run the specialisations' selection logic on NumPy arrays."""

    float32, float64 = np.float32, np.float64

    def __init__(self):
        self.calls = []

    def ElementwiseKernel(self, in_params, out_params, operation, name, preamble=""):  # noqa: N802 - CuPy's name
        import math as _m
        erf = np.vectorize(_m.erf)
        impl = {"npusim_add_alpha": lambda x, y, alpha: x + alpha * y,
                "npusim_sigmoid": lambda x: 1 / (1 + np.exp(-x)),
                "npusim_gelu": lambda x: (0.5 * x * (1 + erf(x / np.sqrt(2)))).astype(x.dtype),
                "npusim_gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))}
        return self._recorded(name, impl[name])

    def ReductionKernel(self, in_params, out_params, map_expr, reduce_expr, post_map_expr, identity, name):  # noqa: N802
        return self._recorded(name, lambda x: np.sqrt((x * x).sum()))

    def _recorded(self, name, fn):
        def kernel(*args):
            self.calls.append(name)
            out = fn(*args)
            return np.asarray(out, dtype=args[0].dtype)
        return kernel


# a fake CuPy over NumPy arrays: in cuda mode the real kernels are checked by the test above
@pytest.mark.emulation_only
def test_cupy_specialisations_take_only_the_plain_case():
    from npusim.backend import cupy_kernels
    from npusim.native.registration import KERNELS
    fake = _StandInCupy()
    fast = cupy_kernels.specialised(KERNELS, fake)
    assert sorted(fast) == sorted(cupy_kernels.HOT_OPS)
    x, y = npusim.from_numpy(A.copy()).npu(), npusim.from_numpy(B.copy()).npu()
    plain = [(fast["add.Tensor"](x, y, 2.5), npusim.add(x, y, alpha=2.5)),
             (fast["sigmoid"](x), x.sigmoid()),
             (fast["gelu"](x), F.gelu(x)), (fast["gelu"](x, approximate="tanh"), F.gelu(x, approximate="tanh")),
             (fast["linalg_vector_norm"](x), npusim.ops.aten.linalg_vector_norm.default(x))]
    assert fake.calls == ["npusim_add_alpha", "npusim_sigmoid", "npusim_gelu", "npusim_gelu_tanh", "npusim_l2norm"]
    for got, want in plain:
        assert got.device == want.device and got.dtype is want.dtype and got.shape == want.shape
        np.testing.assert_allclose(host(got), host(want), rtol=1e-5, atol=1e-6)
    fake.calls.clear()
    i = npusim.arange(4, device="npu")
    generic = [fast["add.Tensor"](x, y, 1), fast["add.Tensor"](x, y.double(), 2), fast["add.Tensor"](i, i, 2),
               fast["add.Tensor"](x, 1.5, 2), fast["add.Tensor"](x, y[:1], 2), fast["sigmoid"](x.t()),
               fast["sigmoid"](i), fast["linalg_vector_norm"](x, 1), fast["linalg_vector_norm"](x, 2, [0])]
    assert fake.calls == []     # none of these is the plain case: the generic kernels answered
    assert generic[2].cpu().tolist() == [0, 3, 6, 9] and generic[6].dtype is npusim.float32
    with pytest.raises(RuntimeError, match="approximate"):
        fast["gelu"](x, approximate="fast")
