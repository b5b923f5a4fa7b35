"""The plan shared by the replay-based algorithms (DQN, SAC, TD3/DDPG).

Each sampling round's batch goes into the algorithm's `LocalReplayBuffer` (prioritized or
uniform, n-step transitions built at insertion); after every `rounds_per_phase`-th round
(`learning_schedule`, from `training_intensity`) one replay of
`steps_per_phase * train_batch_size` rows feeds `steps_per_phase` gradient steps of
`train_batch_size` rows each, all in one compiled `learn_on_batch` call (`TrainOneStep`
with `sgd_minibatch_size=train_batch_size`, no shuffling); then, for prioritized replay,
the replayed rows' priorities are set from the policy's `td_errors` under the new weights,
and `UpdateTargetNetwork` calls the policies' `update_target()` once
`target_network_update_freq` env steps were sampled since its last call (not for
policies that move their targets inside the learning call, by `tau` per gradient step, as
SAC's do: `target_updates_in_graph=True`). Nothing is replayed before
`num_steps_sampled_before_learning_starts` steps were stored.

`off_policy_train_op` builds this from the execution operators (`StoreToReplayBuffer`,
`Replay`, `TrainOneStep`, `UpdateReplayPriorities`, `UpdateTargetNetwork`,
`Concurrently`), as RLlib's DQN execution plan does.
"""

from typing import Any, Dict, Mapping, Optional, Tuple, Union

import numpy as np

from tfrl.algorithms.off_policy_config import PRIORITIZED_BUFFER_TYPES
from tfrl.core import types
from tfrl.data.sample_batch import DEFAULT_POLICY_ID, MultiAgentBatch
from tfrl.execution.common import LEARNER_STATS_KEY
from tfrl.execution.concurrency_ops import Concurrently
from tfrl.execution.iter import LocalIterator, SharedMetrics, get_shared_metrics
from tfrl.execution.replay_buffer import BATCH_INDEXES, LocalReplayBuffer
from tfrl.execution.replay_ops import Replay, StoreToReplayBuffer
from tfrl.execution.train_ops import TrainOneStep, UpdateTargetNetwork
from tfrl.policy.nonfinite import learned_nothing
from tfrl.utils.schedules import LinearSchedule, Schedule

# Shared-metrics counter of sampling rounds (decides which rounds learn).
NUM_SAMPLE_ROUNDS = "num_sample_rounds"
# Shared-metrics counter of replayed rows whose TD error was not finite (priority kept).
NUM_NONFINITE_TD_ERRORS = "num_nonfinite_td_errors"


def learning_schedule(config: Mapping[str, Any]) -> Tuple[int, int]:
    """`(rounds_per_phase, steps_per_phase)`: a learning phase (`steps_per_phase`
    gradient steps of `train_batch_size` rows, in one compiled call) follows every
    `rounds_per_phase`-th sampling round.

    A round samples `rollout_fragment_length * num_envs_per_worker * max(1, num_workers)`
    env steps; `training_intensity` asks for that many times itself in replayed rows, i.e.
    `r = training_intensity * round_steps / train_batch_size` gradient steps per round:
    `round(r)` steps every round if `r >= 1`, else one step every `round(1 / r)` rounds.
    Without `training_intensity`: one step per round (RLlib's native ratio).

    Example:
        >>> learning_schedule({"training_intensity": 32, "rollout_fragment_length": 256,
        ...                    "num_envs_per_worker": 1, "num_workers": 0,
        ...                    "train_batch_size": 64})
        (1, 128)
        >>> learning_schedule({"training_intensity": 1, "rollout_fragment_length": 4,
        ...                    "num_envs_per_worker": 1, "num_workers": 0,
        ...                    "train_batch_size": 32})
        (8, 1)
    """
    intensity = config.get("training_intensity")
    if intensity is None:
        return 1, 1
    round_steps = (config["rollout_fragment_length"] * config["num_envs_per_worker"]
                   * max(1, config["num_workers"]))
    per_round = float(intensity) * round_steps / config["train_batch_size"]
    if per_round >= 1.0:
        return 1, max(1, int(round(per_round)))
    return max(1, int(round(1.0 / per_round))), 1


def beta_schedule(replay_buffer_config: Dict[str, Any]) -> Union[float, Schedule]:
    """Prioritized replay's importance exponent: `prioritized_replay_beta`, or where
    `final_prioritized_replay_beta` is set and differs, a `LinearSchedule` from the one to
    the other over `prioritized_replay_beta_annealing_timesteps` stored timesteps.

    Example:
        >>> rb = {"prioritized_replay_beta": 0.4, "final_prioritized_replay_beta": 1.0,
        ...       "prioritized_replay_beta_annealing_timesteps": 100}
        >>> [round(beta_schedule(rb).value(t), 2) for t in (0, 50, 100, 200)]
        [0.4, 0.7, 1.0, 1.0]
    """
    beta = replay_buffer_config["prioritized_replay_beta"]
    final = replay_buffer_config["final_prioritized_replay_beta"]
    if final is None or final == beta:
        return beta
    return LinearSchedule(replay_buffer_config["prioritized_replay_beta_annealing_timesteps"],
                          final, initial_p=beta)


def make_replay_buffer(config: Mapping[str, Any], sequence_length: int = 1,
                       zero_init_states: bool = True) -> LocalReplayBuffer:
    """The `LocalReplayBuffer` of a replay-based algorithm's config: one replay holds the
    rows of a whole learning phase (`steps_per_phase * train_batch_size`), or with
    `sequence_length > 1` (recurrent policies) `steps_per_phase * max(1, train_batch_size
    // sequence_length)` sequences of that length, starting from their stored recurrent
    state (zeros with `zero_init_states`)."""
    rb = config["replay_buffer_config"]
    _, steps_per_phase = learning_schedule(config)
    items_per_step = max(1, config["train_batch_size"] // sequence_length)
    return LocalReplayBuffer(
        capacity=rb["capacity"],
        replay_batch_size=steps_per_phase * items_per_step,
        replay_sequence_length=sequence_length,
        replay_zero_init_states=zero_init_states,
        learning_starts=config["num_steps_sampled_before_learning_starts"],
        seed=config["seed"],
        prioritized_replay=rb["type"] in PRIORITIZED_BUFFER_TYPES,
        prioritized_replay_alpha=rb["prioritized_replay_alpha"],
        prioritized_replay_beta=beta_schedule(rb),
        prioritized_replay_eps=rb["prioritized_replay_eps"],
        compress_observations=config["compress_observations"],
        n_step=config["n_step"], gamma=config["gamma"])


class LearningRounds:
    """The replay buffer as the plan's `Replay` op sees it: `replay()` returns the buffer's
    replay (None before `learning_starts`) on every `rounds_per_phase`-th call, None on
    the others. `Replay` is pulled once per sampling round; the calls are counted in the
    shared-metrics counter `NUM_SAMPLE_ROUNDS` (so a restored algorithm keeps the phase).

    Args:
        buffer: The replay buffer.
        rounds_per_phase: Rounds per learning phase (`learning_schedule`).
    """

    def __init__(self, buffer: LocalReplayBuffer, rounds_per_phase: int):
        self.buffer = buffer
        self.rounds_per_phase = rounds_per_phase

    def replay(self, metrics: Optional[SharedMetrics] = None) -> Optional[types.Batch]:
        """The phase's replayed rows, or None (no learning this round); the round is
        counted in `metrics` (default: the running pipeline's)."""
        counters = (metrics if metrics is not None else get_shared_metrics()).counters
        counters[NUM_SAMPLE_ROUNDS] += 1
        if counters[NUM_SAMPLE_ROUNDS] % self.rounds_per_phase != 0:
            return None
        return self.buffer.replay()


class UpdateReplayPriorities:
    """Sets the replayed rows' priorities from the policies' `td_errors` under the weights
    just learned (prioritized replay only; a no-op otherwise and for empty batches).
    Priorities move only with an applied update: a policy whose learning call applied
    none (every step non-finite, `nonfinite_updates="skip"`) keeps its rows' priorities,
    and so does a row whose TD error is not finite (counted in the shared counter
    `NUM_NONFINITE_TD_ERRORS`).

    Use with `.for_each()` after `TrainOneStep`; returns its `(batch, info)` item.

    Args:
        workers: The WorkerSet (the local worker's policies compute the TD errors).
        buffer: The replay buffer the batch was replayed from.
    """

    def __init__(self, workers: types.WorkerSet, buffer: LocalReplayBuffer):
        self.workers = workers
        self.buffer = buffer

    def __call__(self, item: Tuple[types.Batch, Dict[str, types.LearnerInfo]]
                 ) -> Tuple[types.Batch, Dict[str, types.LearnerInfo]]:
        update_replay_priorities(self.workers, self.buffer, item[0], item[1],
                                 get_shared_metrics())
        return item


def update_replay_priorities(workers: types.WorkerSet, buffer: LocalReplayBuffer,
                             replayed: types.Batch, info: Dict[str, types.LearnerInfo],
                             metrics: SharedMetrics) -> None:
    """Sets the `replayed` rows' priorities from the policies' `td_errors` under the
    current weights, for the policies whose learning call (`info`) applied an update;
    rows with a non-finite TD error keep theirs and are counted in `metrics` (see
    `UpdateReplayPriorities`)."""
    if not buffer.prioritized_replay or replayed.count == 0:
        return
    priorities, num_nonfinite = replay_td_errors(workers.local_worker(), replayed, info)
    if num_nonfinite:
        metrics.counters[NUM_NONFINITE_TD_ERRORS] += num_nonfinite
    buffer.update_priorities(priorities)


def replay_td_errors(local_worker: types.Worker, replayed: types.Batch,
                     info: Dict[str, types.LearnerInfo]
                     ) -> Tuple[Dict[str, Tuple[np.ndarray, np.ndarray]], int]:
    """`({policy_id: (batch_indexes, td_errors)}, number of non-finite TD errors)` of
    replayed rows under the worker's current weights, for `LocalReplayBuffer.
    update_priorities`: only the policies whose learning call (`info`) applied an
    update, and only the rows whose TD error is finite (see `UpdateReplayPriorities`)."""
    batches: Dict[str, Any] = (replayed.policy_batches
                               if isinstance(replayed, MultiAgentBatch)
                               else {DEFAULT_POLICY_ID: replayed})
    priorities = {}
    num_nonfinite = 0
    for pid, rows in batches.items():
        if learned_nothing(info.get(pid, {}).get(LEARNER_STATS_KEY, {})):
            continue
        policy: Any = local_worker.get_policy(pid)  # a policy with `td_errors(batch)`
        td_errors = np.asarray(policy.td_errors(rows))
        finite = np.isfinite(td_errors)
        num_nonfinite += int((~finite).sum())
        priorities[pid] = (rows[BATCH_INDEXES][finite], td_errors[finite])
    return priorities, num_nonfinite


def off_policy_train_op(rollouts: LocalIterator[Any], workers: types.WorkerSet,
                        config: Dict[str, Any], buffer: LocalReplayBuffer,
                        target_updates_in_graph: bool = False
                        ) -> LocalIterator[Dict[str, types.LearnerInfo]]:
    """RLlib's DQN plan from the execution operators, one item (the learner info, `{}`
    for a round without learning) per sampling round:

        store_op = rollouts.for_each(StoreToReplayBuffer(local_buffer=buffer))
        replay_op = (Replay(local_buffer=LearningRounds(buffer, rounds_per_phase),
                            empty_when_not_ready=True)
                     .for_each(TrainOneStep(workers, num_sgd_iter=1,
                                            sgd_minibatch_size=train_batch_size))
                     .for_each(UpdateReplayPriorities(workers, buffer))
                     .for_each(UpdateTargetNetwork(workers, target_network_update_freq)))
        Concurrently([store_op, replay_op], mode="round_robin", output_indexes=[1])

    Each round stores the sampled batch, then (every `rounds_per_phase`-th round, once
    `learning_starts` steps were stored) learns on one replay of the phase's rows in one
    compiled call, updates their priorities and checks the target-update interval (every
    round, learning or not; no `UpdateTargetNetwork` with `target_updates_in_graph`).
    The rounds without learning go through the replay op as empty batches rather than as
    RLlib's weights `round_robin_weights=[rounds_per_phase, 1]`, so that the plan emits
    an item per round: an iteration may end after any round (`timesteps_per_iteration`).

    Args:
        rollouts: The sampled batches (`ParallelRollouts(workers, mode="bulk_sync")`).
        workers: The WorkerSet.
        config: The algorithm's config dict.
        buffer: The replay buffer (the algorithm's).
        target_updates_in_graph: The policies move their target networks inside the
            learning call.
    """
    rounds_per_phase, _ = learning_schedule(config)
    store_op = rollouts.for_each(StoreToReplayBuffer(local_buffer=buffer))
    replay_op = (Replay(local_buffer=LearningRounds(buffer, rounds_per_phase),
                        empty_when_not_ready=True)
                 .for_each(TrainOneStep(workers, num_sgd_iter=1,
                                        sgd_minibatch_size=config["train_batch_size"]))
                 .for_each(UpdateReplayPriorities(workers, buffer)))
    if not target_updates_in_graph:
        replay_op = replay_op.for_each(
            UpdateTargetNetwork(workers, config["target_network_update_freq"]))
    train_op = Concurrently([store_op, replay_op], mode="round_robin", output_indexes=[1])
    return train_op.for_each(_learner_info)


def _learner_info(item: Tuple[types.Batch, Dict[str, types.LearnerInfo]]
                  ) -> Dict[str, types.LearnerInfo]:
    return item[1]
