"""DQN: deep Q-learning from a replay buffer (RLlib's `ray.rllib.algorithms.dqn.dqn`).

Plan: `ParallelRollouts(bulk_sync)` → `OffPolicyLearnPhase` → metrics
(`tfrl.algorithms.off_policy_plan`): sampled rows go into the algorithm's replay buffer,
learning phases of `steps_per_phase` gradient steps run in one compiled call each, the
replayed rows' priorities are set from their TD errors, and `UpdateTargetNetwork` copies
the weights into the target network every `target_network_update_freq` sampled steps.

With `store_buffer_in_checkpoints`, `save()` writes the buffer's contents too, and a
restored DQN continues exactly as the uninterrupted one.

Example:
    >>> from tfrl.algorithms.dqn import DQNConfig
    >>> DQNConfig().training(double_q=False).double_q
    False
"""

from typing import Any, Dict, Optional

from tfrl.algorithms.algorithm import Algorithm, metrics_reporting
from tfrl.algorithms.dqn.dqn_config import DQNConfig
from tfrl.algorithms.dqn.dqn_tf_policy import DQNTFPolicy
from tfrl.algorithms.off_policy_plan import OffPolicyLearnPhase, make_replay_buffer
from tfrl.core import types
from tfrl.execution.iter import LocalIterator
from tfrl.execution.replay_buffer import LocalReplayBuffer
from tfrl.execution.rollout_ops import ParallelRollouts

REPLAY_BUFFER_STATE = "replay_buffer"


class DQN(Algorithm):
    """Deep Q-Networks (see `DQNConfig`, `DQNTFPolicy`); its replay buffer is
    `local_replay_buffer` (RLlib 1.x's name).

    Example: `DQN(config={"env": "CartPole-v1"}).train()`.
    """

    config_class = DQNConfig
    default_policy_class = DQNTFPolicy
    local_replay_buffer: Optional[LocalReplayBuffer] = None

    # A method, not Algorithm's static function: the replay buffer belongs to the
    # algorithm (its checkpoints hold it) and outlives a plan rebuilt after an error.
    def execution_plan(self, workers: types.WorkerSet,  # type: ignore[override]
                       config: Dict[str, Any]) -> LocalIterator[types.ResultDict]:
        """DQN's LocalIterator of result dicts (see the module docstring); a rebuilt plan
        keeps the algorithm's replay buffer."""
        if self.local_replay_buffer is None:
            self.local_replay_buffer = make_replay_buffer(config)
        train_op = ParallelRollouts(workers, mode="bulk_sync").for_each(
            OffPolicyLearnPhase(workers, config, self.local_replay_buffer))
        return metrics_reporting(train_op, workers, config)

    def __getstate__(self) -> Dict[str, Any]:
        state = super().__getstate__()
        if self.config["store_buffer_in_checkpoints"] and self.local_replay_buffer is not None:
            state[REPLAY_BUFFER_STATE] = self.local_replay_buffer.get_state()
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        super().__setstate__(state)
        buffer_state = state.get(REPLAY_BUFFER_STATE)
        if buffer_state is not None and self.local_replay_buffer is not None:
            self.local_replay_buffer.set_state(buffer_state)


DQNConfig.algo_class = DQN

# RLlib 1.x name: the default config as a flat dict.
DEFAULT_CONFIG = DQNConfig().to_dict()
