"""GlobalStateInfos: a MultiAgentEnv wrapper that adds the env's global state to every
agent's step info, row-aligned for MAPPO's critic (`"state"`: the state of the
observations the agents acted on; `"next_state"`: the state the step led to).

Example:
    >>> import numpy as np
    >>> from tfrl.env.multi_agent_env import MultiAgentEnv
    >>> class Counter(MultiAgentEnv):
    ...     possible_agents = ["a"]
    ...     def reset(self, *, seed=None, options=None):
    ...         self.n = 0
    ...         return {"a": np.zeros(1)}, {}
    ...     def step(self, actions):
    ...         self.n += 1
    ...         return {"a": np.zeros(1)}, {"a": 0.0}, {"__all__": False}, {"__all__": False}, {}
    ...     def state(self):
    ...         return np.array([self.n])
    >>> env = GlobalStateInfos(Counter())
    >>> _ = env.reset()
    >>> info = env.step({"a": 0})[4]["a"]
    >>> info["state"].tolist(), info["next_state"].tolist()
    ([0], [1])
"""

from typing import Any, Optional

from tfrl.algorithms.mappo.critic_input import NEXT_STATE_KEY, STATE_KEY
from tfrl.env.env_context import EnvContext
from tfrl.env.multi_agent_env import MultiAgentEnv
from tfrl.env.registry import get_env_creator


class GlobalStateInfos(MultiAgentEnv):
    """Wraps a MultiAgentEnv with a `state()` method; see the module docstring.

    Args:
        env: The MultiAgentEnv (`state()` returns the global state as an array).
    """

    def __init__(self, env: MultiAgentEnv):
        super().__init__()
        self.env = env
        self.observation_space = env.observation_space
        self.action_space = env.action_space
        self._agent_ids = env.get_agent_ids()
        self.possible_agents = getattr(env, "possible_agents", None)
        self._state: Any = None

    def __getattr__(self, name: str) -> Any:
        if name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)

    def get_observation_space(self, agent_id: Any) -> Any:
        return self.env.get_observation_space(agent_id)

    def get_action_space(self, agent_id: Any) -> Any:
        return self.env.get_action_space(agent_id)

    def state(self) -> Any:
        return self.env.state()

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        result = self.env.reset(seed=seed, options=options)
        self._state = self.env.state()
        return result

    def step(self, action_dict: Any):
        obs, rewards, terminateds, truncateds, infos = self.env.step(action_dict)
        before, self._state = self._state, self.env.state()
        infos = dict(infos)
        for agent_id in obs:
            infos[agent_id] = {**(infos.get(agent_id) or {}), STATE_KEY: before,
                               NEXT_STATE_KEY: self._state}
        return obs, rewards, terminateds, truncateds, infos

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


class GlobalStateEnvCreator:
    """An env creator (picklable) making `env` (a registered name, gymnasium id or
    creator) wrapped in `GlobalStateInfos`."""

    def __init__(self, env: Any):
        self.env = env

    def __call__(self, ctx: EnvContext) -> GlobalStateInfos:
        return GlobalStateInfos(get_env_creator(self.env)(ctx))
