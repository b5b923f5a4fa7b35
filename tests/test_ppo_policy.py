"""PPOTFPolicy: loss terms against numpy, KL adaptation, GAE postprocessing (C6), schedules."""

import gymnasium as gym
import numpy as np
import pytest

from tfrl.algorithms.ppo.ppo_tf_policy import PPOTFPolicy
from tfrl.policy.sample_batch import SampleBatch

OBS = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
ACT = gym.spaces.Discrete(3)


def make_policy(**config):
    # One step on the whole batch per learn call (PPOConfig's defaults, which the policy
    # takes for missing keys, are 30 epochs of 128-row minibatches).
    base = {"seed": 0, "model": {"fcnet_hiddens": [8]}, "lr": 0.0, "num_sgd_iter": 1,
            "sgd_minibatch_size": None}
    return PPOTFPolicy(OBS, ACT, {**base, **config})


def log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def fixed_batch(rng, n=6):
    return SampleBatch(
        obs=rng.uniform(-1, 1, (n, 4)).astype(np.float32),
        actions=np.array([0, 1, 2, 1, 0, 2])[:n],
        action_logp=np.log(np.array([0.5, 0.2, 0.3, 0.4, 0.1, 0.6], np.float32))[:n],
        action_dist_inputs=rng.normal(size=(n, 3)).astype(np.float32),
        advantages=np.array([1.0, -2.0, 0.5, 3.0, -1.0, 0.2], np.float32)[:n],
        value_targets=np.array([1.0, 0.0, 2.0, -1.0, 0.5, 0.3], np.float32)[:n],
        vf_preds=np.array([0.8, 0.3, 1.0, -0.2, 0.5, 2.0], np.float32)[:n],
    )


def numpy_ppo_loss(policy, batch, clip, vf_clip, kl_coeff, ent_coeff, vf_coeff):
    logits, values = (np.asarray(t, np.float64) for t in policy.model(batch["obs"]))
    logp_all = log_softmax(logits)  # [B, 3]
    rows = np.arange(len(batch["actions"]))
    ratio = np.exp(logp_all[rows, batch["actions"]] - batch["action_logp"])
    adv = batch["advantages"]
    surrogate = np.minimum(adv * ratio, adv * np.clip(ratio, 1 - clip, 1 + clip))
    prev_logp = log_softmax(batch["action_dist_inputs"].astype(np.float64))
    kl = (np.exp(prev_logp) * (prev_logp - logp_all)).sum(-1)
    entropy = -(np.exp(logp_all) * logp_all).sum(-1)
    vt, old_v = batch["value_targets"], batch["vf_preds"]
    vf_clipped = old_v + np.clip(values - old_v, -vf_clip, vf_clip)
    vf_loss = np.maximum((values - vt) ** 2, (vf_clipped - vt) ** 2)
    total = np.mean(-surrogate + kl_coeff * kl + vf_coeff * vf_loss - ent_coeff * entropy)
    return total, {"policy_loss": -surrogate.mean(), "kl": kl.mean(),
                   "entropy": entropy.mean(), "vf_loss": vf_loss.mean()}


def test_loss_terms_match_numpy():
    policy = make_policy(clip_param=0.2, vf_clip_param=0.1, kl_coeff=0.3,
                         entropy_coeff=0.01, vf_loss_coeff=0.5)
    batch = fixed_batch(np.random.default_rng(0))
    _, info = policy.compute_gradients(batch)
    total, terms = numpy_ppo_loss(policy, batch, 0.2, 0.1, 0.3, 0.01, 0.5)
    stats = info["learner_stats"]
    assert stats["total_loss"] == pytest.approx(total, rel=1e-5, abs=1e-6)
    for key, value in terms.items():
        assert stats[key] == pytest.approx(value, rel=1e-5, abs=1e-6), key
    assert stats["cur_kl_coeff"] == pytest.approx(0.3)


def test_kl_term_dropped_when_kl_coeff_zero():
    policy = make_policy(clip_param=0.2, vf_clip_param=100.0, kl_coeff=0.0, vf_loss_coeff=1.0)
    batch = fixed_batch(np.random.default_rng(1))
    _, info = policy.compute_gradients(batch)
    total, _ = numpy_ppo_loss(policy, batch, 0.2, 100.0, 0.0, 0.0, 1.0)
    assert info["learner_stats"]["total_loss"] == pytest.approx(total, rel=1e-5)


@pytest.mark.parametrize("sampled_kl, expected", [(0.05, 0.3), (0.02, 0.2), (0.004, 0.1),
                                                  (0.0051, 0.2)])
def test_update_kl_rule(sampled_kl, expected):
    policy = make_policy(kl_coeff=0.2, kl_target=0.01)
    assert policy.update_kl(sampled_kl) == pytest.approx(expected)
    assert float(policy.kl_coeff_var.numpy()) == pytest.approx(expected)


def test_update_kl_reaches_compiled_loss_without_retrace():
    policy = make_policy(kl_coeff=0.2)
    batch = fixed_batch(np.random.default_rng(2))
    policy.learn_on_batch(batch)
    policy.update_kl(1.0)  # 0.2 -> 0.3
    info = policy.learn_on_batch(batch)
    assert info["learner_stats"]["cur_kl_coeff"] == pytest.approx(0.3)
    assert policy.num_traces["learn_on_batch"] == 1


def test_lr_and_entropy_schedules_follow_global_timestep():
    policy = make_policy(lr=1e-3, lr_schedule=[[0, 1e-3], [100, 0.0]],
                         entropy_coeff_schedule=[[0, 0.1], [100, 0.0]])
    batch = fixed_batch(np.random.default_rng(3))
    assert policy.learn_on_batch(batch)["learner_stats"]["cur_lr"] == pytest.approx(1e-3)
    policy.on_global_var_update({"timestep": 75})
    stats = policy.learn_on_batch(batch)["learner_stats"]
    assert stats["cur_lr"] == pytest.approx(2.5e-4)
    assert stats["entropy_coeff"] == pytest.approx(0.025)
    assert policy.num_traces["learn_on_batch"] == 1
    policy.on_global_var_update({"timestep": 500})
    assert policy.cur_lr == 0.0


def test_kl_coeff_and_schedules_survive_get_set_state():
    policy = make_policy(lr_schedule=[[0, 1e-3], [100, 0.0]])
    policy.update_kl(1.0)
    policy.on_global_var_update({"timestep": 50})
    other = make_policy(lr_schedule=[[0, 1e-3], [100, 0.0]])
    other.set_state(policy.get_state())
    assert other.kl_coeff == pytest.approx(0.3)
    assert other.cur_lr == pytest.approx(5e-4)


def trajectory(policy, terminated_last, truncated_last):
    rng = np.random.default_rng(4)
    obs = rng.uniform(-1, 1, (4, 4)).astype(np.float32)
    _, _, extras = policy.compute_actions(obs[:3], explore=False)
    return SampleBatch(
        obs=obs[:3], new_obs=obs[1:], actions=np.zeros(3, np.int64),
        rewards=np.array([1.0, 2.0, 3.0], np.float32),
        terminateds=np.array([False, False, terminated_last]),
        truncateds=np.array([False, False, truncated_last]),
        vf_preds=extras["vf_preds"])


def gae_by_hand(rewards, values, last_r, gamma, lam):
    v = list(values) + [last_r]
    adv, running = [0.0] * 3, 0.0
    for t in (2, 1, 0):
        running = rewards[t] + gamma * v[t + 1] - v[t] + gamma * lam * running
        adv[t] = running
    return np.array(adv)


@pytest.mark.parametrize("terminated, truncated", [(True, False), (False, True), (False, False)])
def test_gae_postprocessing_bootstraps_unless_terminated(terminated, truncated):
    policy = make_policy(gamma=0.9, **{"lambda": 0.8})
    batch = trajectory(policy, terminated, truncated)
    value_next = float(np.asarray(policy.model(batch["new_obs"][-1:])[1])[0])
    last_r = 0.0 if terminated else value_next
    expected = gae_by_hand(batch["rewards"], batch["vf_preds"], last_r, 0.9, 0.8)
    out = policy.postprocess_trajectory(batch)
    np.testing.assert_allclose(out["advantages"], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["value_targets"], expected + batch["vf_preds"], rtol=1e-5)


def test_no_done_at_end_bootstraps_terminated_trajectories():
    policy = make_policy(gamma=0.9, no_done_at_end=True, **{"lambda": 1.0})
    batch = trajectory(policy, True, False)
    value_next = float(np.asarray(policy.model(batch["new_obs"][-1:])[1])[0])
    expected = gae_by_hand(batch["rewards"], batch["vf_preds"], value_next, 0.9, 1.0)
    np.testing.assert_allclose(policy.postprocess_trajectory(batch)["advantages"], expected,
                               rtol=1e-5, atol=1e-6)


def test_gae_without_critic_is_rejected():
    with pytest.raises(ValueError, match="use_gae=True needs a value function"):
        make_policy(use_gae=True, use_critic=False)


def test_without_critic_loss_reads_no_value_columns():
    policy = make_policy(use_gae=False, use_critic=False, kl_coeff=0.0)
    batch = fixed_batch(np.random.default_rng(5))
    del batch["value_targets"], batch["vf_preds"]
    info = policy.learn_on_batch(batch)
    assert "vf_loss" not in info["learner_stats"]


def test_loss_and_gradients_equal_under_two_replica_mirrored_strategy():
    config = {"clip_param": 0.2, "vf_clip_param": 0.1, "kl_coeff": 0.3, "entropy_coeff": 0.01}
    one = make_policy(**config)
    two = make_policy(**config, num_gpus=2, _fake_gpus=True)
    assert len(two.devices) == 2
    two.set_weights(one.get_weights())
    batch = fixed_batch(np.random.default_rng(6))
    grads_one, info_one = one.compute_gradients(batch)
    grads_two, info_two = two.compute_gradients(batch)
    assert info_two["learner_stats"]["total_loss"] == pytest.approx(
        info_one["learner_stats"]["total_loss"], rel=1e-5)
    for a, b in zip(grads_one, grads_two):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_optimizer_config_reaches_adam():
    policy = make_policy(optimizer={"epsilon": 1e-5, "beta_1": 0.8})
    assert policy.optimizer.epsilon == 1e-5 and policy.optimizer.beta_1 == 0.8
    with pytest.raises(ValueError, match="Adam rejects"):
        make_policy(optimizer={"epsilonn": 1e-5})


def test_tf_sampling_generator_state_is_the_same_created_late_or_early():
    # The numpy inference path (dense catalog models) creates the TF sampling generator
    # on first use (here: get_state); the TF path with the policy. Same seed, same state,
    # and a restored state carries over bit for bit.
    late, early = make_policy(seed=7), make_policy(seed=7, inference="tf")
    assert (late.inference, early.inference) == ("numpy", "tf")
    late_state = late.get_state()["_rng_states"]["tf_sampling"]
    np.testing.assert_array_equal(late_state, early.get_state()["_rng_states"]["tf_sampling"])
    assert late_state.tolist() != make_policy(seed=8).get_state()["_rng_states"]["tf_sampling"].tolist()
    obs = np.zeros((5, 4), np.float32)
    early.compute_actions(obs)  # advances the TF path's generator
    advanced = early.get_state()
    assert advanced["_rng_states"]["tf_sampling"].tolist() != late_state.tolist()
    restored = make_policy(seed=1, inference="tf")
    restored.set_state(advanced)
    np.testing.assert_array_equal(restored.compute_actions(obs)[0], early.compute_actions(obs)[0])
    fresh = make_policy(seed=1)  # numpy path: generator created by set_state
    fresh.set_state(advanced)
    np.testing.assert_array_equal(fresh.get_state()["_rng_states"]["tf_sampling"],
                                  advanced["_rng_states"]["tf_sampling"])


def test_minibatch_advantage_normalization_matches_numpy():
    # SB3's per-minibatch rule: (A - mean) / (Bessel std + 1e-8), inside the loss.
    config = {"clip_param": 0.2, "vf_clip_param": 0.1, "kl_coeff": 0.3,
              "entropy_coeff": 0.01, "vf_loss_coeff": 0.5}
    policy = make_policy(**config, normalize_advantages="minibatch")
    batch = fixed_batch(np.random.default_rng(0))
    _, info = policy.compute_gradients(batch)
    adv = batch["advantages"].astype(np.float64)  # mean 0.45, Bessel std 1.7886
    normalized = SampleBatch({**batch, "advantages": (adv - adv.mean()) / (adv.std(ddof=1) + 1e-8)})
    total, terms = numpy_ppo_loss(policy, normalized, 0.2, 0.1, 0.3, 0.01, 0.5)
    assert info["learner_stats"]["total_loss"] == pytest.approx(total, rel=1e-5, abs=1e-6)
    assert info["learner_stats"]["policy_loss"] == pytest.approx(terms["policy_loss"],
                                                                 rel=1e-5, abs=1e-6)
    # Under a 2-replica MirroredStrategy the statistics are the whole minibatch's.
    two = make_policy(**config, normalize_advantages="minibatch", num_gpus=2, _fake_gpus=True)
    two.set_weights(policy.get_weights())
    _, info_two = two.compute_gradients(batch)
    assert info_two["learner_stats"]["total_loss"] == pytest.approx(total, rel=1e-5, abs=1e-6)


def test_normalize_advantages_rejects_unknown_values():
    from tfrl.algorithms.ppo import PPOConfig

    with pytest.raises(ValueError, match="PPOConfig: normalize_advantages must be one of "
                                         "'batch', 'minibatch', 'none'; received "
                                         "'per_minibatch'"):
        PPOConfig.from_dict({"normalize_advantages": "per_minibatch"})
