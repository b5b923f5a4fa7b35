"""Concurrency operators: merge several plans into one, and pass items through queues.

Example:
    >>> from tfrl.execution.iter import from_items
    >>> sim = from_items(["s1", "s2", "s3", "s4"])
    >>> replay = from_items(["r1", "r2"])
    >>> Concurrently([sim, replay], mode="round_robin", round_robin_weights=[2, 1]).take(6)
    ['s1', 's2', 'r1', 's3', 's4', 'r2']
    >>> import queue
    >>> q = queue.Queue(10)
    >>> write_op = from_items([1, 2, 3]).for_each(Enqueue(q))
    >>> read_op = Dequeue(q)
    >>> Concurrently([write_op, read_op], mode="round_robin", output_indexes=[1]).take(3)
    [1, 2, 3]
"""

import collections
import queue
from typing import Any, Callable, Deque, List, Optional, Tuple, Union

from tfrl.execution.iter import LocalIterator, NotReady, SharedMetrics


def Concurrently(ops: List[LocalIterator[Any]], *, mode: str = "round_robin",
                 output_indexes: Optional[List[int]] = None,
                 round_robin_weights: Optional[List[Union[int, str]]] = None
                 ) -> LocalIterator[Any]:
    """Runs the given iterators "concurrently" by merging their items into one iterator.

    Args:
        ops: Two or more LocalIterators.
        mode: "round_robin": pull from the iterators in list order, deterministically.
            "async": pull from whichever has an item ready (every op is asked not to
            block; non-deterministic with asynchronous sources).
        output_indexes: Emit only the items of these ops (the others are still pulled,
            so their side effects happen). Default: all.
        round_robin_weights: Round-robin only: items pulled from each op per round, e.g.
            `[2, 1]`; "*" pulls as many as are ready without blocking (at most 100 per
            round). Default all 1.

    Returns:
        The merged LocalIterator (sharing the first op's metrics); it ends when every op
        has ended.

    Raises:
        ValueError: For fewer than 2 ops, an unknown mode, weights in async mode, all
            weights "*", malformed weights or an output index out of range.
    """
    if len(ops) < 2:
        raise ValueError("Should specify at least 2 ops.")
    if mode == "round_robin":
        deterministic = True
    elif mode == "async":
        deterministic = False
        if round_robin_weights:
            raise ValueError("round_robin_weights cannot be specified in async mode")
    else:
        raise ValueError(f"Unknown mode {mode!r}: Concurrently(mode=...) must be 'round_robin' "
                         "or 'async'.")
    if round_robin_weights and all(w == "*" for w in round_robin_weights):
        raise ValueError("Cannot specify all round robin weights = *")

    if output_indexes:
        for i in output_indexes:
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(ops):
                raise ValueError(f"Index out of range: output_indexes={list(output_indexes)!r} "
                                 f"must hold op indexes in [0, {len(ops)}); received {i!r}.")
        ops = [op.for_each(_Tag(i)) for i, op in enumerate(ops)]

    output = ops[0].union(*ops[1:], deterministic=deterministic,
                          round_robin_weights=round_robin_weights or None)
    if output_indexes:
        wanted = frozenset(output_indexes)
        output = (output.filter(lambda tagged: tagged[0] in wanted)
                  .for_each(lambda tagged: tagged[1]))
    return output


class _Tag:
    def __init__(self, index: int):
        self.index = index

    def __call__(self, item: Any) -> Tuple[int, Any]:
        return self.index, item


class Enqueue:
    """Puts each item into a `queue.Queue` without blocking; returns the item.

    Use with `.for_each()` and read the queue with `Dequeue` (merged by `Concurrently`).
    When the queue is full the item is kept and `NotReady()` is returned; kept items are
    put (in order) before later ones, so none is lost.

    Args:
        output_queue: The queue to write to.

    Raises:
        ValueError: If `output_queue` is not a `queue.Queue`.
    """

    def __init__(self, output_queue: queue.Queue):
        if not isinstance(output_queue, queue.Queue):
            raise ValueError(f"Expected queue.Queue, got {type(output_queue)}")
        self.queue = output_queue
        self.pending: Deque[Any] = collections.deque()

    def __call__(self, item: Any) -> Any:
        self.pending.append(item)
        while self.pending:
            try:
                self.queue.put_nowait(self.pending[0])
            except queue.Full:
                return NotReady()
            self.pending.popleft()
        return item


def Dequeue(input_queue: queue.Queue, check: Callable[[], bool] = lambda: True
            ) -> LocalIterator[Any]:
    """A LocalIterator over the items of a `queue.Queue` (NotReady while it is empty).

    Args:
        input_queue: The queue to read.
        check: Liveness check, called before every read; when it returns False the
            iterator raises (e.g. the thread filling the queue died).

    Raises:
        ValueError: If `input_queue` is not a `queue.Queue`.
        RuntimeError: (when pulled) Once `check()` returns False.
    """
    if not isinstance(input_queue, queue.Queue):
        raise ValueError(f"Expected queue.Queue, got {type(input_queue)}")

    def read_queue(timeout=None):
        while check():
            try:
                yield input_queue.get(timeout=0.001)
            except queue.Empty:
                yield NotReady()
        raise RuntimeError("Dequeue `check()` returned False! Exiting with Exception from "
                           "Dequeue iterator.")

    return LocalIterator(read_queue, SharedMetrics(), name="Dequeue")
