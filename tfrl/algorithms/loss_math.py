"""Reductions and input checks shared by the algorithms' pure losses.

A pure loss takes per-step tensors, `[B]` (rows) or `[B, T]` (padded sequences of a
recurrent policy, with a `[B, T]` bool `mask` of the real steps), and returns
`(loss, stats)`:

- `loss` is this replica's share of the mean over the *global* batch (`global_mean`):
  under a `MirroredStrategy` the optimizer sums the replicas' gradients, so the shares
  sum to the mean over every replica's rows; on one device it is the plain mean.
- `stats` are means over this replica's rows (`local_mean`); the train step averages
  them over replicas and minibatches.
"""

from typing import Dict, List, Optional

import tensorflow as tf

from tfrl.policy.xla import global_mean

__all__ = ["check_step_tensors", "explained_variance", "global_mean", "local_mean"]


def check_step_tensors(fn_name: str, tensors: Dict[str, Optional[tf.Tensor]],
                       mask: Optional[tf.Tensor] = None) -> List[Optional[tf.Tensor]]:
    """`tensors`' values as tensors, in order (None stays None), after checking that they
    are floats of one rank, 1 (`[B]`) or 2 (`[B, T]`), of compatible shapes, and that
    `mask` (if given) is bool of their shape. Checks static shapes only (free inside a
    compiled function).

    Raises:
        TypeError: For a non-float tensor, or a non-bool mask.
        ValueError: For a rank other than 1 or 2, or shapes that disagree.
    """
    converted = [None if value is None else tf.convert_to_tensor(value)
                 for value in tensors.values()]
    first_name, first = None, None
    for name, value in zip(tensors, converted):
        if value is None:
            continue
        if not value.dtype.is_floating:
            raise TypeError(
                f"{fn_name}(): {name} must be a float tensor; received dtype "
                f"{value.dtype.name} (shape {value.shape}). Cast it, e.g. tf.cast(x, tf.float32)."
            )
        if value.shape.rank not in (1, 2):
            raise ValueError(
                f"{fn_name}(): {name} must have rank 1 ([B]) or 2 ([B, T]); received shape "
                f"{value.shape}."
            )
        if first is None:
            first_name, first = name, value
            continue
        if value.dtype != first.dtype or not value.shape.is_compatible_with(first.shape):
            raise ValueError(
                f"{fn_name}(): {name} and {first_name} must have one dtype and shape; received "
                f"{name}: {value.dtype.name} {value.shape}, {first_name}: {first.dtype.name} "
                f"{first.shape}."
            )
    if mask is not None:
        mask = tf.convert_to_tensor(mask)
        if mask.dtype != tf.bool:
            raise TypeError(
                f"{fn_name}(): mask must be a bool tensor (True at real steps); received "
                f"dtype {mask.dtype.name}."
            )
        if first is not None and not mask.shape.is_compatible_with(first.shape):
            raise ValueError(
                f"{fn_name}(): mask must have the shape of {first_name}; received mask "
                f"{mask.shape}, {first_name} {first.shape}."
            )
    return converted


def local_mean(values: tf.Tensor, mask: Optional[tf.Tensor] = None) -> tf.Tensor:
    """Mean of `values` over this replica's rows (where `mask`), for stats."""
    if mask is None:
        return tf.reduce_mean(values)
    mask = tf.cast(mask, values.dtype)
    return tf.reduce_sum(values * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)


def explained_variance(y: tf.Tensor, pred: tf.Tensor,
                       mask: Optional[tf.Tensor] = None) -> tf.Tensor:
    """`max(-1, 1 - Var[y - pred] / Var[y])` over this replica's steps (where `mask`).

    RLlib's `explained_variance`: 1 for a perfect value function, 0 for one no better
    than the mean, clipped at -1.
    """
    if mask is None:
        y, pred = tf.reshape(y, [-1]), tf.reshape(pred, [-1])
        _, y_var = tf.nn.moments(y, axes=[0])
        _, diff_var = tf.nn.moments(y - pred, axes=[0])
    else:
        y_var = _masked_variance(y, mask)
        diff_var = _masked_variance(y - pred, mask)
    return tf.maximum(-1.0, 1.0 - diff_var / tf.maximum(y_var, 1e-8))


def _masked_variance(x: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
    mean = local_mean(x, mask)
    return local_mean(tf.square(x - mean), mask)


def minibatch_standardized(values: tf.Tensor, mask: Optional[tf.Tensor] = None,
                           epsilon: float = 1e-8) -> tf.Tensor:
    """`(x - mean) / (std + epsilon)` over the global minibatch (every replica's rows,
    where `mask`), with the Bessel-corrected std: SB3's per-minibatch advantage
    normalization (`(A - A.mean()) / (A.std() + 1e-8)`). Inside a replica step the sums
    are all-reduced over replicas; on one device they are this batch's. A minibatch of
    one row is returned as it is (SB3 skips it too).

    Example:
        >>> float(minibatch_standardized(tf.constant([1.0, 3.0]))[1])
        0.7071067...
    """
    weights = tf.ones_like(values) if mask is None else tf.cast(mask, values.dtype)
    sums = tf.stack([tf.reduce_sum(weights), tf.reduce_sum(values * weights)])
    ctx = tf.distribute.get_replica_context()
    if ctx is not None:
        sums = ctx.all_reduce(tf.distribute.ReduceOp.SUM, sums)
    count, total = sums[0], sums[1]
    mean = total / tf.maximum(count, 1.0)
    squares = tf.reduce_sum(tf.square(values - mean) * weights)
    if ctx is not None:
        squares = ctx.all_reduce(tf.distribute.ReduceOp.SUM, squares)
    std = tf.sqrt(squares / tf.maximum(count - 1.0, 1.0))
    return tf.where(count > 1.0, (values - mean) / (std + epsilon), values)
