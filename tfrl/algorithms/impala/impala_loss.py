"""IMPALA's loss as a pure function of time-major tensors and hyperparameters.

Espeholt et al. 2018 (https://arxiv.org/abs/1802.01561), section 4.2: with the V-trace
targets `vs_t` and advantages `pg_adv_t` (`tfrl.algorithms.impala.vtrace`, computed from
`log_rhos = logp_t - behaviour_logp_t`), per step `t`:

    loss_t = -log pi(a_t | x_t) * pg_adv_t + vf_loss_coeff * 0.5 * (V(x_t) - vs_t) ** 2
             - entropy_coeff * H[pi(. | x_t)]

averaged over the real steps of the global batch (`loss_math.global_mean`). RLlib's
classic `VTraceLoss` summed these terms over the batch; tfrl averages them (as its A2C
loss does), so that the learning rate and `grad_clip` do not depend on the batch size.
"""

from typing import Dict, Optional, Tuple, Union

import tensorflow as tf

from tfrl.algorithms.impala.vtrace import Threshold, check_time_major, vtrace
from tfrl.algorithms.a2c.a2c_loss import a2c_loss

Scalar = Union[float, tf.Tensor, tf.Variable]


def impala_loss(
    logp_t: tf.Tensor,
    behaviour_logp_t: tf.Tensor,
    entropy_t: tf.Tensor,
    values_t: tf.Tensor,
    rewards_t: tf.Tensor,
    discounts_t: tf.Tensor,
    bootstrap_value: tf.Tensor,
    *,
    vf_loss_coeff: float,
    entropy_coeff: Scalar,
    clip_rho_threshold: Threshold = 1.0,
    clip_pg_rho_threshold: Threshold = 1.0,
    mask: Optional[tf.Tensor] = None,
) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """IMPALA's loss (see the module docstring) and its statistics.

    Every per-step tensor is time-major, `[T, B]` (see `vtrace` for the layout, episode
    ends, truncation and padding).

    Args:
        logp_t: `log pi(a_t | x_t)` of the taken actions under the current parameters.
        behaviour_logp_t: The same under the policy that sampled them (`action_logp`).
        entropy_t: `H[pi(. | x_t)]` of the current policy.
        values_t: `V(x_t)` of the current value function.
        rewards_t: `r_t`.
        discounts_t: `gamma * (1 - terminated_t)`.
        bootstrap_value: `[B]`, the value of the state after each column's last step.
        vf_loss_coeff: Weight of the value loss.
        entropy_coeff: Weight of the entropy bonus (a float or a scalar tensor/variable).
        clip_rho_threshold, clip_pg_rho_threshold: V-trace's `rho_bar` and the clip of
            the policy-gradient ratios (`vtrace_clip_rho_threshold`,
            `vtrace_clip_pg_rho_threshold`; None: no clipping).
        mask: `[T, B]` bool, True at real steps (padding at the end of a column only);
            None: every step is real.

    Returns:
        `(loss, stats)`: `loss` this replica's share of the global-batch mean; `stats`
        means over this replica's real steps: `policy_loss`, `vf_loss`
        (`0.5 * (V - vs) ** 2`), `entropy`, `vf_explained_var` (of `V` for `vs`).

    Raises:
        TypeError, ValueError: For non-float tensors, tensors not `[T, B]`, shapes that
            disagree, a `bootstrap_value` not `[B]` or a mask not bool `[T, B]`.
    """
    (logp_t, behaviour_logp_t, entropy_t, values_t, rewards_t, discounts_t, bootstrap_value,
     mask) = check_time_major("impala_loss", {
         "logp_t": logp_t, "behaviour_logp_t": behaviour_logp_t, "entropy_t": entropy_t,
         "values_t": values_t, "rewards_t": rewards_t, "discounts_t": discounts_t},
        bootstrap_value, mask)
    vs_t, pg_advantages_t = vtrace(
        logp_t - behaviour_logp_t, discounts_t, rewards_t, values_t, bootstrap_value,
        clip_rho_threshold=clip_rho_threshold, clip_pg_rho_threshold=clip_pg_rho_threshold,
        mask=mask)
    # A2C's loss with V-trace's advantages and value targets.
    return a2c_loss(logp_t, pg_advantages_t, values_t, vs_t, entropy_t,
                    vf_loss_coeff=vf_loss_coeff, entropy_coeff=entropy_coeff, mask=mask)
