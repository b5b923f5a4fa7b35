"""tfrl.utils.progress_callbacks.ProgressLogger: when output is not a terminal (a log
file, CI) and the display is chosen automatically, progress lines are throttled to one
every `interval_s` seconds (configurable, also by `TFRL_PROGRESS_INTERVAL_S`), with the
first result and the last one always shown."""

import io

import pytest

from tfrl.utils.progress_callbacks import (DEFAULT_INTERVAL_S, PROGRESS_INTERVAL_ENV_VAR,
                                           ProgressLogger)


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _run(progress, clock, seconds_per_iteration, iterations):
    progress.on_train_begin()
    for i in range(1, iterations + 1):
        clock.now = i * seconds_per_iteration
        progress.on_epoch_end(i - 1, {"training_iteration": i, "timesteps_total": 64 * i})
    progress.on_train_end()


def _iterations(out):
    return [int(line.split()[1]) for line in out.getvalue().splitlines()]


def test_non_terminal_auto_display_prints_every_interval_and_the_last(monkeypatch):
    monkeypatch.delenv(PROGRESS_INTERVAL_ENV_VAR, raising=False)
    out, clock = io.StringIO(), Clock()  # StringIO is not a terminal
    progress = ProgressLogger(refresh=None, timing=False, stream=out, clock=clock)
    assert (progress.refresh, progress.interval_s) == (False, DEFAULT_INTERVAL_S)
    _run(progress, clock, seconds_per_iteration=3.0, iterations=12)  # 3 s .. 36 s
    # The first (3 s), then the first one at least 10 s after the last printed: 15 s
    # (iteration 5), 27 s (iteration 9), and the last one (iteration 12) at the end.
    assert _iterations(out) == [1, 5, 9, 12]


def test_interval_from_the_environment_and_zero_prints_every_line(monkeypatch):
    monkeypatch.setenv(PROGRESS_INTERVAL_ENV_VAR, "0")
    out, clock = io.StringIO(), Clock()
    progress = ProgressLogger(refresh=None, timing=False, stream=out, clock=clock)
    _run(progress, clock, 3.0, 4)
    assert _iterations(out) == [1, 2, 3, 4]
    monkeypatch.setenv(PROGRESS_INTERVAL_ENV_VAR, "7.5")
    out, clock = io.StringIO(), Clock()
    progress = ProgressLogger(refresh=None, timing=False, stream=out, clock=clock)
    _run(progress, clock, 3.0, 6)  # 3, 6, 9, 12, 15, 18 s
    assert _iterations(out) == [1, 4, 6]
    monkeypatch.setenv(PROGRESS_INTERVAL_ENV_VAR, "soon")
    with pytest.raises(ValueError, match="TFRL_PROGRESS_INTERVAL_S='soon': expected seconds"):
        ProgressLogger(refresh=None, stream=io.StringIO())


def test_explicit_interval_combines_with_every():
    out, clock = io.StringIO(), Clock()
    progress = ProgressLogger(every=2, interval_s=5.0, timing=False, stream=out, clock=clock)
    _run(progress, clock, 2.0, 9)  # iterations 2, 4, 6, 8 pass `every`; at 4, 8, 12, 16 s
    assert _iterations(out) == [2, 6, 9]  # 4 s, 12 s (8 s is < 5 s after 4 s), the last
    with pytest.raises(ValueError, match=r"ProgressLogger\(interval_s=-1\): expected seconds"):
        ProgressLogger(interval_s=-1)


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_explicit_or_terminal_displays_are_not_throttled(monkeypatch):
    monkeypatch.delenv(PROGRESS_INTERVAL_ENV_VAR, raising=False)
    # refresh=False: one line per iteration, as asked (fit(verbose=2), scripts).
    out, clock = io.StringIO(), Clock()
    progress = ProgressLogger(refresh=False, timing=False, stream=out, clock=clock)
    assert progress.interval_s == 0.0
    _run(progress, clock, 1.0, 3)
    assert _iterations(out) == [1, 2, 3]
    # A terminal refreshes one line in place at every iteration.
    term = Terminal()
    progress = ProgressLogger(refresh=None, timing=False, stream=term, clock=Clock())
    assert (progress.refresh, progress.interval_s) == (True, 0.0)
    progress.on_train_begin()
    for i in (1, 2, 3):
        progress.on_epoch_end(i - 1, {"training_iteration": i, "timesteps_total": 64 * i})
    assert term.getvalue().count("\r\033[K") == 3
