"""Proximal policy optimization (RLlib's `ray.rllib.algorithms.ppo`)."""

from tfrl.algorithms.ppo.ppo_tf_policy import PPOTFPolicy
from tfrl.algorithms.ppo.ppo import DEFAULT_CONFIG, PPO, PPOConfig, UpdateKL

__all__ = ["PPOTFPolicy", "PPO", "PPOConfig", "UpdateKL", "DEFAULT_CONFIG"]
