"""Advantage actor-critic (RLlib's `ray.rllib.algorithms.a2c`)."""

from tfrl.utils.lazy_exports import lazy_exports

# Lazy (imported on first use): the CLI reads a config class without TensorFlow.
__getattr__, __all__ = lazy_exports(__name__, {
    "tfrl.algorithms.a2c.a2c_tf_policy": ["A2CTFPolicy", "A3CTFPolicy"],
    "tfrl.algorithms.a2c.a2c": ["DEFAULT_CONFIG", "A2C", "A2CConfig"],
})
