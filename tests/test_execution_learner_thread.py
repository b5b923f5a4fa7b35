"""Tests of LearnerThread and MinibatchBuffer with a fake worker."""

import queue

import numpy as np
import pytest

from execution_helpers import FakeWorker
from tfrl.execution.common import LEARNER_INFO
from tfrl.execution.learner_thread import LearnerThread, MinibatchBuffer
from tfrl.policy.sample_batch import SampleBatch


def _batch(n):
    return SampleBatch({"obs": np.zeros(n)})


def test_minibatch_buffer_serves_each_batch_num_passes_times():
    q = queue.Queue()
    for name in "abc":
        q.put(name)
    buf = MinibatchBuffer(q, size=1, timeout=0.01, num_passes=3, init_num_passes=1)
    served = [buf.get() for _ in range(6)]
    # warm-up: a once, b twice, c three times
    assert served == [("a", True), ("b", False), ("b", True), ("c", False), ("c", False), ("c", True)]
    with pytest.raises(queue.Empty):
        buf.get()


def test_minibatch_buffer_rotates_over_slots():
    q = queue.Queue()
    for name in "ab":
        q.put(name)
    buf = MinibatchBuffer(q, size=2, timeout=0.01, num_passes=2, init_num_passes=2)
    assert [buf.get()[0] for _ in range(4)] == ["a", "b", "a", "b"]


def test_learner_thread_learns_num_sgd_iter_times_per_batch():
    worker = FakeWorker(0)
    learner = LearnerThread(worker, minibatch_buffer_size=1, num_sgd_iter=2, learner_queue_size=4,
                            learner_queue_timeout=30)
    learner.start()
    try:
        learner.inqueue.put(_batch(3))
        learner.inqueue.put(_batch(5))
        out = [learner.outqueue.get(timeout=30) for _ in range(4)]
    finally:
        learner.stop()
    assert not learner.is_alive()
    assert [count for count, _ in out] == [3, 3, 5, 5]
    assert worker.policy_map["default_policy"].learned_on == [3, 3, 5, 5]
    assert learner.num_steps == 4 and learner.weights_updated
    assert out[-1][1] == {"default_policy": {"learner_stats": {"loss": 5.0, "num_sgd_iter": 1}}}
    result = learner.add_learner_metrics({"info": {}})
    assert result["info"][LEARNER_INFO] == out[-1][1]
    assert result["info"]["learner_queue"]["size_count"] == 4
    assert set(result["info"]["timing_breakdown"]) == {
        "learner_grad_time_ms", "learner_load_time_ms", "learner_load_wait_time_ms",
        "learner_dequeue_time_ms"}
    learner.raise_if_failed()  # no error
    with pytest.raises(KeyError, match="needs result\\['info'\\]"):
        learner.add_learner_metrics({})


def test_learner_thread_surfaces_timeout_and_learn_errors():
    learner = LearnerThread(FakeWorker(0), 1, 1, 4, learner_queue_timeout=0.2)
    learner.start()
    learner.join(timeout=30)
    assert not learner.is_alive()
    with pytest.raises(RuntimeError, match="learner thread died.*learner_queue_timeout"):
        learner.raise_if_failed()

    class Broken(FakeWorker):
        def learn_on_batch(self, samples):
            raise ValueError("bad batch")

    broken = LearnerThread(Broken(0), 1, 1, 4, learner_queue_timeout=30)
    broken.start()
    broken.inqueue.put(_batch(2))
    broken.join(timeout=30)
    with pytest.raises(RuntimeError, match="bad batch"):
        broken.raise_if_failed()


def test_multi_gpu_learner_thread_passes_and_one_step_per_pass():
    from tfrl.execution.multi_gpu_learner_thread import MultiGPULearnerThread

    worker = FakeWorker(0, policy_config={"num_sgd_iter": 7, "sgd_minibatch_size": 2})
    worker.policy_map["default_policy"].devices = ["/cpu:0", "/cpu:1"]
    learner = MultiGPULearnerThread(worker, num_gpus=2, train_batch_size=4, num_sgd_iter=3,
                                    num_data_load_threads=1, num_multi_gpu_tower_stacks=1,
                                    _fake_gpus=True)
    learner.start()
    try:
        learner.inqueue.put(_batch(4))
        out = [learner.outqueue.get(timeout=30) for _ in range(3)]
    finally:
        learner.stop()
    assert [count for count, _ in out] == [4, 4, 4]
    # each pass is one step on the whole batch: the policy saw num_sgd_iter=1
    assert [info["default_policy"]["learner_stats"]["num_sgd_iter"] for _, info in out] == [1, 1, 1]
    assert worker.policy_map["default_policy"].sgd_settings == [(1, 0, None)] * 3
    assert worker.policy_map["default_policy"].config["num_sgd_iter"] == 7
    assert not any(t.is_alive() for t in learner.loader_threads)


def test_multi_gpu_learner_thread_errors():
    from tfrl.execution.multi_gpu_learner_thread import MultiGPULearnerThread

    worker = FakeWorker(0)
    worker.policy_map["default_policy"].devices = ["/cpu:0", "/cpu:1"]
    with pytest.raises(ValueError, match="train_batch_size=5 must be divisible"):
        MultiGPULearnerThread(worker, num_gpus=2, train_batch_size=5)
    with pytest.raises(ValueError, match="batch too small"):
        MultiGPULearnerThread(worker, num_gpus=2, train_batch_size=1)
    with pytest.raises(ValueError, match="expects 1 GPUs, but the policies run on 2"):
        MultiGPULearnerThread(worker, num_gpus=1, train_batch_size=4)
    with pytest.raises(ValueError, match="num_data_load_threads=...\\) must be an int >= 1"):
        MultiGPULearnerThread(worker, num_gpus=2, train_batch_size=4, num_data_load_threads=0)
    with pytest.warns(DeprecationWarning, match="deprecated and ignored"):
        learner = MultiGPULearnerThread(worker, num_gpus=2, train_batch_size=4, lr=0.1,
                                        num_data_load_threads=1)
    learner.stop()
