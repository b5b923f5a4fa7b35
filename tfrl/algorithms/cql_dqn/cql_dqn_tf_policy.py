"""CQLDQNTFPolicy: DQN's policy (Discrete actions) with discrete CQL's loss.

Everything but the loss is DQN's (`DQNTFPolicy`): the Q model (dueling heads, `hiddens`),
the target model and its updates, double Q, n-step transitions, prioritized replay's
weights, greedy / epsilon-greedy acting and `compute_td_error`. The loss is
`cql_dqn_loss`: DQN's TD loss on the same Q-values plus `min_q_weight` times the mean of
`T * logsumexp_a Q(s_t, a) / T - Q(s_t, a_t)` over the replayed rows (no extra forward
pass: the penalty reads the `Q(s_t, .)` the TD loss uses).

File input must hold `obs`, `new_obs`, `actions`, `rewards` and `terminateds`
(`offline_input_columns`; the readers name the file and line of a record without).
"""

from typing import Dict, Tuple

import keras
import tensorflow as tf

from tfrl.algorithms.cql_dqn.cql_dqn_config import CQLDQNConfig
from tfrl.algorithms.cql_dqn.cql_dqn_loss import cql_dqn_loss
from tfrl.algorithms.dqn.dqn_tf_policy import DQNTFPolicy
from tfrl.core.columns import Columns
from tfrl.execution.replay_buffer import WEIGHTS
from tfrl.execution.replay_buffer_rows import N_STEP

__all__ = ["CQLDQNTFPolicy"]


class CQLDQNTFPolicy(DQNTFPolicy):
    """Discrete CQL's policy (config: DQN's keys plus `min_q_weight`, `temperature`); see
    the module docstring.

    Raises:
        ValueError: As `DQNTFPolicy` (an action space that is not `Discrete`, a
            recurrent model).
    """

    config_class = CQLDQNConfig
    # Columns a file input must hold for this policy (checked by the readers).
    offline_input_columns = (Columns.OBS, Columns.NEXT_OBS, Columns.ACTIONS, Columns.REWARDS,
                             Columns.TERMINATEDS)

    @tf.autograph.experimental.do_not_convert  # plain TF ops; converting costs seconds
    def loss_and_stats(self, model: keras.Model, dist_class: type,
                       train_batch: Dict[str, tf.Tensor]
                       ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
        """`cql_dqn_loss` on DQN's online and target Q-values of the minibatch."""
        config = self.config
        q_t, q_tp1_target, q_tp1_online = self.loss_q_values(model, train_batch)
        n_step = train_batch.get(N_STEP)
        loss, stats = cql_dqn_loss(
            q_t, train_batch[Columns.ACTIONS], train_batch[Columns.REWARDS],
            train_batch[Columns.TERMINATEDS], q_tp1_target, q_tp1_online,
            train_batch.get(WEIGHTS), gamma=config["gamma"],
            n_step=1 if n_step is None else n_step,
            huber_delta=1.0 if config["td_error_loss_fn"] == "huber" else None,
            min_q_weight=float(config["min_q_weight"]),
            temperature=float(config["temperature"]))
        # As DQN: min_q / max_q are one replica's extremes, not the batch's.
        stats = {k: v for k, v in stats.items() if k not in ("min_q", "max_q")}
        stats["cur_lr"] = tf.cast(self.optimizer.learning_rate, tf.float32)
        return loss, stats

    def loss(self, model: keras.Model, dist_class: type,
             train_batch: Dict[str, tf.Tensor]) -> tf.Tensor:
        """Discrete CQL's loss alone (RLlib's signature)."""
        return self.loss_and_stats(model, dist_class, train_batch)[0]
