"""PG: vanilla policy gradient; config and execution plan.

Plan: `ParallelRollouts` (bulk sync) → `ConcatBatches(train_batch_size)` →
`TrainOneStep` → metrics.

Example:
    >>> from tfrl.algorithms.pg import PGConfig
    >>> PGConfig().training(lr=0.01).lr
    0.01
"""

from typing import Any, Dict

from tfrl.algorithms.algorithm import Algorithm, metrics_reporting
from tfrl.algorithms.pg.pg_config import PGConfig
from tfrl.algorithms.pg.pg_tf_policy import PGTFPolicy


def concat_rollouts(workers: Any, config: Dict[str, Any], min_batch_size: int) -> Any:
    """Bulk-sync `ParallelRollouts` concatenated into batches of at least
    `min_batch_size` steps (counted as `config["multiagent"]["count_steps_by"]`)."""
    from tfrl.execution.rollout_ops import ConcatBatches, ParallelRollouts

    return ParallelRollouts(workers, mode="bulk_sync").combine(ConcatBatches(
        min_batch_size=min_batch_size,
        count_steps_by=config["multiagent"].get("count_steps_by", "env_steps")))


def execution_plan(workers: Any, config: Dict[str, Any]) -> Any:
    """PG's LocalIterator of result dicts."""
    from tfrl.execution.train_ops import TrainOneStep

    train_op = concat_rollouts(workers, config, config["train_batch_size"]).for_each(
        TrainOneStep(workers))
    return metrics_reporting(train_op, workers, config)


class PG(Algorithm):
    """Policy gradient (REINFORCE) on discounted returns (see `PGTFPolicy`)."""

    config_class = PGConfig
    default_policy_class = PGTFPolicy
    execution_plan = staticmethod(execution_plan)


PGConfig.algo_class = PG

# RLlib 1.x name: the default config as a flat dict.
DEFAULT_CONFIG = PGConfig().to_dict()
