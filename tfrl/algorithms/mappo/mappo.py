"""MAPPO: PPO with a centralized critic for cooperating agents (Yu et al., 2022), RLlib's
centralized-critic example (`rllib/examples/centralized_critic.py`) as an algorithm.

Each agent's policy (shared or per agent, through `multi_agent(policies=...,
policy_mapping_fn=...)`) acts on its own observation; its value function sees the
critic input that `MAPPOTFPolicy.postprocess_trajectory` builds from the other agents'
trajectories of the same episode ("all_obs") or from the env's global state
("global_state"). Before it builds the workers, `MAPPO` reads the env once
(`critic_settings`): it must be a `MultiAgentEnv`; "auto" becomes "global_state" if the
env has a working `state()` (PettingZoo Parallel envs through `ParallelPettingZooEnv`
do), else "all_obs"; the agent ids and observation sizes fill `critic_agents` and
`critic_obs_sizes`, the state's size `critic_state_size`; an env with `state()` is
wrapped in `GlobalStateInfos` so that each step's infos carry the state. The training
step is PPO's (sample → standardize advantages → learn → update KL → sync weights).

Example:
    >>> from tfrl.algorithms.mappo import MAPPOConfig
    >>> MAPPOConfig().training(critic_input="all_obs").critic_input
    'all_obs'
"""

from typing import Any, Dict

import numpy as np

from tfrl.algorithms.algorithm_config import AlgorithmConfig
from tfrl.algorithms.mappo.critic_input import STATE_KEY, flat_rows
from tfrl.algorithms.mappo.global_state import GlobalStateEnvCreator
from tfrl.algorithms.mappo.mappo_config import MAPPOConfig
from tfrl.algorithms.mappo.mappo_tf_policy import MAPPOTFPolicy
from tfrl.algorithms.ppo.ppo import PPO
from tfrl.core import types
from tfrl.env.env_context import EnvContext
from tfrl.env.multi_agent_env import MultiAgentEnv
from tfrl.env.registry import get_env_creator
from tfrl.policy import space_specs

__all__ = ["DEFAULT_CONFIG", "MAPPO", "MAPPOConfig", "critic_settings"]


def _flat_size(space: Any) -> int:
    return int(flat_rows(space_specs.zeros_batch(space, 1)).shape[1])


def _state_of(env: MultiAgentEnv) -> Any:
    """The env's global state after a reset, or None if it has no working `state()`."""
    state_fn = getattr(env, "state", None)
    if not callable(state_fn):
        return None
    try:
        return state_fn()
    except NotImplementedError:
        return None


def critic_settings(config: MAPPOConfig) -> Dict[str, Any]:
    """The config overrides that fix MAPPO's critic input for `config`'s env (see the
    module docstring): `critic_input`, `critic_agents`, `critic_obs_sizes`,
    `critic_state_size`, and `env` wrapped in `GlobalStateInfos` when the state comes
    from `state()`.

    Raises:
        ValueError: If the env is not a MultiAgentEnv, declares no agent ids, or
            `critic_input="global_state"` finds no global state.
    """
    env = get_env_creator(config.env)(EnvContext(dict(config.env_config), worker_index=0))
    try:
        if not isinstance(env, MultiAgentEnv):
            raise ValueError(
                f"MAPPO trains cooperating agents of a multi-agent env; received env="
                f"{config.env!r}, which makes a {type(env).__name__} (not a tfrl "
                "MultiAgentEnv). Use PPO for a single agent, or wrap a PettingZoo env in "
                "tfrl.env.wrappers.pettingzoo_env.ParallelPettingZooEnv.")
        agents = list(config.critic_agents or sorted(env.get_agent_ids(), key=str))
        if not agents:
            raise ValueError(
                f"MAPPO: the env {type(env).__name__} declares no agent ids (set "
                "self.possible_agents or self._agent_ids), so the critic input cannot be "
                "built; set critic_agents=[...] in the config.")
        sizes = [_flat_size(env.get_observation_space(a)) for a in agents]
        settings: Dict[str, Any] = {"critic_agents": agents, "critic_obs_sizes": sizes}
        kind = config.critic_input
        if kind == "all_obs":
            return {**settings, "critic_input": kind}
        env.reset(seed=config.seed)
        state = _state_of(env)
        if state is not None:
            return {**settings, "critic_input": "global_state",
                    "critic_state_size": int(np.asarray(state).size),
                    "env": GlobalStateEnvCreator(config.env)}
        if kind == "auto":
            return {**settings, "critic_input": "all_obs"}
        # "global_state" from an env that writes it into its step infos itself.
        obs = env.reset(seed=config.seed)[0]
        infos = env.step(env.action_space_sample(list(obs)))[4]
        found = [np.asarray(i[STATE_KEY]) for i in infos.values()
                 if isinstance(i, dict) and STATE_KEY in i]
        if not found:
            raise ValueError(
                f"MAPPO: critic_input='global_state', but the env {type(env).__name__} has "
                "no working state() method and its step infos carry no 'state'; the critic "
                "input cannot be built. Give the env a state() method, put 'state' and "
                "'next_state' in each agent's step info, or use critic_input='all_obs' "
                "(or 'auto').")
        return {**settings, "critic_input": "global_state",
                "critic_state_size": int(found[0].size)}
    finally:
        env.close()


class MAPPO(PPO):
    """MAPPO (see `MAPPOConfig`, `MAPPOTFPolicy` and the module docstring).

    Example: `MAPPO(config={"env": "my_pettingzoo_env", "num_workers": 0}).train()`.
    """

    config_class = MAPPOConfig
    default_policy_class = MAPPOTFPolicy
    supports_in_graph = False
    # It needs a MultiAgentEnv (the conformance suite trains it on two agents).
    multi_agent_only = True
    # The config keys MAPPO fills in from the env before it builds the policies.
    settings_from_env = staticmethod(critic_settings)

    def _make_workers(self, config: AlgorithmConfig, num_workers: int) -> types.WorkerSet:
        if isinstance(config, MAPPOConfig) and config.env is not None:
            config = config.replace(**self.settings_from_env(config))
        return super()._make_workers(config, num_workers)


MAPPOConfig.algo_class = MAPPO

# RLlib 1.x name: the default config as a flat dict.
DEFAULT_CONFIG = MAPPOConfig().to_dict()
