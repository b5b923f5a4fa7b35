"""Per-episode (step-wise) importance sampling, as RLlib's `ImportanceSampling`.

Precup, Sutton, Singh, "Eligibility Traces for Off-Policy Policy Evaluation", ICML 2000.
With `p_t = prod_{k<=t} pi(a_k|s_k) / mu(a_k|s_k)`:

    v_target = sum_t gamma^t p_t r_t
"""

from typing import Dict

import numpy as np

from tfrl.core.columns import Columns
from tfrl.data.sample_batch import SampleBatch
from tfrl.offline.estimators.off_policy_estimator import (
    OffPolicyEstimator, discounted_return)


def cumulative_ratios(new_prob: np.ndarray, old_prob: np.ndarray) -> np.ndarray:
    """`p_t = prod_{k<=t} new_prob_k / old_prob_k`, `[T]`.

    Raises:
        ValueError: If a behavior probability is not > 0.
    """
    old_prob = np.asarray(old_prob, dtype=np.float64)
    if np.any(old_prob <= 0):
        raise ValueError(f"action_prob (the behavior policy's) must be > 0 for importance "
                         f"sampling; received {old_prob[old_prob <= 0][:5].tolist()}.")
    return np.cumprod(np.asarray(new_prob, dtype=np.float64) / old_prob)


class ImportanceSampling(OffPolicyEstimator):
    """Step-wise importance sampling of each episode (see the module docstring)."""

    name = "is"

    def estimate_from_arrays(self, episode: SampleBatch,
                             arrays: Dict[str, np.ndarray]) -> Dict[str, float]:
        rewards = np.asarray(episode[Columns.REWARDS], dtype=np.float64)
        p = cumulative_ratios(arrays["new_prob"], episode[Columns.ACTION_PROB])
        discounts = self.gamma ** np.arange(len(rewards))
        return {"v_behavior": discounted_return(rewards, self.gamma),
                "v_target": float(np.sum(p * rewards * discounts))}
