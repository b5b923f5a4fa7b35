"""SGD helpers (RLlib's `ray.rllib.utils.sgd`): `standardized`.

Minibatch SGD itself is not here: `TFPolicy.learn_on_batch(samples, num_sgd_iter=...,
sgd_minibatch_size=...)` runs every epoch and minibatch in one compiled call (see
`tfrl.policy.tf_train_step`), and every caller goes through it.

Example:
    >>> standardized(np.array([1.0, 3.0])).tolist()
    [-1.0, 1.0]
"""

import numpy as np


def standardized(values: np.ndarray) -> np.ndarray:
    """`(x - mean(x)) / max(1e-4, std(x))` with the population std."""
    values = np.asarray(values)
    if values.size == 0:
        return values
    centered = values - values.mean()
    flat = centered.ravel()
    std = float(np.sqrt(np.dot(flat, flat) / flat.size))
    return centered / max(1e-4, std)
