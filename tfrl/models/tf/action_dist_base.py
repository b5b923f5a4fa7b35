"""The action distribution base class: the interface every distribution answers."""

from typing import Any, Optional

import gymnasium as gym
import tensorflow as tf


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


def check_same_type(dist: TFActionDistribution, other: Any) -> None:
    if not isinstance(other, type(dist)):
        raise TypeError(
            f"kl() needs two distributions of the same type. Received: other of type "
            f"{type(other).__name__}. Expected {type(dist).__name__}."
        )
