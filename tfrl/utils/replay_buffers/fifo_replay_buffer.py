"""RLlib's path `ray.rllib.utils.replay_buffers.fifo_replay_buffer` (see the package
docstring)."""

from tfrl.execution.replay_buffers.fifo_replay_buffer import FifoReplayBuffer

__all__ = ["FifoReplayBuffer"]
