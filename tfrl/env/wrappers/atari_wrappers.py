"""RLlib's path for the Atari wrappers (`ray.rllib.env.wrappers.atari_wrappers`).

Defined in `tfrl.env.wrappers.atari`, built from gymnasium's own wrappers.
"""

from tfrl.env.wrappers.atari import FireReset as FireResetEnv
from tfrl.env.wrappers.atari import is_atari, wrap_deepmind

__all__ = ["FireResetEnv", "is_atari", "wrap_deepmind"]
