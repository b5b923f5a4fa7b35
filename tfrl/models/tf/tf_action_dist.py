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
from tfrl.utils import numpy as numpy_utils

__all__ = [
    "TFActionDistribution", "Categorical", "MultiCategorical", "DiagGaussian",
    "SquashedGaussian", "Beta", "GumbelSoftmax", "Deterministic", "MultiActionDistribution",
    "flat_action_size",
]

# Bounds for the log-std of squashed Gaussians (RLlib's classic-stack constants).
MIN_LOG_NN_OUTPUT = float(numpy_utils.MIN_LOG_NN_OUTPUT)
MAX_LOG_NN_OUTPUT = float(numpy_utils.MAX_LOG_NN_OUTPUT)
# How far (in the normalized [-1, 1] action range) logp keeps away from the bounds, and
# the floor added to the tanh Jacobian (RLlib's SMALL_NUMBER in both places).
SQUASH_EPSILON = numpy_utils.SMALL_NUMBER
# RLlib clips each dimension's Gaussian log-density of a squashed Gaussian to this range.
SQUASHED_LOGP_CLIP = 100.0
HALF_LOG_2PI = float(0.5 * np.log(2.0 * np.pi))
LOG_2 = float(np.log(2.0))


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

    scalar_action = True

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

    `logp` takes the actions as a tensor `[..., k]` (the layout of `sample()`), or, as
    RLlib's does, one array per component: a list or tuple of `k` arrays `[...]`, or a
    numpy array `[k, ...]` with the components first. A numpy array that fits both
    layouts (`[B, k]` with `B == k`) is read as `[..., k]`.

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
        return tf.add_n([c.logp(part) for c, part in zip(self.cats, self._components(x))])

    def _components(self, x) -> list:
        """The actions of each component (see the class docstring for the layouts)."""
        k = len(self.cats)
        if isinstance(x, (list, tuple)):
            if len(x) != k:
                raise ValueError(
                    f"MultiCategorical.logp needs one action array per component ({k}); "
                    f"received a {type(x).__name__} of {len(x)}.")
            return list(x)
        lead = tuple(self.inputs.shape[:-1])
        if isinstance(x, np.ndarray) and x.ndim >= 1 and x.shape[0] == k and (
                x.shape[1:] == lead and not (x.shape[-1] == k and x.shape[:-1] == lead)):
            return list(x)  # [k, ...]: RLlib's component-first numpy layout
        x = tf.convert_to_tensor(x)
        return [x[..., i] for i in range(k)]

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

    With `u ~ N(mean, std)` and `x = low + (tanh(u) + 1) / 2 * (high - low)` (clipped
    into `[low, high]`), `logp(x)` is RLlib's: the log-density of the *normalized*
    action `tanh(u)` in `[-1, 1]`,

        sum_i clip(log N(u_i), -100, 100) - sum_i log(1 - tanh(u_i)^2 + SMALL_NUMBER),

    with `u = atanh(clip(2 (x - low) / (high - low) - 1, -1 + SMALL_NUMBER, 1 -
    SMALL_NUMBER))`. It stays finite at and beyond the bounds; away from them it equals
    the exact density of `tanh(u)` (TFP's `to_tfp()`, which is the density of `x`,
    minus `sum log((high - low) / 2)`) up to `SMALL_NUMBER / (1 - tanh(u)^2)`. The
    Jacobian term is computed from `log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u))`,
    exact where float32 `1 - tanh(u)^2` would cancel. `sample()`'s
    `sampled_action_logp()` and `sample_from_noise` use the same formula at the drawn
    `u` itself (no atanh round trip). Entropy and KL have no closed form and raise.

    Args:
        inputs: `[mean, log_std]` concatenated, `[..., 2 * A]`; log_std is clipped to
            `[MIN_LOG_NN_OUTPUT, MAX_LOG_NN_OUTPUT]`. float32 or float64.
        model: The model that produced `inputs`.
        low: Lower bound(s) of the actions (scalar or `[A]`).
        high: Upper bound(s) of the actions.
    """

    def __init__(self, inputs: Any, model: Any = None, low: Any = -1.0, high: Any = 1.0):
        super().__init__(inputs, model)
        if np.any(np.asarray(low) >= np.asarray(high)) or not np.all(
            np.isfinite(np.asarray(high) - np.asarray(low))
        ):
            raise ValueError(
                f"SquashedGaussian needs finite bounds with low < high. Received: low={low}, "
                f"high={high}. Use DiagGaussian for unbounded Box action spaces."
            )
        dtype = self.inputs.dtype if self.inputs.dtype.is_floating else tf.float32
        self.inputs = tf.cast(self.inputs, dtype)
        self.low = tf.constant(np.asarray(low), dtype)
        self.high = tf.constant(np.asarray(high), dtype)
        mean, log_std = tf.split(self.inputs, 2, axis=-1)  # [..., A] each
        self.mean = mean
        self.log_std = tf.clip_by_value(log_std, MIN_LOG_NN_OUTPUT, MAX_LOG_NN_OUTPUT)
        self.std = tf.exp(self.log_std)

    def _squash(self, u):
        x = self.low + (tf.tanh(u) + 1.0) / 2.0 * (self.high - self.low)
        return tf.clip_by_value(x, self.low, self.high)

    def _unsquash(self, x):
        unit = (tf.cast(x, self.mean.dtype) - self.low) / (self.high - self.low) * 2.0 - 1.0
        unit = tf.clip_by_value(unit, -1.0 + SQUASH_EPSILON, 1.0 - SQUASH_EPSILON)
        return tf.atanh(unit)

    def _logp_of_u(self, u):
        """RLlib's log-likelihood (see the class docstring) at pre-squash values `u`."""
        z = (u - self.mean) / self.std
        gaussian = tf.clip_by_value(-0.5 * tf.square(z) - self.log_std - HALF_LOG_2PI,
                                    -SQUASHED_LOGP_CLIP, SQUASHED_LOGP_CLIP)  # [..., A]
        log_dtanh = 2.0 * (LOG_2 - u - tf.nn.softplus(-2.0 * u))  # log(1 - tanh(u)^2)
        jacobian = tf.math.log(tf.exp(log_dtanh) + SQUASH_EPSILON)
        return tf.reduce_sum(gaussian - jacobian, axis=-1)

    def _noise(self, seed=None):
        return _standard_normal_like(self.mean, seed)

    def _sample_with_logp(self, seed=None):
        u = self._noise(seed) * self.std + self.mean
        return self._squash(u), self._logp_of_u(u)

    def _sample(self, seed=None):
        return self._squash(self._noise(seed) * self.std + self.mean)

    def sample_from_noise(self, noise: Any) -> Tuple[tf.Tensor, tf.Tensor]:
        """`(actions, logp)` of the reparameterized sample `squash(mean + std * noise)`
        for given standard-normal `noise` (`[..., A]`): differentiable with respect to
        the inputs, and logp computed at the drawn pre-squash value (finite and exact
        even where the actions round to the bounds). SAC draws the noise outside the
        graph for reproducible batches."""
        u = tf.cast(noise, self.mean.dtype) * self.std + self.mean
        return self._squash(u), self._logp_of_u(u)

    def deterministic_sample(self):
        return self._squash(self.mean)

    def logp(self, x):
        return self._logp_of_u(self._unsquash(x))

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
        """The TFP distribution of the actions `x` (TFP does not clip at the bounds).

        Its `log_prob(x)` is the density of `x`: `logp(x)` (the density of the
        normalized action) minus `sum log((high - low) / 2)`, away from the bounds.
        """
        # x = (low + high) / 2 + (high - low) / 2 * tanh(u).
        tfp = import_tfp()
        tfd, tfb = tfp.distributions, tfp.bijectors
        squash = tfb.Chain([tfb.Shift((self.low + self.high) / 2.0),
                            tfb.Scale((self.high - self.low) / 2.0), tfb.Tanh()])
        normal = tfd.Independent(tfd.Normal(self.mean, self.std), reinterpreted_batch_ndims=1)
        return tfd.TransformedDistribution(normal, squash)

    @staticmethod
    def required_model_output_shape(action_space, model_config):
        return 2 * int(np.prod(action_space.shape))


class Beta(TFActionDistribution):
    """Beta distribution scaled to `[low, high]`, for bounded Box actions.

    The inputs are made valid concentrations as RLlib does: clipped to
    `[log(SMALL_NUMBER), -log(SMALL_NUMBER)]`, then `softplus(.) + 1` (so both are
    >= 1 and the density is unimodal); `self.inputs` holds the result, `[alpha, beta]`
    concatenated. `logp(x)` is the Beta log-density of `(x - low) / (high - low)` (the
    normalized action, as RLlib's; the density of `x` is lower by `sum log(high -
    low)`); `entropy` and `kl` are those of the normalized Beta. The deterministic
    sample is the mean, `alpha / (alpha + beta)`, scaled.

    Args:
        inputs: `[alpha, beta]` pre-activations, `[..., 2 * A]`.
        model: The model that produced `inputs`.
        low: Lower bound(s) of the actions (scalar or `[A]`).
        high: Upper bound(s) of the actions.
    """

    def __init__(self, inputs: Any, model: Any = None, low: Any = 0.0, high: Any = 1.0):
        inputs = tf.convert_to_tensor(inputs)
        if not inputs.dtype.is_floating:
            inputs = tf.cast(inputs, tf.float32)
        if np.any(np.asarray(low) >= np.asarray(high)):
            raise ValueError(f"Beta needs low < high. Received: low={low}, high={high}.")
        log_small = float(np.log(SQUASH_EPSILON))
        concentrations = tf.nn.softplus(tf.clip_by_value(inputs, log_small, -log_small)) + 1.0
        super().__init__(concentrations, model)
        self.low = tf.constant(np.asarray(low), inputs.dtype)
        self.high = tf.constant(np.asarray(high), inputs.dtype)
        self.alpha, self.beta = tf.split(concentrations, 2, axis=-1)  # [..., A] each

    def _squash(self, unit):
        return tf.clip_by_value(unit * (self.high - self.low) + self.low, self.low, self.high)

    def _unsquash(self, x):
        return (tf.cast(x, self.alpha.dtype) - self.low) / (self.high - self.low)

    def _sample(self, seed=None):
        shape = tf.shape(self.alpha)
        if seed is None:
            a = tf.random.gamma([], self.alpha, dtype=self.alpha.dtype)
            b = tf.random.gamma([], self.beta, dtype=self.beta.dtype)
        else:
            seed_a, seed_b = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
            a = tf.random.stateless_gamma(shape, seed_a, self.alpha, dtype=self.alpha.dtype)
            b = tf.random.stateless_gamma(shape, seed_b, self.beta, dtype=self.beta.dtype)
        return self._squash(a / (a + b))

    def deterministic_sample(self):
        return self._squash(self.alpha / (self.alpha + self.beta))

    def logp(self, x):
        unit = self._unsquash(x)
        log_density = (tf.math.xlogy(self.alpha - 1.0, unit)
                       + tf.math.xlog1py(self.beta - 1.0, -unit) - self._log_beta_fn())
        return tf.reduce_sum(log_density, axis=-1)

    def _log_beta_fn(self):
        return (tf.math.lgamma(self.alpha) + tf.math.lgamma(self.beta)
                - tf.math.lgamma(self.alpha + self.beta))

    def entropy(self):
        total = self.alpha + self.beta
        per_dim = (self._log_beta_fn() - (self.alpha - 1.0) * tf.math.digamma(self.alpha)
                   - (self.beta - 1.0) * tf.math.digamma(self.beta)
                   + (total - 2.0) * tf.math.digamma(total))
        return tf.reduce_sum(per_dim, axis=-1)

    def kl(self, other):
        _check_other(self, other)
        total, other_total = self.alpha + self.beta, other.alpha + other.beta
        per_dim = (other._log_beta_fn() - self._log_beta_fn()
                   + (self.alpha - other.alpha) * tf.math.digamma(self.alpha)
                   + (self.beta - other.beta) * tf.math.digamma(self.beta)
                   + (other_total - total) * tf.math.digamma(total))
        return tf.reduce_sum(per_dim, axis=-1)

    def to_tfp(self):
        """The TFP Beta of the normalized action `(x - low) / (high - low)`."""
        tfd = import_tfp().distributions
        return tfd.Independent(tfd.Beta(concentration1=self.alpha, concentration0=self.beta),
                               reinterpreted_batch_ndims=1)

    @staticmethod
    def required_model_output_shape(action_space, model_config):
        return 2 * int(np.prod(action_space.shape))


class GumbelSoftmax(TFActionDistribution):
    """The Gumbel-softmax (concrete) relaxation of a categorical over `n` classes.

    `sample()` is `softmax((logits + g) / temperature)` with standard Gumbel noise `g`
    (its argmax is distributed as `Categorical(logits)`); `deterministic_sample()` is
    `softmax(logits)`. `logp(x)` is RLlib's: `sum(x * log_softmax(logits))` for
    probability vectors `x` `[..., n]` (for one-hot `x`, the categorical
    log-probability); integer actions `[...]` are one-hot encoded first.

    Args:
        inputs: Logits `[..., n]`.
        model: The model that produced `inputs`.
        temperature: The relaxation temperature (> 0; towards 0 samples become one-hot).
    """

    def __init__(self, inputs: Any, model: Any = None, temperature: float = 1.0):
        if temperature <= 0.0:
            raise ValueError(f"GumbelSoftmax needs temperature > 0. Received: {temperature}.")
        super().__init__(inputs, model)
        if not self.inputs.dtype.is_floating:
            self.inputs = tf.cast(self.inputs, tf.float32)
        self.temperature = float(temperature)
        self.probs = tf.nn.softmax(self.inputs)

    def _sample(self, seed=None):
        shape = tf.shape(self.inputs)
        tiny = np.finfo(self.inputs.dtype.as_numpy_dtype).tiny
        if seed is None:
            uniform = tf.random.uniform(shape, tiny, 1.0, dtype=self.inputs.dtype)
        else:
            uniform = tf.random.stateless_uniform(shape, seed, tiny, 1.0,
                                                  dtype=self.inputs.dtype)
        gumbel = -tf.math.log(-tf.math.log(uniform))
        return tf.nn.softmax((self.inputs + gumbel) / self.temperature)

    def deterministic_sample(self):
        return self.probs

    def logp(self, x):
        x = tf.convert_to_tensor(x)
        if x.dtype.is_integer:
            x = tf.one_hot(x, tf.shape(self.inputs)[-1], dtype=self.inputs.dtype)
        return tf.reduce_sum(tf.cast(x, self.inputs.dtype) * tf.nn.log_softmax(self.inputs),
                             axis=-1)

    def to_tfp(self):
        tfd = import_tfp().distributions
        return tfd.RelaxedOneHotCategorical(self.temperature, logits=self.inputs)

    @staticmethod
    def required_model_output_shape(action_space, model_config):
        return int(action_space.n)


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
