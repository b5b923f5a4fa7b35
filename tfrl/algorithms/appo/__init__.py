"""Asynchronous PPO (RLlib's `ray.rllib.algorithms.appo`): the loss (`appo_loss`), the
config (`appo_config`), the policy (`appo_tf_policy`) and the algorithm (`appo`)."""

from tfrl.utils.lazy_exports import lazy_exports

# Lazy (imported on first use): the CLI reads a config class without TensorFlow.
__getattr__, __all__ = lazy_exports(__name__, {
    "tfrl.algorithms.appo.appo": ["APPO", "DEFAULT_CONFIG", "APPOConfig", "UpdateTargetAndKL"],
    "tfrl.algorithms.appo.appo_tf_policy": ["APPOTFPolicy"],
})
