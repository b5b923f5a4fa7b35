"""AlgorithmConfig: the typed, frozen config every algorithm starts from.

Fields carry RLlib's classic config names and defaults, except three that would clash
with Python or the builder methods, named as in RLlib 2.x: `lambda_`, `framework_str`,
`callbacks_class` (their dict keys stay `lambda`, `framework`, `callbacks`).
Three ways to build one, all returning new frozen objects:

- keyword arguments, or `replace(**kw)` on an existing config;
- an RLlib-style flat dict: `PPOConfig.from_dict({"env": "CartPole-v1", "lambda": 0.95})`
  (unknown keys raise a `ValueError` naming the closest valid key; RLlib 2.x names such
  as `num_rollout_workers` are accepted as aliases);
- RLlib 2.x builder calls: `PPOConfig().environment("CartPole-v1").rollouts(
  num_rollout_workers=0).training(lr=1e-3)`, then `.build()` for the algorithm.

`to_dict()` gives the flat RLlib-style dict that `WorkerSet`, `RolloutWorker`, the
policies and the execution operators read. As RLlib 2.x's, a config also reads as that
dict: `config["lr"]`, `config.get("lambda")`, `"gamma" in config`, `keys()`/`items()`
(the keys of `to_dict()`), `dict(config)`; so `algo.config`, which is the algorithm's
frozen config, serves both RLlib 2.x code (`algo.config.lr`) and 1.x code
(`algo.config["lr"]`). Item assignment raises, as attribute assignment does.

Deviation from RLlib: `num_workers` defaults to 0 (sampling in the driver process; Ray
actors are opt-in), and `framework` accepts only "tf2".

Example:
    >>> config = AlgorithmConfig.from_dict({"env": "CartPole-v1", "num_workers": 0})
    >>> config.rollouts(rollout_fragment_length=50).to_dict()["rollout_fragment_length"]
    50
    >>> config["num_workers"], config.get("lambda"), config.num_workers
    (0, None, 0)
    >>> AlgorithmConfig.from_dict({"num_wrkers": 1})
    Traceback (most recent call last):
    ...
    tfrl.utils.config_keys.UnknownKeyError: Unknown AlgorithmConfig key 'num_wrkers'. Did you mean 'num_workers'? ...
"""

import abc
import copy
import dataclasses
from typing import (Any, ClassVar, Dict, ItemsView, Iterator, KeysView, Mapping, Optional,
                    Union, ValuesView)

import gymnasium as gym

from tfrl.algorithms.registry import all_config_classes
from tfrl.algorithms.sb3_keys import sb3_hints
from tfrl.evaluation.callbacks import DefaultCallbacks
from tfrl.evaluation.rollout_worker.config import auto_fragment_length
from tfrl.offline.input_creators import DEFAULT_INPUT, check_input_config
from tfrl.offline.json_writer import DEFAULT_MAX_FILE_SIZE
from tfrl.offline.output_creators import DEFAULT_OUTPUT_FORMAT, check_output_config
from tfrl.policy.policy_config import PolicyConfig
from tfrl.utils.config_keys import UnknownKeyError, check_keys, closest_key
from tfrl.utils.config_values import (
    AT_LEAST_ONE, NON_NEGATIVE, SCHEDULE, UNIT_INTERVAL, check_value)

# Field name -> its key in RLlib dicts (where they differ: a keyword or a builder method).
FIELD_KEYS = {"lambda_": "lambda", "framework_str": "framework", "callbacks_class": "callbacks"}
# RLlib dict key (classic or 2.x) -> field name.
ALIASES = {
    **{key: name for name, key in FIELD_KEYS.items()},
    "num_rollout_workers": "num_workers",
    "num_env_runners": "num_workers",
    "num_envs_per_env_runner": "num_envs_per_worker",
    "num_cpus_per_env_runner": "num_cpus_per_worker",
    "num_gpus_per_env_runner": "num_gpus_per_worker",
    "custom_resources_per_env_runner": "custom_resources_per_worker",
    "evaluation_num_env_runners": "evaluation_num_workers",
    "create_env_on_local_worker": "create_env_on_driver",
    "num_epochs": "num_sgd_iter",
    "minibatch_size": "sgd_minibatch_size",
    "metrics_num_episodes_for_smoothing": "metrics_smoothing_episodes",
    "min_time_s_per_iteration": "min_iter_time_s",
    "min_sample_timesteps_per_iteration": "timesteps_per_iteration",
    "min_time_s_per_reporting": "min_iter_time_s",
    "min_sample_timesteps_per_reporting": "timesteps_per_iteration",
    # Off-policy configs (DQN, OffPolicyConfig, SACConfig): classic names (RLlib 1.x/2.x).
    "learning_starts": "num_steps_sampled_before_learning_starts",
    "Q_model": "q_model_config",
    "policy_model": "policy_model_config",
}
# Written by to_dict() under both names, for operators reading either.
_REPORTING_ALIASES = ("metrics_num_episodes_for_smoothing", "min_time_s_per_iteration",
                      "min_sample_timesteps_per_iteration")


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise dataclasses.FrozenInstanceError(
        f"Cannot set attribute ({name}) of an already frozen AlgorithmConfig "
        f"({type(self).__name__}): tfrl's configs are always frozen. Use "
        f"config.replace({name}=...) or a builder method (config.training(...)), which "
        "return a new config.")


def _frozen_delattr(self: Any, name: str) -> None:
    raise dataclasses.FrozenInstanceError(
        f"Cannot delete attribute ({name}) of an already frozen AlgorithmConfig "
        f"({type(self).__name__}).")


def _name_frozen_config_errors(cls: type) -> None:
    """Replaces the frozen dataclass's own `__setattr__`/`__delattr__` of `cls` (which
    say only "cannot assign to field") by ones whose error says, as RLlib's does, that
    the AlgorithmConfig is frozen and how to change it. Done on a class's first instance,
    since `@dataclass(frozen=True)` (applied after class creation) would refuse a class
    that defines them."""
    if cls.__dict__.get("__setattr__") is not _frozen_setattr:
        cls.__setattr__ = _frozen_setattr  # type: ignore[assignment]
        cls.__delattr__ = _frozen_delattr  # type: ignore[assignment]


# Per config class: every key item access reads (dict keys, field names, aliases) ->
# field name.
_KEY_NAMES: Dict[type, Dict[str, str]] = {}


def _key_names(cls: type) -> Dict[str, str]:
    names = _KEY_NAMES.get(cls)
    if names is None:
        fields = [f.name for f in dataclasses.fields(cls)]
        names = {k: v for k, v in ALIASES.items() if v in fields}
        names.update({FIELD_KEYS.get(n, n): n for n in fields})
        names.update({n: n for n in fields})
        _KEY_NAMES[cls] = names
    return names


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a is b or a == b)
    except Exception:  # e.g. numpy arrays compare elementwise
        return False


def _field(default: Any) -> Any:
    return dataclasses.field(default_factory=lambda: copy.deepcopy(default))


# The default `multiagent` subdict; a given one is merged into a copy of it.
_MULTIAGENT_DEFAULTS: Dict[str, Any] = {
    "policies": {}, "policy_mapping_fn": None, "policies_to_train": None,
    "observation_fn": None, "count_steps_by": "env_steps"}


class _ConfigMeta(abc.ABCMeta):
    """Lets `AlgorithmConfig(algo_class=PPO, ...)` (RLlib 2.x's generic config for a
    given algorithm) name the algorithm that `build()` builds. (An ABCMeta: a config is
    a read-only `Mapping` of its RLlib dict keys.)"""

    def __call__(cls, *args: Any, algo_class: Optional[type] = None, **kwargs: Any) -> Any:
        config = super().__call__(*args, **kwargs)
        if algo_class is not None:
            object.__setattr__(config, "algo_class", algo_class)
        return config


@dataclasses.dataclass(frozen=True)
class AlgorithmConfig(PolicyConfig, Mapping[str, Any], metaclass=_ConfigMeta):
    """Keys common to every algorithm (RLlib's COMMON_CONFIG); see the module docstring.

    The keys the policy reads (`lr`, `grad_clip`, `num_sgd_iter`, `sgd_minibatch_size`,
    `model`, `seed`, ...) and their defaults come from `PolicyConfig`, which this class
    extends; an algorithm config class overrides the defaults it changes.
    """

    algo_class: ClassVar[Optional[type]] = None

    # Environment.
    env: Any = None
    env_config: dict = _field({})
    # Spaces of the policies when there is no env (e.g. input from a policy server).
    observation_space: Any = None
    action_space: Any = None
    horizon: Optional[int] = None
    soft_horizon: bool = False
    no_done_at_end: bool = False
    clip_rewards: Any = None
    clip_actions: bool = False
    normalize_actions: bool = True
    disable_env_checking: bool = False
    render_env: bool = False
    # True: videos under the worker's log dir; a str: videos in that folder (RLlib's forms).
    record_env: Union[bool, str] = False
    # Rollouts.
    num_workers: int = 0
    num_envs_per_worker: int = 1
    # An int >= 1, or "auto": derived per worker from `train_batch_size`
    # (`get_rollout_fragment_length`).
    rollout_fragment_length: Union[int, str] = 200
    # Sample, compute advantages and learn in one compiled call per iteration, for a
    # TF-native env ("tfrl/CartPole-v1", ...; PG, A2C, PPO): see tfrl.execution.in_graph.
    in_graph: bool = False
    batch_mode: str = "truncate_episodes"
    observation_filter: str = "NoFilter"
    compress_observations: bool = False
    sample_async: bool = False
    create_env_on_driver: bool = False
    remote_worker_envs: bool = False
    remote_env_batch_wait_ms: float = 0
    preprocessor_pref: str = "deepmind"
    exploration_config: dict = _field({})
    recreate_failed_workers: bool = False
    restart_failed_sub_environments: bool = False
    remote_backend: str = "ray"
    sample_timeout_s: float = 180.0
    metrics_episode_collection_timeout_s: float = 180.0
    worker_restore_timeout_s: float = 600.0
    worker_health_probe_timeout_s: float = 60.0
    custom_vector_env: Any = None
    sample_collector: Any = None
    # RLlib 2.x's switch between its two samplers (`env_runners(enable_connectors=...)`).
    # tfrl has one sampler (RLlib's `Episode`-based one, which `False` selects in RLlib);
    # either value samples the same batches. Accepted so that 2.x configs build.
    enable_connectors: bool = False
    fake_sampler: bool = False
    extra_python_environs_for_driver: dict = _field({})
    extra_python_environs_for_worker: dict = _field({})
    # Offline input/output (`tfrl.offline.input_creators` / `output_creators`): `input` is
    # "sampler", a callable `IOContext -> InputReader` (e.g. a PolicyServerInput), a name
    # given to `register_input`, experience files (a path, directory, glob or list of them)
    # or a dict {source: probability}; `output` None, "logdir", a directory or a callable.
    input: Any = DEFAULT_INPUT
    # Off-policy estimators run on every sampled batch: "is", "wis", "dm", "dr" (or
    # OffPolicyEstimator classes), and "simulation"; results under `off_policy_estimator`.
    input_evaluation: list = _field([])
    # Batches held by the shuffle buffer of file inputs (0: file order).
    shuffle_buffer_size: int = 0
    # Run each input episode through `policy.postprocess_trajectory` (e.g. MARWIL's returns).
    postprocess_inputs: bool = False
    output: Any = None
    output_format: str = DEFAULT_OUTPUT_FORMAT
    output_compress_columns: list = _field(["obs", "new_obs"])
    output_max_file_size: int = DEFAULT_MAX_FILE_SIZE
    # Training.
    train_batch_size: int = 200
    gamma: float = 0.99
    lr_schedule: Optional[list] = None
    optimizer: dict = _field({})
    _disable_preprocessor_api: bool = False
    # Resources.
    framework_str: str = "tf2"
    num_cpus_per_worker: float = 1
    num_gpus_per_worker: float = 0
    num_cpus_for_driver: float = 1
    memory_per_worker: int = 0
    custom_resources_per_worker: dict = _field({})
    # Evaluation.
    evaluation_interval: Optional[int] = None
    # An int >= 1, or "auto": with evaluation_parallel_to_training, as many sampling
    # rounds as the iteration's training lasts (at least one); otherwise
    # max(1, evaluation_num_workers) episodes or timesteps (`evaluation_duration_unit`).
    evaluation_duration: Union[int, str] = 10
    evaluation_duration_unit: str = "episodes"
    evaluation_num_workers: int = 0
    evaluation_parallel_to_training: bool = False
    evaluation_config: dict = _field({})
    in_evaluation: bool = False
    # Reporting.
    metrics_smoothing_episodes: int = 100
    min_iter_time_s: float = 0
    timesteps_per_iteration: int = 0
    collect_metrics_timeout: float = 180.0
    # Debugging, callbacks, multi-agent.
    log_level: str = "WARN"
    log_sys_usage: bool = True
    logger_config: Optional[dict] = None
    callbacks_class: type = DefaultCallbacks
    multiagent: dict = _field(_MULTIAGENT_DEFAULTS)

    # Allowed ranges of the numeric fields (field name -> Bound or SCHEDULE); the types
    # come from the annotations, the policy keys' ranges from PolicyConfig._RANGES.
    _RANGES: ClassVar[Dict[str, Any]] = {
        "horizon": AT_LEAST_ONE, "num_workers": NON_NEGATIVE,
        "num_envs_per_worker": AT_LEAST_ONE,
        "remote_env_batch_wait_ms": NON_NEGATIVE, "sample_timeout_s": NON_NEGATIVE,
        "metrics_episode_collection_timeout_s": NON_NEGATIVE,
        "worker_restore_timeout_s": NON_NEGATIVE, "worker_health_probe_timeout_s": NON_NEGATIVE,
        "train_batch_size": AT_LEAST_ONE, "gamma": UNIT_INTERVAL, "lr_schedule": SCHEDULE,
        "num_cpus_per_worker": NON_NEGATIVE, "num_gpus_per_worker": NON_NEGATIVE,
        "num_cpus_for_driver": NON_NEGATIVE, "memory_per_worker": NON_NEGATIVE,
        "evaluation_interval": NON_NEGATIVE,
        "evaluation_num_workers": NON_NEGATIVE, "metrics_smoothing_episodes": AT_LEAST_ONE,
        "min_iter_time_s": NON_NEGATIVE, "timesteps_per_iteration": NON_NEGATIVE,
        "collect_metrics_timeout": NON_NEGATIVE, "shuffle_buffer_size": NON_NEGATIVE,
        "output_max_file_size": AT_LEAST_ONE,
    }

    # ------------------------------------------------------------ checks

    @staticmethod
    def _field_key(name: str) -> str:
        return FIELD_KEYS.get(name, name)

    # ------------------------------------------------- dict-style reading

    def __getitem__(self, key: str) -> Any:
        """`config[key]`: the value of an RLlib dict key (`"lr"`, `"lambda"`,
        `"callbacks"`, ...), field name or alias (`"num_rollout_workers"`).

        Raises:
            KeyError: For a key this config does not have.
        """
        name = _key_names(type(self)).get(key)
        if name is None:
            raise KeyError(key)
        return getattr(self, name)

    def get(self, key: str, default: Any = None) -> Any:
        """`config[key]`, or `default` for a key this config does not have."""
        name = _key_names(type(self)).get(key)
        return default if name is None else getattr(self, name)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in _key_names(type(self))

    def keys(self) -> KeysView[str]:
        """The keys of `to_dict()` (RLlib's flat dict)."""
        return self.to_dict().keys()

    def values(self) -> ValuesView[Any]:
        return self.to_dict().values()

    def items(self) -> ItemsView[str, Any]:
        return self.to_dict().items()

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())

    def __len__(self) -> int:
        return len(self.to_dict())

    def __bool__(self) -> bool:
        return True  # a config is truthy, as before it read as a dict (no to_dict() call)

    def __setitem__(self, key: str, value: Any) -> None:
        if key == "multiagent":  # RLlib's message for this key (RLlib refuses it too)
            raise dataclasses.FrozenInstanceError(
                "Cannot set `multiagent` key in an AlgorithmConfig! Use "
                "config.multi_agent(policies=..., policy_mapping_fn=...), which returns a "
                "new config (tfrl's configs are always frozen).")
        raise dataclasses.FrozenInstanceError(
            f"Cannot set item [{key!r}] of an already frozen AlgorithmConfig "
            f"({type(self).__name__}): tfrl's configs are always frozen. Use "
            f"config.replace(**{{{key!r}: ...}}) or a builder method (config.training(...)), "
            "which return a new config.")

    def validate(self) -> None:
        """Raises `ValueError` for a value of the wrong type or range (naming the key)
        or inconsistent values (called on construction)."""
        super().validate()

        def fail(msg):
            raise ValueError(f"{type(self).__name__}: {msg}")

        if self.framework_str != "tf2":
            fail(f"framework must be 'tf2' (tfrl runs TensorFlow 2 only); received "
                 f"{self.framework_str!r}.")
        if self.rollout_fragment_length != "auto":  # else an int >= 1
            check_value("rollout_fragment_length", self.rollout_fragment_length, int,
                        AT_LEAST_ONE, type(self).__name__)
        if self.batch_mode not in ("truncate_episodes", "complete_episodes"):
            fail(f"batch_mode must be 'truncate_episodes' or 'complete_episodes'; received "
                 f"{self.batch_mode!r}.")
        if self.evaluation_duration != "auto":  # else sized by the training step
            check_value("evaluation_duration", self.evaluation_duration, int,
                        AT_LEAST_ONE, type(self).__name__)
        if self.evaluation_duration_unit not in ("episodes", "timesteps"):
            fail("evaluation_duration_unit must be 'episodes' or 'timesteps'; received "
                 f"{self.evaluation_duration_unit!r}.")
        if self.evaluation_parallel_to_training and not self.evaluation_interval:
            fail("evaluation_parallel_to_training=True evaluates every evaluation_interval-th "
                 "iteration while it trains, but evaluation_interval is "
                 f"{self.evaluation_interval!r}; set evaluation_interval (e.g. 1), or "
                 "evaluation_parallel_to_training=False.")
        callbacks = self.callbacks_class
        if not (isinstance(callbacks, type) and issubclass(callbacks, DefaultCallbacks)):
            fail(f"callbacks must be a DefaultCallbacks subclass; received {callbacks!r}.")
        if self.remote_backend not in ("ray", "thread"):
            fail(f"remote_backend must be 'ray' or 'thread'; received {self.remote_backend!r}.")
        if not (isinstance(self.record_env, (bool, str)) and self.record_env != ""):
            fail(f"record_env must be a bool or a folder for the videos (a non-empty str); "
                 f"received {self.record_env!r} ({type(self.record_env).__name__}).")
        try:
            check_input_config(self.input)
            check_output_config({"output": self.output, "output_format": self.output_format,
                                 "output_max_file_size": self.output_max_file_size})
        except ValueError as e:
            fail(str(e))

    def __post_init__(self) -> None:
        super().__post_init__()
        _name_frozen_config_errors(type(self))

    # ------------------------------------------- RLlib 2.x config helpers

    def freeze(self) -> None:
        """Does nothing: a tfrl config is frozen from the start (RLlib 2.x freezes its
        mutable configs when an algorithm is built). Change one with `replace(...)` or
        the builder methods, which return a new config."""

    def copy(self, copy_frozen: Optional[bool] = None) -> "AlgorithmConfig":
        """A deep copy of this config (`copy_frozen` is accepted for RLlib 2.x; every
        tfrl config is frozen)."""
        return copy.deepcopy(self)

    @classmethod
    def overrides(cls, **kwargs: Any) -> Dict[str, Any]:
        """Config keys for a policy's `PolicySpec.config` (RLlib 2.x): a dict of the given
        keys.

        Raises:
            ValueError: For a key this config class does not have (naming the closest).
        """
        check_keys({k: v for k, v in kwargs.items() if k not in cls.valid_keys()},
                   cls.valid_keys(), f"{cls.__name__}.overrides()")
        return dict(kwargs)

    def update_from_dict(self, config_dict: Mapping[str, Any]) -> "AlgorithmConfig":
        """A new config with the keys of the RLlib-style dict `config_dict` changed (RLlib
        2.x changes the config in place; tfrl's configs are frozen, so use the returned
        one)."""
        return self.replace(**dict(config_dict))

    def serialize(self) -> Dict[str, Any]:
        """`to_dict()` with classes and functions written as their import paths
        (`"module.QualName"`), for logging and JSON."""
        def path(value: Any) -> Any:
            if isinstance(value, type) or callable(value):
                return f"{value.__module__}.{value.__qualname__}"
            return value
        return {key: path(value) for key, value in self.to_dict().items()}

    def get_rollout_fragment_length(self, worker_index: int = 0) -> int:
        """The rollout fragment length of worker `worker_index` (0: local worker).

        With "auto": `auto_fragment_length` (`train_batch_size` split over the sampling
        workers' envs, RLlib's rule).
        """
        if self.rollout_fragment_length != "auto":
            return int(self.rollout_fragment_length)
        return auto_fragment_length(self.train_batch_size, self.num_workers,
                                    self.num_envs_per_worker, worker_index)

    @property
    def is_atari(self) -> bool:
        """Whether `env` names a registered gymnasium env of the Arcade Learning
        Environment (ale-py); False for callables and unregistered names."""
        if not isinstance(self.env, str):
            return False
        try:
            spec = gym.spec(self.env)
        except gym.error.Error:
            return False
        entry = spec.entry_point
        entry = entry if isinstance(entry, str) else getattr(entry, "__module__", "")
        return entry.startswith("ale_py") or spec.namespace == "ALE"

    # ----------------------------------------------------- dict boundary

    @classmethod
    def valid_keys(cls) -> set:
        """Every key `from_dict` accepts (field names with `lambda`, and aliases)."""
        names = {f.name for f in dataclasses.fields(cls)}
        return {FIELD_KEYS.get(n, n) for n in names} | {
            k for k, v in ALIASES.items() if v in names}

    @classmethod
    def _to_fields(cls, given: Mapping[str, Any], where: str) -> Dict[str, Any]:
        names = {f.name for f in dataclasses.fields(cls)}
        valid = cls.valid_keys()
        check_keys({k: v for k, v in given.items() if k not in names}, valid, where,
                   hints=sb3_hints(valid))
        out = {}
        for key, value in given.items():
            name = ALIASES.get(key, key)
            if name == "multiagent" and (value is None or isinstance(value, Mapping)):
                value = {**copy.deepcopy(_MULTIAGENT_DEFAULTS), **(value or {})}
            out[name] = value
        return out

    @classmethod
    def from_dict(cls, config: Optional[Mapping[str, Any]] = None) -> "AlgorithmConfig":
        """A config from an RLlib-style dict (missing keys take the defaults).

        Raises:
            ValueError: For an unknown key (naming the closest valid one) or bad values.
        """
        if isinstance(config, AlgorithmConfig):
            return cls.from_dict(config.to_dict())
        if config is not None and not isinstance(config, Mapping):
            raise TypeError(f"{cls.__name__}.from_dict() takes a dict; received "
                            f"{type(config).__name__}.")
        return cls(**cls._to_fields(dict(config or {}), cls.__name__))

    def to_dict(self) -> Dict[str, Any]:
        """The flat RLlib-style dict (`lambda`, `framework`, `callbacks` keys; subdicts
        copied)."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out[FIELD_KEYS.get(f.name, f.name)] = (
                copy.copy(value) if isinstance(value, (dict, list)) else value)
        for alias in _REPORTING_ALIASES:
            out[alias] = out[ALIASES[alias]]
        return out

    def replace(self, **kwargs) -> "AlgorithmConfig":
        """A copy with some keys changed (RLlib names or field names)."""
        new = dataclasses.replace(self, **self._to_fields(kwargs, f"{type(self).__name__}.replace()"))
        if "algo_class" in self.__dict__:  # given to the constructor (see _ConfigMeta)
            object.__setattr__(new, "algo_class", self.__dict__["algo_class"])
        return new

    # ---------------------------------------------- RLlib 2.x builder API

    def environment(self, env: Any = None, *, env_config: Optional[dict] = None,
                    **kwargs) -> "AlgorithmConfig":
        """Sets `env`, `env_config` and other environment keys (e.g. `clip_rewards`)."""
        updates = dict(kwargs)
        if env is not None:
            updates["env"] = env
        if env_config is not None:
            updates["env_config"] = env_config
        return self.replace(**updates)

    def rollouts(self, **kwargs) -> "AlgorithmConfig":
        """Sets rollout keys (`num_rollout_workers`, `rollout_fragment_length`, ...)."""
        return self.replace(**kwargs)

    env_runners = rollouts

    def offline_data(self, *, input_: Any = None, **kwargs) -> "AlgorithmConfig":
        """Sets `input` (RLlib's `input_`: "sampler", a callable `IOContext -> InputReader`,
        a registered name, files or a dict of sources) and the other offline keys
        (`input_evaluation`, `output`, `output_compress_columns`, ...)."""
        updates = dict(kwargs)
        if input_ is not None:
            updates["input"] = input_
        return self.replace(**updates)

    def training(self, **kwargs) -> "AlgorithmConfig":
        """Sets training keys (`lr`, `gamma`, `train_batch_size`, `model`, algorithm keys)."""
        return self.replace(**kwargs)

    def resources(self, **kwargs) -> "AlgorithmConfig":
        """Sets resource keys (`num_gpus`, `_fake_gpus`, `num_cpus_per_worker`, ...)."""
        return self.replace(**kwargs)

    def evaluation(self, **kwargs) -> "AlgorithmConfig":
        """Sets evaluation keys (`evaluation_interval`, `evaluation_duration`, ...)."""
        return self.replace(**kwargs)

    def reporting(self, **kwargs) -> "AlgorithmConfig":
        """Sets reporting keys (`metrics_num_episodes_for_smoothing`, ...)."""
        return self.replace(**kwargs)

    def debugging(self, *, seed: Optional[int] = None, log_level: Optional[str] = None
                  ) -> "AlgorithmConfig":
        """Sets `seed` and `log_level`."""
        updates: Dict[str, Any] = {"seed": seed} if seed is not None else {}
        if log_level is not None:
            updates["log_level"] = log_level
        return self.replace(**updates)

    def framework(self, framework: str = "tf2", **kwargs) -> "AlgorithmConfig":
        """Sets the framework; only "tf2" is accepted."""
        return self.replace(framework=framework)

    def callbacks(self, callbacks_class: type) -> "AlgorithmConfig":
        """Sets the callbacks class."""
        return self.replace(callbacks=callbacks_class)

    def multi_agent(self, **kwargs) -> "AlgorithmConfig":
        """Updates the `multiagent` subdict (`policies`, `policy_mapping_fn`, ...).

        Raises (as RLlib): `UnknownKeyError` (a TypeError) for an unknown keyword,
        KeyError for a policy ID that is not a str, ValueError for a `count_steps_by`
        other than "env_steps" or "agent_steps".
        """
        unknown = [k for k in kwargs if k not in self.multiagent]
        if unknown:
            suggestion = closest_key(unknown[0], self.multiagent)
            hint = f" Did you mean {suggestion!r}?" if suggestion else ""
            raise UnknownKeyError(
                f"Unknown multi_agent() key {unknown[0]!r}: multi_agent() got an unexpected "
                f"keyword argument {unknown[0]!r}.{hint} Valid keys are: "
                f"{', '.join(sorted(self.multiagent))}.")
        policies = kwargs.get("policies")
        if isinstance(policies, (dict, set, list, tuple)):
            for pid in policies:
                if not isinstance(pid, str):
                    raise KeyError(
                        f"Policy IDs must always be of type `str`, but policy ID {pid!r} is "
                        f"of type {type(pid).__name__}. Name the policies with strings "
                        "(e.g. str(pid)) and map agents to them in policy_mapping_fn.")
        count_steps_by = kwargs.get("count_steps_by", self.multiagent["count_steps_by"])
        if count_steps_by not in ("env_steps", "agent_steps"):
            raise ValueError(
                "config.multi_agent(count_steps_by=..) must be one of [env_steps|"
                f"agent_steps], not {count_steps_by!r}.")
        return self.replace(multiagent={**self.multiagent, **kwargs})

    def build(self, env: Any = None) -> Any:
        """The algorithm (`algo_class`) built from this config."""
        if self.algo_class is None:
            raise ValueError(f"{type(self).__name__} has no algorithm class; build from "
                             "PGConfig, A2CConfig or PPOConfig, or call "
                             "get_algorithm_class(name)(config=...).")
        config_class = getattr(self.algo_class, "config_class", type(self))
        if type(self) is config_class or not issubclass(config_class, AlgorithmConfig):
            return self.algo_class(config=self, env=env)
        # A generic AlgorithmConfig(algo_class=...): the keys set on it, over the
        # algorithm's own defaults.
        defaults = AlgorithmConfig().to_dict()
        changed = {key: value for key, value in self.to_dict().items()
                   if key not in defaults or not _same(value, defaults[key])}
        return self.algo_class(config=config_class.from_dict(changed), env=env)


@dataclasses.dataclass(frozen=True)
class OnPolicyConfig(AlgorithmConfig):
    """AlgorithmConfig plus the keys of the on-policy policies (PG, A2C, PPO), which
    `tfrl.algorithms.on_policy_policy.OnPolicyTFPolicy` reads.

    Attributes:
        lambda_: GAE parameter (key "lambda").
        use_gae: GAE advantages (needs `use_critic`); otherwise discounted returns.
        use_critic: A value function as baseline (and to bootstrap cut trajectories).
        entropy_coeff, entropy_coeff_schedule: The entropy bonus and its schedule
            (`[[timestep, value], ...]`).
    """

    lambda_: float = 1.0
    use_gae: bool = True
    use_critic: bool = True
    entropy_coeff: float = 0.0
    entropy_coeff_schedule: Optional[list] = None

    _RANGES: ClassVar[Dict[str, Any]] = {
        "lambda_": UNIT_INTERVAL, "entropy_coeff": NON_NEGATIVE,
        "entropy_coeff_schedule": SCHEDULE}

    def validate(self) -> None:
        super().validate()
        if self.use_gae and not self.use_critic:
            raise ValueError(f"{type(self).__name__}: use_gae=True needs use_critic=True (GAE "
                             "uses the value function); set use_gae=False or use_critic=True.")


def __getattr__(name: str) -> Any:
    # COMMON_CONFIG / DEFAULT_CONFIG: the key sets WorkerSet accepts; lazy so that
    # the algorithm modules (which import this one) can add their keys.
    if name == "COMMON_CONFIG":
        return AlgorithmConfig().to_dict()
    if name == "DEFAULT_CONFIG":
        keys = {}
        for config_class in all_config_classes():
            keys.update(config_class().to_dict())
        return keys
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
