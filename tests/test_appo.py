"""APPO's policy and plan: the target network (built as a copy, frozen between updates,
in the policy state), the loss against `appo_surrogate_loss` with V-trace on the target
network, GAE without V-trace, the target update and KL adaptation on their schedule."""

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from tfrl.algorithms.appo import APPO, APPOTFPolicy
from tfrl.algorithms.appo.appo_loss import appo_surrogate_loss
from tfrl.algorithms.impala.impala_tf_policy import vtrace_row_targets
from tfrl.policy.sample_batch import SampleBatch
from tfrl.policy.train_columns import TrainColumns

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
ACT_SPACE = gym.spaces.Discrete(2)


def _policy(**config):
    return APPOTFPolicy(OBS_SPACE, ACT_SPACE, {"seed": 0, "model": {"fcnet_hiddens": [8]},
                                               "lr": 0.01, **config})


def _batch(policy, rows=12, seed=0):
    rng = np.random.default_rng(seed)
    obs = rng.uniform(-1, 1, (rows + 1, 4)).astype(np.float32)
    actions, _, extras = policy.compute_actions(obs[:-1], explore=True)
    terminateds = np.zeros(rows, bool)
    terminateds[-1] = True
    return SampleBatch(obs=obs[:-1], new_obs=obs[1:], actions=actions,
                       rewards=rng.normal(size=rows).astype(np.float32),
                       terminateds=terminateds, truncateds=np.zeros(rows, bool),
                       eps_id=np.zeros(rows, np.int64), t=np.arange(rows), **extras)


def _same(a, b):
    return all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.slow
def test_target_network_is_a_frozen_copy_until_updated_and_in_the_state():
    policy = _policy()
    assert _same(policy.get_target_weights(), policy.get_weights())
    before = policy.get_target_weights()
    policy.learn_on_batch(_batch(policy))
    assert not _same(policy.get_weights(), before)
    assert _same(policy.get_target_weights(), before)  # learning leaves it alone
    state = policy.get_state()
    policy.update_target()
    assert _same(policy.get_target_weights(), policy.get_weights())
    other = _policy(seed=5)
    other.set_state(state)
    assert _same(other.get_target_weights(), before)
    with pytest.raises(ValueError, match="'target_weights' holds 1 arrays; the target "
                                         "network has"):
        other.set_state({**state, "target_weights": state["target_weights"][:1]})


@pytest.mark.slow
def test_policy_loss_is_the_surrogate_on_vtrace_of_the_target_network():
    policy = _policy(clip_param=0.2, vf_loss_coeff=0.5, entropy_coeff=0.01, use_kl_loss=True,
                     kl_coeff=0.3)
    batch = _batch(policy)
    policy.learn_on_batch(batch)  # the policy moves away from its target network
    columns = {k: tf.constant(v) for k, v in batch.items()}
    loss, stats = policy.loss_and_stats(policy.model, policy.dist_class, columns)
    dist_inputs, values = policy.model(columns["obs"])
    target_inputs, _ = policy.target_model(columns["obs"])
    _, next_values = policy.model(columns["new_obs"])
    curr = policy.dist_class(dist_inputs, policy.model)
    target = policy.dist_class(target_inputs, policy.model)
    actions, behaviour = columns["actions"], columns["action_logp"]
    target_logp = target.logp(actions)
    vs, adv, _ = vtrace_row_targets(columns, target_logp - behaviour, values, next_values,
                                    gamma=0.99, clip_rho_threshold=1.0,
                                    clip_pg_rho_threshold=1.0)
    want, want_stats = appo_surrogate_loss(
        curr.logp(actions), behaviour, target_logp, adv, curr.entropy(), target.kl(curr),
        values, vs, clip_param=0.2, vf_loss_coeff=0.5, entropy_coeff=0.01, kl_coeff=0.3,
        use_kl_loss=True)
    np.testing.assert_allclose(loss.numpy(), want.numpy(), rtol=1e-5)
    assert want_stats["kl"].numpy() > 0
    for key in ("policy_loss", "vf_loss", "kl", "clip_fraction"):
        np.testing.assert_allclose(stats[key].numpy(), want_stats[key].numpy(), rtol=1e-5)


def test_without_vtrace_it_learns_on_gae():
    policy = _policy(vtrace=False, gamma=0.5, **{"lambda": 0.5})
    post = policy.postprocess_trajectory(_batch(policy))
    assert {"advantages", "value_targets"} <= set(post)
    stats = policy.learn_on_batch(post)["learner_stats"]
    assert stats["num_grad_updates"] == 1 and np.isfinite(stats["total_loss"])


def test_kl_coefficient_adapts_and_is_in_the_state():
    policy = _policy(kl_coeff=1.0, kl_target=0.01)
    assert policy.update_kl(0.05) == 1.5
    assert policy.update_kl(0.001) == 0.75
    assert policy.get_state()["kl_coeff"] == 0.75
    assert float(policy.kl_coeff_var.numpy()) == 0.75


@pytest.mark.slow
def test_target_updates_on_schedule_and_kl_adapts():
    algo = APPO(config={
        "env": "CartPole-v1", "seed": 0, "model": {"fcnet_hiddens": [16]}, "num_workers": 0,
        "rollout_fragment_length": 40, "train_batch_size": 40, "min_iter_time_s": 0,
        "num_sgd_iter": 2, "target_update_frequency": 2, "use_kl_loss": True,
        "kl_coeff": 1.0})
    try:
        policy = algo.get_policy()
        first = algo.train()  # 2 passes: no update yet (every 2 * 2 * 1 passes)
        assert first["counters"]["num_learner_passes"] == 2
        assert first["counters"].get("num_target_updates", 0) == 0
        assert not _same(policy.get_target_weights(), policy.get_weights())
        second = algo.train()
        assert second["counters"]["num_target_updates"] == 1
        assert _same(policy.get_target_weights(), policy.get_weights())
        stats = second["info"]["learner"]["default_policy"]["learner_stats"]
        assert stats["cur_kl_coeff"] == policy.kl_coeff != 1.0  # adapted to the last KL
    finally:
        algo.stop()


#: A tiny GTrXL (memory 3 < max_seq_len 4: training sequences reach past the memory).
ATTENTION_MODEL = {"fcnet_hiddens": [8], "use_attention": True, "max_seq_len": 4,
                   "attention_num_transformer_units": 1, "attention_dim": 8,
                   "attention_num_heads": 2, "attention_head_dim": 4,
                   "attention_memory_inference": 3, "attention_memory_training": 3,
                   "attention_position_wise_mlp_dim": 8}


@pytest.mark.slow
def test_recurrent_appo_target_network_runs_the_sequences_and_trains():
    # (~13 s, most of it building and tracing; APPO with an LSTM trains and restores in
    # the recurrent conformance cases.) With attention memory, the target network reads
    # the sequences from their sampled state_in as the model does: a fresh copy gives
    # the same outputs (KL 0, pi_target == mu); then the algorithm trains on sequences
    # and updates its target network.
    model = ATTENTION_MODEL
    algo = APPO(config={
        "env": "CartPole-v1", "seed": 0, "model": model, "num_workers": 0,
        "rollout_fragment_length": 24, "train_batch_size": 24, "min_iter_time_s": 0,
        "timesteps_per_iteration": 48, "target_update_frequency": 1, "use_kl_loss": True})
    try:
        policy = algo.get_policy()
        assert policy.is_recurrent()
        batch = policy.train_batch(algo.workers.local_worker().sample())
        columns, _ = TrainColumns(policy).prepare(batch)
        columns = {k: tf.constant(v) for k, v in columns.items()}
        dist_inputs, _ = policy.forward(policy.model, columns)
        target_inputs = policy.target_dist_inputs(columns)
        assert target_inputs.shape == dist_inputs.shape and dist_inputs.shape.rank == 3
        mask = tf.sequence_mask(columns["seq_lens"], 4).numpy()
        np.testing.assert_allclose(target_inputs.numpy()[mask], dist_inputs.numpy()[mask],
                                   rtol=1e-5, atol=1e-6)
        result = algo.train()
        stats = result["info"]["learner"]["default_policy"]["learner_stats"]
        for key in ("policy_loss", "vf_loss", "entropy", "kl", "total_loss"):
            assert np.isfinite(stats[key]), (key, stats)
        assert result["counters"]["num_target_updates"] >= 1
        assert _same(policy.get_target_weights(), policy.get_weights())
    finally:
        algo.stop()
