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

from typing import Any, Callable, Dict, Tuple


from tfrl.algorithms.cql_dqn.cql_dqn_config import CQLDQNConfig
from tfrl.algorithms.cql_dqn.cql_dqn_loss import cql_dqn_loss
from tfrl.algorithms.dqn.dqn_tf_policy import DQNTFPolicy
from tfrl.core.columns import Columns

__all__ = ["CQLDQNTFPolicy"]


class CQLDQNTFPolicy(DQNTFPolicy):
    """Discrete CQL's policy (config: `CQLDQNConfig`'s fields); see
    the module docstring.

    Raises:
        ValueError: As `DQNTFPolicy` (an action space that is not `Discrete`, a
            recurrent model).
    """

    config_class = CQLDQNConfig
    # Columns a file input must hold for this policy (checked by the readers).
    offline_input_columns = (Columns.OBS, Columns.NEXT_OBS, Columns.ACTIONS, Columns.REWARDS,
                             Columns.TERMINATEDS)

    def td_loss_function(self) -> Tuple[Callable[..., Any], Dict[str, Any]]:
        """`cql_dqn_loss` (DQN's TD loss plus the CQL(H) penalty) with this config's
        `min_q_weight` and `temperature`; DQN's `loss_and_stats` calls it."""
        return cql_dqn_loss, {"min_q_weight": float(self.config["min_q_weight"]),
                              "temperature": float(self.config["temperature"])}

