"""RolloutWorker's constructor arguments: `WorkerArgs`, the check that builds it, and the
worker's host utilities.

`check_worker_args(kwargs)` takes RLlib's 41 keyword-only arguments of `RolloutWorker`,
checks them (unknown keywords name the closest valid one), resolves deprecated aliases,
the env creator and the input creator, and returns a frozen `WorkerArgs` of the
effective values, which the worker keeps as `worker.args`; `apply_process_settings`
applies the process-level ones (`extra_python_environs`, `log_level`). The defaults of
the 41 arguments are the field defaults of `WorkerArgs` (their only source).

How tfrl treats each argument (all others work as RLlib documents them):

* `tf_session_creator`: TF1 sessions do not exist; a warning says it is ignored.
* `preprocessor_pref`: "deepmind" or "rllib" (or None). With "deepmind" (and no
  `custom_preprocessor`), ALE envs that return raw screens are wrapped in the DeepMind
  pipeline (`tfrl.env.wrappers.atari.wrap_deepmind`, `dim` and `framestack` from the
  model config; ale-py's vector env when the worker can vectorize natively), and
  `clip_rewards` defaults to True for ALE envs.
* `record_env` (`monitor_path`, deprecated alias): gymnasium `RecordVideo` for envs with
  `render_mode="rgb_array"`; a warning otherwise.
* `input_evaluation`: "simulation" samples in a background thread for metrics only;
  "is", "wis", "dm", "dr" (or `OffPolicyEstimator` subclasses) estimate the value of
  each policy from every sampled batch (`tfrl.offline.estimators`; results under
  `off_policy_estimator`); other names are rejected.
* `policy` (deprecated alias of `policy_spec`): a warning, then used as `policy_spec`.
* `model_config`: preprocessor options and the policies' `model` config (when a
  PolicySpec has no `model` of its own).
* `policy_config["framework"]`: "tf2"/"tfe" (and "tf", with a warning) run as TF2; other
  frameworks are rejected.
* `input_creator`: when left at its default, `policy_config["input"]` (RLlib's `input`
  key: "sampler", a callable `IOContext -> InputReader`, or a registered name; see
  `tfrl.offline.input_creators`) decides it. A creator returning something other than an
  InputReader raises a TypeError.
* `output_creator`: when left at its default, `policy_config["output"]` (with
  `output_format`, `output_compress_columns`, `output_max_file_size`; see
  `tfrl.offline.output_creators`) decides it.
* `spaces`: when not given and the worker has no env (`policy_config["env"]` is None),
  `policy_config["observation_space"]`/`["action_space"]` (RLlib's
  `.environment(observation_space=..., action_space=...)`) give the spaces of the
  policies whose PolicySpec has none.
"""

import dataclasses
import inspect
import logging
import os
import platform
import socket
import warnings
from typing import Any, Callable, Dict, Optional

from tfrl.env.registry import get_env_creator
from tfrl.evaluation.rollout_worker import config as wsc
from tfrl.evaluation.callbacks import DefaultCallbacks
from tfrl.evaluation.rollout_worker.policies import normalize_policy_specs
from tfrl.offline.estimators import estimator_class
from tfrl.offline.input_creators import (
    DEFAULT_INPUT, checked_input_creator, input_creator_from_config)
from tfrl.offline.output_creators import output_creator_from_config
from tfrl.offline.output_writer import NoopOutput
from tfrl.policy.policy import PolicySpec
from tfrl.utils.checks import check_int
from tfrl.utils.config_keys import check_keys
from tfrl.utils.filter import FILTER_NAMES, get_filter

logger = logging.getLogger(__name__)


def _default_input(ioctx: Any) -> Any:
    return ioctx.default_sampler_input()


def _default_output(ioctx: Any) -> Any:
    return NoopOutput()


_DERIVED = {"derived": True}  # metadata of the fields that are not constructor keywords


@dataclasses.dataclass(frozen=True)
class WorkerArgs:
    """The effective constructor arguments of a `RolloutWorker` (its `args`).

    The first 41 fields are RLlib's keyword arguments with their defaults (see the module
    docstring for how tfrl treats each); built by `check_worker_args`, they hold the
    checked values: `policy_spec` and `record_env` include their deprecated aliases
    (`policy`, `monitor_path`), `env_creator` is a callable (an env name resolved),
    `policy_config` a dict, `input_creator` the creator to use, and `sample_async` is True
    for `input_evaluation=["simulation"]`.

    Attributes:
        policy_specs: `{PolicyID: PolicySpec}` from `policy_spec` (spaces not resolved).
        blackhole_outputs: Sample for metrics only (`input_evaluation=["simulation"]`).
        given: The 41 keyword arguments as given (aliases folded in), for
            `RolloutWorker.creation_args()`.
    """

    env_creator: Callable
    validate_env: Optional[Callable] = None
    policy_spec: Any = None
    policy_mapping_fn: Optional[Callable] = None
    policies_to_train: Optional[list] = None
    tf_session_creator: Any = None
    rollout_fragment_length: int = 100
    count_steps_by: str = "env_steps"
    batch_mode: str = "truncate_episodes"
    episode_horizon: Optional[int] = None
    preprocessor_pref: Optional[str] = "deepmind"
    sample_async: bool = False
    compress_observations: Any = False
    num_envs: int = 1
    observation_fn: Optional[Callable] = None
    observation_filter: Any = "NoFilter"
    clip_rewards: Any = None
    normalize_actions: bool = True
    clip_actions: bool = False
    env_config: Optional[dict] = None
    model_config: Optional[dict] = None
    policy_config: Optional[dict] = None
    worker_index: int = 0
    num_workers: int = 0
    record_env: Any = False
    log_dir: Optional[str] = None
    log_level: Optional[str] = None
    callbacks: Any = None
    input_creator: Callable = _default_input
    input_evaluation: Any = frozenset()
    output_creator: Callable = _default_output
    remote_worker_envs: bool = False
    remote_env_batch_wait_ms: int = 0
    soft_horizon: bool = False
    no_done_at_end: bool = False
    seed: Optional[int] = None
    extra_python_environs: Optional[dict] = None
    fake_sampler: bool = False
    spaces: Optional[dict] = None
    policy: Any = None
    monitor_path: Optional[str] = None
    policy_specs: Dict[Any, PolicySpec] = dataclasses.field(
        default_factory=dict, metadata=_DERIVED)
    blackhole_outputs: bool = dataclasses.field(default=False, metadata=_DERIVED)
    given: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False,
                                              metadata=_DERIVED)


# RLlib's keyword arguments of RolloutWorker, in RLlib's order.
ARG_NAMES = tuple(f.name for f in dataclasses.fields(WorkerArgs) if not f.metadata.get("derived"))

# RLlib 2.x's constructor keywords beside `env_creator`, `validate_env`, `worker_index`,
# `num_workers`, `log_dir` and `spaces` (which both versions share), with their defaults.
V2_ARGS = {"config": None, "default_policy_class": None, "recreated_worker": False,
           "dataset_shards": None}
_SHARED_ARGS = ("env_creator", "validate_env", "worker_index", "num_workers", "log_dir", "spaces")

# `RolloutWorker(**kwargs)`'s signature: RLlib's keywords with their defaults (the 41 of
# RLlib 1.x, then RLlib 2.x's).
SIGNATURE = inspect.Signature(
    [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    + [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, annotation=f.type,
                         default=(inspect.Parameter.empty if f.default is dataclasses.MISSING
                                  else f.default))
       for f in dataclasses.fields(WorkerArgs) if f.name in ARG_NAMES]
    + [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
       for name, default in V2_ARGS.items()]
    + [inspect.Parameter("unknown", inspect.Parameter.VAR_KEYWORD)])


def v1_kwargs(kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """RLlib 1.x keyword arguments from RLlib 2.x's (`config=AlgorithmConfig or dict`,
    `default_policy_class=`); 1.x keyword arguments are returned unchanged.

    The config maps to the arguments as `WorkerSet` maps it
    (`tfrl.evaluation.rollout_worker.config.worker_kwargs`): `multiagent.policies` (a dict of
    specs, or a set/list of ids) with `default_policy_class` for the specs without a
    class; `num_workers` defaults to the config's; `rollout_fragment_length="auto"` is
    the config's `get_rollout_fragment_length(worker_index)`.

    Raises:
        TypeError: If 2.x keywords are mixed with 1.x-only ones, or `config` is neither an
            AlgorithmConfig nor a dict.
    """
    if not any(name in kwargs for name in V2_ARGS):
        return kwargs
    check_keys({k: v for k, v in kwargs.items() if k not in ARG_NAMES and k not in V2_ARGS},
               (*_SHARED_ARGS, *V2_ARGS), "RolloutWorker argument")
    mixed = sorted(k for k in kwargs if k not in V2_ARGS and k not in _SHARED_ARGS and k in ARG_NAMES)
    if mixed:
        raise TypeError(
            f"RolloutWorker: RLlib 2.x's keywords ({sorted(k for k in kwargs if k in V2_ARGS)}) "
            f"cannot be mixed with RLlib 1.x's {mixed}; put those settings into the config "
            "(e.g. AlgorithmConfig().rollouts(rollout_fragment_length=...)), or use the 1.x "
            "keywords only (policy_spec=..., policy_config=...).")
    config = kwargs.get("config")
    if config is None:
        config_dict: Dict[str, Any] = {}
    elif hasattr(config, "to_dict"):
        config_dict = dict(config.to_dict())
    elif isinstance(config, dict):
        config_dict = dict(config)
    else:
        raise TypeError("RolloutWorker: `config` must be an AlgorithmConfig or a dict; "
                        f"received {type(config).__name__}.")
    if kwargs.get("dataset_shards") is not None:
        raise ValueError("RolloutWorker: `dataset_shards` (Ray Data input) is not supported; "
                         "use an offline `input` (see tfrl.offline.input_creators).")
    worker_index = kwargs.get("worker_index", 0)
    if config_dict.get("rollout_fragment_length") == "auto":
        if hasattr(config, "get_rollout_fragment_length"):
            length = config.get_rollout_fragment_length(worker_index)
        elif isinstance(config_dict.get("train_batch_size"), int):  # an algorithm's dict
            length = wsc.auto_fragment_length(
                config_dict["train_batch_size"], config_dict.get("num_workers") or 0,
                config_dict.get("num_envs_per_worker") or 1, worker_index)
        else:
            raise ValueError("RolloutWorker: rollout_fragment_length='auto' needs "
                             "train_batch_size (an int) in the config to derive it from.")
        config_dict["rollout_fragment_length"] = length
    num_workers = kwargs.get("num_workers")
    if num_workers is None:
        num_workers = config_dict.get("num_workers") or 0
    env_creator = kwargs.get("env_creator", wsc.no_env)
    specs = wsc.policy_specs(config_dict, kwargs.get("default_policy_class"))
    return wsc.worker_kwargs(config_dict, env_creator=env_creator,
                             validate_env=kwargs.get("validate_env"), policy_spec=specs,
                             worker_index=worker_index, num_workers=num_workers,
                             log_dir=kwargs.get("log_dir"), spaces=kwargs.get("spaces"))




def check_worker_args(kwargs: Dict[str, Any]) -> WorkerArgs:
    """Checks RolloutWorker's keyword arguments; their effective values as a `WorkerArgs`.

    Warns about deprecated aliases (`policy`, `monitor_path`) and ignored arguments
    (`tf_session_creator`, `framework="tf"`).

    Raises:
        UnknownKeyError: (a `TypeError` and `ValueError`) for an unknown keyword, naming
            the closest valid one.
        TypeError: Without `env_creator`, or for a non-callable `env_creator`, or
            `callbacks` that are not a DefaultCallbacks subclass.
        ValueError: For a bad value (each message names the argument and what it takes).
    """
    kwargs = v1_kwargs(kwargs)
    check_keys({k: v for k, v in kwargs.items() if k not in ARG_NAMES}, ARG_NAMES,
               "RolloutWorker argument")
    if "env_creator" not in kwargs:
        raise TypeError("RolloutWorker() missing required keyword argument: 'env_creator' "
                        "(a callable EnvContext -> env, or an env name).")
    given = WorkerArgs(**kwargs)
    changes: Dict[str, Any] = {}
    if given.policy is not None:
        warnings.warn("RolloutWorker(policy=...) is deprecated; use policy_spec=...",
                      DeprecationWarning, stacklevel=3)
        changes["policy_spec"] = given.policy
    if given.monitor_path is not None:
        warnings.warn("RolloutWorker(monitor_path=...) is deprecated; use record_env=...",
                      DeprecationWarning, stacklevel=3)
        changes["record_env"] = given.monitor_path
    creation = {name: changes.get(name, getattr(given, name)) for name in ARG_NAMES}
    specs = normalize_policy_specs(creation["policy_spec"])
    env_creator = given.env_creator
    if isinstance(env_creator, str):
        changes["env_creator"] = get_env_creator(env_creator)
    elif not callable(env_creator):
        raise TypeError("RolloutWorker: `env_creator` must be a callable EnvContext -> env "
                        f"(or an env name); received {type(env_creator).__name__}.")
    if given.tf_session_creator is not None:
        warnings.warn("RolloutWorker(tf_session_creator=...) is ignored: tfrl runs TF2 "
                      "without sessions.", UserWarning, stacklevel=3)
    config = changes["policy_config"] = _checked_policy_config(given.policy_config)
    _check_values(given)
    blackhole = _check_input_evaluation(given.input_evaluation)
    if blackhole:
        changes["sample_async"] = True
    changes["input_creator"] = _input_creator(given.input_creator, config)
    if given.output_creator is _default_output:
        changes["output_creator"] = output_creator_from_config(config)
    obs_space, act_space = config.get("observation_space"), config.get("action_space")
    if (given.spaces is None and config.get("env") is None and obs_space is not None
            and act_space is not None):
        changes["spaces"] = {pid: (obs_space, act_space) for pid in specs}
    return dataclasses.replace(given, **changes, policy_specs=specs,
                               blackhole_outputs=blackhole, given=creation)


def apply_process_settings(args: WorkerArgs) -> None:
    """Applies the process-level arguments: `extra_python_environs` (set as environment
    variables) and `log_level` (of the `tfrl` loggers)."""
    for key, value in (args.extra_python_environs or {}).items():
        os.environ[key] = str(value)
    if args.log_level:
        logging.getLogger("tfrl").setLevel(args.log_level)


def _checked_policy_config(policy_config: Optional[dict]) -> dict:
    config = dict(policy_config or {})
    framework = config.get("framework", "tf2")
    if framework == "tf":
        warnings.warn("framework='tf' (TF1 graphs) runs as 'tf2' in tfrl.", UserWarning,
                      stacklevel=4)
    elif framework not in ("tf2", "tfe"):
        raise ValueError(f"tfrl supports framework='tf2' only; received framework={framework!r}.")
    return config


def _check_values(a: WorkerArgs) -> None:
    if a.count_steps_by not in ("env_steps", "agent_steps"):
        raise ValueError("`count_steps_by` must be 'env_steps' or 'agent_steps'; received "
                         f"{a.count_steps_by!r}.")
    if a.batch_mode not in ("truncate_episodes", "complete_episodes"):
        raise ValueError(f"Unsupported batch mode: {a.batch_mode!r}. Use 'truncate_episodes' "
                         "or 'complete_episodes'.")
    check_int(a.rollout_fragment_length, "RolloutWorker: `rollout_fragment_length`", 1)
    check_int(a.num_envs, "RolloutWorker: `num_envs`", 1)
    check_int(a.worker_index, "RolloutWorker: `worker_index`", 0)
    check_int(a.num_workers, "RolloutWorker: `num_workers`", 0)
    if a.preprocessor_pref not in ("deepmind", "rllib", None):
        raise ValueError("`preprocessor_pref` must be 'deepmind', 'rllib' or None; received "
                         f"{a.preprocessor_pref!r}.")
    filt = a.observation_filter
    if not callable(filt) and filt not in FILTER_NAMES:
        get_filter(filt, ())  # raises, naming the closest filter
    if a.callbacks is not None and not isinstance(a.callbacks, type):
        if not isinstance(a.callbacks, DefaultCallbacks):
            raise TypeError("`callbacks` must be a DefaultCallbacks subclass (the class, not "
                            f"an instance); received {a.callbacks!r}.")


def _check_input_evaluation(methods: Any) -> bool:
    """Whether `input_evaluation` asks for sampling for metrics only ("simulation")."""
    blackhole = False
    for method in methods or ():
        if method == "simulation":
            logger.warning("input_evaluation 'simulation': sampler outputs are discarded, "
                           "only metrics are kept.")
            blackhole = True
        else:
            estimator_class(method)  # raises for an unknown method
    return blackhole


def _input_creator(input_creator: Callable, config: dict) -> Callable:
    if input_creator is _default_input:
        return input_creator_from_config(config.get("input", DEFAULT_INPUT))
    return checked_input_creator(input_creator)


# ------------------------------------------------------------------- host utilities
def host_name() -> str:
    """This machine's host name."""
    return platform.node()


def node_ip() -> str:
    """This machine's IP address on the default route (127.0.0.1 if offline)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))  # UDP connect: no packet is sent
            return s.getsockname()[0]
        except OSError:
            return "127.0.0.1"


def free_port() -> int:
    """A TCP port that is free on this machine right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def ray_actor_class(cls: type, num_cpus: Optional[float] = None,
                    num_gpus: Optional[float] = None, memory: Optional[int] = None,
                    object_store_memory: Optional[int] = None,
                    resources: Optional[dict] = None) -> Any:
    """`cls` as a Ray actor class (needs `pip install 'tfrl[ray]'`).

    Raises:
        ImportError: If Ray is not installed.
    """
    try:
        import ray  # deferred: Ray is optional and heavy
    except ImportError as e:
        raise ImportError(f"{cls.__name__}.as_remote needs Ray: pip install 'tfrl[ray]'.") from e
    options = {k: v for k, v in dict(num_cpus=num_cpus, num_gpus=num_gpus, memory=memory,
                                     object_store_memory=object_store_memory,
                                     resources=resources).items() if v is not None}
    # (only the options given: Ray warns about object_store_memory even when None)
    return ray.remote(**options)(cls) if options else ray.remote(cls)


# ------------------------------------------------------------- off-policy estimation
def make_estimators(methods: Any, policy_map: Any, gamma: float) -> list:
    """One estimator per `input_evaluation` method (other than "simulation") and policy.

    Each estimator is told its policy id (`estimator.policy_id`).
    """
    estimators = []
    for method in methods or ():
        if method == "simulation":
            continue
        cls = estimator_class(method)
        for pid, policy in policy_map.items():
            estimator = cls(policy, gamma)
            estimator.policy_id = pid
            estimators.append(estimator)
    return estimators


def feed_estimators(estimators: list, batch: Any) -> None:
    """Hands each estimator its policy's part of a sampled batch (decompressed)."""
    batches = getattr(batch, "policy_batches", None)
    for estimator in estimators:
        if batches is None:
            estimator.process(batch)
        elif estimator.policy_id in batches:
            estimator.process(batches[estimator.policy_id])
