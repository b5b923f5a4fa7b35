"""The rollout worker (RLlib's `ray.rllib.evaluation.rollout_worker`) and its parts.

* `rollout_worker`: the `RolloutWorker` class;
* `args`: its constructor's arguments (`WorkerArgs`, `check_worker_args`) and host helpers;
* `config`: from an RLlib-style trainer config to those arguments;
* `env`: creating, wrapping, seeding and vectorizing its environment;
* `policies`: building its policies (specs, spaces, preprocessors);
* `learning`: routing batches and gradients to the trainable policies;
* `state`: saving and restoring it, and its observation filters.

The package's names are imported on first use, so that importing one of its parts (as a
sub-env process does to unpickle `env.SubEnvMaker`) does not import TensorFlow.
"""

from tfrl.utils.lazy_exports import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, {
    "tfrl.evaluation.rollout_worker.rollout_worker": ["RolloutWorker", "get_global_worker"],
})
