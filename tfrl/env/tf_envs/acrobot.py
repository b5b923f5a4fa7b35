"""TFAcrobot: gymnasium's Acrobot-v1 as a TF vector env.

The dynamics ("book" equations, one 4th-order Runge-Kutta step of 0.2 s), constants,
spaces and termination rule are those of
`gymnasium.envs.classic_control.acrobot.AcrobotEnv` (no torque noise): torques -1, 0, +1,
angles wrapped to [-pi, pi], speeds bounded to 4 pi and 9 pi, reward -1 per step and 0 on
the terminating one, time limit 500. Like gymnasium, the state is float64 (the reset
state is drawn in float32, as gymnasium's is).

The system is chaotic: from the same state, TF's and numpy's float64 sin/cos differ in
the last bit, and such differences grow to visible ones over a few hundred steps. One
step matches gymnasium to float32 rounding.

Example:
    >>> import tensorflow as tf
    >>> env = TFAcrobot(num_envs=2)
    >>> state = env.make_state([[0.0, 0.0, 0.0, 0.0], [3.1, 0.0, 0.0, 0.0]])
    >>> step = env.step(state, tf.constant([1, 1]))
    >>> step.reward.numpy(), step.terminated.numpy()
    (array([-1.,  0.], dtype=float32), array([False,  True]))
"""

import math

import gymnasium as gym
import numpy as np
import tensorflow as tf

from tfrl.env.tf_envs.tf_vector_env import RNG_ALG, TFVectorEnv

DT = 0.2
LINK_LENGTH_1 = 1.0
LINK_MASS_1 = 1.0
LINK_MASS_2 = 1.0
LINK_COM_POS_1 = 0.5
LINK_COM_POS_2 = 0.5
LINK_MOI = 1.0
MAX_VEL_1 = 4 * math.pi
MAX_VEL_2 = 9 * math.pi


def wrap(x, m, M):
    """`x` wrapped into [m, M] by whole turns, as gymnasium's `acrobot.wrap` does."""
    diff = M - m
    x = tf.while_loop(lambda x: tf.reduce_any(x > M),
                      lambda x: (tf.where(x > M, x - diff, x),), (x,))[0]
    return tf.while_loop(lambda x: tf.reduce_any(x < m),
                         lambda x: (tf.where(x < m, x + diff, x),), (x,))[0]


def _dsdt(s, a):
    """Time derivative of s = [theta1, theta2, dtheta1, dtheta2] ([N] each) at torque a."""
    m1, m2, l1 = LINK_MASS_1, LINK_MASS_2, LINK_LENGTH_1
    lc1, lc2 = LINK_COM_POS_1, LINK_COM_POS_2
    I1 = I2 = LINK_MOI
    g = 9.8
    theta1, theta2, dtheta1, dtheta2 = s
    # Written in gymnasium's order of operations (the same float64 rounding).
    d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * tf.cos(theta2)) + I1 + I2
    d2 = m2 * (lc2**2 + l1 * lc2 * tf.cos(theta2)) + I2
    phi2 = m2 * lc2 * g * tf.cos(theta1 + theta2 - math.pi / 2.0)
    phi1 = (-m2 * l1 * lc2 * tf.square(dtheta2) * tf.sin(theta2)
            - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * tf.sin(theta2)
            + (m1 * lc1 + m2 * l1) * g * tf.cos(theta1 - math.pi / 2) + phi2)
    ddtheta2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * tf.square(dtheta1) * tf.sin(theta2)
                - phi2) / (m2 * lc2**2 + I2 - tf.square(d2) / d1)
    ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
    return [dtheta1, dtheta2, ddtheta1, ddtheta2]


def _rk4(s, a, dt):
    """One Runge-Kutta step of length dt from s (a list of [N] tensors)."""
    dt2 = dt / 2.0
    k1 = _dsdt(s, a)
    k2 = _dsdt([y + dt2 * k for y, k in zip(s, k1)], a)
    k3 = _dsdt([y + dt2 * k for y, k in zip(s, k2)], a)
    k4 = _dsdt([y + dt * k for y, k in zip(s, k3)], a)
    return [y + dt / 6.0 * (a1 + 2 * a2 + 2 * a3 + a4)
            for y, a1, a2, a3, a4 in zip(s, k1, k2, k3, k4)]


class TFAcrobot(TFVectorEnv):
    """Acrobot-v1; physics rows are `[theta1, theta2, dtheta1, dtheta2]` (gymnasium's).

    Args: see `TFVectorEnv`.
    """

    env_id = "Acrobot-v1"
    physics_size = 4
    default_max_episode_steps = 500
    gymnasium_dtype = tf.float64
    _high = np.array([1.0, 1.0, 1.0, 1.0, MAX_VEL_1, MAX_VEL_2], dtype=np.float32)
    observation_space = gym.spaces.Box(low=-_high, high=_high, dtype=np.float32)
    action_space = gym.spaces.Discrete(3)

    def _initial_physics(self, key):
        start = tf.random.stateless_uniform([self.num_envs, 4], seed=key, minval=-0.1,
                                            maxval=0.1, dtype=tf.float32, alg=RNG_ALG)
        return tf.cast(start, self.dtype)

    def _dynamics(self, physics, action):
        torque = tf.cast(action - 1, self.dtype)  # torques [-1, 0, +1]
        ns = _rk4(tf.unstack(physics, axis=1), torque, DT)
        ns[0] = wrap(ns[0], -math.pi, math.pi)
        ns[1] = wrap(ns[1], -math.pi, math.pi)
        ns[2] = tf.minimum(tf.maximum(ns[2], -MAX_VEL_1), MAX_VEL_1)
        ns[3] = tf.minimum(tf.maximum(ns[3], -MAX_VEL_2), MAX_VEL_2)
        terminated = -tf.cos(ns[0]) - tf.cos(ns[1] + ns[0]) > 1.0
        reward = tf.where(terminated, 0.0, -1.0)
        return tf.stack(ns, axis=1), reward, terminated

    def _observe(self, physics):
        s = tf.unstack(physics, axis=1)
        return tf.cast(tf.stack([tf.cos(s[0]), tf.sin(s[0]), tf.cos(s[1]), tf.sin(s[1]),
                                 s[2], s[3]], axis=1), tf.float32)
