"""The worker set (RLlib's `ray.rllib.evaluation.worker_set`): a local rollout worker plus
remote ones.

* `worker_set`: the `WorkerSet` class;
* `handles`: how callers reach one remote worker (`WorkerHandle`, `ThreadWorkerHandle`,
  `WorkerCrashedError`);
* `failures`: the remote workers and how they survive crashes (`RemoteWorkers`);
* `state`: what a new or recreated remote worker is given.

The exports are lazy (`tfrl.utils.lazy_exports`): a process that only needs `handles`
(a Ray actor holding an Ape-X replay shard imports it through `WorkerActor`'s module)
does not import the rollout worker, its policies and TensorFlow.
"""

from tfrl.utils.lazy_exports import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, {
    "tfrl.evaluation.worker_set.failures": ["MAX_RECREATIONS_PER_CALL"],
    "tfrl.evaluation.worker_set.worker_set": ["WorkerSet"],
})
