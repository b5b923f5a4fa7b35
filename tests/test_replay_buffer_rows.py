"""Tests of n-step transitions and sequence items (tfrl.execution.replay_buffer_rows)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfrl.execution.replay_buffer_rows import (adjust_nstep, from_sequence_items, piece_ends,
                                               to_sequence_items)
from tfrl.policy.sample_batch import SampleBatch


def _episodes():
    # Episode 0 (rows 0-3) terminates; episode 1 (rows 4-6) is truncated; episode 2 (rows
    # 7-8) is cut by an eps_id change without a flag; episode 3 (row 9) by the batch end.
    return SampleBatch({
        "obs": np.arange(10.0),
        "new_obs": np.arange(10.0) + 100.0,
        "actions": np.arange(10),
        "rewards": np.array([1, 2, 3, 4, 10, 20, 30, 5, 6, 7], np.float32),
        "terminateds": np.array([0, 0, 0, 1, 0, 0, 0, 0, 0, 0], bool),
        "truncateds": np.array([0, 0, 0, 0, 0, 0, 1, 0, 0, 0], bool),
        "dones": np.array([0, 0, 0, 1, 0, 0, 1, 0, 0, 0], bool),
        "eps_id": np.array([0, 0, 0, 0, 1, 1, 1, 2, 2, 3]),
    })


def test_piece_ends():
    assert piece_ends(_episodes()).tolist() == [3, 3, 3, 3, 6, 6, 6, 8, 8, 9]
    no_ids = SampleBatch({"rewards": np.zeros(4), "truncateds": [False, True, False, False]})
    assert piece_ends(no_ids).tolist() == [1, 1, 3, 3]


def test_n_step_returns_across_terminations_truncations_and_cuts_by_hand():
    batch = _episodes()
    adjust_nstep(3, 0.5, batch)
    # Episode 0: 1 + .5*2 + .25*3, 2 + .5*3 + .25*4, 3 + .5*4, 4 (stops at the termination)
    # Episode 1: 10 + .5*20 + .25*30, 20 + .5*30, 30 (stops at the truncation)
    # Episode 2: 5 + .5*6, 6; episode 3: 7.
    np.testing.assert_allclose(batch["rewards"],
                               [2.75, 4.5, 5.0, 4.0, 27.5, 35.0, 30.0, 8.0, 6.0, 7.0])
    assert batch["rewards"].dtype == np.float32
    assert batch["n_step"].tolist() == [3, 3, 2, 1, 3, 2, 1, 2, 1, 1]
    # The bootstrap observation is that of the transition's last step.
    assert batch["new_obs"].tolist() == [102.0, 103.0, 103.0, 103.0, 106.0, 106.0, 106.0,
                                         108.0, 108.0, 109.0]
    # A termination reached stops bootstrapping; a truncation keeps it (terminated False).
    assert batch["terminateds"].tolist() == [False, True, True, True] + [False] * 6
    assert batch["truncateds"].tolist() == [False] * 4 + [True] * 3 + [False] * 3
    assert batch["dones"].tolist() == [False, True, True, True, True, True, True,
                                       False, False, False]
    # The rest of the row is left as it was.
    assert batch["obs"].tolist() == list(np.arange(10.0))
    assert batch["actions"].tolist() == list(range(10))


def test_n_step_one_only_adds_the_column_and_nested_new_obs_follows():
    batch = _episodes()
    adjust_nstep(1, 0.99, batch)
    assert batch["rewards"].tolist() == [1, 2, 3, 4, 10, 20, 30, 5, 6, 7]
    assert batch["n_step"].tolist() == [1] * 10
    nested = SampleBatch({"new_obs": {"a": np.arange(3.0), "b": np.arange(6.0).reshape(3, 2)},
                          "rewards": np.array([1, 1, 1]), "dones": [False, False, False]})
    adjust_nstep(5, 1.0, nested)
    assert nested["rewards"].tolist() == [3.0, 2.0, 1.0]
    assert nested["rewards"].dtype == np.float32  # int rewards become float32 returns
    assert nested["new_obs"]["a"].tolist() == [2.0, 2.0, 2.0]
    assert nested["new_obs"]["b"].tolist() == [[4.0, 5.0]] * 3


def test_n_step_errors():
    with pytest.raises(ValueError, match=r"adjust_nstep\(n_step=...\) must be an int >= 1; "
                                         "received 0"):
        adjust_nstep(0, 0.9, _episodes())
    with pytest.raises(ValueError, match=r"the batch lacks column\(s\) \['new_obs', "
                                         r"'terminateds'\]; n-step transitions need"):
        adjust_nstep(2, 0.9, SampleBatch({"rewards": np.zeros(2)}))


def test_sequence_items_round_trip():
    batch = SampleBatch({"obs": np.arange(5.0), "seq_lens": [2, 3],
                         "state_in_0": np.array([[1.0], [2.0]])})
    items = to_sequence_items(batch, max_seq_len=4, zero_init_states=False)
    assert items["obs"].tolist() == [[0.0, 1.0, 0.0, 0.0], [2.0, 3.0, 4.0, 0.0]]
    assert items["seq_lens"].tolist() == [2, 3] and items["state_in_0"].tolist() == [[1.0], [2.0]]
    out = from_sequence_items(items, 4, {"weights": np.array([0.5, 1.0])})
    assert out.count == 5 and out.zero_padded and out.max_seq_len == 4
    assert out["weights"].tolist() == [0.5] * 4 + [1.0] * 4
    with pytest.raises(ValueError, match="received a zero-padded sequence batch"):
        to_sequence_items(out, 4)


def _nstep_by_loop(n_step, gamma, rewards, terminated, truncated, eps_id, new_obs):
    """The n-step transitions row by row, as the definition reads."""
    n = len(rewards)
    out = {"rewards": [], "new_obs": [], "terminateds": [], "truncateds": [], "n_step": []}
    for t in range(n):
        total, k = 0.0, 0
        while k < n_step and t + k < n:
            total += gamma ** k * rewards[t + k]
            k += 1
            last = t + k - 1
            if terminated[last] or truncated[last] or (last + 1 < n and
                                                       eps_id[last + 1] != eps_id[last]):
                break
        out["rewards"].append(total)
        out["new_obs"].append(new_obs[t + k - 1])
        out["terminateds"].append(terminated[t + k - 1])
        out["truncateds"].append(truncated[t + k - 1])
        out["n_step"].append(k)
    return out


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(n_step=st.integers(1, 6), rows=st.integers(1, 40), data=st.data())
def test_vectorized_n_step_matches_a_row_by_row_loop(n_step, rows, data):
    flags = st.lists(st.booleans(), min_size=rows, max_size=rows)
    rewards = np.asarray(data.draw(st.lists(st.integers(-3, 3), min_size=rows,
                                            max_size=rows)), np.float64)
    terminated = np.asarray(data.draw(flags))
    truncated = np.asarray(data.draw(flags)) & ~terminated
    eps_id = np.cumsum(data.draw(flags))  # a new episode id where True
    new_obs = np.arange(rows) + 100.0
    batch = SampleBatch({"rewards": rewards, "terminateds": terminated,
                         "truncateds": truncated, "eps_id": eps_id, "new_obs": new_obs})
    adjust_nstep(n_step, 0.5, batch)
    expected = _nstep_by_loop(n_step, 0.5, rewards, terminated, truncated, eps_id, new_obs)
    for key, values in expected.items():
        np.testing.assert_allclose(np.asarray(batch[key], np.float64),
                                   np.asarray(values, np.float64), err_msg=key)
