"""Component tests: TrainOneStep / MultiGPUTrainOneStep with a real TFPolicy.

The 2-replica case runs on the 2 logical CPU devices configured in conftest.py
(`num_gpus=2, _fake_gpus=True`).
"""

import numpy as np
import pytest

from execution_helpers import FakeWorker, FakeWorkerSet
from policy_helpers import ACT_SPACE, OBS_SPACE, PGPolicy, make_batch
from tfrl.execution.common import LEARNER_INFO, STEPS_TRAINED_COUNTER
from tfrl.execution.iter import from_items
from tfrl.execution.train_ops import MultiGPUTrainOneStep, TrainOneStep
from tfrl.policy.sample_batch import SampleBatch


def _workers(config):
    worker = FakeWorker(0)
    worker.policy_map = {"default_policy": PGPolicy(OBS_SPACE, ACT_SPACE, {"lr": 0.1, "seed": 0,
                                                                           **config})}
    return FakeWorkerSet(worker, [])


def _batches(n=2, rows=16):
    return [SampleBatch(make_batch(rows, seed=i)) for i in range(n)]


def _reference_weights(config, batches):
    policy = PGPolicy(OBS_SPACE, ACT_SPACE, {"lr": 0.1, "seed": 0, **config})
    for batch in batches:
        policy.learn_on_batch(batch)
    return policy.get_weights()


def _assert_weights_close(actual, expected):
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, atol=1e-5)


def test_train_one_step_one_compiled_call_when_config_matches():
    config = {"num_sgd_iter": 2, "sgd_minibatch_size": 8}
    workers = _workers(config)
    op = from_items(_batches()).for_each(TrainOneStep(workers, num_sgd_iter=2, sgd_minibatch_size=8))
    results = list(op)
    policy = workers.local_worker().policy_map["default_policy"]
    assert int(policy.num_grad_updates.numpy()) == 2 * 2 * 2  # batches x epochs x minibatches
    assert policy.num_traces["learn_on_batch"] == 1
    stats = results[-1][1]["default_policy"]["learner_stats"]
    assert np.isfinite(stats["total_loss"]) and "vf_loss" in stats
    assert op.shared_metrics.info[LEARNER_INFO] is results[-1][1]
    assert op.shared_metrics.counters[STEPS_TRAINED_COUNTER] == 32
    _assert_weights_close(policy.get_weights(), _reference_weights(config, _batches()))


def test_train_one_step_settings_run_in_the_policys_compiled_loop_for_that_call():
    workers = _workers({})
    op = from_items(_batches(1)).for_each(TrainOneStep(workers, num_sgd_iter=3, sgd_minibatch_size=8))
    _, info = next(op)
    policy = workers.local_worker().policy_map["default_policy"]
    assert int(policy.num_grad_updates.numpy()) == 3 * 2
    assert policy.config["num_sgd_iter"] == 1 and policy.config["sgd_minibatch_size"] is None
    assert np.isfinite(info["default_policy"]["learner_stats"]["total_loss"])
    assert policy.num_traces["learn_on_batch"] == 1
    # The same update as a policy whose config asks for these settings.
    expected = _reference_weights({"num_sgd_iter": 3, "sgd_minibatch_size": 8}, _batches(1))
    _assert_weights_close(policy.get_weights(), expected)


def test_train_one_step_minibatch_larger_than_the_batch_is_the_policys_error():
    workers = _workers({})
    op = from_items(_batches(1, rows=4)).for_each(TrainOneStep(workers, sgd_minibatch_size=8))
    with pytest.raises(ValueError, match=r"sgd_minibatch_size=8 \(8 rows\) is larger than the "
                                         r"batch \(4 rows\)"):
        next(op)


def test_multi_gpu_train_one_step_two_replicas_matches_one_device():
    workers = _workers({"num_gpus": 2, "_fake_gpus": True})
    policy = workers.local_worker().policy_map["default_policy"]
    assert len(policy.devices) == 2
    op = MultiGPUTrainOneStep(workers, sgd_minibatch_size=8, num_sgd_iter=3, num_gpus=2,
                              _fake_gpus=True)
    results = list(from_items(_batches()).for_each(op))
    assert len(results) == 2
    assert int(policy.num_grad_updates.numpy()) == 2 * 3 * 2
    assert policy.num_traces["learn_on_batch"] == 1
    assert policy.config["num_sgd_iter"] == 1  # the settings were arguments, not config
    expected = _reference_weights({"num_sgd_iter": 3, "sgd_minibatch_size": 8}, _batches())
    _assert_weights_close(policy.get_weights(), expected)


def test_multi_gpu_train_one_step_rejects_device_mismatch():
    workers = _workers({})
    with pytest.raises(ValueError, match="policy 'default_policy' runs on 1"):
        MultiGPUTrainOneStep(workers, sgd_minibatch_size=8, num_sgd_iter=1, num_gpus=2,
                             _fake_gpus=True)
