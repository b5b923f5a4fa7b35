"""RLlib's path `ray.rllib.utils.replay_buffers.multi_agent_replay_buffer` (see the package
docstring)."""

from tfrl.execution.replay_buffers.multi_agent_replay_buffer import (MultiAgentReplayBuffer,
                                                                     ReplayMode)

__all__ = ["MultiAgentReplayBuffer", "ReplayMode"]
