"""Every registered algorithm as a Ray Tune trainable (RLlib's `tune.Tuner("PPO", ...)`).

`AlgorithmTrainable` wraps one tfrl `Algorithm` in Tune's class API: `setup` builds the
algorithm from the trial's config (an RLlib-style dict), `step` is one `train()` call and
returns its result dict, `save_checkpoint`/`load_checkpoint` write and read tfrl's own
checkpoints (`Algorithm.save`/`restore`), so that Population Based Training can copy one
trial's state into another and perturb its hyperparameters. `reset_config` rebuilds the
algorithm in the same actor (Tune's `reuse_actors`), which spares a trial TensorFlow's
start-up.

Resources come from the config: the trial's own process asks for `num_cpus_for_driver`
CPUs (`DEFAULT_TRIAL_CPUS`, a fraction, when the config does not set it, so that several
small trials share a core), each rollout worker for `num_cpus_per_worker` /
`num_gpus_per_worker`, and the learner for `num_gpus`; they form one placement group per
trial.

`register_trainables()` registers every name of `tfrl.algorithms.registry.ALGORITHMS`
with Tune's registry (`import tfrl.tune` does it), so `tune.Tuner("PPO", ...)` finds
tfrl's PPO by name.
"""

import glob
import os
from typing import Any, Dict, List, Optional, Type

from ray import tune
from ray.tune.execution.placement_groups import PlacementGroupFactory
from ray.tune.registry import ENV_CREATOR, _global_registry

from tfrl.algorithms.registry import (ALGORITHMS, canonical_name, get_algorithm_class,
                                      get_config_class)
from tfrl.env.registry import _ENV_CREATORS
from tfrl.env.registry import register_env as register_tfrl_env
from tfrl.utils.search_transforms import derive_config

#: CPUs of a trial's own process when the config sets no `num_cpus_for_driver`.
DEFAULT_TRIAL_CPUS = 0.5
CHECKPOINT_GLOB = "checkpoint_*"


def _config_dict(config: Any) -> Dict[str, Any]:
    """The algorithm's config dict; a sweep's searched variables turned into the config
    keys they derive (`tfrl.utils.search_transforms.derive_config`)."""
    if hasattr(config, "to_dict"):  # an AlgorithmConfig
        return config.to_dict()
    return derive_config(config or {})


def trial_bundles(config: Any, algo: str = "PPO") -> List[Dict[str, float]]:
    """The placement-group bundles of one trial of `algo`: its own process (the
    learner), then one per rollout worker and one per evaluation worker.

    Example:
        >>> trial_bundles({"num_workers": 2, "num_cpus_per_worker": 0.25})
        [{'CPU': 0.5, 'GPU': 0.0}, {'CPU': 0.25, 'GPU': 0.0}, {'CPU': 0.25, 'GPU': 0.0}]
    """
    given = _config_dict(config)
    resolved = get_config_class(algo).from_dict(given)  # the algorithm's defaults
    learner = {"CPU": float(given.get("num_cpus_for_driver", DEFAULT_TRIAL_CPUS)),
               "GPU": float(resolved["num_gpus"] or 0)}
    worker = {"CPU": float(resolved["num_cpus_per_worker"]),
              "GPU": float(resolved["num_gpus_per_worker"] or 0)}
    count = int(resolved["num_workers"] or 0) + int(resolved["evaluation_num_workers"] or 0)
    return [learner] + [dict(worker) for _ in range(count)]


def _known_env(env: Any) -> None:
    """Makes an env name registered with Tune's registry (in the driver) known to tfrl's
    registry in this trial process."""
    if isinstance(env, str) and env not in _ENV_CREATORS and \
            _global_registry.contains(ENV_CREATOR, env):
        register_tfrl_env(env, _global_registry.get(ENV_CREATOR, env))


def share_env_creators() -> None:
    """Registers every env creator of tfrl's registry with Tune's (shared with the trial
    processes), so a trial finds an env the driver registered with
    `tfrl.env.registry.register_env`."""
    for name, creator in list(_ENV_CREATORS.items()):
        if not _global_registry.contains(ENV_CREATOR, name):
            tune.register_env(name, creator)


def find_checkpoint(checkpoint: Any) -> str:
    """The tfrl checkpoint directory inside a Tune checkpoint directory (or `checkpoint`
    itself if it is one).

    Raises:
        ValueError: If the directory holds no `checkpoint_NNNNNN` written by `save()`.
    """
    path = os.fspath(checkpoint)
    found = sorted(glob.glob(os.path.join(path, CHECKPOINT_GLOB)))
    if found:
        return found[-1]
    if os.path.basename(os.path.normpath(path)).startswith("checkpoint_"):
        return path
    raise ValueError(f"load_checkpoint(): {path!r} holds no tfrl checkpoint "
                     "(checkpoint_NNNNNN, written by Algorithm.save); pass the directory a "
                     "trial's save_checkpoint() wrote.")


class AlgorithmTrainable(tune.Trainable):
    """A Ray Tune trainable running one tfrl algorithm (a subclass per registered name).

    Args (Tune passes them):
        config: The trial's algorithm config, an RLlib-style dict (`env` included).

    Attributes:
        algorithm: The tfrl `Algorithm` of this trial.
    """

    algo_name = "PPO"
    algorithm: Any

    @classmethod
    def default_resource_request(cls, config: Dict[str, Any]) -> PlacementGroupFactory:
        return PlacementGroupFactory(trial_bundles(config, cls.algo_name), strategy="PACK")

    def setup(self, config: Dict[str, Any]) -> None:
        config = _config_dict(config)
        _known_env(config.get("env"))
        self.algorithm = get_algorithm_class(self.algo_name)(config=config)

    def step(self) -> Dict[str, Any]:
        return self.algorithm.train()

    def save_checkpoint(self, checkpoint_dir: str) -> None:
        self.algorithm.save(checkpoint_dir)

    def load_checkpoint(self, checkpoint: Any) -> None:
        self.algorithm.restore(find_checkpoint(checkpoint))
        self._apply_learning_rate()

    def _apply_learning_rate(self) -> None:
        """The trial's `lr` over the checkpoint's: a restored optimizer brings back the
        learning rate it was saved with, but a trial that PBT perturbed runs with its own
        (unless an `lr_schedule` sets it)."""
        config = self.algorithm.config
        if config.get("lr_schedule") or config.get("lr") is None:
            return
        for policy in self.algorithm.workers.local_worker().policy_map.values():
            optimizer = getattr(policy, "optimizer", None)
            if optimizer is not None and hasattr(optimizer, "learning_rate"):
                optimizer.learning_rate = float(config["lr"])
        self.algorithm.workers.sync_weights()

    def reset_config(self, new_config: Dict[str, Any]) -> bool:
        self.algorithm.stop()
        self.setup(new_config)
        self.config = new_config
        return True

    def cleanup(self) -> None:
        self.algorithm.stop()


def _trainable_class(name: str) -> Type[AlgorithmTrainable]:
    cls_name = f"{name}Trainable"
    cls = type(cls_name, (AlgorithmTrainable,), {
        "algo_name": name, "__module__": __name__, "__qualname__": cls_name,
        "__doc__": f"tfrl's {name} as a Ray Tune trainable (see AlgorithmTrainable)."})
    globals()[cls_name] = cls  # pickled by reference into the trial processes
    return cls


#: Registered algorithm name -> its trainable class.
TRAINABLES: Dict[str, Type[AlgorithmTrainable]] = {
    name: _trainable_class(name) for name in ALGORITHMS}


def get_trainable(name: str) -> Type[AlgorithmTrainable]:
    """The trainable class of a registered algorithm, named in any case.

    Raises:
        ValueError: For an unknown name (naming the closest one).
    """
    canonical = canonical_name(name)
    if canonical not in TRAINABLES:
        get_algorithm_class(canonical)  # raises the registry's message
    return TRAINABLES[canonical]


def register_trainables() -> None:
    """Registers every tfrl algorithm with Tune's registry under its name."""
    for name, cls in TRAINABLES.items():
        tune.register_trainable(name, cls)


def _trainable(trainable: Any) -> Any:
    if isinstance(trainable, str) and canonical_name(trainable) in TRAINABLES:
        return get_trainable(trainable)
    return trainable


def Tuner(trainable: Any = None, *, param_space: Optional[Dict[str, Any]] = None,
          **kwargs: Any) -> tune.Tuner:
    """`ray.tune.Tuner` with tfrl's algorithms: `trainable` may be a name in any case
    ("PPO", "ppo"); env names registered with tfrl's registry reach the trials.

    Example (not run):
        tuner = tfrl.tune.Tuner("PPO", param_space={"env": "CartPole-v1",
                                                    "lr": tune.grid_search([1e-3, 3e-4])},
                                tune_config=tune.TuneConfig(metric="episode_reward_mean",
                                                            mode="max"))
        best = tuner.fit().get_best_result()
    """
    share_env_creators()
    return tune.Tuner(_trainable(trainable), param_space=param_space, **kwargs)


def run(run_or_experiment: Any, **kwargs: Any) -> Any:
    """`ray.tune.run` (RLlib's `tune.run("PPO", config=..., stop=...)`) with tfrl's
    algorithms by name; returns Tune's `ExperimentAnalysis`."""
    share_env_creators()
    return tune.run(_trainable(run_or_experiment), **kwargs)
