"""MARWIL / BC: the pure loss against hand-computed numbers, the policy's returns and
moving average, configs, and the registry."""

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from tfrl.algorithms.bc import BC, BCConfig, BCTFPolicy
from tfrl.algorithms.bc.bc_loss import bc_loss
from tfrl.algorithms.marwil import MARWIL, MARWILConfig, MARWILTFPolicy
from tfrl.algorithms.marwil.marwil_loss import marwil_loss
from tfrl.algorithms.registry import get_algorithm_class
from tfrl.data.sample_batch import SampleBatch
from tfrl.policy.nonfinite import NonFiniteUpdateError


def f32(x):
    return tf.constant(np.asarray(x, np.float32))


# logp [-1, -2], returns [2, 0], values [1, 1]: A = [1, -1], mean(A^2) = 1.
# Moving average 4 -> c = 2; beta 1: weights exp([0.5, -0.5]) = [1.64872, 0.60653].
# policy_loss = -mean(w * logp) = (1.64872 + 1.21306) / 2 = 1.43089;
# vf_loss = 0.5 * 1 = 0.5; loss = 1.43089 + 2 * 0.5 = 2.43089 (vf_coeff 2).
def test_marwil_loss_hand_numbers():
    loss, stats = marwil_loss(f32([-1.0, -2.0]), f32([2.0, 0.0]), f32([1.0, 1.0]), beta=1.0,
                              vf_coeff=2.0, moving_average_sqd_adv_norm=4.0)
    assert float(loss) == pytest.approx(2.43089, abs=1e-5)
    assert float(stats["policy_loss"]) == pytest.approx(1.43089, abs=1e-5)
    assert float(stats["vf_loss"]) == pytest.approx(0.5)
    assert float(stats["adv_squared_mean"]) == pytest.approx(1.0)


def test_marwil_weights_carry_no_gradient():
    values = tf.Variable([1.0, 1.0])
    with tf.GradientTape() as tape:
        loss, _ = marwil_loss(f32([-1.0, -2.0]), f32([2.0, 0.0]), values, beta=1.0,
                              vf_coeff=1.0, moving_average_sqd_adv_norm=4.0)
    # Only the value term: d/dV 0.5 * mean((R - V)^2) = -(R - V) / 2 = [-0.5, 0.5].
    np.testing.assert_allclose(tape.gradient(loss, values).numpy(), [-0.5, 0.5], atol=1e-6)


def test_beta_zero_is_behavior_cloning_and_masks():
    loss, stats = marwil_loss(f32([-1.0, -2.0]), f32([5.0, 5.0]), f32([0.0, 0.0]), beta=0.0,
                              vf_coeff=1.0, moving_average_sqd_adv_norm=1.0)
    assert float(loss) == pytest.approx(1.5) and float(stats["vf_loss"]) == 0.0
    loss, _ = bc_loss(f32([[-1.0, -3.0], [-2.0, -9.0]]), mask=tf.constant([[True, True],
                                                                          [True, False]]))
    assert float(loss) == pytest.approx(2.0)  # mean of -(-1, -3, -2)
    with pytest.raises((TypeError, ValueError)):
        marwil_loss(f32([-1.0]), f32([1.0, 2.0]), f32([0.0]), beta=1.0, vf_coeff=1.0,
                    moving_average_sqd_adv_norm=1.0)


OBS = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
ACT = gym.spaces.Discrete(2)


def test_returns_bootstrap_cut_trajectories_with_the_value():
    policy = MARWILTFPolicy(OBS, ACT, {"seed": 0, "gamma": 0.5, "model": {"fcnet_hiddens": [8]}})
    obs = np.zeros((2, 4), np.float32)
    cut = policy.postprocess_trajectory(SampleBatch(
        obs=obs, new_obs=obs + 0.5, actions=np.zeros(2, np.int64), rewards=np.ones(2, np.float32),
        terminateds=np.zeros(2, bool)))
    v = float(policy.value(obs[:1] + 0.5)[0])
    np.testing.assert_allclose(cut["advantages"], [1 + 0.5 * (1 + 0.5 * v), 1 + 0.5 * v],
                               rtol=1e-5)


def test_moving_average_moves_by_the_rate_and_is_state():
    config = {"seed": 0, "model": {"fcnet_hiddens": [8]}, "beta": 1.0,
              "moving_average_sqd_adv_norm_start": 10.0,
              "moving_average_sqd_adv_norm_update_rate": 0.5}
    policy = MARWILTFPolicy(OBS, ACT, config)
    rng = np.random.default_rng(0)
    batch = SampleBatch(obs=rng.uniform(-1, 1, (32, 4)).astype(np.float32),
                        actions=rng.integers(0, 2, 32), advantages=rng.normal(size=32)
                        .astype(np.float32))
    values = policy.value(batch["obs"])
    adv_sq = float(np.mean((batch["advantages"] - values) ** 2))
    policy.learn_on_batch(batch, num_sgd_iter=1, sgd_minibatch_size=0)
    assert policy.get_state()["moving_average_sqd_adv_norm"] == pytest.approx(
        10.0 + 0.5 * (adv_sq - 10.0), rel=1e-4)
    other = MARWILTFPolicy(OBS, ACT, config)
    other.set_state(policy.get_state())
    assert float(other.moving_average_sqd_adv_norm.numpy()) == pytest.approx(
        float(policy.moving_average_sqd_adv_norm.numpy()))


def _marwil_batch(seed, n=32):
    rng = np.random.default_rng(seed)
    return SampleBatch(obs=rng.uniform(-1, 1, (n, 4)).astype(np.float32),
                       actions=rng.integers(0, 2, n),
                       advantages=rng.normal(size=n).astype(np.float32))


@pytest.mark.parametrize("mode", ["raise", "skip"])
def test_a_refused_update_leaves_the_moving_average_and_marwil_learns_on(mode):
    # Issue 29, item 3: a NaN return (from one NaN reward) used to move the moving average
    # to NaN although the update was refused, so every later update was refused too.
    config = {"seed": 0, "model": {"fcnet_hiddens": [8]}, "beta": 1.0,
              "moving_average_sqd_adv_norm_start": 10.0,
              "moving_average_sqd_adv_norm_update_rate": 0.5, "nonfinite_updates": mode}
    policy = MARWILTFPolicy(OBS, ACT, config)
    reference = MARWILTFPolicy(OBS, ACT, config)
    policy.learn_on_batch(_marwil_batch(1), num_sgd_iter=1, sgd_minibatch_size=0)
    reference.learn_on_batch(_marwil_batch(1), num_sgd_iter=1, sgd_minibatch_size=0)
    before = policy.get_state()
    bad = _marwil_batch(2)
    bad["advantages"][5] = np.nan
    if mode == "raise":
        with pytest.raises(NonFiniteUpdateError, match="the weights and optimizer state are as "
                                                       "before it"):
            policy.learn_on_batch(bad, num_sgd_iter=1, sgd_minibatch_size=0)
    else:
        stats = policy.learn_on_batch(bad, num_sgd_iter=1, sgd_minibatch_size=0)
        assert stats["learner_stats"]["num_nonfinite_updates_skipped"] == 1
    # What the message says is true: the state (the moving average included) is unchanged.
    after = policy.get_state()
    assert after["moving_average_sqd_adv_norm"] == before["moving_average_sqd_adv_norm"]
    assert np.isfinite(after["moving_average_sqd_adv_norm"])
    for x, y in zip(after["weights"], before["weights"]):
        np.testing.assert_array_equal(x, y)
    # And MARWIL goes on learning on clean data exactly as if the bad batch never came.
    got = policy.learn_on_batch(_marwil_batch(3), num_sgd_iter=1, sgd_minibatch_size=0)
    want = reference.learn_on_batch(_marwil_batch(3), num_sgd_iter=1, sgd_minibatch_size=0)
    assert got["learner_stats"]["total_loss"] == pytest.approx(
        want["learner_stats"]["total_loss"], rel=1e-6)
    assert policy.get_state()["moving_average_sqd_adv_norm"] == pytest.approx(
        reference.get_state()["moving_average_sqd_adv_norm"], rel=1e-6)


def test_bc_loss_ignores_returns():
    policy = BCTFPolicy(OBS, ACT, {"seed": 0, "model": {"fcnet_hiddens": [8]}})
    rng = np.random.default_rng(0)
    obs = rng.uniform(-1, 1, (16, 4)).astype(np.float32)
    actions = rng.integers(0, 2, 16)
    a = policy.learn_on_batch(SampleBatch(obs=obs, actions=actions,
                                          advantages=np.zeros(16, np.float32)),
                              num_sgd_iter=1, sgd_minibatch_size=0)
    policy2 = BCTFPolicy(OBS, ACT, {"seed": 0, "model": {"fcnet_hiddens": [8]}})
    b = policy2.learn_on_batch(SampleBatch(obs=obs, actions=actions,
                                           advantages=np.full(16, 50.0, np.float32)),
                               num_sgd_iter=1, sgd_minibatch_size=0)
    assert a["learner_stats"]["total_loss"] == pytest.approx(b["learner_stats"]["total_loss"])
    for x, y in zip(policy.get_weights(), policy2.get_weights()):
        np.testing.assert_array_equal(x, y)


def test_configs_and_registry():
    assert get_algorithm_class("MARWIL") is MARWIL and get_algorithm_class("BC") is BC
    assert BCConfig().beta == 0.0 and MARWILConfig().beta == 1.0
    assert BCConfig().to_dict()["postprocess_inputs"] is True
    assert MARWILConfig().evaluation_config == {"input": "sampler"}
    with pytest.raises(ValueError, match="BCConfig: behavior cloning has beta=0.0"):
        BCConfig(beta=0.5)
    with pytest.raises(ValueError, match="beta"):
        MARWILConfig.from_dict({"beta": -1.0})
