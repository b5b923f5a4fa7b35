"""Proximal policy optimization (RLlib's `ray.rllib.algorithms.ppo`)."""

from tfrl.algorithms.ppo.ppo_tf_policy import PPOTFPolicy

__all__ = ["PPOTFPolicy"]
