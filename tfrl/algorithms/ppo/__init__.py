"""Proximal policy optimization (RLlib's `ray.rllib.algorithms.ppo`)."""

from tfrl.algorithms.ppo.ppo_tf_policy import PPOTFPolicy
from tfrl.algorithms.ppo.ppo import DEFAULT_CONFIG, PPO, PPOConfig, UpdateKL

# RLlib 2.x's names of its TF1 (graph) and TF2 (eager) PPO policies: tfrl has one.
PPOTF1Policy = PPOTF2Policy = PPOTFPolicy

__all__ = ["PPOTFPolicy", "PPOTF1Policy", "PPOTF2Policy", "PPO", "PPOConfig", "UpdateKL",
           "DEFAULT_CONFIG"]
