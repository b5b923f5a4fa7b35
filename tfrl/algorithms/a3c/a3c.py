"""A3C: asynchronous advantage actor-critic (Mnih et al., ICML 2016).

Plan: `AsyncGradients` (each remote worker samples a rollout fragment and computes the
gradient of A2C's loss on it, with the weights it last received) → `ApplyGradients(
update_all=False)` (the driver applies each gradient as it arrives and sends the new
weights only to the worker that produced it) → metrics. Without remote workers
(`num_workers=0`) the driver's worker samples a fragment, computes and applies its
gradient in turn.

Example:
    >>> from tfrl.algorithms.a3c import A3CConfig
    >>> A3CConfig().rollouts(num_workers=2).num_workers
    2
"""

from typing import Any, Dict

from tfrl.algorithms.a3c.a3c_config import A3CConfig
from tfrl.algorithms.a3c.a3c_tf_policy import A3CTFPolicy
from tfrl.algorithms.algorithm import Algorithm, metrics_reporting
from tfrl.core import types
from tfrl.execution.iter import LocalIterator
from tfrl.execution.rollout_ops import AsyncGradients, ParallelRollouts
from tfrl.execution.train_ops import ApplyGradients, ComputeGradients


def execution_plan(workers: types.WorkerSet, config: Dict[str, Any]
                   ) -> LocalIterator[types.ResultDict]:
    """A3C's LocalIterator of result dicts (see the module docstring)."""
    if workers.remote_workers():
        train_op = AsyncGradients(workers).for_each(ApplyGradients(workers, update_all=False))
    else:
        train_op = (ParallelRollouts(workers, mode="bulk_sync")
                    .for_each(ComputeGradients(workers))
                    .for_each(ApplyGradients(workers)))
    return metrics_reporting(train_op, workers, config)


class A3C(Algorithm):
    """Asynchronous advantage actor-critic (see `A3CConfig`, `A3CTFPolicy`)."""

    config_class = A3CConfig
    default_policy_class = A3CTFPolicy
    execution_plan = staticmethod(execution_plan)


A3CConfig.algo_class = A3C

# RLlib 1.x name: the default config as a flat dict.
DEFAULT_CONFIG = A3CConfig().to_dict()
