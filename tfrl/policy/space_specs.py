"""Tensor specs of batched space items, and the checks that guard compiled functions.

A compiled function has a fixed input signature; these helpers derive it from a
gymnasium space (`Box` -> `[None, *shape]` of the space's dtype, `Discrete` -> `[None]`
int64, `MultiDiscrete` -> `[None, n]` int64, `MultiBinary` -> `[None, *shape]` int8,
`Dict`/`Tuple` -> nested) and bring numpy input into that signature, or say clearly why
it does not fit.

Example:
    >>> import gymnasium as gym
    >>> batch_spec(gym.spaces.Box(-1.0, 1.0, (3,)))
    TensorSpec(shape=(None, 3), dtype=tf.float32, name=None)
    >>> to_batch(gym.spaces.Discrete(2), [0, 1], "obs_batch").dtype
    dtype('int64')
"""

from typing import Any, Optional

import gymnasium as gym
import numpy as np
import tensorflow as tf
import tree

from tfrl.utils.spaces.space_utils import space_structure  # noqa: F401  (used here, and re-exported)


def _leaf_dtype_shape(space: gym.Space):
    if isinstance(space, gym.spaces.Discrete):
        return np.dtype(np.int64), ()
    if isinstance(space, gym.spaces.MultiDiscrete):
        return np.dtype(np.int64), tuple(space.shape)
    if isinstance(space, (gym.spaces.Box, gym.spaces.MultiBinary)):
        return np.dtype(space.dtype), tuple(space.shape)
    raise TypeError(
        f"tfrl policies take Box, Discrete, MultiDiscrete, MultiBinary, Dict and Tuple spaces; "
        f"received {space!r}. Preprocess other spaces (e.g. with a Preprocessor) first."
    )


def batch_spec(space: gym.Space, extra_dims: tuple = (None,)) -> Any:
    """The (nested) `tf.TensorSpec` of a batch of `space` items, `[*extra_dims, ...]`."""
    def leaf(s):
        dtype, shape = _leaf_dtype_shape(s)
        return tf.TensorSpec(tuple(extra_dims) + shape, tf.as_dtype(dtype))
    return tree.map_structure(leaf, space_structure(space))


def zeros_batch(space: gym.Space, batch_size: int) -> Any:
    """A (nested) numpy batch of zeros of `space`'s items."""
    def leaf(s):
        dtype, shape = _leaf_dtype_shape(s)
        return np.zeros((batch_size,) + shape, dtype)
    return tree.map_structure(leaf, space_structure(space))


def batch_shape_str(shape: tuple) -> str:
    """`[B, 3, 4]` for item shape `(3, 4)`; `[B]` for scalars."""
    return "[" + ", ".join(["B"] + [str(d) for d in shape]) + "]"


def _leaf_to_batch(space: gym.Space, value: Any, what: str, path: str,
                   keep_tensors: bool = False) -> Any:
    dtype, shape = _leaf_dtype_shape(space)
    tensor = keep_tensors and isinstance(value, tf.Tensor)
    array = value if tensor else np.asarray(value)
    array_dtype = np.dtype(value.dtype.as_numpy_dtype) if tensor else array.dtype
    array_shape = tuple(array.shape)
    name = f"{what}{path}"
    if array_dtype == object or array_dtype.kind not in "biuf":
        raise TypeError(
            f"{name} must be numeric (a batch of {space} items); received dtype {array_dtype}."
        )
    if array_shape[1:] != shape or len(array_shape) != len(shape) + 1:
        hint = (" It looks like one unbatched item; add a batch axis (or use "
                "compute_single_action)." if array_shape == shape else "")
        raise ValueError(
            f"{name} must have shape {batch_shape_str(shape)} for items of {space}; received "
            f"shape {array_shape}.{hint}"
        )
    if not np.can_cast(array_dtype, dtype, "same_kind"):
        raise TypeError(
            f"{name} has dtype {array_dtype}, which does not convert to {space}'s dtype "
            f"{dtype} without changing its kind; cast it first."
        )
    if tensor:
        return value if array_dtype == dtype else tf.cast(value, dtype)
    return array.astype(dtype, copy=False)


def to_batch(space: gym.Space, value: Any, what: str, keep_tensors: bool = False) -> Any:
    """`value` as a (nested) numpy batch matching `batch_spec(space)`.

    Args:
        space: The space of one item.
        value: A batch of items (nested like the space for Dict and Tuple spaces).
        what: Name of the argument, for error messages.
        keep_tensors: Check `tf.Tensor` leaves and return them as tensors (cast if
            needed) instead of numpy: a tf.data pipeline's batches stay in TF.

    Raises:
        TypeError: Non-numeric data or a dtype of another kind (float for int).
        ValueError: A wrong shape or nesting.
    """
    structure = space_structure(space)
    if isinstance(structure, (dict, tuple)):
        try:
            tree.assert_same_structure(structure, value, check_types=False)
        except (TypeError, ValueError) as e:
            raise ValueError(
                f"{what} must be nested like {space}; received {type(value).__name__}"
                f"{' with keys ' + str(sorted(value)) if isinstance(value, dict) else ''} ({e})."
            ) from None
    paths = tree.flatten_with_path(structure)
    leaves = tree.flatten_up_to(structure, value) if paths[0][0] else [value]
    converted = [
        _leaf_to_batch(s, v, what, "".join(f"[{p!r}]" for p in path), keep_tensors)
        for (path, s), v in zip(paths, leaves)
    ]
    return tree.unflatten_as(structure, converted)


def action_error(space: gym.Space, actions: Any) -> Optional[str]:
    """Why a batch of actions is not in `space` (None if it is)."""
    structure = space_structure(space)
    paths = tree.flatten_with_path(structure)
    try:
        leaves = tree.flatten_up_to(structure, actions) if paths[0][0] else [actions]
    except (TypeError, ValueError) as e:
        return f"actions are not nested like {space} ({e})"
    for (path, leaf_space), value in zip(paths, leaves):
        where = "".join(f"[{p!r}]" for p in path)
        array = np.asarray(value)
        if isinstance(leaf_space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)):
            low = leaf_space.start
            size = leaf_space.n if isinstance(leaf_space, gym.spaces.Discrete) else leaf_space.nvec
            high = leaf_space.start + size - 1
            if array.dtype.kind not in "biu":
                return f"actions{where} must be integers for {leaf_space}; received dtype {array.dtype}"
            bad = (array < low) | (array > high)
            if bad.any():
                rows = np.argwhere(bad.reshape(len(array), -1).any(axis=1))[:, 0]
                return (f"actions{where} must lie in [{np.min(low)}, {np.max(high)}] for "
                        f"{leaf_space}; rows {rows[:5].tolist()} hold "
                        f"{array[rows[:5]].tolist()}")
        dtype, shape = _leaf_dtype_shape(leaf_space)
        if array.shape[1:] != shape:
            return (f"actions{where} must have shape {batch_shape_str(shape)} for "
                    f"{leaf_space}; received shape {array.shape}")
    return None
