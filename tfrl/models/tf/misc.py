"""Initializers used by the built-in models."""

import keras


@keras.saving.register_keras_serializable(package="tfrl")
class NormcInitializer(keras.initializers.Initializer):
    """Gaussian weights whose columns are scaled to norm `std` (RLlib's normc).

    Args:
        std: The norm of each output unit's weight vector.
        seed: Optional int seed; by default Keras' global seed generator is used
            (seeded by `keras.utils.set_random_seed`).
    """

    def __init__(self, std: float = 1.0, seed=None):
        self.std = float(std)
        self.seed = seed

    def __call__(self, shape, dtype=None):
        normal = keras.initializers.RandomNormal(stddev=1.0, seed=self.seed)
        w = normal(shape, dtype=dtype or "float32")
        norm = keras.ops.sqrt(keras.ops.sum(keras.ops.square(w), axis=0, keepdims=True))
        return w * (self.std / norm)

    def get_config(self):
        return {"std": self.std, "seed": self.seed}


def normc_initializer(std: float = 1.0) -> NormcInitializer:
    """Returns an initializer whose output columns have norm `std`.

    Example:
        >>> import numpy as np
        >>> w = np.asarray(normc_initializer(0.5)((4, 3)))
        >>> np.allclose(np.linalg.norm(w, axis=0), 0.5)
        True
    """
    return NormcInitializer(std)
