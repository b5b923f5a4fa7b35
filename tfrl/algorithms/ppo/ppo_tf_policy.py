"""PPOTFPolicy: proximal policy optimization with a clipped surrogate and a KL penalty.

Loss per row (Schulman et al., "Proximal Policy Optimization Algorithms", 2017,
https://arxiv.org/abs/1707.06347), averaged over the minibatch:

    ratio_t     = exp(log pi(a_t|s_t) - log pi_old(a_t|s_t))
    surrogate_t = min(A_t * ratio_t, A_t * clip(ratio_t, 1 - clip_param, 1 + clip_param))
    vf_loss_t   = max((V(s_t) - R_t) ** 2,
                      (V_old(s_t) + clip(V(s_t) - V_old(s_t), -vf_clip_param, vf_clip_param) - R_t) ** 2)
    total       = -surrogate_t + kl_coeff * KL[pi_old || pi]_t
                  + vf_loss_coeff * vf_loss_t - entropy_coeff * H[pi(.|s_t)]

(`A_t` advantages, `R_t` value targets from GAE postprocessing, `V_old` the sampled
`vf_preds`.) After each `learn_on_batch` the algorithm calls `update_kl(sampled_kl)`:
the KL coefficient grows by 1.5x when the mean KL exceeded `2 * kl_target`, shrinks by
half below `kl_target / 2`. `kl_coeff`, the entropy coefficient and the learning rate
live in `tf.Variable`s, so the compiled update never retraces.
"""

from typing import Dict

import keras
import tensorflow as tf

from tfrl.algorithms.on_policy_policy import (OnPolicyTFPolicy, explained_variance,
                                           local_mean)
from tfrl.algorithms.ppo.ppo_config import PPOConfig
from tfrl.core.columns import Columns

class PPOTFPolicy(OnPolicyTFPolicy):
    """PPO policy (config: `clip_param`, `vf_clip_param`, `vf_loss_coeff`, `kl_coeff`,
    `kl_target`, `entropy_coeff(_schedule)`, `lr(_schedule)`, `gamma`, `lambda`,
    `use_gae`, `use_critic`, `num_sgd_iter`, `sgd_minibatch_size`, `grad_clip`)."""

    config_class = PPOConfig

    def __init__(self, observation_space, action_space, config=None, *, strategy=None):
        super().__init__(observation_space, action_space, config, strategy=strategy)
        self.kl_coeff = float(self.config["kl_coeff"])
        self.kl_target = float(self.config["kl_target"])
        with self.strategy.scope():
            self.kl_coeff_var = tf.Variable(self.kl_coeff, dtype=tf.float32, trainable=False,
                                            name="kl_coeff")

    @tf.autograph.experimental.do_not_convert  # plain TF ops; converting costs seconds
    def loss(self, model: keras.Model, dist_class: type,
             train_batch: Dict[str, tf.Tensor]) -> tf.Tensor:
        config = self.config
        dist_inputs, values = self.forward(model, train_batch)  # [B, n], [B]
        curr = dist_class(dist_inputs, model)
        prev = dist_class(train_batch[Columns.ACTION_DIST_INPUTS], model)
        mask = self.valid_mask(train_batch)

        logp_ratio = tf.exp(curr.logp(train_batch[Columns.ACTIONS])
                            - train_batch[Columns.ACTION_LOGP])  # [B]
        advantages = train_batch[Columns.ADVANTAGES]  # [B]
        surrogate = tf.minimum(
            advantages * logp_ratio,
            advantages * tf.clip_by_value(logp_ratio, 1.0 - config["clip_param"],
                                          1.0 + config["clip_param"]))  # [B]
        action_kl = prev.kl(curr)  # [B]
        entropy = curr.entropy()  # [B]
        terms = -surrogate - self.entropy_coeff * entropy
        if config["kl_coeff"] > 0.0:
            terms += self.kl_coeff_var * action_kl

        stats = self.tower_stats
        if config["use_critic"]:
            value_targets = train_batch[Columns.VALUE_TARGETS]  # [B]
            prev_values = train_batch[Columns.VF_PREDS]  # [B]
            vf_loss1 = tf.square(values - value_targets)
            vf_clipped = prev_values + tf.clip_by_value(
                values - prev_values, -config["vf_clip_param"], config["vf_clip_param"])
            vf_loss = tf.maximum(vf_loss1, tf.square(vf_clipped - value_targets))  # [B]
            terms += config["vf_loss_coeff"] * vf_loss
            stats["vf_loss"] = local_mean(vf_loss, mask)
            stats["vf_explained_var"] = explained_variance(
                tf.reshape(value_targets, [-1]), tf.reshape(values, [-1]))
        stats["policy_loss"] = -local_mean(surrogate, mask)
        stats["kl"] = local_mean(action_kl, mask)
        stats["entropy"] = local_mean(entropy, mask)
        stats["clip_fraction"] = local_mean(
            tf.cast(tf.abs(logp_ratio - 1.0) > config["clip_param"], tf.float32), mask)
        return self.global_mean(terms, mask)

    @tf.autograph.experimental.do_not_convert
    def stats(self, train_batch: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
        return {**self.tower_stats,
                "cur_kl_coeff": tf.identity(self.kl_coeff_var),
                "cur_lr": tf.cast(self.optimizer.learning_rate, tf.float32),
                "entropy_coeff": tf.identity(self.entropy_coeff)}

    def update_kl(self, sampled_kl: float) -> float:
        """Adapts the KL coefficient to the mean KL of the last update; returns it."""
        if sampled_kl > 2.0 * self.kl_target:
            self.kl_coeff *= 1.5
        elif sampled_kl < 0.5 * self.kl_target:
            self.kl_coeff *= 0.5
        self.kl_coeff_var.assign(self.kl_coeff)
        return self.kl_coeff

    def get_state(self):
        """OnPolicyTFPolicy's state plus the current KL coefficient."""
        state = super().get_state()
        state["kl_coeff"] = self.kl_coeff
        return state

    def set_state(self, state):
        """Restores a `get_state` result, including the KL coefficient."""
        super().set_state(state)
        if "kl_coeff" in state:
            self.kl_coeff = float(state["kl_coeff"])
            self.kl_coeff_var.assign(self.kl_coeff)
