"""The recurrent training path against a correct reference (issue 18).

Each test pins one point where a recurrent PPO can go wrong (SB3-contrib's RecurrentPPO
and RLlib's classic recurrent PPO behave as pinned here): the state that starts each
training sequence is the sampler's state at that step; padded steps contribute exactly
zero to every loss term and statistic; a fragment cut mid-episode bootstraps from the
value at the cut with the state after its last step; episode starts inside a fragment
begin a new sequence from the initial state; advantages are standardized over real
steps only; the value function has its own LSTM unless `vf_share_layers`; minibatches of
whole sequences hold about `sgd_minibatch_size` real steps; a truncated episode
bootstraps from the value after its last step.
"""

import contextlib

import numpy as np
import pytest
import tensorflow as tf

import tfrl.examples.envs  # noqa: F401 - registers StatelessCartPole-v1
from tfrl.algorithms.ppo import PPO
from tfrl.algorithms.ppo.ppo_loss import ppo_loss
from tfrl.algorithms.sequencing import add_sequences
from tfrl.evaluation.postprocessing import compute_advantages
from tfrl.execution.rollout_ops import StandardizeFields
from tfrl.policy.sample_batch import SampleBatch
from tfrl.policy.tf_train_step import sequence_minibatch

ENV = "tfrl.examples.envs:StatelessCartPole-v1"
MODEL = {"fcnet_hiddens": [8], "use_lstm": True, "lstm_cell_size": 6, "max_seq_len": 5}


def _sampled(vf_share_layers=False):
    """A PPO+LSTM algorithm on stateless CartPole and one sampled (postprocessed) batch."""
    algo = PPO(config={
        "env": ENV, "num_workers": 0, "num_envs_per_worker": 3, "rollout_fragment_length": 12,
        "train_batch_size": 36, "sgd_minibatch_size": 10, "num_sgd_iter": 1, "seed": 3,
        "model": {**MODEL, "vf_share_layers": vf_share_layers}})
    worker = algo.workers.local_worker()
    # Keep new_obs (PPO's samplers drop it after postprocessing) to recompute bootstraps.
    worker.get_policy().view_requirements["new_obs"].used_for_training = True
    batch = worker.sample()
    return algo, worker.get_policy(), batch


@pytest.fixture(scope="module")
def sampled():
    """`_sampled()` shared by the module's tests (one algorithm built, one compiled
    learning function traced). The batch is read only (a test that changes it works on
    a copy); a test that learns restores the policy's state (`restored_after`)."""
    algo, policy, batch = _sampled()
    yield algo, policy, batch
    algo.stop()


@contextlib.contextmanager
def restored_after(policy):
    """Runs the block, then sets `policy` back to its state before it (weights, optimizer
    slots, RNGs, counters), so that the shared policy stays as sampled."""
    state = policy.get_state()
    try:
        yield state
    finally:
        policy.set_state(state)


def _trajectories(batch):
    """Row index arrays of each (episode, fragment) chunk of a sampled batch."""
    keys = np.stack([batch["eps_id"], batch["unroll_id"]], axis=1)
    _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    return [np.flatnonzero(inverse.ravel() == k) for k in np.argsort(first)]


@pytest.mark.parametrize("vf_share_layers", [False, True])
def test_each_training_sequence_starts_from_the_samplers_state(vf_share_layers, request):
    # vf_share_layers=False is `_sampled()`'s default: the shared one (read only here).
    algo, policy, batch = (_sampled(vf_share_layers) if vf_share_layers
                           else request.getfixturevalue("sampled"))
    num_states = len(policy.get_initial_state())
    assert num_states == (2 if vf_share_layers else 4)
    seqs = add_sequences(batch, MODEL["max_seq_len"])
    seq_lens = seqs["seq_lens"]
    starts = np.concatenate([[0], np.cumsum(seq_lens)[:-1]])
    # Episode starts and fragment cuts both occur in this batch.
    assert (batch["t"][starts] == 0).any() and (batch["t"][starts] > 0).any()
    for i, (start, n) in enumerate(zip(starts, seq_lens)):
        rows = slice(start, start + n)
        state_in = [seqs[f"state_in_{k}"][i] for k in range(num_states)]
        if batch["t"][start] == 0:  # an episode start: the initial state
            for s, init in zip(state_in, policy.get_initial_state()):
                np.testing.assert_array_equal(s, init)
        else:  # the state the sampler fed to this step
            for k in range(num_states):
                np.testing.assert_array_equal(state_in[k], batch[f"state_in_{k}"][start])
        # The training forward pass from that state reproduces what the sampler computed
        # (so the first epoch's probability ratios are exactly 1, up to float error).
        dist_inputs, values, state_out = policy.model(
            (batch["obs"][rows][None], [s[None] for s in state_in], np.array([n], np.int32)))
        np.testing.assert_allclose(dist_inputs[0], batch["action_dist_inputs"][rows],
                                   atol=1e-5)
        np.testing.assert_allclose(values[0], batch["vf_preds"][rows], atol=1e-5)
        for k in range(num_states):
            np.testing.assert_allclose(state_out[k][0], batch[f"state_out_{k}"][start + n - 1],
                                       atol=1e-5)
    if vf_share_layers:
        algo.stop()


def test_sequences_are_cut_at_episode_starts_and_fragment_cuts(sampled):
    _, _, batch = sampled
    seqs = add_sequences(batch, MODEL["max_seq_len"])
    starts = np.concatenate([[0], np.cumsum(seqs["seq_lens"])[:-1]])
    ends = starts + seqs["seq_lens"] - 1
    for start, end in zip(starts, ends):
        assert len(set(batch["eps_id"][start:end + 1])) == 1
        assert len(set(batch["unroll_id"][start:end + 1])) == 1
        np.testing.assert_array_equal(np.diff(batch["t"][start:end + 1]), 1)
    assert seqs["seq_lens"].max() <= MODEL["max_seq_len"]


def test_a_fragment_cut_mid_episode_bootstraps_from_the_value_at_the_cut(sampled):
    _, policy, batch = sampled
    gamma, lambda_ = policy.config["gamma"], policy.config["lambda"]
    num_states = len(policy.get_initial_state())
    cuts = 0
    for rows in _trajectories(batch):
        chunk = batch[rows[0]:rows[-1] + 1]
        np.testing.assert_array_equal(np.arange(rows[0], rows[-1] + 1), rows)
        if chunk["terminateds"][-1]:
            last_r = 0.0
        else:  # cut mid-episode: V(next obs) from the state after the chunk's last step
            cuts += 1
            state = [chunk[f"state_out_{k}"][-1:] for k in range(num_states)]
            last_r = float(policy.value(chunk["new_obs"][-1:], state)[0])
            fresh = float(policy.value(chunk["new_obs"][-1:],
                                       [s[None] for s in policy.get_initial_state()])[0])
            assert abs(last_r - fresh) > 1e-6  # the state matters for this value
        expected = compute_advantages(
            {"rewards": chunk["rewards"], "vf_preds": chunk["vf_preds"]}, last_r, gamma,
            lambda_)
        np.testing.assert_allclose(chunk["advantages"], expected["advantages"], rtol=1e-5,
                                   atol=1e-5)
        np.testing.assert_allclose(chunk["value_targets"], expected["value_targets"],
                                   rtol=1e-5, atol=1e-5)
    assert cuts >= 3  # every sub-env's running episode is cut at the fragment's end


def test_advantages_are_standardized_over_real_steps_before_sequencing(sampled):
    _, policy, batch = sampled
    standardized = StandardizeFields(["advantages"])(batch)
    adv = standardized["advantages"]
    assert len(adv) == len(batch) == 36  # rows: no padding yet
    np.testing.assert_allclose([adv.mean(), adv.std()], [0.0, 1.0], atol=1e-5)
    train_batch = policy.train_batch(standardized)
    # Cutting into sequences adds no rows: padding happens only inside the compiled
    # step, where the loss masks it.
    assert int(train_batch["seq_lens"].sum()) == len(train_batch["advantages"]) == 36
    np.testing.assert_array_equal(train_batch["advantages"], adv)


def _ppo_loss_terms(inputs, mask):
    return ppo_loss(*inputs, clip_param=0.2, vf_clip_param=10.0, vf_loss_coeff=0.5,
                    kl_coeff=0.3, entropy_coeff=0.01, mask=mask)


def test_padded_steps_contribute_exactly_zero_to_every_loss_term_and_stat():
    rng = np.random.default_rng(0)
    seq_lens = np.array([4, 1, 3])
    mask = tf.sequence_mask(seq_lens, 4)  # [3, 4]
    names = ["logp", "behaviour_logp", "advantages", "kl", "entropy", "values",
             "behaviour_values", "value_targets"]
    clean = [rng.normal(size=(3, 4)).astype(np.float32) for _ in names]
    for x in clean:
        x[~mask.numpy()] = 0.0
    # The same real steps; padded steps hold large values.
    garbage = [np.where(mask.numpy(), x, rng.uniform(50, 80, x.shape)).astype(np.float32)
               for x in clean]
    results = []
    for inputs in (clean, garbage):
        variables = [tf.Variable(x) for x in inputs]
        with tf.GradientTape() as tape:
            loss, stats = _ppo_loss_terms(variables, mask)
        grads = tape.gradient(loss, variables)
        results.append((loss, stats, grads))
    (loss_a, stats_a, grads_a), (loss_b, stats_b, grads_b) = results
    np.testing.assert_allclose(loss_b, loss_a, rtol=1e-6)
    assert sorted(stats_a) == ["clip_fraction", "entropy", "kl", "policy_loss", "vf_explained_var",
                               "vf_loss"]
    for key in stats_a:
        np.testing.assert_allclose(stats_b[key], stats_a[key], rtol=1e-5, atol=1e-6,
                                   err_msg=key)
    for name, g_a, g_b in zip(names, grads_a, grads_b):
        if g_a is None:  # the loss does not read it (e.g. behaviour_logp's gradient path)
            assert g_b is None, name
            continue
        np.testing.assert_array_equal(g_b.numpy()[~mask.numpy()], 0.0, err_msg=name)
        np.testing.assert_allclose(g_b.numpy(), g_a.numpy(), rtol=1e-5, atol=1e-7,
                                   err_msg=name)
    # The masked loss is the mean over real steps only (8 of 12).
    flat = [x[mask.numpy()] for x in clean]
    unmasked, _ = _ppo_loss_terms([tf.constant(x) for x in flat], None)
    np.testing.assert_allclose(loss_a, unmasked, rtol=1e-5)


def test_a_policy_learns_the_same_whatever_its_padded_steps_hold(sampled):
    _, policy, batch = sampled
    batch = StandardizeFields(["advantages"])(batch.copy())
    seqs = policy.train_batch(batch)
    with restored_after(policy) as state:  # weights, optimizer slots, RNGs
        results = _learn_with_padding_filled(policy, seqs, state)
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def _learn_with_padding_filled(policy, seqs, state):
    """The weights after learning from `state` on `seqs`, right-zero-padded, with the
    padded steps of the loss's columns set to 0, then to 7."""
    results = []
    for fill in (0.0, 7.0):
        padded = SampleBatch({k: np.array(v) for k, v in seqs.items()},
                             _max_seq_len=MODEL["max_seq_len"])
        padded.right_zero_pad(MODEL["max_seq_len"])
        real = np.zeros(len(padded["obs"]), bool)
        for i, n in enumerate(padded["seq_lens"]):
            real[i * MODEL["max_seq_len"]:i * MODEL["max_seq_len"] + n] = True
        for key in ("obs", "advantages", "value_targets", "vf_preds", "action_logp",
                    "action_dist_inputs"):
            padded[key][~real] = fill
        policy.set_state(state)
        policy.learn_on_batch(padded, num_sgd_iter=2, sgd_minibatch_size=None)
        results.append(policy.get_weights())
    return results


def test_minibatches_of_sequences_count_real_timesteps():
    # sgd_minibatch_size counts real timesteps (RLlib's classic minibatches of whole
    # sequences; SB3-contrib's RecurrentPPO cuts minibatches of batch_size steps): as
    # many minibatches per epoch as rows would give, each with the same number of
    # sequences. Before: sgd_minibatch_size // max_seq_len sequences, so short
    # sequences (episode ends) gave minibatches of far fewer steps.
    seq_lens = np.array([16, 4, 12, 16, 9, 7, 16, 16])  # 96 steps
    assert sequence_minibatch(seq_lens, 48) == 4  # 2 per epoch, 4 sequences each
    assert sequence_minibatch(seq_lens, 32) == 2  # 3 per epoch: 8 // 3
    assert sequence_minibatch(seq_lens, 96) == 8
    assert sequence_minibatch(seq_lens, 32, num_replicas=2) == 2
    assert sequence_minibatch(seq_lens, 20, num_replicas=2) == 2  # 4 per epoch
    with pytest.raises(ValueError, match=r"sgd_minibatch_size=97 timesteps is larger than "
                                         r"the batch \(96 timesteps in 8 sequences\)"):
        sequence_minibatch(seq_lens, 97)
    with pytest.raises(ValueError, match=r"hold 1 of the batch's 8 sequences, fewer than "
                                         r"the 2 replicas"):
        sequence_minibatch(seq_lens, 12, num_replicas=2)


def test_ppo_minibatches_hold_about_sgd_minibatch_size_real_steps(sampled):
    # 36 steps in sequences of up to 5 (episodes end inside the fragments):
    # minibatches of 10 timesteps -> floor(36 / 10) = 3 steps per epoch, of
    # num_seqs // 3 sequences each (2 per minibatch under the old rule: 10 // 5).
    _, policy, batch = sampled
    seqs = policy.train_batch(StandardizeFields(["advantages"])(batch.copy()))
    num_seqs = len(seqs["seq_lens"])
    assert seqs["seq_lens"].sum() == 36 and num_seqs > 36 // 5
    per_seq = sequence_minibatch(seqs["seq_lens"], 10)
    assert per_seq == num_seqs // 3
    with restored_after(policy):
        before = int(policy.num_grad_updates.numpy())
        policy.learn_on_batch(seqs, num_sgd_iter=2, sgd_minibatch_size=10)
        assert int(policy.num_grad_updates.numpy()) - before == 2 * (num_seqs // per_seq)


def test_a_truncated_episode_bootstraps_from_the_value_after_its_last_step():
    # SB3-contrib adds gamma * V(terminal obs) (the value LSTM's state after the step)
    # to the reward at a timeout; tfrl bootstraps the truncated trajectory with
    # last_r = V(final obs, state after its last step): the same target.
    import gymnasium as gym

    from tfrl.examples.envs.stateless_cartpole import StatelessCartPole

    algo = PPO(config={
        "env": lambda ctx: gym.wrappers.TimeLimit(StatelessCartPole(), 7),
        "num_workers": 0, "num_envs_per_worker": 2, "rollout_fragment_length": 20,
        "train_batch_size": 40, "sgd_minibatch_size": 10, "num_sgd_iter": 1, "seed": 5,
        "model": MODEL})
    policy = algo.workers.local_worker().get_policy()
    policy.view_requirements["new_obs"].used_for_training = True  # (see _sampled)
    batch = algo.workers.local_worker().sample()
    num_states = len(policy.get_initial_state())
    gamma, lambda_ = policy.config["gamma"], policy.config["lambda"]
    truncations = 0
    for rows in _trajectories(batch):
        chunk = batch[rows[0]:rows[-1] + 1]
        if not chunk["truncateds"][-1] or chunk["terminateds"][-1]:
            continue
        truncations += 1
        state = [chunk[f"state_out_{k}"][-1:] for k in range(num_states)]
        last_r = float(policy.value(chunk["new_obs"][-1:], state)[0])
        assert abs(last_r) > 1e-3  # not the 0 of a termination
        expected = compute_advantages(
            {"rewards": chunk["rewards"], "vf_preds": chunk["vf_preds"]}, last_r, gamma,
            lambda_)
        np.testing.assert_allclose(chunk["value_targets"], expected["value_targets"],
                                   rtol=1e-5, atol=1e-5)
    assert truncations >= 2
    algo.stop()
