"""IMPALA's policy and plan: V-trace targets of a batch in time order by hand, the
policy's loss against `impala_loss` on the time-major layout, the asynchronous plan on
thread workers (learner metrics, weight broadcasts, the learner thread stopped with the
algorithm, the queue bound, a learner error surfaced), and the multi-device learner."""

import threading
import time

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from tfrl.algorithms.impala import Impala, ImpalaConfig, ImpalaTFPolicy
from tfrl.algorithms.impala import vtrace as vt
from tfrl.algorithms.impala.impala_loss import impala_loss
from tfrl.algorithms.impala.impala_tf_policy import vtrace_row_targets
from tfrl.execution.learner_thread import LearnerThread
from tfrl.execution.multi_gpu_learner_thread import MultiGPULearnerThread
from tfrl.policy.sample_batch import SampleBatch
from tfrl.policy.train_columns import TrainColumns

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
ACT_SPACE = gym.spaces.Discrete(2)


def _rows():
    """Two pieces of two episodes in time order: episode 7 (rows 0-2) terminates at
    row 2; episode 9 (rows 3-4) is cut by the fragment (bootstrapped from row 4's
    next value)."""
    return {"eps_id": tf.constant([7, 7, 7, 9, 9], tf.int64),
            "t": tf.constant([0, 1, 2, 0, 1], tf.int64),
            "terminateds": tf.constant([False, False, True, False, False]),
            "truncateds": tf.constant([False] * 5),
            "rewards": tf.constant([1.0, 2.0, 3.0, 1.0, 1.0])}


def test_row_targets_on_policy_are_the_bootstrapped_returns_by_hand():
    values = tf.constant([0.5, 0.5, 0.5, 2.0, 2.0])
    next_values = tf.constant([9.0, 9.0, 9.0, 9.0, 4.0])  # only rows 2 and 4 are read
    vs, pg_adv, mask = vtrace_row_targets(
        _rows(), tf.zeros(5), values, next_values, gamma=0.5, clip_rho_threshold=1.0,
        clip_pg_rho_threshold=1.0)
    # Episode 7: 1 + .5*2 + .25*3 = 2.75, 2 + .5*3 = 3.5, 3 (terminated: no bootstrap).
    # Episode 9: 1 + .5*1 + .25*4 = 2.5, 1 + .5*4 = 3.
    np.testing.assert_allclose(vs.numpy(), [2.75, 3.5, 3.0, 2.5, 3.0], rtol=1e-6)
    # pg_adv_t = r_t + gamma * vs_{t+1} - V(x_t) (the bootstrap past the last step).
    np.testing.assert_allclose(pg_adv.numpy(), [1 + 1.75 - .5, 2 + 1.5 - .5, 3 - .5,
                                                1 + 1.5 - 2, 1 + 2 - 2], rtol=1e-6)
    assert mask is None


def test_row_targets_clip_the_ratios_and_drop_last_ts_masks_the_cut_step():
    values = tf.constant([0.5, 0.5, 0.5, 2.0, 2.0])
    log_rhos = tf.math.log(tf.constant([2.0, 0.5, 1.0, 1.0, 3.0]))
    vs, pg_adv, _ = vtrace_row_targets(
        _rows(), log_rhos, values, tf.fill([5], 4.0), gamma=0.5, clip_rho_threshold=1.0,
        clip_pg_rho_threshold=1.0)
    # Episode 7 backwards: delta_2 = 1*(3 - .5) = 2.5, vs_2 = 3;
    # delta_1 = .5*(2 + .5*.5 - .5) = .875, vs_1 = .5 + .875 + .5*.5*(3 - .5) = 2.0;
    # delta_0 = 1*(1 + .25 - .5) = .75, vs_0 = .5 + .75 + .5*1*(2 - .5) = 2.0.
    np.testing.assert_allclose(vs.numpy()[:3], [2.0, 2.0, 3.0], rtol=1e-6)
    np.testing.assert_allclose(pg_adv.numpy()[:3], [1 + .5 * 2 - .5, .5 * (2 + 1.5 - .5),
                                                    3 - .5], rtol=1e-6)
    vs, _, mask = vtrace_row_targets(
        _rows(), tf.zeros(5), values, tf.fill([5], 99.0), gamma=0.5, clip_rho_threshold=1.0,
        clip_pg_rho_threshold=1.0, drop_last_ts=True)
    # The cut piece bootstraps from its last step's value (2.0) and drops that step.
    np.testing.assert_array_equal(mask.numpy(), [True, True, True, True, False])
    np.testing.assert_allclose(vs.numpy()[:4], [2.75, 3.5, 3.0, 1 + .5 * 2.0], rtol=1e-6)


def _policy(**config):
    return ImpalaTFPolicy(OBS_SPACE, ACT_SPACE, {"seed": 0, "model": {"fcnet_hiddens": [8]},
                                                 **config})


def _batch(policy, rows=12, seed=0):
    rng = np.random.default_rng(seed)
    obs = rng.uniform(-1, 1, (rows + 1, 4)).astype(np.float32)
    actions, _, extras = policy.compute_actions(obs[:-1], explore=True)
    terminateds = np.zeros(rows, bool)
    terminateds[4] = True  # episode 0: rows 0-4; episode 1: rows 5.., cut at the end
    return SampleBatch(obs=obs[:-1], new_obs=obs[1:], actions=actions,
                       rewards=rng.normal(size=rows).astype(np.float32),
                       terminateds=terminateds, truncateds=np.zeros(rows, bool),
                       eps_id=np.where(np.arange(rows) < 5, 0, 1).astype(np.int64),
                       t=np.where(np.arange(rows) < 5, np.arange(rows), np.arange(rows) - 5),
                       **extras)


def test_policy_loss_is_impala_loss_on_the_time_major_layout():
    policy = _policy(vf_loss_coeff=0.25, entropy_coeff=0.1)
    batch = _batch(policy)
    columns = {k: tf.constant(v) for k, v in batch.items()}
    loss, stats = policy.loss_and_stats(policy.model, policy.dist_class, columns)
    dist_inputs, values = policy.model(columns["obs"])
    _, next_values = policy.model(columns["new_obs"])
    dist = policy.dist_class(dist_inputs, policy.model)
    index = vt.time_major_index(tf.constant([i in (0, 5) for i in range(12)]))
    tm = lambda x: vt.to_time_major(x, index)  # noqa: E731
    want, want_stats = impala_loss(
        tm(dist.logp(columns["actions"])), tm(columns["action_logp"]), tm(dist.entropy()),
        tm(values), tm(columns["rewards"]),
        tm(0.99 * (1.0 - tf.cast(columns["terminateds"], tf.float32))),
        tf.stack([0.0, next_values[-1]]), vf_loss_coeff=0.25, entropy_coeff=0.1,
        mask=index.mask)
    np.testing.assert_allclose(loss.numpy(), want.numpy(), rtol=1e-5)
    for key in ("policy_loss", "vf_loss", "entropy"):
        np.testing.assert_allclose(stats[key].numpy(), want_stats[key].numpy(), rtol=1e-5)


def test_policy_keeps_rows_in_time_order_and_refuses_what_it_cannot_do():
    policy = _policy()
    with pytest.raises(ValueError, match=r"V-trace needs the rows in time order; received "
                                         r"shuffle_sequences=True"):
        policy.learn_on_batch(_batch(policy), shuffle_sequences=True)
    with pytest.raises(ValueError, match="_separate_vf_optimizer=True is not supported"):
        _policy(_separate_vf_optimizer=True)
    assert isinstance(_policy(opt_type="rmsprop").optimizer, tf.keras.optimizers.RMSprop)


def test_without_vtrace_the_targets_are_n_step_returns():
    policy = _policy(vtrace=False, gamma=0.5)
    batch = _batch(policy)
    post = policy.postprocess_trajectory(batch.slice(0, 5))  # one terminated episode
    rewards = batch["rewards"][:5]
    want = [sum(0.5 ** k * r for k, r in enumerate(rewards[i:])) for i in range(5)]
    np.testing.assert_allclose(post["value_targets"], want, rtol=1e-5)
    assert policy.learn_on_batch(post)["learner_stats"]["num_grad_updates"] == 1


# --------------------------------------------------------------- the plan


def _impala(**overrides):
    config = {"env": "CartPole-v1", "seed": 0, "model": {"fcnet_hiddens": [16]},
              "num_workers": 2, "remote_backend": "thread", "rollout_fragment_length": 20,
              "train_batch_size": 40, "min_iter_time_s": 0, "timesteps_per_iteration": 200,
              "learner_queue_timeout": 60, **overrides}
    return Impala(config=config)


def _learner_threads():
    return [t for t in threading.enumerate() if t.name.startswith(("tfrl-learner", "tfrl-loader"))
            and t.is_alive()]


@pytest.mark.slow
def test_async_plan_learns_in_a_thread_broadcasts_and_stops_it():
    assert not _learner_threads()
    algo = _impala()
    try:
        initial = algo.get_weights()["default_policy"]
        learner = algo.learner_thread
        assert type(learner) is LearnerThread and learner.is_alive()
        def workers_with_new_weights():
            remote = algo.workers.foreach_worker(lambda w: w.get_weights()["default_policy"])
            return sum(max(np.abs(a - b).max() for a, b in zip(w, initial)) > 0
                       for w in remote[1:])

        # Until 200 steps are trained and both workers got learned weights (the first
        # learn call traces for seconds; weights are sent to the worker whose batch was
        # queued, without waiting).
        results = [algo.train()]
        deadline = time.monotonic() + 90
        while (results[-1]["counters"].get("num_env_steps_trained", 0) < 200
               or workers_with_new_weights() < 2):
            assert time.monotonic() < deadline, results[-1]["counters"]
            results.append(algo.train())
        info = results[-1]["info"]
        assert info["learner"]["default_policy"]["learner_stats"]["num_grad_updates"] > 0
        assert set(info["learner_queue"]) >= {"size_count", "size_mean"}
        assert set(info["timing_breakdown"]) >= {"learner_grad_time_ms",
                                                 "learner_dequeue_time_ms"}
        counters = results[-1]["counters"]
        assert 200 <= counters["num_env_steps_trained"] <= counters["num_env_steps_sampled"]
        assert counters["num_weight_broadcasts"] >= 2
    finally:
        algo.stop()
    assert not learner.is_alive()
    assert not _learner_threads()


@pytest.mark.slow
def test_every_learner_output_waiting_is_recorded_by_the_next_train():
    """Outputs that piled up (e.g. while the learner traced its first call) are all
    counted by the next `train()`, not one per iteration for the rest of the run."""
    algo = _impala(timesteps_per_iteration=0)  # a result after each learner output
    try:
        first = algo.train()
        learner = algo.learner_thread
        info = first["info"]["learner"]
        for _ in range(3):  # three outputs of 40 rows, waiting before the next pull
            learner.outqueue.put((40, info))
        before = first["counters"]
        after = algo.train()["counters"]
        # All three (and any real output behind them; one pull per train() recorded 40).
        assert after["num_env_steps_trained"] - before["num_env_steps_trained"] >= 3 * 40
        assert after["num_learner_passes"] - before["num_learner_passes"] >= 3
    finally:
        algo.stop()
    assert not _learner_threads()


@pytest.mark.slow
def test_learner_queue_bound_holds_and_no_batch_is_lost(monkeypatch):
    learned = []
    real_learn = LearnerThread._learn

    def slow_learn(self, batch):
        time.sleep(0.05)
        learned.append(batch.count)
        return real_learn(self, batch)

    monkeypatch.setattr(LearnerThread, "_learn", slow_learn)
    algo = _impala(learner_queue_size=1)
    try:
        assert algo.learner_thread.inqueue.maxsize == 1
        result = algo.train()
        # The learner's queue held at most one batch whenever it took one.
        assert result["info"]["learner_queue"]["size_max"] <= 1
        counters = result["counters"]
        # The driver went on sampling while the learner lagged; every trained batch is
        # a whole train batch of 40, each learned once.
        assert counters["num_env_steps_trained"] % 40 == 0 and all(c == 40 for c in learned)
        assert (0 < counters["num_env_steps_trained"] <= 40 * len(learned)
                <= counters["num_env_steps_sampled"])
    finally:
        algo.stop()
    assert not _learner_threads()


@pytest.mark.slow
def test_a_learner_error_reaches_train_and_a_new_learner_takes_over(monkeypatch):
    def broken(self, batch):
        raise FloatingPointError("boom")

    monkeypatch.setattr(LearnerThread, "_learn", broken)
    algo = _impala()
    try:
        first = algo.learner_thread
        with pytest.raises(RuntimeError, match=r"The learner thread died: FloatingPointError"):
            algo.train()
        assert not first.is_alive()
        assert algo.learner_thread is not first and algo.learner_thread.is_alive()
    finally:
        algo.stop()
    assert not _learner_threads()


@pytest.mark.slow
def test_a_killed_worker_is_recreated_and_training_goes_on():
    algo = _impala(recreate_failed_workers=True, worker_restore_timeout_s=60)
    try:
        before = algo.train()["counters"]
        old = algo.workers.remote_workers()[0]
        old.kill()
        results = [algo.train() for _ in range(2)]  # no error reaches the caller
        new = algo.workers.remote_workers()[0]
        assert new is not old and new.worker_index == 1 and new.is_alive()
        assert not old.is_alive()
        after = results[-1]["counters"]
        assert after["num_env_steps_sampled"] > before["num_env_steps_sampled"]
        assert after["num_env_steps_trained"] > before["num_env_steps_trained"]
        assert algo.learner_thread.is_alive()
    finally:
        algo.stop()
    assert not _learner_threads()


@pytest.mark.slow
@pytest.mark.parametrize("learn_input", ["in_graph", "tf_data"])
def test_several_devices_learn_through_the_multi_gpu_learner(learn_input):
    algo = _impala(num_gpus=2, _fake_gpus=True, learn_input=learn_input)
    try:
        assert algo.get_policy().config["learn_input"] == learn_input
        learner = algo.learner_thread
        assert type(learner) is MultiGPULearnerThread
        assert algo.get_policy().strategy.num_replicas_in_sync == 2
        result = algo.train()
        stats = result["info"]["learner"]["default_policy"]["learner_stats"]
        assert stats["num_grad_updates"] > 0 and np.isfinite(stats["total_loss"])
    finally:
        algo.stop()
    assert not learner.is_alive() and not _learner_threads()


@pytest.mark.slow
def test_without_remote_workers_it_learns_in_turn_deterministically():
    def run():
        algo = _impala(num_workers=0, rollout_fragment_length=40, num_sgd_iter=2)
        try:
            assert algo.learner_thread is None
            result = algo.train()
            return result["counters"], algo.get_weights()["default_policy"]
        finally:
            algo.stop()

    (counters, weights), (counters2, weights2) = run(), run()
    assert counters == counters2
    assert counters["num_env_steps_trained"] == counters["num_env_steps_sampled"] == 200
    assert counters["num_learner_passes"] == 2 * 5  # 5 batches of 40, 2 passes each
    for a, b in zip(weights, weights2):
        np.testing.assert_array_equal(a, b)


# ----------------------------------------------------- recurrent models (sequences)

#: A tiny LSTM that also reads the previous action and reward (so the bootstrap step
#: must pass them), short sequences so that a batch holds many, some padded.
LSTM_MODEL = {"fcnet_hiddens": [8], "use_lstm": True, "lstm_cell_size": 4, "max_seq_len": 4,
              "lstm_use_prev_action": True, "lstm_use_prev_reward": True}


@pytest.mark.slow
def test_recurrent_loss_is_impala_loss_per_sequence_bootstrapped_with_the_state_reached():
    # (One algorithm for the loss check and a short training run: ~15 s, most of it
    # building and tracing.) A sampled batch of a recurrent IMPALA, cut into sequences
    # of <= 4 steps (episodes of CartPole end inside it: some sequences are short and
    # padded). Reference: each
    # sequence stepped through one step at a time from its sampled state_in; its
    # bootstrap V(new_obs) from the state after its last real step (0 if terminated).
    algo = _impala(num_workers=0, rollout_fragment_length=30, train_batch_size=30,
                   timesteps_per_iteration=30, model=LSTM_MODEL, vf_loss_coeff=0.25,
                   entropy_coeff=0.1)
    try:
        policy = algo.get_policy()
        batch = policy.train_batch(algo.workers.local_worker().sample())
        columns, num_seqs = TrainColumns(policy).prepare(batch)
        columns = {k: tf.constant(v) for k, v in columns.items()}
        seq_lens = columns["seq_lens"].numpy()
        assert seq_lens.sum() == 30 and seq_lens.min() < 4 and num_seqs == len(seq_lens)
        loss, stats = policy.loss_and_stats(policy.model, policy.dist_class, columns)

        num_states = len(policy.get_initial_state())
        logps, values, entropies, bootstrap = [], [], [], []
        for b, length in enumerate(seq_lens):
            state = [columns[f"state_in_{i}"][b:b + 1] for i in range(num_states)]
            for t in range(length):
                prev = {k: columns[k][b:b + 1, t] for k in ("prev_actions", "prev_rewards")}
                dist_inputs, value, state = policy.call_model(
                    columns["obs"][b:b + 1, t], state, prev, training=True)
                dist = policy.dist_class(dist_inputs, policy.model)
                logps.append(float(dist.logp(columns["actions"][b:b + 1, t])[0]))
                entropies.append(float(dist.entropy()[0]))
                values.append(float(value[0]))
            last = length - 1
            prev = {"prev_actions": columns["actions"][b:b + 1, last],
                    "prev_rewards": columns["rewards"][b:b + 1, last]}
            _, next_value, _ = policy.call_model(columns["new_obs"][b:b + 1, last], state,
                                                 prev, training=True)
            bootstrap.append(0.0 if columns["terminateds"][b, last] else float(next_value[0]))
        assert 0.0 in bootstrap and any(v != 0.0 for v in bootstrap)
        mask = tf.transpose(tf.sequence_mask(seq_lens, 4))

        def tm(real, pad=0.0):  # real steps in sequence order -> [T, B], padded
            out, i = np.full((num_seqs, 4), pad, np.float32), 0
            for b, length in enumerate(seq_lens):
                out[b, :length] = real[i:i + length]
                i += length
            return tf.constant(out.T)

        def real(column):
            return [v for b, length in enumerate(seq_lens)
                    for v in columns[column].numpy()[b, :length].astype(np.float32)]

        terminateds = np.asarray(real("terminateds"), np.float32)
        want, want_stats = impala_loss(
            tm(logps), tm(real("action_logp")), tm(entropies), tm(values), tm(real("rewards")),
            tm(0.99 * (1.0 - terminateds)), tf.constant(bootstrap), vf_loss_coeff=0.25,
            entropy_coeff=0.1, mask=mask)
        np.testing.assert_allclose(loss.numpy(), want.numpy(), rtol=1e-4)
        for key in ("policy_loss", "vf_loss", "entropy"):
            np.testing.assert_allclose(stats[key].numpy(), want_stats[key].numpy(), rtol=1e-4)
        # The algorithm trains on such batches (state through sampling and learning).
        before = policy.get_weights()
        result = algo.train()
        learner = result["info"]["learner"]["default_policy"]["learner_stats"]
        assert learner["num_grad_updates"] > 0
        for key in ("policy_loss", "vf_loss", "entropy", "total_loss"):
            assert np.isfinite(learner[key]), (key, learner)
        assert any(np.abs(a - b).max() > 0 for a, b in zip(policy.get_weights(), before))
    finally:
        algo.stop()
