"""Conservative Q-learning (RLlib's `ray.rllib.algorithms.cql`): SAC with CQL's penalty,
for Box actions, learning from offline data."""

from tfrl.utils.lazy_exports import lazy_exports

# Lazy (imported on first use): the CLI reads a config class without TensorFlow.
__getattr__, __all__ = lazy_exports(__name__, {
    "tfrl.algorithms.cql.cql_tf_policy": ["CQLTFPolicy"],
    "tfrl.algorithms.cql.cql": ["CQL", "DEFAULT_CONFIG", "CQLConfig"],
})
