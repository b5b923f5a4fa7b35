"""Tests of the iterator substrate: LocalIterator, SharedMetrics, NotReady, stats."""

import pytest

from tfrl.execution.iter import (LocalIterator, NotReady, SharedMetrics, from_items,
                                 from_iterators, from_range, get_shared_metrics,
                                 metrics_context)
from tfrl.execution.stats import TimerStat, WindowStat


def test_lazy_until_next():
    calls = []

    def base(timeout=None):
        calls.append(timeout)
        yield from range(3)

    it = LocalIterator(base).for_each(lambda x: x + 1)
    assert calls == []
    assert next(it) == 1
    assert calls == [None]
    assert list(it) == [2, 3]


def test_for_each_filter_flatten_combine_batch():
    assert from_range(5).for_each(lambda x: x * x).take(5) == [0, 1, 4, 9, 16]
    assert from_range(10).filter(lambda x: x % 3 == 0).take(10) == [0, 3, 6, 9]
    assert from_items([[1, 2], [], [3]]).flatten().take(5) == [1, 2, 3]
    assert from_range(4).combine(lambda x: [x] * x).take(10) == [1, 2, 2, 3, 3, 3]
    assert from_range(7).batch(3).take(5) == [[0, 1, 2], [3, 4, 5], [6]]


def test_callable_object_and_on_fetch_start():
    class Op:
        def __init__(self):
            self.fetches = 0

        def _on_fetch_start(self):
            self.fetches += 1

        def __call__(self, x):
            return (x, self.fetches)

    op = Op()
    assert from_range(2).for_each(op).take(2) == [(0, 1), (1, 2)]


def test_not_ready_passes_through_operators_and_is_skipped_by_next():
    seen = []

    def base(timeout=None):
        yield NotReady()
        yield 1
        yield NotReady()
        yield 2

    it = (LocalIterator(base).for_each(lambda x: seen.append(x) or x * 10)
          .filter(lambda x: True).batch(1).flatten())
    assert list(it) == [10, 20]
    assert seen == [1, 2]  # for_each never saw a NotReady


def test_repeat_and_from_iterators():
    assert from_items([1, 2], repeat=True).take(5) == [1, 2, 1, 2, 1]
    assert from_iterators([[1], lambda: iter([2, 3])]).take(5) == [1, 2, 3]
    assert from_iterators([lambda: [7]], repeat=True).take(3) == [7, 7, 7]


def test_shared_metrics_reachable_while_op_runs():
    def count(x):
        get_shared_metrics().counters["n"] += x
        return x

    it = from_range(4).for_each(count)
    it.take(4)
    assert it.shared_metrics.counters["n"] == 6
    with pytest.raises(RuntimeError, match="outside a running execution pipeline"):
        get_shared_metrics()


def test_metrics_context_for_direct_calls_and_save_restore():
    metrics = SharedMetrics()
    with metrics_context(metrics):
        get_shared_metrics().counters["a"] += 3
        get_shared_metrics().info["x"] = 1
    assert metrics.counters["a"] == 3
    state = metrics.save()
    other = SharedMetrics()
    other.restore(state)
    assert other.counters["a"] == 3 and other.counters["missing"] == 0 and other.info == {"x": 1}
    assert metrics.current_actor is None


def test_union_round_robin_with_weights_and_exhaustion():
    a = from_items(["a1", "a2", "a3", "a4", "a5"])
    b = from_items(["b1", "b2"])
    out = a.union(b, deterministic=True, round_robin_weights=[2, 1])
    assert list(out) == ["a1", "a2", "b1", "a3", "a4", "b2", "a5"]


def test_union_star_weight_pulls_until_not_ready():
    def bursty(timeout=None):
        for burst in ([1, 2, 3], [4]):
            yield from burst
            yield NotReady()

    out = from_items(["x", "y"]).union(LocalIterator(bursty), deterministic=True,
                                       round_robin_weights=[1, "*"])
    assert list(out) == ["x", 1, 2, 3, "y", 4]


def test_union_async_asks_parents_not_to_block():
    timeouts = []

    def source(timeout=None):
        timeouts.append(timeout)
        yield from range(3)

    out = LocalIterator(source).union(LocalIterator(source), deterministic=False)
    assert sorted(out) == [0, 0, 1, 1, 2, 2]
    assert timeouts == [0, 0]


def test_union_shares_metrics_and_adds_counters():
    a, b = from_range(2), from_range(2)
    b.shared_metrics.counters["steps"] = 5

    def bump(x):
        get_shared_metrics().counters["steps"] += 1
        return x

    out = a.for_each(bump).union(b.for_each(bump), deterministic=True)
    out.take(4)
    assert out.shared_metrics is a.shared_metrics
    assert out.shared_metrics.counters["steps"] == 9


def test_zip_with_source_actor():
    def base(timeout=None):
        for w in ("w1", "w2"):
            get_shared_metrics().current_worker = w
            yield w.upper()

    assert LocalIterator(base).zip_with_source_actor().take(2) == [("w1", "W1"), ("w2", "W2")]


def test_errors():
    with pytest.raises(TypeError, match="takes a function"):
        LocalIterator([1, 2])
    with pytest.raises(ValueError, match="int n >= 1; received n=0"):
        from_range(3).batch(0)
    with pytest.raises(TypeError, match="argument 0 is list"):
        from_range(3).union([1])
    with pytest.raises(ValueError, match="only be used with deterministic=True"):
        from_range(3).union(from_range(3), round_robin_weights=[1, 1])
    with pytest.raises(ValueError, match="one weight per iterator \\(2\\); received 3"):
        from_range(3).union(from_range(3), deterministic=True, round_robin_weights=[1, 1, 1])
    with pytest.raises(ValueError, match="int >= 1 or '\\*'; received 0"):
        from_range(3).union(from_range(3), deterministic=True, round_robin_weights=[0, 1])


def test_timer_and_window_stats():
    timer = TimerStat(window_size=2)
    assert timer.mean == 0.0 and timer.mean_throughput == 0.0 and not timer.has_units_processed()
    for seconds, units in ((1.0, 10), (2.0, 20), (3.0, 60)):
        timer.push(seconds)
        timer.push_units_processed(units)
    assert timer.count == 3
    assert timer.mean == pytest.approx(2.5)
    assert timer.mean_units_processed == pytest.approx(40.0)
    assert timer.mean_throughput == pytest.approx(80 / 5)
    with timer:
        pass
    assert timer.count == 4
    with pytest.raises(RuntimeError, match="not reentrant"):
        with timer:
            with timer:
                pass
    with pytest.raises(ValueError, match="window_size"):
        TimerStat(0)
    stat = WindowStat("q", 2)
    assert stat.stats()["q_count"] == 0
    for v in (1, 5, 3):
        stat.push(v)
    s = stat.stats()
    assert (s["q_count"], s["q_mean"], s["q_min"], s["q_max"]) == (2, 4.0, 3.0, 5.0)
    assert s["q_std"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="WindowStat"):
        WindowStat("q", 0)
