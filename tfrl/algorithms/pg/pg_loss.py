"""The policy-gradient (REINFORCE) loss as a pure function of per-step tensors.

Williams, "Simple statistical gradient-following algorithms for connectionist
reinforcement learning", Machine Learning 8, 1992: the gradient of
`-mean(log pi(a_t | s_t) * A_t)` is the policy-gradient estimate, with `A_t` the
return-to-go (or any advantage estimate). The mean is over the global batch
(`loss_math.global_mean`).
"""

from typing import Dict, Optional, Tuple

import tensorflow as tf

from tfrl.algorithms.loss_math import check_step_tensors, global_mean, local_mean


def pg_loss(logp_t: tf.Tensor, advantages_t: tf.Tensor, *,
            mask: Optional[tf.Tensor] = None) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """`-mean(logp_t * advantages_t)` and its statistics.

    Args:
        logp_t: `log pi(a_t | s_t)` of the taken actions, `[B]` or `[B, T]`.
        advantages_t: `A_t` (returns-to-go for REINFORCE), like `logp_t`.
        mask: `[B, T]` bool, True at real (not padded) steps; None: all steps count.

    Returns:
        `(loss, stats)`: `loss` this replica's share of the global-batch mean (the mean
        itself on one device); `stats["policy_loss"]` the same mean over this
        replica's steps.

    Raises:
        TypeError, ValueError: For non-float tensors, ranks other than 1 or 2, shapes
            that disagree or a non-bool mask (see `loss_math.check_step_tensors`).
    """
    logp_t, advantages_t = check_step_tensors(
        "pg_loss", {"logp_t": logp_t, "advantages_t": advantages_t}, mask)
    pg_t = logp_t * advantages_t
    return -global_mean(pg_t, mask), {"policy_loss": -local_mean(pg_t, mask)}
