"""pdist, tril_indices / triu_indices, F's *_with_indices pools and F.celu_ / F.selu_ (torch's names)."""
import numpy as np
import pytest

import npusim
import npusim.nn.functional as F
from conftest import host


def test_triangle_indices_row_by_row(device):
    assert npusim.tril_indices(3, 3, device=device).tolist() == [[0, 1, 1, 2, 2, 2], [0, 0, 1, 0, 1, 2]]
    upper = npusim.triu_indices(3, 4, 1, device=device)
    assert upper.tolist() == [[0, 0, 0, 1, 1, 2], [1, 2, 3, 2, 3, 3]] and upper.dtype is npusim.int64
    assert upper.device.type == device
    assert npusim.tril_indices(0, 0).shape == (2, 0)
    assert npusim.triu_indices(2, 2, dtype=npusim.int32).dtype is npusim.int32
    with pytest.raises(RuntimeError, match="row must be non-negative"):
        npusim.tril_indices(-1, 2)


def test_pdist_is_the_upper_triangle_of_the_distance_matrix(device):
    x = np.random.default_rng(0).standard_normal((5, 3))
    t = npusim.tensor(x, device=device, requires_grad=True)
    d = npusim.pdist(t)
    i, j = np.triu_indices(5, 1)
    # float64 norms of 3 differences: a few ulp
    np.testing.assert_allclose(host(d.detach()), np.linalg.norm(x[i] - x[j], axis=1), rtol=1e-13)
    np.testing.assert_allclose(host(F.pdist(t, p=1).detach()), np.abs(x[i] - x[j]).sum(1), rtol=1e-13)
    d.sum().backward()
    assert t.grad.shape == (5, 3)
    z = npusim.zeros(3, 2, device=device, requires_grad=True)
    F.pdist(z).sum().backward()
    assert host(z.grad).tolist() == [[0.0, 0.0]] * 3          # a zero distance has gradient 0
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 3D"):
        npusim.pdist(npusim.ones(2, 3, 4, device=device))
    with pytest.raises(RuntimeError, match="non-negative p"):
        npusim.pdist(npusim.ones(2, 3, device=device), p=-1)


def test_with_indices_pools_always_return_indices(device):
    x = npusim.arange(16.0, device=device).reshape(1, 1, 4, 4)
    out, idx = F.max_pool2d_with_indices(x, 2)
    assert out.tolist() == [[[[5.0, 7.0], [13.0, 15.0]]]] and idx.tolist() == [[[[5, 7], [13, 15]]]]
    assert len(F.max_pool1d_with_indices(x[0], 2, return_indices=False)) == 2
    assert F.adaptive_max_pool2d_with_indices(x, 1)[1].tolist() == [[[[15]]]]
    assert F.max_pool3d_with_indices(x.unsqueeze(0), 1)[0].shape == (1, 1, 1, 4, 4)
    assert F.adaptive_max_pool3d_with_indices(x.unsqueeze(0), 1)[1].shape == (1, 1, 1, 1, 1)
    assert F.adaptive_max_pool1d_with_indices(x[0], 2)[1].shape == (1, 4, 2)


def test_in_place_selu_and_celu_are_torchs_functions(device):
    assert F.celu_ is npusim.celu_ and F.selu_ is npusim.selu_
    x = npusim.tensor([-1.0, 2.0], device=device)
    assert F.celu_(x, 2.0) is x and x.tolist() == pytest.approx([2 * (np.exp(-0.5) - 1), 2.0])


@pytest.mark.oracle
def test_values_and_gradients_match_torch(torch):
    x = np.random.default_rng(1).standard_normal((6, 4))
    for p in (0, 1, 2, 3.5, float("inf")):
        ours = npusim.tensor(x, requires_grad=True)
        theirs = torch.tensor(x, requires_grad=True)
        d1, d2 = npusim.pdist(ours, p), torch.pdist(theirs, p)
        np.testing.assert_allclose(d1.detach().numpy(), d2.detach().numpy(), rtol=1e-12)   # float64, 4 terms
        if p != 0:
            d1.sum().backward()
            d2.sum().backward()
            np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10, atol=1e-12)
    for args in ((3, 3), (4, 2, 1), (2, 5, -1), (0, 3)):
        assert npusim.tril_indices(*args).tolist() == torch.tril_indices(*args).tolist()
        assert npusim.triu_indices(*args).tolist() == torch.triu_indices(*args).tolist()
    y = np.random.default_rng(2).standard_normal((2, 3, 5, 5)).astype(np.float32)
    o, i = F.max_pool2d_with_indices(npusim.tensor(y), 3, 2, 1)
    to, ti = torch.nn.functional.max_pool2d_with_indices(torch.tensor(y), 3, 2, 1)
    assert np.array_equal(o.numpy(), to.numpy()) and np.array_equal(i.numpy(), ti.numpy())
