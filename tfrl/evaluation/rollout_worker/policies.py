"""Building a rollout worker's policies: specs, spaces, preprocessors, filters, devices.

* `normalize_policy_specs` turns the worker's `policy_spec` argument (a class, or a dict
  of `PolicySpec`s / 4-tuples) into `{PolicyID: PolicySpec}`.
* `resolve_spaces` fills in missing spaces from the env (per agent for multi-agent envs
  with per-agent spaces) or from the `spaces` argument.
* `build_policy` builds one policy with its preprocessor: the policy gets the
  PREPROCESSED observation space (`preprocessor.observation_space`, which carries
  `.original_space`), so it always receives flat/Box observations.
* `check_gpus` compares the GPUs requested with those TensorFlow sees.
"""

import logging
from typing import Any, Callable, Dict, List, Optional, Tuple

import gymnasium as gym
import tensorflow as tf

from tfrl.data.sample_batch import DEFAULT_POLICY_ID
from tfrl.env.multi_agent_env import MultiAgentEnv
from tfrl.evaluation.rollout_worker.config import WORKER_SET_DEFAULTS
from tfrl.models.catalog import ModelCatalog
from tfrl.policy.policy import PolicySpec

logger = logging.getLogger(__name__)


def normalize_policy_specs(policy_spec: Any) -> Dict[Any, PolicySpec]:
    """`{PolicyID: PolicySpec}` from a policy class or a dict of specs/tuples.

    Raises:
        ValueError: If `policy_spec` is None, or a tuple spec has more than 4 items.
        TypeError: If a dict value is neither a PolicySpec, a tuple/list nor a class.
    """
    if policy_spec is None:
        raise ValueError(
            "Must provide `policy_spec` when creating RolloutWorker! Pass a Policy class, or "
            "a dict {policy_id: PolicySpec(policy_class, obs_space, act_space, config)}."
        )
    if not isinstance(policy_spec, dict):
        return {DEFAULT_POLICY_ID: PolicySpec(policy_class=policy_spec)}
    specs = {}
    for pid, spec in policy_spec.items():
        if isinstance(spec, PolicySpec):
            specs[pid] = spec
        elif isinstance(spec, (tuple, list)):
            if len(spec) > 4:
                raise ValueError(
                    f"policy_spec[{pid!r}] has {len(spec)} items; expected at most 4: "
                    "(policy_class, observation_space, action_space, config)."
                )
            specs[pid] = PolicySpec(*spec)
        elif isinstance(spec, type) or spec is None:
            specs[pid] = PolicySpec(policy_class=spec)
        else:
            raise TypeError(
                f"policy_spec[{pid!r}] must be a PolicySpec, a (policy_class, obs_space, "
                f"act_space, config) tuple or a Policy class; received {type(spec).__name__}."
            )
    return specs


def _env_spaces(env: Any) -> Tuple[Optional[gym.Space], Optional[gym.Space]]:
    if env is None:
        return None, None
    if isinstance(env, gym.vector.VectorEnv):
        return env.single_observation_space, env.single_action_space
    return getattr(env, "observation_space", None), getattr(env, "action_space", None)


def _agent_space(env: Any, pid: Any, kind: str, mapping_fn: Callable, worker: Any):
    """The space of the first agent of a multi-agent env that `mapping_fn` maps to `pid`."""
    get = getattr(env, f"get_{kind}_space", None)
    agent_ids = env.get_agent_ids() if hasattr(env, "get_agent_ids") else set()
    if get is None:
        return None
    for agent_id in sorted(agent_ids, key=repr):
        try:
            mapped = mapping_fn(agent_id, None, worker=worker)
        except Exception:  # mapping fns may need a real episode
            continue
        if mapped == pid:
            return get(agent_id)
    return None


def _per_agent(env: Any, space: Any) -> bool:
    ids = env.get_agent_ids()
    return isinstance(space, gym.spaces.Dict) and bool(ids) and set(space.spaces) == ids


def resolve_spaces(specs: Dict[Any, PolicySpec], env: Any, spaces: Optional[dict],
                   mapping_fn: Callable, worker: Any) -> Dict[Any, PolicySpec]:
    """Fills in the `None` spaces of every spec.

    Order: the spec's own space; `spaces[policy_id]`; for a multi-agent env with
    per-agent spaces, the space of an agent mapped to the policy; the env's space.

    Raises:
        ValueError: If a space cannot be determined (names the policy and what to pass).
    """
    env_obs, env_act = _env_spaces(env)
    resolved = {}
    for pid, spec in specs.items():
        obs, act = spec.observation_space, spec.action_space
        if spaces and pid in spaces:
            obs = obs if obs is not None else spaces[pid][0]
            act = act if act is not None else spaces[pid][1]
        if isinstance(env, MultiAgentEnv):
            if obs is None:
                obs = _agent_space(env, pid, "observation", mapping_fn, worker)
            if act is None:
                act = _agent_space(env, pid, "action", mapping_fn, worker)
            for name, space, env_space in (("observation_space", obs, env_obs),
                                           ("action_space", act, env_act)):
                if space is None and _per_agent(env, env_space):
                    raise ValueError(
                        f"Cannot tell the {name} of policy {pid!r}: the env's spaces are per "
                        "agent and the policy_mapping_fn (called without an episode) maps no "
                        f"agent to {pid!r}. Give the space in the PolicySpec of {pid!r}."
                    )
        obs = env_obs if obs is None else obs
        act = env_act if act is None else act
        for name, space in (("observation_space", obs), ("action_space", act)):
            if space is None:
                raise ValueError(
                    f"`{name}` not provided in the PolicySpec of {pid!r}, the worker has no env "
                    f"to take it from, and `spaces` has no entry for {pid!r}. Pass it in the "
                    "PolicySpec or as spaces={policy_id: (obs_space, act_space)}."
                )
        resolved[pid] = PolicySpec(spec.policy_class, obs, act, spec.config)
    return resolved


def merged_policy_config(policy_config: dict, spec: PolicySpec, worker_index: int,
                         seed: Optional[int]) -> dict:
    """The config a policy is built with: worker config + the spec's overrides.

    Remote workers (`worker_index > 0`) build their policies with `num_gpus_per_worker`
    GPUs, in their own process only (`learner_workers` 1: the learner that spans
    processes is the driver's), and seed `seed + 1000 * worker_index`, so each explores
    differently. Every policy's config holds its worker's `worker_index` (as in RLlib: a
    per-worker exploration such as Ape-X's `PerWorkerEpsilonGreedy` reads it).
    """
    config = {**policy_config, **(spec.config or {})}
    config["worker_index"] = int(worker_index)
    if worker_index > 0:
        config["num_gpus"] = policy_config.get(
            "num_gpus_per_worker", WORKER_SET_DEFAULTS["num_gpus_per_worker"])
        config["learner_workers"] = 1
    if seed is not None:
        config["seed"] = int(seed) + 1000 * int(worker_index)
    return config


def build_policy(pid: Any, spec: PolicySpec, config: dict) -> Tuple[Any, Any]:
    """Builds `(policy, preprocessor)`; the policy sees the preprocessed obs space.

    Raises:
        ValueError: If the spec has no policy class.
    """
    if spec.policy_class is None:
        raise ValueError(
            f"The PolicySpec of {pid!r} has no policy_class. A RolloutWorker has no default "
            "policy: give the class in the PolicySpec (or pass policy_spec=MyPolicy)."
        )
    if config.get("_disable_preprocessor_api"):
        logger.warning("_disable_preprocessor_api is ignored: tfrl policies always receive "
                       "preprocessed (flat) observations.")
    preprocessor = ModelCatalog.get_preprocessor_for_space(
        spec.observation_space, config.get("model") or {})
    policy = spec.policy_class(preprocessor.observation_space, spec.action_space, config)
    return policy, preprocessor


def check_gpus(policy_config: dict, worker_index: int) -> None:
    """Raises if more GPUs are requested than TensorFlow sees (unless `_fake_gpus`).

    Raises:
        RuntimeError: Naming the number requested and found, and how to change it.
    """
    key = "num_gpus" if worker_index == 0 else "num_gpus_per_worker"
    requested = policy_config.get(key, 0) or 0
    if requested <= 0 or policy_config.get("_fake_gpus"):
        return
    found = tf.config.list_physical_devices("GPU")
    if len(found) < requested:
        raise RuntimeError(
            f"Worker {worker_index} was asked for {key}={requested} GPUs but TensorFlow finds "
            f"{len(found)}: {found}. Set config[{key!r}] to at most {len(found)}, or set "
            "config['_fake_gpus'] = True to simulate GPUs on CPU devices (tests)."
        )


def checked_mapping_fn(policy_mapping_fn: Any) -> Callable:
    """`policy_mapping_fn` if callable.

    Raises:
        ValueError: If it is not callable.
    """
    if not callable(policy_mapping_fn):
        raise ValueError(f"`policy_mapping_fn` must be a callable! Received "
                         f"{type(policy_mapping_fn).__name__}: {policy_mapping_fn!r}.")
    return policy_mapping_fn


def checked_policies_to_train(policies_to_train: Any, policy_ids: List[Any]) -> List[Any]:
    """`policies_to_train` as a list, if a collection of ids in `policy_ids`.

    Raises:
        TypeError: If not a list/tuple/set. ValueError: For unknown policy ids.
    """
    if not isinstance(policies_to_train, (list, tuple, set, frozenset)):
        raise TypeError("`policies_to_train` must be a list of policy ids; received "
                        f"{type(policies_to_train).__name__}: {policies_to_train!r}.")
    unknown = [p for p in policies_to_train if p not in policy_ids]
    if unknown:
        raise ValueError(f"`policies_to_train` names unknown policies {unknown!r}; this worker's "
                         f"policies are {policy_ids!r}.")
    return list(policies_to_train)
