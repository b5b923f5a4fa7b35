"""Conservative Q-learning (RLlib's `ray.rllib.algorithms.cql`): SAC with CQL's penalty,
for Box actions, learning from offline data."""

from tfrl.algorithms.cql.cql_tf_policy import CQLTFPolicy
from tfrl.algorithms.cql.cql import CQL, DEFAULT_CONFIG, CQLConfig

__all__ = ["CQLTFPolicy", "CQL", "CQLConfig", "DEFAULT_CONFIG"]
