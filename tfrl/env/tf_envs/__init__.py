"""TF-native vector environments for the in-graph training path.

Gymnasium's classic-control envs written as pure TensorFlow functions, batched over
`num_envs` sub-envs, with the state in tensors: CartPole-v1, Pendulum-v1, Acrobot-v1,
MountainCar-v0 and MountainCarContinuous-v0 (names `"tfrl/<gymnasium id>"`). A rollout
of any length runs inside one `tf.function`, optionally XLA-compiled; see
`tfrl.env.tf_envs.tf_vector_env` for the API and the auto-reset rule.

Example:
    >>> import tensorflow as tf
    >>> env = make_tf_env("tfrl/CartPole-v1", num_envs=8)
    >>> @tf.function
    ... def rollout(state, key):  # 100 steps of random actions
    ...     total = tf.zeros([env.num_envs])
    ...     for t in tf.range(100):
    ...         seed = key + tf.cast(t, tf.int64)
    ...         action = tf.random.stateless_uniform([env.num_envs], seed, maxval=2, dtype=tf.int32)
    ...         step = env.step(state, action)
    ...         state, total = step.state, total + step.reward
    ...     return state, total
    >>> state, obs = env.reset(seed=0)
    >>> state, total = rollout(state, tf.constant([1, 2], tf.int64))
    >>> float(tf.reduce_sum(total))
    800.0
"""

from tfrl.env.tf_envs.acrobot import TFAcrobot
from tfrl.env.tf_envs.cartpole import TFCartPole
from tfrl.env.tf_envs.continuous_mountain_car import TFMountainCarContinuous
from tfrl.env.tf_envs.mountain_car import TFMountainCar
from tfrl.env.tf_envs.pendulum import TFPendulum
from tfrl.env.tf_envs.registry import TF_ENVS, make_tf_env
from tfrl.env.tf_envs.tf_vector_env import TFEnvState, TFEnvStep, TFVectorEnv

__all__ = ["TF_ENVS", "TFAcrobot", "TFCartPole", "TFEnvState", "TFEnvStep",
           "TFMountainCar", "TFMountainCarContinuous", "TFPendulum", "TFVectorEnv",
           "make_tf_env"]
