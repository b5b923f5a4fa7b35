"""Advantage actor-critic (RLlib's `ray.rllib.algorithms.a2c`)."""

from tfrl.algorithms.a2c.a2c_tf_policy import A2CTFPolicy, A3CTFPolicy
from tfrl.algorithms.a2c.a2c import DEFAULT_CONFIG, A2C, A2CConfig

__all__ = ["A2CTFPolicy", "A3CTFPolicy", "A2C", "A2CConfig", "DEFAULT_CONFIG"]
