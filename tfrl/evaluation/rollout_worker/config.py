"""From an RLlib-style trainer config to the constructor arguments of each rollout worker.

`WorkerSet` receives the algorithm's flat config dict (with the `model` and `multiagent`
subdicts). This module checks its keys and maps them, per worker, to the keyword
arguments of `RolloutWorker` and to the resources of a remote worker:

=============================  ==============================================
trainer config                 RolloutWorker argument
=============================  ==============================================
num_envs_per_worker            num_envs
horizon                        episode_horizon
model                          model_config
multiagent.policies            policy_spec (with the algorithm's policy class)
multiagent.policy_mapping_fn   policy_mapping_fn
multiagent.policies_to_train   policies_to_train
multiagent.observation_fn      observation_fn
multiagent.count_steps_by      count_steps_by
seed                           seed + worker_index (each worker explores differently)
extra_python_environs_for_*    extra_python_environs (driver / remote workers)
the whole dict                 policy_config
same name                      rollout_fragment_length, batch_mode, ... (see below)
=============================  ==============================================

Keys the config does not hold are not passed, so the worker's own defaults apply.
"""

import collections.abc
import dataclasses
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Set

from tfrl.env.registry import get_env_creator
from tfrl.policy.policy import PolicySpec
from tfrl.policy.policy_config import PolicyConfig
from tfrl.utils.config_keys import check_keys

# Trainer-config keys passed to RolloutWorker under the same name.
SAME_NAME_KEYS = (
    "rollout_fragment_length", "batch_mode", "preprocessor_pref", "sample_async",
    "compress_observations", "observation_filter", "clip_rewards", "normalize_actions",
    "clip_actions", "env_config", "record_env", "log_level", "callbacks",
    "remote_worker_envs", "remote_env_batch_wait_ms", "soft_horizon", "no_done_at_end",
    "fake_sampler",
)
# Trainer-config key -> RolloutWorker argument, for renamed keys.
RENAMED_KEYS = {"num_envs_per_worker": "num_envs", "horizon": "episode_horizon",
                "model": "model_config"}
MULTIAGENT_KEYS = ("policies", "policy_mapping_fn", "policies_to_train", "observation_fn",
                   "count_steps_by", "replay_mode", "policy_map_capacity",
                   "policy_map_cache")
# Keys the WorkerSet itself reads (defaults in `WORKER_SET_DEFAULTS`).
WORKER_SET_DEFAULTS = {
    "remote_backend": "ray",  # "ray" (actors) or "thread" (in-process, tests).
    "recreate_failed_workers": False,
    "num_cpus_per_worker": 1,  # RLlib's default; use a fraction on small machines.
    "num_gpus_per_worker": 0,
    "custom_resources_per_worker": {},
    "memory_per_worker": 0,
    "create_env_on_driver": False,
    "sample_timeout_s": 180.0,  # Longest wait for one round of sample() calls.
    "worker_health_probe_timeout_s": 60.0,  # Longest wait for a ping.
    "worker_restore_timeout_s": 600.0,  # Longest wait for a worker to start.
}
# Further keys of the RLlib config that workers or policies read.
_OTHER_WORKER_KEYS = (
    "env", "num_workers", "num_gpus", "_fake_gpus", "framework", "explore",
    "exploration_config", "restart_failed_sub_environments",
    "metrics_episode_collection_timeout_s", "extra_python_environs_for_driver",
    "extra_python_environs_for_worker", "render_env", "custom_vector_env",
    "sample_collector", "enable_connectors", "_disable_preprocessor_api", "seed", "multiagent",
    "input", "input_evaluation", "output", "output_format", "output_compress_columns",
    "output_max_file_size", "shuffle_buffer_size", "postprocess_inputs", "disable_env_checking", "evaluation_config",
    "evaluation_interval", "evaluation_num_workers", "evaluation_duration",
    "in_evaluation", "log_sys_usage", "logger_config",
)
# Keys that RLlib's execution operators (learner threads, replay mixing, target updates)
# read from a trainer config and that no registered algorithm config has yet; a
# WorkerSet built directly (RLlib's API) may carry them for its own execution plan.
EXECUTION_OPERATOR_KEYS = (
    "num_multi_gpu_tower_stacks", "learner_queue_size", "learner_queue_timeout",
    "minibatch_buffer_size", "num_data_load_threads", "target_update_freq",
    "replay_proportion", "num_slots", "simple_optimizer",
)

def worker_keys() -> Set[str]:
    """The keys the WorkerSet, its workers and every TFPolicy read (see the tables above
    and `PolicyConfig`)."""
    return (set(SAME_NAME_KEYS) | set(RENAMED_KEYS) | set(WORKER_SET_DEFAULTS)
            | set(_OTHER_WORKER_KEYS) | {f.name for f in dataclasses.fields(PolicyConfig)})


def valid_config_keys(policy_classes: Iterable[Any] = ()) -> Set[str]:
    """Every key a trainer config given to `WorkerSet` may hold.

    The workers' own keys, `EXECUTION_OPERATOR_KEYS`, and the keys of each policy
    class's config (`policy_class.default_config()`: for an algorithm's policy, every
    key of its algorithm's config dataclass). The algorithm layer is not imported: the
    policy classes bring their config classes with them.
    """
    keys = worker_keys() | set(EXECUTION_OPERATOR_KEYS)
    for policy_class in policy_classes:
        default_config = getattr(policy_class, "default_config", None)
        if callable(default_config):
            keys |= set(default_config())
    return keys


def check_trainer_config(config: Mapping[str, Any], policy_classes: Iterable[Any] = ()) -> None:
    """Raises `ValueError` naming an unknown key (and the closest valid one).

    Valid keys: `valid_config_keys(policy_classes)`. Also checks the `multiagent`
    subdict and `remote_backend`.
    """
    if not isinstance(config, collections.abc.Mapping):
        raise TypeError(f"trainer_config must be a dict; received {type(config).__name__}: "
                        f"{config!r}.")
    multiagent = config.get("multiagent") or {}
    policies = multiagent.get("policies") if isinstance(multiagent, Mapping) else None
    classes = list(policy_classes) + list(_spec_classes(policies))
    check_keys(config, valid_config_keys(classes), "trainer_config")
    check_keys(multiagent, MULTIAGENT_KEYS, "trainer_config['multiagent']")
    backend = config.get("remote_backend", WORKER_SET_DEFAULTS["remote_backend"])
    if backend not in ("ray", "thread"):
        raise ValueError(f"trainer_config['remote_backend'] must be 'ray' or 'thread'; "
                         f"received {backend!r}.")


def check_unsupported(config: Mapping[str, Any]) -> None:
    """Raises `ValueError` for accepted RLlib keys whose behaviour tfrl does not have yet.

    `restart_failed_sub_environments=True` (restart only the sub-env that raised) is
    refused rather than silently ignored; a worker whose env raised re-creates all its
    envs for its next `sample()`, and `recreate_failed_workers=True` replaces it.
    """
    if config.get("restart_failed_sub_environments"):
        raise ValueError(
            "restart_failed_sub_environments=True is not supported yet: tfrl cannot restart "
            "one failed sub-environment alone. Leave it False; a worker whose env raises "
            "passes the error on and re-creates all of its envs for its next sample(), and "
            "recreate_failed_workers=True replaces such a remote worker within the same "
            "sample round.")


def _spec_classes(policies: Any) -> Iterable[type]:
    """The policy classes named in a `multiagent.policies` dict (entries may be
    PolicySpecs, tuples, classes or None)."""
    if not isinstance(policies, collections.abc.Mapping):
        return
    for spec in policies.values():
        if isinstance(spec, type):
            yield spec
        elif isinstance(spec, (tuple, list)) and spec and isinstance(spec[0], type):
            yield spec[0]


def setting(config: Mapping[str, Any], key: str) -> Any:
    """`config[key]`, or the WorkerSet's default for it."""
    value = config.get(key)
    return WORKER_SET_DEFAULTS[key] if value is None else value


def policy_specs(config: Mapping[str, Any], policy_class: Optional[type]) -> Dict[str, PolicySpec]:
    """The `policy_spec` dict: `multiagent.policies`, or `{"default_policy": policy_class}`.

    Entries may be PolicySpecs, 4-tuples, classes or None; a missing class is filled in
    with `policy_class`. `policies` may also be a set/list of ids.

    Raises:
        ValueError: If there are no policies and no `policy_class`, or an entry names no
            class and there is no `policy_class`.
    """
    policies = (config.get("multiagent") or {}).get("policies") or {}
    if not policies:
        if policy_class is None:
            raise ValueError("WorkerSet needs a policy: pass policy_class=... or set "
                             "trainer_config['multiagent']['policies'].")
        return {"default_policy": PolicySpec(policy_class, None, None, None)}
    if not isinstance(policies, collections.abc.Mapping):
        policies = {pid: None for pid in policies}
    specs = {}
    for pid, spec in policies.items():
        if spec is None:
            spec = PolicySpec()
        elif isinstance(spec, type):
            spec = PolicySpec(policy_class=spec)
        elif not isinstance(spec, PolicySpec):
            spec = PolicySpec(*spec)
        if spec.policy_class is None:
            if policy_class is None:
                raise ValueError(f"multiagent.policies[{pid!r}] names no policy class and "
                                 "WorkerSet got no policy_class to default to.")
            spec = spec._replace(policy_class=policy_class)
        specs[pid] = spec
    return specs


def no_env(env_context: Any) -> None:
    """The env creator of workers without an env (policies get their spaces elsewhere)."""
    del env_context
    return None


def auto_fragment_length(train_batch_size: int, num_workers: int, num_envs_per_worker: int,
                         worker_index: int = 0) -> int:
    """`rollout_fragment_length="auto"` of worker `worker_index` (0: the local worker):
    `train_batch_size` split over the sampling workers (`max(1, num_workers)`) and their
    `num_envs_per_worker` envs; each worker gets the floor of the even share, and the first
    workers one step more when it does not divide evenly, as long as the steps they add
    stay within the remainder (RLlib's rule).

    Example:
        >>> auto_fragment_length(256, 0, 8), auto_fragment_length(10, 2, 2, 1)
        (32, 3)
    """
    envs = max(1, num_workers) * num_envs_per_worker
    base = train_batch_size // envs
    remainder = train_batch_size - base * envs
    return base + 1 if remainder and worker_index * num_envs_per_worker <= remainder else base


def worker_kwargs(config: Mapping[str, Any], *, env_creator: Optional[Callable],
                  validate_env: Optional[Callable], policy_spec: Dict[str, PolicySpec],
                  worker_index: int, num_workers: int, log_dir: Optional[str],
                  spaces: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """RolloutWorker keyword arguments for worker `worker_index` (0 = local)."""
    multiagent = config.get("multiagent") or {}
    kwargs: Dict[str, Any] = {
        "env_creator": env_creator if env_creator is not None else no_env,
        "validate_env": validate_env,
        "policy_spec": policy_spec,
        "policy_config": dict(config),
        "worker_index": worker_index,
        "num_workers": num_workers,
        "log_dir": log_dir,
    }
    for key in SAME_NAME_KEYS:
        if config.get(key) is not None:
            kwargs[key] = config[key]
    for key, arg in RENAMED_KEYS.items():
        if config.get(key) is not None:
            kwargs[arg] = config[key]
    if kwargs.get("rollout_fragment_length") == "auto" and isinstance(
            config.get("train_batch_size"), int):
        kwargs["rollout_fragment_length"] = auto_fragment_length(
            config["train_batch_size"], num_workers, config.get("num_envs_per_worker") or 1,
            worker_index)
    for key in ("policy_mapping_fn", "policies_to_train", "observation_fn", "count_steps_by"):
        if multiagent.get(key) is not None:
            kwargs[key] = multiagent[key]
    if config.get("seed") is not None:
        kwargs["seed"] = int(config["seed"]) + worker_index
    environs = config.get("extra_python_environs_for_worker" if worker_index
                          else "extra_python_environs_for_driver")
    if environs:
        kwargs["extra_python_environs"] = dict(environs)
    if spaces is not None:
        kwargs["spaces"] = spaces
    return kwargs


def remote_resources(config: Mapping[str, Any]) -> Dict[str, Any]:
    """Resources of one remote worker: num_cpus, num_gpus, resources, memory."""
    return {"num_cpus": float(setting(config, "num_cpus_per_worker")),
            "num_gpus": float(setting(config, "num_gpus_per_worker")),
            "resources": dict(setting(config, "custom_resources_per_worker")),
            "memory": setting(config, "memory_per_worker") or None}


def env_creator_from_config(config: Mapping[str, Any]) -> Optional[Callable]:
    """The env creator for `config["env"]` (registered name, callable or gymnasium id)."""
    env = config.get("env")
    if env is None:
        return None
    return get_env_creator(env)

