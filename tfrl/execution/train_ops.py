"""Train operators: learning on sampled batches and keeping the workers' weights in sync.

`TrainOneStep` and `MultiGPUTrainOneStep` learn on the local worker and broadcast the
new weights (with `global_vars={"timestep": env steps sampled}`) to the remote workers.
`ComputeGradients`, `AverageGradients` and `ApplyGradients` (defined in
`tfrl.execution.gradient_ops`, re-exported here) split that into a gradient pipeline
(A2C microbatching, A3C); `UpdateTargetNetwork` updates target
networks every `target_update_freq` steps. All update the counters and timers of the
pipeline's `SharedMetrics` (names in `tfrl.execution.common`).

    train_op = ParallelRollouts(workers).for_each(TrainOneStep(workers))
    batch, info = next(train_op)    # info: {policy_id: {"learner_stats": {...}}}
"""

import warnings
from typing import Any, Collection, Dict, List, Optional, Tuple, TypeVar

import numpy as np

from tfrl.core import types

from tfrl.execution.common import (AGENT_STEPS_TRAINED_COUNTER, LAST_TARGET_UPDATE_TS,
                                   LEARN_ON_BATCH_TIMER, LEARNER_INFO,
                                   NUM_TARGET_UPDATES, STEPS_SAMPLED_COUNTER,
                                   STEPS_TRAINED_COUNTER, STEPS_TRAINED_THIS_ITER_COUNTER,
                                   WORKER_UPDATE_TIMER, _get_global_vars)
from tfrl.execution.gradient_ops import ApplyGradients, AverageGradients, ComputeGradients
from tfrl.execution.iter import get_shared_metrics
from tfrl.execution.rollout_ops import _check_batch
from tfrl.data.sample_batch import MultiAgentBatch
from tfrl.data.sample_batch import DEFAULT_POLICY_ID

T = TypeVar("T")

__all__ = ["TrainOneStep", "MultiGPUTrainOneStep", "ComputeGradients", "ApplyGradients",
           "AverageGradients", "UpdateTargetNetwork", "UpdateTargetIfNeeded"]


def _check_int(value: Any, name: str, where: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{where}({name}=...) must be an int >= {minimum}; received {value!r}.")
    return int(value)


class _LearnOp:
    """Shared bookkeeping of the learning operators: counters, timers, weight sync."""

    def __init__(self, workers: types.WorkerSet, policies: Collection[str]):
        self.workers = workers
        self.local_worker = workers.local_worker()
        self.policies = frozenset(policies or ())

    def _policy_ids(self) -> List[str]:
        if self.policies:
            return sorted(self.policies)
        return list(self.local_worker.policies_to_train)

    def _finish(self, batch: types.Batch, info: Dict[str, types.LearnerInfo]
                ) -> Tuple[types.Batch, Dict[str, types.LearnerInfo]]:
        metrics = get_shared_metrics()
        metrics.counters[STEPS_TRAINED_COUNTER] += batch.env_steps()
        metrics.counters[AGENT_STEPS_TRAINED_COUNTER] += batch.agent_steps()
        metrics.counters[STEPS_TRAINED_THIS_ITER_COUNTER] = batch.env_steps()
        metrics.info[LEARNER_INFO] = info
        global_vars = _get_global_vars()
        if self.workers.remote_workers():
            with metrics.timers[WORKER_UPDATE_TIMER]:
                self.workers.sync_weights(policies=sorted(self.policies) or None,
                                          global_vars=global_vars)
        self.local_worker.set_global_vars(global_vars)
        return batch, info


class TrainOneStep(_LearnOp):
    """Learns on each batch with the local worker, then syncs weights to the remote workers.

    Use with `.for_each()`; returns `(batch, info)` with `info = {policy_id: {"learner_stats":
    ...}}`. Updates `STEPS_TRAINED_COUNTER`, `AGENT_STEPS_TRAINED_COUNTER`,
    `info[LEARNER_INFO]` and the `LEARN_ON_BATCH_TIMER` / `WORKER_UPDATE_TIMER` timers.
    An empty batch (a round without replay, from `Replay(..., empty_when_not_ready=True)`)
    is returned with `info = {}`: nothing learned, no counter, info or weights touched.

    `num_sgd_iter` and `sgd_minibatch_size` go to `local_worker.learn_on_batch` and from
    there to each policy's `learn_on_batch`, which runs all epochs and minibatches in one
    compiled call (a TFPolicy; see `tfrl.policy.tf_train_step` for the minibatch rule:
    per epoch a new shuffle, `floor(rows / sgd_minibatch_size)` full minibatches, the
    remaining rows of that epoch dropped; stats averaged over all steps). Left at None,
    each policy uses its own config.

    Args:
        workers: The WorkerSet.
        policies: Policy ids to sync; default: the local worker's `policies_to_train`.
            (The local worker trains its `policies_to_train`.)
        num_sgd_iter: Epochs over each batch; None: each policy's `num_sgd_iter`.
        sgd_minibatch_size: Rows per minibatch, 0 meaning the whole batch; None: each
            policy's `sgd_minibatch_size`.

    Raises:
        ValueError: If `num_sgd_iter` < 1 or `sgd_minibatch_size` < 0; (when called) if
            `sgd_minibatch_size` exceeds a policy's rows.
    """

    def __init__(self, workers: types.WorkerSet, policies: Collection[str] = frozenset(),
                 num_sgd_iter: Optional[int] = None, sgd_minibatch_size: Optional[int] = None):
        super().__init__(workers, policies)
        self.num_sgd_iter = (None if num_sgd_iter is None
                             else _check_int(num_sgd_iter, "num_sgd_iter", "TrainOneStep", 1))
        self.sgd_minibatch_size = (
            None if sgd_minibatch_size is None
            else _check_int(sgd_minibatch_size, "sgd_minibatch_size", "TrainOneStep", 0))

    def __call__(self, batch: types.Batch) -> Tuple[types.Batch, Dict[str, types.LearnerInfo]]:
        _check_batch(batch, "TrainOneStep")
        if batch.count == 0:  # a round without replay (`Replay(empty_when_not_ready=True)`)
            return batch, {}
        timer = get_shared_metrics().timers[LEARN_ON_BATCH_TIMER]
        with timer:
            info = self.local_worker.learn_on_batch(
                batch, num_sgd_iter=self.num_sgd_iter,
                sgd_minibatch_size=self.sgd_minibatch_size)
            timer.push_units_processed(batch.count)
        return self._finish(batch, info)


class MultiGPUTrainOneStep(_LearnOp):
    """TrainOneStep for policies that learn on several devices (a MirroredStrategy).

    Each trained policy runs `num_sgd_iter` epochs of `sgd_minibatch_size`-row minibatches
    (shuffled if `shuffle_sequences`) in one compiled call under its strategy, every
    replica taking `sgd_minibatch_size / num_devices` rows. The policy's own devices come
    from its config (`num_gpus`, `_fake_gpus`, see `tfrl.policy.strategy`); this operator
    checks that they match and that the batch sizes divide evenly. Same return value,
    counters and weight sync as `TrainOneStep`.

    Args:
        workers: The WorkerSet.
        sgd_minibatch_size: Rows per minibatch (0: the whole batch).
        num_sgd_iter: Epochs per batch.
        num_gpus: Devices to learn on (GPUs, or logical CPUs with `_fake_gpus`); below 1
            means one device.
        _fake_gpus: Count logical CPU devices as GPUs (testing).
        shuffle_sequences: Reshuffle the rows every epoch.
        framework: "tf2" ("tf" and "tfe" are treated as "tf2" with a warning).
        policies: Policy ids to train; default the local worker's `policies_to_train`.
        train_batch_size: If given, checked to be divisible by the number of devices.
        rollout_fragment_length: Accepted for RLlib compatibility; ignored (deprecated).
        num_envs_per_worker: Accepted for RLlib compatibility; ignored (deprecated).

    Raises:
        ValueError: For another framework, sizes that are not ints, a minibatch or train
            batch size not divisible by the number of devices, or a policy that runs on a
            different number of devices; (when called) a batch smaller than the minibatch
            or than the number of devices.
    """

    def __init__(self, workers: types.WorkerSet, *, sgd_minibatch_size: int, num_sgd_iter: int,
                 num_gpus: float = 0, _fake_gpus: bool = False, shuffle_sequences: bool = True,
                 framework: str = "tf2", policies: Collection[str] = frozenset(),
                 train_batch_size: Any = None, rollout_fragment_length: Any = None,
                 num_envs_per_worker: Any = None):
        super().__init__(workers, policies)
        if framework in ("tf", "tfe"):
            warnings.warn(f"MultiGPUTrainOneStep(framework={framework!r}): tfrl runs TF2 only; "
                          "using 'tf2'.", DeprecationWarning, stacklevel=2)
        elif framework != "tf2":
            raise ValueError(f"MultiGPUTrainOneStep(framework=...) must be 'tf2' (tfrl is "
                             f"TensorFlow 2 only); received {framework!r}.")
        if rollout_fragment_length is not None or num_envs_per_worker is not None:
            warnings.warn("MultiGPUTrainOneStep: rollout_fragment_length and num_envs_per_worker "
                          "are ignored.", DeprecationWarning, stacklevel=2)
        where = "MultiGPUTrainOneStep"
        self.sgd_minibatch_size = _check_int(sgd_minibatch_size or 0, "sgd_minibatch_size",
                                             where, 0)
        self.num_sgd_iter = _check_int(num_sgd_iter, "num_sgd_iter", where, 1)
        self.shuffle_sequences = bool(shuffle_sequences)
        self.num_devices = max(1, int(num_gpus or 0))
        device_kind = "logical CPU devices (_fake_gpus=True)" if _fake_gpus else "GPUs"
        if train_batch_size is not None and train_batch_size < self.num_devices:
            raise ValueError(f"{where}: train_batch_size={train_batch_size} is too small for "
                             f"{self.num_devices} devices (batch too small).")
        for name, size in (("sgd_minibatch_size", self.sgd_minibatch_size),
                           ("train_batch_size", train_batch_size)):
            if size and size % self.num_devices:
                raise ValueError(
                    f"{where}: {name}={size} must be divisible by the number of devices "
                    f"({self.num_devices} {device_kind}) so every replica gets the same rows.")
        for pid in self._policy_ids():
            devices = getattr(self.local_worker.get_policy(pid), "devices", None)
            if devices is not None and len(devices) != self.num_devices:
                raise ValueError(
                    f"{where}(num_gpus={num_gpus!r}, _fake_gpus={_fake_gpus!r}) learns on "
                    f"{self.num_devices} device(s), but policy {pid!r} runs on {len(devices)}: "
                    f"{list(devices)}. Build the policy with the same num_gpus and _fake_gpus "
                    "in its config.")

    def __call__(self, batch: types.Batch) -> Tuple[types.Batch, Dict[str, types.LearnerInfo]]:
        _check_batch(batch, "MultiGPUTrainOneStep")
        policy_batches = (batch.policy_batches if isinstance(batch, MultiAgentBatch)
                          else {DEFAULT_POLICY_ID: batch})
        for pid in self._policy_ids():
            if pid not in policy_batches:
                continue
            rows = policy_batches[pid].count
            if rows < max(self.num_devices, self.sgd_minibatch_size):
                raise ValueError(
                    f"MultiGPUTrainOneStep: the batch of policy {pid!r} has {rows} rows, fewer "
                    f"than sgd_minibatch_size={self.sgd_minibatch_size} or the number of "
                    f"devices ({self.num_devices}). Collect larger train batches.")
            if not self.sgd_minibatch_size and rows % self.num_devices:
                raise ValueError(
                    f"MultiGPUTrainOneStep: the batch of policy {pid!r} ({rows} rows) must be "
                    f"divisible by the number of devices ({self.num_devices}) when "
                    "sgd_minibatch_size=0 (the whole batch is one minibatch).")
        timer = get_shared_metrics().timers[LEARN_ON_BATCH_TIMER]
        with timer:
            info = self.local_worker.learn_on_batch(
                batch, num_sgd_iter=self.num_sgd_iter,
                sgd_minibatch_size=self.sgd_minibatch_size,
                shuffle_sequences=self.shuffle_sequences)
            timer.push_units_processed(batch.count)
        return self._finish(batch, info)


class UpdateTargetNetwork:
    """Calls `policy.update_target()` every `target_update_freq` steps.

    Use with `.for_each()` after a train op; passes its input through. Counts steps
    sampled (or trained, if `by_steps_trained`); updates `NUM_TARGET_UPDATES` and
    `LAST_TARGET_UPDATE_TS`.

    Args:
        workers: The WorkerSet.
        target_update_freq: Steps between target updates (0: every call).
        by_steps_trained: Count `STEPS_TRAINED_COUNTER` instead of `STEPS_SAMPLED_COUNTER`.
        policies: Policy ids to update; default the local worker's `policies_to_train`.

    Raises:
        ValueError: If `target_update_freq` is not an int >= 0.
    """

    def __init__(self, workers: types.WorkerSet, target_update_freq: int,
                 by_steps_trained: bool = False,
                 policies: Collection[str] = frozenset()):
        self.workers = workers
        self.local_worker = workers.local_worker()
        self.target_update_freq = _check_int(target_update_freq, "target_update_freq",
                                             "UpdateTargetNetwork", 0)
        self.metric = STEPS_TRAINED_COUNTER if by_steps_trained else STEPS_SAMPLED_COUNTER
        self.policies = frozenset(policies or ())

    def __call__(self, item: T) -> T:
        counters = get_shared_metrics().counters
        now = counters[self.metric]
        if now - counters[LAST_TARGET_UPDATE_TS] >= self.target_update_freq:
            to_update = self.policies or frozenset(self.local_worker.policies_to_train)
            self.local_worker.foreach_trainable_policy(
                lambda policy, pid: pid in to_update and policy.update_target())
            counters[NUM_TARGET_UPDATES] += 1
            counters[LAST_TARGET_UPDATE_TS] = now
        return item


UpdateTargetIfNeeded = UpdateTargetNetwork  # the name in RLlib's execution-plan examples
