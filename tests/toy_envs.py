"""Small deterministic envs for the env-layer tests."""

import gymnasium as gym
import numpy as np


class CounterEnv(gym.Env):
    """obs = [sub-env index, episode, t]; reward = 10 * action + t; `length` steps long."""

    def __init__(self, index=0, length=3, truncate=False, dict_obs=False):
        self.index, self.length, self.truncate, self.dict_obs = index, length, truncate, dict_obs
        box = gym.spaces.Box(0.0, 1000.0, (3,), np.float32)
        self.observation_space = gym.spaces.Dict({"x": box}) if dict_obs else box
        self.action_space = gym.spaces.Discrete(3)
        self.episode, self.t, self.closed = -1, 0, False

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.episode, self.t = self.episode + 1, 0
        return self._obs(), {"t": 0}

    def step(self, action):
        self.t += 1
        done = self.t >= self.length
        terminated, truncated = done and not self.truncate, done and self.truncate
        return self._obs(), float(10 * action + self.t), terminated, truncated, {"t": self.t}

    def render(self):
        return np.full((2, 2, 3), self.index, np.uint8)

    def close(self):
        self.closed = True

    def _obs(self):
        obs = np.array([self.index, self.episode, self.t], np.float32)
        return {"x": obs} if self.dict_obs else obs
