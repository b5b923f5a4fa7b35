"""Soft actor-critic (RLlib's `ray.rllib.algorithms.sac`): twin critics, automatic entropy
tuning, squashed Gaussian policy for Box actions, the discrete variant for Discrete ones."""

from tfrl.algorithms.sac.sac_tf_policy import SACTFPolicy
from tfrl.algorithms.sac.sac import DEFAULT_CONFIG, SAC, SACConfig

__all__ = ["SACTFPolicy", "SAC", "SACConfig", "DEFAULT_CONFIG"]
