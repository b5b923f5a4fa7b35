"""NoisyLayer: a dense layer with learned factorised Gaussian noise on its weights.

Fortunato et al., "Noisy Networks for Exploration", ICLR 2018, section 3 (factorised
Gaussian noise). For `p` inputs and `q` outputs:

    y = (mu_w + sigma_w * eps_w) x + (mu_b + sigma_b * eps_b)
    eps_w = f(eps_in) f(eps_out)^T  [p, q],  eps_b = f(eps_out)  [q],  f(x) = sign(x) sqrt|x|

with `eps_in ~ N(0, I_p)`, `eps_out ~ N(0, I_q)` drawn afresh for every forward pass that
is given a `noise_seed`; without one the layer is the dense layer of its means (`mu`),
as RLlib 2.x's noisy layers in inference mode. Initialisation as in the paper:
`mu ~ U[-1/sqrt(p), 1/sqrt(p)]`, `sigma = sigma0 / sqrt(p)` (weights and bias).

The noise is stateless: `noise_seed` (a `[2]` int tensor) decides it, so a seeded run
repeats, the replicas of a `MirroredStrategy` given one seed draw the same noise, and a
restored policy draws what the original would have. A model with several noisy layers
passes each its own seed (`tf.random.experimental.stateless_fold_in`).

Example:
    >>> import numpy as np
    >>> layer = NoisyLayer("q", 3, sigma0=0.5, activation=None)
    >>> x = np.ones((2, 4), np.float32)
    >>> mean = layer(x)  # no seed: the means' dense layer
    >>> noisy = layer(x, noise_seed=tf.constant([1, 2]))
    >>> bool(np.allclose(noisy, layer(x, noise_seed=tf.constant([1, 2])))), mean.shape
    (True, TensorShape([2, 3]))
"""

from typing import Any, Optional

import keras
import numpy as np
import tensorflow as tf

from tfrl.models.utils import get_activation_fn


@keras.saving.register_keras_serializable(package="tfrl")
class NoisyLayer(keras.layers.Layer):
    """A factorised-Gaussian noisy dense layer (see the module docstring).

    Args:
        prefix: Name prefix of the layer's variables (RLlib's signature); the layer is
            named `prefix` too.
        out_size: Number of outputs `q`.
        sigma0: The noise scale at initialisation (`sigma = sigma0 / sqrt(p)`), >= 0.
        activation: An RLlib activation name ("relu", "tanh", ..., None for linear).

    Call:
        `layer(inputs [B, p], noise_seed=None) -> [B, q]`; `noise_seed` a `[2]` int
        tensor (noise on), or None (the means).
    """

    def __init__(self, prefix: str, out_size: int, sigma0: float,
                 activation: Optional[str] = "relu", **kwargs: Any):
        kwargs.setdefault("name", prefix)
        super().__init__(**kwargs)
        if not isinstance(out_size, (int, np.integer)) or isinstance(out_size, bool) \
                or out_size < 1:
            raise ValueError(f"NoisyLayer: out_size must be a positive int; received "
                             f"{out_size!r}.")
        if not sigma0 >= 0:
            raise ValueError(f"NoisyLayer: sigma0 must be >= 0; received {sigma0!r}.")
        self.prefix = prefix
        self.out_size = int(out_size)
        self.sigma0 = float(sigma0)
        self.activation_name = activation
        self.activation = keras.activations.get(get_activation_fn(activation))

    def build(self, input_shape):
        in_size = int(input_shape[-1])
        bound = 1.0 / np.sqrt(in_size)
        uniform = keras.initializers.RandomUniform(-bound, bound)
        sigma = keras.initializers.Constant(self.sigma0 / np.sqrt(in_size))
        self.mu_w = self.add_weight(shape=(in_size, self.out_size), initializer=uniform,
                                    name=f"{self.prefix}_mu_w")
        self.mu_b = self.add_weight(shape=(self.out_size,), initializer=uniform,
                                    name=f"{self.prefix}_mu_b")
        self.sigma_w = self.add_weight(shape=(in_size, self.out_size), initializer=sigma,
                                       name=f"{self.prefix}_sigma_w")
        self.sigma_b = self.add_weight(shape=(self.out_size,), initializer=sigma,
                                       name=f"{self.prefix}_sigma_b")

    def noise(self, in_size: int, noise_seed: tf.Tensor):
        """`(eps_w [p, q], eps_b [q])`, the factorised noise `noise_seed` decides."""
        seed = tf.cast(noise_seed, tf.int32)
        eps_in = _scaled(tf.random.stateless_normal(
            [in_size], tf.random.experimental.stateless_fold_in(seed, 0)))  # [p]
        eps_out = _scaled(tf.random.stateless_normal(
            [self.out_size], tf.random.experimental.stateless_fold_in(seed, 1)))  # [q]
        return eps_in[:, None] * eps_out[None, :], eps_out

    def call(self, inputs, noise_seed=None):
        inputs = tf.convert_to_tensor(inputs)
        kernel, bias = tf.convert_to_tensor(self.mu_w), tf.convert_to_tensor(self.mu_b)
        if noise_seed is not None:
            eps_w, eps_b = self.noise(self.mu_w.shape[0], noise_seed)
            kernel = kernel + self.sigma_w * eps_w  # [p, q]
            bias = bias + self.sigma_b * eps_b  # [q]
        out = tf.matmul(inputs, kernel) + bias  # [B, q]
        return out if self.activation is None else self.activation(out)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.out_size,)

    def get_config(self):
        config = super().get_config()
        config.update({"prefix": self.prefix, "out_size": self.out_size,
                       "sigma0": self.sigma0, "activation": self.activation_name})
        return config


def _scaled(x: tf.Tensor) -> tf.Tensor:
    """`f(x) = sign(x) sqrt(|x|)`."""
    return tf.sign(x) * tf.sqrt(tf.abs(x))
