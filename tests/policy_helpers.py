"""Shared by the policy tests: a tiny Keras model, a Categorical distribution, a PG-style
TFPolicy and its builders under each strategy, and a recurrent PG policy on the catalog LSTM."""

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp

from tfrl.policy.sample_batch import SampleBatch
from tfrl.policy.strategy import make_strategy
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

    def loss_and_stats(self, model, dist_class, train_batch):
        logits, value = model(train_batch["obs"], training=True)  # [B, n], [B]
        logp = dist_class(logits, model).logp(train_batch["actions"])  # [B]
        vf_err = (value - train_batch["advantages"]) ** 2  # [B]
        loss = -self.global_mean(logp * train_batch["advantages"]) + 0.5 * self.global_mean(vf_err)
        # The loss's stats are this replica's means; `stats()` adds the rest.
        return loss, {"vf_loss": tf.reduce_mean(vf_err), **self.stats(train_batch)}

    def loss(self, model, dist_class, train_batch):
        return PGPolicy.loss_and_stats(self, model, dist_class, train_batch)[0]

    def stats(self, train_batch):
        return {"mean_adv": tf.reduce_mean(train_batch["advantages"])}


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


# ------------------------------------------------------------ PGPolicy under strategies

CONFIG = {"seed": 0, "lr": 0.1, "num_sgd_iter": 3, "sgd_minibatch_size": 16}
STRATEGIES = ["default", "one_device", "mirrored"]


def strategy_named(name):
    """The process-wide strategies: separate MirroredStrategy objects collide."""
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "one_device":
        return make_strategy({})
    return make_strategy({"num_gpus": 2, "_fake_gpus": True})


def make_policy(strategy="one_device", **config):
    keras.utils.set_random_seed(0)
    return PGPolicy(OBS_SPACE, ACT_SPACE, {**CONFIG, **config}, strategy=strategy_named(strategy))


# ------------------------------------------------------------ recurrent PG (catalog LSTM)

RNN_OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
RNN_ACT = gym.spaces.Discrete(2)
# One LSTM for policy and value: the state is [h, c] (state_in_0, state_in_1).
RNN_MODEL = {"use_lstm": True, "lstm_cell_size": 4, "fcnet_hiddens": [8], "max_seq_len": 4,
             "vf_share_layers": True}
SEQ_LENS = np.array([4, 3, 4, 2, 1, 4, 4, 3], np.int32)


class RecurrentPG(TFPolicy):
    def make_optimizer(self):
        return keras.optimizers.SGD(self.config["lr"])

    def loss(self, model, dist_class, train_batch):
        dist_inputs, value = self.forward(model, train_batch)  # [B, T, n], [B, T]
        mask = self.valid_mask(train_batch)  # [B, T]
        logp = dist_class(dist_inputs, model).logp(train_batch["actions"])  # [B, T]
        advantages = train_batch["advantages"]
        return (-self.global_mean(logp * advantages, mask)
                + self.global_mean((value - advantages) ** 2, mask))


def recurrent_policy(strategy="one_device", model=None, **config):
    keras.utils.set_random_seed(0)
    return RecurrentPG(RNN_OBS, RNN_ACT, {
        "seed": 0, "lr": 0.1, "model": {**RNN_MODEL, **(model or {})}, "num_sgd_iter": 2,
        "sgd_minibatch_size": 8, **config}, strategy=strategy_named(strategy))


def sequence_batch(seed=0, seq_lens=SEQ_LENS, prev=False):
    """A sequence batch for `recurrent_policy` (with prev_actions/prev_rewards if `prev`)."""
    rng = np.random.default_rng(seed)
    rows = int(seq_lens.sum())
    batch = {
        "obs": rng.uniform(-1, 1, (rows, 3)).astype(np.float32),
        "actions": rng.integers(0, 2, rows),
        "advantages": rng.normal(size=rows).astype(np.float32),
        "state_in_0": rng.normal(size=(len(seq_lens), 4)).astype(np.float32),
        "state_in_1": rng.normal(size=(len(seq_lens), 4)).astype(np.float32),
        "seq_lens": seq_lens,
    }
    if prev:
        batch["rewards"] = rng.normal(size=rows).astype(np.float32)
        starts = np.cumsum(seq_lens) - seq_lens
        batch["prev_actions"] = np.roll(batch["actions"], 1)
        batch["prev_rewards"] = np.roll(batch["rewards"], 1)
        batch["prev_actions"][starts] = rng.integers(0, 2, len(seq_lens))
        batch["prev_rewards"][starts] = rng.normal(size=len(seq_lens)).astype(np.float32)
    return SampleBatch(batch)
