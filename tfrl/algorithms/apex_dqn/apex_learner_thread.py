"""ApexLearnerThread: the learner thread of Ape-X (RLlib's `dqn/learner_thread.py`).

It takes `(shard_index, replayed_batch)` items from `inqueue`, learns on each batch once
(one gradient step on its `train_batch_size` rows), computes the replayed rows' new
priorities (their TD errors under the new weights) and puts a `LearnerOutput` into
`outqueue`; the driver sends the priorities back to shard `shard_index`. Without
remote workers the driver calls `step()` itself, so that learning happens in turn with
sampling on the driver's thread (deterministic; nothing to overlap with).
"""

from typing import Any, Dict, NamedTuple, Tuple

import numpy as np

from tfrl.algorithms.off_policy_plan import replay_td_errors
from tfrl.core import types
from tfrl.execution.learner_thread import LearnerThread
from tfrl.execution.train_ops import learn_on_batch


class LearnerOutput(NamedTuple):
    """One replayed batch learned on: where it came from, its rows' TD errors
    (`{policy_id: (batch_indexes, td_errors)}`, empty without prioritized replay), its
    steps, the learner info and how many TD errors were not finite (those rows keep
    their priorities)."""

    shard_index: int
    td_errors: Dict[str, Tuple[np.ndarray, np.ndarray]]
    env_steps: int
    agent_steps: int
    info: Dict[str, types.LearnerInfo]
    num_nonfinite: int


class ApexLearnerThread(LearnerThread):
    """`LearnerThread` on `(shard_index, batch)` items (see the module docstring).

    Args:
        local_worker: The worker holding the policies to train.
        train_batch_size: Rows per gradient step (the replayed batch's size).
        learner_queue_size: Capacity of `inqueue`.
        prioritized_replay: Compute the new priorities (else `td_errors` stays empty).
    """

    def __init__(self, local_worker: types.Worker, train_batch_size: int,
                 learner_queue_size: int, prioritized_replay: bool):
        # No queue timeout: nothing arrives before learning starts.
        super().__init__(local_worker, minibatch_buffer_size=1, num_sgd_iter=1,
                         learner_queue_size=learner_queue_size, learner_queue_timeout=None)
        self.name = "tfrl-apex-learner"
        self.train_batch_size = int(train_batch_size)
        self.prioritized_replay = bool(prioritized_replay)

    def _learn(self, item: Any) -> Dict[str, types.LearnerInfo]:
        _, batch = item
        return learn_on_batch(self.local_worker, batch, num_sgd_iter=1,
                              sgd_minibatch_size=self.train_batch_size)

    def _output(self, item: Any) -> LearnerOutput:
        shard_index, batch = item
        td_errors: Dict[str, Tuple[np.ndarray, np.ndarray]] = {}
        num_nonfinite = 0
        if self.prioritized_replay:
            td_errors, num_nonfinite = replay_td_errors(self.local_worker, batch,
                                                        self.learner_info)
        return LearnerOutput(int(shard_index), td_errors, int(batch.env_steps()),
                             int(batch.agent_steps()), self.learner_info, num_nonfinite)
