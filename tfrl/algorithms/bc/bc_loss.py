"""Behavior cloning's loss: `-mean(log pi(a_t | s_t))`, MARWIL's loss with `beta = 0`
(`tfrl.algorithms.marwil.marwil_loss`)."""

from typing import Dict, Optional, Tuple

import tensorflow as tf

from tfrl.algorithms.marwil.marwil_loss import marwil_loss


def bc_loss(logp_t: tf.Tensor, *, mask: Optional[tf.Tensor] = None
            ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """`-mean(logp_t)` and `{"policy_loss": ...}` (see `marwil_loss` with beta 0)."""
    zeros = tf.zeros_like(logp_t)
    loss, stats = marwil_loss(logp_t, zeros, zeros, beta=0.0, vf_coeff=0.0,
                              moving_average_sqd_adv_norm=1.0, mask=mask)
    return loss, {"policy_loss": stats["policy_loss"]}
