"""Tests of the metric operators with fake workers and a fake clock."""

import math

import numpy as np
import pytest

from execution_helpers import episodes, make_workers
from tfrl.execution.common import (LEARN_ON_BATCH_TIMER, LEARNER_INFO, STEPS_SAMPLED_COUNTER,
                                   STEPS_TRAINED_COUNTER)
from tfrl.execution.iter import SharedMetrics, from_range, metrics_context
from tfrl.execution.metric_ops import (CollectMetrics, OncePerTimeInterval,
                                       OncePerTimestepsElapsed, StandardMetricsReporting)
from tfrl.execution.rollout_ops import ParallelRollouts
from tfrl.execution.train_ops import TrainOneStep


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_once_per_time_interval_starts_at_construction():
    clock = FakeClock()
    once = OncePerTimeInterval(5, _clock=clock)
    results = []
    for advance in (1, 3, 1.5, 1, 4, 0.5):
        clock.now += advance
        results.append(once(None))
    # t = 1, 4, 5.5 (first True), 6.5, 10.5 (True: 5 s after 5.5), 11
    assert results == [False, False, True, False, True, False]
    assert all(OncePerTimeInterval(None)(i) for i in range(3))
    assert all(OncePerTimeInterval(0)(i) for i in range(3))
    with pytest.raises(ValueError, match="seconds >= 0 or None; received -1"):
        OncePerTimeInterval(-1)


def test_once_per_timesteps_elapsed_sampled_and_trained():
    def step(i):
        counters = _metrics().counters
        counters[STEPS_SAMPLED_COUNTER] += 300
        counters[STEPS_TRAINED_COUNTER] += 100
        return i

    from tfrl.execution.iter import get_shared_metrics as _metrics
    assert from_range(10).for_each(step).filter(OncePerTimestepsElapsed(1000)).take(5) == [3, 7]
    trained = from_range(25).for_each(step).filter(OncePerTimestepsElapsed(1000, by_steps_trained=True))
    assert trained.take(5) == [9, 19]
    assert from_range(3).filter(OncePerTimestepsElapsed(0)).take(5) == [0, 1, 2]
    with pytest.raises(ValueError, match="must be an int; received 1.5"):
        OncePerTimestepsElapsed(1.5)


def test_collect_metrics_smooths_over_history_and_reports_pipeline_state():
    workers = make_workers(num_remote=2)
    local, (r1, r2) = workers.local_worker(), workers.remote_workers()
    op = CollectMetrics(workers, min_history=4, timeout_seconds=10)
    metrics = SharedMetrics()
    metrics.counters[STEPS_SAMPLED_COUNTER] = 500
    metrics.counters[STEPS_TRAINED_COUNTER] = 400
    metrics.info[LEARNER_INFO] = {"default_policy": {"learner_stats": {"loss": 1.0}}}
    metrics.timers[LEARN_ON_BATCH_TIMER].push(0.25)
    metrics.timers[LEARN_ON_BATCH_TIMER].push_units_processed(100)
    with metrics_context(metrics):
        local.episodes = episodes([1.0])
        r1.worker.episodes = episodes([2.0, 3.0])
        r2.worker.episodes = episodes([4.0])
        first = op(None)
        r1.worker.episodes = episodes([10.0])
        second = op(None)
        third = op(None)
    assert first["episode_reward_mean"] == pytest.approx(2.5)
    assert first["episodes_this_iter"] == 4
    assert (first["episode_reward_min"], first["episode_reward_max"]) == (1.0, 4.0)
    # one new episode, topped up with the 3 most recent earlier ones
    assert second["episodes_this_iter"] == 1
    assert second["episode_reward_mean"] == pytest.approx((3.0 + 4.0 + 1.0 + 10.0) / 4)
    assert third["episodes_this_iter"] == 0
    assert third["episode_reward_mean"] == pytest.approx((3.0 + 4.0 + 1.0 + 10.0) / 4)
    assert first["timesteps_total"] == 500
    assert first["num_healthy_workers"] == 2
    assert first["counters"] == {STEPS_SAMPLED_COUNTER: 500, STEPS_TRAINED_COUNTER: 400}
    assert first[STEPS_TRAINED_COUNTER] == 400
    assert first["info"][LEARNER_INFO] == {"default_policy": {"learner_stats": {"loss": 1.0}}}
    assert first["info"][STEPS_SAMPLED_COUNTER] == 500
    assert first["timers"] == {"learn_time_ms": 250.0, "learn_throughput": 400.0}


def test_collect_metrics_without_episodes_selected_workers_and_errors():
    workers = make_workers(num_remote=2)
    r1, r2 = workers.remote_workers()
    r2.worker.episodes = episodes([7.0])
    op = CollectMetrics(workers, selected_workers=[r1], by_steps_trained=True)
    with metrics_context(SharedMetrics()) as metrics:
        metrics.counters[STEPS_TRAINED_COUNTER] = 42
        result = op(None)
    assert math.isnan(result["episode_reward_mean"])
    assert result["episodes_this_iter"] == 0
    assert result["timesteps_total"] == 42
    assert r2.calls == []  # not selected, not asked
    with pytest.raises(ValueError, match="min_history=...\\) must be an int >= 0; received -1"):
        CollectMetrics(workers, min_history=-1)
    with pytest.raises(ValueError, match="timeout_seconds=...\\) must be >= 0"):
        CollectMetrics(workers, timeout_seconds=-1)


def test_standard_metrics_reporting_every_timesteps_per_iteration():
    workers = make_workers(num_remote=2, fragment_length=50)
    for i, handle in enumerate(workers.remote_workers()):
        handle.worker.episodes = episodes(np.arange(3) + 10 * i)
    train_op = ParallelRollouts(workers).for_each(TrainOneStep(workers))
    config = {"timesteps_per_iteration": 250, "min_iter_time_s": 0,
              "metrics_smoothing_episodes": 100, "collect_metrics_timeout": 5}
    reports = StandardMetricsReporting(train_op, workers, config)
    first = next(reports)
    assert first["timesteps_total"] == 300  # 3 steps of 100 rows: the first >= 250
    assert first["episodes_this_iter"] == 6
    assert first["episode_reward_mean"] == pytest.approx(np.mean([0, 1, 2, 10, 11, 12]))
    assert first["info"][LEARNER_INFO]["default_policy"]["learner_stats"]["loss"] == 100.0
    assert next(reports)["timesteps_total"] == 600
    rllib2 = StandardMetricsReporting(ParallelRollouts(workers), workers,
                                      {"min_sample_timesteps_per_iteration": 400})
    assert next(rllib2)["timesteps_total"] == 400
