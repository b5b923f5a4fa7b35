"""Tests of the train operators with fake workers (tests/execution_helpers.py)."""

import numpy as np
import pytest

from execution_helpers import FakeWorker, FakeWorkerSet, InlineHandle, make_workers
from tfrl.execution.common import (AGENT_STEPS_TRAINED_COUNTER, APPLY_GRADS_TIMER,
                                   COMPUTE_GRADS_TIMER, LAST_TARGET_UPDATE_TS,
                                   LEARN_ON_BATCH_TIMER, LEARNER_INFO, NUM_TARGET_UPDATES,
                                   STEPS_SAMPLED_COUNTER, STEPS_TRAINED_COUNTER,
                                   WORKER_UPDATE_TIMER)
from tfrl.execution.iter import SharedMetrics, from_items, metrics_context
from tfrl.execution.rollout_ops import ConcatBatches, ParallelRollouts
from tfrl.execution.train_ops import (ApplyGradients, AverageGradients, ComputeGradients,
                                      MultiGPUTrainOneStep, TrainOneStep, UpdateTargetIfNeeded,
                                      UpdateTargetNetwork)
from tfrl.policy.multi_agent_batch import MultiAgentBatch
from tfrl.policy.sample_batch import SampleBatch


def test_train_one_step_learns_counts_and_syncs_weights():
    workers = make_workers(num_remote=2, fragment_length=10)
    train_op = ParallelRollouts(workers).for_each(TrainOneStep(workers))
    batch, info = next(train_op)
    assert batch.count == 20
    assert info == {"default_policy": {"learner_stats": {"loss": 20.0, "num_sgd_iter": 1}}}
    local = workers.local_worker()
    assert local.policy_map["default_policy"].learned_on == [20]
    metrics = train_op.shared_metrics
    assert metrics.counters[STEPS_TRAINED_COUNTER] == 20
    assert metrics.counters[AGENT_STEPS_TRAINED_COUNTER] == 20
    assert metrics.info[LEARNER_INFO] is info
    assert metrics.timers[LEARN_ON_BATCH_TIMER].count == 1
    assert metrics.timers[LEARN_ON_BATCH_TIMER].mean_units_processed == 20
    assert metrics.timers[WORKER_UPDATE_TIMER].count == 1
    # first sync by ParallelRollouts, then one after learning with the timestep
    assert workers.sync_calls[-1] == {"policies": None, "global_vars": {"timestep": 20}}
    assert local.global_vars == {"timestep": 20}
    for handle in workers.remote_workers():
        np.testing.assert_array_equal(handle.worker.policy_map["default_policy"].weights[0], [1, 1])
        assert handle.worker.global_vars == {"timestep": 20}


def test_train_one_step_without_remote_workers_sets_local_global_vars_only():
    workers = make_workers(num_remote=0, fragment_length=4)
    train_op = ParallelRollouts(workers).for_each(TrainOneStep(workers))
    train_op.take(3)
    assert len(workers.sync_calls) == 1  # only ParallelRollouts' initial sync
    assert workers.local_worker().global_vars == {"timestep": 12}
    assert train_op.shared_metrics.counters[STEPS_TRAINED_COUNTER] == 12


def test_train_one_step_passes_an_empty_batch_through_untouched():
    workers = make_workers(num_remote=1, fragment_length=4)
    train_op = ParallelRollouts(workers).for_each(TrainOneStep(workers))
    next(train_op)
    syncs = len(workers.sync_calls)
    metrics = train_op.shared_metrics
    counters, info = dict(metrics.counters), metrics.info[LEARNER_INFO]
    empty = SampleBatch()
    with metrics_context(metrics):
        out, out_info = TrainOneStep(workers)(empty)
    assert out is empty and out_info == {}
    assert workers.local_worker().policy_map["default_policy"].learned_on == [4]
    assert dict(metrics.counters) == counters and metrics.info[LEARNER_INFO] is info
    assert len(workers.sync_calls) == syncs
    assert metrics.timers[LEARN_ON_BATCH_TIMER].count == 1


def test_train_one_step_multi_agent_counts_agent_steps_and_syncs_listed_policies():
    workers = make_workers(num_remote=1, fragment_length=5, policy_ids=("p0", "p1"))
    train_op = ParallelRollouts(workers).for_each(TrainOneStep(workers, policies={"p1"}))
    _, info = next(train_op)
    assert set(info) == {"p0", "p1"}  # the worker trains its policies_to_train
    counters = train_op.shared_metrics.counters
    assert counters[STEPS_TRAINED_COUNTER] == 5 and counters[AGENT_STEPS_TRAINED_COUNTER] == 15
    assert workers.sync_calls[-1]["policies"] == ["p1"]


def test_train_one_step_passes_its_sgd_settings_to_one_learn_call():
    workers = make_workers(num_remote=0, fragment_length=10)
    op = TrainOneStep(workers, num_sgd_iter=3, sgd_minibatch_size=4)
    train_op = ParallelRollouts(workers).for_each(op)
    _, info = next(train_op)
    policy = workers.local_worker().policy_map["default_policy"]
    assert policy.learned_on == [10]  # the policy runs the epochs and minibatches itself
    assert policy.sgd_settings == [(3, 4, None)]
    assert info == {"default_policy": {"learner_stats": {"loss": 10.0, "num_sgd_iter": 3}}}
    assert policy.config == {}  # nothing written into the policy's config
    # Left at None, the policy's own config decides.
    next(ParallelRollouts(workers).for_each(TrainOneStep(workers)))
    assert policy.sgd_settings[-1] == (None, None, None)


def test_train_one_step_single_call_when_policy_config_matches():
    workers = make_workers(num_remote=0, fragment_length=10,
                           policy_config={"num_sgd_iter": 3, "sgd_minibatch_size": 4})
    _, info = next(ParallelRollouts(workers).for_each(
        TrainOneStep(workers, num_sgd_iter=3, sgd_minibatch_size=4)))
    assert workers.local_worker().policy_map["default_policy"].learned_on == [10]
    assert info["default_policy"]["learner_stats"]["num_sgd_iter"] == 3


def test_train_one_step_errors():
    workers = make_workers(num_remote=0, fragment_length=3)
    with pytest.raises(ValueError, match="num_sgd_iter=...\\) must be an int >= 1; received 0"):
        TrainOneStep(workers, num_sgd_iter=0)
    with pytest.raises(ValueError, match="sgd_minibatch_size=...\\) must be an int >= 0"):
        TrainOneStep(workers, sgd_minibatch_size=-1)
    with metrics_context(SharedMetrics()):
        with pytest.raises(TypeError, match="TrainOneStep takes SampleBatch"):
            TrainOneStep(workers)("batch")


def test_multi_gpu_train_one_step_passes_its_settings_for_one_call():
    workers = make_workers(num_remote=1, fragment_length=8)
    op = MultiGPUTrainOneStep(workers, sgd_minibatch_size=4, num_sgd_iter=5, num_gpus=0)
    train_op = ParallelRollouts(workers).for_each(op)
    batch, info = next(train_op)
    assert info["default_policy"]["learner_stats"]["num_sgd_iter"] == 5  # seen by the policy
    policy = workers.local_worker().policy_map["default_policy"]
    assert policy.learned_on == [8] and "num_sgd_iter" not in policy.config
    assert policy.sgd_settings == [(5, 4, True)]
    assert train_op.shared_metrics.counters[STEPS_TRAINED_COUNTER] == 8
    assert workers.sync_calls[-1]["global_vars"] == {"timestep": 8}


def test_multi_gpu_train_one_step_errors():
    workers = make_workers(num_remote=0, fragment_length=5)
    kwargs = dict(sgd_minibatch_size=4, num_sgd_iter=1)
    with pytest.raises(ValueError, match="must be 'tf2'.*received 'torch'"):
        MultiGPUTrainOneStep(workers, framework="torch", **kwargs)
    with pytest.warns(DeprecationWarning, match="TF2 only"):
        MultiGPUTrainOneStep(workers, framework="tf", **kwargs)
    with pytest.warns(DeprecationWarning, match="ignored"):
        MultiGPUTrainOneStep(workers, rollout_fragment_length=5, **kwargs)
    with pytest.raises(ValueError, match="sgd_minibatch_size=5 must be divisible by the number "
                                         "of devices \\(2 logical CPU devices"):
        MultiGPUTrainOneStep(workers, sgd_minibatch_size=5, num_sgd_iter=1, num_gpus=2,
                             _fake_gpus=True)
    with pytest.raises(ValueError, match="train_batch_size=9 must be divisible"):
        MultiGPUTrainOneStep(workers, train_batch_size=9, num_gpus=2, **kwargs)
    with pytest.raises(ValueError, match="batch too small"):
        MultiGPUTrainOneStep(workers, train_batch_size=2, sgd_minibatch_size=4, num_sgd_iter=1,
                             num_gpus=4)
    with pytest.raises(ValueError, match="num_sgd_iter=...\\) must be an int >= 1"):
        MultiGPUTrainOneStep(workers, sgd_minibatch_size=4, num_sgd_iter=0)
    workers.local_worker().policy_map["default_policy"].devices = ["/cpu:0"]
    with pytest.raises(ValueError, match="policy 'default_policy' runs on 1"):
        MultiGPUTrainOneStep(workers, num_gpus=2, **kwargs)
    big = MultiGPUTrainOneStep(workers, sgd_minibatch_size=8, num_sgd_iter=1)
    with pytest.raises(ValueError, match="has 5 rows, fewer than sgd_minibatch_size=8"):
        next(ParallelRollouts(workers).for_each(big))
    workers.local_worker().policy_map["default_policy"].devices = ["/cpu:0", "/cpu:1"]
    whole = MultiGPUTrainOneStep(workers, sgd_minibatch_size=0, num_sgd_iter=1, num_gpus=2)
    with pytest.raises(ValueError, match="\\(5 rows\\) must be divisible by the number of devices"):
        next(ParallelRollouts(workers).for_each(whole))


def test_compute_average_apply_gradients_pipeline():
    workers = make_workers(num_remote=2, fragment_length=50)
    grads_op = ParallelRollouts(workers).for_each(ComputeGradients(workers))
    grads, count = next(grads_op)
    assert count == 100
    np.testing.assert_array_equal(grads[0], [100.0, 100.0])
    metrics = grads_op.shared_metrics
    assert metrics.info[LEARNER_INFO] == {"default_policy": {"learner_stats": {"n": 100}}}
    assert metrics.timers[COMPUTE_GRADS_TIMER].count == 1

    items = [([np.array([1.0, 3.0])], 50), ([np.array([3.0, 5.0])], 50), ([np.array([5.0, 1.0])], 20)]
    avg, total = next(from_items(items).batch(3).for_each(AverageGradients()))
    np.testing.assert_allclose(avg[0], [3.0, 3.0])  # unweighted mean (D23)
    assert total == 120
    nested = [({"p": [np.ones(2)]}, 1), ({"p": [np.zeros(2)]}, 1)]
    np.testing.assert_allclose(AverageGradients()(nested)[0]["p"][0], [0.5, 0.5])
    with pytest.raises(ValueError, match="empty list"):
        AverageGradients()([])

    apply_op = from_items([([np.array([2.0, 2.0])], 30)]).for_each(ApplyGradients(workers))
    assert next(apply_op) is None
    local = workers.local_worker().policy_map["default_policy"]
    np.testing.assert_array_equal(local.weights[0], [-2.0, -2.0])
    assert apply_op.shared_metrics.counters[STEPS_TRAINED_COUNTER] == 30
    assert apply_op.shared_metrics.timers[APPLY_GRADS_TIMER].mean_units_processed == 30
    for handle in workers.remote_workers():
        np.testing.assert_array_equal(handle.worker.policy_map["default_policy"].weights[0], [-2, -2])


def test_apply_gradients_update_only_the_source_worker():
    w1, w2 = InlineHandle(FakeWorker(1)), InlineHandle(FakeWorker(2))
    workers = FakeWorkerSet(FakeWorker(0), [w1, w2])
    metrics = SharedMetrics()
    metrics.current_worker = w2
    metrics.counters[STEPS_SAMPLED_COUNTER] = 7
    with metrics_context(metrics):
        ApplyGradients(workers, update_all=False)(([np.array([1.0, 1.0])], 5))
    assert w1.calls == [] and w2.calls == ["set_weights"]
    np.testing.assert_array_equal(w2.worker.policy_map["default_policy"].weights[0], [-1, -1])
    assert w2.worker.global_vars == {"timestep": 7}
    assert workers.sync_calls == []
    with metrics_context(SharedMetrics()):
        with pytest.raises(ValueError, match="could not find the worker to update"):
            ApplyGradients(workers, update_all=False)(([np.zeros(2)], 1))
        with pytest.raises(ValueError, match="takes \\(gradients, count\\) items; received"):
            ApplyGradients(workers)([np.zeros(2)])


def test_update_target_network_every_freq_steps():
    workers = make_workers(num_remote=0, fragment_length=100, policy_ids=("p0", "p1"))
    op = UpdateTargetNetwork(workers, target_update_freq=250, policies={"p1"})
    out = ParallelRollouts(workers).for_each(op)
    items = out.take(6)  # 100 .. 600 steps sampled
    assert all(isinstance(b, MultiAgentBatch) for b in items)  # pass-through
    policies = workers.local_worker().policy_map
    assert policies["p1"].target_updates == 2 and policies["p0"].target_updates == 0
    counters = out.shared_metrics.counters
    assert counters[NUM_TARGET_UPDATES] == 2 and counters[LAST_TARGET_UPDATE_TS] == 600
    assert UpdateTargetIfNeeded is UpdateTargetNetwork
    by_trained = UpdateTargetNetwork(workers, target_update_freq=0, by_steps_trained=True)
    with metrics_context(SharedMetrics()) as metrics:
        by_trained("x")
        by_trained("x")
    assert metrics.counters[NUM_TARGET_UPDATES] == 2
    assert policies["p0"].target_updates == 2
    with pytest.raises(ValueError, match="target_update_freq=...\\) must be an int >= 0"):
        UpdateTargetNetwork(workers, target_update_freq=-1)


def test_concat_then_train_trains_on_min_batch_size():
    workers = make_workers(num_remote=2, fragment_length=8)
    train_op = (ParallelRollouts(workers, mode="async").combine(ConcatBatches(40))
                .for_each(TrainOneStep(workers)))
    train_op.take(2)
    assert workers.local_worker().policy_map["default_policy"].learned_on == [40, 40]
    assert train_op.shared_metrics.counters[STEPS_TRAINED_COUNTER] == 80
    assert train_op.shared_metrics.counters[STEPS_SAMPLED_COUNTER] >= 80


def test_learner_info_overwritten_by_each_step():
    workers = make_workers(num_remote=0, fragment_length=3)
    batches = [SampleBatch({"obs": np.zeros(n)}) for n in (3, 6)]
    op = from_items(batches).for_each(TrainOneStep(workers))
    list(op)
    assert op.shared_metrics.info[LEARNER_INFO]["default_policy"]["learner_stats"]["loss"] == 6.0


def test_a3c_pipeline_updates_each_gradient_source():
    from tfrl.execution.rollout_ops import AsyncGradients

    workers = make_workers(num_remote=2, fragment_length=10)
    local = workers.local_worker().policy_map["default_policy"]
    op = AsyncGradients(workers).for_each(ApplyGradients(workers, update_all=False))
    sources = []
    for _ in range(4):
        next(op)
        sources.append(op.shared_metrics.current_worker)
    assert len(local.applied) == 4
    np.testing.assert_array_equal(local.weights[0], [-40.0, -40.0])
    for handle in workers.remote_workers():
        updates = sources.count(handle)
        assert handle.calls.count("set_weights") == updates + 1  # + the initial sync
        if updates:  # the timestep after the last gradient this worker produced
            last = max(i for i, source in enumerate(sources) if source is handle)
            assert handle.worker.global_vars == {"timestep": 10 * (last + 1)}
    assert op.shared_metrics.counters[STEPS_SAMPLED_COUNTER] == 40
    assert op.shared_metrics.counters[STEPS_TRAINED_COUNTER] == 40


class RLlibSignatureWorker(FakeWorker):
    """A user's worker with RLlib's `learn_on_batch(samples)`: no SGD settings."""

    def learn_on_batch(self, samples):
        return super().learn_on_batch(samples)


def test_train_one_step_with_a_worker_whose_learn_on_batch_takes_only_the_batch():
    """Issue 28: TrainOneStep works with RLlib's `worker.learn_on_batch(samples)`. Without
    SGD settings it is called once with the batch; with them, once per minibatch and
    epoch (RLlib's `do_minibatch_sgd`), as a MultiAgentBatch of the trained policy."""
    workers = make_workers(num_remote=0, fragment_length=10)
    user = RLlibSignatureWorker(0, 10)
    workers._local = user
    _, info = next(ParallelRollouts(workers).for_each(TrainOneStep(workers)))
    assert [b.count for b in user.learn_calls] == [10]
    assert info == {"default_policy": {"learner_stats": {"loss": 10.0, "num_sgd_iter": 1}}}
    user.learn_calls.clear()
    _, info = next(ParallelRollouts(workers).for_each(
        TrainOneStep(workers, num_sgd_iter=2, sgd_minibatch_size=4)))
    assert [b.count for b in user.learn_calls] == [4, 4, 4, 4]  # 2 epochs x floor(10 / 4)
    assert all(isinstance(b, MultiAgentBatch) and list(b.policy_batches) == ["default_policy"]
               for b in user.learn_calls)
    assert info == {"default_policy": {"learner_stats": {"loss": 4.0, "num_sgd_iter": 1.0}}}
    assert workers.local_worker().policy_map["default_policy"].sgd_settings[-4:] == [
        (None, None, None)] * 4
