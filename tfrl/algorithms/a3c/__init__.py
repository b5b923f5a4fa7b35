"""Asynchronous advantage actor-critic (RLlib's `ray.rllib.algorithms.a3c`)."""

from tfrl.algorithms.a3c.a3c_tf_policy import A3CTFPolicy
from tfrl.algorithms.a3c.a3c import DEFAULT_CONFIG, A3C, A3CConfig

__all__ = ["A3CTFPolicy", "A3C", "A3CConfig", "DEFAULT_CONFIG"]
