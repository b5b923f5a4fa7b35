"""TFMountainCar: gymnasium's MountainCar-v0 as a TF vector env.

The dynamics, constants, spaces and termination rule are those of
`gymnasium.envs.classic_control.mountain_car.MountainCarEnv` (goal_velocity 0): actions
push left, not at all, right; reward -1 per step; the episode terminates at position
>= 0.5 with velocity >= 0; time limit 200. Like gymnasium, the state is float64.

Example:
    >>> import tensorflow as tf
    >>> env = TFMountainCar(num_envs=2)
    >>> state = env.make_state([[-1.2, -0.01], [0.49, 0.02]])
    >>> step = env.step(state, tf.constant([0, 2]))
    >>> step.final_obs.numpy()[0], step.terminated.numpy()
    (array([-1.2,  0. ], dtype=float32), array([False,  True]))
"""

import math

import gymnasium as gym
import numpy as np
import tensorflow as tf

from tfrl.env.tf_envs.tf_vector_env import RNG_ALG, TFVectorEnv

MIN_POSITION = -1.2
MAX_POSITION = 0.6
MAX_SPEED = 0.07
GOAL_POSITION = 0.5
GOAL_VELOCITY = 0.0
FORCE = 0.001
GRAVITY = 0.0025


def initial_mountain_car_physics(key, num_envs, dtype):
    """[num_envs, 2] start states: position uniform in [-0.6, -0.4), velocity 0."""
    position = tf.random.stateless_uniform([num_envs], seed=key, minval=-0.6, maxval=-0.4,
                                           dtype=dtype, alg=RNG_ALG)
    return tf.stack([position, tf.zeros_like(position)], axis=1)


class TFMountainCar(TFVectorEnv):
    """MountainCar-v0; physics rows are `[position, velocity]` (gymnasium's state).

    Args: see `TFVectorEnv`.
    """

    env_id = "MountainCar-v0"
    physics_size = 2
    default_max_episode_steps = 200
    gymnasium_dtype = tf.float64
    observation_space = gym.spaces.Box(np.array([MIN_POSITION, -MAX_SPEED], np.float32),
                                       np.array([MAX_POSITION, MAX_SPEED], np.float32),
                                       dtype=np.float32)
    action_space = gym.spaces.Discrete(3)

    def _initial_physics(self, key):
        return initial_mountain_car_physics(key, self.num_envs, self.dtype)

    def _dynamics(self, physics, action):
        position, velocity = tf.unstack(physics, axis=1)  # each [N]
        velocity = velocity + (tf.cast(action - 1, self.dtype) * FORCE
                               + tf.cos(3 * position) * (-GRAVITY))
        velocity = tf.clip_by_value(velocity, -MAX_SPEED, MAX_SPEED)
        position = tf.clip_by_value(position + velocity, MIN_POSITION, MAX_POSITION)
        velocity = tf.where((position == MIN_POSITION) & (velocity < 0),
                            tf.zeros_like(velocity), velocity)
        terminated = (position >= GOAL_POSITION) & (velocity >= GOAL_VELOCITY)
        reward = -tf.ones([self.num_envs], tf.float32)
        return tf.stack([position, velocity], axis=1), reward, terminated

    def _observe(self, physics):
        return tf.cast(physics, tf.float32)
