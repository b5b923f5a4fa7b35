"""TFCartPole: gymnasium's CartPole-v1 as a TF vector env.

The dynamics, constants, spaces and termination rule are those of
`gymnasium.envs.classic_control.cartpole.CartPoleEnv` (Euler integration, reward 1.0 on
every step including the terminating one, time limit 500). Like gymnasium, the state is
kept in float64 and observed as float32.

Example:
    >>> import tensorflow as tf
    >>> env = TFCartPole(num_envs=2)
    >>> state = env.make_state([[0.0, 0.0, 0.21, 0.0], [0.0, 0.0, 0.0, 0.0]])
    >>> step = env.step(state, tf.constant([0, 1]))
    >>> step.terminated.numpy(), step.final_obs.numpy()[1]
    (array([ True, False]),
     array([ 0.        ,  0.19512194,  0.        , -0.29268292], dtype=float32))
"""

import math

import gymnasium as gym
import numpy as np
import tensorflow as tf

from tfrl.env.tf_envs.tf_vector_env import RNG_ALG, TFVectorEnv

GRAVITY = 9.8
MASS_CART = 1.0
MASS_POLE = 0.1
TOTAL_MASS = MASS_POLE + MASS_CART
LENGTH = 0.5  # half the pole's length
POLE_MASS_LENGTH = MASS_POLE * LENGTH
FORCE_MAG = 10.0
TAU = 0.02  # seconds between state updates
THETA_THRESHOLD_RADIANS = 12 * 2 * math.pi / 360
X_THRESHOLD = 2.4


class TFCartPole(TFVectorEnv):
    """CartPole-v1; physics rows are `[x, x_dot, theta, theta_dot]` (gymnasium's state).

    Args: see `TFVectorEnv`.
    """

    env_id = "CartPole-v1"
    physics_size = 4
    default_max_episode_steps = 500
    gymnasium_dtype = tf.float64
    _high = np.array([X_THRESHOLD * 2, np.inf, THETA_THRESHOLD_RADIANS * 2, np.inf],
                     dtype=np.float32)
    observation_space = gym.spaces.Box(-_high, _high, dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def _initial_physics(self, key):
        return tf.random.stateless_uniform([self.num_envs, 4], seed=key, minval=-0.05,
                                           maxval=0.05, dtype=self.dtype, alg=RNG_ALG)

    def _dynamics(self, physics, action):
        x, x_dot, theta, theta_dot = tf.unstack(physics, axis=1)  # each [N]
        force = tf.where(action == 1, tf.constant(FORCE_MAG, self.dtype),
                         tf.constant(-FORCE_MAG, self.dtype))
        costheta = tf.cos(theta)
        sintheta = tf.sin(theta)
        temp = (force + POLE_MASS_LENGTH * tf.square(theta_dot) * sintheta) / TOTAL_MASS
        thetaacc = (GRAVITY * sintheta - costheta * temp) / (
            LENGTH * (4.0 / 3.0 - MASS_POLE * tf.square(costheta) / TOTAL_MASS))
        xacc = temp - POLE_MASS_LENGTH * thetaacc * costheta / TOTAL_MASS
        x = x + TAU * x_dot
        x_dot = x_dot + TAU * xacc
        theta = theta + TAU * theta_dot
        theta_dot = theta_dot + TAU * thetaacc
        terminated = ((x < -X_THRESHOLD) | (x > X_THRESHOLD)
                      | (theta < -THETA_THRESHOLD_RADIANS) | (theta > THETA_THRESHOLD_RADIANS))
        reward = tf.ones([self.num_envs], tf.float32)
        return tf.stack([x, x_dot, theta, theta_dot], axis=1), reward, terminated

    def _observe(self, physics):
        return tf.cast(physics, tf.float32)
