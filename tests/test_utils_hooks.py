"""``npusim.utils.hooks.RemovableHandle`` at torch's path, with torch's constructor and behaviour."""
from __future__ import annotations

import pickle
from collections import OrderedDict

import pytest

import npusim
import npusim.nn as nn
from npusim.utils.hooks import RemovableHandle, unserializable_hook


@pytest.mark.oracle
@pytest.mark.parametrize("extra", ["none", "dict", "list"])
def test_handle_removes_from_its_dicts_as_torch(torch, extra):
    def run(lib_handle):
        hooks, e1, e2 = OrderedDict(), OrderedDict(), OrderedDict()
        kw = {"none": {}, "dict": {"extra_dict": e1}, "list": {"extra_dict": [e1, e2]}}[extra]
        h = lib_handle(hooks, **kw)
        other = lib_handle(hooks, **kw)
        for d in (hooks, e1, e2):
            d[h.id] = "h"
            d[other.id] = "other"
        with h as same:
            assert same is h
        h.remove()  # twice is harmless
        return [list(d.values()) for d in (hooks, e1, e2)], other.id - h.id

    assert run(RemovableHandle) == run(torch.utils.hooks.RemovableHandle)


@pytest.mark.oracle
def test_extra_dicts_are_keyword_only_as_torch(torch):
    for lib_handle in (RemovableHandle, torch.utils.hooks.RemovableHandle):
        with pytest.raises(TypeError, match="positional argument"):
            lib_handle(OrderedDict(), OrderedDict())


def test_module_hooks_return_the_utils_handle_and_old_path_still_works():
    from npusim.nn.modules.module import RemovableHandle as old_path
    assert old_path is RemovableHandle is npusim.utils.hooks.RemovableHandle
    m = nn.Linear(2, 2)
    calls = []
    h = m.register_forward_hook(lambda mod, args, kwargs, out: calls.append(1), with_kwargs=True, always_call=True)
    assert isinstance(h, RemovableHandle)
    m(npusim.ones(1, 2))
    h.remove()
    m(npusim.ones(1, 2))
    assert calls == [1]
    assert not m._forward_hooks and not m._forward_hooks_with_kwargs and not m._forward_hooks_always_called
    g = nn.modules.module.register_module_forward_hook(lambda mod, args, out: calls.append(2), always_call=True)
    m(npusim.ones(1, 2))
    g.remove()
    m(npusim.ones(1, 2))
    assert calls == [1, 2]


def test_pickled_handle_keeps_its_id_and_later_ids_do_not_collide():
    hooks = OrderedDict()
    h = RemovableHandle(hooks)
    hooks[h.id] = "x"
    h2 = pickle.loads(pickle.dumps(h))
    assert h2.id == h.id
    assert RemovableHandle(OrderedDict()).id > h.id
    h2.remove()  # its dict is the unpickled copy: the original keeps the hook
    assert list(hooks) == [h.id]


def test_unserializable_hook_marks_the_function():
    @unserializable_hook
    def f(grad):
        return grad
    assert f.__torch_unserializable__ is True


def test_optimizer_hooks_return_the_utils_handle():
    p = nn.Parameter(npusim.ones(2))
    opt = npusim.optim.SGD([p], lr=0.1)
    calls = []
    handles = [opt.register_step_pre_hook(lambda o, a, k: calls.append("pre")),
               opt.register_step_post_hook(lambda o, a, k: calls.append("post")),
               npusim.optim.optimizer.register_optimizer_step_pre_hook(lambda o, a, k: calls.append("global"))]
    assert all(isinstance(h, RemovableHandle) for h in handles)
    p.grad = npusim.ones(2)
    opt.step()
    for h in handles:
        h.remove()
    opt.step()
    assert calls == ["global", "pre", "post"]
