"""TFPendulum: gymnasium's Pendulum-v1 as a TF vector env.

The dynamics, constants, spaces and reward are those of
`gymnasium.envs.classic_control.pendulum.PendulumEnv` (g = 10): the torque is clipped to
[-2, 2], the reward is `-(angle_normalize(theta)**2 + 0.1 * theta_dot**2 + 0.001 *
torque**2)` with the angle taken to [-pi, pi), the speed is clipped to [-8, 8], and the
episode never terminates (time limit 200). Like gymnasium, the state is float64 and the
torque terms are computed in float32 (gymnasium's action dtype) before joining it.

Example:
    >>> import tensorflow as tf
    >>> env = TFPendulum(num_envs=1)
    >>> state = env.make_state([[3 * 3.141592653589793 / 2, 0.0]])
    >>> step = env.step(state, tf.constant([[5.0]]))  # clipped to 2.0
    >>> round(float(step.reward[0]), 4), step.terminated.numpy()
    (-2.4714, array([False]))
"""

import math

import gymnasium as gym
import numpy as np
import tensorflow as tf

from tfrl.env.tf_envs.tf_vector_env import RNG_ALG, TFVectorEnv

MAX_SPEED = 8.0
MAX_TORQUE = 2.0
DT = 0.05
G = 10.0
M = 1.0
L = 1.0


def angle_normalize(x):
    """`x` taken to [-pi, pi) as gymnasium's Pendulum does (a floored modulo)."""
    return tf.math.floormod(x + math.pi, 2 * math.pi) - math.pi


class TFPendulum(TFVectorEnv):
    """Pendulum-v1; physics rows are `[theta, theta_dot]` (gymnasium's state).

    Args: see `TFVectorEnv`.
    """

    env_id = "Pendulum-v1"
    physics_size = 2
    default_max_episode_steps = 200
    gymnasium_dtype = tf.float64
    _high = np.array([1.0, 1.0, MAX_SPEED], dtype=np.float32)
    observation_space = gym.spaces.Box(low=-_high, high=_high, dtype=np.float32)
    action_space = gym.spaces.Box(low=-MAX_TORQUE, high=MAX_TORQUE, shape=(1,),
                                  dtype=np.float32)

    def _initial_physics(self, key):
        high = tf.constant([math.pi, 1.0], self.dtype)
        unit = tf.random.stateless_uniform([self.num_envs, 2], seed=key, dtype=self.dtype,
                                           alg=RNG_ALG)
        return -high + unit * (2 * high)

    def _dynamics(self, physics, action):
        th, thdot = tf.unstack(physics, axis=1)  # each [N]
        u = tf.clip_by_value(action[:, 0], -MAX_TORQUE, MAX_TORQUE)  # float32, as gymnasium
        costs = (tf.square(angle_normalize(th)) + 0.1 * tf.square(thdot)
                 + tf.cast(0.001 * tf.square(u), self.dtype))
        newthdot = thdot + (3 * G / (2 * L) * tf.sin(th)
                            + tf.cast(3.0 / (M * L**2) * u, self.dtype)) * DT
        newthdot = tf.clip_by_value(newthdot, -MAX_SPEED, MAX_SPEED)
        newth = th + newthdot * DT
        terminated = tf.zeros([self.num_envs], tf.bool)
        return tf.stack([newth, newthdot], axis=1), -costs, terminated

    def _observe(self, physics):
        th, thdot = tf.unstack(physics, axis=1)
        return tf.cast(tf.stack([tf.cos(th), tf.sin(th), thdot], axis=1), tf.float32)
