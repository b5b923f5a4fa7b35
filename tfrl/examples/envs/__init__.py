"""Example envs (memory tasks), registered with gymnasium on import.

gymnasium's `"module:id"` form imports this package on demand, so
`--env=tfrl.examples.envs:RepeatAfterMe-v0` and
`--env=tfrl.examples.envs:StatelessCartPole-v1` work from the CLI and in every worker.
"""

import gymnasium as gym

from tfrl.examples.envs import stateless_cartpole  # noqa: F401 - registers StatelessCartPole-v1
from tfrl.examples.envs.masked_actions import MaskedActions
from tfrl.examples.envs.repeat_after_me import RepeatAfterMe

__all__ = ["MaskedActions", "RepeatAfterMe"]

if "MaskedActions-v0" not in gym.registry:
    gym.register(id="MaskedActions-v0",
                 entry_point="tfrl.examples.envs.masked_actions:MaskedActions")

if "RepeatAfterMe-v0" not in gym.registry:
    gym.register(id="RepeatAfterMe-v0",
                 entry_point="tfrl.examples.envs.repeat_after_me:RepeatAfterMe")
