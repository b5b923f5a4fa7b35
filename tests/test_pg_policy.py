"""PGTFPolicy and A2CTFPolicy: losses and postprocessing against hand-computed numbers."""

import gymnasium as gym
import numpy as np
import pytest

from tfrl.algorithms.a2c.a2c_tf_policy import A2CTFPolicy
from tfrl.algorithms.pg.pg_tf_policy import PGTFPolicy
from tfrl.policy.sample_batch import SampleBatch

OBS = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
ACT = gym.spaces.Discrete(2)


def log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def batch_of(rng, n=5):
    return SampleBatch(obs=rng.uniform(-1, 1, (n, 4)).astype(np.float32),
                       actions=rng.integers(0, 2, n),
                       advantages=rng.normal(size=n).astype(np.float32),
                       value_targets=rng.normal(size=n).astype(np.float32))


def test_pg_returns_to_go_without_bootstrap():
    policy = PGTFPolicy(OBS, ACT, {"seed": 0, "gamma": 0.5, "model": {"fcnet_hiddens": [8]}})
    # A cut fragment is not bootstrapped: PG has no critic.
    batch = SampleBatch(obs=np.zeros((3, 4), np.float32), new_obs=np.ones((3, 4), np.float32),
                        actions=np.zeros(3, np.int64), rewards=np.array([1.0, 0.0, 4.0], np.float32),
                        terminateds=np.zeros(3, bool), truncateds=np.zeros(3, bool))
    out = policy.postprocess_trajectory(batch)
    np.testing.assert_allclose(out["advantages"], [2.0, 2.0, 4.0])


def test_pg_loss_is_minus_mean_logp_times_advantage():
    policy = PGTFPolicy(OBS, ACT, {"seed": 0, "model": {"fcnet_hiddens": [8]}})
    batch = batch_of(np.random.default_rng(0))
    logits = np.asarray(policy.model(batch["obs"])[0], np.float64)
    logp = log_softmax(logits)[np.arange(5), batch["actions"]]
    _, info = policy.compute_gradients(batch)
    assert info["learner_stats"]["total_loss"] == pytest.approx(
        -np.mean(logp * batch["advantages"]), rel=1e-5)


def test_a2c_loss_terms():
    config = {"seed": 0, "model": {"fcnet_hiddens": [8]}, "vf_loss_coeff": 0.25,
              "entropy_coeff": 0.1}
    policy = A2CTFPolicy(OBS, ACT, config)
    batch = batch_of(np.random.default_rng(1))
    logits, values = (np.asarray(t, np.float64) for t in policy.model(batch["obs"]))
    logp_all = log_softmax(logits)
    logp = logp_all[np.arange(5), batch["actions"]]
    entropy = -(np.exp(logp_all) * logp_all).sum(-1)
    vf_loss = 0.5 * np.mean((values - batch["value_targets"]) ** 2)
    pi_loss = -np.mean(logp * batch["advantages"])
    _, info = policy.compute_gradients(batch)
    stats = info["learner_stats"]
    assert stats["total_loss"] == pytest.approx(
        pi_loss + 0.25 * vf_loss - 0.1 * entropy.mean(), rel=1e-5)
    assert stats["vf_loss"] == pytest.approx(vf_loss, rel=1e-5)
    assert stats["entropy"] == pytest.approx(entropy.mean(), rel=1e-5)


def test_a2c_nstep_advantages_bootstrap_truncation():
    policy = A2CTFPolicy(OBS, ACT, {"seed": 0, "gamma": 0.5, "use_gae": False,
                                    "model": {"fcnet_hiddens": [8]}})
    obs = np.random.default_rng(2).uniform(-1, 1, (3, 4)).astype(np.float32)
    vf = np.array([0.1, 0.2], np.float32)
    batch = SampleBatch(obs=obs[:2], new_obs=obs[1:], actions=np.zeros(2, np.int64),
                        rewards=np.array([1.0, 1.0], np.float32), vf_preds=vf,
                        terminateds=np.array([False, False]), truncateds=np.array([False, True]))
    v_last = float(np.asarray(policy.model(obs[2:])[1])[0])
    returns = np.array([1.0 + 0.5 * (1.0 + 0.5 * v_last), 1.0 + 0.5 * v_last])
    out = policy.postprocess_trajectory(batch)
    np.testing.assert_allclose(out["value_targets"], returns, rtol=1e-5)
    np.testing.assert_allclose(out["advantages"], returns - vf, rtol=1e-5)


def test_a2c_grad_clip_bounds_the_gradient_norm():
    policy = A2CTFPolicy(OBS, ACT, {"seed": 0, "grad_clip": 1e-3,
                                    "model": {"fcnet_hiddens": [8]}})
    grads, _ = policy.compute_gradients(batch_of(np.random.default_rng(3)))
    norm = np.sqrt(sum(float(np.sum(np.square(g))) for g in grads))
    assert norm == pytest.approx(1e-3, rel=1e-4)
