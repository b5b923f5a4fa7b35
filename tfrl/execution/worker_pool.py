"""WorkerPool: streams of results from remote worker handles (tfrl's ParallelIterator).

A pool wraps worker handles (`handle.call(method) -> concurrent.futures.Future`, see
`tfrl.evaluation.worker_set.handles`) and turns repeated remote calls into LocalIterators:

- `gather_async(num_async)`: keeps up to `num_async` calls in flight per worker and
  yields results as they complete (earliest-submitted first among those done), recording
  the producing handle in `SharedMetrics.current_worker`;
- `batch_across_shards()`: calls every worker once per step and yields the list of all
  results (in worker order).

`ParallelRollouts(workers, mode="raw")` returns a pool over the remote workers' `sample`.
"""

import concurrent.futures
import time
from typing import Any, Callable, Iterable, List, Optional, Union

from tfrl.core import types
from tfrl.execution.iter import LocalIterator, NotReady, SharedMetrics, get_shared_metrics

SubmitFn = Callable[[Any], concurrent.futures.Future]
# Worker handles, or a function returning the current ones.
Handles = Union[Iterable[types.RemoteWorker], Callable[[], Iterable[types.RemoteWorker]]]

# Longest wait for any worker's result before a TimeoutError (a hung worker must not hang
# training forever).
DEFAULT_RESULT_TIMEOUT_S = 600.0


class WorkerPool:
    """Repeated remote calls on a set of worker handles, as LocalIterators.

    Args:
        handles: Worker handles (`call(method, ...) -> Future`), or a function returning the current list (so a
            WorkerSet's recreated workers are picked up); read again on every
            `batch_across_shards` step and when a gather starts.
        submit: `submit(handle) -> Future`; default `handle.call("sample")`.
        result_timeout_s: Longest wait for results: for all workers' results of one
            `batch_across_shards` step, or for the next result of `gather_async`.

    Raises:
        ValueError: If the pool has no workers when a stream starts.
        TimeoutError: (when pulled) If results take longer than `result_timeout_s`.
    """

    def __init__(self, handles: Handles, submit: Optional[SubmitFn] = None,
                 result_timeout_s: float = DEFAULT_RESULT_TIMEOUT_S):
        self._handles = handles
        self._submit = submit or _call_sample
        self.result_timeout_s = result_timeout_s

    def handles(self) -> List[types.RemoteWorker]:
        """The current worker handles."""
        handles = self._handles() if callable(self._handles) else self._handles
        handles = list(handles)
        if not handles:
            raise ValueError(
                "WorkerPool has no worker handles to gather from; create remote workers "
                "(num_workers > 0) or sample from the local worker instead."
            )
        return handles

    def gather_async(self, num_async: int = 1) -> LocalIterator[Any]:
        """Results as they complete, at most `num_async` calls in flight per worker.

        Raises:
            ValueError: If `num_async` is not an int >= 1.
        """
        _check_num_async(num_async)
        pool = self

        def gather(timeout=None):
            in_flight = {}  # future -> handle, in submission order
            for handle in pool.handles():
                for _ in range(num_async):
                    in_flight[pool._submit(handle)] = handle
            waiting_since = time.monotonic()
            while in_flight:
                done = [f for f in in_flight if f.done()]
                if not done:
                    waited = time.monotonic() - waiting_since
                    if waited > pool.result_timeout_s:
                        _raise_timeout(set(in_flight.values()), pool.result_timeout_s)
                    if timeout == 0:
                        yield NotReady()
                    else:
                        concurrent.futures.wait(list(in_flight),
                                                timeout=pool.result_timeout_s - waited + 1e-3,
                                                return_when=concurrent.futures.FIRST_COMPLETED)
                    continue
                waiting_since = time.monotonic()
                for future in done:
                    handle = in_flight.pop(future)
                    result = future.result()
                    in_flight[pool._submit(handle)] = handle
                    get_shared_metrics().current_worker = handle
                    yield result

        return LocalIterator(gather, SharedMetrics(), name="gather_async")

    def batch_across_shards(self) -> LocalIterator[List[Any]]:
        """One list per step with one result of every worker (in worker order)."""
        pool = self

        def gather_all(timeout=None):
            while True:
                handles = pool.handles()
                futures = [pool._submit(h) for h in handles]
                done, _ = concurrent.futures.wait(futures, timeout=pool.result_timeout_s)
                late = [h for h, f in zip(handles, futures) if f not in done]
                if late:
                    _raise_timeout(late, pool.result_timeout_s)
                yield [f.result() for f in futures]

        return LocalIterator(gather_all, SharedMetrics(), name="batch_across_shards")


def _raise_timeout(handles: Iterable[types.RemoteWorker], seconds: float) -> None:
    indexes = sorted(getattr(h, "worker_index", "?") for h in handles)
    raise TimeoutError(
        f"Workers {indexes} returned no result within result_timeout_s={seconds} s. A worker "
        "may be hung or very slow; check its logs, or raise the timeout."
    )


def _call_sample(handle: types.RemoteWorker) -> concurrent.futures.Future:
    return handle.call("sample")


def _check_num_async(num_async: Any) -> None:
    if isinstance(num_async, bool) or not isinstance(num_async, int) or num_async < 1:
        raise ValueError(
            f"num_async (requests in flight per worker) must be an int >= 1; received "
            f"num_async={num_async!r}."
        )



def from_actors(handles: Handles, method: str = "sample") -> WorkerPool:
    """A pool calling `method` on each handle (ray.util.iter's `from_actors`).

    Example: `from_actors(workers.remote_workers()).gather_async(num_async=2)`.
    """
    return WorkerPool(handles, submit=lambda handle: handle.call(method))
