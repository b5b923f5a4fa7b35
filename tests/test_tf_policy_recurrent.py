"""TFPolicy with the catalog's LSTM: state in/out when acting, sequence batches when learning."""

import numpy as np
import pytest

from policy_helpers import SEQ_LENS, recurrent_policy, sequence_batch
from tfrl.policy.sample_batch import SampleBatch

def _policy(strategy="one_device", **config):
    return recurrent_policy(strategy, **config)


def _sequence_batch(seed=0, seq_lens=SEQ_LENS):
    return sequence_batch(seed, seq_lens)


def test_acting_carries_state_like_the_model_on_a_sequence():
    policy = _policy()
    assert policy.is_recurrent() and policy.num_state_tensors() == 2
    init = policy.get_initial_state()
    assert [s.shape for s in init] == [(4,), (4,)]
    obs = np.random.default_rng(0).uniform(-1, 1, (2, 3, 3)).astype(np.float32)  # [B, T, 3]
    state = [np.stack([s] * 2) for s in init]
    values = []
    for t in range(3):
        _, state, extras = policy.compute_actions(obs[:, t], state, explore=False)
        values.append(extras["vf_preds"])
    _, value, state_out = policy.model((obs, [np.stack([s] * 2) for s in init],
                                        np.array([3, 3], np.int32)))
    np.testing.assert_allclose(np.stack(values, 1), value.numpy(), atol=1e-5)
    np.testing.assert_allclose(state[0], state_out[0].numpy(), atol=1e-5)
    with pytest.raises(ValueError, match=r"has 2 state tensor\(s\); received 0"):
        policy.compute_actions(obs[:, 0])
    with pytest.raises(ValueError, match=r"state_batches\[1\] must have shape \(2, 4\); received "
                                         r"\(1, 4\)"):
        policy.compute_actions(obs[:, 0], [state[0], state[1][:1]])


@pytest.mark.slow
def test_sequence_learning_matches_across_strategies_and_traces_once():
    default, single, mirrored = _policy("default"), _policy(), _policy("mirrored")
    for policy in (default, single, mirrored):
        for seed in range(3):
            lens = np.roll(SEQ_LENS, seed)
            info = policy.learn_on_batch(_sequence_batch(seed, lens))
        assert policy.num_traces["learn_on_batch"] == 1
        assert info["learner_stats"]["num_grad_updates"] == 3 * 2 * 4
    for a, b, c in zip(single.get_weights(), mirrored.get_weights(), default.get_weights()):
        np.testing.assert_allclose(a, b, atol=1e-5)
        np.testing.assert_allclose(c, b, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["one_device", "mirrored"])
def test_tf_data_sequence_learning_equals_in_graph(strategy):
    # Unshuffled, both feed the same minibatches of whole sequences in the same order.
    in_graph = _policy(strategy, shuffle_sequences=False)
    tf_data = _policy(strategy, shuffle_sequences=False, learn_input="tf_data")
    for seed in range(3):
        batch = _sequence_batch(seed, np.roll(SEQ_LENS, seed))
        if seed == 2:  # right-zero-padded batches too
            batch = SampleBatch(dict(batch), _max_seq_len=4)
            batch.right_zero_pad(4)
        want = in_graph.learn_on_batch(batch)["learner_stats"]
        got = tf_data.learn_on_batch(batch)["learner_stats"]
        np.testing.assert_allclose(got["total_loss"], want["total_loss"], rtol=1e-5)
    for a, b in zip(in_graph.get_weights(), tf_data.get_weights()):
        np.testing.assert_allclose(a, b, atol=1e-5)
    assert tf_data.num_traces["learn_on_batch"] == 1
    assert got["num_grad_updates"] == 3 * 2 * 4


@pytest.mark.slow
def test_padded_and_unpadded_batches_learn_the_same():
    batch = _sequence_batch()
    padded = SampleBatch({k: v for k, v in batch.items()}, _max_seq_len=4)
    padded.right_zero_pad(4)
    # One policy (one compiled learning function) learns each from the same state.
    policy = _policy(num_sgd_iter=1, sgd_minibatch_size=None)
    initial = policy.get_state()
    policy.learn_on_batch(batch)
    unpadded = policy.get_weights()
    policy.set_state(initial)
    policy.learn_on_batch(padded)
    for x, y in zip(unpadded, policy.get_weights()):
        np.testing.assert_allclose(x, y, atol=1e-6)


def test_sequence_batch_errors():
    policy = _policy()
    batch = _sequence_batch()
    with pytest.raises(ValueError, match=r"the policy is recurrent, so the batch needs 'seq_lens'"):
        policy.learn_on_batch({k: v for k, v in batch.items() if k != "seq_lens"})
    with pytest.raises(ValueError, match=r"column 'state_in_0' must have one row per sequence: 8 "
                                         r"rows for seq_lens \[4, 3, 4, 2, 1, 4, 4, 3\]; received 7"):
        policy.learn_on_batch({**batch, "state_in_0": batch["state_in_0"][:7]})
    with pytest.raises(ValueError, match=r"column 'obs' must have one row per timestep: 26 rows "
                                         r"for seq_lens \[5, 3, 4, 2, 1, 4, 4, 3\]; received 25"):
        policy.learn_on_batch({**batch, "seq_lens": SEQ_LENS + np.eye(8, dtype=np.int32)[0]})
    with pytest.raises(ValueError, match=r"sgd_minibatch_size=64 timesteps is larger than "
                                         r"the batch \(25 timesteps in 8 sequences\)"):
        _policy(sgd_minibatch_size=64).learn_on_batch(batch)


def test_view_requirements_name_state_and_model_output_columns():
    requirements = _policy().view_requirements
    state_in = requirements["state_in_1"]
    assert state_in.data_col == "state_out_1" and state_in.shift_arr == [-1]
    assert state_in.batch_repeat_value == 4 and state_in.space.shape == (4,)
    assert requirements["state_out_0"].used_for_training is False
    assert requirements["vf_preds"].used_for_compute_actions is False
    assert "action_logp" in requirements and "obs" in requirements


# ------------------------------------------------------- lstm_use_prev_action / _reward

PREV_MODEL = {"lstm_use_prev_action": True, "lstm_use_prev_reward": True}


def _prev_policy(strategy="one_device", **config):
    return recurrent_policy(strategy, model=PREV_MODEL, **config)


def test_prev_actions_and_rewards_feed_the_model_when_acting():
    policy = _prev_policy()
    req = policy.view_requirements
    assert req["prev_actions"].data_col == "actions" and req["prev_actions"].shift_arr == [-1]
    assert req["prev_rewards"].data_col == "rewards" and req["prev_rewards"].shift_arr == [-1]
    assert "prev_actions" not in _policy().view_requirements  # unused columns not recorded
    rng = np.random.default_rng(0)
    obs = rng.uniform(-1, 1, (3, 3)).astype(np.float32)
    state = [rng.normal(size=(3, 4)).astype(np.float32) for _ in range(2)]
    prev_a, prev_r = np.array([0, 1, 1]), np.array([0.5, -1.0, 2.0], np.float32)
    actions, state_out, extras = policy.compute_actions(
        obs, state, prev_action_batch=prev_a, prev_reward_batch=prev_r, explore=False)
    dist_inputs, value, want_state = policy.model(
        (obs[:, None], state, np.ones(3, np.int32)),
        prev_actions=prev_a[:, None], prev_rewards=prev_r[:, None])
    np.testing.assert_allclose(extras["action_dist_inputs"], dist_inputs.numpy()[:, 0], atol=1e-6)
    np.testing.assert_allclose(extras["vf_preds"], value.numpy()[:, 0], atol=1e-6)
    np.testing.assert_allclose(state_out[0], want_state[0].numpy(), atol=1e-6)
    # Other previous actions / rewards give other outputs.
    _, _, other_a = policy.compute_actions(obs, state, prev_action_batch=1 - prev_a,
                                           prev_reward_batch=prev_r, explore=False)
    _, _, other_r = policy.compute_actions(obs, state, prev_action_batch=prev_a,
                                           prev_reward_batch=prev_r + 1.0, explore=False)
    for other in (other_a, other_r):
        assert np.abs(other["action_dist_inputs"] - extras["action_dist_inputs"]).min() > 1e-6
    from_dict = policy.compute_actions_from_input_dict(
        {"obs": obs, "state_in_0": state[0], "state_in_1": state[1], "prev_actions": prev_a,
         "prev_rewards": prev_r}, explore=False)
    np.testing.assert_array_equal(from_dict[2]["action_dist_inputs"], extras["action_dist_inputs"])
    np.testing.assert_array_equal(
        policy.value(obs, state, prev_action_batch=prev_a, prev_reward_batch=prev_r),
        extras["vf_preds"])
    assert policy.num_traces["compute_actions"] == 1 and policy.num_traces["value"] == 1


def test_prev_inputs_errors():
    policy = _prev_policy()
    obs, state = np.zeros((2, 3), np.float32), [np.zeros((2, 4), np.float32)] * 2
    with pytest.raises(ValueError, match=r"built with lstm_use_prev_action=True and needs "
                                         r"prev_action_batch .*received prev_action_batch=None"):
        policy.compute_actions(obs, state, prev_reward_batch=np.zeros(2))
    with pytest.raises(ValueError, match=r"value\(\): .*lstm_use_prev_reward=True and needs "
                                         r"prev_reward_batch"):
        policy.value(obs, state, prev_action_batch=np.zeros(2, np.int64))
    with pytest.raises(ValueError, match=r"prev_action_batch must have one row per observation "
                                         r"\(2\); received 3"):
        policy.compute_actions(obs, state, prev_action_batch=np.zeros(3, np.int64),
                               prev_reward_batch=np.zeros(2))
    with pytest.raises(ValueError, match=r"prev_reward_batch must be numeric of shape \[B\]; "
                                         r"received dtype float64, shape \(2, 1\)"):
        policy.compute_actions(obs, state, prev_action_batch=np.zeros(2, np.int64),
                               prev_reward_batch=np.zeros((2, 1)))
    batch = sequence_batch(prev=True)
    del batch["prev_rewards"]
    with pytest.raises(KeyError, match=r"reads column 'prev_rewards', which the train batch lacks"):
        policy.learn_on_batch(batch)


@pytest.mark.slow
def test_prev_inputs_learning_matches_across_strategies_and_uses_the_columns():
    single, mirrored = _prev_policy(), _prev_policy("mirrored")
    initial = single.get_state()
    batches = [sequence_batch(seed, np.roll(SEQ_LENS, seed), prev=True) for seed in range(2)]
    for batch in batches:
        for policy in (single, mirrored):
            policy.learn_on_batch(batch)
    learned = single.get_weights()
    for a, b in zip(learned, mirrored.get_weights()):
        np.testing.assert_allclose(a, b, atol=1e-5)
    # The same policy from the same state on the same batches with other prev_rewards
    # (one compiled learning function for both runs).
    single.set_state(initial)
    for batch in batches:
        single.learn_on_batch(SampleBatch({**batch, "prev_rewards": batch["prev_rewards"] + 1.0}))
    assert single.num_traces["learn_on_batch"] == mirrored.num_traces["learn_on_batch"] == 1
    assert max(np.abs(a - b).max() for a, b in zip(learned, single.get_weights())) > 1e-4
