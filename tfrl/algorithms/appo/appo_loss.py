"""APPO's loss: V-trace plus PPO's clipped surrogate, as pure functions of tensors.

Asynchronous PPO (RLlib's APPO): IMPALA's architecture with the clipped surrogate of
Schulman et al. 2017 (https://arxiv.org/abs/1707.06347) in place of the plain policy
gradient, and a target network `pi_target` (a copy of the policy updated on a
schedule, `target_update_frequency`). Per step `t`, with the behaviour policy `mu`
that sampled the action:

    is_ratio_t  = clip(mu(a_t | x_t) / pi_target(a_t | x_t), 0, 2)
    ratio_t     = is_ratio_t * pi(a_t | x_t) / mu(a_t | x_t)          (~ pi / pi_target)
    surrogate_t = min(A_t * ratio_t, A_t * clip(ratio_t, 1 - clip_param, 1 + clip_param))
    loss_t      = -surrogate_t + vf_loss_coeff * 0.5 * (V(x_t) - vs_t) ** 2
                  - entropy_coeff * H_t [+ kl_coeff * KL[pi_target || pi]_t]

With V-trace (`appo_loss`), `A_t` and `vs_t` are V-trace's `pg_advantages` and `vs`
for the ratios `pi_target / mu` (the target network is the policy V-trace evaluates);
without (`vtrace=False`), the caller passes GAE advantages and value targets to
`appo_surrogate_loss`. The loss is the mean of `loss_t` over the real steps of the
global batch (`loss_math.global_mean`).
"""

from typing import Dict, Optional, Tuple, Union

import tensorflow as tf

from tfrl.algorithms.impala.vtrace import Threshold, check_time_major, vtrace
from tfrl.algorithms.loss_math import (check_step_tensors, explained_variance, global_mean,
                                       local_mean)
from tfrl.algorithms.ppo.ppo_loss import clipped_surrogate

Scalar = Union[float, tf.Tensor, tf.Variable]

#: The clip of `mu / pi_target` in the ratio (RLlib's APPO).
IS_RATIO_CLIP = 2.0


def appo_surrogate_loss(
    logp_t: tf.Tensor,
    behaviour_logp_t: tf.Tensor,
    target_logp_t: tf.Tensor,
    advantages_t: tf.Tensor,
    entropy_t: tf.Tensor,
    kl_t: tf.Tensor,
    values_t: tf.Tensor,
    value_targets_t: tf.Tensor,
    *,
    clip_param: float,
    vf_loss_coeff: float,
    entropy_coeff: Scalar,
    kl_coeff: Scalar,
    use_kl_loss: bool,
    mask: Optional[tf.Tensor] = None,
) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """APPO's loss (see the module docstring) for given advantages and value targets.

    Every tensor is per step and of one shape (`[B]`, `[B, T]` or time-major `[T, B]`).

    Args:
        logp_t: `log pi(a_t | x_t)` under the current parameters.
        behaviour_logp_t: `log mu(a_t | x_t)`, as sampled (`action_logp`).
        target_logp_t: `log pi_target(a_t | x_t)` under the target network.
        advantages_t: `A_t` (V-trace's `pg_advantages`, or GAE).
        entropy_t: `H[pi(. | x_t)]`.
        kl_t: `KL[pi_target(. | x_t) || pi(. | x_t)]`.
        values_t: `V(x_t)` of the current value function.
        value_targets_t: The value targets (V-trace's `vs`, or GAE's).
        clip_param: The surrogate's clip range epsilon.
        vf_loss_coeff: Weight of the value loss.
        entropy_coeff: Weight of the entropy bonus (a float or a scalar tensor/variable).
        kl_coeff: Weight of the KL term (a float or a scalar tensor/variable).
        use_kl_loss: Whether the loss has the KL term (the stats report it either way).
        mask: Bool of the tensors' shape, True at real steps; None: all steps count.

    Returns:
        `(loss, stats)`: `loss` this replica's share of the global-batch mean; `stats`
        means over this replica's real steps: `policy_loss` (minus the mean
        surrogate), `vf_loss` (`0.5 * (V - target) ** 2`), `entropy`, `kl` (the mean
        KL, which an adaptive `kl_coeff` follows, as PPO's), `clip_fraction`,
        `vf_explained_var`.

    Raises:
        TypeError, ValueError: As `loss_math.check_step_tensors`.
    """
    (logp_t, behaviour_logp_t, target_logp_t, advantages_t, entropy_t, kl_t, values_t,
     value_targets_t) = check_step_tensors("appo_surrogate_loss", {
         "logp_t": logp_t, "behaviour_logp_t": behaviour_logp_t,
         "target_logp_t": target_logp_t, "advantages_t": advantages_t,
         "entropy_t": entropy_t, "kl_t": kl_t, "values_t": values_t,
         "value_targets_t": value_targets_t}, mask)
    is_ratio_t = tf.clip_by_value(tf.exp(behaviour_logp_t - target_logp_t), 0.0, IS_RATIO_CLIP)
    ratio_t = is_ratio_t * tf.exp(logp_t - behaviour_logp_t)
    surrogate_t = clipped_surrogate(ratio_t, advantages_t, clip_param)
    vf_t = 0.5 * tf.square(values_t - value_targets_t)
    loss_t = -surrogate_t + vf_loss_coeff * vf_t - entropy_coeff * entropy_t
    if use_kl_loss:
        loss_t += kl_coeff * kl_t
    stats = {
        "policy_loss": -local_mean(surrogate_t, mask),
        "vf_loss": local_mean(vf_t, mask),
        "entropy": local_mean(entropy_t, mask),
        "kl": local_mean(kl_t, mask),
        "clip_fraction": local_mean(
            tf.cast(tf.abs(ratio_t - 1.0) > clip_param, ratio_t.dtype), mask),
        "vf_explained_var": explained_variance(value_targets_t, values_t, mask),
    }
    return global_mean(loss_t, mask), stats


def appo_loss(
    logp_t: tf.Tensor,
    behaviour_logp_t: tf.Tensor,
    target_logp_t: tf.Tensor,
    entropy_t: tf.Tensor,
    kl_t: tf.Tensor,
    values_t: tf.Tensor,
    rewards_t: tf.Tensor,
    discounts_t: tf.Tensor,
    bootstrap_value: tf.Tensor,
    *,
    clip_param: float,
    vf_loss_coeff: float,
    entropy_coeff: Scalar,
    kl_coeff: Scalar,
    use_kl_loss: bool,
    clip_rho_threshold: Threshold = 1.0,
    clip_pg_rho_threshold: Threshold = 1.0,
    mask: Optional[tf.Tensor] = None,
) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """APPO's loss with V-trace (`vtrace=True`, RLlib's default) and its statistics.

    Every per-step tensor is time-major, `[T, B]` (see `tfrl.algorithms.impala.vtrace`
    for the layout, episode ends, truncation and padding). V-trace runs on
    `log_rhos = target_logp_t - behaviour_logp_t`; its `pg_advantages` and `vs` go to
    `appo_surrogate_loss` (see there for the other arguments and the stats).

    Args:
        rewards_t: `r_t`.
        discounts_t: `gamma * (1 - terminated_t)`.
        bootstrap_value: `[B]`, the value of the state after each column's last step.
        clip_rho_threshold, clip_pg_rho_threshold: V-trace's `rho_bar` and the clip of
            the policy-gradient ratios (None: no clipping).
        mask: `[T, B]` bool, True at real steps (padding at the end of a column only).

    Raises:
        TypeError, ValueError: For non-float tensors, tensors not `[T, B]`, shapes that
            disagree, a `bootstrap_value` not `[B]` or a mask not bool `[T, B]`.
    """
    (logp_t, behaviour_logp_t, target_logp_t, entropy_t, kl_t, values_t, rewards_t,
     discounts_t, bootstrap_value, mask) = check_time_major("appo_loss", {
         "logp_t": logp_t, "behaviour_logp_t": behaviour_logp_t,
         "target_logp_t": target_logp_t, "entropy_t": entropy_t, "kl_t": kl_t,
         "values_t": values_t, "rewards_t": rewards_t, "discounts_t": discounts_t},
        bootstrap_value, mask)
    vs_t, pg_advantages_t = vtrace(
        target_logp_t - behaviour_logp_t, discounts_t, rewards_t, values_t,
        bootstrap_value, clip_rho_threshold=clip_rho_threshold,
        clip_pg_rho_threshold=clip_pg_rho_threshold, mask=mask)
    return appo_surrogate_loss(
        logp_t, behaviour_logp_t, target_logp_t, pg_advantages_t, entropy_t, kl_t,
        values_t, vs_t, clip_param=clip_param, vf_loss_coeff=vf_loss_coeff,
        entropy_coeff=entropy_coeff, kl_coeff=kl_coeff, use_kl_loss=use_kl_loss, mask=mask)
