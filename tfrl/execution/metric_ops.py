"""Metric operators: throttle a training plan and turn it into result dicts.

`StandardMetricsReporting(train_op, workers, config)` is what an algorithm's plan ends
with: it lets a result through once enough steps (`timesteps_per_iteration`) and time
(`min_iter_time_s`) have passed, and reports episode metrics smoothed over
`metrics_smoothing_episodes` episodes together with the pipeline's counters, timers and
learner info.

Example:
    >>> from tfrl.execution.iter import from_range
    >>> from tfrl.execution.common import STEPS_SAMPLED_COUNTER, get_shared_metrics
    >>> def sample(step):
    ...     get_shared_metrics().counters[STEPS_SAMPLED_COUNTER] += 300
    ...     return step
    >>> from_range(10).for_each(sample).filter(OncePerTimestepsElapsed(1000)).take(3)
    [3, 7]
"""

import time
from typing import Any, Callable, List, Mapping, Optional, Sequence

from tfrl.core import types
from tfrl.evaluation.metrics import collect_episodes, summarize_episodes
from tfrl.execution.common import (AGENT_STEPS_SAMPLED_COUNTER, AGENT_STEPS_TRAINED_COUNTER,
                                   STEPS_SAMPLED_COUNTER, STEPS_TRAINED_COUNTER)
from tfrl.execution.iter import LocalIterator, SharedMetrics, get_shared_metrics
from tfrl.utils.checks import check_int


def _config_value(config: Any, keys: List[str], default: Any) -> Any:
    for key in keys:
        if isinstance(config, Mapping):
            if config.get(key) is not None:
                return config[key]
        elif getattr(config, key, None) is not None:
            return getattr(config, key)
    return default


def StandardMetricsReporting(train_op: LocalIterator[Any], workers: types.WorkerSet, config: Any,
                             selected_workers: Optional[Sequence[types.RemoteWorker]] = None,
                             by_steps_trained: bool = False) -> LocalIterator[types.ResultDict]:
    """Periodic result dicts of a training plan (the outputs of `train_op` are dropped).

    `train_op.filter(OncePerTimestepsElapsed(timesteps_per_iteration))
    .filter(OncePerTimeInterval(min_iter_time_s)).for_each(CollectMetrics(...))`.

    Args:
        train_op: The training plan.
        workers: The WorkerSet to collect episode metrics from.
        config: The algorithm config (dict or attribute object). Keys (RLlib 2 names in
            brackets, defaults after "="): `timesteps_per_iteration`
            [`min_sample_timesteps_per_iteration`] = 0, `min_iter_time_s`
            [`min_time_s_per_iteration`] = 0, `metrics_smoothing_episodes` = 100,
            `collect_metrics_timeout` [`metrics_episode_collection_timeout_s`] = 180.
        selected_workers: Remote workers to collect from instead of all.
        by_steps_trained: Count (and report as `timesteps_total`) steps trained instead
            of steps sampled.

    Returns:
        A LocalIterator of result dicts (see `CollectMetrics`).
    """
    steps = _config_value(
        config, ["timesteps_per_iteration", "min_sample_timesteps_per_iteration"], 0)
    seconds = _config_value(config, ["min_iter_time_s", "min_time_s_per_iteration"], 0)
    history = _config_value(config, ["metrics_smoothing_episodes"], 100)
    timeout = _config_value(config, ["collect_metrics_timeout",
                                     "metrics_episode_collection_timeout_s"], 180)
    return (train_op
            .filter(OncePerTimestepsElapsed(steps, by_steps_trained=by_steps_trained))
            .filter(OncePerTimeInterval(seconds))
            .for_each(CollectMetrics(workers, min_history=history, timeout_seconds=timeout,
                                     selected_workers=selected_workers,
                                     by_steps_trained=by_steps_trained)))


class CollectMetrics:
    """Collects episode metrics from the workers and smooths them over a history window.

    Use with `.for_each()`; each call returns a result dict: the episode summary of
    `tfrl.evaluation.metrics.summarize_episodes` (`episode_reward_mean`, ...) over this
    call's new episodes, topped up with the most recent earlier ones to `min_history`
    (`episodes_this_iter` counts only the new ones), plus `timesteps_total`,
    `agent_timesteps_total`, `num_healthy_workers`, `counters` (also copied to the top
    level and into `info`), `info` (the pipeline info, e.g. `LEARNER_INFO`) and `timers`
    (`<name>_time_ms`, `<name>_throughput`). Remote replies that miss `timeout_seconds`
    are counted on a later call.

    Args:
        workers: The WorkerSet.
        min_history: Episodes to smooth over.
        timeout_seconds: How long to wait for the remote workers' metrics.
        keep_per_episode_custom_metrics: Report custom metrics as lists of values.
        selected_workers: Remote workers to collect from instead of all.
        by_steps_trained: `timesteps_total` counts steps trained instead of sampled.

    Raises:
        ValueError: If `min_history` is not an int >= 0 or `timeout_seconds` is negative.
    """

    def __init__(self, workers: types.WorkerSet, min_history: int = 100,
                 timeout_seconds: float = 180, keep_per_episode_custom_metrics: bool = False,
                 selected_workers: Optional[Sequence[types.RemoteWorker]] = None,
                 by_steps_trained: bool = False):
        check_int(min_history, "CollectMetrics(min_history=...)", 0)
        if timeout_seconds is None or timeout_seconds < 0:
            raise ValueError(f"CollectMetrics(timeout_seconds=...) must be >= 0; received "
                             f"{timeout_seconds!r}.")
        self.workers = workers
        self.min_history = min_history
        self.timeout_seconds = timeout_seconds
        self.keep_per_episode_custom_metrics = keep_per_episode_custom_metrics
        self.selected_workers = selected_workers
        self.by_steps_trained = by_steps_trained
        self.episode_history: List[Any] = []
        self.to_be_collected: List[Any] = []
        self._added: List[Any] = []

    def add_episodes(self, episodes: Sequence[Any]) -> None:
        """Adds `RolloutMetrics` of episodes that ended outside the workers (the in-graph
        path's): the next `report` counts them as new, after the workers' own."""
        self._added.extend(episodes)

    def __call__(self, _: Any) -> types.ResultDict:
        return self.report(get_shared_metrics())

    def report(self, metrics: SharedMetrics) -> types.ResultDict:
        """The result dict of the episodes collected now and of `metrics` (the
        counters, timers and info of the algorithm or pipeline)."""
        remotes = (self.selected_workers if self.selected_workers is not None
                   else self.workers.remote_workers())
        new_episodes, self.to_be_collected = collect_episodes(
            self.workers.local_worker(), remotes, self.to_be_collected,
            timeout_seconds=self.timeout_seconds)
        new_episodes, self._added = new_episodes + self._added, []
        missing = self.min_history - len(new_episodes)
        window = (self.episode_history[-missing:] if missing > 0 else []) + new_episodes
        if self.min_history:
            self.episode_history = (self.episode_history + new_episodes)[-self.min_history:]
        result = summarize_episodes(window, new_episodes,
                                    keep_custom_metrics=self.keep_per_episode_custom_metrics)

        custom_from_info = metrics.info.pop("custom_metrics", {})
        counters = dict(metrics.counters)
        timers = {}
        for name, timer in metrics.timers.items():
            timers[f"{name}_time_ms"] = round(timer.mean * 1000, 3)
            if timer.has_units_processed():
                timers[f"{name}_throughput"] = round(timer.mean_throughput, 3)
        for key, value in counters.items():
            result.setdefault(key, value)
        steps = STEPS_TRAINED_COUNTER if self.by_steps_trained else STEPS_SAMPLED_COUNTER
        agent_steps = (AGENT_STEPS_TRAINED_COUNTER if self.by_steps_trained
                       else AGENT_STEPS_SAMPLED_COUNTER)
        result.update({
            "num_healthy_workers": len(self.workers.remote_workers()),
            "timesteps_total": counters.get(steps, 0),
            "agent_timesteps_total": counters.get(agent_steps, 0),
            "timers": timers,
            "counters": counters,
            "info": {**metrics.info, **counters},
        })
        result["custom_metrics"] = {**result.get("custom_metrics", {}), **custom_from_info}
        result.setdefault("episode_media", {})
        return result


class OncePerTimeInterval:
    """A `.filter()` predicate that is True at most once per `delay` seconds.

    The first True comes `delay` seconds after construction (the seed's example: the
    first item of `train_op.filter(OncePerTimeInterval(5))` arrives after > 5 s).

    Args:
        delay: Seconds between two True results; None or 0: always True.

    Raises:
        ValueError: If `delay` is negative or not a number.
    """

    def __init__(self, delay: Optional[float] = None, *,
                 _clock: Callable[[], float] = time.monotonic):
        if delay is not None and (isinstance(delay, bool) or not isinstance(delay, (int, float))
                                  or delay < 0):
            raise ValueError(f"OncePerTimeInterval(delay=...) must be a number of seconds >= 0 "
                             f"or None; received {delay!r}.")
        self.delay = float(delay or 0.0)
        self._clock = _clock
        self.last_returned_true = _clock()

    def __call__(self, item: Any) -> bool:
        if self.delay <= 0:
            return True
        now = self._clock()
        if now - self.last_returned_true >= self.delay:
            self.last_returned_true = now
            return True
        return False


class OncePerTimestepsElapsed:
    """A `.filter()` predicate that is True once per `delay_steps` steps sampled (or trained).

    Args:
        delay_steps: Steps between two True results; <= 0: always True.
        by_steps_trained: Count `STEPS_TRAINED_COUNTER` instead of `STEPS_SAMPLED_COUNTER`.

    Raises:
        ValueError: If `delay_steps` is not an int.
    """

    def __init__(self, delay_steps: int, by_steps_trained: bool = False):
        if isinstance(delay_steps, bool) or not isinstance(delay_steps, int):
            raise ValueError(f"OncePerTimestepsElapsed(delay_steps=...) must be an int; received "
                             f"{delay_steps!r}.")
        self.delay_steps = delay_steps
        self.by_steps_trained = by_steps_trained
        self.last_called = 0

    def __call__(self, item: Any) -> bool:
        if self.delay_steps <= 0:
            return True
        counter = STEPS_TRAINED_COUNTER if self.by_steps_trained else STEPS_SAMPLED_COUNTER
        now = get_shared_metrics().counters[counter]
        if now - self.last_called >= self.delay_steps:
            self.last_called = now
            return True
        return False
