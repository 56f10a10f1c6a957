"""``npusim.linalg``: vector_norm, matrix_norm, norm, vecdot, matmul and cross.

Values, shapes, dtypes and error messages against PyTorch's ``torch.linalg`` (the ``oracle``
tests), and the same facts by hand where torch is not needed.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import npusim
from conftest import host

LA = npusim.linalg


def _A(L):
    return L.arange(24.).reshape(2, 3, 4) - 10


def _M(L):
    return L.arange(12.).reshape(3, 4) - 5


def _v(L):
    return L.tensor([3., -4., 0.])


# each case builds its inputs in L (npusim or torch) and calls L.linalg
CASES = {
    "vector_norm": lambda L: L.linalg.vector_norm(_v(L)),
    "vector_norm_all": lambda L: L.linalg.vector_norm(_A(L)),
    "vector_norm_1_dim": lambda L: L.linalg.vector_norm(_A(L), 1, dim=1),
    "vector_norm_inf_dims": lambda L: L.linalg.vector_norm(_A(L), math.inf, dim=(0, 2)),
    "vector_norm_-inf": lambda L: L.linalg.vector_norm(_A(L), -math.inf),
    "vector_norm_0": lambda L: L.linalg.vector_norm(_A(L), 0),
    "vector_norm_3_keepdim": lambda L: L.linalg.vector_norm(_A(L), 3, dim=-1, keepdim=True),
    "vector_norm_dtype": lambda L: L.linalg.vector_norm(_A(L), dtype=L.float64),
    "vector_norm_integral": lambda L: L.linalg.vector_norm(L.arange(3)),
    "vector_norm_narrowing_dtype": lambda L: L.linalg.vector_norm(_A(L), dtype=L.float16),
    "vector_norm_out": lambda L: L.linalg.vector_norm(_A(L), out=L.empty(())),
    "vector_norm_empty_dim_list": lambda L: L.linalg.vector_norm(_A(L), 0.5, dim=[]),
    "vector_norm_repeated_dim": lambda L: L.linalg.vector_norm(L.ones(2, 2), dim=(0, 0)),
    "matrix_norm_fro": lambda L: L.linalg.matrix_norm(_M(L)),
    "matrix_norm_batch": lambda L: L.linalg.matrix_norm(_A(L)),
    "matrix_norm_1": lambda L: L.linalg.matrix_norm(_A(L), 1),
    "matrix_norm_-1": lambda L: L.linalg.matrix_norm(_A(L), -1),
    "matrix_norm_inf": lambda L: L.linalg.matrix_norm(_A(L), math.inf),
    "matrix_norm_-inf": lambda L: L.linalg.matrix_norm(_A(L), -math.inf),
    "matrix_norm_fro_dims": lambda L: L.linalg.matrix_norm(_A(L), "fro", dim=(0, 2)),
    "matrix_norm_1_reversed_dims": lambda L: L.linalg.matrix_norm(_A(L), 1, dim=(2, 0)),
    "matrix_norm_1_keepdim": lambda L: L.linalg.matrix_norm(_A(L), 1, keepdim=True),
    "matrix_norm_inf_dims_keepdim": lambda L: L.linalg.matrix_norm(_A(L), math.inf, dim=(0, 2), keepdim=True),
    "matrix_norm_dtype": lambda L: L.linalg.matrix_norm(_A(L), 1, dtype=L.float64),
    "matrix_norm_empty_inf": lambda L: L.linalg.matrix_norm(L.ones(0, 2), math.inf),
    "matrix_norm_empty_-inf": lambda L: L.linalg.matrix_norm(L.ones(0, 2), -math.inf),
    "matrix_norm_empty_batch_1": lambda L: L.linalg.matrix_norm(L.ones(3, 0, 2), 1, keepdim=True),
    "matrix_norm_1d": lambda L: L.linalg.matrix_norm(_v(L)),
    "matrix_norm_order_3": lambda L: L.linalg.matrix_norm(_A(L), 3),
    "matrix_norm_order_1.5": lambda L: L.linalg.matrix_norm(_A(L), 1.5),
    "matrix_norm_order_str": lambda L: L.linalg.matrix_norm(_A(L), "abc"),
    "matrix_norm_one_dim": lambda L: L.linalg.matrix_norm(_A(L), dim=(0,)),
    "matrix_norm_three_dims": lambda L: L.linalg.matrix_norm(_A(L), dim=(0, 1, 1)),
    "matrix_norm_no_dims": lambda L: L.linalg.matrix_norm(_A(L), dim=()),
    "matrix_norm_same_dims": lambda L: L.linalg.matrix_norm(_A(L), dim=(1, 1)),
    "matrix_norm_integral": lambda L: L.linalg.matrix_norm(L.ones(2, 2, dtype=L.int64)),
    "matrix_norm_dim_out_of_range": lambda L: L.linalg.matrix_norm(_A(L), dim=(0, 5)),
    "norm_vector": lambda L: L.linalg.norm(_v(L)),
    "norm_flattens": lambda L: L.linalg.norm(_A(L)),
    "norm_matrix": lambda L: L.linalg.norm(_M(L)),
    "norm_matrix_1": lambda L: L.linalg.norm(_M(L), 1),
    "norm_matrix_fro": lambda L: L.linalg.norm(_M(L), "fro"),
    "norm_vector_1": lambda L: L.linalg.norm(_v(L), 1),
    "norm_3d_with_ord": lambda L: L.linalg.norm(_A(L), 1),
    "norm_3d_with_str_ord": lambda L: L.linalg.norm(_A(L), "fro"),
    "norm_two_dims_ord": lambda L: L.linalg.norm(_A(L), 1, dim=(0, 1)),
    "norm_one_dim_ord": lambda L: L.linalg.norm(_A(L), 1, dim=1),
    "norm_two_dims": lambda L: L.linalg.norm(_A(L), dim=(0, 1)),
    "norm_str_ord_one_dim": lambda L: L.linalg.norm(_A(L), "fro", dim=1),
    "norm_three_dims": lambda L: L.linalg.norm(_A(L), dim=(0, 1, 2)),
    "norm_no_dims": lambda L: L.linalg.norm(L.ones(2, 2), 1, dim=()),
    "norm_matrix_inf": lambda L: L.linalg.norm(_M(L), math.inf),
    "norm_matrix_-inf_keepdim": lambda L: L.linalg.norm(_M(L), -math.inf, keepdim=True),
    "norm_vector_fro": lambda L: L.linalg.norm(_v(L), "fro"),
    "norm_dtype": lambda L: L.linalg.norm(_M(L), dtype=L.float64),
    "norm_out": lambda L: L.linalg.norm(_v(L), 0, out=L.empty(())),
    "vecdot": lambda L: L.linalg.vecdot(_A(L), _A(L)),
    "vecdot_broadcast_dim": lambda L: L.linalg.vecdot(_A(L), _A(L)[0], dim=1),
    "vecdot_dtypes": lambda L: L.linalg.vecdot(_A(L), _A(L).double()),
    "vecdot_integral": lambda L: L.linalg.vecdot(L.arange(3), L.arange(3)),
    "vecdot_dim_out_of_range": lambda L: L.linalg.vecdot(_A(L), _A(L), dim=5),
    "vecdot_shapes": lambda L: L.linalg.vecdot(_A(L), L.ones(5)),
    "vecdot_out": lambda L: L.linalg.vecdot(_A(L), _A(L), out=L.empty(2, 3)),
    "matmul": lambda L: L.linalg.matmul(_A(L), _M(L).t()),
    "matmul_shapes": lambda L: L.linalg.matmul(_M(L), _M(L)),
    "cross": lambda L: L.linalg.cross(_v(L), L.tensor([1., 2., 3.])),
    "cross_ndims": lambda L: L.linalg.cross(L.ones(2, 3), L.ones(3)),
    "cross_last_dim_not_3": lambda L: L.linalg.cross(L.ones(3, 2), L.ones(3, 2)),
    "cross_dim": lambda L: L.linalg.cross(L.ones(3, 2), L.ones(3, 2), dim=0),
    "cross_dtypes": lambda L: L.linalg.cross(L.ones(3), L.ones(3, dtype=L.float64)),
    "cross_broadcast_error": lambda L: L.linalg.cross(L.ones(4, 3), L.ones(2, 3)),
    "cross_broadcasts": lambda L: L.linalg.cross(L.ones(2, 3, 1), L.ones(3, 4)[None], dim=1),
    "cross_out": lambda L: L.linalg.cross(L.ones(3), L.ones(3), out=L.empty(3)),
}


def _outcome(L, fn):
    try:
        r = fn(L)
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return type(e).__name__, str(e).split("\n")[0]
    return tuple(r.shape), str(r.dtype).split(".")[-1], np.round(r.double().numpy(), 4).tolist()


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(CASES))
def test_linalg_matches_torch(name, torch):
    assert _outcome(npusim, CASES[name]) == _outcome(torch, CASES[name])


@pytest.mark.oracle
@pytest.mark.parametrize("name, fn", [
    ("matrix_norm_1", lambda L, A: L.linalg.matrix_norm(A, 1)),
    ("matrix_norm_-inf", lambda L, A: L.linalg.matrix_norm(A, -math.inf, dim=(0, 2))),
    ("norm_fro", lambda L, A: L.linalg.norm(A, dim=(0, 1))),
    ("vecdot", lambda L, A: L.linalg.vecdot(A, A)),
    ("cross", lambda L, A: L.linalg.cross(A[:, :, :3], A[:, :, 1:])),
])
def test_linalg_gradients_match_torch(name, fn, torch):
    def grad(L):
        A = _A(L).requires_grad_()
        fn(L, A).sum().backward()
        return np.round(A.grad.numpy(), 4).tolist()
    assert grad(npusim) == grad(torch)


def test_norms_by_hand(device):
    m = npusim.tensor([[1., -2.], [3., 4.]], device=device)
    assert LA.vector_norm(npusim.tensor([3., -4.], device=device)).item() == 5.0
    assert LA.matrix_norm(m, 1).item() == 6.0                 # largest column sum of |m|
    assert LA.matrix_norm(m, math.inf).item() == 7.0          # largest row sum
    assert LA.matrix_norm(m, -1).item() == 4.0
    assert math.isclose(LA.norm(m).item(), math.sqrt(30), rel_tol=1e-6)
    assert host(LA.norm(m, dim=1)).tolist() == pytest.approx([math.sqrt(5), 5.0])
    assert host(LA.vecdot(m, m)).tolist() == [5.0, 25.0]
    assert host(LA.cross(npusim.tensor([1., 0., 0.], device=device),
                         npusim.tensor([0., 1., 0.], device=device))).tolist() == [0.0, 0.0, 1.0]
    assert LA.matmul is npusim.matmul


@pytest.mark.parametrize("ord, expected", [("nuc", 7.0), (2, 4.0), (-2, 3.0)])
def test_matrix_norms_from_singular_values(ord, expected):
    # the singular values of diag(3, -4) are 4 and 3
    m = npusim.tensor([[3., 0.], [0., -4.]])
    assert LA.matrix_norm(m, ord).item() == pytest.approx(expected)
    assert LA.norm(m, ord).item() == pytest.approx(expected)


def test_bad_arguments_raise_torchs_errors():
    with pytest.raises(RuntimeError, match="^linalg.matrix_norm: The input tensor A must have at least 2 dimensions.$"):
        LA.matrix_norm(npusim.ones(3))
    with pytest.raises(RuntimeError, match="^linalg.matrix_norm: Order 3 not supported.$"):
        LA.matrix_norm(npusim.ones(2, 2), 3)
    with pytest.raises(RuntimeError, match=r"^linalg.matrix_norm: dims must be different. Got \(1, 1\)$"):
        LA.matrix_norm(npusim.ones(2, 2, 2), dim=(1, 1))
    with pytest.raises(RuntimeError, match=r"^linalg.norm: If dim is specified, it must be of length 1 or 2. "
                                           r"Got \[0, 1, 2\]$"):
        LA.norm(npusim.ones(2, 2, 2), dim=(0, 1, 2))
    with pytest.raises(RuntimeError, match="^linalg.vecdot: Expected x and y to have the same dtype, but found x of "
                                           "type Float and y of type Double instead$"):
        LA.vecdot(npusim.ones(3), npusim.ones(3, dtype=npusim.float64))
    with pytest.raises(RuntimeError, match="^linalg.cross: inputs must have the same number of dimensions.$"):
        LA.cross(npusim.ones(2, 3), npusim.ones(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # torch.cross's warning about the default dim
        with pytest.raises(RuntimeError, match="^linalg.cross: inputs must have the same number of dimensions.$"):
            npusim.cross(npusim.ones(3), npusim.ones(1, 3))
