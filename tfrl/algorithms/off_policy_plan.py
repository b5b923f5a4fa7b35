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

"""

from typing import Any, Dict, Tuple

from tfrl.algorithms.off_policy_config import PRIORITIZED_BUFFER_TYPES
from tfrl.core import types
from tfrl.data.sample_batch import DEFAULT_POLICY_ID, MultiAgentBatch
from tfrl.execution.iter import get_shared_metrics
from tfrl.execution.replay_buffer import BATCH_INDEXES, LocalReplayBuffer
from tfrl.execution.train_ops import TrainOneStep, UpdateTargetNetwork

# Shared-metrics counter of sampling rounds (decides which rounds learn).
NUM_SAMPLE_ROUNDS = "num_sample_rounds"


def learning_schedule(config: Dict[str, Any]) -> Tuple[int, int]:
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


def make_replay_buffer(config: Dict[str, Any]) -> LocalReplayBuffer:
    """The `LocalReplayBuffer` of a replay-based algorithm's config: one replay holds the
    rows of a whole learning phase (`steps_per_phase * train_batch_size`)."""
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


class OffPolicyLearnPhase:
    """Stores each sampled batch; after every `rounds_per_phase`-th round replays one
    learning phase's rows and learns on them (see the module docstring).

    Use with `.for_each()` on the rollouts; returns the learner info of the phase (`{}`
    for a round without learning).

    Args:
        workers: The WorkerSet.
        config: The algorithm's config dict.
        buffer: The replay buffer (the algorithm's).
        target_updates_in_graph: The policies move their target networks inside the
            learning call (no `UpdateTargetNetwork` op).
    """

    def __init__(self, workers: types.WorkerSet, config: Dict[str, Any],
                 buffer: LocalReplayBuffer, target_updates_in_graph: bool = False):
        self.workers = workers
        self.buffer = buffer
        self.rounds_per_phase, self.steps_per_phase = learning_schedule(config)
        self.train_one_step = TrainOneStep(workers, num_sgd_iter=1,
                                           sgd_minibatch_size=config["train_batch_size"])
        self.update_target = (None if target_updates_in_graph else
                              UpdateTargetNetwork(workers, config["target_network_update_freq"]))

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
        if self.update_target is not None:
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
            policy: Any = local.get_policy(pid)  # a policy with `td_errors(batch)`
            priorities[pid] = (rows[BATCH_INDEXES], policy.td_errors(rows))
        self.buffer.update_priorities(priorities)
