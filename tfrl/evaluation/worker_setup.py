"""RolloutWorker's constructor arguments: checking them, and the worker's host utilities.

`WorkerArgs.__init__` takes RLlib's 41 keyword-only arguments, checks them (unknown
keywords name the closest valid one), applies the process-level ones
(`extra_python_environs`, `log_level`), resolves deprecated aliases, and hands a dict of
the effective values to `RolloutWorker._setup`.

How tfrl treats each argument (all others work as RLlib documents them):

* `tf_session_creator`: TF1 sessions do not exist; a warning says it is ignored.
* `preprocessor_pref`: "deepmind" or "rllib" (or None). tfrl applies no DeepMind Atari
  wrappers itself (a warning says so for Atari envs; clip_rewards then defaults to True).
* `record_env` (`monitor_path`, deprecated alias): gymnasium `RecordVideo` for envs with
  `render_mode="rgb_array"`; a warning otherwise.
* `input_evaluation`: "simulation" samples in a background thread for metrics only;
  "is"/"wis" (off-policy estimators) are not available and rejected; others rejected.
* `policy` (deprecated alias of `policy_spec`): a warning, then used as `policy_spec`.
* `model_config`: preprocessor options and the policies' `model` config (when a
  PolicySpec has no `model` of its own).
* `policy_config["framework"]`: "tf2"/"tfe" (and "tf", with a warning) run as TF2; other
  frameworks are rejected.
* `input_creator`: when left at its default, `policy_config["input"]` (RLlib's `input`
  key: "sampler", a callable `IOContext -> InputReader`, or a registered name; see
  `tfrl.offline.input_creators`) decides it. A creator returning something other than an
  InputReader raises a TypeError.
* `spaces`: when not given and the worker has no env (`policy_config["env"]` is None),
  `policy_config["observation_space"]`/`["action_space"]` (RLlib's
  `.environment(observation_space=..., action_space=...)`) give the spaces of the
  policies whose PolicySpec has none.
"""

import logging
import os
import platform
import socket
import warnings
from typing import Any, Callable, Optional

from tfrl.env.registry import get_env_creator
from tfrl.evaluation.callbacks import DefaultCallbacks
from tfrl.evaluation.worker_policies import normalize_policy_specs
from tfrl.offline.input_creators import checked_input_creator, input_creator_from_config
from tfrl.offline.output_writer import NoopOutput
from tfrl.utils.config_keys import check_keys
from tfrl.utils.filter import FILTER_NAMES, get_filter

logger = logging.getLogger(__name__)

ARG_NAMES = (
    "env_creator", "validate_env", "policy_spec", "policy_mapping_fn", "policies_to_train",
    "tf_session_creator", "rollout_fragment_length", "count_steps_by", "batch_mode",
    "episode_horizon", "preprocessor_pref", "sample_async", "compress_observations",
    "num_envs", "observation_fn", "observation_filter", "clip_rewards", "normalize_actions",
    "clip_actions", "env_config", "model_config", "policy_config", "worker_index",
    "num_workers", "record_env", "log_dir", "log_level", "callbacks", "input_creator",
    "input_evaluation", "output_creator", "remote_worker_envs", "remote_env_batch_wait_ms",
    "soft_horizon", "no_done_at_end", "seed", "extra_python_environs", "fake_sampler",
    "spaces", "policy", "monitor_path",
)


def _default_input(ioctx: Any) -> Any:
    return ioctx.default_sampler_input()


def _default_output(ioctx: Any) -> Any:
    return NoopOutput()


def _check_int(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"RolloutWorker: `{name}` must be an int >= {minimum}; received {value!r}.")


class WorkerArgs:
    """Checks and records RolloutWorker's constructor arguments (see the module docstring)."""

    def __init__(self, *, env_creator: Callable, validate_env: Optional[Callable] = None,
                 policy_spec: Any = None, policy_mapping_fn: Optional[Callable] = None,
                 policies_to_train: Optional[list] = None, tf_session_creator: Any = None,
                 rollout_fragment_length: int = 100, count_steps_by: str = "env_steps",
                 batch_mode: str = "truncate_episodes", episode_horizon: Optional[int] = None,
                 preprocessor_pref: Optional[str] = "deepmind", sample_async: bool = False,
                 compress_observations: Any = False, num_envs: int = 1,
                 observation_fn: Optional[Callable] = None, observation_filter: Any = "NoFilter",
                 clip_rewards: Any = None, normalize_actions: bool = True,
                 clip_actions: bool = False, env_config: Optional[dict] = None,
                 model_config: Optional[dict] = None, policy_config: Optional[dict] = None,
                 worker_index: int = 0, num_workers: int = 0, record_env: Any = False,
                 log_dir: Optional[str] = None, log_level: Optional[str] = None,
                 callbacks: Any = None, input_creator: Callable = _default_input,
                 input_evaluation: Any = frozenset(), output_creator: Callable = _default_output,
                 remote_worker_envs: bool = False, remote_env_batch_wait_ms: int = 0,
                 soft_horizon: bool = False, no_done_at_end: bool = False,
                 seed: Optional[int] = None, extra_python_environs: Optional[dict] = None,
                 fake_sampler: bool = False, spaces: Optional[dict] = None, policy: Any = None,
                 monitor_path: Optional[str] = None, **unknown: Any):
        args = {k: v for k, v in locals().items() if k in ARG_NAMES}
        check_keys(unknown, ARG_NAMES, "RolloutWorker argument")
        if policy is not None:
            warnings.warn("RolloutWorker(policy=...) is deprecated; use policy_spec=...",
                          DeprecationWarning, stacklevel=3)
            args["policy_spec"] = policy
        if monitor_path is not None:
            warnings.warn("RolloutWorker(monitor_path=...) is deprecated; use record_env=...",
                          DeprecationWarning, stacklevel=3)
            args["record_env"] = monitor_path
        self._original_kwargs = dict(args)
        self._specs = normalize_policy_specs(args["policy_spec"])
        if isinstance(env_creator, str):
            args["env_creator"] = get_env_creator(env_creator)
        elif not callable(env_creator):
            raise TypeError("RolloutWorker: `env_creator` must be a callable EnvContext -> env "
                            f"(or an env name); received {type(env_creator).__name__}.")
        if extra_python_environs:
            for key, value in extra_python_environs.items():
                os.environ[key] = str(value)
        if log_level:
            logging.getLogger("tfrl").setLevel(log_level)
        if tf_session_creator is not None:
            warnings.warn("RolloutWorker(tf_session_creator=...) is ignored: tfrl runs TF2 "
                          "without sessions.", UserWarning, stacklevel=3)
        args["policy_config"] = self._check_policy_config(policy_config)
        self._check_values(args)
        self._resolve_input(args)
        self._sample_async = args["sample_async"]
        self._setup(args)

    @staticmethod
    def _check_policy_config(policy_config: Optional[dict]) -> dict:
        config = dict(policy_config or {})
        framework = config.get("framework", "tf2")
        if framework == "tf":
            warnings.warn("framework='tf' (TF1 graphs) runs as 'tf2' in tfrl.", UserWarning,
                          stacklevel=4)
        elif framework not in ("tf2", "tfe"):
            raise ValueError(f"tfrl supports framework='tf2' only; received framework={framework!r}.")
        return config

    def _check_values(self, a: dict) -> None:
        if a["count_steps_by"] not in ("env_steps", "agent_steps"):
            raise ValueError("`count_steps_by` must be 'env_steps' or 'agent_steps'; received "
                             f"{a['count_steps_by']!r}.")
        if a["batch_mode"] not in ("truncate_episodes", "complete_episodes"):
            raise ValueError(f"Unsupported batch mode: {a['batch_mode']!r}. Use 'truncate_episodes' "
                             "or 'complete_episodes'.")
        _check_int("rollout_fragment_length", a["rollout_fragment_length"], 1)
        _check_int("num_envs", a["num_envs"], 1)
        _check_int("worker_index", a["worker_index"], 0)
        _check_int("num_workers", a["num_workers"], 0)
        if a["preprocessor_pref"] not in ("deepmind", "rllib", None):
            raise ValueError("`preprocessor_pref` must be 'deepmind', 'rllib' or None; received "
                             f"{a['preprocessor_pref']!r}.")
        filt = a["observation_filter"]
        if not callable(filt) and filt not in FILTER_NAMES:
            get_filter(filt, ())  # raises, naming the closest filter
        a["_blackhole"] = False
        for method in a["input_evaluation"] or ():
            if method == "simulation":
                logger.warning("input_evaluation 'simulation': sampler outputs are discarded, "
                               "only metrics are kept.")
                a["sample_async"] = a["_blackhole"] = True
            elif method in ("is", "wis"):
                raise ValueError(f"input_evaluation {method!r}: off-policy estimators are not "
                                 "available in tfrl; remove it from input_evaluation.")
            else:
                raise ValueError(f"Unknown evaluation method: {method!r}. Known: 'simulation'.")
        if a["callbacks"] is not None and not isinstance(a["callbacks"], type):
            if not isinstance(a["callbacks"], DefaultCallbacks):
                raise TypeError("`callbacks` must be a DefaultCallbacks subclass (the class, not "
                                f"an instance); received {a['callbacks']!r}.")

    def _resolve_input(self, a: dict) -> None:
        config = a["policy_config"]
        if a["input_creator"] is _default_input:
            a["input_creator"] = input_creator_from_config(config.get("input", "sampler"))
        else:
            a["input_creator"] = checked_input_creator(a["input_creator"])
        obs_space, act_space = config.get("observation_space"), config.get("action_space")
        if (a["spaces"] is None and config.get("env") is None and obs_space is not None
                and act_space is not None):
            a["spaces"] = {pid: (obs_space, act_space) for pid in self._specs}

    def _setup(self, args: dict) -> None:  # pragma: no cover - RolloutWorker overrides it
        raise NotImplementedError

    # --------------------------------------------------------------- host utilities
    def creation_args(self) -> dict:
        """The keyword arguments this worker was constructed with."""
        return dict(self._original_kwargs)

    def get_host(self) -> str:
        """This machine's host name."""
        return platform.node()

    def get_node_ip(self) -> str:
        """This machine's IP address on the default route (127.0.0.1 if offline)."""
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                s.connect(("10.255.255.255", 1))  # UDP connect: no packet is sent
                return s.getsockname()[0]
            except OSError:
                return "127.0.0.1"

    def find_free_port(self) -> int:
        """A TCP port that is free on this machine right now."""
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("", 0))
            return s.getsockname()[1]

    @classmethod
    def as_remote(cls, num_cpus: Optional[float] = None, num_gpus: Optional[float] = None,
                  memory: Optional[int] = None, object_store_memory: Optional[int] = None,
                  resources: Optional[dict] = None) -> Any:
        """This class as a Ray actor class (needs `pip install 'tfrl[ray]'`)."""
        try:
            import ray
        except ImportError as e:
            raise ImportError("RolloutWorker.as_remote needs Ray: pip install 'tfrl[ray]'.") from e
        return ray.remote(num_cpus=num_cpus, num_gpus=num_gpus, memory=memory,
                          object_store_memory=object_store_memory, resources=resources)(cls)

    def setup_torch_data_parallel(self, url: str, world_rank: int, world_size: int,
                                  backend: str) -> None:
        """Not available: tfrl has no torch policies.

        Raises:
            NotImplementedError: Always; use tf.distribute.MultiWorkerMirroredStrategy.
        """
        raise NotImplementedError(
            "setup_torch_data_parallel is torch-only; tfrl policies are TensorFlow. For "
            "data-parallel learning across machines use tf.distribute.MultiWorkerMirroredStrategy.")
