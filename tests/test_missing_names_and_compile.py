"""torch names npusim lacks say why; npusim.compile runs the program eagerly, with torch's argument checks."""
from __future__ import annotations

import numpy as np
import pytest

import npusim
from conftest import host


@pytest.mark.parametrize("name, why", [("fx", "deliberately out of scope for npusim (graph capture"),
                                       ("sparse", "deliberately out of scope for npusim (sparse tensors)"),
                                       ("signal", "not in npusim yet (planned)")])
def test_a_missing_torch_name_says_why(name, why):
    with pytest.raises(AttributeError) as info:
        getattr(npusim, name)
    assert str(info.value).startswith(f"module 'npusim' has no attribute '{name}': torch.{name} is {why}")
    with pytest.raises(AttributeError, match=r"has no attribute 'no_such_name'$"):
        npusim.no_such_name


def test_compile_returns_the_model_which_runs_eagerly(device):
    model = npusim.nn.Linear(3, 2).to(device)
    assert npusim.compile(model) is model
    assert npusim.compile(model, mode="max-autotune", fullgraph=True, dynamic=False) is model

    @npusim.compile
    def double(x):
        return 2 * x

    @npusim.compile(mode="reduce-overhead")
    def triple(x):
        return 3 * x
    x = npusim.ones(2, device=device)
    np.testing.assert_array_equal(host(double(x)), [2, 2])
    np.testing.assert_array_equal(host(triple(x)), [3, 3])


@pytest.mark.oracle
@pytest.mark.parametrize("kwargs", [{"mode": "bad"}, {"mode": "default", "options": {}}, {"model": 3}])
def test_compile_refuses_what_torch_refuses(torch, kwargs):
    kw = dict(kwargs)
    theirs_model = kw.pop("model", torch.nn.Linear(1, 1))
    ours_model = kwargs.get("model", npusim.nn.Linear(1, 1))
    # torch.compile's first use patches torch process-wide (it turns off torch.distributions' argument
    # validation); put that back so later oracle tests see torch's defaults.
    validate = torch.distributions.Distribution._validate_args
    try:
        with pytest.raises(Exception) as theirs:
            torch.compile(theirs_model, **kw)
    finally:
        torch.distributions.Distribution.set_default_validate_args(validate)
    with pytest.raises(type(theirs.value)) as ours:
        npusim.compile(ours_model, **kw)
    assert str(ours.value) == str(theirs.value)
