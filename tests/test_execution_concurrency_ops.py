"""Tests of Concurrently, Enqueue and Dequeue."""

import queue

import pytest

from execution_helpers import make_workers
from tfrl.execution.common import STEPS_SAMPLED_COUNTER
from tfrl.execution.concurrency_ops import Concurrently, Dequeue, Enqueue
from tfrl.execution.iter import LocalIterator, NotReady, from_items
from tfrl.execution.rollout_ops import ParallelRollouts
from tfrl.policy.sample_batch import SampleBatch


def test_round_robin_order_weights_and_exhaustion():
    a, b, c = from_items("abcd"), from_items("xy"), from_items("1")
    assert list(Concurrently([a, b, c])) == ["a", "x", "1", "b", "y", "c", "d"]
    out = Concurrently([from_items("abcdef"), from_items("xyz")], round_robin_weights=[2, 1])
    assert list(out) == ["a", "b", "x", "c", "d", "y", "e", "f", "z"]


def test_star_weight_pulls_what_is_ready():
    q = queue.Queue()
    for item in (1, 2, 3):
        q.put(item)
    out = Concurrently([from_items("ab"), Dequeue(q)], round_robin_weights=[1, "*"])
    assert out.take(5) == ["a", 1, 2, 3, "b"]


def test_output_indexes_consume_all_but_emit_selected():
    consumed = []
    a = from_items([1, 2, 3]).for_each(lambda x: consumed.append(x) or x)
    b = from_items(["x", "y", "z"])
    assert list(Concurrently([a, b], output_indexes=[1])) == ["x", "y", "z"]
    assert consumed == [1, 2, 3]


def test_async_mode_with_enqueue_dequeue_seed_example():
    workers = make_workers(num_remote=2, fragment_length=5)
    q = queue.Queue(100)
    write_op = ParallelRollouts(workers, mode="bulk_sync").for_each(Enqueue(q))
    read_op = Dequeue(q)
    combined = Concurrently([write_op, read_op], mode="async", output_indexes=[1])
    batch = next(combined)
    assert isinstance(batch, SampleBatch) and batch.count == 10
    assert combined.shared_metrics.counters[STEPS_SAMPLED_COUNTER] >= 10


def test_async_mode_merges_everything():
    out = Concurrently([from_items(range(5)), from_items(range(10, 13))], mode="async")
    assert sorted(out) == [0, 1, 2, 3, 4, 10, 11, 12]


def test_enqueue_keeps_items_while_full():
    q = queue.Queue(maxsize=1)
    enqueue = Enqueue(q)
    assert enqueue("a") == "a"
    assert isinstance(enqueue("b"), NotReady)
    assert isinstance(enqueue("c"), NotReady)
    received = [q.get_nowait()]
    for item in "def":
        assert isinstance(enqueue(item), NotReady)  # an older item fills the queue again
        received.append(q.get_nowait())
    assert received == ["a", "b", "c", "d"]
    assert list(enqueue.pending) == ["e", "f"]
    assert q.empty()


def test_dequeue_check_and_errors():
    q = queue.Queue()
    q.put(1)
    alive = iter([True, True, False])
    it = Dequeue(q, check=lambda: next(alive))
    assert next(it) == 1
    with pytest.raises(RuntimeError, match="Dequeue `check\\(\\)` returned False"):
        next(it)
    with pytest.raises(ValueError, match="Expected queue.Queue, got <class 'list'>"):
        Dequeue([])
    with pytest.raises(ValueError, match="Expected queue.Queue, got <class 'list'>"):
        Enqueue([])


def test_concurrently_errors():
    a, b = from_items([1]), from_items([2])
    with pytest.raises(ValueError, match="Should specify at least 2 ops."):
        Concurrently([a])
    with pytest.raises(ValueError, match="round_robin_weights cannot be specified in async mode"):
        Concurrently([a, b], mode="async", round_robin_weights=[1, 2])
    with pytest.raises(ValueError, match="Unknown mode 'parallel'"):
        Concurrently([a, b], mode="parallel")
    with pytest.raises(ValueError, match="Cannot specify all round robin weights = \\*"):
        Concurrently([a, b], round_robin_weights=["*", "*"])
    with pytest.raises(ValueError, match="Index out of range.*received 2"):
        Concurrently([a, b], output_indexes=[0, 2])
    with pytest.raises(ValueError, match="one weight per iterator"):
        Concurrently([a, b], round_robin_weights=[1])
    assert isinstance(Concurrently([a, b]), LocalIterator)
