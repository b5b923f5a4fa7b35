"""MARWIL (RLlib's `ray.rllib.algorithms.marwil`)."""

from tfrl.algorithms.marwil.marwil_tf_policy import MARWILTFPolicy
from tfrl.algorithms.marwil.marwil import DEFAULT_CONFIG, MARWIL, MARWILConfig

__all__ = ["MARWILTFPolicy", "MARWIL", "MARWILConfig", "DEFAULT_CONFIG"]
