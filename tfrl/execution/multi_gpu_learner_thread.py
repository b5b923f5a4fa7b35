"""MultiGPULearnerThread: a LearnerThread whose policies learn on several devices.

RLlib loads batches into per-GPU "tower stacks" with loader threads and runs one SGD
step per pass on a loaded stack. In tfrl a policy learns under its own
`tf.distribute.Strategy` (a `MirroredStrategy` over `num_gpus` GPUs, or logical CPUs with
`_fake_gpus`), which splits each batch across the replicas inside one compiled call.
So here:

- `num_data_load_threads` loader threads take batches from `inqueue`, prepare them
  (decompress columns) and put them into `ready_tower_stacks`, a queue holding at most
  `num_multi_gpu_tower_stacks` prepared batches (the "loaded stacks");
- the learner serves each prepared batch `num_sgd_iter` times; each pass is one SGD step
  on the whole batch (`train_batch_size` rows, `train_batch_size / num_devices` per
  replica), whatever epochs and minibatches the policy config asks for otherwise.
"""

import queue
import threading
import warnings
from typing import Any, Dict, List, Optional

from tfrl.core import types
from tfrl.execution.learner_thread import _POLL_S, LearnerThread, MinibatchBuffer
from tfrl.utils.checks import check_int


class MultiGPULearnerThread(LearnerThread):
    """Learner thread with parallel batch preparation and multi-device policies.

    Args:
        local_worker: The worker holding the policies to train.
        num_gpus: Devices the policies learn on (checked against the first policy's).
        lr: Deprecated and ignored (the policy's optimizer has the learning rate).
        train_batch_size: Rows per train batch; must be a multiple of the devices.
        num_multi_gpu_tower_stacks: Prepared batches held ready for the learner.
        num_sgd_iter: SGD steps (passes) per train batch.
        learner_queue_size: Capacity of `inqueue`.
        learner_queue_timeout: Seconds without a batch after which the thread fails.
        num_data_load_threads: Threads preparing batches.
        _fake_gpus: Whether the devices are logical CPUs (for the error messages).
        minibatch_buffer_size: Deprecated and ignored.

    Raises:
        ValueError: If `train_batch_size` is smaller than or not divisible by the number
            of devices, or the first policy runs on another number of devices than
            `num_gpus` asks for, or a count is not a positive int.
    """

    def __init__(self, local_worker: types.Worker, num_gpus: float = 1, lr: Any = None,
                 train_batch_size: int = 500, num_multi_gpu_tower_stacks: int = 1,
                 num_sgd_iter: int = 1, learner_queue_size: int = 16,
                 learner_queue_timeout: float = 300, num_data_load_threads: int = 16,
                 _fake_gpus: bool = False, minibatch_buffer_size: Any = None):
        where = "MultiGPULearnerThread"
        if lr is not None or minibatch_buffer_size:
            warnings.warn(f"{where}: `lr` and `minibatch_buffer_size` are deprecated and ignored.",
                          DeprecationWarning, stacklevel=2)
        num_stacks = check_int(num_multi_gpu_tower_stacks,
                               f"{where}(num_multi_gpu_tower_stacks=...)", 1)
        num_loaders = check_int(num_data_load_threads, f"{where}(num_data_load_threads=...)", 1)
        num_sgd_iter = check_int(num_sgd_iter, f"{where}(num_sgd_iter=...)", 1)
        super().__init__(local_worker, minibatch_buffer_size=1, num_sgd_iter=num_sgd_iter,
                         learner_queue_size=learner_queue_size,
                         learner_queue_timeout=learner_queue_timeout)
        self.train_batch_size = train_batch_size
        self.policy_map = local_worker.policy_map
        first_policy = next(iter(self.policy_map.values()))
        self.devices = list(getattr(first_policy, "devices", None) or ["/cpu:0"])
        wanted = max(1, int(num_gpus or 0))
        if len(self.devices) != wanted:
            kind = "logical CPU devices" if _fake_gpus else "GPUs"
            raise ValueError(
                f"{where}(num_gpus={num_gpus!r}) expects {wanted} {kind}, but the policies run on "
                f"{len(self.devices)}: {self.devices}. Build them with the same num_gpus and "
                "_fake_gpus.")
        if train_batch_size < len(self.devices):
            raise ValueError(f"{where}: train_batch_size={train_batch_size} is smaller than the "
                             f"number of devices ({len(self.devices)}): batch too small.")
        if train_batch_size % len(self.devices):
            raise ValueError(f"{where}: train_batch_size={train_batch_size} must be divisible by "
                             f"the number of devices ({len(self.devices)}).")
        self.ready_tower_stacks: queue.Queue = queue.Queue(maxsize=num_stacks)
        self.ready_tower_stacks_buffer = MinibatchBuffer(
            self.ready_tower_stacks, num_stacks, _POLL_S, num_sgd_iter,
            init_num_passes=num_sgd_iter)
        self.minibatch_buffer = self.ready_tower_stacks_buffer
        self.loader_threads: List[threading.Thread] = [
            threading.Thread(target=self._load_loop, name=f"tfrl-loader-{i}", daemon=True)
            for i in range(num_loaders)]
        for thread in self.loader_threads:
            thread.start()

    def _load_loop(self) -> None:
        while not self.stopped:
            with self.load_wait_timer:
                try:
                    batch = self.inqueue.get(timeout=_POLL_S)
                except queue.Empty:
                    continue
            with self.load_timer:
                if hasattr(batch, "decompress_if_needed"):
                    batch = batch.decompress_if_needed()
            while not self.stopped:
                try:
                    self.ready_tower_stacks.put(batch, timeout=_POLL_S)
                    break
                except queue.Full:
                    continue

    def _learn(self, batch: types.Batch) -> Dict[str, types.LearnerInfo]:
        # One SGD step on the whole batch per pass (the passes are the epochs).
        return self.local_worker.learn_on_batch(batch, num_sgd_iter=1, sgd_minibatch_size=0)

    def stop(self, timeout: Optional[float] = 10.0) -> None:
        """Stops the learner and the loader threads."""
        super().stop(timeout)
        for thread in self.loader_threads:
            thread.join(timeout)
