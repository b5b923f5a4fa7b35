"""Behavior cloning (RLlib's `ray.rllib.algorithms.bc`)."""

from tfrl.utils.lazy_exports import lazy_exports

# Lazy (imported on first use): the CLI reads a config class without TensorFlow.
__getattr__, __all__ = lazy_exports(__name__, {
    "tfrl.algorithms.bc.bc_tf_policy": ["BCTFPolicy"],
    "tfrl.algorithms.bc.bc": ["BC", "DEFAULT_CONFIG", "BCConfig"],
})
