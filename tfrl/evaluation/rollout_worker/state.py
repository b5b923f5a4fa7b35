"""Saving and restoring a rollout worker, and snapshotting/syncing its filters.

`save_worker` pickles what RLlib's `RolloutWorker.save` does — the observation filters,
each policy's `get_state()` and the `PolicySpec`s (with the env's original observation
spaces, so a policy can be rebuilt) — plus the global vars. Filters travel as their
`get_state()` dicts (numpy arrays), not as objects.

`restore_worker` rebuilds missing policies from their specs and then sets their state
too (RLlib re-adds them without their state; tfrl restores it, so a restored worker
acts like the saved one).
"""

import logging
import pickle
from typing import Any, Dict

from tfrl.utils.filter import Filter

logger = logging.getLogger(__name__)

_FORMAT = "tfrl.RolloutWorker.v1"


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


def get_worker_state(worker: Any) -> Dict[str, Any]:
    """The worker's filters, policy states, policy specs and global vars as a dict."""
    return {
        "format": _FORMAT,
        "filters": {pid: f.get_state() for pid, f in worker.filters.items()},
        "state": {pid: p.get_state() for pid, p in worker.policy_map.items()},
        "policy_specs": dict(worker.policy_map.policy_specs),
        "global_vars": worker.global_vars,
    }


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


def set_worker_state(worker: Any, data: Dict[str, Any]) -> None:
    """Restores a `get_worker_state` dict into `worker`.

    Policies present are given their saved state; missing ones with a saved spec are
    added (`worker.add_policy`) and then given their state; missing ones without a spec
    are skipped with a warning. Filters are set to the saved statistics (with an empty
    buffer); global vars are set if saved.

    Raises:
        ValueError: If `data` is not such a dict.
    """
    if not isinstance(data, dict) or "state" not in data or "filters" not in data:
        raise ValueError(
            "restore() expects bytes from RolloutWorker.save() (set_state() a dict from "
            f"get_state()); received {type(data).__name__}"
            f"{' with keys ' + str(sorted(data)) if isinstance(data, dict) else ''}."
        )
    specs = data.get("policy_specs", {})
    for pid, state in data["state"].items():
        if pid not in worker.policy_map:
            spec = specs.get(pid)
            if spec is None:
                logger.warning("restore(): policy %r is not in this worker and was saved without "
                               "a spec; skipping it.", pid)
                continue
            worker.add_policy(policy_id=pid, policy_cls=spec.policy_class,
                              observation_space=spec.observation_space,
                              action_space=spec.action_space, config=spec.config)
        worker.policy_map[pid].set_state(state)
    for pid, fstate in data["filters"].items():
        if pid in worker.filters:
            worker.filters[pid].set_state(fstate)
            worker.filters[pid].clear_buffer()
    if data.get("global_vars"):
        worker.set_global_vars(data["global_vars"])
