"""CQL: conservative Q-learning (RLlib's `ray.rllib.algorithms.cql`), SAC with a penalty
on the Q-values of actions outside the data, learning from offline data.

Plan: SAC's (`OffPolicyAlgorithm`): the workers read their `input` (experience files;
nothing is sampled from an env unless `input="sampler"`), the rows read go into the
replay buffer, and each learning phase replays `train_batch_size`-row minibatches from
it for its gradient steps in one compiled call. With `evaluation_interval`, the learnt
policy is run greedily on the env (`evaluation_config={"input": "sampler", "explore":
False}`).

Discrete action spaces: `CQL(config)` with a `Discrete` action space (the config's
`action_space`, else the env's, made once to read it) builds discrete CQL on DQN
instead (`tfrl.algorithms.cql_dqn.CQLDQN`, its config `CQLDQNConfig`: DQN's keys plus
`min_q_weight` and `temperature`). RLlib's CQL has no discrete variant. A config dict
is passed on as given; of a `CQLConfig`, the keys set to other than their defaults. A
key only the SAC-based CQL has (`bc_iters`, `num_actions`, `q_model_config`, ...) set
to other than its default is refused, naming it; so is a key of discrete CQL alone
(`dueling`, `hiddens`, ...) given in a dict for a Box action space. Multi-agent configs
(`multiagent["policies"]`) are not dispatched.

Example:
    >>> from tfrl.algorithms.cql import CQLConfig
    >>> CQLConfig().training(lagrangian=True).lagrangian
    True
"""

from typing import Any, Dict, Optional

import gymnasium as gym

from tfrl.algorithms.algorithm_config import AlgorithmConfig
from tfrl.algorithms.cql.cql_config import CQLConfig
from tfrl.algorithms.cql.cql_tf_policy import CQLTFPolicy
from tfrl.algorithms.cql_dqn.cql_dqn import CQLDQN, CQLDQNConfig
from tfrl.algorithms.sac.sac import SAC
from tfrl.env.env_context import EnvContext
from tfrl.env.registry import get_env_creator


class CQL(SAC):
    """Conservative Q-learning (see `CQLConfig`, `CQLTFPolicy`); for a `Discrete` action
    space `CQL(config)` returns a `CQLDQN` (see the module docstring)."""

    config_class = CQLConfig
    default_policy_class = CQLTFPolicy

    def __new__(cls, config: Any = None, env: Any = None, logger_creator: Any = None) -> Any:
        if cls is CQL:
            space = _action_space(config, env)
            if isinstance(space, gym.spaces.Discrete):
                return CQLDQN(config=discrete_config(config, space), env=env,
                              logger_creator=logger_creator)
            _check_no_discrete_keys(config, space)
        return super().__new__(cls)


def _as_dict(config: Any) -> Dict[str, Any]:
    if isinstance(config, AlgorithmConfig):
        return config.to_dict()
    return dict(config) if isinstance(config, dict) else {}


def _action_space(config: Any, env: Any) -> Optional[gym.Space]:
    """The action space a single-agent CQL would have: the config's `action_space`, else
    that of the env (made once with the config's `env_config`); None without either, or
    for a multi-agent config."""
    values = _as_dict(config)
    if (values.get("multiagent") or {}).get("policies"):
        return None
    if values.get("action_space") is not None:
        return values["action_space"]
    env = env if env is not None else values.get("env")
    if env is None:
        return None
    instance = get_env_creator(env)(EnvContext(values.get("env_config") or {},
                                               worker_index=0))
    try:
        return instance.action_space
    finally:
        instance.close()


def _check_no_discrete_keys(config: Any, space: Optional[gym.Space]) -> None:
    """Refuses a config dict holding keys of discrete CQL alone (DQN's: `dueling`,
    `hiddens`, ...) for the SAC-based CQL."""
    if not isinstance(config, dict):
        return
    discrete_only = sorted(set(config) & (set(CQLDQNConfig().to_dict())
                                          - set(CQLConfig().to_dict())))
    if discrete_only:
        where = "no Discrete action space" if space is None else f"the action space {space}"
        raise ValueError(
            f"CQL with {where} trains the SAC-based CQL, whose config has no key(s) "
            f"{discrete_only}: they belong to discrete CQL on DQN (CQLDQN), which CQL "
            "builds for a Discrete action space. Remove them (the SAC-based CQL's networks "
            "are set by q_model_config and policy_model_config).")


def discrete_config(config: Any, space: gym.Space) -> Dict[str, Any]:
    """The `CQLDQNConfig` dict of a CQL config for the `Discrete` action space `space`
    (see the module docstring).

    Raises:
        ValueError: For a key of the SAC-based CQL alone set to other than its default.
    """
    values = _as_dict(config)
    cql_defaults = CQLConfig().to_dict()
    discrete_keys = set(CQLDQNConfig().to_dict())
    sac_only = sorted(key for key in set(cql_defaults) - discrete_keys
                      if key in values and values[key] != cql_defaults[key])
    if sac_only:
        raise ValueError(
            f"CQL on the Discrete action space {space} trains discrete CQL on DQN "
            f"(tfrl.algorithms.cql_dqn.CQLDQN), whose config has no key(s) {sac_only}: "
            "they belong to the SAC-based CQL for Box action spaces. Remove them (discrete "
            "CQL takes DQN's keys, e.g. lr, hiddens, dueling, double_q, plus min_q_weight "
            "and temperature), or use a Box action space.")
    if isinstance(config, AlgorithmConfig):
        # A config object holds every key: pass on the ones set to other than CQL's
        # defaults (the others take discrete CQL's defaults).
        return {key: value for key, value in values.items()
                if key in discrete_keys and (key not in cql_defaults
                                             or value != cql_defaults[key])}
    return {key: value for key, value in values.items()
            if key not in cql_defaults or key in discrete_keys}


CQLConfig.algo_class = CQL

# RLlib 1.x name: the default config as a flat dict.
DEFAULT_CONFIG = CQLConfig().to_dict()
