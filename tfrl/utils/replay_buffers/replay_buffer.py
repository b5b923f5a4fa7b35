"""RLlib's path `ray.rllib.utils.replay_buffers.replay_buffer` (see the package docstring)."""

from tfrl.execution.replay_buffers.replay_buffer import (_ALL_POLICIES, ALL_POLICIES, ReplayBuffer,
                                                         StorageUnit)

__all__ = ["ALL_POLICIES", "ReplayBuffer", "StorageUnit", "_ALL_POLICIES"]
