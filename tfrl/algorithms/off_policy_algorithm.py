"""OffPolicyAlgorithm: what DQN, SAC and TD3/DDPG share as algorithms.

`training_step()` runs one sampling round: sample → store in the replay buffer → (every
`rounds_per_phase`-th round) replay → learn → update priorities → sync weights → update
the targets when due. `execution_plan` is the same as RLlib's DQN plan from the
execution operators: `ParallelRollouts(bulk_sync)` → `StoreToReplayBuffer`, and
`Replay` → `TrainOneStep` → `UpdateTargetNetwork`, merged by `Concurrently` → metrics
(`tfrl.algorithms.off_policy_plan.off_policy_train_op`). The replay buffer
(`local_replay_buffer`, RLlib 1.x's name) belongs to the algorithm; with
`store_buffer_in_checkpoints` `save()` writes its contents too, so a restored algorithm
continues exactly as the uninterrupted one.
"""

from typing import Any, Dict, Mapping

from tfrl.algorithms.algorithm import Algorithm, metrics_reporting
from tfrl.algorithms.off_policy_plan import (LearningRounds, learning_schedule,
                                             make_replay_buffer, off_policy_train_op,
                                             update_replay_priorities)
from tfrl.core import types
from tfrl.execution.iter import LocalIterator
from tfrl.execution.replay_buffer import LocalReplayBuffer
from tfrl.execution.rollout_ops import ParallelRollouts, sample_round
from tfrl.execution.train_ops import sync_weights, train_one_step, update_target_network

# The checkpoint entry holding the replay buffer's contents.
REPLAY_BUFFER_STATE = "replay_buffer"


class OffPolicyAlgorithm(Algorithm):
    """An Algorithm that learns from its replay buffer (see the module docstring).

    Subclasses set `config_class`, `default_policy_class`, and override
    `target_updates_in_graph` when their policies move the target networks inside the
    learning call.
    """

    local_replay_buffer: LocalReplayBuffer  # made when the algorithm is built

    @staticmethod
    def target_updates_in_graph(config: Mapping[str, Any]) -> bool:
        """Whether the policies update their targets inside the compiled learning call
        (then the plan does not call `update_target()` every
        `target_network_update_freq` steps). Default: False."""
        return False

    def _init_training(self) -> None:
        self.local_replay_buffer = make_replay_buffer(self.config)
        self._learning_rounds = LearningRounds(self.local_replay_buffer,
                                               learning_schedule(self.config)[0])

    def training_step(self) -> Dict[str, types.LearnerInfo]:
        """One sampling round: store it; every `rounds_per_phase`-th round (once the
        buffer is ready) learn on a replay of the phase's rows, set their priorities and
        send the weights; update the targets when their interval has passed."""
        config, workers, metrics = self.config, self.workers, self.shared_metrics
        buffer = self.local_replay_buffer
        buffer.add_batch(sample_round(workers, metrics))
        replayed = self._learning_rounds.replay(metrics)
        info: Dict[str, types.LearnerInfo] = {}
        if replayed is not None and replayed.count:
            info = train_one_step(workers, replayed, metrics, num_sgd_iter=1,
                                  sgd_minibatch_size=config["train_batch_size"])
            update_replay_priorities(workers, buffer, replayed, info, metrics)
            sync_weights(workers, metrics)
        if not self.target_updates_in_graph(config):
            update_target_network(workers, metrics, config["target_network_update_freq"])
        return info

    # A method, not Algorithm's static function: the buffer belongs to the algorithm.
    def execution_plan(self, workers: types.WorkerSet,  # type: ignore[override]
                       config: Dict[str, Any]) -> LocalIterator[types.ResultDict]:
        """RLlib's DQN plan of operators on the algorithm's replay buffer (see
        `off_policy_train_op`); `training_step` runs the same steps."""
        train_op = off_policy_train_op(
            ParallelRollouts(workers, mode="bulk_sync"), workers, config,
            self.local_replay_buffer,
            target_updates_in_graph=self.target_updates_in_graph(config))
        return metrics_reporting(train_op, workers, config)

    def __getstate__(self) -> Dict[str, Any]:
        state = super().__getstate__()
        if self.config["store_buffer_in_checkpoints"]:
            state[REPLAY_BUFFER_STATE] = self.local_replay_buffer.get_state()
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        super().__setstate__(state)
        buffer_state = state.get(REPLAY_BUFFER_STATE)
        if buffer_state is not None:
            self.local_replay_buffer.set_state(buffer_state)
