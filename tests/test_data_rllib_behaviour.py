"""tfrl's own tests for the RLlib behaviours added in issue 28 (data classes) and for the
error messages that came with them; RLlib's ported tests are in tests/rllib_compat/."""

import json

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from tfrl.data.rnn_sequencing import chop_into_sequences, pad_batch_to_sequences_of_same_size
from tfrl.data.single_agent_episode import EpisodeMismatchError, EpisodeStateError
from tfrl.env.single_agent_episode import SingleAgentEpisode
from tfrl.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer
from tfrl.policy.rnn_sequencing import add_time_dimension
from tfrl.policy.sample_batch import MultiAgentBatch, SampleBatch, attempt_count_timesteps
from tfrl.utils.serialization import gym_space_from_dict, gym_space_to_dict
from tfrl.utils.spaces.flexdict import FlexDict
from tfrl.utils.spaces.repeated import Repeated
from tfrl.utils.spaces.simplex import Simplex
from tfrl.utils.spaces.space_utils import (
    clip_action,
    convert_element_to_space_type,
    get_dummy_batch_for_space,
)


# ---- SampleBatch / MultiAgentBatch ---------------------------------------------------------

def test_infos_and_states_alone_count_no_timesteps_until_a_counted_column_arrives():
    b = SampleBatch({"infos": np.array([{}, {}, {}]), "state_in_0": np.zeros((3, 2))})
    assert b.count == 0 and attempt_count_timesteps(dict(b)) == 0
    b["obs"] = np.zeros((3, 4))
    assert b.count == 3 == len(b)
    with pytest.raises(ValueError, match="column 'obs' has 2 rows but"):
        SampleBatch({"obs": np.zeros(2), "seq_lens": [1, 2]})


def test_attempt_count_timesteps_skips_scalars_and_empty_columns():
    assert attempt_count_timesteps({"flag": True, "a": np.zeros(0), "b": [1, 2]}) == 2
    assert attempt_count_timesteps({"seq_lens": np.array([2, 2]), "obs": np.zeros(3)}) == 4


def test_timeslices_refuse_rnn_states_of_sequence_batches():
    rows = SampleBatch({"t": [0, 1], "eps_id": [0, 0], "agent_index": [0, 0],
                        "seq_lens": [2], "state_in_0": np.zeros((1, 3))})
    with pytest.raises(ValueError, match=r"policy 'p' holds RNN states \('state_in_0'"):
        MultiAgentBatch({"p": rows}, 2).timeslices(1)


def test_set_padded_sequences_checks_row_counts():
    b = SampleBatch({"a": [1, 2, 3], "seq_lens": [1, 2]})
    with pytest.raises(ValueError, match=r"column 'a' has 3 rows; expected 4 \(2 sequences x "
                                         r"max_seq_len=2\)"):
        b.set_padded_sequences({"a": np.zeros(3)}, {}, [1, 2], 2)
    with pytest.raises(ValueError, match="state column 'state_in_0' has 3 rows; expected one "
                                         r"per sequence \(2\)"):
        b.set_padded_sequences({}, {"state_in_0": np.zeros(3)}, [1, 2], 2)
    b.set_padded_sequences({"a": np.array([1, 0, 2, 3])}, {}, [1, 2], 2)
    assert b.zero_padded and b.max_seq_len == 2 and b.count == 3


# ---- rnn_sequencing ------------------------------------------------------------------------

def test_chop_into_sequences_last_padding_shuffle_and_errors():
    feats, _, lens = chop_into_sequences(feature_columns=[[1, 2, 3]], state_columns=[],
                                         max_seq_len=2, episode_ids=[0, 0, 0], padding="last")
    assert feats[0].tolist() == [1, 2, 3, 3] and lens.tolist() == [2, 1]
    np.random.seed(0)
    feats, states, lens = chop_into_sequences(
        feature_columns=[[1, 2, 3]], state_columns=[[10, 20, 30]], max_seq_len=2,
        episode_ids=[0, 0, 1], shuffle=True, dynamic_max=False)
    pairs = sorted(zip(lens.tolist(), states[0].tolist(), feats[0].reshape(2, 2).tolist()))
    assert pairs == [(1, 30, [3, 0]), (2, 10, [1, 2])]
    with pytest.raises(ValueError, match="must be 'zero' or 'last'; received 'mean'"):
        chop_into_sequences(feature_columns=[[1]], state_columns=[], max_seq_len=1,
                            padding="mean")
    with pytest.raises(ValueError, match="needs feature columns or `seq_lens`"):
        chop_into_sequences(feature_columns=[], state_columns=[], max_seq_len=1)


def test_pad_batch_by_episode_ids_and_divisibility():
    b = SampleBatch({"obs": np.arange(5), "eps_id": [0, 0, 0, 1, 1],
                     "state_in_0": np.arange(5.0)})
    pad_batch_to_sequences_of_same_size(b, max_seq_len=2)
    assert b["seq_lens"].tolist() == [2, 1, 2] and b["state_in_0"].tolist() == [0.0, 2.0, 3.0]
    assert b["obs"].tolist() == [0, 1, 2, 0, 3, 4] and b.max_seq_len == 2 and len(b) == 5
    plain = SampleBatch({"obs": np.arange(3)})
    pad_batch_to_sequences_of_same_size(plain, max_seq_len=4, batch_divisibility_req=2)
    assert plain["obs"].tolist() == [0, 1, 2, 0] and plain["seq_lens"].tolist() == [2, 1]
    untouched = SampleBatch({"obs": np.arange(4)})
    pad_batch_to_sequences_of_same_size(untouched, max_seq_len=4, batch_divisibility_req=2)
    assert not untouched.zero_padded and "seq_lens" not in untouched


def test_add_time_dimension_refuses_other_frameworks():
    with pytest.raises(ValueError, match="must be 'tf' or 'tf2' in tfrl; received 'torch'"):
        add_time_dimension(tf.zeros((4, 2)), seq_lens=[2, 2], framework="torch")


# ---- InfiniteLookbackBuffer ----------------------------------------------------------------

@pytest.mark.parametrize("finalized", [False, True])
def test_buffer_pop_setitem_and_eq(finalized):
    buffer = InfiniteLookbackBuffer([0, 1, 2, 3], lookback=1)
    other = InfiniteLookbackBuffer([0, 1, 2, 3], lookback=1)
    if finalized:
        buffer.finalize()
        other.finalize()
    assert buffer == other and buffer != InfiniteLookbackBuffer([0, 1, 2, 3], lookback=2)
    assert buffer != [0, 1, 2, 3]
    buffer[0] = 7
    assert buffer.get(0) == 7 and buffer != other
    buffer.pop()
    assert len(buffer) == 2 and buffer.get(-1) == 2
    buffer.pop(0)
    assert buffer.len_incl_lookback() == 2
    with pytest.raises(IndexError, match=r"pop index out of range. Received: index=5 for a "
                                         r"buffer holding 2 items"):
        buffer.pop(5)
    with pytest.raises(TypeError, match="unhashable"):
        hash(buffer)


def test_buffer_casts_only_values_that_survive_the_cast():
    buffer = InfiniteLookbackBuffer([1, 2, 3])
    buffer.finalize()
    buffer.set(7.0, at_indices=0)
    buffer[1:3] = np.array([8.0, 9.0])
    assert buffer.data.dtype == np.int64 and buffer.data.tolist() == [7, 8, 9]
    with pytest.raises(TypeError, match="Received: dtype float64 for stored dtype int64"):
        buffer.set(np.array([1e30]), at_indices=[0])


# ---- SingleAgentEpisode --------------------------------------------------------------------

def test_episode_errors_are_also_assertion_errors_as_in_rllib():
    episode = SingleAgentEpisode("ep", observations=[0, 1], actions=[0], rewards=[0.0],
                                 len_lookback_buffer=0)
    with pytest.raises(EpisodeMismatchError, match="can only be set as a whole"):
        episode.set_extra_model_outputs(key="new", new_data=1, at_indices=0)
    assert issubclass(EpisodeMismatchError, ValueError)
    assert issubclass(EpisodeMismatchError, AssertionError)
    episode.is_terminated = True
    with pytest.raises(EpisodeStateError, match="is_terminated=True"):
        episode.concat_episode(episode)  # checked first: self is done
    assert issubclass(EpisodeStateError, RuntimeError)


def test_episode_custom_data_and_step_times_survive_state_round_trip():
    episode = SingleAgentEpisode()
    assert episode.custom_data == {} and episode._last_step_time is None
    episode.add_env_reset(0)
    episode.add_env_step(1, 0, 1.0)
    episode.custom_data["note"] = [1, 2]
    restored = SingleAgentEpisode.from_state(episode.get_state())
    assert restored.custom_data == {"note": [1, 2]}
    assert restored._last_step_time == episode._last_step_time >= episode._start_time
    assert restored.is_numpy is False and episode.to_numpy().is_numpy is True


# ---- spaces --------------------------------------------------------------------------------

def test_get_dummy_batch_for_space_shapes_and_errors():
    space = gym.spaces.Dict({"d": gym.spaces.Discrete(3),
                             "m": gym.spaces.MultiDiscrete([2, 2])})
    out = get_dummy_batch_for_space(space, batch_size=2, time_size=4, one_hot_discrete=True)
    assert out["d"].shape == (2, 4, 3) and out["m"].shape == (2, 4, 4)
    assert get_dummy_batch_for_space(space["d"], 2, time_size=3, time_major=True).shape == (3, 2)
    space.seed(0)
    random = get_dummy_batch_for_space(space, batch_size=5, fill_value="random")
    assert random["m"].shape == (5, 2) and set(random["d"].tolist()) <= {0, 1, 2}
    with pytest.raises(ValueError, match=r"needs batch_size >= 1 and time_size >= 1. "
                                         r"Received: batch_size=0, time_size=2"):
        get_dummy_batch_for_space(space, batch_size=0, time_size=2)


def test_convert_element_to_space_type_and_clip_action():
    with pytest.raises(ValueError, match="must be a numpy array where the space's sample has"):
        convert_element_to_space_type({"a": 0.5}, {"a": np.zeros(2, np.float32)})
    assert convert_element_to_space_type(2.0, np.int64(0)) == 2
    np.testing.assert_array_equal(clip_action(np.array([2.0, -3.0]), gym.spaces.Box(-1, 1, (2,))),
                                  [1.0, -1.0])


def test_space_dicts_round_trip_through_json_and_reject_unknown_input():
    space = gym.spaces.Dict({
        "box": gym.spaces.Box(-np.inf, np.inf, (2,), np.float32),
        "tuple": gym.spaces.Tuple([gym.spaces.Discrete(3, start=1), gym.spaces.MultiBinary(4),
                                   gym.spaces.MultiDiscrete([2, 5])]),
    })
    assert gym_space_from_dict(json.loads(json.dumps(gym_space_to_dict(space)))) == space
    with pytest.raises(TypeError, match="cannot serialize a Graph space"):
        gym_space_to_dict(gym.spaces.Graph(gym.spaces.Discrete(2), None))
    text = gym.spaces.Text(5, charset="ab")
    assert gym_space_from_dict(json.loads(json.dumps(gym_space_to_dict(text)))) == text
    with pytest.raises(ValueError, match="with a 'space' key"):
        gym_space_from_dict({"space": "graph"})


def test_rllib_spaces_sample_contain_and_check_arguments():
    simplex = Simplex((2, 3), concentration=np.array([1.0, 50.0]), seed=0)
    sample = simplex.sample()
    assert simplex.contains(sample) and not simplex.contains(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"one value per simplex entry \(shape \(3,\)\) or one "
                                         r"per simplex \(shape \(2,\)\); received shape \(4,\)"):
        Simplex((2, 3), concentration=np.ones(4))
    repeated = Repeated(gym.spaces.Discrete(2), max_len=3, seed=0)
    assert repeated.contains(repeated.sample()) and not repeated.contains([0, 1, 1, 0])
    with pytest.raises(ValueError, match=r"max_len=\.\.\.\) must be an int >= 1; received 0"):
        Repeated(gym.spaces.Discrete(2), max_len=0)
    with pytest.raises(TypeError, match="needs a gymnasium space; received int"):
        Repeated(3, max_len=2)
    flex = FlexDict()
    flex["x"] = gym.spaces.Discrete(2)
    assert gym_space_from_dict(gym_space_to_dict(flex)) == flex
