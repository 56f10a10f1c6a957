"""``swap_in_optimizer_params_and_state``: run an optimizer for a while on other parameters and state, as
``torch.optim.swap_in_optimizer_params_and_state`` (torch 2.13's checks and messages)."""
from __future__ import annotations

import contextlib
from collections import defaultdict
from typing import Any, NamedTuple

from ..core.tensor import Tensor

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


class _GroupSwapinInfo(NamedTuple):
    """One parameter group: the live group dict (changed in place), the swap-in group (hyperparameters and
    packed ids) and the swap-in parameters in the order of those ids."""
    live_group: dict
    swapin_group: dict
    swapin_params: list


def _validate_state_field(state: Any) -> dict:
    if not isinstance(state, dict):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping packed parameter ids "
                           f"to per-param state dicts, got {type(state).__name__}.")
    if any(isinstance(k, Tensor) for k in state):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style state keyed by packed parameter ids.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(f"{_NAME} requires per-parameter optimizer state entries to be dictionaries.")
    return state


def _validate_param_groups_field(optimizer, param_groups: Any) -> list:
    if not isinstance(param_groups, list):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['param_groups'] to be a list of param-group dicts, "
                           f"got {type(param_groups).__name__}.")
    if len(optimizer.param_groups) != len(param_groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups than the live optimizer.")
    return param_groups


def _validate_group_against_live(idx: int, group: dict, swapin_group: Any) -> list:
    if not isinstance(swapin_group, dict):
        raise RuntimeError(f"{_NAME} requires each optimizer param group to be a dictionary.")
    swapin_param_ids = swapin_group.get("params")
    if not isinstance(swapin_param_ids, list) or not all(isinstance(pid, int) for pid in swapin_param_ids):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style param_groups[*]['params'] entries keyed "
                           f"by packed parameter ids.")
    if len(group["params"]) != len(swapin_param_ids):
        raise RuntimeError(f"swapin_optim_state param group {idx} has a different number of params than the live "
                           f"optimizer param group.")
    swapin_only = [k for k in swapin_group if k not in group]
    live_only = [k for k in group if k not in swapin_group]
    if swapin_only or live_only:
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style param group keys to exactly match the "
                           f"live optimizer group keys for group {idx}. Keys only in swap-in: {swapin_only}. Keys "
                           f"only in live: {live_only}.")
    return swapin_param_ids


def _prepare_swap_in(optimizer, swapin_parameters, swapin_optim_state):
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    swapin_state = _validate_state_field(swapin_optim_state.get("state"))
    swapin_param_groups = _validate_param_groups_field(optimizer, swapin_optim_state.get("param_groups"))
    # packed ids address parameters in param_groups order: the explicit tensors are matched to groups by position
    flat_parameters = list(swapin_parameters.values())
    offset = 0
    seen_param_ids: set = set()
    infos = []
    for idx, (group, swapin_group) in enumerate(zip(optimizer.param_groups, swapin_param_groups, strict=True)):
        swapin_param_ids = _validate_group_against_live(idx, group, swapin_group)
        seen_param_ids.update(swapin_param_ids)
        next_offset = offset + len(swapin_param_ids)
        if next_offset > len(flat_parameters):
            raise RuntimeError(f"{_NAME} requires the explicit parameter state to match optimizer.param_groups "
                               f"ordering.")
        infos.append(_GroupSwapinInfo(group, swapin_group, flat_parameters[offset:next_offset]))
        offset = next_offset
    extra_keys = [k for k in swapin_state if k not in seen_param_ids]
    if extra_keys:
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be keyed only by packed parameter ids "
                           f"from param_groups[*]['params']; got extra keys {extra_keys!r}.")
    return swapin_state, infos


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters, swapin_optim_state):
    """Temporarily replace an optimizer's parameters and state with ``swapin_parameters`` (a dict, in the order of
    the optimizer's parameters) and ``swapin_optim_state`` (``optimizer.state_dict()``-shaped), restoring them on
    exit. In-place changes to the swap-in tensors (``step()``'s updates) stay in them; other changes to the state do
    not outlive the context."""
    state, infos = _prepare_swap_in(optimizer, swapin_parameters, swapin_optim_state)
    original_state = optimizer.state
    # shallow copies keep the identity of each original ``params`` list
    original_group_snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        swapin_state: defaultdict = defaultdict(dict)
        for info in infos:
            info.live_group["params"] = info.swapin_params
            for key, value in info.swapin_group.items():
                if key != "params":
                    info.live_group[key] = value
            for swapin_param, param_id in zip(info.swapin_params, info.swapin_group["params"], strict=True):
                swapin_state[swapin_param] = dict(state.get(param_id, {}))
        optimizer.state = swapin_state
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, original_group_snapshots, strict=True):
            group.clear()
            group.update(snapshot)
        optimizer.state = original_state
