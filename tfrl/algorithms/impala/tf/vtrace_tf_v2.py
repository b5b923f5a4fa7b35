"""RLlib's `impala.tf.vtrace_tf_v2` API on tfrl's one V-trace implementation.

`make_time_major` lays `[B * T, ...]` rows (B trajectories of T steps, one after the
other) out as `[T, B, ...]`; `vtrace_tf2` computes `(vs, pg_advantages)` from the
target and behaviour log-probabilities (`tfrl.algorithms.impala.vtrace.vtrace`).

Example:
    >>> import numpy as np
    >>> make_time_major(np.arange(6), trajectory_len=3).numpy().tolist()
    [[0, 3], [1, 4], [2, 5]]
"""

from typing import Any, Optional, Tuple

import tensorflow as tf

from tfrl.algorithms.impala.vtrace import Threshold, vtrace

__all__ = ["make_time_major", "vtrace_tf2"]


def make_time_major(tensor: Any, *, trajectory_len: Optional[int] = None,
                    recurrent_seq_len: Optional[Any] = None) -> tf.Tensor:
    """`[B * T, ...]` batch-major rows as `[T, B, ...]`.

    Args:
        tensor: The rows, trajectory after trajectory.
        trajectory_len: `T`, the steps of each trajectory; or
        recurrent_seq_len: The `[B]` sequence lengths (`T` = rows / B).

    Raises:
        ValueError: If neither (or both) of `trajectory_len` and `recurrent_seq_len` is
            given.
    """
    if (trajectory_len is None) == (recurrent_seq_len is None):
        raise ValueError("make_time_major() needs exactly one of trajectory_len and "
                         f"recurrent_seq_len; received trajectory_len={trajectory_len!r}, "
                         f"recurrent_seq_len={recurrent_seq_len!r}.")
    tensor = tf.convert_to_tensor(tensor)
    rows = tf.shape(tensor)[0]
    if trajectory_len is not None:
        steps = tf.constant(int(trajectory_len))
        num = rows // steps
    else:
        num = tf.size(recurrent_seq_len)
        steps = rows // num
    batch_major = tf.reshape(tensor, tf.concat([[num, steps], tf.shape(tensor)[1:]], 0))
    return tf.transpose(batch_major, [1, 0] + list(range(2, tensor.shape.rank + 1)))


def vtrace_tf2(
    target_action_log_probs: Any,
    behaviour_action_log_probs: Any,
    discounts: Any,
    rewards: Any,
    values: Any,
    bootstrap_value: Any,
    clip_rho_threshold: Threshold = 1.0,
    clip_pg_rho_threshold: Threshold = 1.0,
) -> Tuple[tf.Tensor, tf.Tensor]:
    """V-trace `(vs, pg_advantages)`, `[T, B]` each, from time-major `[T, B]` inputs
    (float32) and `bootstrap_value` `[B]` (c_t clipped at 1)."""
    log_rhos = (tf.cast(target_action_log_probs, tf.float32)
                - tf.cast(behaviour_action_log_probs, tf.float32))
    out = vtrace(log_rhos, tf.cast(discounts, tf.float32), tf.cast(rewards, tf.float32),
                 tf.cast(values, tf.float32), tf.cast(bootstrap_value, tf.float32),
                 clip_rho_threshold=clip_rho_threshold,
                 clip_pg_rho_threshold=clip_pg_rho_threshold, clip_c_threshold=1.0)
    return out.vs, out.pg_advantages
