"""RLlib's path `ray.rllib.policy.rnn_sequencing`.

`chop_into_sequences` and `pad_batch_to_sequences_of_same_size` (numpy) live in the data
layer (`tfrl.data.rnn_sequencing`) and are re-exported here; `add_time_dimension` reshapes
padded TensorFlow inputs into sequences.
"""

from typing import Any

import tensorflow as tf

from tfrl.data.rnn_sequencing import (  # noqa: F401
    chop_into_sequences,
    pad_batch_to_sequences_of_same_size,
)

__all__ = ["add_time_dimension", "chop_into_sequences", "pad_batch_to_sequences_of_same_size"]


def add_time_dimension(padded_inputs: Any, *, seq_lens: Any, framework: str = "tf",
                       time_major: bool = False) -> tf.Tensor:
    """Reshapes padded inputs [B * T, ...] into sequences [B, T, ...] (or [T, B, ...]).

    B is the number of sequences (`len(seq_lens)`), T the padded length
    (`rows // B`).

    Args:
        padded_inputs: Right-zero-padded rows, B sequences of T steps each.
        seq_lens: The sequence lengths (only their number is used).
        framework: "tf" or "tf2" (tfrl runs on TensorFlow).
        time_major: Return [T, B, ...] instead of [B, T, ...].

    Raises:
        ValueError: For another framework.

    Example:
        >>> add_time_dimension(tf.range(6), seq_lens=[2, 3]).shape.as_list()
        [2, 3]
    """
    if framework not in ("tf", "tf2"):
        raise ValueError(
            f"add_time_dimension(framework=...) must be 'tf' or 'tf2' in tfrl; received "
            f"{framework!r}.")
    padded_inputs = tf.convert_to_tensor(padded_inputs)
    batch_size = tf.shape(seq_lens)[0]
    time_size = tf.shape(padded_inputs)[0] // batch_size
    new_shape = tf.concat([[batch_size, time_size], tf.shape(padded_inputs)[1:]], axis=0)
    outputs = tf.reshape(padded_inputs, new_shape)
    if time_major:
        outputs = tf.transpose(outputs, [1, 0] + list(range(2, len(outputs.shape))))
    return outputs
