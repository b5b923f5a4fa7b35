"""Action distributions built on tensorflow-probability from a model's outputs.

A distribution takes the model's `dist_inputs` (`[B, num_outputs]`, or `[B, T,
num_outputs]` for recurrent models) and answers `sample()`, `deterministic_sample()`,
`logp(x)`, `entropy()` and `kl(other)`; results have the inputs' leading axes (`[B]`
or `[B, T]`). Every method works eagerly and inside `tf.function`.
`ModelCatalog.get_action_dist(action_space)` picks the class for a space.

Example:
    >>> import tensorflow as tf
    >>> dist = Categorical(tf.math.log([[0.25, 0.75]]))
    >>> dist.deterministic_sample().numpy().tolist()
    [1]
    >>> round(float(dist.logp(tf.constant([0]))[0]), 4)
    -1.3863
"""

from typing import Any, Optional, Sequence

import gymnasium as gym
import numpy as np
import tensorflow as tf
from tensorflow_probability.python import distributions as tfd

from tfrl.models.tf.action_dist_base import TFActionDistribution
from tfrl.models.tf.action_dist_base import check_same_type as _check_other
from tfrl.models.tf.multi_action_dist import MultiActionDistribution, flat_action_size

__all__ = [
    "TFActionDistribution", "Categorical", "MultiCategorical", "DiagGaussian",
    "SquashedGaussian", "Deterministic", "MultiActionDistribution", "flat_action_size",
]

# Bounds for the log-std of squashed Gaussians (RLlib's classic-stack constants).
MIN_LOG_NN_OUTPUT = -5.0
MAX_LOG_NN_OUTPUT = 2.0
# How far (in the normalized [-1, 1] action range) logp keeps away from the bounds.
SQUASH_EPSILON = 1e-6


class Categorical(TFActionDistribution):
    """Categorical distribution over `n` actions, parameterized by logits `[..., n]`."""

    def __init__(self, inputs: Any, model: Any = None, temperature: float = 1.0):
        if temperature <= 0.0:
            raise ValueError(f"Categorical needs temperature > 0. Received: {temperature}.")
        super().__init__(inputs, model)
        self.dist = tfd.Categorical(logits=self.inputs / temperature, dtype=tf.int64)

    def _sample(self):
        return self.dist.sample()

    def deterministic_sample(self):
        return tf.argmax(self.inputs, axis=-1)

    def logp(self, x):
        return self.dist.log_prob(tf.cast(x, tf.int64))

    def entropy(self):
        return self.dist.entropy()

    def kl(self, other):
        _check_other(self, other)
        return tfd.kl_divergence(self.dist, other.dist)

    @staticmethod
    def required_model_output_shape(action_space, model_config):
        return int(action_space.n)


class MultiCategorical(TFActionDistribution):
    """Independent categoricals, one per MultiDiscrete component; actions `[..., k]`.

    Args:
        inputs: Concatenated logits `[..., sum(input_lens)]`.
        model: The model that produced `inputs`.
        input_lens: Number of categories of each component (the space's `nvec`).
        action_space: Optional MultiDiscrete space (unused; RLlib's signature).
    """

    def __init__(
        self,
        inputs: Any,
        model: Any = None,
        input_lens: Sequence[int] = (),
        action_space: Optional[gym.Space] = None,
    ):
        super().__init__(inputs, model)
        self.input_lens = [int(n) for n in input_lens]
        if sum(self.input_lens) != self.inputs.shape[-1]:
            raise ValueError(
                f"MultiCategorical needs sum(input_lens) logits. Received: inputs of shape "
                f"{self.inputs.shape} for input_lens={self.input_lens}."
            )
        self.cats = [
            Categorical(logits, model)
            for logits in tf.split(self.inputs, self.input_lens, axis=-1)
        ]

    def _sample(self):
        return tf.stack([c._sample() for c in self.cats], axis=-1)

    def deterministic_sample(self):
        return tf.stack([c.deterministic_sample() for c in self.cats], axis=-1)

    def logp(self, x):
        x = tf.convert_to_tensor(x)
        return tf.add_n([c.logp(x[..., i]) for i, c in enumerate(self.cats)])

    def entropy(self):
        return tf.add_n([c.entropy() for c in self.cats])

    def kl(self, other):
        _check_other(self, other)
        return tf.add_n([c.kl(o) for c, o in zip(self.cats, other.cats)])

    @staticmethod
    def required_model_output_shape(action_space, model_config):
        return int(np.sum(action_space.nvec))


class DiagGaussian(TFActionDistribution):
    """Gaussian with diagonal covariance; inputs are `[mean, log_std]` concatenated.

    Samples are not clipped to the action space's bounds (use `SquashedGaussian` for
    that, or clip at the env boundary).
    """

    def __init__(self, inputs: Any, model: Any = None, action_space: Optional[gym.Space] = None):
        super().__init__(inputs, model)
        self.mean, self.log_std = tf.split(self.inputs, 2, axis=-1)  # [..., A] each
        self.std = tf.exp(self.log_std)
        self.dist = tfd.Independent(tfd.Normal(self.mean, self.std), reinterpreted_batch_ndims=1)

    def _sample(self):
        return self.dist.sample()

    def deterministic_sample(self):
        return self.mean

    def logp(self, x):
        return self.dist.log_prob(tf.cast(x, self.mean.dtype))

    def entropy(self):
        return self.dist.entropy()

    def kl(self, other):
        _check_other(self, other)
        return tfd.kl_divergence(self.dist, other.dist)

    @staticmethod
    def required_model_output_shape(action_space, model_config):
        return 2 * int(np.prod(action_space.shape))


class SquashedGaussian(TFActionDistribution):
    """Gaussian squashed by tanh into `[low, high]` (SAC's action distribution).

    With `u ~ N(mean, std)` and `x = low + (tanh(u) + 1) / 2 * (high - low)`, `logp(x)`
    is the density of `x` itself: `log N(u) - sum log((high - low) / 2 * (1 - tanh(u)^2))`.
    Actions at or beyond the bounds are evaluated `SQUASH_EPSILON` inside them, so logp
    stays finite. Entropy and KL have no closed form and raise.

    Args:
        inputs: `[mean, log_std]` concatenated, `[..., 2 * A]`; log_std is clipped to
            `[MIN_LOG_NN_OUTPUT, MAX_LOG_NN_OUTPUT]`.
        model: The model that produced `inputs`.
        low: Lower bound(s) of the actions (scalar or `[A]`).
        high: Upper bound(s) of the actions.
    """

    def __init__(self, inputs: Any, model: Any = None, low: Any = -1.0, high: Any = 1.0):
        super().__init__(inputs, model)
        self.low = tf.constant(np.asarray(low, np.float32))
        self.high = tf.constant(np.asarray(high, np.float32))
        if np.any(np.asarray(low) >= np.asarray(high)) or not np.all(
            np.isfinite(np.asarray(high) - np.asarray(low))
        ):
            raise ValueError(
                f"SquashedGaussian needs finite bounds with low < high. Received: low={low}, "
                f"high={high}. Use DiagGaussian for unbounded Box action spaces."
            )
        mean, log_std = tf.split(self.inputs, 2, axis=-1)  # [..., A] each
        self.mean = mean
        self.log_std = tf.clip_by_value(log_std, MIN_LOG_NN_OUTPUT, MAX_LOG_NN_OUTPUT)
        self.normal = tfd.Independent(
            tfd.Normal(self.mean, tf.exp(self.log_std)), reinterpreted_batch_ndims=1
        )

    def _squash(self, u):
        return self.low + (tf.tanh(u) + 1.0) / 2.0 * (self.high - self.low)

    def _unsquash(self, x):
        unit = (tf.cast(x, tf.float32) - self.low) / (self.high - self.low) * 2.0 - 1.0
        unit = tf.clip_by_value(unit, -1.0 + SQUASH_EPSILON, 1.0 - SQUASH_EPSILON)
        return tf.atanh(unit)

    def _logp_from_u(self, u):
        # log(1 - tanh(u)^2) = 2 * (log 2 - u - softplus(-2u)), stable for large |u|.
        log_dtanh = 2.0 * (np.log(2.0) - u - tf.nn.softplus(-2.0 * u))  # [..., A]
        log_scale = tf.math.log((self.high - self.low) / 2.0)  # [A] or []
        log_jacobian = tf.reduce_sum(log_dtanh + log_scale * tf.ones_like(u), axis=-1)
        return self.normal.log_prob(u) - log_jacobian

    def _sample_with_logp(self):
        u = self.normal.sample()
        return self._squash(u), self._logp_from_u(u)

    def _sample(self):
        return self._squash(self.normal.sample())

    def deterministic_sample(self):
        return self._squash(self.mean)

    def logp(self, x):
        return self._logp_from_u(self._unsquash(x))

    def entropy(self):
        raise ValueError(
            "SquashedGaussian has no closed-form entropy. Estimate it with "
            "-dist.sampled_action_logp() after dist.sample() (as SAC does)."
        )

    def kl(self, other):
        raise ValueError(
            "SquashedGaussian has no closed-form KL divergence. Use DiagGaussian if the "
            "loss needs kl(), or estimate it from samples with logp()."
        )

    @staticmethod
    def required_model_output_shape(action_space, model_config):
        return 2 * int(np.prod(action_space.shape))


class Deterministic(TFActionDistribution):
    """A point mass at the model outputs (DDPG/TD3 actions).

    `logp` is 0 for every action (RLlib's convention); `entropy` and `kl` raise.
    """

    def _sample(self):
        return self.inputs

    def deterministic_sample(self):
        return self.inputs

    def logp(self, x):
        return tf.zeros(tf.shape(self.inputs)[:-1], self.inputs.dtype)

    @staticmethod
    def required_model_output_shape(action_space, model_config):
        return int(np.prod(action_space.shape))
