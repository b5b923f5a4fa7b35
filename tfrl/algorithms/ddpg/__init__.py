"""DDPG (RLlib's `ray.rllib.algorithms.ddpg`): TD3's deterministic actor-critic with one
critic, no target smoothing and no delayed updates (see `tfrl.algorithms.td3`)."""

from tfrl.algorithms.ddpg.ddpg import DDPG, DEFAULT_CONFIG, DDPGConfig, DDPGTFPolicy

__all__ = ["DDPG", "DDPGConfig", "DDPGTFPolicy", "DEFAULT_CONFIG"]
