"""The MARWIL loss as a pure function of per-step tensors.

Wang et al., "Exponentially Weighted Imitation Learning for Batched Historical Data",
NeurIPS 2018 (MARWIL). With returns `R_t` (discounted, from the logged rewards),
`A_t = R_t - V(s_t)` and `c` the square root of a moving average of `A_t ** 2`:

    policy_loss = -mean(exp(beta * A_t / (1e-8 + c)) * log pi(a_t | s_t))
    vf_loss     = 0.5 * mean(A_t ** 2)
    loss        = policy_loss + vf_coeff * vf_loss

The weights `exp(...)` carry no gradient. With `beta = 0` the weights are 1 and the
value term is dropped: behavior cloning (`-mean(log pi(a_t | s_t))`). The caller keeps
the moving average (`adv_squared_mean` in the stats is this batch's `mean(A_t ** 2)`).
"""

from typing import Dict, Optional, Tuple, Union

import tensorflow as tf

from tfrl.algorithms.loss_math import (check_step_tensors, explained_variance, global_mean,
                                       local_mean)

Scalar = Union[float, tf.Tensor, tf.Variable]


def marwil_loss(
    logp_t: tf.Tensor,
    returns_t: tf.Tensor,
    values_t: tf.Tensor,
    *,
    beta: float,
    vf_coeff: float,
    moving_average_sqd_adv_norm: Scalar,
    mask: Optional[tf.Tensor] = None,
) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """The MARWIL loss (see the module docstring) and its statistics.

    Args:
        logp_t: `log pi(a_t | s_t)` of the logged actions, `[B]` or `[B, T]`.
        returns_t: Discounted returns `R_t`, like `logp_t`.
        values_t: `V(s_t)`, like `logp_t`.
        beta: Advantage temperature; 0 is behavior cloning.
        vf_coeff: Weight of the value loss (unused when `beta == 0`).
        moving_average_sqd_adv_norm: The moving average of `A_t ** 2` (scalar).
        mask: `[B, T]` bool, True at real (not padded) steps; None: all steps count.

    Returns:
        `(loss, stats)`: `loss` this replica's share of the global-batch mean; `stats`:
        `policy_loss`, `vf_loss`, `adv_squared_mean`, `vf_explained_var` (means over this
        replica's steps; the value stats are 0 for `beta == 0`).

    Raises:
        TypeError, ValueError: For non-float tensors, ranks other than 1 or 2, shapes
            that disagree or a non-bool mask (see `loss_math.check_step_tensors`).
    """
    logp_t, returns_t, values_t = check_step_tensors(
        "marwil_loss", {"logp_t": logp_t, "returns_t": returns_t, "values_t": values_t}, mask)
    if beta == 0.0:
        zero = tf.zeros([], logp_t.dtype)
        return -global_mean(logp_t, mask), {
            "policy_loss": -local_mean(logp_t, mask), "vf_loss": zero,
            "adv_squared_mean": zero, "vf_explained_var": zero}
    adv_t = returns_t - values_t
    adv_sq_t = tf.square(adv_t)
    c = tf.sqrt(tf.cast(moving_average_sqd_adv_norm, logp_t.dtype))
    weights_t = tf.stop_gradient(tf.exp(beta * adv_t / (1e-8 + c)))
    pg_t = weights_t * logp_t
    loss = -global_mean(pg_t, mask) + vf_coeff * 0.5 * global_mean(adv_sq_t, mask)
    return loss, {
        "policy_loss": -local_mean(pg_t, mask),
        "vf_loss": 0.5 * local_mean(adv_sq_t, mask),
        "adv_squared_mean": local_mean(adv_sq_t, mask),
        "vf_explained_var": explained_variance(returns_t, values_t, mask),
    }
