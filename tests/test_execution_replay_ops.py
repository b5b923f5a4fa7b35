"""Tests of the replay operators and LocalReplayBuffer."""

import random

import numpy as np
import pytest

from execution_helpers import InlineHandle, make_workers
from tfrl.execution.concurrency_ops import Concurrently
from tfrl.execution.iter import from_items
from tfrl.execution.replay_buffer import LocalReplayBuffer
from tfrl.execution.replay_ops import (MixInReplay, Replay, SimpleReplayBuffer,
                                       StoreToReplayActors, StoreToReplayBuffer)
from tfrl.execution.common import STEPS_TRAINED_COUNTER
from tfrl.execution.rollout_ops import ParallelRollouts
from tfrl.execution.train_ops import TrainOneStep
from tfrl.policy.multi_agent_batch import MultiAgentBatch
from tfrl.policy.sample_batch import SampleBatch


def _rows(start, n=3):
    return SampleBatch({"obs": np.arange(start, start + n, dtype=np.float32),
                        "nested": {"a": np.arange(start, start + n)[:, None] * np.ones((1, 2))}})


def test_local_replay_buffer_ring_and_uniform_sampling():
    buffer = LocalReplayBuffer(capacity=5, replay_batch_size=1000, seed=0)
    assert buffer.replay() is None
    buffer.add_batch(_rows(0))
    buffer.add_batch(_rows(3))  # rows 0..5; row 0 evicted
    assert len(buffer) == 5
    replayed = buffer.replay()
    assert replayed.count == 1000
    values = replayed["obs"]
    assert set(values.tolist()) == {1.0, 2.0, 3.0, 4.0, 5.0}
    np.testing.assert_array_equal(replayed["nested"]["a"][:, 0], values)
    counts = np.bincount(values.astype(int), minlength=6)[1:]
    assert counts.min() > 150  # roughly uniform: 200 expected per row
    big = LocalReplayBuffer(capacity=2, replay_batch_size=4, seed=0)
    big.add_batch(_rows(10, n=5))
    assert set(big.replay()["obs"].tolist()) <= {13.0, 14.0}


def test_local_replay_buffer_learning_starts_multi_agent_and_errors():
    buffer = LocalReplayBuffer(capacity=10, replay_batch_size=2, learning_starts=4, seed=1)
    mab = MultiAgentBatch({"p0": _rows(0), "p1": _rows(100, n=1)}, env_steps=3)
    buffer.add_batch(mab)
    assert buffer.replay() is None
    buffer.add(mab)
    out = buffer.replay()
    assert isinstance(out, MultiAgentBatch) and set(out.policy_batches) == {"p0", "p1"}
    assert out.policy_batches["p1"]["obs"].tolist() == [100.0, 100.0]
    with pytest.raises(TypeError, match="received dict"):
        buffer.add_batch({"obs": [1]})
    with pytest.raises(ValueError, match="columns \\['obs'\\] differ"):
        buffer.add_batch(MultiAgentBatch({"p0": SampleBatch({"obs": np.zeros(2)})}, 2))
    with pytest.raises(ValueError, match="capacity=...\\) must be an int >= 1; received 0"):
        LocalReplayBuffer(0, 1)
    with pytest.raises(ValueError, match="sequence batch"):
        LocalReplayBuffer(5, 1).add_batch(SampleBatch({"obs": np.zeros(2), "seq_lens": [2]}))


def test_local_replay_buffer_rejected_batch_leaves_no_empty_policy():
    # A policy whose first batch was rejected has no rows: replay() must not sample it.
    buffer = LocalReplayBuffer(capacity=10, replay_batch_size=2, seed=0)
    with pytest.raises(ValueError, match="sequence batch"):
        buffer.add_batch(MultiAgentBatch(
            {"rnn": SampleBatch({"obs": np.zeros(2), "seq_lens": [2]})}, env_steps=2))
    buffer.add_batch(MultiAgentBatch({"p0": _rows(0)}, env_steps=3))
    out = buffer.replay()
    assert set(out.policy_batches) == {"p0"}
    assert set(out.policy_batches["p0"]["obs"].tolist()) <= {0.0, 1.0, 2.0}


def test_store_and_replay_local_buffer_through_concurrently():
    workers = make_workers(num_remote=2, fragment_length=4)
    buffer = LocalReplayBuffer(capacity=100, replay_batch_size=3, learning_starts=8, seed=0)
    store_op = ParallelRollouts(workers).for_each(StoreToReplayBuffer(local_buffer=buffer))
    replay_op = Replay(local_buffer=buffer)
    out = Concurrently([store_op, replay_op], mode="round_robin", output_indexes=[1])
    replayed = out.take(3)
    assert [b.count for b in replayed] == [3, 3, 3]
    assert buffer.num_added == 8 * 3  # one store per replay once learning started
    assert set(np.concatenate([b["obs"] for b in replayed]) // 1000) <= {1, 2}
    assert StoreToReplayActors is StoreToReplayBuffer


def test_replay_empty_when_not_ready_emits_one_item_per_round():
    # Before learning_starts the replay op yields empty batches instead of NotReady, so the
    # merged plan has an item for every round; TrainOneStep passes them through unlearned.
    workers = make_workers(num_remote=0, fragment_length=4)
    buffer = LocalReplayBuffer(capacity=100, replay_batch_size=3, learning_starts=8, seed=0)
    store_op = ParallelRollouts(workers).for_each(StoreToReplayBuffer(local_buffer=buffer))
    replay_op = Replay(local_buffer=buffer, empty_when_not_ready=True).for_each(
        TrainOneStep(workers))
    out = Concurrently([store_op, replay_op], mode="round_robin", output_indexes=[1])
    items = out.take(3)
    assert [(batch.count, info) for batch, info in items[:1]] == [(0, {})]
    assert [batch.count for batch, _ in items] == [0, 3, 3]  # 4 rows, then 8 >= 8 stored
    assert items[1][1] == {"default_policy": {"learner_stats": {"loss": 3.0,
                                                                 "num_sgd_iter": 1}}}
    assert workers.local_worker().policy_map["default_policy"].learned_on == [3, 3]
    assert out.shared_metrics.counters[STEPS_TRAINED_COUNTER] == 6
    assert buffer.num_added == 12
    # Without the option the first round has no output: the next item is round 2's.
    workers = make_workers(num_remote=0, fragment_length=4)
    buffer = LocalReplayBuffer(capacity=100, replay_batch_size=3, learning_starts=8, seed=0)
    store_op = ParallelRollouts(workers).for_each(StoreToReplayBuffer(local_buffer=buffer))
    out = Concurrently([store_op, Replay(local_buffer=buffer)], mode="round_robin",
                       output_indexes=[1])
    assert next(out).count == 3 and buffer.num_added == 8


def test_store_and_replay_with_replay_actors():
    random.seed(0)

    class ReplayWorker:
        worker_index = 1

        def __init__(self):
            self.buffer = SimpleReplayBuffer(10)

        def add_batch(self, batch):
            self.buffer.add_batch(batch)

        def replay(self):
            return self.buffer.replay()

    actors = [InlineHandle(ReplayWorker()), InlineHandle(ReplayWorker())]
    store = StoreToReplayBuffer(actors=actors)
    batches = [SampleBatch({"obs": np.full(2, i)}) for i in range(6)]
    assert all(store(b) is b for b in batches)
    assert [len(a.worker.buffer) for a in actors] == [a.calls.count("add_batch") for a in actors]
    assert sum(len(a.worker.buffer) for a in actors) == 6
    assert all(len(a.worker.buffer) > 0 for a in actors)  # spread at random (seeded)
    replayed = Replay(actors=actors, num_async=2).take(4)
    assert all(isinstance(b, SampleBatch) for b in replayed)


def test_replay_errors():
    with pytest.raises(ValueError, match="Either `local_buffer` or `replay_actors` must be given, not both!"):
        StoreToReplayBuffer()
    with pytest.raises(ValueError, match="not both"):
        StoreToReplayBuffer(local_buffer=SimpleReplayBuffer(1), actors=[])
    with pytest.raises(ValueError, match="Exactly one of local_buffer and replay_actors must be given."):
        Replay()
    with pytest.raises(ValueError, match="num_async=0"):
        Replay(actors=[object()], num_async=0)
    with pytest.raises(ValueError, match=r"empty_when_not_ready=True\) needs a local_buffer"):
        Replay(actors=[object()], empty_when_not_ready=True)
    # an empty buffer (len 0, falsy) still counts as given
    empty = SimpleReplayBuffer(2)
    assert StoreToReplayBuffer(local_buffer=empty)(SampleBatch({"obs": [1]})).count == 1
    assert len(empty) == 1


def test_simple_replay_buffer_ring():
    buffer = SimpleReplayBuffer(num_slots=3)
    assert buffer.replay() is None
    for i in range(5):
        buffer.add_batch(i)
    assert buffer.replay_batches == [3, 4, 2]
    assert {buffer.replay() for _ in range(200)} == {2, 3, 4}
    zero = SimpleReplayBuffer(0)
    zero.add_batch(1)
    assert len(zero) == 0


def test_mix_in_replay_proportions():
    random.seed(0)
    mix = MixInReplay(num_slots=100, replay_proportion=2)
    out = mix("in1")
    assert out == ["in1", "in1", "in1"]
    assert len(mix("in2")) == 3
    assert MixInReplay(num_slots=0, replay_proportion=0)("x") == ["x"]
    half = MixInReplay(num_slots=10, replay_proportion=0.5)
    lengths = [len(half(i)) for i in range(1000)]
    assert set(lengths) == {1, 2}
    assert 400 < sum(n == 2 for n in lengths) < 600
    combined = from_items(["a", "b"]).combine(MixInReplay(num_slots=1, replay_proportion=1))
    assert list(combined) == ["a", "a", "b", "b"]
    with pytest.raises(ValueError, match="You must set num_slots > 0 if replay_proportion > 0."):
        MixInReplay(num_slots=0, replay_proportion=0.5)
    with pytest.raises(ValueError, match="num_slots >= 0 and replay_proportion >= 0"):
        MixInReplay(num_slots=-1, replay_proportion=0)
