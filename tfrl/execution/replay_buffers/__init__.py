"""RLlib 2.x's replay buffers (`ray.rllib.utils.replay_buffers`), item-based.

They store whole items (added batches, sequences, episodes) as RLlib 2.x does; RLlib's
path `tfrl.utils.replay_buffers` re-exports them (the code needs the data layer's
SampleBatch, so it lives here, above it). The algorithms replay from the column-ring
buffers of `tfrl.execution.replay_buffer`.
"""

from tfrl.utils.lazy_exports import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, {
    "tfrl.execution.replay_buffers.fifo_replay_buffer": ["FifoReplayBuffer"],
    "tfrl.execution.replay_buffers.multi_agent_mixin_replay_buffer": [
        "MultiAgentMixInReplayBuffer"],
    "tfrl.execution.replay_buffers.multi_agent_prioritized_replay_buffer": [
        "MultiAgentPrioritizedReplayBuffer"],
    "tfrl.execution.replay_buffers.multi_agent_replay_buffer": [
        "MultiAgentReplayBuffer", "ReplayMode"],
    "tfrl.execution.replay_buffers.prioritized_replay_buffer": ["PrioritizedReplayBuffer"],
    "tfrl.execution.replay_buffers.replay_buffer": ["ReplayBuffer", "StorageUnit"],
    "tfrl.execution.replay_buffers.reservoir_replay_buffer": [
        "ReservoirBuffer", "ReservoirReplayBuffer"],
})
