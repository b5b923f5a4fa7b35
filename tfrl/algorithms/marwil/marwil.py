"""MARWIL: advantage-weighted imitation of logged (or sampled) data.

`MARWIL.training_step` (as PG's): sample `train_batch_size` steps (the workers' `input`
decides where the batches come from: their envs, or experience files) → learn → sync
weights; `execution_plan` is PG's. With file input, `evaluation_interval` runs the learnt policy
on the env (`evaluation_config={"input": "sampler"}` by default) and
`input_evaluation` (e.g. `["is", "wis"]`) estimates it from the data.

Example:
    >>> from tfrl.algorithms.marwil import MARWILConfig
    >>> MARWILConfig().training(beta=0.0).beta
    0.0
"""

from typing import Dict

from tfrl.algorithms.algorithm import Algorithm
from tfrl.algorithms.marwil.marwil_config import MARWILConfig
from tfrl.algorithms.marwil.marwil_tf_policy import MARWILTFPolicy
from tfrl.algorithms.pg.pg import execution_plan, sample_learn_sync
from tfrl.core import types


class MARWIL(Algorithm):
    """Monotonic advantage re-weighted imitation learning (see `MARWILTFPolicy`)."""

    config_class = MARWILConfig
    default_policy_class = MARWILTFPolicy
    execution_plan = staticmethod(execution_plan)

    def training_step(self) -> Dict[str, types.LearnerInfo]:
        """Read (or sample) `train_batch_size` steps, learn on them, send the weights."""
        return sample_learn_sync(self)


MARWILConfig.algo_class = MARWIL

# RLlib 1.x name: the default config as a flat dict.
DEFAULT_CONFIG = MARWILConfig().to_dict()
