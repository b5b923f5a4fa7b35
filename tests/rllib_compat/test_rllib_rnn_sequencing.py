"""RLlib's own RNN-sequencing tests, ported to tfrl.

Ported from `rllib/policy/tests/test_rnn_sequencing.py` at ray-project/ray commit
3ec7f770e6dbc5e1a2906e6d1c7cc16adff1cb6c. Covers: test_chop_into_sequences_long_seq,
test_pad_batch_dynamic_max, test_pad_batch_fixed_max, test_add_time_dimension (its torch
half dropped; the TensorFlow time-major case is checked as well).

numpy's global RNG is seeded (RLlib's draws are unseeded).
"""

import numpy as np

from compat_helpers import check
from tfrl.policy.rnn_sequencing import (
    add_time_dimension,
    chop_into_sequences,
    pad_batch_to_sequences_of_same_size,
)
from tfrl.policy.sample_batch import SampleBatch
from tfrl.policy.view_requirement import ViewRequirement

RLLIB_PATH = "rllib/policy/tests/test_rnn_sequencing.py"
RLLIB_COMMIT = "3ec7f770e6dbc5e1a2906e6d1c7cc16adff1cb6c"


def test_chop_into_sequences_long_seq():
    """An episode longer than max_seq_len is split into two sequences."""
    max_seq_len = 2
    ep_ids = [0, 0, 1, 1, 1, 2]
    unroll_ids = [2, 2, 3, 3, 3, 4]
    feats = [[1, 1, 2, 2, 2, 3]]
    # states[3] is the input state at t=3 (the output state at t=2).
    states = [[1, 2, 3, 4, 5, 6]]
    agent = [0, 0, 0, 0, 0, 0]
    expected_f_pad = [[1, 1, 2, 2, 2, 0, 3, 0]]
    expected_seq_lens = [2, 2, 1, 1]
    expected_states = [[1, 3, 5, 6]]
    for dynamic_max in (False, True):
        f_pad, s_init, s_lens = chop_into_sequences(
            feature_columns=feats, state_columns=states, max_seq_len=max_seq_len,
            episode_ids=ep_ids, unroll_ids=unroll_ids, agent_indices=agent,
            dynamic_max=dynamic_max)
        check(f_pad, expected_f_pad)
        check(s_lens, expected_seq_lens)
        check(s_init, expected_states)


def test_pad_batch_dynamic_max():
    """With states, the batch is padded to its longest sequence."""
    np.random.seed(0)
    view_requirements = {
        "state_in_0": ViewRequirement("state_out_0", shift=[-1], used_for_training=False,
                                      used_for_compute_actions=True, batch_repeat_value=1)
    }
    max_seq_len = 20
    num_seqs = np.random.randint(1, 20)
    seq_lens = np.random.randint(1, max_seq_len, size=(num_seqs))
    max_len = np.max(seq_lens)
    sum_seq_lens = np.sum(seq_lens)

    s1 = SampleBatch({
        "a": np.arange(sum_seq_lens),
        "b": np.arange(sum_seq_lens),
        "seq_lens": seq_lens,
        "state_in_0": [[0]] * num_seqs,
    }, _max_seq_len=max_seq_len)

    pad_batch_to_sequences_of_same_size(s1, max_seq_len=max_seq_len, feature_keys=["a", "b"],
                                        view_requirements=view_requirements)
    check(s1.max_seq_len, max_len)
    check(s1["a"].shape[0], max_len * num_seqs)
    check(s1["b"].shape[0], max_len * num_seqs)


def test_pad_batch_fixed_max():
    """States over a range of steps (attention nets): padded to max_seq_len."""
    np.random.seed(1)
    view_requirements = {
        "state_in_0": ViewRequirement("state_out_0", shift="-3:-1", used_for_training=False,
                                      used_for_compute_actions=True, batch_repeat_value=1)
    }
    max_seq_len = 20
    num_seqs = np.random.randint(1, 20)
    seq_lens = np.random.randint(1, max_seq_len, size=(num_seqs))
    sum_seq_lens = np.sum(seq_lens)
    s1 = SampleBatch({
        "a": np.arange(sum_seq_lens),
        "b": np.arange(sum_seq_lens),
        "seq_lens": seq_lens,
        "state_in_0": [[0]] * num_seqs,
    }, _max_seq_len=max_seq_len)

    pad_batch_to_sequences_of_same_size(s1, max_seq_len=max_seq_len, feature_keys=["a", "b"],
                                        view_requirements=view_requirements)
    check(s1.max_seq_len, max_seq_len)
    check(s1["a"].shape[0], max_seq_len * num_seqs)
    check(s1["b"].shape[0], max_seq_len * num_seqs)


def test_add_time_dimension():
    """add_time_dimension gives sequences along the time axis."""
    np.random.seed(0)
    B, T, F = np.random.choice(np.asarray(list(range(8, 32)), dtype=np.int32), size=3,
                               replace=False)

    inputs_numpy = np.repeat(np.arange(B * T)[:, np.newaxis], repeats=F, axis=-1).astype(np.int32)
    check(inputs_numpy.shape, (B * T, F))
    seq_lens = np.random.randint(1, T + 1, (B,))

    time_shift_diff_batch_major = np.ones(shape=(B, T - 1, F), dtype=np.int32)
    time_shift_diff_time_major = np.ones(shape=(T - 1, B, F), dtype=np.int32)

    import tensorflow as tf

    padded_inputs = tf.constant(inputs_numpy)
    batch_major_outputs = add_time_dimension(padded_inputs, seq_lens=seq_lens, framework="tf",
                                             time_major=False)
    check(batch_major_outputs.shape.as_list(), [B, T, F])
    time_shift_diff = batch_major_outputs[:, 1:] - batch_major_outputs[:, :-1]
    check(time_shift_diff, time_shift_diff_batch_major)

    time_major_outputs = add_time_dimension(padded_inputs, seq_lens=seq_lens, framework="tf",
                                            time_major=True)
    check(time_major_outputs.shape.as_list(), [T, B, F])
    time_shift_diff = time_major_outputs[1:] - time_major_outputs[:-1]
    check(time_shift_diff, time_shift_diff_time_major)
