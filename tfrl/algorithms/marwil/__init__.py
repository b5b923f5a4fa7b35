"""MARWIL (RLlib's `ray.rllib.algorithms.marwil`)."""

from tfrl.utils.lazy_exports import lazy_exports

# Lazy (imported on first use): the CLI reads a config class without TensorFlow.
__getattr__, __all__ = lazy_exports(__name__, {
    "tfrl.algorithms.marwil.marwil_tf_policy": ["MARWILTFPolicy"],
    "tfrl.algorithms.marwil.marwil": ["DEFAULT_CONFIG", "MARWIL", "MARWILConfig"],
})
