"""TD3 and DDPG (RLlib's `ray.rllib.algorithms.td3`; DDPG, TD3's configuration with one
critic, no target smoothing and no delay, is `tfrl.algorithms.ddpg`): deterministic
actor-critics for Box actions."""

from tfrl.utils.lazy_exports import lazy_exports

# Lazy (imported on first use): the CLI reads a config class without TensorFlow.
__getattr__, __all__ = lazy_exports(__name__, {
    "tfrl.algorithms.td3.td3_tf_policy": ["TD3TFPolicy"],
    "tfrl.algorithms.td3.td3": ["TD3", "TD3_DEFAULT_CONFIG", "TD3Config"],
})
