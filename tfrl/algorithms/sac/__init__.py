"""Soft actor-critic (RLlib's `ray.rllib.algorithms.sac`): twin critics, automatic entropy
tuning, squashed Gaussian policy for Box actions, the discrete variant for Discrete ones."""

from tfrl.utils.lazy_exports import lazy_exports

# Lazy (imported on first use): the CLI reads a config class without TensorFlow.
__getattr__, __all__ = lazy_exports(__name__, {
    "tfrl.algorithms.sac.sac_tf_policy": ["SACTFPolicy"],
    "tfrl.algorithms.sac.sac": ["DEFAULT_CONFIG", "SAC", "SACConfig"],
})
