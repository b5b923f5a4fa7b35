"""The action distribution base class: the interface every distribution answers."""

from typing import Any, Optional

import gymnasium as gym
import tensorflow as tf


class TFActionDistribution:
    """Base class: a distribution over actions parameterized by model outputs.

    Subclasses compute their formulas with TensorFlow ops; `to_tfp()` gives the
    equivalent tensorflow-probability distribution (imported only then).

    Args:
        inputs: The model's `dist_inputs`, `[..., num_outputs]`.
        model: The model that produced `inputs` (may be None).
    """

    # True if an action is one integer per row of inputs (a categorical's `[...]`).
    scalar_action = False

    def __init__(self, inputs: Any, model: Any = None):
        self.inputs = tf.convert_to_tensor(inputs)
        self.model = model
        self._last_sample = None
        self._last_logp = None

    def sample(self, seed: Optional[tf.Tensor] = None) -> Any:
        """Draws an action and remembers its logp.

        Args:
            seed: None: TF's stateful random ops (seeded by `tf.random.set_seed`); else a
                shape-[2] int seed of TF's stateless random ops (the same seed, the same
                action), e.g. `tf.random.Generator.make_seeds(1)[:, 0]`, whose generator
                state can be saved and restored.
        """
        self._last_sample, self._last_logp = self._sample_with_logp(seed)
        return self._last_sample

    def sampled_action_logp(self) -> tf.Tensor:
        """The log-likelihood of the action drawn by the last `sample()` call."""
        if self._last_logp is None:
            raise ValueError(
                "sampled_action_logp() needs a preceding sample() call on this "
                "distribution; none was made. Call dist.sample() first."
            )
        return self._last_logp

    def _sample_with_logp(self, seed: Optional[tf.Tensor] = None):
        # Without a seed, subclasses whose `_sample()` takes none work too.
        action = self._sample() if seed is None else self._sample(seed)
        return action, self.logp(action)

    def _sample(self, seed: Optional[tf.Tensor] = None) -> Any:
        """An action drawn with stateful ops (`seed` None) or stateless ones."""
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

    def to_tfp(self) -> Any:
        """The equivalent `tfp.distributions.Distribution` (needs tensorflow-probability).

        Its batch shape is the inputs' leading axes; its `log_prob`, `entropy` and
        `kl_divergence` agree with this distribution's `logp`, `entropy` and `kl`.

        Raises:
            ImportError: If tensorflow-probability is not installed.
        """
        raise NotImplementedError(f"{type(self).__name__} has no to_tfp().")

    @staticmethod
    def required_model_output_shape(action_space: gym.Space, model_config: Optional[dict]) -> int:
        """Number of model outputs this distribution needs for `action_space`."""
        raise NotImplementedError


def check_same_type(dist: TFActionDistribution, other: Any) -> None:
    if not isinstance(other, type(dist)):
        raise TypeError(
            f"kl() needs two distributions of the same type. Received: other of type "
            f"{type(other).__name__}. Expected {type(dist).__name__}."
        )


def import_tfp() -> Any:
    """`tensorflow_probability.python` (distributions and bijectors), imported on demand.

    Raises:
        ImportError: If tensorflow-probability (or the tf-keras it needs) is missing.
    """
    try:
        # Deferred: TFP costs ~45 MB and ~0.45 s at start-up (it loads tf_keras) and
        # only `to_tfp()` needs it.
        from tensorflow_probability import python as tfp_python
    except ImportError as err:
        raise ImportError(
            f"to_tfp() needs tensorflow-probability, which failed to import ({err}). "
            "Install it with: pip install 'tfrl[tfp]'."
        ) from err
    return tfp_python
