"""TD3 and DDPG (RLlib's `ray.rllib.algorithms.td3`; DDPG, TD3's configuration with one
critic, no target smoothing and no delay, is `tfrl.algorithms.ddpg`): deterministic
actor-critics for Box actions."""

from tfrl.algorithms.td3.td3_tf_policy import TD3TFPolicy
from tfrl.algorithms.td3.td3 import TD3, TD3_DEFAULT_CONFIG, TD3Config

__all__ = ["TD3", "TD3Config", "TD3TFPolicy", "TD3_DEFAULT_CONFIG"]
