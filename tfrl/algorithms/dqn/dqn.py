"""DQN: deep Q-learning from a replay buffer (RLlib's `ray.rllib.algorithms.dqn.dqn`).

Plan: `ParallelRollouts(bulk_sync)` → `DQNLearnPhase` → metrics. Each sampling round's
batch goes into the algorithm's `LocalReplayBuffer` (prioritized or uniform, n-step
transitions built at insertion); after every `rounds_per_phase`-th round (see
`dqn_config.learning_schedule`, from `training_intensity`) one replay of
`steps_per_phase * train_batch_size` rows feeds `steps_per_phase` gradient steps of
`train_batch_size` rows each, all in one compiled `learn_on_batch` call (`TrainOneStep`
with `sgd_minibatch_size=train_batch_size`, no shuffling); then the replayed rows'
priorities are set from their TD errors under the new weights (one compiled call), and
`UpdateTargetNetwork` copies the weights into the target network once
`target_network_update_freq` env steps were sampled since its last copy. Nothing is
replayed before `num_steps_sampled_before_learning_starts` steps were stored.

With `store_buffer_in_checkpoints`, `save()` writes the buffer's contents too, and a
restored DQN continues exactly as the uninterrupted one.

Example:
    >>> from tfrl.algorithms.dqn import DQNConfig
    >>> DQNConfig().training(double_q=False).double_q
    False
"""

from typing import Any, Dict, Optional

from tfrl.algorithms.algorithm import Algorithm, metrics_reporting
from tfrl.algorithms.dqn.dqn_config import (PRIORITIZED_BUFFER_TYPES, DQNConfig,
                                            learning_schedule)
from tfrl.algorithms.dqn.dqn_tf_policy import DQNTFPolicy
from tfrl.core import types
from tfrl.data.sample_batch import DEFAULT_POLICY_ID, MultiAgentBatch
from tfrl.execution.iter import LocalIterator, get_shared_metrics
from tfrl.execution.replay_buffer import BATCH_INDEXES, LocalReplayBuffer
from tfrl.execution.rollout_ops import ParallelRollouts
from tfrl.execution.train_ops import TrainOneStep, UpdateTargetNetwork

# Shared-metrics counter of sampling rounds (decides which rounds learn).
NUM_SAMPLE_ROUNDS = "num_sample_rounds"
REPLAY_BUFFER_STATE = "replay_buffer"


def make_replay_buffer(config: Dict[str, Any]) -> LocalReplayBuffer:
    """DQN's `LocalReplayBuffer` from its config: one replay holds the rows of a whole
    learning phase (`steps_per_phase * train_batch_size`)."""
    rb = config["replay_buffer_config"]
    _, steps_per_phase = learning_schedule(config)
    return LocalReplayBuffer(
        capacity=rb["capacity"],
        replay_batch_size=steps_per_phase * config["train_batch_size"],
        learning_starts=config["num_steps_sampled_before_learning_starts"],
        seed=config["seed"],
        prioritized_replay=rb["type"] in PRIORITIZED_BUFFER_TYPES,
        prioritized_replay_alpha=rb["prioritized_replay_alpha"],
        prioritized_replay_beta=rb["prioritized_replay_beta"],
        prioritized_replay_eps=rb["prioritized_replay_eps"],
        compress_observations=config["compress_observations"],
        n_step=config["n_step"], gamma=config["gamma"])


class DQNLearnPhase:
    """Stores each sampled batch; after every `rounds_per_phase`-th round replays one
    learning phase's rows and learns on them (see the module docstring).

    Use with `.for_each()` on the rollouts; returns the learner info of the phase (`{}`
    for a round without learning).

    Args:
        workers: The WorkerSet.
        config: The DQN config dict.
        buffer: The replay buffer (the algorithm's).
    """

    def __init__(self, workers: types.WorkerSet, config: Dict[str, Any],
                 buffer: LocalReplayBuffer):
        self.workers = workers
        self.buffer = buffer
        self.rounds_per_phase, self.steps_per_phase = learning_schedule(config)
        self.train_one_step = TrainOneStep(workers, num_sgd_iter=1,
                                           sgd_minibatch_size=config["train_batch_size"])
        self.update_target = UpdateTargetNetwork(workers, config["target_network_update_freq"])

    def __call__(self, batch: types.Batch) -> Dict[str, types.LearnerInfo]:
        self.buffer.add_batch(batch)
        counters = get_shared_metrics().counters
        counters[NUM_SAMPLE_ROUNDS] += 1
        info: Dict[str, types.LearnerInfo] = {}
        if counters[NUM_SAMPLE_ROUNDS] % self.rounds_per_phase == 0:
            replayed = self.buffer.replay()
            if replayed is not None:
                _, info = self.train_one_step(replayed)
                self._update_priorities(replayed)
        self.update_target(None)
        return info

    def _update_priorities(self, replayed: types.Batch) -> None:
        if not self.buffer.prioritized_replay:
            return
        batches: Dict[str, Any] = (replayed.policy_batches
                                   if isinstance(replayed, MultiAgentBatch)
                                   else {DEFAULT_POLICY_ID: replayed})
        local = self.workers.local_worker()
        priorities = {}
        for pid, rows in batches.items():
            policy: Any = local.get_policy(pid)  # a DQNTFPolicy (or one with td_errors)
            priorities[pid] = (rows[BATCH_INDEXES], policy.td_errors(rows))
        self.buffer.update_priorities(priorities)


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
            DQNLearnPhase(workers, config, self.local_replay_buffer))
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
