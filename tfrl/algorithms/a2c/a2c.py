"""A2C: synchronous advantage actor-critic, with optional gradient microbatching.

Plan without `microbatch_size`: `ParallelRollouts` → `ConcatBatches(train_batch_size)`
→ `TrainOneStep` → metrics. With it, gradients are computed per microbatch of
`microbatch_size` steps, averaged over `ceil(train_batch_size / microbatch_size)`
microbatches and applied once (`ComputeGradients` → `AverageGradients` →
`ApplyGradients`), which bounds the memory of one gradient computation.

Example:
    >>> from tfrl.algorithms.a2c import A2CConfig
    >>> A2CConfig().training(microbatch_size=50).microbatch_size
    50
"""

import dataclasses
import math
from typing import Any, Dict, Optional

from tfrl.algorithms.a2c.a2c_tf_policy import A2CTFPolicy
from tfrl.algorithms.algorithm import Algorithm, metrics_reporting
from tfrl.algorithms.algorithm_config import AlgorithmConfig
from tfrl.algorithms.pg.pg import concat_rollouts, execution_plan as pg_execution_plan
from tfrl.execution.train_ops import ApplyGradients, AverageGradients, ComputeGradients
from tfrl.core import types
from tfrl.execution.iter import LocalIterator


@dataclasses.dataclass(frozen=True)
class A2CConfig(AlgorithmConfig):
    """A2C's config (RLlib's A2C/A3C defaults; `min_iter_time_s` 10 as in RLlib)."""

    lr: float = 1e-4
    rollout_fragment_length: int = 20
    train_batch_size: int = 200
    microbatch_size: Optional[int] = None
    use_gae: bool = True
    use_critic: bool = True
    lambda_: float = 1.0
    vf_loss_coeff: float = 0.5
    entropy_coeff: float = 0.01
    entropy_coeff_schedule: Optional[list] = None
    grad_clip: Optional[float] = 40.0
    min_iter_time_s: float = 10

    def validate(self) -> None:
        super().validate()
        if self.microbatch_size is not None and not (
                1 <= self.microbatch_size <= self.train_batch_size):
            raise ValueError(
                f"A2CConfig: microbatch_size must be None or in [1, train_batch_size="
                f"{self.train_batch_size}]; received {self.microbatch_size}.")


def execution_plan(workers: types.WorkerSet, config: Dict[str, Any]
                   ) -> LocalIterator[types.ResultDict]:
    """A2C's LocalIterator of result dicts: PG's plan, or, with `microbatch_size`,
    gradients of microbatches averaged into one update."""
    if not config["microbatch_size"]:
        return pg_execution_plan(workers, config)
    num_microbatches = math.ceil(config["train_batch_size"] / config["microbatch_size"])
    train_op = (concat_rollouts(workers, config, config["microbatch_size"])
                .for_each(ComputeGradients(workers))
                .batch(num_microbatches)
                .for_each(AverageGradients())
                .for_each(ApplyGradients(workers)))
    return metrics_reporting(train_op, workers, config)


class A2C(Algorithm):
    """Synchronous advantage actor-critic (see `A2CConfig`, `A2CTFPolicy`)."""

    config_class = A2CConfig
    default_policy_class = A2CTFPolicy
    execution_plan = staticmethod(execution_plan)


A2CConfig.algo_class = A2C

# RLlib 1.x name: the default config as a flat dict.
DEFAULT_CONFIG = A2CConfig().to_dict()
