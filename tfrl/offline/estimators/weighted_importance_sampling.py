"""Per-episode weighted importance sampling, as RLlib's `WeightedImportanceSampling`.

The step-wise ratios `p_t` (see `importance_sampling`) are divided by `w_t`, the mean of
`p_t` over all episodes seen so far (this estimator's running average, as RLlib keeps
it; episodes shorter than `t` do not count at `t`):

    v_target = sum_t gamma^t (p_t / w_t) r_t
"""

from typing import Any, Dict, List

import numpy as np

from tfrl.core.columns import Columns
from tfrl.data.sample_batch import SampleBatch
from tfrl.offline.estimators.importance_sampling import cumulative_ratios
from tfrl.offline.estimators.off_policy_estimator import (
    OffPolicyEstimator, discounted_return)


class WeightedImportanceSampling(OffPolicyEstimator):
    """Step-wise weighted importance sampling (see the module docstring)."""

    name = "wis"

    def __init__(self, policy: Any, gamma: float):
        super().__init__(policy, gamma)
        self.cumulative_ips_values: List[float] = []  # sum of p_t over episodes, per t
        self.episode_timestep: List[float] = []  # episodes that reached t

    def estimate_from_arrays(self, episode: SampleBatch,
                             arrays: Dict[str, np.ndarray]) -> Dict[str, float]:
        rewards = np.asarray(episode[Columns.REWARDS], dtype=np.float64)
        p = cumulative_ratios(arrays["new_prob"], episode[Columns.ACTION_PROB])
        for t, value in enumerate(p):
            if t >= len(self.cumulative_ips_values):
                self.cumulative_ips_values.append(float(value))
                self.episode_timestep.append(1.0)
            else:
                self.cumulative_ips_values[t] += float(value)
                self.episode_timestep[t] += 1.0
        w = (np.asarray(self.cumulative_ips_values[:len(p)])
             / np.asarray(self.episode_timestep[:len(p)]))
        discounts = self.gamma ** np.arange(len(rewards))
        return {"v_behavior": discounted_return(rewards, self.gamma),
                "v_target": float(np.sum(p / np.maximum(w, 1e-12) * rewards * discounts))}
