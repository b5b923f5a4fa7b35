"""The advantage actor-critic loss as a pure function of per-step tensors.

Mnih et al., "Asynchronous Methods for Deep Reinforcement Learning", ICML 2016 (A3C,
whose synchronous variant is A2C). Per step `t`:

    loss_t = -log pi(a_t | s_t) * A_t + vf_loss_coeff * 0.5 * (V(s_t) - R_t) ** 2
             - entropy_coeff * H[pi(. | s_t)]

averaged over the global batch (`loss_math.global_mean`). RLlib's classic A3C summed
these terms over the batch; tfrl averages them, so that the learning rate does not
depend on the batch size and microbatch gradients average to the whole batch's.
"""

from typing import Dict, Optional, Tuple, Union

import tensorflow as tf

from tfrl.algorithms.loss_math import (check_step_tensors, explained_variance, global_mean,
                                       local_mean)


def a2c_loss(
    logp_t: tf.Tensor,
    advantages_t: tf.Tensor,
    values_t: tf.Tensor,
    value_targets_t: tf.Tensor,
    entropy_t: tf.Tensor,
    *,
    vf_loss_coeff: float,
    entropy_coeff: Union[float, tf.Tensor, tf.Variable],
    mask: Optional[tf.Tensor] = None,
) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """The actor-critic loss (see the module docstring) and its statistics.

    Args:
        logp_t: `log pi(a_t | s_t)` of the taken actions, `[B]` or `[B, T]`.
        advantages_t: Advantage estimates `A_t`, like `logp_t`.
        values_t: `V(s_t)` of the current value function, like `logp_t`.
        value_targets_t: Value targets `R_t`, like `logp_t`.
        entropy_t: `H[pi(. | s_t)]`, like `logp_t`.
        vf_loss_coeff: Weight of the value loss.
        entropy_coeff: Weight of the entropy bonus (a float or a scalar tensor/variable).
        mask: `[B, T]` bool, True at real (not padded) steps; None: all steps count.

    Returns:
        `(loss, stats)`: `loss` this replica's share of the global-batch mean (the mean
        itself on one device); `stats` means over this replica's steps:
        `policy_loss`, `vf_loss` (`0.5 * (V - R) ** 2`), `entropy`, `vf_explained_var`.

    Raises:
        TypeError, ValueError: For non-float tensors, ranks other than 1 or 2, shapes
            that disagree or a non-bool mask (see `loss_math.check_step_tensors`).
    """
    logp_t, advantages_t, values_t, value_targets_t, entropy_t = check_step_tensors(
        "a2c_loss", {
            "logp_t": logp_t, "advantages_t": advantages_t, "values_t": values_t,
            "value_targets_t": value_targets_t, "entropy_t": entropy_t}, mask)
    pg_t = logp_t * advantages_t
    vf_t = 0.5 * tf.square(values_t - value_targets_t)
    stats = {
        "policy_loss": -local_mean(pg_t, mask),
        "vf_loss": local_mean(vf_t, mask),
        "entropy": local_mean(entropy_t, mask),
        "vf_explained_var": explained_variance(value_targets_t, values_t, mask),
    }
    loss = (-global_mean(pg_t, mask) + vf_loss_coeff * global_mean(vf_t, mask)
            - entropy_coeff * global_mean(entropy_t, mask))
    return loss, stats
