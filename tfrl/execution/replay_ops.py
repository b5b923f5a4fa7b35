"""Replay operators: store sampled batches into a replay buffer and replay from it.

An off-policy plan merges a store op and a replay op with `Concurrently`:

    store_op = ParallelRollouts(workers).for_each(StoreToReplayBuffer(local_buffer=buffer))
    replay_op = Replay(local_buffer=buffer).for_each(TrainOneStep(workers))
    train_op = Concurrently([store_op, replay_op], mode="round_robin", output_indexes=[1])

Example:
    >>> import numpy as np
    >>> from tfrl.data.sample_batch import SampleBatch
    >>> buffer = SimpleReplayBuffer(num_slots=2)
    >>> for i in range(3):
    ...     buffer.add_batch(SampleBatch({"obs": np.full(2, i)}))
    >>> sorted(int(b["obs"][0]) for b in buffer.replay_batches)
    [1, 2]
    >>> mix = MixInReplay(num_slots=0, replay_proportion=0)
    >>> [int(b["obs"][0]) for b in mix(SampleBatch({"obs": [7]}))]
    [7]
"""

import random
from typing import Any, List, Optional

import numpy as np

from tfrl.core import types
from tfrl.data.sample_batch import SampleBatch
from tfrl.execution.iter import LocalIterator, NotReady, SharedMetrics
from tfrl.execution.worker_pool import WorkerPool, _check_num_async


def _add(buffer: Any, batch: types.Batch) -> Any:
    add = getattr(buffer, "add_batch", None) or getattr(buffer, "add")
    return add(batch)


class StoreToReplayBuffer:
    """Stores each batch into a local buffer or into one of several replay workers.

    Use with `.for_each()` on a rollouts iterator; returns the batch it stored.

    Args:
        local_buffer: A buffer with `add_batch(batch)` (or `add(batch)`).
        actors: Instead: replay worker handles (`call(method, ...) -> Future`); each batch goes to one chosen at
            random (`handle.call("add_batch", batch)`).

    Raises:
        ValueError: If both or neither are given.
    """

    def __init__(self, *, local_buffer: Any = None,
                 actors: Optional[List[types.RemoteWorker]] = None):
        if (local_buffer is None) == (actors is None):
            raise ValueError("Either `local_buffer` or `replay_actors` must be given, not both!")
        self.local_actor = local_buffer
        self.replay_actors = actors

    def __call__(self, batch: types.Batch) -> types.Batch:
        if self.replay_actors is not None:
            random.choice(self.replay_actors).call("add_batch", batch)
        else:
            _add(self.local_actor, batch)
        return batch


StoreToReplayActors = StoreToReplayBuffer  # the name in RLlib's execution-plan examples


def Replay(*, local_buffer: Any = None, actors: Optional[List[types.RemoteWorker]] = None,
           num_async: int = 4, empty_when_not_ready: bool = False
           ) -> LocalIterator[types.Batch]:
    """Replayed batches from a local buffer or from replay workers.

    Args:
        local_buffer: A buffer whose `replay()` returns a batch, or None when it cannot
            replay yet (the iterator then yields `NotReady()`).
        actors: Instead: replay worker handles; their `replay()` results are gathered as
            they complete (None results dropped).
        num_async: With `actors`: `replay` calls in flight per handle.
        empty_when_not_ready: With `local_buffer` (tfrl extension): yield an empty
            `SampleBatch()` instead of `NotReady()` when `replay()` returns None, so that a
            round-robin plan emits one item per round, replayed or not (`TrainOneStep`
            passes empty batches through without learning).

    Raises:
        ValueError: If both or neither of `local_buffer` and `actors` are given,
            `num_async` < 1, or `empty_when_not_ready` is set with `actors`.

    Example:
        >>> class Buffer:
        ...     def __init__(self):
        ...         self.rows = []
        ...     def replay(self):
        ...         return SampleBatch({"obs": self.rows[-1:]}) if self.rows else None
        >>> buffer = Buffer()
        >>> replay = Replay(local_buffer=buffer, empty_when_not_ready=True)
        >>> next(replay).count
        0
        >>> buffer.rows.append(5)
        >>> next(replay)["obs"].tolist()
        [5]
    """
    if (local_buffer is None) == (actors is None):
        raise ValueError("Exactly one of local_buffer and replay_actors must be given.")
    if empty_when_not_ready and actors is not None:
        raise ValueError("Replay(empty_when_not_ready=True) needs a local_buffer; replay "
                         "workers' results are gathered as they complete (received actors).")
    if actors is not None:
        _check_num_async(num_async)
        pool = WorkerPool(actors, submit=lambda handle: handle.call("replay"))
        return pool.gather_async(num_async=num_async).filter(lambda item: item is not None)

    def replay_locally(timeout=None):
        while True:
            item = local_buffer.replay()
            if item is not None:
                yield item
            else:
                yield SampleBatch() if empty_when_not_ready else NotReady()

    return LocalIterator(replay_locally, SharedMetrics(), name="Replay")


class SimpleReplayBuffer:
    """A ring of whole batches; `replay()` returns one of them uniformly at random.

    Args:
        num_slots: Batches kept; the oldest is overwritten once full.
        replay_proportion: Unused (RLlib compatibility).
    """

    def __init__(self, num_slots: int, replay_proportion: Optional[float] = None):
        self.num_slots = num_slots
        self.replay_batches: List[types.Batch] = []
        self.replay_index = 0

    def add_batch(self, sample_batch: types.Batch) -> None:
        """Stores `sample_batch`, replacing the oldest stored batch when full."""
        if self.num_slots <= 0:
            return
        if len(self.replay_batches) < self.num_slots:
            self.replay_batches.append(sample_batch)
        else:
            self.replay_batches[self.replay_index] = sample_batch
            self.replay_index = (self.replay_index + 1) % self.num_slots

    def replay(self) -> Optional[types.Batch]:
        """A stored batch chosen uniformly (numpy's global RNG), or None if empty."""
        if not self.replay_batches:
            return None
        return self.replay_batches[np.random.randint(len(self.replay_batches))]

    def __len__(self) -> int:
        return len(self.replay_batches)


class MixInReplay:
    """Adds replayed batches to a stream: `[input, replay, ...]` per input batch.

    Use with `.combine()` (or `.for_each()` to get lists). Each input is first stored (if
    `num_slots > 0`); then `floor(p)` replayed batches follow it, plus one more with
    probability `p - floor(p)` (`p = replay_proportion`). A replayed batch is at most
    `num_slots` inputs old.

    Args:
        num_slots: Input batches kept for replay.
        replay_proportion: Replayed batches per input batch (on average).

    Raises:
        ValueError: If `replay_proportion > 0` and `num_slots == 0`, or either is negative.
    """

    def __init__(self, num_slots: int, replay_proportion: float):
        if replay_proportion > 0 and num_slots == 0:
            raise ValueError("You must set num_slots > 0 if replay_proportion > 0.")
        if num_slots < 0 or replay_proportion < 0:
            raise ValueError(f"MixInReplay needs num_slots >= 0 and replay_proportion >= 0; "
                             f"received {num_slots!r} and {replay_proportion!r}.")
        self.replay_buffer = SimpleReplayBuffer(num_slots)
        self.replay_proportion = replay_proportion

    def __call__(self, sample_batch: types.Batch) -> List[types.Batch]:
        self.replay_buffer.add_batch(sample_batch)
        output = [sample_batch]
        remaining = self.replay_proportion
        while remaining > 0 and random.random() < remaining:
            remaining -= 1
            replayed = self.replay_buffer.replay()  # not None: the input was just stored
            if replayed is not None:
                output.append(replayed)
        return output
