"""A3CTFPolicy / A2CTFPolicy: advantage actor-critic.

The loss is `a2c_loss.a2c_loss` (Mnih et al., 2016): `-mean(log pi(a_t | s_t) * A_t)
+ vf_loss_coeff * 0.5 * mean((V(s_t) - value_targets_t) ** 2) - entropy_coeff *
mean(H[pi(.|s_t)])`, averaged (not summed, as RLlib's classic A3C did) over the batch.
`A_t` are GAE advantages (`use_gae`, `lambda`) or n-step returns minus `V(s_t)`
(`use_gae=False`), bootstrapped as in `postprocessing.bootstrap_value`. `grad_clip`
clips by the global norm. Microbatching (`microbatch_size`) happens in the A2C execution
plan.
"""

from typing import Dict, Tuple

import keras
import tensorflow as tf

from tfrl.algorithms.a2c.a2c_config import A2CConfig
from tfrl.algorithms.a2c.a2c_loss import a2c_loss
from tfrl.algorithms.on_policy_policy import OnPolicyTFPolicy
from tfrl.core.columns import Columns
from tfrl.policy.train_columns import autograph_converted

class A3CTFPolicy(OnPolicyTFPolicy):
    """Actor-critic policy (config: `A2CConfig`'s fields)."""

    config_class = A2CConfig

    @tf.autograph.experimental.do_not_convert  # plain TF ops; converting costs seconds
    def loss_and_stats(self, model: keras.Model, dist_class: type,
                       train_batch: Dict[str, tf.Tensor]
                       ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
        """`a2c_loss` on the model's outputs, its stats joined with `stats()`."""
        dist_inputs, values = self.forward(model, train_batch)  # [B, n], [B] (or [B, T, ...])
        dist = dist_class(dist_inputs, model)
        loss, stats = a2c_loss(
            dist.logp(train_batch[Columns.ACTIONS]),  # [B]
            train_batch[Columns.ADVANTAGES],  # [B]
            values,  # [B]
            train_batch[Columns.VALUE_TARGETS],  # [B]
            dist.entropy(),  # [B]
            vf_loss_coeff=self.config["vf_loss_coeff"],
            entropy_coeff=self.entropy_coeff,
            mask=self.valid_mask(train_batch))  # [B, T] for sequences, else None
        return loss, {**stats, **autograph_converted(self.stats)(train_batch)}

    def loss(self, model: keras.Model, dist_class: type,
             train_batch: Dict[str, tf.Tensor]) -> tf.Tensor:
        """The actor-critic loss alone (RLlib's signature)."""
        return A3CTFPolicy.loss_and_stats(self, model, dist_class, train_batch)[0]

    @tf.autograph.experimental.do_not_convert
    def stats(self, train_batch: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
        """The current learning rate and entropy coefficient."""
        return {"cur_lr": tf.cast(self.optimizer.learning_rate, tf.float32),
                "entropy_coeff": tf.identity(self.entropy_coeff)}


A2CTFPolicy = A3CTFPolicy
