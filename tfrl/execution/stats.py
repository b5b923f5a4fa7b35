"""Small running statistics for the execution pipeline: `TimerStat` and `WindowStat`.

Example:
    >>> timer = TimerStat()
    >>> timer.push(0.5)
    >>> timer.push(1.5)
    >>> timer.push_units_processed(10)
    >>> timer.count, timer.mean, timer.mean_units_processed
    (2, 1.0, 10.0)
    >>> stat = WindowStat("size", 3)
    >>> for x in (1, 2, 3, 4):
    ...     stat.push(x)
    >>> stat.stats()["size_mean"], stat.stats()["size_count"]
    (3.0, 3)
"""

import collections
import time
from typing import Deque, Dict, Optional

import numpy as np

from tfrl.utils.checks import check_int


class TimerStat:
    """Times a block (`with timer:`) and keeps the last `window_size` durations.

    Args:
        window_size: How many recent durations (and unit counts) `mean` and
            `mean_throughput` average over.

    Attributes:
        count: Number of durations pushed in total.
    """

    def __init__(self, window_size: int = 10):
        check_int(window_size, "TimerStat(window_size=...)", 1)
        self._samples: Deque[float] = collections.deque(maxlen=window_size)
        self._units: Deque[float] = collections.deque(maxlen=window_size)
        self._start: Optional[float] = None
        self.count = 0

    def __enter__(self) -> "TimerStat":
        if self._start is not None:
            raise RuntimeError("TimerStat is not reentrant: this timer is already running.")
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        start, self._start = self._start, None
        if start is None:  # set by __enter__
            raise RuntimeError("TimerStat.__exit__ without __enter__")
        self.push(time.perf_counter() - start)

    def push(self, seconds: float) -> None:
        """Records one duration in seconds."""
        self._samples.append(float(seconds))
        self.count += 1

    def push_units_processed(self, n: float) -> None:
        """Records how many units (e.g. env steps) the last timed block processed."""
        self._units.append(float(n))

    def has_units_processed(self) -> bool:
        """Whether `push_units_processed` was ever called."""
        return len(self._units) > 0

    @property
    def mean(self) -> float:
        """Mean duration (seconds) over the window; 0.0 before the first push."""
        return float(np.mean(self._samples)) if self._samples else 0.0

    @property
    def mean_units_processed(self) -> float:
        """Mean units per timed block over the window; 0.0 before the first push."""
        return float(np.mean(self._units)) if self._units else 0.0

    @property
    def mean_throughput(self) -> float:
        """Units processed per second over the window (0.0 if nothing was timed)."""
        total = float(np.sum(self._samples))
        return float(np.sum(self._units)) / total if total > 0 else 0.0


class WindowStat:
    """Mean, std, min, max and count of the last `n` values pushed.

    Args:
        name: Prefix of the keys of `stats()`.
        n: Window length.
    """

    def __init__(self, name: str, n: int):
        check_int(n, "WindowStat(n=...)", 1)
        self.name = name
        self._items: Deque[float] = collections.deque(maxlen=n)
        self.count = 0

    def push(self, value: float) -> None:
        """Adds one value."""
        self._items.append(float(value))
        self.count += 1

    def stats(self) -> Dict[str, float]:
        """`{<name>_count, <name>_mean, <name>_std, <name>_min, <name>_max}` (NaN when empty)."""
        values = np.asarray(self._items, dtype=np.float64)
        empty = values.size == 0
        return {
            f"{self.name}_count": int(values.size),
            f"{self.name}_mean": float("nan") if empty else float(np.mean(values)),
            f"{self.name}_std": float("nan") if empty else float(np.std(values)),
            f"{self.name}_min": float("nan") if empty else float(np.min(values)),
            f"{self.name}_max": float("nan") if empty else float(np.max(values)),
        }
