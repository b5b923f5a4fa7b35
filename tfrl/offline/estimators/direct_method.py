"""The direct method: `v_target = V(s_0)` of each episode under a fitted Q model.

Beygelzimer, Langford, "The Offset Tree for Learning with Partial Labels", KDD 2009 (the
direct method of off-policy evaluation); Q from fitted Q-evaluation (`FQEModel`), as
RLlib's `DirectMethod`. `process(batch)` first fits the model on the batch (`train`),
then estimates its episodes.
"""

from typing import Any, Dict, Optional

import numpy as np

from tfrl.core.columns import Columns
from tfrl.data.sample_batch import SampleBatch
from tfrl.offline.estimators.fqe_model import FQEModel
from tfrl.offline.estimators.off_policy_estimator import OffPolicyEstimator, discounted_return


class DirectMethod(OffPolicyEstimator):
    """The direct method with an FQE model.

    Args:
        policy: The target policy (Discrete actions).
        gamma: The discount factor.
        q_model_config: Keyword arguments of `FQEModel` (`hiddens`, `n_iters`, `lr`,
            `minibatch_size`, `tau`, `seed`).
    """

    name = "dm"

    def __init__(self, policy: Any, gamma: float, q_model_config: Optional[Dict] = None):
        super().__init__(policy, gamma)
        self.model = FQEModel(policy, gamma, **(q_model_config or {}))

    def train(self, batch: SampleBatch) -> Dict[str, float]:
        """Fits the FQE model on `batch`."""
        return self.model.train(batch)

    def process(self, batch: Any) -> None:
        """Fits the model on `batch`, then estimates its episodes."""
        self.train(batch)
        super().process(batch)

    def batch_arrays(self, batch: SampleBatch) -> Dict[str, np.ndarray]:
        """`v`: the model's `V(s_t)` of every row."""
        return {"v": self.model.estimate_v(batch[Columns.OBS])}

    def estimate_from_arrays(self, episode: SampleBatch,
                             arrays: Dict[str, np.ndarray]) -> Dict[str, float]:
        return {"v_behavior": discounted_return(episode[Columns.REWARDS], self.gamma),
                "v_target": float(arrays["v"][0])}
