"""Small deterministic PettingZoo envs for the adapter tests (import after importorskip)."""

import functools

import gymnasium as gym
import numpy as np
from pettingzoo import ParallelEnv

OBS = gym.spaces.Box(0.0, 100.0, (2,), np.float32)
ACT = gym.spaces.Discrete(3)


class Relay(ParallelEnv):
    """Agents join and leave: "scout_0" and "scout_1" start; "runner_0" joins after step
    `join_at`; "scout_1" terminates at step `leave_at`; the rest truncate at `max_cycles`.

    Observation of an agent: [t, its index in possible_agents]; reward = its action.
    """

    metadata = {"name": "relay_v0", "render_modes": []}

    def __init__(self, join_at=2, leave_at=3, max_cycles=6):
        self.possible_agents = ["scout_0", "scout_1", "runner_0"]
        self.join_at, self.leave_at, self.max_cycles = join_at, leave_at, max_cycles
        self.agents = []

    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent):
        return OBS

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent):
        return ACT

    def _obs(self, agent):
        return np.array([self.t, self.possible_agents.index(agent)], np.float32)

    def reset(self, seed=None, options=None):
        self.t = 0
        self.agents = ["scout_0", "scout_1"]
        return {a: self._obs(a) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions):
        self.t += 1
        live = list(self.agents)
        if self.t == self.join_at:
            self.agents.append("runner_0")
        terms = {a: a == "scout_1" and self.t == self.leave_at for a in self.agents}
        truncs = {a: self.t >= self.max_cycles and not terms[a] for a in self.agents}
        rewards = {a: float(actions[a]) if a in live else 0.0 for a in self.agents}
        obs = {a: self._obs(a) for a in self.agents}
        infos = {a: {"t": self.t} for a in self.agents}
        self.agents = [a for a in self.agents if not (terms[a] or truncs[a])]
        return obs, rewards, terms, truncs, infos
