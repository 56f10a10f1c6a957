"""``npusim.utils.hooks`` (torch.utils.hooks): ``RemovableHandle``, what every hook registration returns."""
from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Any

__all__ = ["RemovableHandle", "unserializable_hook"]


def _ref(d):
    # torch needs weak-referenceable dicts (OrderedDicts); a plain dict is held strongly instead of failing
    try:
        return weakref.ref(d)
    except TypeError:
        return lambda: d


class RemovableHandle:
    r"""A handle which provides the capability to remove a hook.

    Args:
        hooks_dict (dict): A dictionary of hooks, indexed by hook ``id``.
        extra_dict (Union[dict, List[dict]]): An additional dictionary or list of
            dictionaries whose keys will be deleted when the same keys are
            removed from ``hooks_dict``.
    """

    id: int
    next_id: int = 0

    def __init__(self, hooks_dict: Any, *, extra_dict: Any = None) -> None:
        self.hooks_dict_ref = _ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        self.extra_dict_ref: tuple = ()
        if isinstance(extra_dict, dict):
            self.extra_dict_ref = (_ref(extra_dict),)
        elif isinstance(extra_dict, list):
            self.extra_dict_ref = tuple(_ref(d) for d in extra_dict)

    def remove(self) -> None:
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            d = ref()
            if d is not None and self.id in d:
                del d[self.id]

    def __getstate__(self):
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state) -> None:
        # a hooks dict gone before pickling becomes a dead reference
        self.hooks_dict_ref = weakref.ref(OrderedDict()) if state[0] is None else _ref(state[0])
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        self.extra_dict_ref = () if len(state) < 3 or state[2] is None else tuple(_ref(d) for d in state[2])

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, type: Any, value: Any, tb: Any) -> None:
        self.remove()


def unserializable_hook(f):
    """Mark a function as an unserializable hook (torch then does not warn that it is not saved)."""
    f.__torch_unserializable__ = True
    return f

