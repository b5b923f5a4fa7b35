"""Masked actions: most actions are invalid at each step, and the observation says which.

Each step, `num_valid` of `num_actions` actions are allowed (drawn anew every step), and
each action has a value in [0, 1] (drawn anew too). The observation is PettingZoo's and
RLlib's masking convention, a Dict `{"action_mask": MultiBinary-like Box(0, 1, (n,),
int8), "observation": Box(0, 1, (n,), float32)}` (the values). An allowed action pays
its value; an invalid action pays -1 and ends the episode (terminated), and is counted in
`info["invalid_actions"]`. Episodes otherwise last `episode_len` steps (truncated).

- **Optimum**: each step the largest value among the allowed actions (about
  `episode_len * num_valid / (num_valid + 1)`).
- **Chance among allowed actions**: `episode_len / 2`.

Registered with gymnasium as `MaskedActions-v0` when `tfrl.examples.envs` is imported.

Example:
    >>> env = MaskedActions(num_actions=5, num_valid=2, episode_len=3)
    >>> obs, _ = env.reset(seed=0)
    >>> sorted(obs), int(obs["action_mask"].sum())
    (['action_mask', 'observation'], 2)
    >>> bad = int(np.argmin(obs["action_mask"]))
    >>> _, reward, terminated, _, info = env.step(bad)
    >>> reward, terminated, info["invalid_actions"]
    (-1.0, True, 1)
"""

from typing import Any, Dict, Optional, Tuple

import gymnasium as gym
import numpy as np


class MaskedActions(gym.Env):
    """See the module docstring.

    Args:
        num_actions: The number of actions (`Discrete(num_actions)`).
        num_valid: How many of them are allowed at each step (1 to `num_actions`).
        episode_len: Steps per episode.
    """

    metadata: Dict[str, Any] = {"render_modes": []}

    def __init__(self, num_actions: int = 100, num_valid: int = 20, episode_len: int = 20):
        if not 1 <= num_valid <= num_actions:
            raise ValueError(
                f"num_valid must be between 1 and num_actions ({num_actions}). Received: "
                f"num_valid={num_valid}.")
        self.num_actions, self.num_valid, self.episode_len = num_actions, num_valid, episode_len
        self.action_space = gym.spaces.Discrete(num_actions)
        self.observation_space = gym.spaces.Dict({
            "action_mask": gym.spaces.Box(0, 1, (num_actions,), np.int8),
            "observation": gym.spaces.Box(0.0, 1.0, (num_actions,), np.float32),
        })
        self._t = 0
        self._invalid = 0
        self._obs: Dict[str, np.ndarray] = {}

    def _draw(self) -> Dict[str, np.ndarray]:
        mask = np.zeros(self.num_actions, np.int8)
        mask[self.np_random.choice(self.num_actions, self.num_valid, replace=False)] = 1
        values = self.np_random.random(self.num_actions, dtype=np.float32)
        self._obs = {"action_mask": mask, "observation": values}
        return {k: v.copy() for k, v in self._obs.items()}

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None
              ) -> Tuple[Dict[str, np.ndarray], Dict[str, Any]]:
        super().reset(seed=seed)
        self._t, self._invalid = 0, 0
        return self._draw(), {"invalid_actions": 0}

    def step(self, action: Any):
        action = int(action)
        self._t += 1
        if not self._obs["action_mask"][action]:
            self._invalid += 1
            return self._draw(), -1.0, True, False, {"invalid_actions": self._invalid}
        reward = float(self._obs["observation"][action])
        truncated = self._t >= self.episode_len
        return self._draw(), reward, False, truncated, {"invalid_actions": self._invalid}
