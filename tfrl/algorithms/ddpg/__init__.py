"""DDPG (RLlib's `ray.rllib.algorithms.ddpg`): TD3's deterministic actor-critic with one
critic, no target smoothing and no delayed updates (see `tfrl.algorithms.td3`)."""

from tfrl.utils.lazy_exports import lazy_exports

# Lazy (imported on first use): the CLI reads a config class without TensorFlow.
__getattr__, __all__ = lazy_exports(__name__, {
    "tfrl.algorithms.ddpg.ddpg": ["DDPG", "DEFAULT_CONFIG", "DDPGConfig", "DDPGTFPolicy"],
})
