"""Repeat-after-me: a memory task where the agent must emit the symbol it saw k steps ago.

Each step the env shows a symbol drawn uniformly at random from `num_symbols` symbols
(independently of everything before) and the agent answers with a symbol (a `Discrete`
action). From step `delay` on, the answer is scored against the symbol shown `delay`
steps earlier: +1 if equal, -1 if not; the first `delay` answers score 0 (nothing to
repeat yet). Episodes last exactly `episode_len` steps (they end truncated: the task
itself does not change with time).

- **Optimum**: `episode_len - delay` (every scored answer right), e.g. 19 for the
  defaults (`episode_len=20`, `delay=1`).
- **Chance**: `(episode_len - delay) * (2 / num_symbols - 1)` in expectation, i.e. 0 for
  the default two symbols. This is the best any *memoryless* policy can do, not only a
  random one: the symbol to repeat is independent of the current observation, so a
  policy that sees only the current observation (an MLP) answers it right with
  probability `1 / num_symbols` whatever it does. Beating chance measures memory.

The observation is the symbol as a `Discrete(num_symbols)` index, or with
`one_hot=True` a one-hot `Box(0, 1, (num_symbols,), float32)`.

Registered with gymnasium as `RepeatAfterMe-v0` when `tfrl.examples.envs` is imported;
gymnasium's `"module:id"` form imports it on demand, so the CLI (and every worker
process) can make it by name, with the env's arguments as `env_config`:

    tfrl train --algo=PPO --env=tfrl.examples.envs:RepeatAfterMe-v0 \\
        --config_override='env_config={"delay": 2}' --config_override=model.use_lstm=true

Example:
    >>> env = RepeatAfterMe(delay=1, episode_len=3)
    >>> obs, _ = env.reset(seed=0)
    >>> _, r0, _, _, _ = env.step(0)          # nothing to repeat yet
    >>> _, r1, _, truncated, _ = env.step(obs)  # repeats the first symbol
    >>> (r0, r1, truncated)
    (0.0, 1.0, False)
"""

from typing import Any, Dict, Optional, Tuple

import gymnasium as gym
import numpy as np


class RepeatAfterMe(gym.Env):
    """Rewards emitting the symbol observed `delay` steps ago (see the module docstring).

    Args:
        delay: How many steps back the symbol to repeat was shown (k >= 1).
        num_symbols: How many symbols there are (>= 2).
        episode_len: Steps per episode (> delay).
        one_hot: Observe a one-hot float vector instead of a `Discrete` index.
        render_mode: Unused; accepted because gymnasium passes it.

    Raises:
        ValueError: If an argument is out of range.
    """

    metadata: Dict[str, Any] = {"render_modes": []}

    def __init__(self, delay: int = 1, num_symbols: int = 2, episode_len: int = 20,
                 one_hot: bool = False, render_mode: Optional[str] = None) -> None:
        if not (isinstance(delay, (int, np.integer)) and delay >= 1):
            raise ValueError(f"RepeatAfterMe needs delay >= 1 (an int); received {delay!r}.")
        if not (isinstance(num_symbols, (int, np.integer)) and num_symbols >= 2):
            raise ValueError(
                f"RepeatAfterMe needs num_symbols >= 2 (an int); received {num_symbols!r}.")
        if not (isinstance(episode_len, (int, np.integer)) and episode_len > delay):
            raise ValueError(f"RepeatAfterMe needs episode_len > delay ({delay}) (an int); "
                             f"received {episode_len!r}.")
        self.delay = int(delay)
        self.num_symbols = int(num_symbols)
        self.episode_len = int(episode_len)
        self.one_hot = bool(one_hot)
        self.render_mode = render_mode
        self.action_space = gym.spaces.Discrete(self.num_symbols)
        self.observation_space: gym.Space = (
            gym.spaces.Box(0.0, 1.0, (self.num_symbols,), np.float32) if self.one_hot
            else gym.spaces.Discrete(self.num_symbols))
        self._shown: list = []

    @property
    def optimal_return(self) -> float:
        """The best return of an episode: every scored answer right."""
        return float(self.episode_len - self.delay)

    @property
    def chance_return(self) -> float:
        """The expected return of any policy without memory (module docstring)."""
        return float((self.episode_len - self.delay) * (2.0 / self.num_symbols - 1.0))

    def _observe(self) -> Any:
        symbol = int(self.np_random.integers(self.num_symbols))
        self._shown.append(symbol)
        if self.one_hot:
            return np.eye(self.num_symbols, dtype=np.float32)[symbol]
        return symbol

    def reset(self, *, seed: Optional[int] = None,
              options: Optional[dict] = None) -> Tuple[Any, Dict[str, Any]]:
        super().reset(seed=seed)
        self._shown = []
        return self._observe(), {}

    def step(self, action: Any) -> Tuple[Any, float, bool, bool, Dict[str, Any]]:
        t = len(self._shown) - 1  # the step being answered
        reward = 0.0
        if t >= self.delay:
            reward = 1.0 if int(action) == self._shown[t - self.delay] else -1.0
        truncated = t + 1 >= self.episode_len
        return self._observe(), reward, False, truncated, {}
