"""Stateless CartPole: CartPole-v1 without the velocities, a task that needs memory.

The observation keeps the cart position and the pole angle (CartPole's indices 0 and
2) and drops the cart velocity and the pole's angular velocity, so a policy that sees
one observation cannot tell which way the pole is moving; a recurrent policy (e.g.
PPO with `model={"use_lstm": True}`) can infer the velocities from the last steps.
Dynamics, rewards (1 per step), termination and the 500-step time limit are
CartPole-v1's.

Importing this module registers the gymnasium id `StatelessCartPole-v1`; the command
line and configs reach it as `tfrl.examples.envs:StatelessCartPole-v1` (gymnasium
imports the module named before the colon):

    tfrl train --algo=PPO --env=tfrl.examples.envs:StatelessCartPole-v1

Example:
    >>> env = StatelessCartPole()
    >>> obs, _ = env.reset(seed=0)
    >>> obs.shape, env.observation_space.shape
    ((2,), (2,))
"""

from typing import Any, Optional

import gymnasium as gym
import numpy as np
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

ENV_ID = "StatelessCartPole-v1"
# The observation entries kept: cart position and pole angle.
KEPT_INDICES = (0, 2)


class StatelessCartPole(gym.ObservationWrapper):
    """CartPole with only the cart position and the pole angle observed.

    Args:
        env: The CartPole env to wrap; None: a new `CartPoleEnv` (without a time
            limit: `gym.make(ENV_ID)` adds CartPole-v1's 500 steps).
        render_mode: Passed to the new `CartPoleEnv` when `env` is None.
    """

    def __init__(self, env: Optional[gym.Env] = None, render_mode: Optional[str] = None):
        super().__init__(CartPoleEnv(render_mode=render_mode) if env is None else env)
        box = self.env.observation_space
        index = list(KEPT_INDICES)
        self.observation_space = gym.spaces.Box(box.low[index], box.high[index],
                                                dtype=box.dtype)

    def observation(self, observation: Any) -> np.ndarray:
        """CartPole's observation without the velocities: `[x, theta]`."""
        return np.asarray(observation, self.observation_space.dtype)[list(KEPT_INDICES)]


if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=StatelessCartPole, max_episode_steps=500,
                 reward_threshold=475.0)
