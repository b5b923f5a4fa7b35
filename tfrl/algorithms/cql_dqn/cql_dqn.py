"""Discrete CQL: conservative Q-learning on DQN (Kumar et al. 2020, CQL(H) for discrete
actions), learning from offline data.

Plan: DQN's (`OffPolicyAlgorithm`): the workers read their `input` (experience files;
nothing is sampled from an env unless `input="sampler"`), the rows read go into the
replay buffer, and each learning phase replays `train_batch_size`-row minibatches from
it for its gradient steps in one compiled call; the target network is updated every
`target_network_update_freq` rows read. With `evaluation_interval`, the learnt policy is
run greedily on the env (`evaluation_config={"input": "sampler", "explore": False}`).

`tfrl.algorithms.cql.CQL` builds this algorithm when its action space is `Discrete`.

Example:
    >>> from tfrl.algorithms.cql_dqn import CQLDQNConfig
    >>> CQLDQNConfig().training(min_q_weight=4.0).min_q_weight
    4.0
"""

from tfrl.algorithms.cql_dqn.cql_dqn_config import CQLDQNConfig
from tfrl.algorithms.cql_dqn.cql_dqn_tf_policy import CQLDQNTFPolicy
from tfrl.algorithms.dqn.dqn import DQN

__all__ = ["CQLDQN", "CQLDQNConfig", "DEFAULT_CONFIG"]


class CQLDQN(DQN):
    """Discrete conservative Q-learning (see `CQLDQNConfig`, `CQLDQNTFPolicy`)."""

    config_class = CQLDQNConfig
    default_policy_class = CQLDQNTFPolicy


CQLDQNConfig.algo_class = CQLDQN

# RLlib 1.x style: the default config as a flat dict.
DEFAULT_CONFIG = CQLDQNConfig().to_dict()
