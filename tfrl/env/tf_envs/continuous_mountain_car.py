"""TFMountainCarContinuous: gymnasium's MountainCarContinuous-v0 as a TF vector env.

The dynamics, constants, spaces and reward are those of
`gymnasium.envs.classic_control.continuous_mountain_car.Continuous_MountainCarEnv`: the
force is the action clipped to [-1, 1]; the episode terminates at position >= 0.45 with
velocity >= 0, with reward 100; every step costs `0.1 * action**2` of the action as given
(not clipped, as in gymnasium); time limit 999. Like gymnasium (which stores its state
as float32 after every step), the state is float32; the cosine is taken in float64 as
gymnasium's `math.cos` does. Gymnasium's first step after a reset runs on its float64
reset state, so that step may differ from ours in the last float32 bit.

Example:
    >>> import tensorflow as tf
    >>> env = TFMountainCarContinuous(num_envs=2)
    >>> state = env.make_state([[-0.5, 0.0], [0.44, 0.02]])
    >>> step = env.step(state, tf.constant([[2.0], [-0.5]]))
    >>> step.reward.numpy(), step.terminated.numpy()
    (array([-0.4  , 99.975], dtype=float32), array([False,  True]))
"""

import gymnasium as gym
import numpy as np
import tensorflow as tf

from tfrl.env.tf_envs.mountain_car import initial_mountain_car_physics
from tfrl.env.tf_envs.tf_vector_env import TFVectorEnv

MIN_ACTION = -1.0
MAX_ACTION = 1.0
MIN_POSITION = -1.2
MAX_POSITION = 0.6
MAX_SPEED = 0.07
GOAL_POSITION = 0.45
GOAL_VELOCITY = 0.0
POWER = 0.0015


class TFMountainCarContinuous(TFVectorEnv):
    """MountainCarContinuous-v0; physics rows are `[position, velocity]` (gymnasium's).

    Args: see `TFVectorEnv`.
    """

    env_id = "MountainCarContinuous-v0"
    physics_size = 2
    default_max_episode_steps = 999
    gymnasium_dtype = tf.float32
    observation_space = gym.spaces.Box(np.array([MIN_POSITION, -MAX_SPEED], np.float32),
                                       np.array([MAX_POSITION, MAX_SPEED], np.float32),
                                       dtype=np.float32)
    action_space = gym.spaces.Box(low=MIN_ACTION, high=MAX_ACTION, shape=(1,),
                                  dtype=np.float32)

    def _initial_physics(self, key):
        return initial_mountain_car_physics(key, self.num_envs, self.dtype)

    def _dynamics(self, physics, action):
        position, velocity = tf.unstack(physics, axis=1)  # each [N]
        action = tf.cast(action[:, 0], self.dtype)
        force = tf.clip_by_value(action, MIN_ACTION, MAX_ACTION)
        slope = tf.cast(0.0025 * tf.cos(tf.cast(3 * position, tf.float64)), self.dtype)
        velocity = velocity + (force * POWER - slope)
        velocity = tf.clip_by_value(velocity, -MAX_SPEED, MAX_SPEED)
        position = tf.clip_by_value(position + velocity, MIN_POSITION, MAX_POSITION)
        velocity = tf.where((position == MIN_POSITION) & (velocity < 0),
                            tf.zeros_like(velocity), velocity)
        terminated = (position >= GOAL_POSITION) & (velocity >= GOAL_VELOCITY)
        reward = tf.where(terminated, tf.constant(100.0, self.dtype), 0.0) - tf.square(action) * 0.1
        return tf.stack([position, velocity], axis=1), reward, terminated

    def _observe(self, physics):
        return tf.cast(physics, tf.float32)
