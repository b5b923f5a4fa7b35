"""DDPG: deep deterministic policy gradient (RLlib's `ray.rllib.algorithms.ddpg.ddpg`;
Lillicrap et al., 2015).

TD3's algorithm and policy with `DDPGConfig`'s defaults: one critic (`twin_q=False`), no
target policy smoothing, the actor and the targets updated with every critic update
(`policy_delay=1`), Ornstein-Uhlenbeck exploration noise, an L2 penalty on the weights
(see `tfrl.algorithms.td3`).

Example:
    >>> from tfrl.algorithms.ddpg import DDPGConfig
    >>> DDPGConfig().twin_q, DDPGConfig().exploration_config["type"]
    (False, 'OrnsteinUhlenbeckNoise')
"""

from tfrl.algorithms.td3.td3 import TD3
from tfrl.algorithms.td3.td3_config import DDPGConfig
from tfrl.algorithms.td3.td3_tf_policy import TD3TFPolicy


class DDPGTFPolicy(TD3TFPolicy):
    """TD3's policy with `DDPGConfig`'s fields and defaults."""

    config_class = DDPGConfig


class DDPG(TD3):
    """DDPG (see `DDPGConfig`, `TD3TFPolicy`).

    Example: `DDPG(config={"env": "Pendulum-v1"}).train()`.
    """

    config_class = DDPGConfig
    default_policy_class = DDPGTFPolicy


DDPGConfig.algo_class = DDPG

# RLlib 1.x name: the default config as a flat dict.
DEFAULT_CONFIG = DDPGConfig().to_dict()
