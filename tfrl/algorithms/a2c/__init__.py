"""Advantage actor-critic (RLlib's `ray.rllib.algorithms.a2c`)."""

from tfrl.algorithms.a2c.a2c_tf_policy import A2CTFPolicy, A3CTFPolicy

__all__ = ["A2CTFPolicy", "A3CTFPolicy"]
