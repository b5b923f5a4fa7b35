"""Discrete conservative Q-learning on DQN (`CQLDQN`; `tfrl.algorithms.cql.CQL` builds it
for Discrete action spaces), learning from offline data."""

from tfrl.utils.lazy_exports import lazy_exports

# Lazy (imported on first use): the CLI reads a config class without TensorFlow.
__getattr__, __all__ = lazy_exports(__name__, {
    "tfrl.algorithms.cql_dqn.cql_dqn_tf_policy": ["CQLDQNTFPolicy"],
    "tfrl.algorithms.cql_dqn.cql_dqn": ["CQLDQN", "DEFAULT_CONFIG", "CQLDQNConfig"],
})
