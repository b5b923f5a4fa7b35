"""The two-step cooperative matrix game of the QMIX paper (Rashid et al., "QMIX: Monotonic
Value Function Factorisation for Deep Multi-Agent Reinforcement Learning", ICML 2018,
section 6.1), as RLlib's example env `TwoStepGame`.

Two agents (ids 0 and 1). In the first step agent 0's action picks the second state
(agent 1's action does not matter): action 0 leads to state 2A, action 1 to state 2B.
In state 2A every joint action pays 7; in 2B the joint actions pay

    agent 1:    0   1
    agent 0: 0  0   1
             1  1   8

and the episode ends. Each agent receives half of the team's reward. The optimum is 8
(2B, both play 1); independent learners and VDN tend to settle for the safe 7.

Observations (`env_config`): by default `Discrete(6)`, the state index (0: first state,
1: 2A, 2: 2B) plus 3 for agent 1. With `one_hot_state_encoding`, `MultiDiscrete([2, 2, 2,
3])`: the state one-hot and the agent's number (1 or 2); with `separate_state_space` as
well, a Dict `{"obs": that, "state": the state one-hot}` (QMIX's mixer reads `"state"`).
`actions_are_logits` takes action probabilities (MADDPG's) and samples from them.

`TwoStepGameWithGroupedAgents` is the game with both agents grouped as `"agents"`
(`with_agent_groups`), QMIX's form: one agent with Tuple observations and actions and
the team's reward.

Example:
    >>> env = TwoStepGame({})
    >>> env.reset(seed=0)
    ({0: 0, 1: 3}, {})
    >>> obs, rewards, terminateds, _, _ = env.step({0: 1, 1: 0})
    >>> obs, rewards, terminateds["__all__"]
    ({0: 2, 1: 5}, {0: 0.0, 1: 0.0}, False)
    >>> env.step({0: 1, 1: 1})[1]
    {0: 4.0, 1: 4.0}
"""

from typing import Any, Dict, Optional

import gymnasium as gym
import numpy as np

from tfrl.env.multi_agent_env import ENV_STATE, GroupAgentsWrapper, MultiAgentEnv

__all__ = ["TwoStepGame", "TwoStepGameWithGroupedAgents"]


class TwoStepGame(MultiAgentEnv):
    """See the module docstring.

    Args:
        env_config: `one_hot_state_encoding`, `separate_state_space`,
            `actions_are_logits` (all False by default).
    """

    action_space = gym.spaces.Discrete(2)

    def __init__(self, env_config: Optional[Dict[str, Any]] = None):
        super().__init__()
        env_config = env_config or {}
        self.agent_1, self.agent_2 = 0, 1
        self._agent_ids = {0, 1}
        self.action_space = gym.spaces.Discrete(2)
        self.actions_are_logits = bool(env_config.get("actions_are_logits", False))
        self.one_hot_state_encoding = bool(env_config.get("one_hot_state_encoding", False))
        self.with_state = (self.one_hot_state_encoding
                           and bool(env_config.get("separate_state_space", False)))
        if not self.one_hot_state_encoding:
            self.observation_space = gym.spaces.Discrete(6)
        elif self.with_state:
            self.observation_space = gym.spaces.Dict({
                "obs": gym.spaces.MultiDiscrete([2, 2, 2, 3]),
                ENV_STATE: gym.spaces.MultiDiscrete([2, 2, 2])})
        else:
            self.observation_space = gym.spaces.MultiDiscrete([2, 2, 2, 3])
        self.state = np.array([1, 0, 0])
        self._rng = np.random.default_rng()

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.state = np.array([1, 0, 0])
        return self._obs(), {}

    def step(self, action_dict: Dict[Any, Any]):
        if self.actions_are_logits:
            action_dict = {k: int(self._rng.choice(2, p=np.asarray(v, np.float64)))
                           for k, v in action_dict.items()}
        state_index = int(np.flatnonzero(self.state)[0])
        if state_index == 0:
            action = action_dict[self.agent_1]
            if action not in (0, 1):
                raise ValueError(f"TwoStepGame: actions are 0 or 1; received {action!r} "
                                 f"for agent {self.agent_1}.")
            self.state = np.array([0, 1, 0]) if action == 0 else np.array([0, 0, 1])
            team_reward, terminated = 0.0, False
        elif state_index == 1:
            team_reward, terminated = 7.0, True
        else:
            a1, a2 = action_dict[self.agent_1], action_dict[self.agent_2]
            team_reward = 0.0 if a1 == a2 == 0 else 8.0 if a1 == a2 == 1 else 1.0
            terminated = True
        rewards = {self.agent_1: team_reward / 2.0, self.agent_2: team_reward / 2.0}
        infos = {self.agent_1: {"done": terminated}, self.agent_2: {"done": terminated}}
        return (self._obs(), rewards, {"__all__": terminated}, {"__all__": False}, infos)

    def _obs(self) -> Dict[Any, Any]:
        if self.with_state:
            return {self.agent_1: {"obs": self.agent_1_obs(), ENV_STATE: self.state.copy()},
                    self.agent_2: {"obs": self.agent_2_obs(), ENV_STATE: self.state.copy()}}
        return {self.agent_1: self.agent_1_obs(), self.agent_2: self.agent_2_obs()}

    def agent_1_obs(self) -> Any:
        if self.one_hot_state_encoding:
            return np.concatenate([self.state, [1]])
        return int(np.flatnonzero(self.state)[0])

    def agent_2_obs(self) -> Any:
        if self.one_hot_state_encoding:
            return np.concatenate([self.state, [2]])
        return int(np.flatnonzero(self.state)[0]) + 3


class TwoStepGameWithGroupedAgents(GroupAgentsWrapper):
    """`TwoStepGame` with its two agents grouped as `"agents"`: observations and actions
    are pairs (agent 0's first), the reward the team's (the sum of the agents' halves,
    each in the info under `"_group_rewards"`). Its spaces are Dicts keyed by the
    group's id (RLlib 2.x's form): `observation_space["agents"]` is the Tuple of both
    agents' spaces.

    Args:
        env_config: `TwoStepGame`'s.

    Example:
        >>> env = TwoStepGameWithGroupedAgents({})
        >>> env.reset(seed=0)
        ({'agents': (0, 3)}, {})
        >>> obs, rewards, terminateds, _, infos = env.step({"agents": (1, 0)})
        >>> obs = env.step({"agents": (1, 1)})
        >>> obs[1], obs[2], obs[4]["agents"]["_group_rewards"]
        ({'agents': 8.0}, {'__all__': True}, [4.0, 4.0])
    """

    def __init__(self, env_config: Optional[Dict[str, Any]] = None):
        super().__init__(TwoStepGame(env_config), {"agents": [0, 1]})
