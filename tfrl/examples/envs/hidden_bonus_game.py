"""A cooperative game where a centralized critic helps: each agent's reward carries a large
term that only the *other* agents can see.

Two agents (ids "agent_0", "agent_1") play `episode_len` independent rounds. In each
round agent `i` observes `[target_i, bonus_i]`: a random bit `target_i` in {0, 1} and a
number `bonus_i` uniform in [-1, 1]; it picks an action in {0, 1}. Both agents receive
the team's reward

    r = sum_i 1[a_i == target_i] + bonus_scale * sum_i bonus_i

so the best policy plays its own bit (an expected team return of `2 * episode_len` per
agent). The bonus term does not depend on the actions, but it is most of each reward's
variance: a value function that sees one agent's observation can explain that agent's
bonus and not the other's, so independent PPO's advantages carry the other agent's bonus
as noise (variance `bonus_scale**2 / 3` per step); a centralized critic that sees both
observations removes it (Lowe et al. 2017, Foerster et al. 2018 make this argument for
centralized critics). The episode return that tfrl reports sums both agents' rewards.

Example:
    >>> env = HiddenBonusGame({"episode_len": 2})
    >>> obs, _ = env.reset(seed=0)
    >>> sorted(obs), obs["agent_0"].shape
    (['agent_0', 'agent_1'], (2,))
    >>> _, rewards, terminateds, _, _ = env.step({"agent_0": 0, "agent_1": 1})
    >>> rewards["agent_0"] == rewards["agent_1"], terminateds["__all__"]
    (True, False)
"""

from typing import Any, Dict, Optional

import gymnasium as gym
import numpy as np

from tfrl.env.multi_agent_env import MultiAgentEnv

AGENTS = ("agent_0", "agent_1")


class HiddenBonusGame(MultiAgentEnv):
    """See the module docstring.

    Args:
        config: `episode_len` (rounds per episode, default 8) and `bonus_scale` (the
            weight of the hidden bonus term, default 10.0).
    """

    def __init__(self, config: Optional[Dict[str, Any]] = None):
        super().__init__()
        config = dict(config or {})
        self.episode_len = int(config.get("episode_len", 8))
        self.bonus_scale = float(config.get("bonus_scale", 10.0))
        self.possible_agents = list(AGENTS)
        self._agent_ids = set(AGENTS)
        self.agents = list(AGENTS)
        self.observation_space = gym.spaces.Box(
            np.array([0.0, -1.0], np.float32), np.array([1.0, 1.0], np.float32))
        self.action_space = gym.spaces.Discrete(2)
        self._rng = np.random.default_rng()
        self._t = 0
        self._obs: Dict[str, np.ndarray] = {}

    def _new_round(self) -> Dict[str, np.ndarray]:
        self._obs = {a: np.array([self._rng.integers(2), self._rng.uniform(-1.0, 1.0)],
                                 np.float32) for a in AGENTS}
        return {a: o.copy() for a, o in self._obs.items()}

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._t = 0
        return self._new_round(), {}

    def step(self, action_dict: Dict[str, Any]):
        hits = sum(float(int(action_dict[a]) == int(self._obs[a][0])) for a in AGENTS)
        bonus = self.bonus_scale * sum(float(self._obs[a][1]) for a in AGENTS)
        reward = hits + bonus
        self._t += 1
        done = self._t >= self.episode_len
        obs = self._new_round()
        rewards = {a: reward for a in AGENTS}
        return (obs, rewards, {"__all__": done}, {"__all__": False}, {})
