"""Asynchronous PPO (RLlib's `ray.rllib.algorithms.appo`): the loss (`appo_loss`), the
config (`appo_config`), the policy (`appo_tf_policy`) and the algorithm (`appo`)."""

from tfrl.algorithms.appo.appo import APPO, DEFAULT_CONFIG, APPOConfig, UpdateTargetAndKL
from tfrl.algorithms.appo.appo_tf_policy import APPOTFPolicy

__all__ = ["APPO", "APPOConfig", "APPOTFPolicy", "UpdateTargetAndKL", "DEFAULT_CONFIG"]
