"""A tiny Keras model, a Categorical distribution and a PG-style TFPolicy for the policy tests."""

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp

from tfrl.policy.tf_policy import TFPolicy

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
ACT_SPACE = gym.spaces.Discrete(2)


class TinyModel(keras.Model):
    """obs [B, 4] -> (logits [B, n], value [B]) through one hidden layer."""

    is_recurrent = False

    def __init__(self, num_outputs, hidden=8, seed=0):
        super().__init__()
        init = lambda s: keras.initializers.GlorotUniform(seed=s)  # noqa: E731
        self.num_outputs = num_outputs
        self.hidden = keras.layers.Dense(hidden, activation="tanh", kernel_initializer=init(seed))
        self.logits = keras.layers.Dense(num_outputs, kernel_initializer=init(seed + 1))
        self.value = keras.layers.Dense(1, kernel_initializer=init(seed + 2))

    def call(self, obs, training=False):
        h = self.hidden(obs)
        return self.logits(h), self.value(h)[:, 0]


class Categorical:
    """The dist_class contract (`dist_class(dist_inputs, model)`) on tfp.Categorical."""

    def __init__(self, inputs, model=None):
        self.inputs = inputs
        self._dist = tfp.distributions.Categorical(logits=inputs)
        self._last_logp = None

    def sample(self):
        action = self._dist.sample()
        self._last_logp = self._dist.log_prob(action)
        return action

    def sampled_action_logp(self):
        return self._last_logp

    def deterministic_sample(self):
        return tf.argmax(self.inputs, axis=-1)

    def logp(self, x):
        return self._dist.log_prob(x)

    def entropy(self):
        return self._dist.entropy()


class PGPolicy(TFPolicy):
    """Policy gradient with a value loss; SGD(lr) so that gradient-scaling bugs show."""

    def make_action_distribution(self):
        return Categorical, int(self.action_space.n)

    def make_model(self):
        return TinyModel(int(self.action_space.n))

    def make_optimizer(self):
        if self.config.get("optimizer") == "adam":
            return keras.optimizers.Adam(self.config["lr"])
        return keras.optimizers.SGD(self.config["lr"])

    def loss(self, model, dist_class, train_batch):
        logits, value = model(train_batch["obs"], training=True)  # [B, n], [B]
        logp = dist_class(logits, model).logp(train_batch["actions"])  # [B]
        vf_err = (value - train_batch["advantages"]) ** 2  # [B]
        self.tower_stats["vf_loss"] = tf.reduce_mean(vf_err)  # this replica's mean, for stats
        return -self.global_mean(logp * train_batch["advantages"]) + 0.5 * self.global_mean(vf_err)

    def stats(self, train_batch):
        return {"vf_loss": self.tower_stats["vf_loss"],
                "mean_adv": tf.reduce_mean(train_batch["advantages"])}


def pg_loss_numpy_free(model, batch):
    """The same loss as PGPolicy, eagerly on one device (for hand-written reference steps)."""
    logits, value = model(batch["obs"], training=True)
    logp = Categorical(logits).logp(batch["actions"])
    return (-tf.reduce_mean(logp * batch["advantages"])
            + 0.5 * tf.reduce_mean((value - batch["advantages"]) ** 2))


def make_batch(num_rows, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "obs": rng.uniform(-1, 1, (num_rows, 4)).astype(np.float32),
        "actions": rng.integers(0, 2, num_rows),
        "advantages": rng.normal(size=num_rows).astype(np.float32),
        "rewards": rng.normal(size=num_rows),
        "infos": [{} for _ in range(num_rows)],
    }
