"""Asynchronous advantage actor-critic (RLlib's `ray.rllib.algorithms.a3c`)."""

from tfrl.utils.lazy_exports import lazy_exports

# Lazy (imported on first use): the CLI reads a config class without TensorFlow.
__getattr__, __all__ = lazy_exports(__name__, {
    "tfrl.algorithms.a3c.a3c_tf_policy": ["A3CTFPolicy"],
    "tfrl.algorithms.a3c.a3c": ["DEFAULT_CONFIG", "A3C", "A3CConfig"],
})
