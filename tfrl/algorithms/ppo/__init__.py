"""Proximal policy optimization (RLlib's `ray.rllib.algorithms.ppo`)."""

from tfrl.utils.lazy_exports import lazy_exports

# Lazy (imported on first use): the CLI reads a config class without TensorFlow.
__getattr__, __all__ = lazy_exports(__name__, {
    "tfrl.algorithms.ppo.ppo_tf_policy": ["PPOTFPolicy", "PPOTF1Policy", "PPOTF2Policy"],
    "tfrl.algorithms.ppo.ppo": ["DEFAULT_CONFIG", "PPO", "PPOConfig", "UpdateKL"],
})
