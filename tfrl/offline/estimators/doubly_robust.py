"""Doubly robust off-policy evaluation, as RLlib's `DoublyRobust`.

Jiang, Li, "Doubly Robust Off-policy Value Evaluation for Reinforcement Learning", ICML
2016. Backwards over an episode, with `rho_t = pi(a_t|s_t) / mu(a_t|s_t)` and `Q`, `V`
from fitted Q-evaluation (`FQEModel`):

    v_target_t = V(s_t) + rho_t * (r_t + gamma * v_target_{t+1} - Q(s_t, a_t))

`process(batch)` first fits the model on the batch, then estimates its episodes.
"""

from typing import Dict

import numpy as np

from tfrl.core.columns import Columns
from tfrl.data.sample_batch import SampleBatch
from tfrl.offline.estimators.direct_method import DirectMethod
from tfrl.offline.estimators.importance_sampling import cumulative_ratios
from tfrl.offline.estimators.off_policy_estimator import discounted_return, target_action_prob


def doubly_robust_value(rewards: np.ndarray, rho: np.ndarray, q_values: np.ndarray,
                        v_values: np.ndarray, gamma: float) -> float:
    """`v_target_0` of the recursion in the module docstring (all inputs `[T]`)."""
    v_target = 0.0
    for t in reversed(range(len(rewards))):
        v_target = v_values[t] + rho[t] * (rewards[t] + gamma * v_target - q_values[t])
    return float(v_target)


class DoublyRobust(DirectMethod):
    """Doubly robust estimation with an FQE model (see the module docstring)."""

    name = "dr"

    def batch_arrays(self, batch: SampleBatch) -> Dict[str, np.ndarray]:
        """`new_prob`, `q` (`Q(s_t, a_t)`) and `v` (`V(s_t)`) of every row."""
        obs = batch[Columns.OBS]
        return {"new_prob": target_action_prob(self.policy, batch),
                "q": self.model.estimate_q(obs, batch[Columns.ACTIONS]),
                "v": self.model.estimate_v(obs)}

    def estimate_from_arrays(self, episode: SampleBatch,
                             arrays: Dict[str, np.ndarray]) -> Dict[str, float]:
        rewards = np.asarray(episode[Columns.REWARDS], dtype=np.float64)
        old_prob = np.asarray(episode[Columns.ACTION_PROB], dtype=np.float64)
        cumulative_ratios(old_prob, old_prob)  # checks old_prob > 0
        rho = arrays["new_prob"] / old_prob
        return {"v_behavior": discounted_return(rewards, self.gamma),
                "v_target": doubly_robust_value(rewards, rho, arrays["q"], arrays["v"],
                                                self.gamma)}
