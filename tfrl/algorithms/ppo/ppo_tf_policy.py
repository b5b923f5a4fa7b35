"""PPOTFPolicy: proximal policy optimization with a clipped surrogate and a KL penalty.

The loss is `ppo_loss.ppo_loss` (Schulman et al., 2017: clipped surrogate, KL penalty,
clipped value loss, entropy bonus) on the model's outputs for the minibatch, with
`A_t` the advantages and `R_t` the value targets from GAE postprocessing and `V_old`
the sampled `vf_preds`. After each `learn_on_batch` the algorithm calls
`update_kl(sampled_kl)`: the KL coefficient grows by 1.5x when the mean KL exceeded
`2 * kl_target`, shrinks by half below `kl_target / 2`. `kl_coeff`, the entropy
coefficient and the learning rate live in `tf.Variable`s, so the compiled update never
retraces.
"""

from typing import Dict, Tuple

import keras
import tensorflow as tf

from tfrl.algorithms.ppo.kl_coeff import KLCoeffPolicy
from tfrl.algorithms.ppo.ppo_config import PPOConfig
from tfrl.algorithms.loss_math import minibatch_standardized
from tfrl.algorithms.ppo.ppo_loss import ppo_loss
from tfrl.core.columns import Columns
from tfrl.policy.train_columns import autograph_converted

class PPOTFPolicy(KLCoeffPolicy):
    """PPO policy (config: `PPOConfig`'s fields)."""

    config_class = PPOConfig

    @tf.autograph.experimental.do_not_convert  # plain TF ops; converting costs seconds
    def loss_and_stats(self, model: keras.Model, dist_class: type,
                       train_batch: Dict[str, tf.Tensor]
                       ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
        """`ppo_loss` on the model's outputs, its stats joined with `stats()`."""
        config = self.config
        dist_inputs, values = self.forward(model, train_batch)  # [B, n], [B] (or [B, T, ...])
        curr = dist_class(dist_inputs, model)
        prev = dist_class(train_batch[Columns.ACTION_DIST_INPUTS], model)
        use_critic = config["use_critic"]
        mask = self.valid_mask(train_batch)  # [B, T] for sequences, else None
        advantages = train_batch[Columns.ADVANTAGES]  # [B]
        if config.get("normalize_advantages") == "minibatch":
            advantages = minibatch_standardized(advantages, mask)
        loss, stats = ppo_loss(
            curr.logp(train_batch[Columns.ACTIONS]),  # [B]
            train_batch[Columns.ACTION_LOGP],  # [B]
            advantages,  # [B]
            prev.kl(curr),  # [B]
            curr.entropy(),  # [B]
            values if use_critic else None,  # [B]
            train_batch[Columns.VF_PREDS] if use_critic else None,  # [B]
            train_batch[Columns.VALUE_TARGETS] if use_critic else None,  # [B]
            clip_param=config["clip_param"],
            vf_clip_param=config["vf_clip_param"],
            vf_loss_coeff=config["vf_loss_coeff"],
            kl_coeff=self.kl_coeff_var,
            entropy_coeff=self.entropy_coeff,
            use_kl_loss=config["kl_coeff"] > 0.0,
            mask=mask,
        )
        return loss, {**stats, **autograph_converted(self.stats)(train_batch)}

    def loss(self, model: keras.Model, dist_class: type,
             train_batch: Dict[str, tf.Tensor]) -> tf.Tensor:
        """PPO's loss alone (RLlib's signature)."""
        return PPOTFPolicy.loss_and_stats(self, model, dist_class, train_batch)[0]


# RLlib 2.x's names of its TF1 (graph) and TF2 (eager) PPO policies: tfrl has one.
PPOTF1Policy = PPOTF2Policy = PPOTFPolicy
