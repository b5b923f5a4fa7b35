"""RLlib's numeric constants and small numpy helpers (`ray.rllib.utils.numpy`).

Example:
    >>> softmax([0.0, 0.0]).tolist()
    [0.5, 0.5]
"""

from typing import Any, Optional

import numpy as np

# A small positive number: keeps atanh, log and divisions away from their poles.
SMALL_NUMBER = 1e-6
# A large integer (RLlib's extreme input in its distribution stability tests).
LARGE_INTEGER = 100000000
# Bounds of the log standard deviation a network may output for a Gaussian.
MIN_LOG_NN_OUTPUT = -5
MAX_LOG_NN_OUTPUT = 2


def softmax(x: Any, axis: int = -1, epsilon: Optional[float] = None) -> np.ndarray:
    """`exp(x) / sum(exp(x))` along `axis`, floored at `epsilon` (default SMALL_NUMBER)
    so that its log stays finite, as RLlib's `softmax`."""
    x = np.asarray(x)
    exp = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return np.maximum(exp / np.sum(exp, axis=axis, keepdims=True),
                      SMALL_NUMBER if epsilon is None else epsilon)
