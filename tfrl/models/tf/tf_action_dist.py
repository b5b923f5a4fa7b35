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
import tensorflow_probability as tfp

tfd = tfp.distributions

# Bounds for the log-std of squashed Gaussians (as RLlib): exp(-20) .. exp(2).
MIN_LOG_NN_OUTPUT = -20.0
MAX_LOG_NN_OUTPUT = 2.0
# How far (in the normalized [-1, 1] action range) logp keeps away from the bounds.
SQUASH_EPSILON = 1e-6


class TFActionDistribution:
    """Base class: a distribution over actions parameterized by model outputs.

    Args:
        inputs: The model's `dist_inputs`, `[..., num_outputs]`.
        model: The model that produced `inputs` (may be None).
    """

    def __init__(self, inputs: Any, model: Any = None):
        self.inputs = tf.convert_to_tensor(inputs)
        self.model = model
        self._last_sample = None
        self._last_logp = None

    def sample(self) -> Any:
        """Draws an action (from TF's global/op seeds) and remembers its logp."""
        self._last_sample, self._last_logp = self._sample_with_logp()
        return self._last_sample

    def sampled_action_logp(self) -> tf.Tensor:
        """The log-likelihood of the action drawn by the last `sample()` call."""
        if self._last_logp is None:
            raise ValueError(
                "sampled_action_logp() needs a preceding sample() call on this "
                "distribution; none was made. Call dist.sample() first."
            )
        return self._last_logp

    def _sample_with_logp(self):
        action = self._sample()
        return action, self.logp(action)

    def _sample(self) -> Any:
        raise NotImplementedError

    def deterministic_sample(self) -> Any:
        """The most likely action (mode)."""
        raise NotImplementedError

    def logp(self, x: Any) -> tf.Tensor:
        """Log-likelihood of actions `x`; shape of the inputs' leading axes."""
        raise NotImplementedError

    def entropy(self) -> tf.Tensor:
        """Entropy of the distribution; shape of the inputs' leading axes."""
        raise NotImplementedError(f"{type(self).__name__} has no entropy().")

    def kl(self, other: "TFActionDistribution") -> tf.Tensor:
        """KL(self || other); shape of the inputs' leading axes."""
        raise NotImplementedError(f"{type(self).__name__} has no kl().")

    @staticmethod
    def required_model_output_shape(action_space: gym.Space, model_config: Optional[dict]) -> int:
        """Number of model outputs this distribution needs for `action_space`."""
        raise NotImplementedError


def _check_other(dist: TFActionDistribution, other: Any) -> None:
    if not isinstance(other, type(dist)):
        raise TypeError(
            f"kl() needs two distributions of the same type. Received: other of type "
            f"{type(other).__name__}. Expected {type(dist).__name__}."
        )


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


class MultiActionDistribution(TFActionDistribution):
    """Distribution over a Dict or Tuple action space, one child per sub-space.

    Samples (and the `x` of `logp`) are nested like the space: a dict for Dict spaces
    (the space's key order), a tuple for Tuple spaces. `logp` also accepts the actions
    flattened into one tensor `[..., sum(flat_sizes)]` (children in the same order).
    `logp`, `entropy` and `kl` are sums over the children.

    Args:
        inputs: The children's inputs concatenated, `[..., sum(input_lens)]`.
        model: The model that produced `inputs`.
        action_space: The Dict or Tuple action space.
        child_distributions: One distribution class (or partial) per sub-space.
        input_lens: Number of inputs of each child.
    """

    def __init__(
        self,
        inputs: Any,
        model: Any = None,
        *,
        action_space: gym.Space,
        child_distributions: Sequence[Any],
        input_lens: Sequence[int],
    ):
        super().__init__(inputs, model)
        if sum(input_lens) != self.inputs.shape[-1]:
            raise ValueError(
                f"MultiActionDistribution needs sum(input_lens)={sum(input_lens)} inputs. "
                f"Received: inputs of shape {self.inputs.shape}."
            )
        self.action_space = action_space
        self.keys = (
            list(action_space.spaces) if isinstance(action_space, gym.spaces.Dict)
            else list(range(len(action_space.spaces)))
        )
        self.sub_spaces = list(action_space.spaces.values()) if isinstance(
            action_space, gym.spaces.Dict) else list(action_space.spaces)
        self.flat_sizes = [flat_action_size(s) for s in self.sub_spaces]
        split = tf.split(self.inputs, [int(n) for n in input_lens], axis=-1)
        self.children = [cls(part, model) for cls, part in zip(child_distributions, split)]

    def _nest(self, values):
        if isinstance(self.action_space, gym.spaces.Dict):
            return dict(zip(self.keys, values))
        return tuple(values)

    def _unnest(self, x):
        if isinstance(x, (dict, tuple, list)):
            return [x[k] for k in self.keys]
        x = tf.convert_to_tensor(x)  # [..., sum(flat_sizes)]
        parts = tf.split(x, self.flat_sizes, axis=-1)
        out = []
        for part, space in zip(parts, self.sub_spaces):
            if isinstance(space, gym.spaces.Discrete):
                part = part[..., 0]
            elif isinstance(space, gym.spaces.Box):
                part = tf.reshape(part, tf.concat([tf.shape(part)[:-1], space.shape], 0))
            out.append(part)
        return out

    def _sample_with_logp(self):
        pairs = [child._sample_with_logp() for child in self.children]
        return self._nest([a for a, _ in pairs]), tf.add_n([lp for _, lp in pairs])

    def _sample(self):
        return self._nest([child._sample() for child in self.children])

    def deterministic_sample(self):
        return self._nest([child.deterministic_sample() for child in self.children])

    def logp(self, x):
        parts = self._unnest(x)
        return tf.add_n([child.logp(part) for child, part in zip(self.children, parts)])

    def entropy(self):
        return tf.add_n([child.entropy() for child in self.children])

    def kl(self, other):
        _check_other(self, other)
        return tf.add_n([c.kl(o) for c, o in zip(self.children, other.children)])

    def multi_entropy(self) -> Any:
        """The children's entropies, nested like the action space."""
        return self._nest([child.entropy() for child in self.children])

    def multi_kl(self, other: "MultiActionDistribution") -> Any:
        """The children's KL divergences to `other`'s, nested like the action space."""
        _check_other(self, other)
        return self._nest([c.kl(o) for c, o in zip(self.children, other.children)])

    @staticmethod
    def required_model_output_shape(action_space, model_config):
        raise ValueError(
            "MultiActionDistribution's output size depends on its children; take "
            "num_outputs from ModelCatalog.get_action_dist(action_space)."
        )


def flat_action_size(space: gym.Space) -> int:
    """Number of scalars an action of `space` occupies when flattened (Discrete: 1)."""
    if isinstance(space, gym.spaces.Discrete):
        return 1
    if isinstance(space, gym.spaces.Dict):
        return sum(flat_action_size(s) for s in space.spaces.values())
    if isinstance(space, gym.spaces.Tuple):
        return sum(flat_action_size(s) for s in space.spaces)
    return int(np.prod(space.shape))
