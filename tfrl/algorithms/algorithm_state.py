"""What an Algorithm checkpoints of its local worker, and action post-processing.

`get_worker_state(worker)` gathers every policy's `get_state()` (weights, optimizer
variables, counters, RNG states, schedule positions) and every filter's `get_state()`,
as plain values and numpy arrays (no pickle); `set_worker_state` puts them back.
"""

from typing import Any, Dict

import gymnasium as gym
import numpy as np
import tree

from tfrl.core import types
from tfrl.policy.nonfinite import NonFiniteStateError
from tfrl.policy.tf_policy import TFPolicy
from tfrl.policy.tf_policy_state import check_finite_state
from tfrl.utils.spaces.space_utils import space_structure


def get_worker_state(worker: types.Worker) -> Dict[str, Any]:
    """`{"policies": {pid: state}, "filters": {pid: state}, "global_vars": ...}`."""
    return {
        "policies": {pid: worker.policy_map[pid].get_state() for pid in worker.policy_map},
        "filters": {pid: f.get_state() for pid, f in worker.filters.items()},
        "global_vars": dict(worker.global_vars or {}),
    }


def set_worker_state(worker: types.Worker, state: Dict[str, Any]) -> None:
    """Restores a `get_worker_state` result into a worker with the same policies.

    Raises:
        ValueError: If the worker's policies differ from the saved ones.
        NonFiniteStateError: If a policy's weights or optimizer variables hold NaN or
            inf (checked for every policy before any is restored).
    """
    saved, present = sorted(state["policies"]), sorted(worker.policy_map)
    if saved != present:
        raise ValueError(f"restore(): the checkpoint holds policies {saved}; this algorithm "
                         f"has {present}. Build it with the same multiagent policies.")
    for pid, policy_state in state["policies"].items():
        policy = worker.policy_map[pid]
        if isinstance(policy, TFPolicy) and isinstance(policy_state, dict):
            try:
                check_finite_state(policy, policy_state)
            except NonFiniteStateError as error:
                raise NonFiniteStateError(f"policy {pid!r}: {error}") from None
    for pid, policy_state in state["policies"].items():
        worker.policy_map[pid].set_state(policy_state)
    for pid, filter_state in state["filters"].items():
        if pid in worker.filters:
            worker.filters[pid].set_state(filter_state)
    if state.get("global_vars"):
        worker.set_global_vars(state["global_vars"])


def unsquash_and_clip(action: Any, space: gym.Space, unsquash: bool, clip: bool) -> Any:
    """Maps actions of bounded Box spaces from [-1, 1] to the bounds (`unsquash`) and/or
    clips them into the bounds (`clip`), as the sampler does before stepping the env."""
    spaces = tree.flatten(space_structure(space))
    actions = tree.flatten(action)
    out = []
    for a, s in zip(actions, spaces):
        if isinstance(s, gym.spaces.Box) and np.all(np.isfinite(s.low)) and np.all(
                np.isfinite(s.high)):
            a = np.asarray(a)
            if unsquash:
                a = s.low + (np.clip(a, -1.0, 1.0) + 1.0) * (s.high - s.low) / 2.0
            elif clip:
                a = np.clip(a, s.low, s.high)
            a = a.astype(s.dtype)
        out.append(a)
    return tree.unflatten_as(action, out) if len(out) == len(actions) else action
