"""RLlib's numeric constants and small numpy helpers (`ray.rllib.utils.numpy`).

Example:
    >>> softmax([0.0, 0.0]).tolist()
    [0.5, 0.5]
"""

from collections import OrderedDict
from types import MappingProxyType
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


def make_action_immutable(obj: Any) -> Any:
    """Return `obj` read-only: a numpy array gets `writeable=False` (in place), a dict
    becomes a `types.MappingProxyType`; anything else comes back unchanged.

    Apply it over a nested action with `tree.traverse(make_action_immutable, action,
    top_down=False)`, as RLlib does before handing actions to the env.

    Example:
        >>> a = make_action_immutable(np.zeros(2))
        >>> a.flags["WRITEABLE"]
        False
    """
    if isinstance(obj, np.ndarray):
        obj.setflags(write=False)
        return obj
    if isinstance(obj, OrderedDict):
        return MappingProxyType(dict(obj))
    if isinstance(obj, dict):
        return MappingProxyType(obj)
    return obj
