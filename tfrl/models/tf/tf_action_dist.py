"""Action distributions over a model's outputs, computed with TensorFlow ops.

A distribution takes the model's `dist_inputs` (`[B, num_outputs]`, or `[B, T,
num_outputs]` for recurrent models) and answers `sample()`, `deterministic_sample()`,
`logp(x)`, `entropy()` and `kl(other)`; results have the inputs' leading axes (`[B]`
or `[B, T]`). Every method works eagerly and inside `tf.function`. `sample()` uses TF's
stateful random ops (`tf.random.categorical`, `tf.random.normal`), so
`tf.random.set_seed` makes it repeatable; `sample(seed)` uses their stateless
counterparts with a shape-[2] seed (a TFPolicy draws it from its saved generator). `ModelCatalog.get_action_dist(action_space)`
picks the class for a space.

The formulas are tfrl's own; `dist.to_tfp()` returns the equivalent
tensorflow-probability distribution (TFP is imported only then), against which
tests/test_action_dist_oracle.py checks every formula.

Example:
    >>> import tensorflow as tf
    >>> dist = Categorical(tf.math.log([[0.25, 0.75]]))
    >>> dist.deterministic_sample().numpy().tolist()
    [1]
    >>> round(float(dist.logp(tf.constant([0]))[0]), 4)
    -1.3863
"""

from typing import Any, Optional, Sequence, Tuple

import gymnasium as gym
import numpy as np
import tensorflow as tf

from tfrl.models.tf.action_dist_base import TFActionDistribution, import_tfp
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
HALF_LOG_2PI = float(0.5 * np.log(2.0 * np.pi))


def _mul_exp(x: tf.Tensor, logp: tf.Tensor) -> tf.Tensor:
    """`x * exp(logp)`, 0 (with 0 gradient) where `exp(logp)` underflows to 0.

    A category of probability 0 has log-probability -inf: `-inf * 0` would be NaN.
    """
    p = tf.exp(logp)
    return tf.where(tf.equal(p, 0.0), tf.zeros_like(x), x) * p


def _standard_normal_like(mean: tf.Tensor, seed: Any = None) -> tf.Tensor:
    """N(0, 1) noise of `mean`'s shape and dtype `[..., A]` (stateless with a `seed`)."""
    if seed is None:
        return tf.random.normal(tf.shape(mean), dtype=mean.dtype)
    return tf.random.stateless_normal(tf.shape(mean), seed, dtype=mean.dtype)


def _normal_logp(z: tf.Tensor, log_std: tf.Tensor) -> tf.Tensor:
    """Log-density of a diagonal Gaussian at standardized values `z = (x - mean) / std`."""
    return tf.reduce_sum(-0.5 * tf.square(z) - log_std - HALF_LOG_2PI, axis=-1)


class Categorical(TFActionDistribution):
    """Categorical distribution over `n` actions, parameterized by logits `[..., n]`."""

    def __init__(self, inputs: Any, model: Any = None, temperature: float = 1.0):
        if temperature <= 0.0:
            raise ValueError(f"Categorical needs temperature > 0. Received: {temperature}.")
        super().__init__(inputs, model)
        self.logits = self.inputs / temperature  # [..., n]

    def _sample(self, seed=None):
        logits_2d = tf.reshape(self.logits, [-1, tf.shape(self.logits)[-1]])  # [N, n]
        if seed is None:
            draws = tf.random.categorical(logits_2d, 1, dtype=tf.int64)  # [N, 1]
        else:
            draws = tf.random.stateless_categorical(logits_2d, 1, seed, dtype=tf.int64)
        sample = tf.reshape(draws, tf.shape(self.logits)[:-1])
        sample.set_shape(self.logits.shape[:-1])
        return sample

    def deterministic_sample(self):
        return tf.argmax(self.inputs, axis=-1)

    def logp(self, x):
        x = tf.cast(x, tf.int64)
        logits = self.logits
        if not (x.shape.is_fully_defined() and logits.shape[:-1].is_fully_defined()
                and x.shape == logits.shape[:-1]):
            # Broadcast actions and logits against each other (e.g. several actions
            # per row, or a shape only known at run time).
            logits = logits * tf.ones_like(x[..., tf.newaxis], dtype=logits.dtype)
            x = x * tf.ones(tf.shape(logits)[:-1], dtype=x.dtype)
        return -tf.nn.sparse_softmax_cross_entropy_with_logits(labels=x, logits=logits)

    def entropy(self):
        log_probs = tf.nn.log_softmax(self.logits)
        return -tf.reduce_sum(_mul_exp(log_probs, log_probs), axis=-1)

    def kl(self, other):
        _check_other(self, other)
        log_probs = tf.nn.log_softmax(self.logits)
        other_log_probs = tf.nn.log_softmax(other.logits)
        return tf.reduce_sum(_mul_exp(log_probs - other_log_probs, log_probs), axis=-1)

    def to_tfp(self):
        tfd = import_tfp().distributions
        return tfd.Categorical(logits=self.logits, dtype=tf.int64)

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

    def _sample(self, seed=None):
        seeds = ([None] * len(self.cats) if seed is None else
                 tf.unstack(tf.random.experimental.stateless_split(seed, len(self.cats))))
        return tf.stack([c._sample(s) for c, s in zip(self.cats, seeds)], axis=-1)

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

    def to_tfp(self):
        # Blockwise concatenates vector events: each categorical becomes a 1-vector.
        tfd = import_tfp().distributions
        return tfd.Blockwise([tfd.Sample(c.to_tfp(), 1) for c in self.cats])

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

    def _noise(self, seed=None):
        return _standard_normal_like(self.mean, seed)

    def _sample_with_logp(self, seed=None):
        eps = self._noise(seed)
        return eps * self.std + self.mean, _normal_logp(eps, self.log_std)

    def _sample(self, seed=None):
        return self._noise(seed) * self.std + self.mean

    def deterministic_sample(self):
        return self.mean

    def logp(self, x):
        z = (tf.cast(x, self.mean.dtype) - self.mean) / self.std
        return _normal_logp(z, self.log_std)

    def entropy(self):
        return tf.reduce_sum(self.log_std + (0.5 + HALF_LOG_2PI), axis=-1)

    def kl(self, other):
        _check_other(self, other)
        diff_log_std = self.log_std - other.log_std
        # expm1: accurate when the two are close (KL near 0).
        return tf.reduce_sum(
            0.5 * tf.square((self.mean - other.mean) / other.std)
            + 0.5 * tf.math.expm1(2.0 * diff_log_std) - diff_log_std,
            axis=-1,
        )

    def to_tfp(self):
        tfd = import_tfp().distributions
        return tfd.Independent(tfd.Normal(self.mean, self.std), reinterpreted_batch_ndims=1)

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
        self.std = tf.exp(self.log_std)

    def _squash(self, u):
        return self.low + (tf.tanh(u) + 1.0) / 2.0 * (self.high - self.low)

    def _unsquash(self, x):
        unit = (tf.cast(x, tf.float32) - self.low) / (self.high - self.low) * 2.0 - 1.0
        unit = tf.clip_by_value(unit, -1.0 + SQUASH_EPSILON, 1.0 - SQUASH_EPSILON)
        return tf.atanh(unit)

    def _log_jacobian(self, u):
        """`log |dx/du|` summed over the action dimensions."""
        # log(1 - tanh(u)^2) = 2 * (log 2 - u - softplus(-2u)), stable for large |u|.
        log_dtanh = 2.0 * (np.log(2.0) - u - tf.nn.softplus(-2.0 * u))  # [..., A]
        log_scale = tf.math.log((self.high - self.low) / 2.0)  # [A] or []
        return tf.reduce_sum(log_dtanh + log_scale * tf.ones_like(u), axis=-1)

    def _noise(self, seed=None):
        return _standard_normal_like(self.mean, seed)

    def _sample_with_logp(self, seed=None):
        eps = self._noise(seed)
        u = eps * self.std + self.mean
        return self._squash(u), _normal_logp(eps, self.log_std) - self._log_jacobian(u)

    def _sample(self, seed=None):
        return self._squash(self._noise(seed) * self.std + self.mean)

    def sample_from_noise(self, noise: Any) -> Tuple[tf.Tensor, tf.Tensor]:
        """`(actions, logp)` of the reparameterized sample `squash(mean + std * noise)`
        for given standard-normal `noise` (`[..., A]`): differentiable with respect to
        the inputs, and logp computed from `noise` (exact even where the actions round
        to the bounds). SAC draws the noise outside the graph for reproducible batches."""
        noise = tf.cast(noise, self.mean.dtype)
        u = noise * self.std + self.mean
        return self._squash(u), _normal_logp(noise, self.log_std) - self._log_jacobian(u)

    def deterministic_sample(self):
        return self._squash(self.mean)

    def logp(self, x):
        u = self._unsquash(x)
        return _normal_logp((u - self.mean) / self.std, self.log_std) - self._log_jacobian(u)

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

    def to_tfp(self):
        # x = (low + high) / 2 + (high - low) / 2 * tanh(u); TFP does not clip at the bounds.
        tfp = import_tfp()
        tfd, tfb = tfp.distributions, tfp.bijectors
        squash = tfb.Chain([tfb.Shift((self.low + self.high) / 2.0),
                            tfb.Scale((self.high - self.low) / 2.0), tfb.Tanh()])
        normal = tfd.Independent(tfd.Normal(self.mean, self.std), reinterpreted_batch_ndims=1)
        return tfd.TransformedDistribution(normal, squash)

    @staticmethod
    def required_model_output_shape(action_space, model_config):
        return 2 * int(np.prod(action_space.shape))


class Deterministic(TFActionDistribution):
    """A point mass at the model outputs (DDPG/TD3 actions).

    `logp` is 0 for every action (RLlib's convention); `entropy` and `kl` raise.
    """

    def _sample(self, seed=None):
        return self.inputs

    def deterministic_sample(self):
        return self.inputs

    def logp(self, x):
        return tf.zeros(tf.shape(self.inputs)[:-1], self.inputs.dtype)

    def to_tfp(self):
        # TFP's log_prob is 0 at the point and -inf elsewhere.
        tfd = import_tfp().distributions
        return tfd.Independent(tfd.Deterministic(self.inputs), reinterpreted_batch_ndims=1)

    @staticmethod
    def required_model_output_shape(action_space, model_config):
        return int(np.prod(action_space.shape))
