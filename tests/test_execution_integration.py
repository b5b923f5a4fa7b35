"""Component test: the operators over a real WorkerSet (thread backend) of RolloutWorkers.

Checks what the operators rely on (worker handles, the WorkerSet, RolloutWorker's
learn_on_batch/get_metrics) with a real PPO policy on CartPole.
"""

import gymnasium as gym
import numpy as np
import pytest

from tfrl.algorithms.ppo import ppo
from tfrl.evaluation import worker_set
from tfrl.execution import (ConcatBatches, ParallelRollouts, StandardizeFields,
                            StandardMetricsReporting, TrainOneStep)
from tfrl.execution.common import LEARNER_INFO, STEPS_SAMPLED_COUNTER, STEPS_TRAINED_COUNTER


@pytest.fixture
def workers():
    config = {"num_workers": 2, "remote_backend": "thread", "rollout_fragment_length": 25,
              "num_sgd_iter": 2, "sgd_minibatch_size": 50, "train_batch_size": 100, "seed": 0}
    ws = worker_set.WorkerSet(env_creator=lambda ctx: gym.make("CartPole-v1"),
                              policy_class=ppo.PPOTFPolicy, trainer_config=config, num_workers=2)
    yield ws
    ws.stop()


@pytest.mark.slow
def test_ppo_style_plan_over_thread_workers(workers):
    bulk = next(ParallelRollouts(workers, mode="bulk_sync"))
    assert bulk.count == 50
    assert next(ParallelRollouts(workers, mode="async", num_async=2)).count == 25

    train_op = (ParallelRollouts(workers)
                .combine(ConcatBatches(100))
                .for_each(StandardizeFields(["advantages"]))
                .for_each(TrainOneStep(workers, num_sgd_iter=2, sgd_minibatch_size=50)))
    reports = StandardMetricsReporting(train_op, workers, {
        "timesteps_per_iteration": 200, "min_iter_time_s": 0, "metrics_smoothing_episodes": 10,
        "collect_metrics_timeout": 30})
    result = next(reports)
    assert result["timesteps_total"] == 200
    assert result["info"][STEPS_TRAINED_COUNTER] == 200
    assert result["episodes_this_iter"] > 0 and np.isfinite(result["episode_reward_mean"])
    stats = result["info"][LEARNER_INFO]["default_policy"]["learner_stats"]
    assert np.isfinite(stats["total_loss"])
    # the remote workers got the learned weights and the timestep
    local = workers.local_worker().get_weights()["default_policy"]
    for handle in workers.remote_workers():
        remote = handle.call("get_weights").result(timeout=30)["default_policy"]
        for a, b in zip(local, remote):
            np.testing.assert_array_equal(a, b)
    assert reports.shared_metrics.counters[STEPS_SAMPLED_COUNTER] == 200
