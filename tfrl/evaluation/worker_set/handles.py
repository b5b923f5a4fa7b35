"""Worker handles: how everything above the evaluation layer talks to a remote worker.

A handle runs methods of one rollout worker somewhere else (a thread, a Ray actor) and
returns `concurrent.futures.Future`s, so callers never see the backend's own objects
(Ray's ObjectRefs). Every backend reports a worker that is gone (killed, its process
died, it failed to start) with the same exception, `WorkerCrashedError`; an exception
raised by the worker's method itself reaches the caller unchanged.

`ThreadWorkerHandle` is the in-process backend: one single-thread executor per worker,
so calls to one worker run in order, one at a time, and different workers run
concurrently. It is used by tests and by asynchronous pipelines on one machine; the
Ray backend is `tfrl.backends.ray.worker.RayWorkerHandle`.

Example:
    >>> class Counter:
    ...     def __init__(self):
    ...         self.n = 0
    ...     def add(self, k):
    ...         self.n += k
    ...         return self.n
    >>> handle = ThreadWorkerHandle(Counter, worker_index=1)
    >>> handle.call("add", 2).result(timeout=10)
    2
    >>> handle.apply(lambda worker, k: worker.add(k), 3).result(timeout=10)
    5
    >>> handle.kill()
    >>> handle.is_alive()
    False
"""

import abc
import concurrent.futures
import functools
import inspect
import queue
import threading
from typing import Any, Callable, Iterable, List, Optional, Set, Union


class WorkerTimeoutError(TimeoutError):
    """A worker did not finish a call in time (e.g. its env hangs).

    Args:
        worker_indices: Indices of the workers that did not answer.
        call: The method they were running (e.g. "sample").
        timeout_s: How long they were waited for.
        hint: What to do about it.
    """

    def __init__(self, worker_indices: List[int], call: str, timeout_s: float,
                 hint: str = ""):
        which = (f"Worker {worker_indices[0]}" if len(worker_indices) == 1
                 else f"Workers {worker_indices}")
        super().__init__(f"{which} did not finish {call}() within {timeout_s} s "
                         f"(sample_timeout_s); its env or callbacks may hang.{hint}")
        self.worker_indices = list(worker_indices)
        self.call = call
        self.timeout_s = timeout_s


class WorkerCrashedError(RuntimeError):
    """A worker cannot answer: it was killed, its process died, or it failed to start.

    Args:
        worker_index: Index of the worker (1, 2, ... for remote workers).
        message: What happened.
    """

    def __init__(self, worker_index: int, message: str):
        super().__init__(f"Worker {worker_index} crashed: {message}")
        self.worker_index = worker_index
        self.reason = message


class WorkerHandle(abc.ABC):
    """The interface of a remote rollout worker.

    Attributes:
        worker_index: The worker's index (remote workers count from 1).
    """

    worker_index: int

    @abc.abstractmethod
    def call(self, method: str, *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        """Runs `worker.<method>(*args, **kwargs)` on the worker.

        Returns:
            A future of the method's result. It fails with `WorkerCrashedError` if the
            worker is gone, or with the exception the method raised.
        """

    def apply(self, func: Callable[..., Any], *args: Any) -> concurrent.futures.Future:
        """Runs `func(worker, *args)` on the worker; a future of its result."""
        return self.call("apply", func, *args)

    @staticmethod
    def share(value: Any) -> Any:
        """Prepares `value` to be passed to many `call`s (Ray: `ray.put` once).

        In-process backends pass the value itself.
        """
        return value

    def ready(self) -> concurrent.futures.Future:
        """A future that resolves (to None) once the worker has been constructed."""
        return self.apply(_noop)

    @abc.abstractmethod
    def kill(self) -> None:
        """Ends the worker at once (without calling its `stop()`); pending calls fail."""

    @abc.abstractmethod
    def is_alive(self) -> bool:
        """False once the worker was killed or is known to have died."""

    def __repr__(self) -> str:
        state = "alive" if self.is_alive() else "dead"
        return f"{type(self).__name__}(worker_index={self.worker_index}, {state})"


def _noop(worker: Any) -> None:
    del worker


def _is_factory(obj: Any) -> bool:
    return (inspect.isclass(obj) or inspect.isroutine(obj)
            or isinstance(obj, functools.partial))


class ThreadWorkerHandle(WorkerHandle):
    """A worker living in this process, served by its own single-thread executor.

    Args:
        worker_factory_or_worker: The worker, or a class/function/partial that creates
            it; a factory is called on the worker's thread (so several workers are
            built concurrently), and a failure fails every call with
            `WorkerCrashedError`.
        worker_index: The worker's index; default: the worker's `worker_index`
            attribute, else 0.

    A thread cannot be stopped from outside: `kill()` fails every pending call at once
    and refuses new ones, while a call that is already running finishes in the
    background and its result is dropped.
    """

    def __init__(self, worker_factory_or_worker: Union[Callable[[], Any], Any],
                 worker_index: Optional[int] = None):
        factory = _is_factory(worker_factory_or_worker)
        if worker_index is None:
            if factory:
                raise ValueError("ThreadWorkerHandle needs worker_index when given a "
                                 f"factory; received worker_index=None and "
                                 f"{worker_factory_or_worker!r}.")
            worker_index = int(getattr(worker_factory_or_worker, "worker_index", 0))
        self.worker_index = int(worker_index)
        self._lock = threading.Lock()
        self._alive = True
        self._pending: Set[concurrent.futures.Future] = set()
        self._worker: Any = None if factory else worker_factory_or_worker
        self._start_error: Optional[BaseException] = None
        self._executor = _DaemonExecutor(f"tfrl-worker-{self.worker_index}")
        if factory:
            self._executor.submit(self._construct, worker_factory_or_worker)

    @property
    def worker(self) -> Any:
        """The worker object itself (None until a factory has built it)."""
        return self._worker

    def _construct(self, factory: Callable[[], Any]) -> None:
        try:
            self._worker = factory()
        except BaseException as e:  # Reported by every later call.
            self._start_error = e

    def call(self, method: str, *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        if not isinstance(method, str):
            raise TypeError(f"call() takes the method name as a str; received {method!r}. "
                            "Use apply(func, *args) to run a function on the worker.")
        return self._submit(method, lambda worker: getattr(worker, method)(*args, **kwargs))

    def apply(self, func: Callable[..., Any], *args: Any) -> concurrent.futures.Future:
        return self._submit(getattr(func, "__name__", "apply"), lambda worker: func(worker, *args))

    def _submit(self, what: str, run: Callable[[Any], Any]) -> concurrent.futures.Future:
        outer: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            if not self._alive:
                outer.set_exception(self._dead_error(what))
                return outer
            self._pending.add(outer)
            self._executor.submit(self._run, outer, what, run)
        return outer

    def _run(self, outer: concurrent.futures.Future, what: str,
             run: Callable[[Any], Any]) -> None:
        try:
            if outer.done():  # Cancelled by the caller, or failed by kill().
                return
            if self._start_error is not None:
                raise WorkerCrashedError(
                    self.worker_index, f"it failed to start: {type(self._start_error).__name__}: "
                    f"{self._start_error}") from self._start_error
            if not self._alive:
                raise self._dead_error(what)
            result = run(self._worker)
        except BaseException as e:
            _settle(outer, exception=e)
        else:
            _settle(outer, result=result)
        finally:
            with self._lock:
                self._pending.discard(outer)

    def _dead_error(self, what: str) -> WorkerCrashedError:
        return WorkerCrashedError(self.worker_index,
                                  f"it was killed; cannot run {what}() on it.")

    def kill(self) -> None:
        with self._lock:
            if not self._alive:
                return
            self._alive = False
            pending, self._pending = self._pending, set()
        for future in pending:
            _settle(future, exception=self._dead_error("pending calls"))
        self._executor.shutdown(wait=False, cancel_futures=True)

    def is_alive(self) -> bool:
        return self._alive and self._start_error is None


class _DaemonExecutor:
    """One daemon thread running submitted functions in order. Unlike a
    `ThreadPoolExecutor` (whose threads the interpreter joins at exit), a call that never
    returns (an env that hangs) cannot keep the process from exiting.

    Args:
        name: The thread's name.
    """

    def __init__(self, name: str):
        self._queue: "queue.SimpleQueue[Optional[Callable[[], Any]]]" = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            job()

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        """Runs `fn(*args)` on the thread after the calls submitted before it."""
        self._queue.put(lambda: fn(*args))

    def shutdown(self, wait: bool = False, cancel_futures: bool = True) -> None:
        """Ends the thread once the call it runs (if any) returns; queued calls are
        skipped by their callers (`ThreadWorkerHandle.kill` fails their futures)."""
        self._queue.put(None)
        if wait:
            self._thread.join()


def _settle(future: concurrent.futures.Future, result: Any = None,
            exception: Optional[BaseException] = None) -> None:
    """Completes `future` unless something (kill) already has."""
    try:
        if exception is not None:
            future.set_exception(exception)
        else:
            future.set_result(result)
    except concurrent.futures.InvalidStateError:
        pass


def get_results(futures: Iterable[concurrent.futures.Future], timeout_s: Optional[float],
                what: str = "workers") -> List[Any]:
    """Waits at most `timeout_s` for all `futures`; their results in order.

    Raises:
        TimeoutError: naming how many of `what` did not answer in time.
        Exception: the first failed future's exception (in the given order).
    """
    futures = list(futures)
    done, not_done = concurrent.futures.wait(futures, timeout=timeout_s)
    if not_done:
        raise TimeoutError(f"{len(not_done)} of {len(futures)} {what} did not answer within "
                           f"timeout_s={timeout_s} s; raise the timeout if they are just slow.")
    return [f.result() for f in futures]
