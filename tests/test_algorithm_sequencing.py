"""Row batches cut into RNN sequences, and recurrent PPO/A2C learning from sampled rows."""

import numpy as np
import pytest

from tfrl.algorithms.sequencing import add_sequences, sequence_lengths
from tfrl.policy.sample_batch import SampleBatch


def rows(eps_id, t, unroll_id=None):
    n = len(eps_id)
    columns = {"obs": np.arange(n, dtype=np.float32), "eps_id": np.array(eps_id),
               "t": np.array(t), "state_in_0": np.arange(n, dtype=np.float32)[:, None] * 10,
               "state_out_0": np.zeros((n, 1), np.float32)}
    if unroll_id is not None:
        columns["unroll_id"] = np.array(unroll_id)
    return SampleBatch(columns)


def test_cuts_at_episode_changes_time_breaks_and_max_len():
    # eps 7: t 0..4 (cut at 3), eps 8: t 0..1, eps 7 again but t jumps 9 -> 10 (new run)
    batch = rows([7, 7, 7, 7, 7, 8, 8, 7, 7], [0, 1, 2, 3, 4, 0, 1, 9, 10])
    assert sequence_lengths(batch, 3).tolist() == [3, 2, 2, 2]
    out = add_sequences(batch, 3)
    assert out["seq_lens"].tolist() == [3, 2, 2, 2]
    assert out["state_in_0"][:, 0].tolist() == [0.0, 30.0, 50.0, 70.0]
    assert "state_out_0" not in out
    np.testing.assert_array_equal(out["obs"], batch["obs"])
    assert out.max_seq_len == 3


def test_dict_of_columns_is_cut_by_rows():
    # A plain dict (as a policy's learn_on_batch may receive) is cut like a SampleBatch.
    columns = dict(rows([7, 7, 7, 8, 8], [0, 1, 2, 0, 1]))
    out = add_sequences(columns, 2)
    assert isinstance(out, SampleBatch)
    assert out["seq_lens"].tolist() == [2, 1, 2]
    assert out["state_in_0"][:, 0].tolist() == [0.0, 20.0, 30.0]


def test_unroll_id_change_is_a_boundary():
    batch = rows([1, 1, 1, 1], [0, 1, 2, 3], unroll_id=[0, 0, 1, 1])
    assert sequence_lengths(batch, 10).tolist() == [2, 2]


def test_sequence_batch_is_returned_unchanged():
    batch = SampleBatch({"obs": np.zeros(3), "seq_lens": np.array([3], np.int32),
                         "state_in_0": np.zeros((1, 2))})
    assert add_sequences(batch, 2) is batch


def test_max_seq_len_must_be_positive():
    with pytest.raises(ValueError, match="max_seq_len must be >= 1"):
        sequence_lengths(rows([1], [0]), 0)


@pytest.mark.slow
def test_recurrent_ppo_and_a2c_learn_from_sampled_rows():
    from tfrl.algorithms.a2c import A2C
    from tfrl.algorithms.ppo import PPO

    model = {"fcnet_hiddens": [16], "use_lstm": True, "lstm_cell_size": 8, "max_seq_len": 8}
    ppo = PPO(config={"env": "CartPole-v1", "num_envs_per_worker": 2, "seed": 1,
                      "rollout_fragment_length": 16, "train_batch_size": 64,
                      "sgd_minibatch_size": 32, "num_sgd_iter": 2, "model": model})
    for _ in range(2):
        result = ppo.train()
    policy = ppo.get_policy()
    assert np.isfinite(result["info"]["learner"]["default_policy"]["learner_stats"]["total_loss"])
    assert policy.num_traces["learn_on_batch"] == 1
    action, state, _ = ppo.compute_single_action(np.zeros(4, np.float32),
                                                 state=policy.get_initial_state())
    # [h, c] of the policy's LSTM and of the value's own LSTM (vf_share_layers=False).
    assert action in (0, 1) and [s.shape for s in state] == [(8,)] * 4
    ppo.stop()
    a2c = A2C(config={"env": "CartPole-v1", "num_envs_per_worker": 2, "seed": 1,
                      "rollout_fragment_length": 16, "train_batch_size": 64,
                      "microbatch_size": 32, "min_iter_time_s": 0, "model": model})
    assert a2c.train()["timesteps_total"] == 64
    a2c.stop()
