"""RLlib's path `ray.rllib.utils.replay_buffers`: a re-export of
`tfrl.execution.replay_buffers`.

The buffers need the data layer's SampleBatch, which sits above `tfrl.utils`; so the
code lives in `tfrl.execution.replay_buffers` and these modules only re-export it, for
code ported from RLlib. Nothing inside tfrl imports them; the import-linter contract in
pyproject.toml lists the exception (`tfrl.utils.replay_buffers` -> the execution layer)
by name.
"""

from tfrl.execution.replay_buffers.fifo_replay_buffer import FifoReplayBuffer
from tfrl.execution.replay_buffers.multi_agent_mixin_replay_buffer import (
    MultiAgentMixInReplayBuffer)
from tfrl.execution.replay_buffers.multi_agent_prioritized_replay_buffer import (
    MultiAgentPrioritizedReplayBuffer)
from tfrl.execution.replay_buffers.multi_agent_replay_buffer import (MultiAgentReplayBuffer,
                                                                     ReplayMode)
from tfrl.execution.replay_buffers.prioritized_replay_buffer import PrioritizedReplayBuffer
from tfrl.execution.replay_buffers.replay_buffer import ReplayBuffer, StorageUnit
from tfrl.execution.replay_buffers.reservoir_replay_buffer import (ReservoirBuffer,
                                                                   ReservoirReplayBuffer)

__all__ = ["FifoReplayBuffer", "MultiAgentMixInReplayBuffer",
           "MultiAgentPrioritizedReplayBuffer", "MultiAgentReplayBuffer",
           "PrioritizedReplayBuffer", "ReplayBuffer", "ReplayMode", "ReservoirBuffer",
           "ReservoirReplayBuffer", "StorageUnit"]
