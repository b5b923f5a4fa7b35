"""A rollout worker's state — the one layout that `RolloutWorker.save`/`get_state` and an
Algorithm's checkpoint both use — and snapshotting/syncing its observation filters.

`get_worker_state(worker)` is a dict of plain values and numpy arrays:

    {"format": "tfrl.RolloutWorker.v2",
     "policies": {pid: policy.get_state()},    # weights, optimizer variables, counters, ...
     "filters": {pid: filter.get_state()},
     "global_vars": {...},
     "policy_specs": {pid: PolicySpec}}         # only with `specs=True`

`save_worker` pickles it with the `PolicySpec`s (with the env's original observation
spaces, so a policy can be rebuilt), as RLlib's `RolloutWorker.save` does; an Algorithm
checkpoints it without them (its checkpoint holds no classes). Filters travel as their
`get_state()` dicts, not as objects.

`set_worker_state` rebuilds missing policies from their specs and then sets their state
too (RLlib re-adds them without their state; tfrl restores it, so a restored worker acts
like the saved one); with `same_policies=True` (an Algorithm's restore) the saved and the
present policy ids must match. A state whose weights hold NaN or inf is refused before
any policy is changed. The layout of tfrl's first worker saves (`"state"` in place of
`"policies"`) is read too.
"""

import logging
import pickle
from typing import Any, Dict

from tfrl.policy.nonfinite import NonFiniteStateError
from tfrl.policy.tf_policy import TFPolicy
from tfrl.policy.tf_policy_state import check_finite_state
from tfrl.utils.filter import Filter

logger = logging.getLogger(__name__)

_FORMAT = "tfrl.RolloutWorker.v2"


def get_filters(filters: Dict[Any, Filter], flush_after: bool = False) -> Dict[Any, Filter]:
    """`{pid: filter.as_serializable()}`; with `flush_after` each buffer is then cleared."""
    snapshot = {pid: f.as_serializable() for pid, f in filters.items()}
    if flush_after:
        for f in filters.values():
            f.clear_buffer()
    return snapshot


def sync_filters(filters: Dict[Any, Filter], new_filters: Dict[Any, Filter]) -> None:
    """`filters[pid].sync(new_filters[pid])` for every local filter.

    Raises:
        KeyError: If `new_filters` lacks a policy id this worker has a filter for.
    """
    missing = [pid for pid in filters if pid not in new_filters]
    if missing:
        raise KeyError(
            f"sync_filters: no filter given for policies {missing!r}; received filters for "
            f"{sorted(new_filters, key=repr)!r}. Pass one filter per policy of this worker."
        )
    for pid, f in filters.items():
        f.sync(new_filters[pid])


def get_worker_state(worker: Any, *, specs: bool = True) -> Dict[str, Any]:
    """The worker's policy states, filter states, global vars (and policy specs) as a dict.

    Args:
        worker: A RolloutWorker (or anything with `policy_map`, `filters`, `global_vars`).
        specs: Include `policy_specs` (classes and spaces, to rebuild missing policies).
    """
    state = {
        "format": _FORMAT,
        "policies": {pid: p.get_state() for pid, p in worker.policy_map.items()},
        "filters": {pid: f.get_state() for pid, f in worker.filters.items()},
        "global_vars": dict(worker.global_vars or {}),
    }
    if specs:
        state["policy_specs"] = dict(worker.policy_map.policy_specs)
    return state


def save_worker(worker: Any) -> bytes:
    """`get_worker_state(worker)` pickled."""
    return pickle.dumps(get_worker_state(worker))


def restore_worker(worker: Any, objs: bytes) -> None:
    """Restores `save_worker` bytes into `worker` (see `set_worker_state`).

    Raises:
        ValueError: If `objs` is not the output of `RolloutWorker.save()`.
    """
    try:
        data = pickle.loads(objs)
    except Exception as e:
        raise ValueError(f"restore() expects bytes from RolloutWorker.save(); unpickling failed: {e!r}") from e
    set_worker_state(worker, data)


def set_worker_state(worker: Any, data: Dict[str, Any], *, same_policies: bool = False) -> None:
    """Restores a `get_worker_state` dict into `worker`.

    Policies present are given their saved state; missing ones with a saved spec are
    added (`worker.add_policy`) and then given their state; missing ones without a spec
    are skipped with a warning. Filters are set to the saved statistics (with an empty
    buffer); global vars are set if saved.

    Args:
        worker: The worker to restore into.
        data: A `get_worker_state` dict.
        same_policies: Require the worker to have exactly the saved policy ids.

    Raises:
        ValueError: If `data` is not such a dict, or (`same_policies`) the policy ids differ.
        NonFiniteStateError: If a policy's weights or optimizer variables hold NaN or inf
            (checked for every present policy before any is restored).
    """
    policies = data.get("policies", data.get("state")) if isinstance(data, dict) else None
    if not isinstance(policies, dict) or "filters" not in data:
        raise ValueError(
            "restore() expects bytes from RolloutWorker.save() (set_state() a dict from "
            f"get_state()); received {type(data).__name__}"
            f"{' with keys ' + str(sorted(data)) if isinstance(data, dict) else ''}."
        )
    if same_policies:
        saved, present = sorted(policies), sorted(worker.policy_map)
        if saved != present:
            raise ValueError(f"restore(): the checkpoint holds policies {saved}; this algorithm "
                             f"has {present}. Build it with the same multiagent policies.")
    for pid, policy_state in policies.items():
        if pid in worker.policy_map:
            _check_finite(pid, worker.policy_map[pid], policy_state)
    specs = data.get("policy_specs", {})
    for pid, policy_state in policies.items():
        if pid not in worker.policy_map:
            spec = specs.get(pid)
            if spec is None:
                logger.warning("restore(): policy %r is not in this worker and was saved without "
                               "a spec; skipping it.", pid)
                continue
            worker.add_policy(policy_id=pid, policy_cls=spec.policy_class,
                              observation_space=spec.observation_space,
                              action_space=spec.action_space, config=spec.config)
        worker.policy_map[pid].set_state(policy_state)
    for pid, filter_state in data["filters"].items():
        if pid in worker.filters:
            worker.filters[pid].set_state(filter_state)
            worker.filters[pid].clear_buffer()
    if data.get("global_vars"):
        worker.set_global_vars(data["global_vars"])


def _check_finite(pid: Any, policy: Any, policy_state: Any) -> None:
    if isinstance(policy, TFPolicy) and isinstance(policy_state, dict):
        try:
            check_finite_state(policy, policy_state)
        except NonFiniteStateError as error:
            raise NonFiniteStateError(f"policy {pid!r}: {error}") from None
