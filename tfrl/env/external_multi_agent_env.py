"""ExternalMultiAgentEnv: an ExternalEnv whose observations, actions and rewards are per agent.

The protocol is that of `ExternalEnv`, with dicts keyed by agent id. Only the agents
in an observation dict act next; an agent's reward travels with its next
observation; `multiagent_done_dict` marks agents done with their next observation.
The BaseEnv view is the same `_ExternalEnvToBaseEnv` (env ids = episode ids).

Example:
    >>> import gymnasium as gym
    >>> class Pair(ExternalMultiAgentEnv):
    ...     def run(self):
    ...         eid = self.start_episode("ep")
    ...         actions = self.get_action(eid, {"a": 0, "b": 1})
    ...         self.log_returns(eid, {"a": 1.0, "b": 2.0})
    ...         self.end_episode(eid, {"a": 1, "b": 2})
    >>> env = Pair(gym.spaces.Discrete(2), gym.spaces.Discrete(3))
    >>> base = env.to_base_env()
    >>> obs, rewards, *_ = base.poll()
    >>> obs["ep"], rewards["ep"]
    ({'a': 0, 'b': 1}, {'a': None, 'b': None})
    >>> base.send_actions({"ep": {"a": 1, "b": 0}})
    >>> obs, rewards, terminateds, *_ = base.poll()
    >>> rewards["ep"], terminateds["ep"]
    ({'a': 1.0, 'b': 2.0}, {'a': True, 'b': True, '__all__': True})
"""

from typing import Any, Dict, Optional

import gymnasium as gym

from tfrl.env.external_env import NONFINITE_FIX, ExternalEnv
from tfrl.env.external_env_base import _id_list
from tfrl.env.space_checks import action_error, nonfinite_error, observation_error
from tfrl.utils.typing import MultiAgentDict


class ExternalMultiAgentEnv(ExternalEnv):
    """An ExternalEnv for several agents per episode (subclasses implement `run()`).

    Args:
        action_space: Action space of one agent, or a `gymnasium.spaces.Dict` keyed by
            agent id (per-agent spaces); None skips action checks.
        observation_space: Observation space of one agent, or a Dict keyed by agent
            id; None skips observation checks.
        max_concurrent: Max number of episodes started but not yet ended.
    """

    _is_multi_agent = True

    def __init__(self, action_space: Optional[gym.Space], observation_space: Optional[gym.Space],
                 max_concurrent: int = 100):
        super().__init__(action_space, observation_space, max_concurrent)

    def get_action(self, episode_id: str, observation_dict: MultiAgentDict) -> MultiAgentDict:
        """Records the agents' observations and blocks until their actions are computed.

        Returns:
            Agent id -> action, for the agents in `observation_dict` that are not done.
        """
        return self.get_actions([episode_id], {episode_id: observation_dict})[episode_id]

    def log_action(self, episode_id: str, observation_dict: MultiAgentDict,
                   action_dict: MultiAgentDict) -> None:
        """Records the agents' observations and the actions they took off-policy.

        Raises:
            ValueError: For actions of agents that have no observation in
                `observation_dict`, bad observations/actions, or unknown episodes.
        """
        obs = self._to_agent_dict(observation_dict, "observation")
        actions = self._to_agent_dict(action_dict, "action")
        extra = set(actions) - set(obs)
        if extra:
            raise ValueError(
                f"log_action() for episode {episode_id} received actions of agents "
                f"{_id_list(extra)} that have no observation in observation_dict "
                f"(agents: {_id_list(obs)}). Log each action with its observation."
            )
        super().log_action(episode_id, obs, actions)

    def log_returns(self, episode_id: str, reward_dict: MultiAgentDict,
                    info_dict: Optional[MultiAgentDict] = None,
                    multiagent_done_dict: Optional[Dict[Any, bool]] = None) -> None:
        """Records rewards (agent id -> float) for the agents' previous actions.

        Args:
            episode_id: Episode id returned from `start_episode()`.
            reward_dict: Agent id -> reward; accumulates until the agent's next action.
            info_dict: Agent id -> info dict for the agents' next observations.
            multiagent_done_dict: Agent id -> bool: agents that are done with their
                next observation. An `"__all__"` key is ignored: end the episode
                with `end_episode()`.

        Raises:
            TypeError: If `reward_dict` (or the other dicts) are not dicts.
            ValueError: For unknown or completed episodes, or rewards that are not
                finite numbers within the float32 range.
        """
        for name, value in (("reward_dict", reward_dict), ("info_dict", info_dict),
                            ("multiagent_done_dict", multiagent_done_dict)):
            if value is not None and not isinstance(value, dict):
                raise TypeError(
                    f"ExternalMultiAgentEnv.log_returns() takes {name} as a dict agent id -> "
                    f"value. Received: {name}={value!r}."
                )
        self._log_returns(episode_id, reward_dict, info_dict, multiagent_done_dict)

    def end_episode(self, episode_id: str, observation_dict: MultiAgentDict, *,
                    truncated: bool = False) -> None:
        """Records the end of the episode and the agents' final observations.

        Agents must appear in `observation_dict` to receive their last rewards.
        """
        super().end_episode(episode_id, observation_dict, truncated=truncated)

    # ---- Hooks of ExternalEnv -------------------------------------------------------

    def _to_agent_dict(self, value: Any, what: str) -> MultiAgentDict:
        if not isinstance(value, dict):
            raise TypeError(
                f"ExternalMultiAgentEnv takes the {what} as a dict agent id -> {what}. "
                f"Received: {type(value).__name__} {value!r:.80}."
            )
        return dict(value)

    def _from_agent_dict(self, actions: MultiAgentDict) -> MultiAgentDict:
        return actions

    def _reward_name(self, agent: Any) -> str:
        return f"reward_dict[{agent!r}]"

    def _check_observations(self, episode_id: str, obs: MultiAgentDict) -> None:
        for agent, value in obs.items():
            problem = nonfinite_error(value, "observation")
            if problem:
                raise ValueError(f"Bad observation of agent {agent!r} in episode {episode_id}: "
                                 f"{problem}. {NONFINITE_FIX}")
            problem = observation_error(_agent_space(self.observation_space, agent), value)
            if problem:
                raise ValueError(
                    f"Bad observation of agent {agent!r} in episode {episode_id}: {problem}.")

    def _check_actions(self, actions: MultiAgentDict) -> None:
        for agent, value in actions.items():
            problem = action_error(_agent_space(self.action_space, agent), value)
            if problem:
                raise ValueError(f"Bad off-policy action of agent {agent!r}: {problem}.")


def _agent_space(space: Optional[gym.Space], agent: Any) -> Optional[gym.Space]:
    """The space of `agent`: its entry of a per-agent Dict space, else the shared space."""
    if isinstance(space, gym.spaces.Dict):
        return space.spaces[agent] if agent in space.spaces else space
    return space
