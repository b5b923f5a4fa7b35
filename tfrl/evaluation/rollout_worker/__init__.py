"""The rollout worker (RLlib's `ray.rllib.evaluation.rollout_worker`) and its parts.

* `rollout_worker`: the `RolloutWorker` class;
* `args`: its constructor's arguments (`WorkerArgs`, `check_worker_args`) and host helpers;
* `config`: from an RLlib-style trainer config to those arguments;
* `env`: creating, wrapping, seeding and vectorizing its environment;
* `policies`: building its policies (specs, spaces, preprocessors);
* `learning`: routing batches and gradients to the trainable policies;
* `state`: saving and restoring it, and its observation filters.
"""

from tfrl.evaluation.rollout_worker.rollout_worker import RolloutWorker, get_global_worker

__all__ = ["RolloutWorker", "get_global_worker"]
