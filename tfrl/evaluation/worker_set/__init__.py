"""The worker set (RLlib's `ray.rllib.evaluation.worker_set`): a local rollout worker plus
remote ones.

* `worker_set`: the `WorkerSet` class;
* `handles`: how callers reach one remote worker (`WorkerHandle`, `ThreadWorkerHandle`,
  `WorkerCrashedError`);
* `failures`: the remote workers and how they survive crashes (`RemoteWorkers`);
* `state`: what a new or recreated remote worker is given.
"""

from tfrl.evaluation.worker_set.failures import MAX_RECREATIONS_PER_CALL
from tfrl.evaluation.worker_set.worker_set import WorkerSet

__all__ = ["MAX_RECREATIONS_PER_CALL", "WorkerSet"]
