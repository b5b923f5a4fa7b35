"""ApexDQNTFPolicy: DQN's policy with Ape-X's per-worker epsilons and worker-side priorities.

With `exploration_config["type"] == "PerWorkerEpsilonGreedy"` and remote workers
(`num_workers = N > 0`), the policy on rollout worker `i` (1..N) acts epsilon-greedily
with the constant `per_worker_epsilon(i, N)` (Horgan et al. 2018, "Distributed
Prioritized Experience Replay", section 4.1: `0.4 ** (1 + 7 * (i - 1) / (N - 1))`), and the
local worker's (the learner's) with 0. Without remote workers it keeps DQN's linear
schedule (RLlib's behaviour). The worker index comes from the policy config
(`config["worker_index"]`, set by the rollout worker).

`worker_priorities(batch)` turns a sampled batch into what Ape-X's workers send to a
replay shard: n-step transitions with their priorities `|TD error| + eps` in the
`weights` column (`LocalReplayBuffer.add_batch` stores the rows with them).
"""

from typing import Any, Optional

import numpy as np

from tfrl.algorithms.apex_dqn.apex_dqn_config import ApexDQNConfig
from tfrl.algorithms.dqn.dqn_tf_policy import DQNTFPolicy
from tfrl.execution.replay_buffer import WEIGHTS
from tfrl.execution.replay_buffer_rows import adjust_nstep
from tfrl.policy.sample_batch import SampleBatch
from tfrl.utils.schedules import ConstantSchedule

# Ape-X's exploration constants (Horgan et al. 2018, section 4.1).
_BASE_EPSILON, _ALPHA = 0.4, 7.0


def per_worker_epsilon(worker_index: int, num_workers: int) -> Optional[float]:
    """Ape-X's epsilon of rollout worker `worker_index` of `num_workers` (1-based; the
    local worker, index 0, acts greedily: 0.0); None without remote workers (then the
    policy keeps the linear schedule).

    Example:
        >>> [round(per_worker_epsilon(i, 3), 4) for i in (0, 1, 2, 3)]
        [0.0, 0.4, 0.0162, 0.0007]
        >>> per_worker_epsilon(1, 1), per_worker_epsilon(0, 0)
        (0.4, None)
    """
    if num_workers <= 0:
        return None
    if worker_index <= 0:
        return 0.0
    spread = (worker_index - 1) / max(1.0, float(num_workers - 1))
    return _BASE_EPSILON ** (1.0 + spread * _ALPHA)


class ApexDQNTFPolicy(DQNTFPolicy):
    """DQN's policy (`DQNTFPolicy`; config: `ApexDQNConfig`'s fields) with Ape-X's
    exploration and worker-side priorities; see the module docstring."""

    config_class = ApexDQNConfig

    def __init__(self, observation_space: Any, action_space: Any,
                 config: Optional[dict] = None, **kwargs: Any):
        super().__init__(observation_space, action_space, config, **kwargs)
        if self.config["exploration_config"]["type"] == "PerWorkerEpsilonGreedy":
            epsilon = per_worker_epsilon(int(self.config.get("worker_index", 0)),
                                         int(self.config["num_workers"]))
            if epsilon is not None:
                self.epsilon_schedule = ConstantSchedule(epsilon)

    def worker_priorities(self, batch: SampleBatch) -> SampleBatch:
        """`batch`'s rows as n-step transitions (`n_step`, `gamma`) with their priorities
        `|TD error| + prioritized_replay_eps` under this policy's weights in the `weights`
        column (rows whose TD error is not finite get none: the column is left out and
        the shard gives them its largest priority)."""
        rows = batch.copy(shallow=True).decompress_if_needed()
        adjust_nstep(int(self.config["n_step"]), float(self.config["gamma"]), rows)
        td_errors = np.asarray(self.td_errors(rows), dtype=np.float64)  # [B]
        if np.isfinite(td_errors).all():
            eps = self.config["replay_buffer_config"]["prioritized_replay_eps"]
            rows[WEIGHTS] = np.abs(td_errors) + eps
        return rows
