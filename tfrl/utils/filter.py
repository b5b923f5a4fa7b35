"""Observation filters: the identity and running mean/std normalisation.

A rollout worker keeps one filter per policy and passes every (preprocessed) observation
through it before the policy sees it. `MeanStdFilter` keeps running statistics of all
observations it has seen plus a *buffer* of the statistics gathered since the last
synchronisation; a driver merges the buffers of all workers into one filter
(`apply_changes`) and sends the result back (`sync`), so every worker normalises with the
statistics of all data (see `tfrl.utils.filter_manager.FilterManager`).

Statistics are merged with the parallel algorithm of Chan, Golub and LeVeque (1979),
so merging the statistics of two data sets equals the statistics of their union.

Example:
    >>> import numpy as np
    >>> f = get_filter("MeanStdFilter", (2,))
    >>> out = f.apply_batch(np.array([[1.0, 10.0], [3.0, 30.0]]))
    >>> f.running_stats.mean
    array([ 2., 20.])
    >>> f.running_stats.n
    2
"""

import copy
import threading
from typing import Any, Callable, Dict, Sequence, Tuple, Union

import numpy as np

from tfrl.utils.config_keys import closest_key

FILTER_NAMES = ("NoFilter", "MeanStdFilter", "ConcurrentMeanStdFilter")


class RunningStat:
    """Count, mean and sum of squared deviations of a stream of arrays of one shape.

    Args:
        shape: The shape of one item.
    """

    def __init__(self, shape: Sequence[int] = ()):
        self.shape = tuple(shape)
        self.n = 0
        self.mean = np.zeros(self.shape, np.float64)
        self.m2 = np.zeros(self.shape, np.float64)  # sum of squared deviations

    def push(self, x: Any) -> None:
        """Adds one item."""
        self.push_batch(np.asarray(x, np.float64)[None])

    def push_batch(self, xs: Any) -> None:
        """Adds every row of an `[N, *shape]` batch."""
        xs = np.asarray(xs, np.float64)
        if xs.shape[1:] != self.shape:
            raise ValueError(
                f"Filter of shape {self.shape} received a batch of shape {xs.shape}; "
                f"expected [N, {', '.join(map(str, self.shape))}]."
            )
        if xs.shape[0] == 0:
            return
        self._merge(xs.shape[0], xs.mean(axis=0), ((xs - xs.mean(axis=0)) ** 2).sum(axis=0))

    def update(self, other: "RunningStat") -> None:
        """Merges the statistics of `other` into these (Chan's parallel update)."""
        if other.shape != self.shape:
            raise ValueError(f"Cannot merge statistics of shape {other.shape} into {self.shape}.")
        if other.n:
            self._merge(other.n, other.mean, other.m2)

    def _merge(self, n_b: int, mean_b: np.ndarray, m2_b: np.ndarray) -> None:
        n_a = self.n
        n = n_a + n_b
        delta = mean_b - self.mean
        self.mean = self.mean + delta * (n_b / n)
        self.m2 = self.m2 + m2_b + delta**2 * (n_a * n_b / n)
        self.n = n

    @property
    def var(self) -> np.ndarray:
        """Sample variance (ddof=1); with one item its square (RLlib's convention, so
        that the item normalises to 0), ones before any item."""
        if self.n == 0:
            return np.ones(self.shape, np.float64)
        if self.n == 1:
            return np.square(self.mean)
        return self.m2 / (self.n - 1)

    @property
    def std(self) -> np.ndarray:
        """Sample standard deviation: the square root of `var`."""
        return np.sqrt(self.var)

    def copy(self) -> "RunningStat":
        """Returns an independent copy."""
        other = RunningStat(self.shape)
        other.set_state(self.get_state())
        return other

    def get_state(self) -> Dict[str, Any]:
        """Returns the statistics as a dict of numpy values."""
        return {"n": self.n, "mean": self.mean.copy(), "m2": self.m2.copy()}

    def set_state(self, state: Dict[str, Any]) -> None:
        """Restores statistics from `get_state()`."""
        self.n = int(state["n"])
        self.mean = np.array(state["mean"], np.float64).reshape(self.shape)
        self.m2 = np.array(state["m2"], np.float64).reshape(self.shape)

    def __repr__(self) -> str:
        return f"RunningStat(n={self.n}, shape={self.shape})"


class Filter:
    """Base class of observation filters (RLlib's Filter API)."""

    is_concurrent = False

    def __call__(self, x: Any, update: bool = True) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def apply_batch(self, x_batch: Any, update: bool = True) -> Any:  # pragma: no cover
        raise NotImplementedError


class NoFilter(Filter):
    """The identity filter: numpy arrays, dicts and tuples pass unchanged (not copied);
    anything else is converted with `np.asarray` (RLlib's behaviour)."""

    is_concurrent = True

    def __init__(self, *args: Any, **kwargs: Any):
        del args, kwargs

    def __call__(self, x: Any, update: bool = True) -> Any:
        if isinstance(x, (np.ndarray, dict, tuple)):
            return x
        try:
            return np.asarray(x)
        except Exception as err:
            raise ValueError(
                f"Failed to convert to array: NoFilter received {type(x).__name__} {x!r} "
                f"({err}). Observations must be numpy-convertible, or dicts/tuples of them."
            ) from err

    def apply_batch(self, x_batch: Any, update: bool = True) -> Any:
        return x_batch

    def apply_changes(self, other: Filter, with_buffer: bool = False) -> None:
        pass

    def copy(self) -> "NoFilter":
        return self

    def sync(self, other: Filter) -> None:
        pass

    def clear_buffer(self) -> None:
        pass

    reset_buffer = clear_buffer

    def as_serializable(self) -> "NoFilter":
        return self

    def get_state(self) -> Dict[str, Any]:
        return {"type": "NoFilter"}

    def set_state(self, state: Dict[str, Any]) -> None:
        _check_state_type(state, "NoFilter")

    def __repr__(self) -> str:
        return "NoFilter()"


class MeanStdFilter(Filter):
    """Normalises observations by the running mean and std: `clip((x - mean) / (std + eps))`.

    Args:
        shape: Shape of one observation.
        demean: Subtract the running mean.
        destd: Divide by the running standard deviation (ddof=1).
        clip: Clip the result to `[-clip, clip]`; None for no clipping.

    Attributes:
        running_stats: Statistics of every observation seen (and merged in).
        buffer: Statistics of the observations seen since the last `clear_buffer`.
    """

    def __init__(self, shape: Sequence[int], demean: bool = True, destd: bool = True,
                 clip: Union[float, None] = 10.0):
        self.shape = tuple(shape) if shape is not None else ()
        self.demean = demean
        self.destd = destd
        self.clip = clip
        self.running_stats = RunningStat(self.shape)
        self.buffer = RunningStat(self.shape)

    # RLlib names.
    @property
    def rs(self) -> RunningStat:
        return self.running_stats

    def __call__(self, x: Any, update: bool = True) -> np.ndarray:
        x = np.asarray(x)
        if x.shape != self.shape:
            raise ValueError(
                f"{type(self).__name__} of shape {self.shape} received an observation of "
                f"shape {x.shape}. Use apply_batch() for a batch of observations."
            )
        return self.apply_batch(x[None], update=update)[0]

    def apply_batch(self, x_batch: Any, update: bool = True) -> np.ndarray:
        """Updates the statistics with every row of `x_batch` and returns it normalised."""
        x_batch = np.asarray(x_batch)
        out_dtype = np.float64 if x_batch.dtype == np.float64 else np.float32
        if update:
            self.running_stats.push_batch(x_batch)
            self.buffer.push_batch(x_batch)
        elif x_batch.shape[1:] != self.shape:
            raise ValueError(
                f"{type(self).__name__} of shape {self.shape} received a batch of shape "
                f"{x_batch.shape}."
            )
        out = x_batch.astype(np.float64)
        if self.demean:
            out = out - self.running_stats.mean
        if self.destd:
            out = out / (self.running_stats.std + 1e-8)
        if self.clip is not None:
            out = np.clip(out, -self.clip, self.clip)
        return out.astype(out_dtype, copy=False)

    def apply_changes(self, other: "MeanStdFilter", with_buffer: bool = False) -> None:
        """Merges `other`'s buffer (its changes since its last sync) into these statistics.

        Args:
            other: A filter of the same shape (typically a worker's flushed snapshot).
            with_buffer: Also replace this filter's buffer by a copy of `other`'s.
        """
        self.running_stats.update(other.buffer)
        if with_buffer:
            self.buffer = other.buffer.copy()

    def sync(self, other: "MeanStdFilter") -> None:
        """Takes over `other`'s running statistics and buffer (e.g. the driver's merged
        filter), as RLlib's `sync` does.

        Observations this filter saw since its buffer was last flushed are not yet in
        `other`, so they are merged on top of both and stay in the buffer for the next
        report (RLlib drops them from the buffer). `FilterManager` sends filters with
        empty buffers, so nothing is counted twice.
        """
        stats = other.running_stats.copy()
        stats.update(self.buffer)
        buffer = other.buffer.copy()
        buffer.update(self.buffer)
        self.running_stats = stats
        self.buffer = buffer

    def clear_buffer(self) -> None:
        """Forgets the changes since the last sync (after they were sent to the driver)."""
        self.buffer = RunningStat(self.shape)

    reset_buffer = clear_buffer

    def copy(self) -> "MeanStdFilter":
        """Returns an independent copy (same type)."""
        other = copy.copy(self)
        other.running_stats = self.running_stats.copy()
        other.buffer = self.buffer.copy()
        return other

    def as_serializable(self) -> "MeanStdFilter":
        """Returns a plain (lock-free, picklable) `MeanStdFilter` copy."""
        other = MeanStdFilter(self.shape, self.demean, self.destd, self.clip)
        other.set_state(self.get_state())
        return other

    def get_state(self) -> Dict[str, Any]:
        """Returns the configuration and statistics as a dict of plain/numpy values."""
        return {
            "type": "MeanStdFilter", "shape": self.shape, "demean": self.demean,
            "destd": self.destd, "clip": self.clip,
            "running_stats": self.running_stats.get_state(), "buffer": self.buffer.get_state(),
        }

    def set_state(self, state: Dict[str, Any]) -> None:
        """Restores a state from `get_state()` (of a MeanStdFilter of the same shape)."""
        _check_state_type(state, "MeanStdFilter")
        if tuple(state["shape"]) != self.shape:
            raise ValueError(
                f"Cannot restore a MeanStdFilter of shape {tuple(state['shape'])} into one of "
                f"shape {self.shape}."
            )
        self.demean, self.destd, self.clip = state["demean"], state["destd"], state["clip"]
        self.running_stats.set_state(state["running_stats"])
        self.buffer.set_state(state["buffer"])

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(shape={self.shape}, n={self.running_stats.n}, "
                f"buffer_n={self.buffer.n})")


def _check_state_type(state: Dict[str, Any], expected: str) -> None:
    if state.get("type") not in (expected, "Concurrent" + expected):
        raise ValueError(f"Cannot restore a {state.get('type')} state into a {expected}.")


def _locked(name: str) -> Callable:
    base = getattr(MeanStdFilter, name)

    def method(self, *args, **kwargs):
        with self._lock:
            return base(self, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = base.__doc__
    return method


class ConcurrentMeanStdFilter(MeanStdFilter):
    """A `MeanStdFilter` whose methods hold a lock (for samplers running in a thread)."""

    is_concurrent = True

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._lock = threading.RLock()

    apply_batch = _locked("apply_batch")
    apply_changes = _locked("apply_changes")
    sync = _locked("sync")
    clear_buffer = _locked("clear_buffer")
    reset_buffer = clear_buffer
    as_serializable = _locked("as_serializable")
    set_state = _locked("set_state")

    def get_state(self) -> Dict[str, Any]:
        with self._lock:
            return dict(MeanStdFilter.get_state(self), type="ConcurrentMeanStdFilter")

    def copy(self) -> "ConcurrentMeanStdFilter":
        with self._lock:
            other = ConcurrentMeanStdFilter(self.shape, self.demean, self.destd, self.clip)
            other.set_state(MeanStdFilter.get_state(self))
            return other

    def __getstate__(self) -> Dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()


def get_filter(name: Union[str, Callable], shape: Union[Tuple[int, ...], None]) -> Filter:
    """Creates an observation filter by name.

    Args:
        name: "NoFilter", "MeanStdFilter" or "ConcurrentMeanStdFilter", or a callable
            (e.g. a Filter class) called with `shape`.
        shape: Shape of one observation.

    Returns:
        A new filter.

    Raises:
        ValueError: For an unknown name (naming the closest known one).
    """
    if callable(name):
        return name(shape)
    if name == "NoFilter":
        return NoFilter()
    if name == "MeanStdFilter":
        return MeanStdFilter(shape, clip=None)
    if name == "ConcurrentMeanStdFilter":
        return ConcurrentMeanStdFilter(shape, clip=None)
    suggestion = closest_key(str(name), FILTER_NAMES)
    hint = f" Did you mean {suggestion!r}?" if suggestion else ""
    raise ValueError(f"Unknown observation_filter {name!r}.{hint} Known filters: {FILTER_NAMES}.")


def filter_from_state(state: Dict[str, Any]) -> Filter:
    """Creates a filter from a `get_state()` dict."""
    if state.get("type") == "NoFilter":
        return NoFilter()
    cls = ConcurrentMeanStdFilter if state.get("type") == "ConcurrentMeanStdFilter" else MeanStdFilter
    f = cls(tuple(state["shape"]))
    f.set_state(state)
    return f
