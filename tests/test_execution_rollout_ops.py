"""Tests of the rollout operators with fake workers (tests/execution_helpers.py)."""

import threading

import numpy as np
import pytest

from execution_helpers import FakeWorker, FakeWorkerSet, InlineHandle, make_workers
from tfrl.evaluation.worker_set.handles import ThreadWorkerHandle
from tfrl.execution.common import (AGENT_STEPS_SAMPLED_COUNTER, GRAD_WAIT_TIMER, LEARNER_INFO,
                                   SAMPLE_TIMER, STEPS_SAMPLED_COUNTER)
from tfrl.execution.iter import SharedMetrics, from_items, metrics_context
from tfrl.execution.rollout_ops import (AsyncGradients, ConcatBatches, ParallelRollouts,
                                        SelectExperiences, StandardizeFields, standardized)
from tfrl.execution.worker_pool import WorkerPool
from tfrl.policy.multi_agent_batch import MultiAgentBatch
from tfrl.policy.sample_batch import SampleBatch


def test_local_worker_only_samples_locally_in_every_mode():
    for mode in ("bulk_sync", "async", "raw"):
        workers = make_workers(num_remote=0, fragment_length=4)
        rollouts = ParallelRollouts(workers, mode=mode)
        batches = rollouts.take(3)
        assert [b.count for b in batches] == [4, 4, 4]
        assert [b["obs"][0] for b in batches] == [0, 100, 200]  # local worker, calls 0..2
        assert rollouts.shared_metrics.counters[STEPS_SAMPLED_COUNTER] == 12
        assert rollouts.shared_metrics.counters[AGENT_STEPS_SAMPLED_COUNTER] == 12
        assert len(workers.sync_calls) == 1


def test_bulk_sync_concatenates_one_batch_per_worker_in_order():
    workers = make_workers(num_remote=4, fragment_length=50)
    rollouts = ParallelRollouts(workers, mode="bulk_sync")
    batch = next(rollouts)
    assert batch.count == 200
    starts = batch["obs"][::50].tolist()
    assert starts == [1000, 2000, 3000, 4000]
    batch = next(rollouts)
    assert batch["obs"][::50].tolist() == [1100, 2100, 3100, 4100]
    assert rollouts.shared_metrics.counters[STEPS_SAMPLED_COUNTER] == 400
    assert workers.sync_calls == [{"policies": None, "global_vars": None}]
    assert workers.local_worker().num_samples == 0


def test_multi_agent_counters_count_env_and_agent_steps():
    workers = make_workers(num_remote=2, fragment_length=5, policy_ids=("p0", "p1"))
    rollouts = ParallelRollouts(workers, mode="bulk_sync")
    batch = next(rollouts)
    assert isinstance(batch, MultiAgentBatch)
    assert batch.env_steps() == 10 and batch.agent_steps() == 30
    counters = rollouts.shared_metrics.counters
    assert counters[STEPS_SAMPLED_COUNTER] == 10
    assert counters[AGENT_STEPS_SAMPLED_COUNTER] == 30


def test_async_inline_yields_each_worker_batch_and_records_source():
    workers = make_workers(num_remote=2, fragment_length=5)
    rollouts = ParallelRollouts(workers, mode="async", num_async=2)
    seen = []
    for _ in range(6):
        batch = next(rollouts)
        seen.append((rollouts.shared_metrics.current_worker.worker_index, batch["obs"][0]))
    # every item comes from the worker recorded as its source
    assert all(obs // 1000 == index for index, obs in seen)
    assert {index for index, _ in seen} == {1, 2}
    assert rollouts.shared_metrics.counters[STEPS_SAMPLED_COUNTER] == 30
    # each worker's batches arrive in its own call order
    for index in (1, 2):
        calls = [obs % 1000 for i, obs in seen if i == index]
        assert calls == sorted(calls)


def test_async_yields_as_completed_and_limits_requests_in_flight():
    release = threading.Event()

    class SlowWorker(FakeWorker):
        def sample(self):
            assert release.wait(timeout=30)
            return super().sample()

    slow = ThreadWorkerHandle(SlowWorker(1, 5), worker_index=1)
    fast_worker = FakeWorker(2, 5)
    fast = ThreadWorkerHandle(fast_worker, worker_index=2)
    workers = FakeWorkerSet(FakeWorker(0, 5), [slow, fast])
    try:
        rollouts = ParallelRollouts(workers, mode="async", num_async=1)
        first = [next(rollouts)["obs"][0] for _ in range(3)]
        assert first == [2000, 2100, 2200]  # only the fast worker has finished
        # with num_async=1 the fast worker got one new request per delivered batch
        assert fast_worker.num_samples <= 4
        release.set()
        sources = []
        while 1 not in sources and len(sources) < 100000:
            sources.append(next(rollouts)["obs"][0] // 1000)
        assert sources[-1] == 1  # the slow worker's batch arrives once it is done
    finally:
        release.set()
        slow.kill()
        fast.kill()


def test_raw_mode_returns_the_worker_pool():
    workers = make_workers(num_remote=2, fragment_length=3)
    pool = ParallelRollouts(workers, mode="raw")
    assert isinstance(pool, WorkerPool)
    shards = next(pool.batch_across_shards())
    assert [b["obs"][0] for b in shards] == [1000, 2000]
    assert next(pool.gather_async()).count == 3


def test_parallel_rollouts_errors():
    workers = make_workers(num_remote=0)
    with pytest.raises(ValueError, match="mode must be one of 'bulk_sync', 'async', 'raw', got 'sync'"):
        ParallelRollouts(workers, mode="sync")
    with pytest.raises(ValueError, match="num_async=0"):
        ParallelRollouts(make_workers(2), mode="async", num_async=0)
    with pytest.raises(ValueError, match="no worker handles"):
        WorkerPool([]).handles()

    class BadWorker(FakeWorker):
        def sample(self):
            return {"obs": [1]}

    bad = FakeWorkerSet(BadWorker(0), [])
    with pytest.raises(TypeError, match="received dict"):
        next(ParallelRollouts(bad))


def test_remote_worker_error_reaches_the_consumer():
    class Broken(FakeWorker):
        def sample(self):
            raise RuntimeError("env exploded")

    workers = FakeWorkerSet(FakeWorker(0), [InlineHandle(Broken(1))])
    with pytest.raises(RuntimeError, match="env exploded"):
        next(ParallelRollouts(workers, mode="async"))


def test_async_gradients():
    workers = make_workers(num_remote=2, fragment_length=50)
    grads_op = AsyncGradients(workers)
    grads, count = next(grads_op)
    assert count == 50
    np.testing.assert_array_equal(grads[0], [50.0, 50.0])
    metrics = grads_op.shared_metrics
    assert metrics.counters[STEPS_SAMPLED_COUNTER] == 50
    assert metrics.info[LEARNER_INFO] == {"default_policy": {"learner_stats": {"n": 50}}}
    assert metrics.timers[GRAD_WAIT_TIMER].count == 1
    assert metrics.current_worker.worker_index in (1, 2)
    with pytest.raises(ValueError, match="needs remote workers"):
        AsyncGradients(make_workers(num_remote=0))


def test_concat_batches_honours_min_batch_size():
    batches = [SampleBatch({"obs": np.arange(3) + 10 * i}) for i in range(7)]
    out = from_items(batches).combine(ConcatBatches(min_batch_size=7))
    results = list(out)
    assert [b.count for b in results] == [9, 9]  # 3 + 3 + 3 >= 7; the last 3 rows wait
    np.testing.assert_array_equal(results[0]["obs"], [0, 1, 2, 10, 11, 12, 20, 21, 22])
    assert out.shared_metrics.timers[SAMPLE_TIMER].count == 2
    assert out.shared_metrics.timers[SAMPLE_TIMER].mean_units_processed == 9
    exact = from_items([SampleBatch({"a": np.zeros(5)})] * 4).combine(ConcatBatches(10))
    assert [b.count for b in exact] == [10, 10]


def test_concat_batches_counts_agent_steps():
    def mab():
        return MultiAgentBatch({"p0": SampleBatch({"a": np.zeros(4)}),
                                "p1": SampleBatch({"a": np.zeros(6)})}, env_steps=4)

    by_agent = from_items([mab() for _ in range(4)]).combine(
        ConcatBatches(min_batch_size=20, count_steps_by="agent_steps"))
    assert [(b.env_steps(), b.agent_steps()) for b in by_agent] == [(8, 20), (8, 20)]
    by_env = from_items([mab() for _ in range(4)]).combine(ConcatBatches(min_batch_size=8))
    assert [b.env_steps() for b in by_env] == [8, 8]


def test_concat_batches_errors():
    with pytest.raises(ValueError, match="min_batch_size=...\\) must be an int >= 1; received 0"):
        ConcatBatches(0)
    with pytest.raises(ValueError, match="'env_steps' or 'agent_steps'; received 'steps'"):
        ConcatBatches(5, count_steps_by="steps")
    with metrics_context(SharedMetrics()):
        with pytest.raises(TypeError, match="ConcatBatches takes SampleBatch"):
            ConcatBatches(5)([1, 2])


def test_select_experiences():
    mab = MultiAgentBatch({p: SampleBatch({"a": np.zeros(3)}) for p in ("pol1", "pol2", "pol3")},
                          env_steps=3)
    out = SelectExperiences(["pol1", "pol2", "absent"])(mab)
    assert set(out.policy_batches) == {"pol1", "pol2"}
    assert out.env_steps() == 3
    worker = FakeWorker(0, policy_ids=("pol1", "pol3"))
    assert set(SelectExperiences(local_worker=worker)(mab).policy_batches) == {"pol1", "pol3"}
    worker.policies_to_train = ["pol2"]
    assert set(SelectExperiences(local_worker=worker)(mab).policy_batches) == {"pol2"}
    single = SampleBatch({"a": np.zeros(2)})
    assert SelectExperiences(["x"])(single) is single
    with pytest.raises(ValueError, match="exactly one of `policy_ids` and `local_worker`"):
        SelectExperiences()
    with pytest.raises(ValueError, match="exactly one"):
        SelectExperiences(["a"], local_worker=worker)
    with pytest.raises(TypeError, match="Wrap a single id in a list"):
        SelectExperiences("pol1")


def test_standardize_fields_mean_zero_std_one_per_policy():
    workers = make_workers(num_remote=2, fragment_length=20, policy_ids=("p0", "p1"))
    op = ParallelRollouts(workers).for_each(StandardizeFields(["advantages", "value_targets"]))
    batch = next(op)
    for pid in ("p0", "p1"):
        for field in ("advantages", "value_targets"):
            values = batch.policy_batches[pid][field]
            assert values.dtype == np.float32
            assert np.mean(values) == pytest.approx(0.0, abs=1e-6)
            assert np.std(values) == pytest.approx(1.0, abs=1e-5)
    single = SampleBatch({"advantages": np.array([1.0, 2.0, 3.0, 6.0])})
    out = StandardizeFields(["advantages"])(single)
    expected = (np.array([1.0, 2.0, 3.0, 6.0]) - 3.0) / np.sqrt(3.5)
    np.testing.assert_allclose(out["advantages"], expected)
    np.testing.assert_array_equal(standardized(np.full(3, 7.0)), np.zeros(3))
    assert standardized(np.zeros(0)).size == 0
    two_d = standardized(np.arange(6.0).reshape(3, 2))
    assert two_d.shape == (3, 2)
    assert np.mean(two_d) == pytest.approx(0.0) and np.std(two_d) == pytest.approx(1.0)
    np.testing.assert_allclose(standardized(np.array([1, 3])), [-1.0, 1.0])  # ints -> floats


def test_standardize_fields_errors():
    with pytest.raises(KeyError, match="policy 'default_policy' has no field 'advantages'"):
        StandardizeFields(["advantages"])(SampleBatch({"obs": np.zeros(3)}))
    with pytest.raises(TypeError, match="Use \\['advantages'\\]"):
        StandardizeFields("advantages")


def test_bulk_sync_uses_the_worker_sets_sample_all():
    class SampleAllWorkerSet(FakeWorkerSet):
        calls = 0

        def sample_all(self):
            self.calls += 1
            return [h.worker.sample() for h in reversed(self.remote_workers())]

    base = make_workers(num_remote=2, fragment_length=3)
    workers = SampleAllWorkerSet(base.local_worker(), base.remote_workers())
    rollouts = ParallelRollouts(workers, mode="bulk_sync")
    batch = next(rollouts)
    assert workers.calls == 1
    assert batch["obs"][::3].tolist() == [2000, 1000]
    assert rollouts.shared_metrics.counters[STEPS_SAMPLED_COUNTER] == 6
    assert [h.calls for h in workers.remote_workers()] == [["set_weights"], ["set_weights"]]


def test_from_actors_calls_the_named_method():
    from tfrl.execution.worker_pool import from_actors

    workers = make_workers(num_remote=2)
    pool = from_actors(workers.remote_workers(), method="get_weights")
    weights = next(pool.batch_across_shards())
    assert [sorted(w) for w in weights] == [["default_policy"], ["default_policy"]]
    assert [h.calls for h in workers.remote_workers()] == [["get_weights"], ["get_weights"]]


def test_worker_pool_times_out_on_a_hung_worker():
    import concurrent.futures

    class Hung:
        worker_index = 7

        def call(self, method, *args):
            return concurrent.futures.Future()  # never completes

    with pytest.raises(TimeoutError, match="Workers \\[7\\] returned no result within "
                                           "result_timeout_s=0.05 s"):
        next(WorkerPool([Hung()], result_timeout_s=0.05).gather_async())
    with pytest.raises(TimeoutError, match="Workers \\[7\\]"):
        next(WorkerPool([Hung()], result_timeout_s=0.05).batch_across_shards())
    # non-blocking (inside an async union): NotReady until the timeout, then the error
    from tfrl.execution.iter import from_items
    merged = WorkerPool([Hung()], result_timeout_s=0.05).gather_async().union(from_items([1]))
    with pytest.raises(TimeoutError, match="Workers \\[7\\]"):
        merged.take(2)
