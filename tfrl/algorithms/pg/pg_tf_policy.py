"""PGTFPolicy: vanilla policy gradient (REINFORCE) on returns-to-go.

Loss: `pg_loss.pg_loss`, `-mean(log pi(a_t | s_t) * G_t)` with `G_t` the discounted
return from step t (Williams, "Simple statistical gradient-following algorithms for
connectionist reinforcement learning", Machine Learning 1992). Postprocessing adds
`advantages` = `G_t` through `compute_advantages(use_gae=False, use_critic=False)`; with
no critic a trajectory cut before its end is not bootstrapped (use
`batch_mode="complete_episodes"`).

Example:
    >>> import gymnasium as gym, numpy as np
    >>> from tfrl.data.sample_batch import SampleBatch
    >>> policy = PGTFPolicy(gym.spaces.Box(-1.0, 1.0, (4,)), gym.spaces.Discrete(2),
    ...                     {"seed": 0, "gamma": 0.5, "model": {"fcnet_hiddens": [8]}})
    >>> batch = policy.postprocess_trajectory(SampleBatch(
    ...     obs=np.zeros((3, 4), np.float32), actions=np.zeros(3, np.int64),
    ...     rewards=np.ones(3, np.float32), terminateds=np.array([False, False, True])))
    >>> batch["advantages"].tolist()
    [1.75, 1.5, 1.0]
"""

from typing import Dict, Tuple

import keras
import tensorflow as tf

from tfrl.algorithms.on_policy_policy import OnPolicyTFPolicy
from tfrl.algorithms.pg.pg_config import PGConfig
from tfrl.algorithms.pg.pg_loss import pg_loss
from tfrl.core.columns import Columns
from tfrl.policy.train_columns import autograph_converted

class PGTFPolicy(OnPolicyTFPolicy):
    """Policy gradient on discounted returns (config: `PGConfig`'s fields)."""

    config_class = PGConfig

    @tf.autograph.experimental.do_not_convert  # plain TF ops; converting costs seconds
    def loss_and_stats(self, model: keras.Model, dist_class: type,
                       train_batch: Dict[str, tf.Tensor]
                       ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
        """`pg_loss` on the model's outputs, its stats joined with `stats()`."""
        dist_inputs, _ = self.forward(model, train_batch)  # [B, n] (or [B, T, n])
        loss, stats = pg_loss(
            dist_class(dist_inputs, model).logp(train_batch[Columns.ACTIONS]),  # [B]
            train_batch[Columns.ADVANTAGES],  # [B]
            mask=self.valid_mask(train_batch))  # [B, T] for sequences, else None
        return loss, {**stats, **autograph_converted(self.stats)(train_batch)}

    def loss(self, model: keras.Model, dist_class: type,
             train_batch: Dict[str, tf.Tensor]) -> tf.Tensor:
        """The policy-gradient loss alone (RLlib's signature)."""
        return PGTFPolicy.loss_and_stats(self, model, dist_class, train_batch)[0]

    @tf.autograph.experimental.do_not_convert
    def stats(self, train_batch: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
        """The current learning rate."""
        return {"cur_lr": tf.cast(self.optimizer.learning_rate, tf.float32)}
