"""The two `Algorithm.fit` callbacks every training run uses: a stop criterion and the
progress display.

- `StopOnCriteria(stop)`: RLlib's `stop` dict (`training_iteration`, `timesteps_total`,
  `episode_reward_mean`, `time_total_s`, ... or a nested key such as
  `evaluation/episode_reward_mean`) as a Keras callback: it sets
  `model.stop_training` after the first iteration whose result reaches any threshold
  and keeps the reason (`stop_reason`'s text) in `.reason`. `Algorithm.fit` takes it in
  place of a budget.
- `ProgressLogger`: one line per `train()` result (or every `every`-th), its columns
  `format_result`'s (`iter`, `steps`, `reward` and any more), then, with `timing`, the
  env steps per second of this run, the elapsed time and the ETA against the stop
  criteria (`timesteps_total`, `training_iteration` or `time_total_s`) and `fit`'s
  budget, whichever comes first. On a terminal it may refresh one line
  (`refresh`); `summary()` prints the final line of a run. When the display is chosen
  automatically (`refresh=None`) and the output is not a terminal (a log file, CI), lines
  are throttled to one every `interval_s` seconds (default `TFRL_PROGRESS_INTERVAL_S`
  from the environment, else 10 s): the first result, then the first one at least that
  long after the last line printed, and the last one when training ends.

`tfrl train`, `tfrl.utils.progress.train_until`, the examples and `fit(verbose=1|2)` all
print through `ProgressLogger`. Both callbacks read the full result of the iteration
from `model.last_result` (set by `Algorithm.fit`), else the epoch's `logs`.

Example:
    >>> import io
    >>> out = io.StringIO()
    >>> progress = ProgressLogger(stop={"timesteps_total": 1000}, stream=out,
    ...                           clock=iter([0.0, 2.0]).__next__)
    >>> progress.on_train_begin()
    >>> progress.on_epoch_end(0, {"training_iteration": 1, "timesteps_total": 200,
    ...                           "episode_reward_mean": 21.5})
    >>> print(out.getvalue().strip())
    iter   1  steps    200  reward   21.50    100 steps/s  elapsed 0:00:02  ETA 0:00:08
"""

import math
import os
import sys
import time
from typing import Any, Callable, Dict, Mapping, Optional, TextIO

import keras

from tfrl.utils.progress import (DEFAULT_COLUMNS, Column, check_stop, format_duration,
                                 format_result, stop_reason)

__all__ = ["ProgressLogger", "StopOnCriteria", "PROGRESS_INTERVAL_ENV_VAR",
           "DEFAULT_INTERVAL_S"]

#: Seconds between progress lines when output is not a terminal (`ProgressLogger`'s
#: automatic display); overridden by the environment variable below.
DEFAULT_INTERVAL_S = 10.0
#: Environment variable with the seconds between non-terminal progress lines (0: every
#: line).
PROGRESS_INTERVAL_ENV_VAR = "TFRL_PROGRESS_INTERVAL_S"


def _result(callback: keras.callbacks.Callback, logs: Optional[Mapping[str, Any]]
            ) -> Mapping[str, Any]:
    """The iteration's full result (`model.last_result`), else the epoch's logs."""
    result = getattr(callback.model, "last_result", None)
    return result if result is not None else (logs or {})


class StopOnCriteria(keras.callbacks.Callback):
    """Stops `fit` after the first iteration whose result meets a stop criterion.

    Args:
        stop: Result key -> threshold (`"a/b"` keys follow nested dicts); training stops
            when any value is >= its threshold. Empty: never stops (until interrupted).

    Attributes:
        stop: The criteria.
        reason: `"key=value >= threshold"` of the criterion that stopped the run, or None.

    Raises:
        TypeError: If `stop` is not a dict of numbers.
    """

    def __init__(self, stop: Mapping[str, float]):
        super().__init__()
        self.stop = check_stop(stop)
        self.reason: Optional[str] = None

    def on_train_begin(self, logs: Optional[Dict[str, Any]] = None) -> None:
        self.reason = None

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        self.reason = stop_reason(_result(self, logs), self.stop)
        if self.reason is not None:
            self.model.stop_training = True


class ProgressLogger(keras.callbacks.Callback):
    """Prints training progress; see the module docstring.

    Args:
        stop: The stop criteria, for the ETA (with `fit`'s budget, which comes first).
        columns: label -> result key or `(key, format spec)` (default `DEFAULT_COLUMNS`).
        timing: Add steps/s, elapsed time and ETA.
        every: Print every `every`-th iteration (by `training_iteration`); the last
            result of the run is printed when training ends, if it was not yet.
        refresh: Rewrite one line with `\\r` instead of printing one per iteration; None:
            when `stream` is a terminal, and elsewhere throttle the lines (`interval_s`).
        quiet: Print no progress lines (`summary()` still prints).
        interval_s: Print a line only when at least this many seconds passed since the
            last one printed (the first result always prints; the last one of the run
            prints when training ends). None: 0 when `refresh` is given or `stream` is a
            terminal; otherwise `TFRL_PROGRESS_INTERVAL_S` from the environment, else
            `DEFAULT_INTERVAL_S` (10 s).
        stream: Where to print (default stdout).
        clock: Time source (for tests).
    """

    def __init__(self, stop: Optional[Mapping[str, float]] = None,
                 columns: Optional[Mapping[str, Column]] = None, timing: bool = True,
                 every: int = 1, refresh: Optional[bool] = False, quiet: bool = False,
                 stream: Optional[TextIO] = None, clock: Callable[[], float] = time.monotonic,
                 interval_s: Optional[float] = None):
        super().__init__()
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"ProgressLogger(every={every!r}): expected a positive integer "
                             "(print every N-th iteration).")
        self.stop = None if stop is None else check_stop(stop)
        self.columns = dict(DEFAULT_COLUMNS if columns is None else columns)
        self.timing = timing
        self.every = every
        self.stream = stream or sys.stdout
        terminal = bool(getattr(self.stream, "isatty", lambda: False)())
        self.refresh = terminal if refresh is None else refresh
        if interval_s is None:
            interval_s = (_interval_from_env() if refresh is None and not terminal
                          else 0.0)
        if isinstance(interval_s, bool) or not isinstance(interval_s, (int, float)) \
                or not math.isfinite(interval_s) or interval_s < 0:
            raise ValueError(f"ProgressLogger(interval_s={interval_s!r}): expected seconds "
                             ">= 0 between progress lines (0: every line).")
        self.interval_s = float(interval_s)
        self._last_printed: Optional[float] = None  # clock time of the last line (throttle)
        self.quiet = quiet
        self.clock = clock
        self.targets: Dict[str, float] = dict(self.stop or {})
        self.start = 0.0
        self.start_steps = 0
        self.start_iteration = 0
        self.last: Dict[str, Any] = {}
        self._pending = False  # `last` was not printed (every > 1)
        self._line_open = False  # a refreshed line waits for its newline

    # ------------------------------------------------------------------ Keras hooks

    def on_train_begin(self, logs: Optional[Dict[str, Any]] = None) -> None:
        """Starts the clock; the rate and ETA count from `fit`'s starting counters."""
        params = self.params or {}
        self.start = self.clock()
        self.start_steps = int(params.get("start_timesteps") or 0)
        self.start_iteration = int(params.get("initial_epoch") or 0)
        self.targets = {}
        if params.get("target_timesteps"):
            self.targets["timesteps_total"] = params["target_timesteps"]
        elif params.get("epochs"):
            self.targets["training_iteration"] = params["epochs"]
        self.targets.update(self.stop or {})
        self.last, self._pending = {}, False
        self._last_printed = None

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        self.update(_result(self, logs))

    def on_train_end(self, logs: Optional[Dict[str, Any]] = None) -> None:
        """Prints the last result if `every` skipped it, and ends a refreshed line."""
        if self._pending and not self.quiet:
            self._write(self.line(self.last))
        self._pending = False
        self._end_line()

    # -------------------------------------------------------------------- display

    def update(self, result: Mapping[str, Any]) -> None:
        """Shows the progress after one `train()` result."""
        self.last = dict(result)
        iteration = result.get("training_iteration")
        self._pending = self.every > 1 and isinstance(iteration, (int, float)) and bool(
            int(iteration) % self.every)
        if not self._pending and self.interval_s > 0:
            now = self.clock()
            if self._last_printed is not None and now - self._last_printed < self.interval_s:
                self._pending = True
            else:
                self._last_printed = now
        if not self.quiet and not self._pending:
            self._write(self.line(result))

    def eta(self, result: Mapping[str, Any], elapsed: float) -> Optional[float]:
        """Seconds until the earliest stop criterion with a predictable rate, or None."""
        steps = int(result.get("timesteps_total", 0) or 0)
        iteration = int(result.get("training_iteration", 0) or 0)
        done_steps = steps - self.start_steps
        done_iters = iteration - self.start_iteration
        targets = self.targets
        etas = []
        if "timesteps_total" in targets and done_steps > 0 and elapsed > 0:
            etas.append((targets["timesteps_total"] - steps) * elapsed / done_steps)
        if "training_iteration" in targets and done_iters > 0:
            etas.append((targets["training_iteration"] - iteration) * elapsed / done_iters)
        if "time_total_s" in targets and "time_total_s" in result:
            etas.append(targets["time_total_s"] - float(result["time_total_s"]))
        return max(min(etas), 0.0) if etas else None

    def line(self, result: Mapping[str, Any]) -> str:
        """The progress line for `result`."""
        text = format_result(result, columns=self.columns)
        if not self.timing:
            return text
        elapsed = self.clock() - self.start
        steps = int(result.get("timesteps_total", 0) or 0)
        rate = (steps - self.start_steps) / elapsed if elapsed > 0 else 0.0
        text += f"  {rate:5.0f} steps/s  elapsed {format_duration(elapsed)}"
        eta = self.eta(result, elapsed)
        return text if eta is None else f"{text}  ETA {format_duration(eta)}"

    def summary(self, reason: str, checkpoint: Optional[str] = None,
                saved: Optional[Mapping[str, Any]] = None) -> None:
        """Prints the final summary of a run (and the checkpoint path).

        Args:
            reason: Why the run ended.
            checkpoint: The final checkpoint's path.
            saved: The counts of the saved state (`training_iteration`,
                `timesteps_total`, `episodes_total`), when an interruption moved them past
                the last result shown (an iteration interrupted after it counted itself).
        """
        self._end_line()
        result = {**self.last, **(saved or {})}
        elapsed = self.clock() - self.start
        reward = float(result.get("episode_reward_mean", float("nan")))
        self.stream.write(
            f"Finished ({reason}): {int(result.get('training_iteration', 0))} iterations, "
            f"{int(result.get('timesteps_total', 0))} env steps, "
            f"{int(result.get('episodes_total', 0))} episodes, episode_reward_mean "
            f"{reward:.2f}, in {format_duration(elapsed)}\n")
        if checkpoint:
            self.stream.write(f"Checkpoint: {checkpoint}\n")
        self.stream.flush()

    def _write(self, text: str) -> None:
        if self.refresh:
            self.stream.write("\r\033[K" + text)
            self._line_open = True
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def _end_line(self) -> None:
        if self._line_open:
            self.stream.write("\n")
            self.stream.flush()
            self._line_open = False


def _interval_from_env() -> float:
    """`TFRL_PROGRESS_INTERVAL_S` as seconds, else `DEFAULT_INTERVAL_S`."""
    text = os.environ.get(PROGRESS_INTERVAL_ENV_VAR)
    if text is None or not text.strip():
        return DEFAULT_INTERVAL_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{PROGRESS_INTERVAL_ENV_VAR}={text!r}: expected seconds >= 0 "
                         "between progress lines when output is not a terminal (0: one "
                         "line per iteration).")
    return value


def train_until(algo: Any, stop: Mapping[str, float],
                extra: Optional[Mapping[str, Column]] = None, verbose: bool = True
                ) -> Dict[str, Any]:
    """Trains `algo` with `algo.fit` until a result meets one of the `stop` criteria.

    Args:
        algo: The algorithm (an `Algorithm`, or anything with its `fit(callbacks=...,
            verbose=...)`).
        stop: Result key -> threshold; training stops at the first result whose value
            is >= a threshold (e.g. `{"training_iteration": 10,
            "episode_reward_mean": 475}`; `"a/b"` keys follow nested dicts).
        extra: Extra progress columns (see `format_result`).
        verbose: Print a progress line per result.

    Returns:
        The last result.

    Raises:
        ValueError: If `stop` is empty (training would never stop).
        TypeError: If a threshold is not a number.
    """
    if not stop:
        raise ValueError(
            "train_until needs at least one stop criterion. Received: stop={}. Pass e.g. "
            "{'training_iteration': 10} or {'timesteps_total': 100000}.")
    callbacks = [StopOnCriteria(stop)]
    if verbose:
        callbacks.append(ProgressLogger(columns={**DEFAULT_COLUMNS, **(extra or {})},
                                        timing=False))
    history = algo.fit(callbacks=callbacks, verbose=0)
    return history.model.last_result
