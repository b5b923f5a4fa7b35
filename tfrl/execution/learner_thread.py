"""LearnerThread: learns on the local worker in a background thread (IMPALA/APPO style).

The driver puts train batches into `thread.inqueue`; the thread learns on each one
`num_sgd_iter` times (served by a `MinibatchBuffer`) and puts `(batch.count,
learner_info)` into `thread.outqueue`. Sampling and learning overlap: the compiled
`learn_on_batch` releases the GIL while TensorFlow runs.

    learner = LearnerThread(workers.local_worker(), minibatch_buffer_size=1, num_sgd_iter=1,
                            learner_queue_size=16, learner_queue_timeout=300)
    learner.start()
    learner.inqueue.put(batch)
    count, info = learner.outqueue.get(timeout=60)
    learner.stop()
"""

import copy
import queue
import threading
from typing import Any, Dict, List, Optional, Tuple

from tfrl.core import types
from tfrl.execution.common import LEARNER_INFO
from tfrl.execution.stats import TimerStat, WindowStat

# How long `step()` waits for a batch before checking `stopped` again.
_POLL_S = 0.1


class MinibatchBuffer:
    """Serves each batch of a queue several times, keeping up to `size` batches in rotation.

    Args:
        inqueue: The queue to take new batches from.
        size: Batches held at once (at least 1).
        timeout: Seconds `get()` waits for a new batch before raising `queue.Empty`.
        num_passes: How often each batch is served (once the warm-up is over).
        init_num_passes: Passes of the first batch; each later new batch gets one more,
            up to `num_passes`.
    """

    def __init__(self, inqueue: queue.Queue, size: int, timeout: Optional[float], num_passes: int,
                 init_num_passes: int = 1):
        self.inqueue = inqueue
        self.size = max(1, int(size))
        self.timeout = timeout
        self.max_initial_ttl = int(num_passes)
        self.cur_initial_ttl = int(init_num_passes)
        self.buffers: List[Any] = [None] * self.size  # None: slot free
        self.ttl = [0] * self.size
        self.idx = 0

    def get(self) -> Tuple[types.Batch, bool]:
        """The next batch to learn on and whether this was its last pass.

        Raises:
            queue.Empty: If a new batch is needed and none arrives within `timeout`.
        """
        if self.ttl[self.idx] <= 0:
            self.buffers[self.idx] = self.inqueue.get(timeout=self.timeout)
            self.ttl[self.idx] = self.cur_initial_ttl
            self.cur_initial_ttl = min(self.cur_initial_ttl + 1, self.max_initial_ttl)
        batch = self.buffers[self.idx]
        self.ttl[self.idx] -= 1
        released = self.ttl[self.idx] <= 0
        if released:
            self.buffers[self.idx] = None
        self.idx = (self.idx + 1) % self.size
        return batch, released


class LearnerThread(threading.Thread):
    """A daemon thread that calls `local_worker.learn_on_batch` on queued batches.

    Args:
        local_worker: The worker holding the policies to train.
        minibatch_buffer_size: Train batches held in the minibatch buffer.
        num_sgd_iter: Passes (learn calls) per train batch.
        learner_queue_size: Capacity of `inqueue`.
        learner_queue_timeout: Seconds without a new batch after which the thread fails
            (the error is re-raised by `raise_if_failed()`); None: no limit.

    Attributes:
        inqueue, outqueue: The input queue of batches and the output queue of
            `(count, learner_info)`.
        weights_updated: Set True after each learn call (the driver resets it after
            broadcasting weights).
        learner_info: The info of the latest learn call.
        num_steps: Learn calls made.
        error: The exception that ended the thread, if any.
    """

    def __init__(self, local_worker: types.Worker, minibatch_buffer_size: int, num_sgd_iter: int,
                 learner_queue_size: int, learner_queue_timeout: Optional[float]):
        super().__init__(name="tfrl-learner", daemon=True)
        self.learner_queue_size = WindowStat("size", 50)
        self.local_worker = local_worker
        self.learner_queue_timeout = learner_queue_timeout
        self.inqueue: queue.Queue = queue.Queue(maxsize=learner_queue_size)
        self.outqueue: queue.Queue = queue.Queue()
        self.minibatch_buffer = MinibatchBuffer(
            inqueue=self.inqueue, size=minibatch_buffer_size, timeout=_POLL_S,
            num_passes=num_sgd_iter, init_num_passes=num_sgd_iter)
        self.queue_timer = TimerStat()
        self.grad_timer = TimerStat()
        self.load_timer = TimerStat()
        self.load_wait_timer = TimerStat()
        self.weights_updated = False
        self.learner_info: Dict[str, types.LearnerInfo] = {}
        self.stopped = False
        self.num_steps = 0
        self.error: Optional[BaseException] = None
        self._waited_s = 0.0

    def run(self) -> None:
        try:
            while not self.stopped:
                self.step()
        except BaseException as e:  # surfaced to the driver by raise_if_failed()
            self.error = e
            self.stopped = True

    def step(self) -> None:
        """Learns on the next batch; returns without learning if none arrived yet.

        Raises:
            TimeoutError: If no batch arrived for `learner_queue_timeout` seconds.
        """
        with self.queue_timer:
            try:
                batch, _ = self.minibatch_buffer.get()
            except queue.Empty:
                self._waited_s += _POLL_S
                limit = self.learner_queue_timeout
                if limit is not None and self._waited_s >= limit:
                    raise TimeoutError(
                        f"LearnerThread: no train batch arrived for {limit} s "
                        "(learner_queue_timeout); the sampling side may have stopped or be "
                        "too slow.")
                return
        self._waited_s = 0.0
        with self.grad_timer:
            self.learner_info = self._learn(batch)
            self.weights_updated = True
        self.num_steps += 1
        self.outqueue.put(self._output(batch))
        self.learner_queue_size.push(self.inqueue.qsize())

    def _learn(self, batch: types.Batch) -> Dict[str, types.LearnerInfo]:
        """Learns on one queued item (a batch here); its learner info."""
        return self.local_worker.learn_on_batch(batch)

    def _output(self, batch: types.Batch) -> Any:
        """What goes into `outqueue` for a queued item just learned on: `(batch.count,
        learner_info)` here (Ape-X's learner adds the replay shard and new priorities)."""
        return (batch.count, self.learner_info)

    def raise_if_failed(self) -> None:
        """Re-raises the exception that ended the thread, if any.

        Raises:
            RuntimeError: Wrapping the thread's error.
        """
        if self.error is not None:
            raise RuntimeError(f"The learner thread died: {self.error!r}") from self.error

    def stop(self, timeout: Optional[float] = 10.0) -> None:
        """Asks the thread to end and waits up to `timeout` seconds for it."""
        self.stopped = True
        if self.is_alive():
            self.join(timeout)

    def add_learner_metrics(self, result: Dict[str, Any]) -> Dict[str, Any]:
        """Adds queue stats, learner info and timings to `result["info"]`.

        Raises:
            KeyError: If `result` has no "info" dict.
        """
        if not isinstance(result.get("info"), dict):
            raise KeyError("add_learner_metrics(result) needs result['info'] to be a dict; "
                           f"received keys {sorted(result)}.")

        def ms(timer: TimerStat) -> float:
            return round(1000 * timer.mean, 3)

        result["info"].update({
            "learner_queue": self.learner_queue_size.stats(),
            LEARNER_INFO: copy.deepcopy(self.learner_info),
            "timing_breakdown": {
                "learner_grad_time_ms": ms(self.grad_timer),
                "learner_load_time_ms": ms(self.load_timer),
                "learner_load_wait_time_ms": ms(self.load_wait_timer),
                "learner_dequeue_time_ms": ms(self.queue_timer),
            },
        })
        return result
