"""The base class of tfrl's Keras models and the pieces the built-in models share.

The call contract (what a policy relies on):

- feed-forward: `model(obs, training=False) -> (dist_inputs, value)`, obs
  `[B, *obs_shape]` (preprocessed), `dist_inputs` `[B, num_outputs]`, `value` `[B]`.
- recurrent (`is_recurrent=True`): `model((obs, state_in, seq_lens)) ->
  (dist_inputs, value, state_out)`, obs `[B, T, *obs_shape]`, state lists of `[B, cell]`,
  `seq_lens` `[B]` int32; `dist_inputs` `[B, T, num_outputs]`, `value` `[B, T]`.
"""

from typing import Any, List, Optional, Sequence

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf

from tfrl.models.tf.misc import normc_initializer
from tfrl.models.utils import get_activation_fn


class TFModel(keras.Model):
    """A Keras 3 model over preprocessed observations with tfrl's call contract.

    Built-in models take these constructor arguments unchanged and create their layers
    in `_build_layers()`, which `__init__` calls once the arguments are stored.

    Args:
        obs_space: The observation space (raw or preprocessed; the model consumes the
            preprocessed shape).
        action_space: The action space.
        num_outputs: Size of `dist_inputs` (from `ModelCatalog.get_action_dist`).
        model_config: The model config (merged with `MODEL_DEFAULTS`).
        name: The Keras model name (default: the class's `default_name`).
    """

    is_recurrent: bool = False
    default_name: str = "model"

    def __init__(
        self,
        obs_space: gym.Space,
        action_space: Optional[gym.Space],
        num_outputs: int,
        model_config: dict,
        name: Optional[str] = None,
    ):
        super().__init__(name=self.default_name if name is None else name)
        self.obs_space = obs_space
        self.action_space = action_space
        self.num_outputs = int(num_outputs)
        self.model_config = dict(model_config)
        self._build_layers()

    def _build_layers(self) -> None:
        """Creates the model's layers from the stored arguments (none in the base class)."""

    def get_initial_state(self, batch_size: int = 1) -> List[np.ndarray]:
        """The recurrent state at the start of an episode (`[]` if feed-forward)."""
        return []


def dense_stack(hiddens: Sequence[int], activation: Any, prefix: str,
                initializer: Any = None, initializer_config: Optional[dict] = None
                ) -> List[keras.layers.Layer]:
    """Dense layers, one per entry of `hiddens`, with normc(1.0) kernels (RLlib's default)
    or, given `initializer` (a Keras initializer name, e.g. "orthogonal") and its
    `initializer_config` kwargs (e.g. `{"gain": 1.41}`), that initializer."""
    act = get_activation_fn(activation)
    return [
        keras.layers.Dense(
            int(size), activation=act,
            kernel_initializer=make_initializer(initializer, initializer_config),
            name=f"{prefix}_{i + 1}",
        )
        for i, size in enumerate(hiddens)
    ]


def make_initializer(initializer: Any = None, config: Optional[dict] = None,
                     key: str = "fcnet_weights_initializer", default: Any = None) -> Any:
    """`default` (None: normc(1.0)) for None, else `keras.initializers.get` of the name
    with `config`; `key` names the model config key in error messages."""
    if initializer is None:
        if config:
            raise ValueError(
                "A weights initializer config needs an initializer. Received: "
                f"{key}=None, {key}_config={config!r}. Set {key} too "
                "(e.g. 'orthogonal').")
        return normc_initializer(1.0) if default is None else default
    if not isinstance(initializer, str):
        raise TypeError(
            f"{key} must be a Keras initializer name such as "
            f"'orthogonal' or 'glorot_uniform'. Received: {initializer!r}.")
    try:
        return keras.initializers.get({"class_name": initializer, "config": dict(config or {})})
    except (ValueError, TypeError) as e:
        raise ValueError(
            f"Unknown or misconfigured weights initializer {initializer!r} with config "
            f"{config!r}: {e}. Use a keras.initializers name (e.g. 'orthogonal', "
            "'glorot_uniform', 'he_normal') and its constructor arguments.") from None


def apply(layers: Sequence[keras.layers.Layer], x: tf.Tensor) -> tf.Tensor:
    for layer in layers:
        x = layer(x)
    return x


class PolicyHead(keras.layers.Layer):
    """Maps features to `dist_inputs`; with `free_log_std` the log-stds are a variable.

    With `free_log_std`, `num_outputs` must be even: the first half are means (from a
    Dense layer), the second half a trainable log-std vector (initialized to 0),
    broadcast over the leading axes.

    Args:
        num_outputs: Size of the output.
        free_log_std: Whether the second half of the outputs is a free variable.
    """

    def __init__(self, num_outputs: int, free_log_std: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True  # Recurrent features arrive with a [B, T] mask.
        if free_log_std and num_outputs % 2:
            raise ValueError(
                "free_log_std needs an even num_outputs ([mean, log_std] of a Gaussian). "
                f"Received: num_outputs={num_outputs}. Use free_log_std only with "
                "DiagGaussian/SquashedGaussian action distributions."
            )
        self.free_log_std = free_log_std
        n = num_outputs // 2 if free_log_std else num_outputs
        self.dense = keras.layers.Dense(
            n, kernel_initializer=normc_initializer(0.01), name="logits"
        )
        if free_log_std:
            self.log_std = self.add_weight(shape=(n,), initializer="zeros", name="log_std")

    def build(self, input_shape):
        self.dense.build(input_shape)

    def call(self, features):
        out = self.dense(features)  # [..., n]
        if not self.free_log_std:
            return out
        log_std = tf.zeros_like(out) + tf.cast(self.log_std, out.dtype)  # [..., n]
        return tf.concat([out, log_std], axis=-1)


def value_head() -> keras.layers.Dense:
    """The value output: normc(1.0) (SB3's and cleanrl's gain 1; RLlib uses 0.01, which
    leaves value estimates near 0 for many updates while returns are O(10-100))."""
    return keras.layers.Dense(1, kernel_initializer=normc_initializer(1.0), name="value_out")


def to_float(obs: Any) -> tf.Tensor:
    """Casts observations (e.g. uint8 images, float64 arrays) to float32."""
    return tf.cast(obs, tf.float32)
