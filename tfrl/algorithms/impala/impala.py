"""IMPALA: asynchronous actors, a learner thread, V-trace (RLlib's `impala`).

Plan with remote workers (Ray actors, or threads with `remote_backend="thread"`):

    ParallelRollouts(mode="async", num_async=max_sample_requests_in_flight_per_worker)
      -> MixInReplay(replay_buffer_num_slots, replay_proportion) -> ConcatBatches
      -> (not pulled while the learner's queue is full) -> Enqueue(learner.inqueue)
      -> BroadcastUpdateLearnerWeights                                 (the driver)
    LearnerThread (or MultiGPULearnerThread with several devices) learns on the queue
    Dequeue(learner.outqueue) -> counters, learner info              (the driver)
      (each pull records every learner output waiting, so none lags behind)

The two driver flows run `Concurrently(mode="async")`; the driver never waits for the
learner: new weights go to the worker whose batch was just queued, as a call the
driver does not wait for, every `broadcast_interval` batches when the learner has
changed them. A `train()` result holds the learner's info, the learner queue's size
statistics (`info["learner_queue"]`) and timings (`info["timing_breakdown"]`) and the
counters (`num_weight_broadcasts`, steps sampled and trained).

Without remote workers (`num_workers=0`) there is nothing to overlap sampling with on
the driver; IMPALA then samples on the local worker and learns on each train batch in
turn (`TrainOneStep`, the same compiled update), so a run is deterministic (this is
how the conformance suite runs it). RLlib runs its learner thread there too.

With several devices (`num_gpus > 1`, or logical CPUs with `_fake_gpus`), the learner
is a `MultiGPULearnerThread` and the policy learns under its `MirroredStrategy`, each
replica on a contiguous share of the batch. `learn_input="tf_data"` draws the
same minibatches from a `tf.data` pipeline iterated inside the compiled learning call
instead of gathering them in the graph (see `tfrl.policy.tf_train_step`).

Example:
    >>> from tfrl.algorithms.impala import ImpalaConfig
    >>> config = ImpalaConfig().environment("CartPole-v1").training(broadcast_interval=2)
    >>> config.algo_class.__name__, config.broadcast_interval
    ('Impala', 2)
"""

import logging
import queue
from typing import Any, Callable, ClassVar, Dict, List, Literal, Optional, Tuple, Type

from tfrl.algorithms.algorithm import Algorithm, ReportingIterator, metrics_reporting
from tfrl.algorithms.algorithm_config import AlgorithmConfig
from tfrl.algorithms.impala.impala_config import ImpalaConfig
from tfrl.algorithms.impala.impala_tf_policy import ImpalaTFPolicy
from tfrl.core import types
from tfrl.evaluation.worker_set.handles import WorkerCrashedError
from tfrl.execution.common import (AGENT_STEPS_TRAINED_COUNTER, LEARNER_INFO,
                                   STEPS_TRAINED_COUNTER, _get_global_vars)
from tfrl.execution.concurrency_ops import Concurrently, Dequeue, Enqueue
from tfrl.execution.iter import LocalIterator, NotReady, get_shared_metrics
from tfrl.execution.learner_thread import LearnerThread
from tfrl.execution.multi_gpu_learner_thread import MultiGPULearnerThread
from tfrl.execution.replay_ops import MixInReplay
from tfrl.execution.rollout_ops import ConcatBatches, ParallelRollouts
from tfrl.execution.train_ops import TrainOneStep

logger = logging.getLogger(__name__)

NUM_WEIGHT_BROADCASTS = "num_weight_broadcasts"
#: Learner passes (learn calls) so far: one per dequeued item of the learner thread,
#: `num_sgd_iter` per batch in the plan without remote workers.
NUM_LEARNER_PASSES = "num_learner_passes"

# An operator applied to every learner output `(count, info)` (e.g. APPO's target update).
AfterTrainOp = Callable[[Tuple[int, Dict[str, Any]]], Tuple[int, Dict[str, Any]]]


def num_learner_devices(workers: types.WorkerSet) -> int:
    """The devices the local worker's first policy learns on."""
    policies = list(workers.local_worker().policy_map.values())
    return len(getattr(policies[0], "devices", None) or [None]) if policies else 1


def make_learner_thread(local_worker: types.Worker, config: Dict[str, Any],
                        num_devices: int = 1) -> LearnerThread:
    """RLlib's `make_learner_thread`: a `MultiGPULearnerThread` over `num_devices`
    devices when there are several, else a `LearnerThread`."""
    if num_devices > 1:
        return MultiGPULearnerThread(
            local_worker, num_gpus=num_devices, train_batch_size=config["train_batch_size"],
            num_multi_gpu_tower_stacks=config["num_multi_gpu_tower_stacks"],
            num_sgd_iter=config["num_sgd_iter"], learner_queue_size=config["learner_queue_size"],
            learner_queue_timeout=config["learner_queue_timeout"], num_data_load_threads=1,
            _fake_gpus=config["_fake_gpus"])
    return LearnerThread(local_worker, minibatch_buffer_size=config["minibatch_buffer_size"],
                         num_sgd_iter=config["num_sgd_iter"],
                         learner_queue_size=config["learner_queue_size"],
                         learner_queue_timeout=config["learner_queue_timeout"])


class BroadcastUpdateLearnerWeights:
    """Sends the learner's weights to the worker whose batch was just queued, without
    waiting for it.

    Use with `.for_each()` on `(worker handle, batch)` items (`zip_with_source_actor`).
    Every `broadcast_interval` items, if the learner changed the weights since the last
    broadcast, the local worker's weights are taken once (`handle.share`: one `ray.put`)
    and counted in `num_weight_broadcasts`; each item's worker then gets the latest
    taken weights and the global vars (`set_weights` without waiting; a failed call is
    logged when it completes).

    Args:
        learner_thread: The learner (its `weights_updated` flag is reset here).
        workers: The WorkerSet (its local worker holds the learner's policies).
        broadcast_interval: Items between two takes of the weights.
    """

    def __init__(self, learner_thread: LearnerThread, workers: types.WorkerSet,
                 broadcast_interval: int):
        self.learner_thread = learner_thread
        self.workers = workers
        self.broadcast_interval = int(broadcast_interval)
        self.steps_since_broadcast = 0
        self.weights: Any = None

    def __call__(self, item: Tuple[Any, types.Batch]) -> Tuple[Any, types.Batch]:
        handle, batch = item
        self.steps_since_broadcast += 1
        local = self.workers.local_worker()
        if (self.steps_since_broadcast >= self.broadcast_interval
                and self.learner_thread.weights_updated) or self.weights is None:
            self.learner_thread.weights_updated = False
            weights = local.get_weights()
            self.weights = handle.share(weights) if handle is not None else weights
            self.steps_since_broadcast = 0
            get_shared_metrics().counters[NUM_WEIGHT_BROADCASTS] += 1
        global_vars = _get_global_vars()
        if handle is not None:
            future = handle.call("set_weights", self.weights, global_vars=global_vars)
            future.add_done_callback(_log_failure(getattr(handle, "worker_index", "?")))
        local.set_global_vars(global_vars)
        return item


def _log_failure(worker_index: Any) -> Callable[[Any], None]:
    def check(future: Any) -> None:
        error = future.exception()
        if error is not None:
            logger.warning("set_weights on worker %s failed: %r (its next sample call "
                           "reports it, and a recreated worker gets the weights on start).",
                           worker_index, error)
    return check


def record_steps_trained(item: Tuple[int, Dict[str, Any]]) -> Tuple[int, Dict[str, Any]]:
    """Counts a learner output `(count, info)` as trained steps and keeps its info."""
    count, info = item
    metrics = get_shared_metrics()
    metrics.counters[STEPS_TRAINED_COUNTER] += count
    metrics.counters[AGENT_STEPS_TRAINED_COUNTER] += count
    metrics.counters[NUM_LEARNER_PASSES] += 1
    metrics.info[LEARNER_INFO] = info
    return item


def _decompress(batch: types.Batch) -> types.Batch:
    return batch.decompress_if_needed() if hasattr(batch, "decompress_if_needed") else batch


def gather_train_batches(workers: types.WorkerSet, config: Dict[str, Any],
                         mode: Literal["bulk_sync", "async"]) -> LocalIterator[types.Batch]:
    """Sampled batches (with replayed ones mixed in) concatenated to `train_batch_size`."""
    rollouts = ParallelRollouts(workers, mode=mode,
                                num_async=config["max_sample_requests_in_flight_per_worker"])
    return (rollouts.for_each(_decompress)
            .combine(MixInReplay(num_slots=config["replay_buffer_num_slots"],
                                 replay_proportion=config["replay_proportion"]))
            .combine(ConcatBatches(
                min_batch_size=config["train_batch_size"],
                count_steps_by=config["multiagent"]["count_steps_by"])))


def throttled(source: LocalIterator[Any], full: Callable[[], bool]) -> LocalIterator[Any]:
    """`source`'s items, not pulled (NotReady instead) while `full()`: the learner's
    bounded queue holds the sampling back, so sampled batches neither pile up nor get
    dropped (the samples in flight on the workers are bounded by
    `max_sample_requests_in_flight_per_worker`)."""

    def base(timeout: Optional[float] = None):
        source.timeout = timeout  # Concurrently(mode="async") asks not to block
        items = source._raw()  # NotReady included, as the union pulls its parents
        while True:
            yield NotReady() if full() else next(items)

    return LocalIterator(base, source.shared_metrics, name="Throttled")


class LearnerPlan(ReportingIterator):
    """The result iterator of IMPALA's plan, holding its learner thread (None without
    remote workers) so that the algorithm can stop it."""

    def __init__(self, results: ReportingIterator, learner_thread: Optional[LearnerThread]):
        super().__init__(results, results.metrics_op)
        self.learner_thread = learner_thread

    def stop(self) -> None:
        """Stops the learner thread (and its loader threads)."""
        if self.learner_thread is not None:
            self.learner_thread.stop()


def _count_passes(num_sgd_iter: int) -> Callable[[Any], Any]:
    def count(item):
        batch, info = item
        get_shared_metrics().counters[NUM_LEARNER_PASSES] += num_sgd_iter
        return batch.count, info
    return count


def execution_plan(workers: types.WorkerSet, config: Dict[str, Any],
                   after_train: Optional[List[AfterTrainOp]] = None) -> LearnerPlan:
    """IMPALA's LocalIterator of result dicts (see the module docstring).

    Args:
        after_train: Operators applied to each learner output `(count, info)`, after it
            is counted (APPO's target-network update).
    """
    after_train = list(after_train or [])
    if not workers.remote_workers():
        train_op = (gather_train_batches(workers, config, "bulk_sync")
                    .for_each(TrainOneStep(workers))
                    .for_each(_count_passes(config["num_sgd_iter"])))
        for op in after_train:
            train_op = train_op.for_each(op)
        return LearnerPlan(metrics_reporting(train_op, workers, config), None)

    learner = make_learner_thread(workers.local_worker(), config, num_learner_devices(workers))
    learner.start()
    enqueue_op = (throttled(gather_train_batches(workers, config, "async"), learner.inqueue.full)
                  .for_each(Enqueue(learner.inqueue))
                  .zip_with_source_actor()
                  .for_each(BroadcastUpdateLearnerWeights(learner, workers,
                                                          config["broadcast_interval"])))

    def learner_alive() -> bool:
        learner.raise_if_failed()
        return learner.is_alive()

    def record(item: Tuple[int, Dict[str, Any]]) -> Tuple[int, Dict[str, Any]]:
        item = record_steps_trained(item)
        for op in after_train:
            item = op(item)
        return item

    def record_all_ready(item: Tuple[int, Dict[str, Any]]) -> Tuple[int, Dict[str, Any]]:
        """Records `item` and every learner output already waiting behind it. One output
        per pull would leave a backlog that never shrinks (the union pulls sampling and
        learner outputs in turn), e.g. the batches queued while the learner traces its
        first call: the trained counters and learner info would lag by it for good."""
        item = record(item)
        while True:
            try:
                item = record(learner.outqueue.get_nowait())
            except queue.Empty:
                return item

    dequeue_op = Dequeue(learner.outqueue, check=learner_alive).for_each(record_all_ready)
    merged = Concurrently([enqueue_op, dequeue_op], mode="async", output_indexes=[1])
    reporting = metrics_reporting(merged, workers, config)
    with_learner = reporting.for_each(learner.add_learner_metrics)
    return LearnerPlan(ReportingIterator(with_learner, reporting.metrics_op), learner)


class Impala(Algorithm):
    """IMPALA (see `ImpalaConfig`, `ImpalaTFPolicy` and the module docstring).

    `stop()` ends the learner thread with the workers. A `train()` that raised leaves a
    new plan with a new learner thread (the old one is stopped; batches it had queued
    are dropped, not trained on twice); with `recreate_failed_workers`, a crashed
    remote worker is recreated within the `train()` call (see `train`).
    """

    config_class: ClassVar[Type[AlgorithmConfig]] = ImpalaConfig
    default_policy_class: Optional[type] = ImpalaTFPolicy
    execution_plan = staticmethod(execution_plan)

    @property
    def learner_thread(self) -> Optional[LearnerThread]:
        """The running learner thread (None without remote workers)."""
        return getattr(self.train_exec_impl, "learner_thread", None)

    def train(self) -> Dict[str, Any]:
        """`Algorithm.train()`; with `recreate_failed_workers`, a remote worker that
        crashed while sampling is recreated and the iteration runs again on a new plan
        (a new learner thread: what the old one had queued is dropped, so no batch is
        trained twice, and none is counted twice as sampled)."""
        try:
            return super().train()
        except WorkerCrashedError as e:
            if not self.algo_config.recreate_failed_workers:
                raise
            logger.warning("%s; recreating it and running the iteration again.", e)
            # (WorkerSet's; not part of the WorkerSet protocol of tfrl.core.types)
            recreate = getattr(self.workers, "recreate_failed_workers", None)
            if recreate is not None:
                recreate()
            return super().train()

    def _stop_learner(self) -> None:
        plan = self.train_exec_impl
        if isinstance(plan, LearnerPlan):
            plan.stop()

    def _drop_plan(self) -> None:
        """Stops the failed plan's learner thread and starts a new plan (a new learner
        thread) at once; if that fails too, the next `train()` builds it, and the
        error of the failed step is the one that reaches the caller."""
        self._stop_learner()
        super()._drop_plan()
        try:
            self._build_plan()
        except Exception as e:  # Not hiding the step's own error.
            logger.warning("Building a new plan after a failed step raised %s: %s; the "
                           "next train() tries again.", type(e).__name__, e)

    def stop(self) -> None:
        """Stops the learner thread, then the workers."""
        self._stop_learner()
        super().stop()

    cleanup = stop


ImpalaConfig.algo_class = Impala
ImpalaTrainer = Impala  # RLlib 1.x name

# RLlib 1.x name: the default config as a flat dict.
DEFAULT_CONFIG = ImpalaConfig().to_dict()
