"""A3CTFPolicy / A2CTFPolicy: advantage actor-critic.

Loss (Mnih et al., "Asynchronous Methods for Deep Reinforcement Learning", ICML 2016),
averaged over the batch:

    policy_loss = -mean(log pi(a_t | s_t) * A_t)
    vf_loss     = 0.5 * mean((V(s_t) - value_targets_t) ** 2)
    total       = policy_loss + vf_loss_coeff * vf_loss - entropy_coeff * mean(H[pi(.|s_t)])

`A_t` are GAE advantages (`use_gae`, `lambda`) or n-step returns minus `V(s_t)`
(`use_gae=False`), bootstrapped per contract C6. RLlib's classic A3C summed these terms
over the batch; tfrl averages them (so the learning rate does not depend on the batch
size, and microbatch gradients average to the whole batch's). `grad_clip` clips by the
global norm. Microbatching (`microbatch_size`) happens in the A2C execution plan.
"""

from typing import Dict

import keras
import tensorflow as tf

from tfrl.algorithms.a2c.a2c_config import A2CConfig
from tfrl.algorithms.on_policy_policy import (OnPolicyTFPolicy, explained_variance,
                                           local_mean)
from tfrl.core.columns import Columns

class A3CTFPolicy(OnPolicyTFPolicy):
    """Actor-critic policy (config: `gamma`, `lambda`, `use_gae`, `vf_loss_coeff`,
    `entropy_coeff(_schedule)`, `lr(_schedule)`, `grad_clip`)."""

    config_class = A2CConfig

    @tf.autograph.experimental.do_not_convert  # plain TF ops; converting costs seconds
    def loss(self, model: keras.Model, dist_class: type,
             train_batch: Dict[str, tf.Tensor]) -> tf.Tensor:
        dist_inputs, values = self.forward(model, train_batch)  # [B, n], [B]
        dist = dist_class(dist_inputs, model)
        mask = self.valid_mask(train_batch)
        logp = dist.logp(train_batch[Columns.ACTIONS])  # [B]
        pg_terms = logp * train_batch[Columns.ADVANTAGES]  # [B]
        vf_terms = 0.5 * tf.square(values - train_batch[Columns.VALUE_TARGETS])  # [B]
        entropy = dist.entropy()  # [B]
        stats = self.tower_stats
        stats["policy_loss"] = -local_mean(pg_terms, mask)
        stats["vf_loss"] = local_mean(vf_terms, mask)
        stats["entropy"] = local_mean(entropy, mask)
        stats["vf_explained_var"] = explained_variance(
            tf.reshape(train_batch[Columns.VALUE_TARGETS], [-1]), tf.reshape(values, [-1]))
        return (-self.global_mean(pg_terms, mask)
                + self.config["vf_loss_coeff"] * self.global_mean(vf_terms, mask)
                - self.entropy_coeff * self.global_mean(entropy, mask))

    @tf.autograph.experimental.do_not_convert
    def stats(self, train_batch: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
        return {**self.tower_stats,
                "cur_lr": tf.cast(self.optimizer.learning_rate, tf.float32),
                "entropy_coeff": tf.identity(self.entropy_coeff)}


A2CTFPolicy = A3CTFPolicy
