"""RLlib's path `ray.rllib.utils.replay_buffers.reservoir_replay_buffer` (see the package
docstring)."""

from tfrl.execution.replay_buffers.reservoir_replay_buffer import ReservoirReplayBuffer

__all__ = ["ReservoirReplayBuffer"]
