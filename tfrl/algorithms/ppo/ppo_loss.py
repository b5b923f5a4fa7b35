"""PPO's loss as a pure function of per-step tensors and hyperparameters.

Schulman et al., "Proximal Policy Optimization Algorithms", 2017,
https://arxiv.org/abs/1707.06347 (clipped surrogate, eq. 7; the KL penalty, eq. 8, as
an addition rather than an alternative, as RLlib does), with the value clipping of the
OpenAI baselines implementation. Per step `t`:

    ratio_t     = exp(logp_t - behaviour_logp_t)
    surrogate_t = min(A_t * ratio_t, A_t * clip(ratio_t, 1 - clip_param, 1 + clip_param))
    vf_loss_t   = max((V_t - R_t) ** 2,
                      (V_old_t + clip(V_t - V_old_t, -vf_clip_param, vf_clip_param) - R_t) ** 2)
    loss_t      = -surrogate_t + kl_coeff * KL_t + vf_loss_coeff * vf_loss_t
                  - entropy_coeff * H_t

and the loss is the mean of `loss_t` over the global batch (`loss_math.global_mean`).

Between iterations the KL coefficient adapts to the mean KL of the last update
(`updated_kl_coeff`, the rule of the paper's section 4 with RLlib's factors):

    kl_coeff' = 1.5 * kl_coeff   if KL > 2 * kl_target
                0.5 * kl_coeff   if KL < kl_target / 2
                kl_coeff         otherwise
"""

from typing import Dict, Optional, Tuple, Union

import tensorflow as tf

from tfrl.algorithms.loss_math import (check_step_tensors, explained_variance, global_mean,
                                       local_mean)

Scalar = Union[float, tf.Tensor, tf.Variable]


def updated_kl_coeff(kl_coeff: float, sampled_kl: float, kl_target: float) -> float:
    """The KL coefficient for the next iteration after an update whose mean KL was
    `sampled_kl`: x1.5 above `2 * kl_target`, x0.5 below `kl_target / 2`, else unchanged."""
    if sampled_kl > 2.0 * kl_target:
        return kl_coeff * 1.5
    if sampled_kl < 0.5 * kl_target:
        return kl_coeff * 0.5
    return kl_coeff


def clipped_surrogate(ratio_t: tf.Tensor, advantages_t: tf.Tensor, clip_param: float
                      ) -> tf.Tensor:
    """`min(A_t * ratio_t, A_t * clip(ratio_t, 1 - clip_param, 1 + clip_param))`, per step."""
    return tf.minimum(
        advantages_t * ratio_t,
        advantages_t * tf.clip_by_value(ratio_t, 1.0 - clip_param, 1.0 + clip_param))


def clipped_value_loss(values_t: tf.Tensor, behaviour_values_t: tf.Tensor,
                       value_targets_t: tf.Tensor, vf_clip_param: float) -> tf.Tensor:
    """The larger of the squared errors of `V_t` and of `V_t` clipped to within
    `vf_clip_param` of the sampled `V_old_t`, per step."""
    unclipped = tf.square(values_t - value_targets_t)
    clipped = behaviour_values_t + tf.clip_by_value(
        values_t - behaviour_values_t, -vf_clip_param, vf_clip_param)
    return tf.maximum(unclipped, tf.square(clipped - value_targets_t))


def ppo_loss(
    logp_t: tf.Tensor,
    behaviour_logp_t: tf.Tensor,
    advantages_t: tf.Tensor,
    kl_t: tf.Tensor,
    entropy_t: tf.Tensor,
    values_t: Optional[tf.Tensor] = None,
    behaviour_values_t: Optional[tf.Tensor] = None,
    value_targets_t: Optional[tf.Tensor] = None,
    *,
    clip_param: float,
    vf_clip_param: float,
    vf_loss_coeff: float,
    kl_coeff: Scalar,
    entropy_coeff: Scalar,
    use_kl_loss: bool = True,
    mask: Optional[tf.Tensor] = None,
) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """PPO's loss (see the module docstring) and its statistics.

    Every tensor is per step: `[B]`, or `[B, T]` for padded sequences (with `mask`).

    Args:
        logp_t: `log pi(a_t | s_t)` of the sampled actions under the current parameters.
        behaviour_logp_t: The same under the parameters that sampled them.
        advantages_t: Advantage estimates `A_t` (e.g. GAE).
        kl_t: `KL[pi_old(. | s_t) || pi(. | s_t)]`, sampling to current policy.
        entropy_t: `H[pi(. | s_t)]` of the current policy.
        values_t: `V(s_t)` of the current value function; None for no value loss
            (then `behaviour_values_t` and `value_targets_t` are not used).
        behaviour_values_t: `V_old(s_t)` as sampled (`vf_preds`).
        value_targets_t: Value targets `R_t`.
        clip_param: The surrogate's clip range epsilon.
        vf_clip_param: How far the value may move from `behaviour_values_t` unpenalized.
        vf_loss_coeff: Weight of the value loss.
        kl_coeff: Weight of the KL penalty (a float or a scalar tensor/variable).
        entropy_coeff: Weight of the entropy bonus (a float or a scalar tensor/variable).
        use_kl_loss: Whether the loss has the KL term (the stats report the KL either way).
        mask: `[B, T]` bool, True at real (not padded) steps; None: all steps count.

    Returns:
        `(loss, stats)`: `loss` this replica's share of the global-batch mean (the mean
        itself on one device); `stats` means over this replica's steps: `policy_loss`
        (minus the mean surrogate), `kl`, `entropy`, `clip_fraction` (the share of
        steps with `|ratio - 1| > clip_param`), and with a value function `vf_loss`
        and `vf_explained_var`.

    Raises:
        TypeError, ValueError: For non-float tensors, ranks other than 1 or 2, shapes
            that disagree, a non-bool mask (see `loss_math.check_step_tensors`), or
            `values_t` without `behaviour_values_t` and `value_targets_t`.
    """
    (logp_t, behaviour_logp_t, advantages_t, kl_t, entropy_t, values_t, behaviour_values_t,
     value_targets_t) = check_step_tensors("ppo_loss", {
         "logp_t": logp_t, "behaviour_logp_t": behaviour_logp_t, "advantages_t": advantages_t,
         "kl_t": kl_t, "entropy_t": entropy_t, "values_t": values_t,
         "behaviour_values_t": behaviour_values_t, "value_targets_t": value_targets_t}, mask)
    if values_t is not None and (behaviour_values_t is None or value_targets_t is None):
        raise ValueError(
            "ppo_loss(): values_t needs behaviour_values_t and value_targets_t for the value "
            f"loss; received behaviour_values_t={behaviour_values_t!r}, "
            f"value_targets_t={value_targets_t!r}. Pass values_t=None for no value loss."
        )
    ratio_t = tf.exp(logp_t - behaviour_logp_t)
    surrogate_t = clipped_surrogate(ratio_t, advantages_t, clip_param)
    loss_t = -surrogate_t - entropy_coeff * entropy_t
    if use_kl_loss:
        loss_t += kl_coeff * kl_t
    stats = {}
    if values_t is not None:
        vf_loss_t = clipped_value_loss(values_t, behaviour_values_t, value_targets_t,
                                       vf_clip_param)
        loss_t += vf_loss_coeff * vf_loss_t
        stats["vf_loss"] = local_mean(vf_loss_t, mask)
        stats["vf_explained_var"] = explained_variance(value_targets_t, values_t, mask)
    stats["policy_loss"] = -local_mean(surrogate_t, mask)
    stats["kl"] = local_mean(kl_t, mask)
    stats["entropy"] = local_mean(entropy_t, mask)
    stats["clip_fraction"] = local_mean(
        tf.cast(tf.abs(ratio_t - 1.0) > clip_param, ratio_t.dtype), mask)
    return global_mean(loss_t, mask), stats
