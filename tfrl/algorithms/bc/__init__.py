"""Behavior cloning (RLlib's `ray.rllib.algorithms.bc`)."""

from tfrl.algorithms.bc.bc_tf_policy import BCTFPolicy
from tfrl.algorithms.bc.bc import BC, DEFAULT_CONFIG, BCConfig

__all__ = ["BCTFPolicy", "BC", "BCConfig", "DEFAULT_CONFIG"]
