"""LocalIterator: the lazy, pull-based, single-consumer stream every execution operator uses.

A pipeline is a chain of transforms over a base generator; nothing runs until `next()`.
While an item is pulled, the pipeline's `SharedMetrics` (counters, timers, info and
the worker the current item came from) is reachable from inside any operator through
`get_shared_metrics()` (a `contextvars.ContextVar`), so operators such as
`TrainOneStep` can update counters without being handed the metrics object.

Sources that cannot block (a queue, in-flight remote requests) yield `NotReady()`
when nothing is available. Operators pass it through untouched; `next()` skips it.

A transform keeps no reference to an item once the consumer asks for the next one, so
the previous batch of a pipeline (tens of MB for pixel batches) is freed before the next
is sampled rather than held by every suspended stage.

Example:
    >>> it = from_range(6).for_each(lambda x: x * 10).filter(lambda x: x != 20)
    >>> it.take(3)
    [0, 10, 30]
    >>> from_items([1, 2, 3, 4, 5]).batch(2).take(3)
    [[1, 2], [3, 4], [5]]
    >>> from_items(["a", "b"]).union(from_items(["x", "y"]), deterministic=True).take(4)
    ['a', 'x', 'b', 'y']
"""

import collections
import contextlib
import contextvars
import itertools
import time
from typing import (Any, Callable, Dict, Generator, Generic, Iterable, Iterator, List,
                    Optional, Sequence, Tuple, TypeVar, Union)

from tfrl.core import types
from tfrl.execution.stats import TimerStat

# Upper bound on items pulled from a "*"-weighted parent per round, so that an
# always-ready source cannot starve the others.
MAX_PULLS_PER_STAR_ROUND = 100
_IDLE_SLEEP_S = 0.001

T = TypeVar("T")
U = TypeVar("U")

_ACTIVE_METRICS: contextvars.ContextVar[Optional["SharedMetrics"]] = contextvars.ContextVar(
    "tfrl_execution_shared_metrics", default=None)


class NotReady:
    """Sentinel item: "nothing is ready yet". Operators pass it on; `next()` skips it."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NotReady()"


_NextValueNotReady = NotReady  # ray.util.iter's name.


class SharedMetrics:
    """The per-pipeline metrics that operators read and update.

    Attributes:
        counters: `defaultdict(int)` of step counters (see `tfrl.execution.common`).
        timers: `defaultdict(TimerStat)` of timers.
        info: Free-form info, e.g. the latest learner stats under `LEARNER_INFO`.
        current_worker: The worker handle the item being processed came from (set by
            asynchronous gathering; `ApplyGradients(update_all=False)` uses it).
    """

    def __init__(self) -> None:
        self.counters: Dict[str, int] = collections.defaultdict(int)
        self.timers: Dict[str, TimerStat] = collections.defaultdict(TimerStat)
        self.info: Dict[str, Any] = {}
        self.current_worker: Optional[types.RemoteWorker] = None

    @property
    def current_actor(self) -> Optional[types.RemoteWorker]:
        """RLlib's name of `current_worker`."""
        return self.current_worker

    def save(self) -> dict:
        """The counters and info (for checkpoints)."""
        return {"counters": dict(self.counters), "info": dict(self.info)}

    def restore(self, state: dict) -> None:
        """Restores what `save()` returned."""
        self.counters = collections.defaultdict(int, state.get("counters", {}))
        self.info = dict(state.get("info", {}))


def get_shared_metrics() -> SharedMetrics:
    """The metrics of the pipeline whose operator is running right now.

    Raises:
        RuntimeError: If called outside a running operator (outside `next()` on a
            LocalIterator and outside `metrics_context`).
    """
    metrics = _ACTIVE_METRICS.get()
    if metrics is None:
        raise RuntimeError(
            "get_shared_metrics() was called outside a running execution pipeline. Call "
            "operators through a LocalIterator (`it.for_each(op)`), or wrap direct calls in "
            "`with metrics_context(SharedMetrics()):`."
        )
    return metrics


_get_shared_metrics = get_shared_metrics  # RLlib's name.


@contextlib.contextmanager
def metrics_context(metrics: SharedMetrics) -> Generator[SharedMetrics, None, None]:
    """Makes `metrics` the shared metrics for the enclosed block (to call operators directly)."""
    token = _ACTIVE_METRICS.set(metrics)
    try:
        yield metrics
    finally:
        _ACTIVE_METRICS.reset(token)


BaseIteratorFn = Callable[[Optional[float]], Iterable[Any]]
Transform = Callable[[Iterator[Any]], Iterator[Any]]


class LocalIterator(Generic[T]):
    """A lazy stream of items built from a generator factory and a chain of transforms.

    `LocalIterator[T]` yields items of type `T`; `for_each(fn)` with `fn: T -> U` makes
    a `LocalIterator[U]` (the `NotReady()` items in between are not part of `T`).

    Args:
        base_iterator: `fn(timeout) -> iterable`. `timeout` is None when the consumer
            may block, 0 when the source should yield `NotReady()` instead of waiting.
        shared_metrics: The pipeline's metrics; a new `SharedMetrics()` if None.
        local_transforms: Functions `iterator -> iterator` applied in order.
        timeout: Passed to `base_iterator`.
        name: For `repr`.

    Raises:
        TypeError: If `base_iterator` is not callable.
    """

    def __init__(self, base_iterator: Callable[[Optional[float]], Iterable[T]],
                 shared_metrics: Optional[SharedMetrics] = None,
                 local_transforms: Optional[List[Transform]] = None,
                 timeout: Optional[float] = None, name: str = "LocalIterator"):
        if not callable(base_iterator):
            raise TypeError(
                "LocalIterator(base_iterator=...) takes a function `fn(timeout) -> iterable`; "
                f"received {type(base_iterator).__name__}."
            )
        self.base_iterator = base_iterator
        self.shared_metrics = shared_metrics if shared_metrics is not None else SharedMetrics()
        self.local_transforms = list(local_transforms or [])
        self.timeout = timeout
        self.name = name
        self._built: Optional[Iterator[Any]] = None

    def __repr__(self) -> str:
        return f"LocalIterator[{self.name}]"

    # ------------------------------------------------------------ consuming

    def _raw(self) -> Iterator[Any]:
        """The built item stream, `NotReady()` included (for merging operators)."""
        if self._built is None:
            it = iter(self.base_iterator(self.timeout))
            for transform in self.local_transforms:
                it = transform(it)
            self._built = it
        return self._built

    def __iter__(self) -> "LocalIterator[T]":
        return self

    def __next__(self) -> T:
        token = _ACTIVE_METRICS.set(self.shared_metrics)
        try:
            it = self._raw()
            while True:
                item = next(it)
                if not isinstance(item, NotReady):
                    return item
        finally:
            _ACTIVE_METRICS.reset(token)

    def take(self, n: int) -> List[T]:
        """The next `n` items (fewer if the stream ends)."""
        return list(itertools.islice(self, n))

    def show(self, n: int = 20) -> None:
        """Prints the next `n` items."""
        for item in self.take(n):
            print(item)

    # --------------------------------------------------------- transforming

    def _derive(self, transform: Transform, name: str) -> "LocalIterator[Any]":
        return LocalIterator(self.base_iterator, self.shared_metrics,
                             self.local_transforms + [transform], timeout=self.timeout,
                             name=f"{self.name}.{name}")

    def for_each(self, fn: Callable[[T], U]) -> "LocalIterator[U]":
        """Maps `fn` (a function or callable object) over the items.

        If `fn` has a `_on_fetch_start()` method, it is called before each item is
        pulled from upstream (to time the wait).
        """
        def apply_for_each(it):
            on_fetch_start = getattr(fn, "_on_fetch_start", None)
            while True:
                if on_fetch_start is not None:
                    on_fetch_start()
                try:
                    item = next(it)
                except StopIteration:
                    return
                if not isinstance(item, NotReady):
                    item = fn(item)  # (the input is released here)
                yield item
                item = None  # hold no item while the next one is pulled

        return self._derive(apply_for_each, f"for_each({_name_of(fn)})")

    def filter(self, fn: Callable[[T], object]) -> "LocalIterator[T]":
        """Keeps the items for which `fn(item)` is truthy."""
        def apply_filter(it):
            for item in it:
                if isinstance(item, NotReady) or fn(item):
                    yield item
                item = None  # hold no item while the next one is pulled

        return self._derive(apply_filter, f"filter({_name_of(fn)})")

    def flatten(self: "LocalIterator[Iterable[U]]") -> "LocalIterator[U]":
        """Emits the elements of each (list) item in order."""
        def apply_flatten(it):
            for item in it:
                if isinstance(item, NotReady):
                    yield item
                else:
                    yield from item
                item = None  # hold no item while the next one is pulled

        return self._derive(apply_flatten, "flatten()")

    def combine(self, fn: Callable[[T], Iterable[U]]) -> "LocalIterator[U]":
        """Flat-map: `fn(item)` returns a list (possibly empty) whose elements are emitted."""
        return self.for_each(fn).flatten()

    def batch(self, n: int) -> "LocalIterator[List[T]]":
        """Groups items into lists of `n` (the last list may be shorter).

        Raises:
            ValueError: If `n` is not an int >= 1.
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"LocalIterator.batch(n) takes an int n >= 1; received n={n!r}.")

        def apply_batch(it):
            group = []
            for item in it:
                if isinstance(item, NotReady):
                    yield item
                    continue
                group.append(item)
                if len(group) == n:
                    yield group
                    group = []
            if group:
                yield group

        return self._derive(apply_batch, f"batch({n})")

    def zip_with_source_actor(self) -> "LocalIterator[Tuple[Optional[types.RemoteWorker], T]]":
        """Pairs each item with the worker it came from: `(current_worker, item)`."""
        return self.for_each(lambda item: (get_shared_metrics().current_worker, item))

    def union(self, *others: "LocalIterator[Any]", deterministic: bool = False,
              round_robin_weights: Optional[List[Union[int, str]]] = None
              ) -> "LocalIterator[Any]":
        """Merges this iterator with `others`; see `Concurrently` for the modes.

        Args:
            *others: More LocalIterators.
            deterministic: True: pull from the iterators in order, `round_robin_weights[i]`
                items from iterator i per round (a weight "*" pulls until it is not ready,
                at most `MAX_PULLS_PER_STAR_ROUND`). False: pull from whichever is ready
                (every parent is asked not to block).
            round_robin_weights: One int >= 1 or "*" per iterator; default all 1.

        Returns:
            The merged iterator. It shares this iterator's metrics (the counters of
            `others` are added into it) and ends when every parent has ended.

        Raises:
            TypeError: If an element of `others` is not a LocalIterator.
            ValueError: If the weights are malformed or given with `deterministic=False`.
        """
        for i, other in enumerate(others):
            if not isinstance(other, LocalIterator):
                raise TypeError(
                    f"LocalIterator.union() takes LocalIterators; argument {i} is "
                    f"{type(other).__name__}."
                )
        parents = [self, *others]
        weights = _check_weights(round_robin_weights, len(parents), deterministic)
        metrics = self.shared_metrics
        for other in others:
            if other.shared_metrics is not metrics:
                for key, value in other.shared_metrics.counters.items():
                    metrics.counters[key] += value
                other.shared_metrics = metrics

        def build_union(timeout=None):
            active = []
            for parent, weight in zip(parents, weights):
                if not deterministic or weight == "*":
                    parent.timeout = 0
                active.append((weight, parent._raw()))
            while active:
                pulled = False
                for entry in list(active):
                    weight, it = entry
                    pulls = weight if isinstance(weight, int) else MAX_PULLS_PER_STAR_ROUND
                    try:
                        for _ in range(pulls):
                            item = next(it)
                            if isinstance(item, NotReady):
                                break
                            pulled = True
                            yield item
                            item = None  # hold no item while the next one is pulled
                    except StopIteration:
                        active.remove(entry)
                if active and not pulled:
                    if timeout is None:
                        time.sleep(_IDLE_SLEEP_S)
                    yield NotReady()

        names = ", ".join(p.name for p in parents)
        return LocalIterator(build_union, metrics, name=f"Union[{names}]")


def _check_weights(weights: Optional[Sequence[Union[int, str]]], num: int,
                   deterministic: bool) -> List[Union[int, str]]:
    if weights is None:
        return [1] * num
    if not deterministic:
        raise ValueError(
            f"round_robin_weights ({weights!r}) can only be used with deterministic=True "
            "(round-robin merging)."
        )
    if len(weights) != num:
        raise ValueError(
            f"round_robin_weights needs one weight per iterator ({num}); received "
            f"{len(weights)}: {list(weights)!r}."
        )
    for w in weights:
        if w != "*" and (isinstance(w, bool) or not isinstance(w, int) or w < 1):
            raise ValueError(
                f"Each round_robin_weight must be an int >= 1 or '*'; received {w!r} in "
                f"{list(weights)!r}."
            )
    return list(weights)


def _name_of(fn: Any) -> str:
    return getattr(fn, "__name__", type(fn).__name__)


def from_items(items: Iterable[T], repeat: bool = False) -> LocalIterator[T]:
    """A LocalIterator over `items` (cycled forever if `repeat`)."""
    items = list(items)

    def base(timeout=None):
        return itertools.cycle(items) if repeat else iter(items)

    return LocalIterator(base, SharedMetrics(), name="from_items")


def from_range(n: int, repeat: bool = False) -> LocalIterator[int]:
    """A LocalIterator over `range(n)` (cycled forever if `repeat`)."""
    return from_items(range(n), repeat=repeat)


def from_iterators(iterables: Sequence[Union[Iterable[T], Callable[[], Iterable[T]]]],
                   repeat: bool = False) -> LocalIterator[T]:
    """A LocalIterator over the items of each iterable in turn.

    Args:
        iterables: Iterables, or zero-argument functions returning one (called again
            for every repetition).
        repeat: Start over from the first iterable when the last one ends.
    """
    iterables = list(iterables)

    def base(timeout=None):
        while True:
            for source in iterables:
                yield from (source() if callable(source) else source)
            if not repeat:
                return

    return LocalIterator(base, SharedMetrics(), name="from_iterators")
