"""What a new or recreated remote worker is given so it acts like the others.

A worker that joins a `WorkerSet` (added, or recreated after a crash) gets the current
weights, observation filters and global vars: from the local worker when there is one,
else from a healthy remote worker.
"""

import concurrent.futures
from typing import Any, Dict, List, Optional, Sequence, Tuple

from tfrl.evaluation.worker_set.handles import WorkerHandle, get_results

# (weights, filters, global vars); None entries are not sent.
WorkerState = Tuple[Optional[dict], Optional[dict], Optional[dict]]


def current_state(local_worker: Any, remotes: Sequence[WorkerHandle],
                  global_vars: Optional[dict], timeout_s: float) -> WorkerState:
    """The state to give a new worker.

    Args:
        local_worker: The local worker, or None.
        remotes: Remote workers to ask when there is no local worker (the first alive).
        global_vars: The last global vars sent by `sync_weights`, if any.
        timeout_s: Longest wait for a remote worker's answer.
    """
    if local_worker is not None:
        global_vars = global_vars or local_worker.get_global_vars()
        return local_worker.get_weights(), local_worker.get_filters(), global_vars
    for handle in remotes:
        if handle.is_alive():
            weights, filters = get_results(
                [handle.call("get_weights"), handle.call("get_filters")], timeout_s, "workers")
            return weights, filters, global_vars
    return None, None, global_vars


def send_state(handle: WorkerHandle, state: WorkerState) -> List[concurrent.futures.Future]:
    """Sends `state` to `handle` (ahead of any later call); the futures of the calls."""
    weights, filters, global_vars = state
    futures = []
    if weights is not None:
        futures.append(handle.call("set_weights", handle.share(weights),
                                   global_vars=global_vars))
    if filters:
        futures.append(handle.call("sync_filters", filters))
    return futures


def policy_spaces(worker: Any) -> Dict[Any, Tuple[Any, Any]]:
    """PolicyID -> (original observation space, action space) of a worker's policies.

    The local worker of a set with remote workers has no env; it builds its policies
    from these (RolloutWorker's `spaces` argument).
    """
    return {pid: (getattr(p.observation_space, "original_space", p.observation_space),
                  p.action_space) for pid, p in worker.policy_map.items()}
