"""Policy gradient (RLlib's `ray.rllib.algorithms.pg`)."""

from tfrl.utils.lazy_exports import lazy_exports

# Lazy (imported on first use): the CLI reads a config class without TensorFlow.
__getattr__, __all__ = lazy_exports(__name__, {
    "tfrl.algorithms.pg.pg_tf_policy": ["PGTFPolicy"],
    "tfrl.algorithms.pg.pg": ["DEFAULT_CONFIG", "PG", "PGConfig"],
})
