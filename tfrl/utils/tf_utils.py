"""RLlib's TensorFlow helpers (`ray.rllib.utils.tf_utils`): one-hot encoding by space,
flattening nested inputs into one tensor, and `get_tf_eager_cls_if_necessary`. Importing
this module imports TensorFlow.

Example:
    >>> import gymnasium as gym
    >>> one_hot(tf.constant([[2, 0]]), gym.spaces.MultiDiscrete([3, 2])).numpy().tolist()
    [[0.0, 0.0, 1.0, 1.0, 0.0]]
"""

from typing import Any

import gymnasium as gym
import numpy as np
import tensorflow as tf
import tree

from tfrl.utils.spaces.space_utils import get_base_struct_from_space


def one_hot(x: Any, space: gym.Space) -> tf.Tensor:
    """`x` one-hot encoded (float32) for a Discrete space (`[..., n]`) or a MultiDiscrete
    space (the concatenation of one one-hot per component; a multi-dimensional `nvec`
    takes `x` flattened to `[B, prod(nvec.shape)]`).

    Raises:
        ValueError: For any other space.
    """
    x = tf.convert_to_tensor(x)
    if isinstance(space, gym.spaces.Discrete):
        return tf.one_hot(tf.cast(x, tf.int32) - int(space.start), int(space.n), dtype=tf.float32)
    if isinstance(space, gym.spaces.MultiDiscrete):
        nvec = np.ravel(space.nvec)
        starts = np.ravel(getattr(space, "start", np.zeros_like(space.nvec)))
        x = tf.reshape(tf.cast(x, tf.int32), (-1, len(nvec)))
        return tf.concat([tf.one_hot(x[:, i] - int(starts[i]), int(n), dtype=tf.float32)
                          for i, n in enumerate(nvec)], axis=-1)
    raise ValueError(f"one_hot: unsupported space {space}; expected Discrete or MultiDiscrete.")


def flatten_inputs_to_1d_tensor(inputs: Any, spaces_struct: Any = None,
                                time_axis: bool = False) -> tf.Tensor:
    """The TensorFlow form of `tfrl.utils.numpy.flatten_inputs_to_1d_tensor`: one float32
    `[B, n]` tensor (`[B, T, n]` with `time_axis`), discrete leaves one-hot encoded.

    Raises:
        ValueError: If `spaces_struct` has another number of leaves than `inputs`.
    """
    flat_inputs = [tf.convert_to_tensor(x) for x in tree.flatten(inputs)]
    if isinstance(spaces_struct, (gym.spaces.Dict, gym.spaces.Tuple)):
        spaces_struct = get_base_struct_from_space(spaces_struct)
    flat_spaces = ([None] * len(flat_inputs) if spaces_struct is None
                   else tree.flatten(spaces_struct))
    if len(flat_spaces) != len(flat_inputs) or not flat_inputs:
        raise ValueError(
            f"flatten_inputs_to_1d_tensor: inputs have {len(flat_inputs)} leaves but "
            f"spaces_struct has {len(flat_spaces)}; pass the spaces of the same structure.")
    shape = tf.shape(flat_inputs[0])
    batch = shape[0]
    rows = batch * shape[1] if time_axis else batch
    out = []
    for x, space in zip(flat_inputs, flat_spaces):
        x = tf.reshape(x, tf.concat([[rows], tf.shape(x)[2 if time_axis else 1:]], axis=0))
        if isinstance(space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)):
            out.append(tf.reshape(one_hot(x, space), (rows, -1)))
        else:
            out.append(tf.reshape(tf.cast(x, tf.float32), (rows, -1)))
    merged = tf.concat(out, axis=-1)
    return tf.reshape(merged, (batch, shape[1], -1)) if time_axis else merged


def get_tf_eager_cls_if_necessary(orig_cls: type, config: Any) -> type:
    """RLlib's switch to the eager (TF2) version of a TF1 policy class: tfrl's TF policies
    are TF2 policies already, so `orig_cls` itself."""
    del config
    return orig_cls
