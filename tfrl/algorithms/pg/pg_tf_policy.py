"""PGTFPolicy: vanilla policy gradient (REINFORCE) on returns-to-go.

Loss: `-mean(log pi(a_t | s_t) * G_t)` with `G_t` the discounted return from step t
(Williams, "Simple statistical gradient-following algorithms for connectionist
reinforcement learning", Machine Learning 1992). Postprocessing adds `advantages` =
`G_t` through `compute_advantages(use_gae=False, use_critic=False)`; with no critic a
trajectory cut before its end is not bootstrapped (use `batch_mode="complete_episodes"`).

Example:
    >>> import gymnasium as gym, numpy as np
    >>> from tfrl.policy.sample_batch import SampleBatch
    >>> policy = PGTFPolicy(gym.spaces.Box(-1.0, 1.0, (4,)), gym.spaces.Discrete(2),
    ...                     {"seed": 0, "gamma": 0.5, "model": {"fcnet_hiddens": [8]}})
    >>> batch = policy.postprocess_trajectory(SampleBatch(
    ...     obs=np.zeros((3, 4), np.float32), actions=np.zeros(3, np.int64),
    ...     rewards=np.ones(3, np.float32), terminateds=np.array([False, False, True])))
    >>> batch["advantages"].tolist()
    [1.75, 1.5, 1.0]
"""

from typing import Dict

import keras
import tensorflow as tf

from tfrl.algorithms.on_policy_policy import OnPolicyTFPolicy, local_mean
from tfrl.algorithms.pg.pg_config import PGConfig
from tfrl.core.columns import Columns

class PGTFPolicy(OnPolicyTFPolicy):
    """Policy gradient on discounted returns (config: `gamma`, `lr`, `lr_schedule`)."""

    config_class = PGConfig

    @tf.autograph.experimental.do_not_convert  # plain TF ops; converting costs seconds
    def loss(self, model: keras.Model, dist_class: type,
             train_batch: Dict[str, tf.Tensor]) -> tf.Tensor:
        dist_inputs, _ = self.forward(model, train_batch)
        logp = dist_class(dist_inputs, model).logp(train_batch[Columns.ACTIONS])  # [B]
        mask = self.valid_mask(train_batch)
        pg_terms = logp * train_batch[Columns.ADVANTAGES]  # [B]
        self.tower_stats["policy_loss"] = -local_mean(pg_terms, mask)
        return -self.global_mean(pg_terms, mask)

    @tf.autograph.experimental.do_not_convert
    def stats(self, train_batch: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
        return {"policy_loss": self.tower_stats["policy_loss"],
                "cur_lr": tf.cast(self.optimizer.learning_rate, tf.float32)}
