"""Rollout operators: sampling from workers and shaping the sampled batches.

`ParallelRollouts` is the source of an on-policy plan; `ConcatBatches`,
`SelectExperiences` and `StandardizeFields` shape its batches before training:

    rollouts = ParallelRollouts(workers, mode="bulk_sync")
    train_op = (rollouts.combine(ConcatBatches(min_batch_size=4000))
                        .for_each(StandardizeFields(["advantages"]))
                        .for_each(TrainOneStep(workers)))

Example:
    >>> import numpy as np
    >>> from tfrl.data.sample_batch import SampleBatch
    >>> from tfrl.execution.iter import from_items
    >>> batches = [SampleBatch({"advantages": np.arange(4.0)}) for _ in range(3)]
    >>> it = from_items(batches).combine(ConcatBatches(min_batch_size=8))
    >>> it = it.for_each(StandardizeFields(["advantages"]))
    >>> out = next(it)
    >>> adv = out["advantages"]
    >>> out.count, round(float(np.mean(adv)), 6), round(float(np.std(adv)), 6)
    (8, 0.0, 1.0)
"""

import logging
import time
from typing import Any, Collection, List, Literal, Optional, Tuple, Union, overload, cast

from tfrl.core import types
from tfrl.execution.common import (AGENT_STEPS_SAMPLED_COUNTER, GRAD_WAIT_TIMER,
                                   LEARNER_INFO, LEARNER_STATS_KEY, SAMPLE_TIMER,
                                   STEPS_SAMPLED_COUNTER)
from tfrl.execution.iter import LocalIterator, SharedMetrics, get_shared_metrics
from tfrl.execution.worker_pool import WorkerPool, _check_num_async
from tfrl.data.sample_batch import MultiAgentBatch
from tfrl.data.sample_batch import DEFAULT_POLICY_ID, SampleBatch
from tfrl.data.sample_batch import concat_samples
from tfrl.utils.checks import check_int
from tfrl.utils.typing import SampleBatchType
from tfrl.utils.sgd import standardized

logger = logging.getLogger(__name__)

ROLLOUT_MODES = ("bulk_sync", "async", "raw")


def _check_batch(batch: object, where: str) -> None:
    if not isinstance(batch, (SampleBatch, MultiAgentBatch)):
        raise TypeError(
            f"{where} takes SampleBatch or MultiAgentBatch items; received "
            f"{type(batch).__name__}."
        )


def _count_sampled(batch: SampleBatchType, metrics: SharedMetrics) -> SampleBatchType:
    _check_batch(batch, "ParallelRollouts")
    metrics.counters[STEPS_SAMPLED_COUNTER] += batch.env_steps()
    metrics.counters[AGENT_STEPS_SAMPLED_COUNTER] += batch.agent_steps()
    return batch


def _report_timesteps(batch: SampleBatchType) -> SampleBatchType:
    return _count_sampled(batch, get_shared_metrics())


def sample_round(workers: types.WorkerSet, metrics: SharedMetrics) -> SampleBatchType:
    """One bulk-synchronous sampling round, counted in `metrics`: one batch from every
    remote worker concatenated (`workers.sample_all()`), or the local worker's batch
    without remote workers; the item `ParallelRollouts(workers, mode="bulk_sync")`
    emits."""
    batch: Any
    if not workers.remote_workers():
        batch = workers.local_worker().sample()
    else:
        sample_all = getattr(workers, "sample_all", None)
        batches = (sample_all() if sample_all is not None
                   else [f.result() for f in [h.call("sample") for h in workers.remote_workers()]])
        batch = concat_samples(batches)
    return _count_sampled(batch, metrics)


def synchronous_parallel_sample(workers: types.WorkerSet, metrics: SharedMetrics, *,
                                min_batch_size: int, count_steps_by: str = "env_steps",
                                policies: Optional[Collection[str]] = None
                                ) -> SampleBatchType:
    """Sampling rounds (`sample_round`) until they hold `min_batch_size` steps, then their
    concatenation: one item of `ParallelRollouts(workers, mode="bulk_sync")
    [.for_each(SelectExperiences(policies))].combine(ConcatBatches(min_batch_size,
    count_steps_by))` (RLlib 2.x's name for a synchronous sample). With `policies`, each
    round keeps only their batches (after it was counted as sampled). The sampling time
    goes to the `SAMPLE_TIMER` timer."""
    concat = ConcatBatches(min_batch_size, count_steps_by)
    with metrics.timers[SAMPLE_TIMER] as timer:
        while True:
            batch = sample_round(workers, metrics)
            if policies is not None:
                batch = select_experiences(batch, frozenset(policies))
            out = concat.collect(batch)
            if out is not None:
                timer.push_units_processed(out.count)
                return out


@overload
def ParallelRollouts(workers: types.WorkerSet, *,
                     mode: Literal["bulk_sync", "async"] = "bulk_sync",
                     num_async: int = 1) -> LocalIterator[SampleBatchType]: ...


@overload
def ParallelRollouts(workers: types.WorkerSet, *, mode: str,
                     num_async: int = 1) -> Union[LocalIterator[SampleBatchType], WorkerPool]: ...


def ParallelRollouts(workers: types.WorkerSet, *, mode: str = "bulk_sync",
                     num_async: int = 1) -> Union[LocalIterator[SampleBatchType], WorkerPool]:
    """Experiences sampled by the workers of a WorkerSet, as a LocalIterator.

    First syncs the remote workers' weights (`workers.sync_weights()`). Without remote
    workers, the local worker samples (`local_worker().sample()`), whatever the mode.
    Every emitted batch adds its env steps to `STEPS_SAMPLED_COUNTER` and its agent
    steps to `AGENT_STEPS_SAMPLED_COUNTER`.

    Args:
        workers: The WorkerSet: `local_worker()`, `remote_workers()`, `sync_weights()`.
        mode: "bulk_sync": one batch from every remote worker per item, concatenated
            (count = rollout_fragment_length x num_workers); through
            `workers.sample_all()` when the WorkerSet has it, else one
            `handle.call("sample")` per remote worker. "async": each worker's batch
            as soon as it is ready (no order guarantee; the producing handle is recorded in
            `SharedMetrics.current_worker`). "raw": the `WorkerPool` over the remote
            workers' `sample`; the caller gathers and counts.
        num_async: In "async" mode, the most `sample` calls in flight per worker.

    Returns:
        A LocalIterator of SampleBatch/MultiAgentBatch (a `WorkerPool` in "raw" mode
        with remote workers).

    Raises:
        ValueError: If `mode` is not one of the three, or `num_async` is not an int >= 1.
    """
    if mode not in ROLLOUT_MODES:
        raise ValueError(f"mode must be one of 'bulk_sync', 'async', 'raw', got '{mode}'")
    _check_num_async(num_async)
    workers.sync_weights()

    if not workers.remote_workers():
        def sample_locally(timeout=None):
            while True:
                yield workers.local_worker().sample()

        return LocalIterator(sample_locally, SharedMetrics(),
                             name="ParallelRollouts").for_each(_report_timesteps)

    pool = WorkerPool(workers.remote_workers)
    if mode == "raw":
        return pool
    if mode == "bulk_sync":
        sample_all = getattr(workers, "sample_all", None)
        if sample_all is None:
            source = pool.batch_across_shards()
        else:  # the WorkerSet's own gather, which recreates crashed workers
            def sample_everywhere(timeout=None):
                while True:
                    yield sample_all()

            source = LocalIterator(sample_everywhere, SharedMetrics(), name="ParallelRollouts")
        return source.for_each(concat_samples).for_each(_report_timesteps)
    return pool.gather_async(num_async=num_async).for_each(_report_timesteps)


def _sample_and_compute_gradients(worker: types.Worker) -> Tuple[Tuple[Any, Any], int]:
    samples = worker.sample()
    return worker.compute_gradients(samples), samples.count


class _RecordGradientMetrics:
    """Counts the steps behind each gradient and records its learner info and wait time."""

    def __init__(self):
        self.fetch_start_time = time.perf_counter()

    def _on_fetch_start(self) -> None:
        self.fetch_start_time = time.perf_counter()

    def __call__(self, item: Tuple[Tuple[Any, Any], int]) -> Tuple[Any, int]:
        (grads, info), count = item
        metrics = get_shared_metrics()
        metrics.counters[STEPS_SAMPLED_COUNTER] += count
        metrics.counters[AGENT_STEPS_SAMPLED_COUNTER] += count
        metrics.info[LEARNER_INFO] = ({DEFAULT_POLICY_ID: info} if LEARNER_STATS_KEY in info
                                      else info)
        metrics.timers[GRAD_WAIT_TIMER].push(time.perf_counter() - self.fetch_start_time)
        return grads, count


def AsyncGradients(workers: types.WorkerSet) -> LocalIterator[Tuple[Any, int]]:
    """Gradients computed by the remote workers on their own samples, as they arrive.

    Each remote worker repeatedly runs `compute_gradients(sample())`; the iterator
    yields `(grads, count)`, adds `count` to the sampled-steps counters, stores the
    worker's learner info under `info[LEARNER_INFO]` and times the wait in
    `GRAD_WAIT_TIMER`. The producing handle is in `SharedMetrics.current_worker` (for
    `ApplyGradients(update_all=False)`).

    Args:
        workers: The WorkerSet; it must have remote workers.

    Raises:
        ValueError: If the WorkerSet has no remote workers.
    """
    if not workers.remote_workers():
        raise ValueError(
            "AsyncGradients needs remote workers to compute gradients on; the WorkerSet has "
            "none. Set num_workers > 0, or use ParallelRollouts + ComputeGradients."
        )
    workers.sync_weights()
    pool = WorkerPool(workers.remote_workers,
                      submit=lambda handle: handle.apply(_sample_and_compute_gradients))
    return pool.gather_async(num_async=1).for_each(_RecordGradientMetrics())


class ConcatBatches:
    """Buffers batches until they hold `min_batch_size` steps, then emits their concatenation.

    Use with `.combine()`: returns `[]` while buffering and `[batch]` once the buffered
    step count reaches `min_batch_size` (the output holds at least that many steps,
    exactly that many when the inputs divide it; a single buffered batch is emitted
    itself, not copied). Pushes the time between two outputs and the output's steps to
    the `SAMPLE_TIMER` timer.

    Args:
        min_batch_size: Steps per output batch.
        count_steps_by: "env_steps" (`batch.env_steps()`) or "agent_steps".

    Raises:
        ValueError: If `min_batch_size` is not an int >= 1 or `count_steps_by` is unknown.
    """

    def __init__(self, min_batch_size: int, count_steps_by: str = "env_steps"):
        check_int(min_batch_size, "ConcatBatches(min_batch_size=...)", 1)
        if count_steps_by not in ("env_steps", "agent_steps"):
            raise ValueError(
                "ConcatBatches(count_steps_by=...) must be 'env_steps' or 'agent_steps'; "
                f"received {count_steps_by!r}."
            )
        self.min_batch_size = int(min_batch_size)
        self.count_steps_by = count_steps_by
        self.buffer: List[types.Batch] = []
        self.count = 0
        self.last_batch_time = time.perf_counter()

    def __call__(self, batch: types.Batch) -> List[SampleBatchType]:
        out = self.collect(batch)
        if out is None:
            return []
        now = time.perf_counter()
        timer = get_shared_metrics().timers[SAMPLE_TIMER]
        timer.push(now - self.last_batch_time)
        timer.push_units_processed(out.count)
        self.last_batch_time = now
        return [out]

    def collect(self, batch: types.Batch) -> Optional[SampleBatchType]:
        """Buffers `batch`; the concatenation once `min_batch_size` steps are buffered
        (the buffer then starts empty), else None."""
        _check_batch(batch, "ConcatBatches")
        self.buffer.append(batch)
        by_env = self.count_steps_by == "env_steps"
        self.count += batch.env_steps() if by_env else batch.agent_steps()
        if self.count < self.min_batch_size:
            return None
        if self.count > 2 * self.min_batch_size:
            logger.info("ConcatBatches collected %d steps for min_batch_size=%d; consider a "
                        "smaller rollout_fragment_length.", self.count, self.min_batch_size)
        # One batch passes as it is (no copy: a pixel batch is tens of MB).
        out = (cast(SampleBatchType, self.buffer[0]) if len(self.buffer) == 1
               else concat_samples(self.buffer))
        self.buffer = []
        self.count = 0
        return out


class SelectExperiences:
    """Keeps only the given policies' batches of a MultiAgentBatch.

    Use with `.for_each()`. A plain SampleBatch passes through unchanged; listed ids
    absent from a batch are simply absent from the output, whose `env_steps()` is the
    input's.

    Args:
        policy_ids: The policy ids to keep.
        local_worker: Instead of `policy_ids`: keep the worker's `policies_to_train`
            (read at every call).

    Raises:
        ValueError: If neither or both of `policy_ids` and `local_worker` are given.
        TypeError: If `policy_ids` is a string or not a collection.
    """

    def __init__(self, policy_ids: Optional[Collection[str]] = None,
                 local_worker: Optional[types.Worker] = None):
        if (policy_ids is None) == (local_worker is None):
            raise ValueError(
                "SelectExperiences takes exactly one of `policy_ids` and `local_worker`; "
                f"received policy_ids={policy_ids!r}, local_worker={local_worker!r}."
            )
        if policy_ids is not None and (isinstance(policy_ids, str)
                                       or not isinstance(policy_ids, Collection)):
            raise TypeError(
                "SelectExperiences(policy_ids=...) takes a list/set of policy ids; received "
                f"{policy_ids!r}. Wrap a single id in a list: [{policy_ids!r}]."
            )
        self.policy_ids = None if policy_ids is None else frozenset(policy_ids)
        self.local_worker = local_worker

    def __call__(self, samples: SampleBatchType) -> SampleBatchType:
        ids = self.policy_ids
        if ids is None:
            if self.local_worker is None:  # __init__ took exactly one of the two
                raise RuntimeError("neither a local worker nor remote workers")
            ids = frozenset(self.local_worker.policies_to_train)
        return select_experiences(samples, ids)


def select_experiences(samples: SampleBatchType, policy_ids: Collection[str]
                       ) -> SampleBatchType:
    """The batches of `policy_ids` of a MultiAgentBatch (a SampleBatch as it is); see
    `SelectExperiences`."""
    _check_batch(samples, "SelectExperiences")
    if not isinstance(samples, MultiAgentBatch):
        return samples
    return MultiAgentBatch(
        {pid: b for pid, b in samples.policy_batches.items() if pid in policy_ids},
        samples.count, policies_subset=True)


class StandardizeFields:
    """Standardizes fields of every policy batch to mean 0 and std 1 (in place).

    Use with `.for_each()`. Each field of each policy's batch becomes
    `(x - mean(x)) / max(1e-4, std(x))`.

    Args:
        fields: Column names, e.g. `["advantages"]`.

    Raises:
        TypeError: If `fields` is a string.
        KeyError: (when called) If a policy batch lacks a field.
    """

    def __init__(self, fields: Collection[str]):
        if isinstance(fields, str):
            raise TypeError(
                f"StandardizeFields(fields=...) takes a list of column names; received the "
                f"string {fields!r}. Use [{fields!r}]."
            )
        self.fields = list(fields)

    def __call__(self, samples: SampleBatchType) -> SampleBatchType:
        return standardize_fields(samples, self.fields)


def standardize_fields(samples: SampleBatchType, fields: Collection[str]) -> SampleBatchType:
    """Standardizes `fields` of every policy batch in place (see `StandardizeFields`)."""
    _check_batch(samples, "StandardizeFields")
    batches = (samples.policy_batches if isinstance(samples, MultiAgentBatch)
               else {DEFAULT_POLICY_ID: samples})
    for policy_id, batch in batches.items():
        for field in fields:
            if field not in batch:
                raise KeyError(
                    f"StandardizeFields: the batch of policy {policy_id!r} has no field "
                    f"{field!r}; its columns are {sorted(batch.keys())}."
                )
            batch[field] = standardized(batch[field])
    return samples
