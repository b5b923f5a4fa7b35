"""R2D2 (RLlib's `ray.rllib.algorithms.r2d2`): DQN on replayed sequences of a recurrent
Q network, with burn-in, stored or zero initial states, n-step double-Q targets and value
rescaling."""

from tfrl.utils.lazy_exports import lazy_exports

# Lazy (imported on first use): the CLI reads a config class without TensorFlow.
__getattr__, __all__ = lazy_exports(__name__, {
    "tfrl.algorithms.r2d2.r2d2_tf_policy": ["R2D2TFPolicy"],
    "tfrl.algorithms.r2d2.r2d2": ["DEFAULT_CONFIG", "R2D2", "R2D2Config",
                                  "R2D2_DEFAULT_CONFIG"],
})
