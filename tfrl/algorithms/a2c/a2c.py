"""A2C: synchronous advantage actor-critic, with optional gradient microbatching.

`A2C.training_step` (and the same `execution_plan`) without `microbatch_size`: sample
`train_batch_size` steps → learn → sync weights. With it, gradients are computed per
microbatch of `microbatch_size` steps, averaged over
`ceil(train_batch_size / microbatch_size)` microbatches and applied once
(`ComputeGradients` → `AverageGradients` → `ApplyGradients`), which bounds the memory of
one gradient computation.

Example:
    >>> from tfrl.algorithms.a2c import A2CConfig
    >>> A2CConfig().training(microbatch_size=50).microbatch_size
    50
"""

import math
from typing import Any, Dict

from tfrl.algorithms.a2c.a2c_tf_policy import A2CTFPolicy
from tfrl.algorithms.algorithm import Algorithm, metrics_reporting
from tfrl.algorithms.algorithm_config import AlgorithmConfig
from tfrl.algorithms.a2c.a2c_config import A2CConfig
from tfrl.algorithms.pg.pg import concat_rollouts, execution_plan as pg_execution_plan
from tfrl.execution.common import LEARNER_INFO
from tfrl.execution.gradient_ops import average_gradients
from tfrl.execution.rollout_ops import synchronous_parallel_sample
from tfrl.execution.train_ops import (ApplyGradients, AverageGradients, ComputeGradients,
                                      apply_gradients, compute_gradients, sync_weights,
                                      train_one_step)
from tfrl.core import types
from tfrl.execution.iter import LocalIterator


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
    supports_in_graph = True

    def _check_in_graph(self, config: AlgorithmConfig) -> None:
        super()._check_in_graph(config)
        if config["microbatch_size"]:
            raise ValueError(
                f"in_graph=True learns on the whole batch; received microbatch_size="
                f"{config['microbatch_size']!r}. Expected None: unset microbatch_size, or set "
                ".rollouts(in_graph=False).")

    def training_step(self) -> Dict[str, types.LearnerInfo]:
        """Sample `train_batch_size` steps, learn, send the weights; with
        `microbatch_size`, average the gradients of that many steps' microbatches and
        apply them once."""
        config, workers, metrics = self.config, self.workers, self.shared_metrics
        steps_by = config["multiagent"]["count_steps_by"]
        if self.in_graph_iteration is not None:  # sample and learn in one compiled call
            info = self.in_graph_training_step()
            sync_weights(workers, metrics)
            return info
        if not config["microbatch_size"]:
            batch = synchronous_parallel_sample(
                workers, metrics, min_batch_size=config["train_batch_size"],
                count_steps_by=steps_by)
            info = train_one_step(workers, batch, metrics)
            sync_weights(workers, metrics)
            return info
        num_microbatches = math.ceil(config["train_batch_size"] / config["microbatch_size"])
        gradients = [compute_gradients(workers, synchronous_parallel_sample(
            workers, metrics, min_batch_size=config["microbatch_size"],
            count_steps_by=steps_by), metrics) for _ in range(num_microbatches)]
        apply_gradients(workers, *average_gradients(gradients), metrics)
        return metrics.info[LEARNER_INFO]


A2CConfig.algo_class = A2C

# RLlib 1.x name: the default config as a flat dict.
DEFAULT_CONFIG = A2CConfig().to_dict()
