"""A3C: only the worker that produced a gradient gets the new weights; the plan without
remote workers; config defaults."""

import numpy as np
import pytest

from tfrl.algorithms.a3c import A3C, A3CConfig

SMALL = {"env": "CartPole-v1", "seed": 0, "model": {"fcnet_hiddens": [16]},
         "rollout_fragment_length": 10, "min_iter_time_s": 0, "lr": 0.01}


def remote_weights(handle):
    return handle.apply(lambda w: w.get_weights()["default_policy"]).result(timeout=60)


def same(a, b):
    return all(np.array_equal(x, y) for x, y in zip(a, b))


def test_only_the_worker_that_produced_the_gradient_gets_the_new_weights():
    algo = A3C(config={**SMALL, "num_workers": 2, "remote_backend": "thread"})
    initial = algo.get_weights()["default_policy"]
    remotes = algo.workers.remote_workers()
    result = algo.train()  # one gradient applied (an iteration per gradient)
    assert result["timesteps_total"] == 10
    assert algo.get_policy().num_grad_updates.numpy() == 1
    local = algo.get_weights()["default_policy"]
    assert not same(local, initial)
    held = [remote_weights(handle) for handle in remotes]
    updated = [same(weights, local) for weights in held]
    assert sorted(updated) == [False, True], updated
    # The other worker still acts with the weights it was given at the start.
    assert same(held[updated.index(False)], initial)
    algo.stop()


def test_without_remote_workers_the_driver_samples_computes_and_applies():
    algo = A3C(config={**SMALL, "num_workers": 0})
    initial = algo.get_weights()["default_policy"]
    for iteration in (1, 2):
        result = algo.train()
        assert result["timesteps_total"] == 10 * iteration
        assert algo.get_policy().num_grad_updates.numpy() == iteration
    assert not same(algo.get_weights()["default_policy"], initial)
    algo.stop()


def test_config_defaults_and_builder():
    config = A3CConfig()
    assert (config.rollout_fragment_length, config.lr, config.grad_clip, config.min_iter_time_s,
            config.vf_loss_coeff, config.entropy_coeff) == (10, 0.0001, 40.0, 5, 0.5, 0.01)
    assert config.algo_class is A3C
    with pytest.raises(ValueError, match="lr"):
        A3CConfig(lr=-1.0)
