"""RLlib's numeric constants and small numpy helpers (`ray.rllib.utils.numpy`).

Example:
    >>> softmax([0.0, 0.0]).tolist()
    [0.5, 0.5]
"""

from collections import OrderedDict
from types import MappingProxyType
from typing import Any, Optional

import gymnasium as gym
import numpy as np
import tree

from tfrl.utils.spaces.space_utils import get_base_struct_from_space, one_hot as one_hot_space

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


def flatten_inputs_to_1d_tensor(inputs: Any, spaces_struct: Any = None,
                                time_axis: bool = False) -> np.ndarray:
    """Flattens a nested batch into one `[B, n]` array (`[B, T, n]` with `time_axis`),
    as RLlib's `flatten_inputs_to_1d_tensor`: the leaves in `tree.flatten` order (dict
    keys sorted), Discrete and MultiDiscrete leaves one-hot encoded (float32) when
    `spaces_struct` names their spaces, every other leaf flattened to `[B, -1]`.

    Args:
        inputs: Nested dicts/tuples of arrays with a batch axis (and a time axis).
        spaces_struct: The matching structure of spaces (or a gymnasium Dict/Tuple
            space), or None (no one-hot encoding).
        time_axis: Whether the leaves are `[B, T, ...]`.

    Raises:
        ValueError: If `spaces_struct` has another number of leaves than `inputs`.

    Example:
        >>> flatten_inputs_to_1d_tensor({"a": np.array([1, 0]), "b": np.ones((2, 2))},
        ...                             {"a": gym.spaces.Discrete(2), "b": None}).tolist()
        [[0.0, 1.0, 1.0, 1.0], [1.0, 0.0, 1.0, 1.0]]
    """
    flat_inputs = [np.asarray(x) for x in tree.flatten(inputs)]
    if isinstance(spaces_struct, (gym.spaces.Dict, gym.spaces.Tuple)):
        spaces_struct = get_base_struct_from_space(spaces_struct)
    flat_spaces = ([None] * len(flat_inputs) if spaces_struct is None
                   else tree.flatten(spaces_struct))
    if len(flat_spaces) != len(flat_inputs):
        raise ValueError(
            f"flatten_inputs_to_1d_tensor: inputs have {len(flat_inputs)} leaves but "
            f"spaces_struct has {len(flat_spaces)}; pass the spaces of the same structure.")
    if not flat_inputs:
        raise ValueError("flatten_inputs_to_1d_tensor: inputs have no leaves.")
    batch = flat_inputs[0].shape[0]
    steps = flat_inputs[0].shape[1] if time_axis else 1
    rows = batch * steps
    out = []
    for x, space in zip(flat_inputs, flat_spaces):
        x = x.reshape((rows,) + x.shape[2 if time_axis else 1:])
        if isinstance(space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)):
            out.append(np.asarray(one_hot_space(x, space), np.float32).reshape(rows, -1))
        else:
            out.append(x.reshape(rows, -1))
    merged = np.concatenate(out, axis=-1)
    return merged.reshape(batch, steps, -1) if time_axis else merged
