"""Gradient operators: compute gradients, average them and apply them (A2C, A3C).

    grads_op = rollouts.for_each(ComputeGradients(workers))          # (grads, count)
    apply_op = grads_op.batch(4).for_each(AverageGradients()).for_each(ApplyGradients(workers))

Also importable from `tfrl.execution.train_ops` (RLlib's module path).

Example:
    >>> import numpy as np
    >>> items = [([np.array([1.0, 3.0])], 50), ([np.array([3.0, 5.0])], 50)]
    >>> grads, count = AverageGradients()(items)
    >>> grads[0].tolist(), count
    ([2.0, 4.0], 100)
"""

import logging
from typing import Any, Collection, List, Tuple

import numpy as np
import tree

from tfrl.core import types
from tfrl.execution.common import (APPLY_GRADS_TIMER, COMPUTE_GRADS_TIMER, LEARNER_INFO,
                                   STEPS_TRAINED_COUNTER, WORKER_UPDATE_TIMER, global_vars_of)
from tfrl.execution.iter import SharedMetrics, get_shared_metrics
from tfrl.execution.rollout_ops import _check_batch
from tfrl.data.sample_batch import MultiAgentBatch
from tfrl.data.sample_batch import DEFAULT_POLICY_ID

logger = logging.getLogger(__name__)


class ComputeGradients:
    """Computes gradients of the loss on each batch with the local worker.

    Use with `.for_each()`; returns `(grads, batch.count)` and stores the learner info
    under `info[LEARNER_INFO]` (per policy id). Timed in `COMPUTE_GRADS_TIMER`.

    Args:
        workers: The WorkerSet.
    """

    def __init__(self, workers: types.WorkerSet):
        self.workers = workers

    def __call__(self, samples: types.Batch) -> Tuple[Any, int]:
        return compute_gradients(self.workers, samples, get_shared_metrics())


def compute_gradients(workers: types.WorkerSet, samples: types.Batch,
                      metrics: SharedMetrics) -> Tuple[Any, int]:
    """`(grads, samples.count)` of the local worker on `samples` (see
    `ComputeGradients`); the learner info goes to `metrics.info[LEARNER_INFO]`."""
    _check_batch(samples, "ComputeGradients")
    with metrics.timers[COMPUTE_GRADS_TIMER]:
        grads, info = workers.local_worker().compute_gradients(samples)
    metrics.info[LEARNER_INFO] = (info if isinstance(samples, MultiAgentBatch)
                                  else {DEFAULT_POLICY_ID: info})
    return grads, samples.count


def apply_gradients(workers: types.WorkerSet, gradients: Any, count: int,
                    metrics: SharedMetrics, policies: Collection[str] = frozenset()) -> None:
    """Applies `gradients` (of `count` steps) on the local worker and sends the new
    weights of `policies` (default all) to every remote worker (see `ApplyGradients`)."""
    metrics.counters[STEPS_TRAINED_COUNTER] += count
    timer = metrics.timers[APPLY_GRADS_TIMER]
    with timer:
        workers.local_worker().apply_gradients(gradients)
        timer.push_units_processed(count)
    global_vars = global_vars_of(metrics)
    workers.local_worker().set_global_vars(global_vars)
    if workers.remote_workers():
        with metrics.timers[WORKER_UPDATE_TIMER]:
            workers.sync_weights(policies=sorted(policies) or None, global_vars=global_vars)


class ApplyGradients:
    """Applies `(grads, count)` items on the local worker and updates the remote weights.

    Use with `.for_each()`; returns None. Adds `count` to `STEPS_TRAINED_COUNTER`.

    Args:
        workers: The WorkerSet.
        policies: Policy ids whose weights are sent; default all.
        update_all: True: sync all remote workers. False (A3C): send the new weights only
            to the worker that produced the current item (`SharedMetrics.current_worker`).

    Raises:
        ValueError: (when called) If the item is not a `(grads, count)` pair, or
            `update_all=False` and no source worker is recorded.
    """

    def __init__(self, workers: types.WorkerSet, policies: Collection[str] = frozenset(),
                 update_all: bool = True):
        self.workers = workers
        self.local_worker = workers.local_worker()
        self.policies = frozenset(policies or ())
        self.update_all = update_all

    def __call__(self, item: Tuple[Any, int]) -> None:
        if not isinstance(item, tuple) or len(item) != 2:
            raise ValueError(f"ApplyGradients takes (gradients, count) items; received {item!r}.")
        gradients, count = item
        metrics = get_shared_metrics()
        if self.update_all:
            apply_gradients(self.workers, gradients, count, metrics, self.policies)
            return None
        metrics.counters[STEPS_TRAINED_COUNTER] += count
        timer = metrics.timers[APPLY_GRADS_TIMER]
        with timer:
            self.local_worker.apply_gradients(gradients)
            timer.push_units_processed(count)
        global_vars = global_vars_of(metrics)
        self.local_worker.set_global_vars(global_vars)
        policies = sorted(self.policies) or None
        if metrics.current_worker is None:
            raise ValueError(
                "ApplyGradients(update_all=False) could not find the worker to update: no "
                "source worker is recorded in the pipeline (SharedMetrics.current_worker). Use "
                "it after an asynchronous source (AsyncGradients, ParallelRollouts(mode='async')).")
        with metrics.timers[WORKER_UPDATE_TIMER]:
            weights = self.local_worker.get_weights(policies)
            metrics.current_worker.call("set_weights", weights, global_vars)
        return None


class AverageGradients:
    """Averages a list of `(grads, count)` items (use after `.batch(n)`).

    Returns `(element-wise unweighted mean of the grads, sum of the counts)`; grads may
    be lists of arrays or dicts of them (multi-agent).

    Raises:
        ValueError: (when called) If the list is empty.
    """

    def __call__(self, gradients: List[Tuple[Any, int]]) -> Tuple[Any, int]:
        return average_gradients(gradients)


def average_gradients(gradients: List[Tuple[Any, int]]) -> Tuple[Any, int]:
    """`(mean of the grads, sum of the counts)` of `(grads, count)` items (see
    `AverageGradients`)."""
    if not gradients:
        raise ValueError("AverageGradients received an empty list; use it after .batch(n) "
                         "with n >= 1.")
    grads = [g for g, _ in gradients]
    total = sum(int(c) for _, c in gradients)
    mean = tree.map_structure(lambda *gs: sum(np.asarray(g) for g in gs) / len(gs), *grads)
    logger.debug("Averaged %d gradients over %d steps.", len(gradients), total)
    return mean, total
