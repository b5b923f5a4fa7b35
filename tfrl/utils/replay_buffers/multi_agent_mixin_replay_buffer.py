"""RLlib's path `ray.rllib.utils.replay_buffers.multi_agent_mixin_replay_buffer` (see the
package docstring)."""

from tfrl.execution.replay_buffers.multi_agent_mixin_replay_buffer import (
    MultiAgentMixInReplayBuffer)

__all__ = ["MultiAgentMixInReplayBuffer"]
