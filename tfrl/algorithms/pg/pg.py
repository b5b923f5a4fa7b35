"""PG: vanilla policy gradient; config, training step and execution plan.

`PG.training_step`: sample `train_batch_size` steps → learn → sync weights. The same as
RLlib's plan (`execution_plan`): `ParallelRollouts` (bulk sync) →
`ConcatBatches(train_batch_size)` → `TrainOneStep` → metrics.

Example:
    >>> from tfrl.algorithms.pg import PGConfig
    >>> PGConfig().training(lr=0.01).lr
    0.01
"""

from typing import Any, Dict

from tfrl.algorithms.algorithm import Algorithm, metrics_reporting
from tfrl.algorithms.pg.pg_config import PGConfig
from tfrl.algorithms.pg.pg_tf_policy import PGTFPolicy
from tfrl.execution.rollout_ops import (ConcatBatches, ParallelRollouts,
                                        synchronous_parallel_sample)
from tfrl.execution.train_ops import TrainOneStep, sync_weights, train_one_step
from tfrl.core import types
from tfrl.execution.iter import LocalIterator
from tfrl.utils.typing import SampleBatchType


def concat_rollouts(workers: types.WorkerSet, config: Dict[str, Any],
                    min_batch_size: int) -> LocalIterator[SampleBatchType]:
    """Bulk-sync `ParallelRollouts` concatenated into batches of at least
    `min_batch_size` steps (counted as `config["multiagent"]["count_steps_by"]`)."""
    return ParallelRollouts(workers, mode="bulk_sync").combine(ConcatBatches(
        min_batch_size=min_batch_size,
        count_steps_by=config["multiagent"]["count_steps_by"]))


def sample_learn_sync(algo: Algorithm) -> Dict[str, types.LearnerInfo]:
    """One synchronous iteration (PG's and MARWIL's): sample `train_batch_size` steps
    from the workers, learn on them on the local worker, send the new weights."""
    workers, metrics = algo.workers, algo.shared_metrics
    batch = synchronous_parallel_sample(
        workers, metrics, min_batch_size=algo.config["train_batch_size"],
        count_steps_by=algo.config["multiagent"]["count_steps_by"])
    info = train_one_step(workers, batch, metrics)
    sync_weights(workers, metrics)
    return info


def execution_plan(workers: types.WorkerSet, config: Dict[str, Any]
                   ) -> LocalIterator[types.ResultDict]:
    """PG's LocalIterator of result dicts."""
    train_op = concat_rollouts(workers, config, config["train_batch_size"]).for_each(
        TrainOneStep(workers))
    return metrics_reporting(train_op, workers, config)


class PG(Algorithm):
    """Policy gradient (REINFORCE) on discounted returns (see `PGTFPolicy`)."""

    config_class = PGConfig
    default_policy_class = PGTFPolicy
    execution_plan = staticmethod(execution_plan)
    supports_in_graph = True

    def training_step(self) -> Dict[str, types.LearnerInfo]:
        """Sample `train_batch_size` steps, learn on them, send the new weights (with
        `in_graph=True`, sampling and learning in one compiled call)."""
        if self.in_graph_iteration is not None:
            info = self.in_graph_training_step()
            sync_weights(self.workers, self.shared_metrics)
            return info
        return sample_learn_sync(self)


PGConfig.algo_class = PG

# RLlib 1.x name: the default config as a flat dict.
DEFAULT_CONFIG = PGConfig().to_dict()
