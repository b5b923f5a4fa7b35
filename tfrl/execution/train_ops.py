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

from tfrl.core import types

from tfrl.evaluation.rollout_worker.learning import do_minibatch_sgd, takes_sgd_settings
from tfrl.execution.common import (AGENT_STEPS_TRAINED_COUNTER, LAST_TARGET_UPDATE_TS,
                                   LEARN_ON_BATCH_TIMER, LEARNER_INFO,
                                   NUM_TARGET_UPDATES, STEPS_SAMPLED_COUNTER,
                                   STEPS_TRAINED_COUNTER, STEPS_TRAINED_THIS_ITER_COUNTER,
                                   WORKER_UPDATE_TIMER, global_vars_of)
from tfrl.execution.gradient_ops import (ApplyGradients, AverageGradients, ComputeGradients,
                                         apply_gradients, compute_gradients)
from tfrl.execution.iter import SharedMetrics, get_shared_metrics
from tfrl.execution.rollout_ops import _check_batch
from tfrl.data.sample_batch import MultiAgentBatch
from tfrl.data.sample_batch import DEFAULT_POLICY_ID
from tfrl.utils.checks import check_int

T = TypeVar("T")

__all__ = ["TrainOneStep", "MultiGPUTrainOneStep", "ComputeGradients", "ApplyGradients",
           "AverageGradients", "UpdateTargetNetwork", "UpdateTargetIfNeeded",
           "train_one_step", "sync_weights", "update_target_network", "learn_on_batch",
           "compute_gradients", "apply_gradients"]




def learn_on_batch(worker: types.Worker, batch: types.Batch, **sgd: Any
                   ) -> Dict[str, types.LearnerInfo]:
    """`worker.learn_on_batch(batch, **sgd)` with the SGD settings that are not None; a
    worker whose `learn_on_batch(samples)` takes none (RLlib's signature) gets RLlib's
    minibatch SGD from outside instead: one call per minibatch of each trained policy's
    rows (`do_minibatch_sgd`)."""
    sgd = {name: value for name, value in sgd.items() if value is not None}
    if not sgd or takes_sgd_settings(worker.learn_on_batch, sgd):
        return worker.learn_on_batch(batch, **sgd)
    batches: Dict[str, Any] = (batch.policy_batches if isinstance(batch, MultiAgentBatch)
                               else {DEFAULT_POLICY_ID: batch})
    trained = set(worker.policies_to_train)
    info = {}
    for pid, rows in batches.items():
        if pid not in trained:
            continue

        def learn(minibatch: Any, pid: str = pid) -> Any:
            return worker.learn_on_batch(
                MultiAgentBatch({pid: minibatch}, minibatch.count))[pid]

        info[pid] = do_minibatch_sgd(rows, learn, sgd.get("num_sgd_iter"),
                                     sgd.get("sgd_minibatch_size"))
    return info


def train_one_step(workers: types.WorkerSet, batch: types.Batch, metrics: SharedMetrics, *,
                   num_sgd_iter: Optional[int] = None,
                   sgd_minibatch_size: Optional[int] = None,
                   shuffle_sequences: Optional[bool] = None
                   ) -> Dict[str, types.LearnerInfo]:
    """Learns on `batch` with the local worker (see `TrainOneStep`), counting it in
    `metrics` (steps trained, `info[LEARNER_INFO]`, the `LEARN_ON_BATCH_TIMER` timer);
    the learner info `{policy_id: {"learner_stats": ...}}`. The remote workers' weights
    are not touched (`sync_weights` does that). An empty batch learns nothing: `{}`."""
    _check_batch(batch, "TrainOneStep")
    if batch.count == 0:  # a round without replay
        return {}
    timer = metrics.timers[LEARN_ON_BATCH_TIMER]
    with timer:
        info = learn_on_batch(workers.local_worker(), batch, num_sgd_iter=num_sgd_iter,
                              sgd_minibatch_size=sgd_minibatch_size,
                              shuffle_sequences=shuffle_sequences)
        timer.push_units_processed(batch.count)
    metrics.counters[STEPS_TRAINED_COUNTER] += batch.env_steps()
    metrics.counters[AGENT_STEPS_TRAINED_COUNTER] += batch.agent_steps()
    metrics.counters[STEPS_TRAINED_THIS_ITER_COUNTER] = batch.env_steps()
    metrics.info[LEARNER_INFO] = info
    return info


def sync_weights(workers: types.WorkerSet, metrics: SharedMetrics,
                 policies: Optional[Collection[str]] = None) -> None:
    """Sends the local worker's weights of `policies` (None: all) to the remote workers
    with the global vars (`{"timestep": steps sampled}`), which the local worker gets
    too; timed in `WORKER_UPDATE_TIMER`."""
    global_vars = global_vars_of(metrics)
    if workers.remote_workers():
        with metrics.timers[WORKER_UPDATE_TIMER]:
            workers.sync_weights(policies=sorted(policies) if policies else None,
                                 global_vars=global_vars)
    workers.local_worker().set_global_vars(global_vars)


def update_target_network(workers: types.WorkerSet, metrics: SharedMetrics,
                          target_update_freq: int, by_steps_trained: bool = False,
                          policies: Collection[str] = frozenset()) -> bool:
    """Calls the policies' `update_target()` once `target_update_freq` steps were sampled
    (or trained) since the last call (see `UpdateTargetNetwork`); whether it did."""
    counters = metrics.counters
    now = counters[STEPS_TRAINED_COUNTER if by_steps_trained else STEPS_SAMPLED_COUNTER]
    if now - counters[LAST_TARGET_UPDATE_TS] < target_update_freq:
        return False
    local = workers.local_worker()
    to_update = frozenset(policies or ()) or frozenset(local.policies_to_train)
    local.foreach_trainable_policy(lambda policy, pid: pid in to_update and policy.update_target())
    counters[NUM_TARGET_UPDATES] += 1
    counters[LAST_TARGET_UPDATE_TS] = now
    return True


class _LearnOp:
    """Shared bookkeeping of the learning operators."""

    def __init__(self, workers: types.WorkerSet, policies: Collection[str]):
        self.workers = workers
        self.local_worker = workers.local_worker()
        self.policies = frozenset(policies or ())

    def _policy_ids(self) -> List[str]:
        if self.policies:
            return sorted(self.policies)
        return list(self.local_worker.policies_to_train)


class TrainOneStep(_LearnOp):
    """Learns on each batch with the local worker, then syncs weights to the remote workers.

    Use with `.for_each()`; returns `(batch, info)` with `info = {policy_id: {"learner_stats":
    ...}}`. Updates `STEPS_TRAINED_COUNTER`, `AGENT_STEPS_TRAINED_COUNTER`,
    `info[LEARNER_INFO]` and the `LEARN_ON_BATCH_TIMER` / `WORKER_UPDATE_TIMER` timers.
    An empty batch (a round without replay, from `Replay(..., empty_when_not_ready=True)`)
    is returned with `info = {}`: nothing learned, no counter, info or weights touched.
    The operator is `train_one_step` then `sync_weights` on the pipeline's metrics.

    `num_sgd_iter` and `sgd_minibatch_size` go to `local_worker.learn_on_batch` and from
    there to each policy's `learn_on_batch`, which runs all epochs and minibatches in one
    compiled call (a TFPolicy; see `tfrl.policy.tf_train_step` for the minibatch rule:
    per epoch a new shuffle, `floor(rows / sgd_minibatch_size)` full minibatches, the
    remaining rows of that epoch dropped; stats averaged over all steps). Left at None,
    each policy uses its own config. A worker or policy whose `learn_on_batch(samples)`
    takes no SGD settings (RLlib's signature) is called once per minibatch instead
    (RLlib's `do_minibatch_sgd`).

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
                             else check_int(num_sgd_iter, "TrainOneStep(num_sgd_iter=...)", 1))
        self.sgd_minibatch_size = (
            None if sgd_minibatch_size is None
            else check_int(sgd_minibatch_size, "TrainOneStep(sgd_minibatch_size=...)", 0))

    def __call__(self, batch: types.Batch) -> Tuple[types.Batch, Dict[str, types.LearnerInfo]]:
        metrics = get_shared_metrics()
        info = train_one_step(self.workers, batch, metrics, num_sgd_iter=self.num_sgd_iter,
                              sgd_minibatch_size=self.sgd_minibatch_size)
        if batch.count:
            sync_weights(self.workers, metrics, self.policies)
        return batch, info


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
        self.sgd_minibatch_size = check_int(sgd_minibatch_size or 0,
                                            f"{where}(sgd_minibatch_size=...)", 0)
        self.num_sgd_iter = check_int(num_sgd_iter, f"{where}(num_sgd_iter=...)", 1)
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
        metrics = get_shared_metrics()
        info = train_one_step(self.workers, batch, metrics, num_sgd_iter=self.num_sgd_iter,
                              sgd_minibatch_size=self.sgd_minibatch_size,
                              shuffle_sequences=self.shuffle_sequences)
        sync_weights(self.workers, metrics, self.policies)
        return batch, info


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
        self.target_update_freq = check_int(target_update_freq,
                                            "UpdateTargetNetwork(target_update_freq=...)", 0)
        self.metric = STEPS_TRAINED_COUNTER if by_steps_trained else STEPS_SAMPLED_COUNTER
        self.policies = frozenset(policies or ())

    def __call__(self, item: T) -> T:
        update_target_network(self.workers, get_shared_metrics(), self.target_update_freq,
                              self.metric == STEPS_TRAINED_COUNTER, self.policies)
        return item


UpdateTargetIfNeeded = UpdateTargetNetwork  # the name in RLlib's execution-plan examples
