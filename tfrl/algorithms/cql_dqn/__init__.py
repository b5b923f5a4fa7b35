"""Discrete conservative Q-learning on DQN (`CQLDQN`; `tfrl.algorithms.cql.CQL` builds it
for Discrete action spaces), learning from offline data."""

from tfrl.algorithms.cql_dqn.cql_dqn_tf_policy import CQLDQNTFPolicy
from tfrl.algorithms.cql_dqn.cql_dqn import CQLDQN, DEFAULT_CONFIG, CQLDQNConfig

__all__ = ["CQLDQNTFPolicy", "CQLDQN", "CQLDQNConfig", "DEFAULT_CONFIG"]
