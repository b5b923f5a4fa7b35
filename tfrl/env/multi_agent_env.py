"""MultiAgentEnv: several agents in one gymnasium-style env, dicts keyed by agent id.

`reset(*, seed=None, options=None) -> (obs, infos)` and
`step(action_dict) -> (obs, rewards, terminateds, truncateds, infos)`, every value a
dict `agent_id -> value`. Only the agents present in `obs` act next (they may differ
from step to step: agents join and leave within an episode). `terminateds` and
`truncateds` both carry `"__all__"`: the episode ended for everyone.

Example:
    >>> import gymnasium as gym
    >>> MultiCartPole = make_multi_agent("CartPole-v1")
    >>> env = MultiCartPole({"num_agents": 2})
    >>> obs, infos = env.reset(seed=0)
    >>> sorted(obs), env.get_agent_ids()
    ([0, 1], {0, 1})
    >>> obs, rewards, terminateds, truncateds, infos = env.step({0: 1, 1: 0})
    >>> rewards, terminateds
    ({0: 1.0, 1: 1.0}, {0: False, 1: False, '__all__': False})
"""

from typing import Any, Callable, Optional, Set, Type, Union

import gymnasium as gym

from tfrl.env.base_env import BaseEnv
from tfrl.env.env_context import EnvContext
from tfrl.env.registry import get_env_creator
from tfrl.utils.typing import AgentID, MultiAgentDict


class MultiAgentEnv(gym.Env):
    """A gymnasium env whose observations, actions, rewards and flags are agent dicts.

    Subclasses implement `reset(*, seed=None, options=None)` and `step(action_dict)`
    (see the module docstring), and set `observation_space` and `action_space`: one
    space shared by all agents, or a `gymnasium.spaces.Dict` keyed by agent id. Declare
    the agent ids in `self._agent_ids` (or `self.possible_agents`); a Dict space whose
    keys are exactly the agent ids is per agent. If no ids are declared, Dict
    observation and action spaces with the same keys are taken as per agent.
    """

    observation_space: Optional[gym.Space] = None
    action_space: Optional[gym.Space] = None

    def __init__(self):
        if not hasattr(self, "_agent_ids"):
            self._agent_ids = set()

    def get_agent_ids(self) -> Set[AgentID]:
        """The ids of all agents that may appear in this env (empty set if unknown)."""
        ids = getattr(self, "_agent_ids", None) or getattr(self, "possible_agents", None)
        if ids:
            return set(ids)
        obs_space, act_space = self.observation_space, self.action_space
        if (isinstance(obs_space, gym.spaces.Dict) and isinstance(act_space, gym.spaces.Dict)
                and set(obs_space.spaces) == set(act_space.spaces)):
            return set(obs_space.spaces)
        return set()

    def get_observation_space(self, agent_id: AgentID) -> Optional[gym.Space]:
        """The observation space of agent `agent_id`.

        Raises:
            ValueError: If the spaces are per agent and `agent_id` has none.
        """
        return self._space_of(self.observation_space, agent_id, "observation")

    def get_action_space(self, agent_id: AgentID) -> Optional[gym.Space]:
        """The action space of agent `agent_id`.

        Raises:
            ValueError: If the spaces are per agent and `agent_id` has none.
        """
        return self._space_of(self.action_space, agent_id, "action")

    def to_base_env(
        self, make_env: Optional[Callable[[int], "MultiAgentEnv"]] = None, num_envs: int = 1
    ) -> BaseEnv:
        """This env as sub-env 0 of a BaseEnv; `make_env(i)` creates sub-envs 1.."""
        from tfrl.env.multi_agent_env_to_base_env import _MultiAgentEnvToBaseEnv

        return _MultiAgentEnvToBaseEnv(make_env=make_env, existing_envs=[self], num_envs=num_envs)

    def _space_of(self, space: Optional[gym.Space], agent_id: AgentID, kind: str) -> Optional[gym.Space]:
        ids = self.get_agent_ids()
        per_agent = isinstance(space, gym.spaces.Dict) and ids and set(space.spaces) == ids
        if not per_agent:
            return space
        if agent_id not in space.spaces:
            raise ValueError(
                f"{type(self).__name__} has no {kind} space for agent {agent_id!r}; its agent "
                f"ids are {sorted(ids, key=repr)}."
            )
        return space[agent_id]


def make_multi_agent(env_name_or_creator: Union[str, Callable[[EnvContext], gym.Env]]) -> Type[MultiAgentEnv]:
    """A MultiAgentEnv class running `config["num_agents"]` independent copies of an env.

    Agent `i` (ids `0..num_agents-1`) acts in copy `i`; it leaves the episode when its
    copy terminates or truncates, and the episode ends when all copies have. Then
    `terminateds["__all__"]` is True if any copy terminated, else `truncateds["__all__"]`.

    Args:
        env_name_or_creator: A gymnasium id or registered name, or a callable taking
            the config (an `EnvContext` without `"num_agents"`) and returning a
            single-agent gymnasium env.

    Returns:
        A MultiAgentEnv subclass, constructed with a config dict (`num_agents`
        defaults to 1; the other keys configure each copy).
    """
    creator = get_env_creator(env_name_or_creator)

    class MultiEnv(MultiAgentEnv):
        def __init__(self, config: Optional[dict] = None):
            super().__init__()
            config = {} if config is None else config
            rest = {k: v for k, v in config.items() if k != "num_agents"}
            num = config.get("num_agents", 1)
            if isinstance(num, bool) or not isinstance(num, int) or num < 1:
                raise ValueError(f"num_agents must be an int >= 1; received {num!r}.")
            ctx = (config.copy_with_overrides(env_config=rest) if isinstance(config, EnvContext)
                   else EnvContext(rest, worker_index=0))
            self.envs = [creator(ctx) for _ in range(num)]
            self._agent_ids = set(range(num))
            self.observation_space = self.envs[0].observation_space
            self.action_space = self.envs[0].action_space
            self._terminated, self._done = set(), set()

        def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
            self._terminated, self._done = set(), set()
            obs, infos = {}, {}
            for i, env in enumerate(self.envs):
                obs[i], infos[i] = env.reset(seed=None if seed is None else seed + i, options=options)
            return obs, infos

        def step(self, action_dict: MultiAgentDict):
            obs, rewards, terminateds, truncateds, infos = {}, {}, {}, {}, {}
            for i, action in action_dict.items():
                obs[i], rewards[i], terminateds[i], truncateds[i], infos[i] = self.envs[i].step(action)
                if terminateds[i]:
                    self._terminated.add(i)
                if terminateds[i] or truncateds[i]:
                    self._done.add(i)
            all_done = len(self._done) == len(self.envs)
            terminateds["__all__"] = all_done and bool(self._terminated)
            truncateds["__all__"] = all_done and not self._terminated
            return obs, rewards, terminateds, truncateds, infos

        def render(self) -> Any:
            return self.envs[0].render()

        def close(self) -> None:
            for env in self.envs:
                env.close()

    return MultiEnv


def __getattr__(name: str) -> Any:
    # `tfrl.env.multi_agent_env._MultiAgentEnvToBaseEnv`, where RLlib has it.
    if name == "_MultiAgentEnvToBaseEnv":
        from tfrl.env.multi_agent_env_to_base_env import _MultiAgentEnvToBaseEnv

        return _MultiAgentEnvToBaseEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
