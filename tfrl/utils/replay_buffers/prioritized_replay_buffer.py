"""RLlib's path `ray.rllib.utils.replay_buffers.prioritized_replay_buffer` (see the package
docstring)."""

from tfrl.execution.replay_buffers.prioritized_replay_buffer import PrioritizedReplayBuffer

__all__ = ["PrioritizedReplayBuffer"]
