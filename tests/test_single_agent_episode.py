"""Tests for SingleAgentEpisode, incl. every example of RLlib's SingleAgentEpisode docs."""

import pickle
import time

import gymnasium as gym
import numpy as np
import pytest

from tfrl.core.columns import Columns
from tfrl.env.single_agent_episode import SingleAgentEpisode
from tfrl.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer
from tfrl.utils.spaces import batch

ACTION_DICT_SPACE = gym.spaces.Dict(
    {
        "a": gym.spaces.Discrete(3),
        "b": gym.spaces.MultiDiscrete([2, 3]),
        "c": gym.spaces.Box(-1.0, 1.0, (2,)),
    }
)


def _episode(num_steps=4, **kwargs):
    """Reset obs 0, then steps t=1..n with obs t, action t, reward t/10, info {"t": t}."""
    episode = SingleAgentEpisode(**kwargs)
    episode.add_env_reset(0, {"t": 0})
    for t in range(1, num_steps + 1):
        episode.add_env_step(t, t, t / 10, {"t": t}, extra_model_outputs={"logp": -float(t)})
    return episode


def _lookback_episode(finalized=False):
    """The seed's lookback example: 3 lookback steps, ts=0 observation is 7."""
    episode = SingleAgentEpisode(
        observations=[4, 5, 6, 7, 8, 9],
        infos=[{"l": 4}, {"l": 5}, {"l": 6}, {"a": 7}, {"b": 8}, {"c": 9}],
        actions=[4, 5, 6, 7, 8],
        rewards=[4.0, 5.0, 6.0, 7.0, 8.0],
        extra_model_outputs={"a": [4, 5, 6, 7, 8]},
        len_lookback_buffer=3,
    )
    return episode.finalize() if finalized else episode


# ---- RLlib's doc examples ----------------------------------------------------------------


def test_class_example_cartpole():
    episode = SingleAgentEpisode()
    assert len(episode) == 0
    env = gym.make("CartPole-v1")
    env.action_space.seed(0)
    obs, infos = env.reset(seed=0)
    episode.add_env_reset(obs, infos)
    assert len(episode) == 0
    actions, rewards = [], []
    for _ in range(5):
        action = env.action_space.sample()
        obs, reward, term, trunc, infos = env.step(action)
        episode.add_env_step(observation=obs, action=action, reward=reward, terminated=term,
                             truncated=trunc, infos=infos)
        actions.append(action)
        rewards.append(reward)
    assert len(episode) == 5
    np.testing.assert_array_equal(episode.get_rewards(slice(-3, None)), rewards[-3:])
    np.testing.assert_array_equal(episode.rewards[-3:], rewards[-3:])
    assert episode.get_actions(-1) == actions[-1] == episode.actions[-1]
    np.testing.assert_array_equal(episode.get_observations(-1), obs)
    # From ts=0 with no lookback, all 4 previous rewards are filled.
    np.testing.assert_array_equal(
        episode.get_rewards(slice(-4, 0), neg_index_as_lookback=True, fill=0.0), [0.0] * 4)
    np.testing.assert_array_equal(
        episode.get_rewards(slice(-3, 1), neg_index_as_lookback=True, fill=0.0),
        [0.0, 0.0, 0.0, rewards[0]])


def test_class_example_prev_4_actions_connector():
    episode = SingleAgentEpisode(action_space=ACTION_DICT_SPACE)
    episode.add_env_reset(observation=0)
    episode.add_env_step(
        observation=1,
        action={"a": 0, "b": np.array([1, 2]), "c": np.array([0.5, -0.5], np.float32)},
        reward=1.0)
    episode.add_env_step(
        observation=2,
        action={"a": 2, "b": np.array([0, 0]), "c": np.array([0.1, 0.2], np.float32)},
        reward=1.0)
    prev_4_a = [
        episode.get_actions(indices=slice(ts - 4, ts), neg_index_as_lookback=True, fill=0.0,
                            one_hot_discrete=True)
        for ts in range(len(episode))
    ]
    # Before finalize() each result is a list of one-hot items (RLlib's behaviour): batch
    # each, then the per-timestep batches.
    col = batch([batch(x) for x in prev_4_a])
    assert col["a"].shape == (2, 4, 3)
    assert col["b"].shape == (2, 4, 5)
    assert col["c"].shape == (2, 4, 2)
    np.testing.assert_array_equal(col["a"][0], np.zeros((4, 3)))
    np.testing.assert_array_equal(col["a"][1], [[0, 0, 0]] * 3 + [[1, 0, 0]])
    np.testing.assert_array_equal(col["b"][1], [[0] * 5] * 3 + [[0, 1, 0, 0, 1]])
    np.testing.assert_allclose(col["c"][1], [[0, 0]] * 3 + [[0.5, -0.5]])
    # Same values once finalized.
    episode.finalize()
    out = episode.get_actions(slice(-4, 2), neg_index_as_lookback=True, fill=0.0,
                              one_hot_discrete=True)
    np.testing.assert_array_equal(out["a"], [[0, 0, 0]] * 4 + [[1, 0, 0], [0, 0, 1]])
    np.testing.assert_array_equal(out["b"][-2:], [[0, 1, 0, 0, 1], [1, 0, 1, 0, 0]])


def test_finalize_example():
    episode = SingleAgentEpisode(observations=[0, 1, 2, 3], actions=[1, 2, 3], rewards=[1, 2, 3],
                                 terminated=False, len_lookback_buffer=0)
    assert not episode.is_finalized
    assert episode.get_observations([1]) == [1]
    assert episode.get_observations(slice(None, 2)) == [0, 1]
    episode.add_env_step(observation=4, action=4, reward=4, terminated=True)
    assert not episode.is_finalized
    assert episode.finalize() is episode
    assert episode.is_finalized
    assert episode.is_terminated  # Finalizing and termination are independent.
    with pytest.raises(RuntimeError, match="finalized episode"):
        episode.add_env_step(observation=5, action=5, reward=5)
    assert isinstance(episode.get_observations([1]), np.ndarray)
    assert isinstance(episode.actions[0:2], np.ndarray)
    assert isinstance(episode.rewards[1:4], np.ndarray)
    np.testing.assert_array_equal(episode.rewards[1:4], [2, 3, 4])
    assert episode.rewards.data.dtype == np.float32
    assert isinstance(episode.infos.data, list)


@pytest.mark.parametrize("finalized", [False, True])
def test_get_observations_example(finalized):
    episode = SingleAgentEpisode(observation_space=gym.spaces.Discrete(4),
                                 observations=[0, 1, 2, 3], actions=[1, 2, 3], rewards=[1, 2, 3],
                                 len_lookback_buffer=0)
    if finalized:
        episode.finalize()
    assert episode.get_observations(-1) == 3
    assert episode.get_observations(0) == 0
    np.testing.assert_array_equal(episode.get_observations([0, 2]), [0, 2])
    np.testing.assert_array_equal(episode.get_observations([-1, 0]), [3, 0])
    np.testing.assert_array_equal(episode.get_observations(slice(None, 2)), [0, 1])
    np.testing.assert_array_equal(episode.get_observations(slice(-2, None)), [2, 3])
    np.testing.assert_array_equal(episode.get_observations(slice(-6, -2), fill=-9), [-9, -9, 0, 1])
    np.testing.assert_array_equal(episode.get_observations(slice(2, 5), fill=-7), [2, 3, -7])
    np.testing.assert_array_equal(episode.get_observations(2, one_hot_discrete=True), [0, 0, 1, 0])
    np.testing.assert_array_equal(episode.get_observations(3, one_hot_discrete=True), [0, 0, 0, 1])
    np.testing.assert_array_equal(episode.get_observations(slice(0, 3), one_hot_discrete=True),
                                  [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]])
    np.testing.assert_array_equal(
        episode.get_observations(-1, neg_index_as_lookback=True, fill=0.0, one_hot_discrete=True),
        [0, 0, 0, 0])


@pytest.mark.parametrize("finalized", [False, True])
def test_get_infos_example(finalized):
    episode = SingleAgentEpisode(infos=[{"a": 0}, {"b": 1}, {"c": 2}, {"d": 3}],
                                 observations=[0, 1, 2, 3], actions=[1, 2, 3], rewards=[1, 2, 3],
                                 len_lookback_buffer=0)
    if finalized:
        episode.finalize()
    assert episode.get_infos(-1) == {"d": 3}
    assert episode.get_infos(0) == {"a": 0}
    assert episode.get_infos([0, 2]) == [{"a": 0}, {"c": 2}]
    assert episode.get_infos([-1, 0]) == [{"d": 3}, {"a": 0}]
    assert episode.get_infos(slice(None, 2)) == [{"a": 0}, {"b": 1}]
    assert episode.get_infos(slice(-2, None)) == [{"c": 2}, {"d": 3}]
    # The seed's commented-out fill examples work: infos are filled with whole items.
    assert episode.get_infos(slice(-5, -3), fill={"o": -1}) == [{"o": -1}, {"a": 0}]
    assert episode.get_infos(slice(3, 5), fill={"o": -2}) == [{"d": 3}, {"o": -2}]


@pytest.mark.parametrize("finalized", [False, True])
def test_get_actions_example(finalized):
    episode = SingleAgentEpisode(action_space=gym.spaces.Discrete(4), actions=[1, 2, 3],
                                 observations=[0, 1, 2, 3], rewards=[1, 2, 3],
                                 len_lookback_buffer=0)
    if finalized:
        episode.finalize()
    assert episode.get_actions(-1) == 3
    assert episode.get_actions(0) == 1
    np.testing.assert_array_equal(episode.get_actions([0, 2]), [1, 3])
    np.testing.assert_array_equal(episode.get_actions([-1, 0]), [3, 1])
    np.testing.assert_array_equal(episode.get_actions(slice(None, 2)), [1, 2])
    np.testing.assert_array_equal(episode.get_actions(slice(-2, None)), [2, 3])
    np.testing.assert_array_equal(episode.get_actions(slice(-5, -2), fill=-9), [-9, -9, 1])  # filled
    np.testing.assert_array_equal(episode.get_actions(slice(1, 5), fill=-7), [2, 3, -7, -7])
    np.testing.assert_array_equal(episode.get_actions(1, one_hot_discrete=True), [0, 0, 1, 0])
    np.testing.assert_array_equal(episode.get_actions(2, one_hot_discrete=True), [0, 0, 0, 1])
    np.testing.assert_array_equal(episode.get_actions(slice(0, 2), one_hot_discrete=True),
                                  [[0, 1, 0, 0], [0, 0, 1, 0]])  # one row each
    np.testing.assert_array_equal(
        episode.get_actions(-1, neg_index_as_lookback=True, fill=0.0, one_hot_discrete=True),
        [0, 0, 0, 0])


@pytest.mark.parametrize("finalized", [False, True])
def test_get_rewards_example(finalized):
    episode = SingleAgentEpisode(rewards=[1.0, 2.0, 3.0], observations=[0, 1, 2, 3],
                                 actions=[1, 2, 3], len_lookback_buffer=0)
    if finalized:
        episode.finalize()
    assert episode.get_rewards(-1) == 3.0
    assert episode.get_rewards(0) == 1.0
    np.testing.assert_array_equal(episode.get_rewards([0, 2]), [1.0, 3.0])
    np.testing.assert_array_equal(episode.get_rewards([-1, 0]), [3.0, 1.0])
    np.testing.assert_array_equal(episode.get_rewards(slice(None, 2)), [1.0, 2.0])
    np.testing.assert_array_equal(episode.get_rewards(slice(-2, None)), [2.0, 3.0])
    # slice(-5, -2) covers 3 positions.
    np.testing.assert_array_equal(episode.get_rewards(slice(-5, -2), fill=0.0), [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(episode.get_rewards(slice(1, 5), fill=0.0), [2.0, 3.0, 0.0, 0.0])


@pytest.mark.parametrize("finalized", [False, True])
def test_get_extra_model_outputs_example(finalized):
    episode = SingleAgentEpisode(extra_model_outputs={"mo": [1, 2, 3]}, len_lookback_buffer=0,
                                 observations=[0, 1, 2, 3], actions=[1, 2, 3], rewards=[1, 2, 3])
    if finalized:
        episode.finalize()
    assert episode.get_extra_model_outputs("mo", -1) == 3
    assert episode.get_extra_model_outputs("mo", 1) == 2
    np.testing.assert_array_equal(episode.get_extra_model_outputs("mo", [0, 2]), [1, 3])
    np.testing.assert_array_equal(episode.get_extra_model_outputs("mo", [-1, 0]), [3, 1])
    np.testing.assert_array_equal(episode.get_extra_model_outputs("mo", slice(None, 2)), [1, 2])
    np.testing.assert_array_equal(episode.get_extra_model_outputs("mo", slice(-2, None)), [2, 3])
    # The seed's commented-out fill examples (shape inferred from the data).
    np.testing.assert_array_equal(
        episode.get_extra_model_outputs("mo", slice(-5, -2), fill=0), [0, 0, 1])
    np.testing.assert_array_equal(
        episode.get_extra_model_outputs("mo", slice(2, 5), fill=-1), [3, -1, -1])
    with pytest.raises(KeyError, match="Available keys: \\['mo'\\]"):
        episode.get_extra_model_outputs("nope")


@pytest.mark.parametrize("finalized", [False, True])
def test_getter_lookback_examples(finalized):
    episode = _lookback_episode(finalized)
    assert len(episode) == 2
    assert episode.get_observations(-1, neg_index_as_lookback=True) == 6
    np.testing.assert_array_equal(
        episode.get_observations(slice(-2, 1), neg_index_as_lookback=True), [5, 6, 7])
    assert episode.get_infos(-1, neg_index_as_lookback=True) == {"l": 6}
    assert episode.get_infos(slice(-2, 1), neg_index_as_lookback=True) == [
        {"l": 5}, {"l": 6}, {"a": 7}]
    assert episode.get_actions(-1, neg_index_as_lookback=True) == 6
    np.testing.assert_array_equal(
        episode.get_actions(slice(-2, 1), neg_index_as_lookback=True), [5, 6, 7])
    assert episode.get_rewards(-1, neg_index_as_lookback=True) == 6.0
    np.testing.assert_array_equal(
        episode.get_extra_model_outputs("a", slice(-2, 1), neg_index_as_lookback=True), [5, 6, 7])
    np.testing.assert_array_equal(episode.get_observations(), [7, 8, 9])
    np.testing.assert_array_equal(episode.get_actions(), [7, 8])


@pytest.mark.parametrize("finalized", [False, True])
def test_getter_fill_examples_with_lookback(finalized):
    # Seed: [10..14] with lookback 2 -> slice(-7, -2) with fill.
    episode = SingleAgentEpisode(
        observations=[10, 11, 12, 13, 14],
        infos=[{"l": 10}, {"l": 11}, {"a": 12}, {"b": 13}, {"c": 14}],
        actions=[10, 11, 12, 13], rewards=[10.0, 11.0, 12.0, 13.0],
        extra_model_outputs={"b": [10, 11, 12, 13]}, len_lookback_buffer=2)
    if finalized:
        episode.finalize()
    np.testing.assert_array_equal(episode.get_observations(slice(-7, -2), fill=0.0),
                                  [0, 0, 10, 11, 12])
    assert episode.get_infos(slice(-7, -2), fill={"o": 0.0}) == [
        {"o": 0.0}, {"o": 0.0}, {"l": 10}, {"l": 11}, {"a": 12}]
    # Actions/rewards/extra outputs hold 4 items, so slice(-7, -2) covers positions -3..1.
    np.testing.assert_array_equal(episode.get_actions(slice(-7, -2), fill=0), [0, 0, 0, 10, 11])
    np.testing.assert_array_equal(episode.get_rewards(slice(-6, -2), fill=0.0), [0, 0, 10, 11])
    np.testing.assert_array_equal(
        episode.get_extra_model_outputs("b", slice(-6, -2), fill=0.0), [0, 0, 10, 11])


@pytest.mark.parametrize("finalized", [False, True])
def test_fill_for_dict_observation_space(finalized):
    space = gym.spaces.Dict({"pos": gym.spaces.Box(-1, 1, (2,), np.float32),
                             "id": gym.spaces.Discrete(5)})
    episode = SingleAgentEpisode(observation_space=space)
    episode.add_env_reset({"pos": np.array([0.1, 0.2], np.float32), "id": 3})
    episode.add_env_step({"pos": np.array([0.3, 0.4], np.float32), "id": 4}, 0, 1.0)
    if finalized:
        episode.finalize()
    out = episode.get_observations(slice(-2, 1), neg_index_as_lookback=True, fill=0.0)
    if not finalized:
        out = batch(out)
    np.testing.assert_allclose(out["pos"], [[0, 0], [0, 0], [0.1, 0.2]])
    np.testing.assert_array_equal(out["id"], [0, 0, 3])
    hot = episode.get_observations(slice(0, 3), fill=0, one_hot_discrete=True)
    if not finalized:  # a list of one-hot items before finalize(), as in RLlib
        hot = batch(hot)
    np.testing.assert_array_equal(hot["id"], [[0, 0, 0, 1, 0], [0, 0, 0, 0, 1], [0, 0, 0, 0, 0]])


def test_one_hot_multi_discrete_observations():
    episode = SingleAgentEpisode(observation_space=gym.spaces.MultiDiscrete([2, 3]),
                                 observations=[np.array([1, 2]), np.array([0, 0])],
                                 actions=[0], rewards=[0.0], len_lookback_buffer=0)
    np.testing.assert_array_equal(episode.get_observations(one_hot_discrete=True),
                                  [[0, 1, 0, 0, 1], [1, 0, 1, 0, 0]])


def test_one_hot_without_space_raises_value_error():
    with pytest.raises(ValueError, match="space=None"):
        _episode().get_actions(0, one_hot_discrete=True)


# ---- Setters -----------------------------------------------------------------------------


@pytest.mark.parametrize("finalized", [False, True])
def test_setters_seed_examples(finalized):
    episode = _lookback_episode(finalized)
    episode.set_observations(new_data=60, at_indices=-1, neg_index_as_lookback=True)
    episode.set_actions(new_data=60, at_indices=-1, neg_index_as_lookback=True)
    episode.set_rewards(new_data=60.0, at_indices=-1, neg_index_as_lookback=True)
    episode.set_extra_model_outputs(key="a", new_data=60, at_indices=-1,
                                    neg_index_as_lookback=True)
    np.testing.assert_array_equal(episode.observations.data, [4, 5, 60, 7, 8, 9])
    np.testing.assert_array_equal(episode.actions.data, [4, 5, 60, 7, 8])
    np.testing.assert_array_equal(episode.rewards.data, [4, 5, 60, 7, 8])
    np.testing.assert_array_equal(episode.extra_model_outputs["a"].data, [4, 5, 60, 7, 8])


@pytest.mark.parametrize("finalized", [False, True])
def test_setters_lists_slices_and_all(finalized):
    episode = _episode(4)
    if finalized:
        episode.finalize()
    episode.set_rewards(new_data=[1.0, 2.0, 3.0, 4.0])
    episode.set_actions(new_data=[7, 8], at_indices=slice(-2, None))
    episode.set_observations(new_data=[9, 9], at_indices=[0, -1])
    episode.set_extra_model_outputs(key="logp", new_data=[0.5], at_indices=[1])
    np.testing.assert_array_equal(episode.get_rewards(), [1, 2, 3, 4])
    np.testing.assert_array_equal(episode.get_actions(), [1, 2, 7, 8])
    np.testing.assert_array_equal(episode.get_observations(), [9, 1, 2, 3, 9])
    np.testing.assert_array_equal(episode.get_extra_model_outputs("logp"), [-1, 0.5, -3, -4])
    with pytest.raises(IndexError, match="Received: 3 items"):
        episode.set_rewards(new_data=[1.0, 2.0, 3.0])
    with pytest.raises(IndexError, match="Received: 1 items"):
        episode.set_actions(new_data=[1], at_indices=slice(0, 2))
    with pytest.raises(IndexError, match="Index out of range"):
        episode.set_observations(new_data=1, at_indices=5)


@pytest.mark.parametrize("finalized", [False, True])
def test_set_extra_model_outputs_new_key(finalized):
    episode = _episode(3)
    if finalized:
        episode.finalize()
    episode.set_extra_model_outputs(key="vf_preds", new_data=[0.1, 0.2, 0.3])
    np.testing.assert_allclose(episode.get_extra_model_outputs("vf_preds"), [0.1, 0.2, 0.3])
    assert episode.extra_model_outputs["vf_preds"].finalized == finalized
    episode.validate()
    with pytest.raises(ValueError, match="Pass at_indices=None"):
        episode.set_extra_model_outputs(key="new", new_data=[1.0], at_indices=0)
    with pytest.raises(IndexError, match="Received: 2 items for key='new'"):
        episode.set_extra_model_outputs(key="new", new_data=[1.0, 2.0])
    assert "new" not in episode.extra_model_outputs


# ---- Construction, data entry, validation ------------------------------------------------


def test_len_lookback_buffer_auto_makes_all_provided_steps_lookback():
    episode = SingleAgentEpisode(observations=[0, 1, 2], actions=[1, 2], rewards=[0.1, 0.2])
    assert len(episode) == 0
    assert episode.observations.lookback == 2
    assert episode.get_observations(0) == 2
    assert episode.get_rewards(-1, neg_index_as_lookback=True) == 0.2
    assert episode.get_return() == 0.0
    episode.add_env_step(3, 3, 0.3)
    assert len(episode) == 1
    np.testing.assert_array_equal(episode.get_actions(slice(-3, None), neg_index_as_lookback=True),
                                  [1, 2, 3])
    # Without steps, "auto" keeps the single observation as ts=0.
    assert len(SingleAgentEpisode(observations=[5])) == 0
    assert SingleAgentEpisode(observations=[5]).get_observations(0) == 5


def test_constructor_with_int_lookback_and_buffers():
    episode = SingleAgentEpisode(observations=[0, 1, 2, 3], actions=[1, 2, 3], rewards=[1, 2, 3],
                                 len_lookback_buffer=1, t_started=10)
    assert len(episode) == 2
    assert episode.t_started == 10 and episode.env_t == 12 and episode.t == 12
    assert episode.get_infos() == [{}, {}, {}]
    episode = SingleAgentEpisode(observations=InfiniteLookbackBuffer([0, 1, 2], lookback=1),
                                 actions=InfiniteLookbackBuffer([1, 2], lookback=1),
                                 rewards=InfiniteLookbackBuffer([1.0, 2.0], lookback=1),
                                 observation_space=gym.spaces.Discrete(3))
    assert len(episode) == 1
    assert episode.infos.lookback == 1
    assert episode.observation_space == gym.spaces.Discrete(3)
    np.testing.assert_array_equal(episode.get_observations(one_hot_discrete=True),
                                  [[0, 1, 0], [0, 0, 1]])


def test_constructor_errors():
    with pytest.raises(TypeError, match="Received: id_=3"):
        SingleAgentEpisode(3)
    with pytest.raises(ValueError, match="Received: len_lookback_buffer='all'"):
        SingleAgentEpisode(len_lookback_buffer="all")
    with pytest.raises(TypeError, match="Received: len_lookback_buffer=1.5"):
        SingleAgentEpisode(len_lookback_buffer=1.5)
    with pytest.raises(ValueError, match="Received: len_lookback_buffer=-1"):
        SingleAgentEpisode(len_lookback_buffer=-1)
    with pytest.raises(ValueError, match="observations has 3 items \\(needs at least 4\\)"):
        SingleAgentEpisode(observations=[0, 1, 2], actions=[1, 2], rewards=[1, 2],
                           len_lookback_buffer=3)
    with pytest.raises(TypeError, match="Received: observations of type int"):
        SingleAgentEpisode(observations=5)
    with pytest.raises(TypeError, match="Received: extra_model_outputs=\\[1\\]"):
        SingleAgentEpisode(extra_model_outputs=[1])
    with pytest.raises(ValueError, match="Received: t_started=-1"):
        SingleAgentEpisode(t_started=-1)
    with pytest.raises(TypeError, match="Received: t_started='3'"):
        SingleAgentEpisode(t_started="3")
    with pytest.raises(ValueError, match="Received: 3 observations, 1 actions and 1 rewards"):
        SingleAgentEpisode(observations=[0, 1, 2], actions=[1], rewards=[1],
                           len_lookback_buffer=0)
    with pytest.raises(ValueError, match="Received: 2 observations but 1 infos"):
        SingleAgentEpisode(observations=[0, 1], infos=[{}], actions=[1], rewards=[1],
                           len_lookback_buffer=0)
    with pytest.raises(ValueError, match="lookback sizes"):
        SingleAgentEpisode(observations=InfiniteLookbackBuffer([0, 1, 2], lookback=1),
                           actions=[1, 2], rewards=[1, 2], len_lookback_buffer=0)
    with pytest.raises(ValueError, match="extra_model_outputs\\['x'\\] with 1 in-episode"):
        SingleAgentEpisode(observations=[0, 1, 2], actions=[1, 2], rewards=[1, 2],
                           extra_model_outputs={"x": [1]}, len_lookback_buffer=0)


def test_data_entry_and_flags():
    episode = SingleAgentEpisode(agent_id="agent0", module_id="default_policy",
                                 multi_agent_episode_id="ma")
    assert len(episode.id_) == 32 and episode.id_ != SingleAgentEpisode().id_
    assert (episode.agent_id, episode.module_id, episode.multi_agent_episode_id) == (
        "agent0", "default_policy", "ma")
    episode.add_env_reset(0)
    assert episode.get_infos(0) == {}
    assert len(episode) == 0 and episode.env_t == 0
    episode.add_env_step(1, 0, 1.0, extra_model_outputs={"logp": -0.5})
    episode.add_env_step(2, 1, 2.0, {"x": 1}, truncated=True, extra_model_outputs={"logp": -0.2})
    assert len(episode) == episode.env_steps() == episode.agent_steps() == 2
    assert episode.env_t == 2
    assert episode.is_truncated and not episode.is_terminated and episode.is_done
    assert episode.get_infos() == [{}, {}, {"x": 1}]
    assert episode.get_return() == pytest.approx(3.0)
    np.testing.assert_array_equal(episode.get_extra_model_outputs("logp"), [-0.5, -0.2])
    assert "len=2" in repr(episode) and "truncated=True" in repr(episode)


def test_terminated_and_truncated_are_kept_apart():
    episode = _episode(1)
    episode.add_env_step(2, 2, 0.2, terminated=True, extra_model_outputs={"logp": -2})
    assert episode.is_terminated and not episode.is_truncated and episode.is_done
    data = episode.get_data_dict()
    np.testing.assert_array_equal(data[Columns.TERMINATEDS], [False, True])
    np.testing.assert_array_equal(data[Columns.TRUNCATEDS], [False, False])


def test_add_env_reset_errors():
    episode = _episode(1)
    with pytest.raises(RuntimeError, match="Received: a second call"):
        episode.add_env_reset(0)
    with pytest.raises(RuntimeError, match="holds 1 observation"):
        SingleAgentEpisode(observations=[0]).add_env_reset(0)
    with pytest.raises(RuntimeError, match="is_finalized=True"):
        SingleAgentEpisode().finalize().add_env_reset(0)
    with pytest.raises(RuntimeError, match="is_terminated=True"):
        SingleAgentEpisode(terminated=True).add_env_reset(0)


def test_add_env_step_errors():
    with pytest.raises(RuntimeError, match="Call add_env_reset"):
        SingleAgentEpisode().add_env_step(1, 1, 1.0)
    done = _episode(1)
    done.add_env_step(2, 2, 0.2, terminated=True, extra_model_outputs={"logp": -2})
    with pytest.raises(RuntimeError, match="is_terminated=True, is_truncated=False"):
        done.add_env_step(3, 3, 0.3)
    truncated = _episode(1)
    truncated.add_env_step(2, 2, 0.2, truncated=True, extra_model_outputs={"logp": -2})
    with pytest.raises(RuntimeError, match="is_truncated=True"):
        truncated.add_env_step(3, 3, 0.3)
    with pytest.raises(RuntimeError, match="is_finalized=True"):
        _episode(1).finalize().add_env_step(3, 3, 0.3)
    assert len(done) == 2


def test_flags_set_by_hand_are_respected_by_add_env_step():
    episode = _episode(1)
    episode.is_terminated = True
    assert episode.is_done
    with pytest.raises(RuntimeError, match="is_terminated=True"):
        episode.add_env_step(2, 2, 0.2)
    episode.is_terminated = False
    episode.add_env_step(2, 2, 0.2, extra_model_outputs={"logp": -2.0})
    episode.is_truncated = True
    with pytest.raises(RuntimeError, match="is_truncated=True"):
        episode.add_env_step(3, 3, 0.3)
    assert len(episode) == 2
    # Data appended to the buffers by hand count as the reset.
    manual = SingleAgentEpisode()
    manual.observations.append(0)
    manual.infos.append({})
    manual.add_env_step(1, 1, 1.0)
    assert manual.get_observations() == [0, 1]


def test_inconsistent_extra_outputs_fail_validate_and_finalize():
    episode = _episode(2)
    episode.add_env_step(3, 3, 0.3)  # No "logp" for this step.
    with pytest.raises(ValueError, match="extra_model_outputs\\['logp'\\] with 2 in-episode"):
        episode.validate()
    with pytest.raises(ValueError, match="Inconsistent data"):
        episode.finalize()
    assert not episode.is_finalized


def test_extra_output_key_first_seen_in_a_chunk_with_lookback():
    successor = _episode(3).cut(len_lookback_buffer=2)
    successor.add_env_step(4, 4, 0.4, extra_model_outputs={"logp": -4, "vf": 1.0})
    successor.validate()
    np.testing.assert_array_equal(successor.get_extra_model_outputs("vf"), [1.0])
    np.testing.assert_array_equal(successor.get_extra_model_outputs("logp", slice(-2, None),
                                                                    neg_index_as_lookback=True),
                                  [-2, -3, -4])


def test_space_properties_are_settable():
    episode = _episode(2)
    episode.observation_space = gym.spaces.Discrete(5)
    episode.action_space = gym.spaces.Discrete(3)
    assert episode.observations.space == gym.spaces.Discrete(5)
    np.testing.assert_array_equal(episode.get_actions(0, one_hot_discrete=True), [0, 1, 0])


def test_get_return_excludes_lookback():
    episode = _lookback_episode()
    assert episode.get_return() == 15.0
    assert _lookback_episode(finalized=True).get_return() == 15.0


def test_get_duration_s():
    episode = SingleAgentEpisode()
    assert episode.get_duration_s() == 0.0
    episode.add_env_reset(0)
    episode.add_env_step(1, 1, 1.0)
    time.sleep(0.02)
    ongoing = episode.get_duration_s()
    assert ongoing >= 0.02
    episode.add_env_step(2, 2, 1.0, terminated=True)
    ended = episode.get_duration_s()
    assert ended >= ongoing
    time.sleep(0.01)
    assert episode.get_duration_s() == ended  # Frozen once the chunk ended.


# ---- Temporary timestep data --------------------------------------------------------------


def test_temporary_timestep_data():
    episode = _episode(2)
    episode.add_temporary_timestep_data("h", 1)
    episode.add_temporary_timestep_data("h", np.array([2]))
    assert episode.get_temporary_timestep_data("h")[0] == 1
    assert len(episode.get_temporary_timestep_data("h")) == 2
    with pytest.raises(KeyError, match="Available keys: \\['h'\\]"):
        episode.get_temporary_timestep_data("x")
    episode.finalize()
    with pytest.raises(KeyError, match="finalize\\(\\) clears it"):
        episode.get_temporary_timestep_data("h")
    with pytest.raises(RuntimeError, match="finalized episode"):
        episode.add_temporary_timestep_data("h", 3)


# ---- cut / slice / concat ----------------------------------------------------------------


def test_cut_seed_example():
    # Actions ending 5, 6, 7, 8; cut(2) keeps actions 7, 8 as lookback, t_started == 8.
    episode = _episode(8)
    successor = episode.cut(len_lookback_buffer=2)
    assert successor.id_ == episode.id_
    assert successor.t_started == successor.env_t == 8
    assert len(successor) == 0
    assert successor.actions.lookback == 2
    assert successor.get_actions(slice(-2, None)) == [7, 8]
    assert successor.get_actions(-1, neg_index_as_lookback=True) == 8
    assert successor.get_observations(0) == 8
    assert successor.get_observations(slice(-2, 1), neg_index_as_lookback=True) == [6, 7, 8]
    assert successor.get_infos(0) == {"t": 8}
    assert successor.get_rewards(slice(-2, 0), neg_index_as_lookback=True) == [0.7, 0.8]
    assert successor.get_extra_model_outputs("logp", -1, neg_index_as_lookback=True) == -8
    assert not successor.is_done and not successor.is_finalized
    successor.add_env_step(9, 9, 0.9, extra_model_outputs={"logp": -9})
    assert successor.env_t == 9 and len(successor) == 1
    assert episode.env_t == 8  # Cutting does not change the predecessor.


def test_cut_copies_and_limits_lookback_and_carries_metadata():
    episode = _episode(2, agent_id="a1", module_id="m", action_space=gym.spaces.Discrete(10))
    successor = episode.cut(len_lookback_buffer=10)  # Only 2 steps exist.
    assert successor.actions.lookback == 2
    assert successor.get_actions(slice(-10, 0), neg_index_as_lookback=True) == [1, 2]
    assert (successor.agent_id, successor.module_id) == ("a1", "m")
    assert successor.action_space == gym.spaces.Discrete(10)
    successor.get_infos(0)["t"] = 99
    assert episode.get_infos(-1) == {"t": 2}
    assert len(SingleAgentEpisode().cut()) == 0


def test_cut_of_finalized_episode_gives_list_successor():
    successor = _episode(3).finalize().cut(len_lookback_buffer=1)
    assert not successor.is_finalized
    assert successor.get_observations(slice(-1, 1), neg_index_as_lookback=True) == [2, 3]
    successor.add_env_step(4, 4, 0.4, extra_model_outputs={"logp": -4})
    assert successor.get_actions() == [4]


def test_cut_errors():
    episode = _episode(1)
    with pytest.raises(TypeError, match="Received: len_lookback_buffer=1.0"):
        episode.cut(1.0)
    with pytest.raises(ValueError, match="Received: len_lookback_buffer=-1"):
        episode.cut(-1)
    episode.add_env_step(2, 2, 0.2, terminated=True, extra_model_outputs={"logp": -2})
    with pytest.raises(RuntimeError, match="Cannot cut an episode that is done"):
        episode.cut()


@pytest.mark.parametrize("finalized", [False, True])
def test_slice_seed_example(finalized):
    episode = SingleAgentEpisode(observations=[0, 1, 2, 3, 4, 5], actions=[1, 2, 3, 4, 5],
                                 rewards=[0.1, 0.2, 0.3, 0.4, 0.5], len_lookback_buffer=0)
    if finalized:
        episode.finalize()
    slice_1 = episode[:1]
    np.testing.assert_array_equal(slice_1.get_observations(), [0, 1])
    np.testing.assert_array_equal(slice_1.get_actions(), [1])
    np.testing.assert_allclose(slice_1.get_rewards(), [0.1])
    slice_2 = episode[-2:]
    np.testing.assert_array_equal(slice_2.get_observations(), [3, 4, 5])
    np.testing.assert_array_equal(slice_2.get_actions(), [4, 5])
    np.testing.assert_allclose(slice_2.get_rewards(), [0.4, 0.5])
    assert slice_2.is_finalized == finalized
    # Doc text: o0..o4, a1..a4; slice(1, 3) -> o1, o2, o3 and a2, a3.
    text = SingleAgentEpisode(observations=["o0", "o1", "o2", "o3", "o4"],
                              actions=["a1", "a2", "a3", "a4"], rewards=[0, 0, 0, 0],
                              len_lookback_buffer=0).slice(slice(1, 3))
    assert text.get_observations() == ["o1", "o2", "o3"]
    assert text.get_actions() == ["a2", "a3"]
    assert text.t_started == 1 and len(text) == 2


def test_slice_keeps_lookback_size_and_flags():
    episode = _lookback_episode()  # Lookback 3, in-episode obs 7, 8, 9; actions 7, 8.
    episode.add_env_step(10, 9, 9.0, terminated=True, extra_model_outputs={"a": 9})
    part = episode.slice(slice(1, 2))
    assert part.observations.lookback == 3
    assert part.get_observations() == [8, 9]
    assert part.get_observations(slice(-3, 0), neg_index_as_lookback=True) == [5, 6, 7]
    assert part.get_actions() == [8]
    assert part.get_extra_model_outputs("a", -1, neg_index_as_lookback=True) == 7
    assert part.t_started == 1 and not part.is_done
    tail = episode[2:]
    assert tail.is_terminated and tail.get_actions() == [9]
    assert len(episode[3:1]) == 0


def test_slice_errors():
    episode = _episode(3)
    with pytest.raises(ValueError, match="step 2"):
        episode[::2]
    with pytest.raises(TypeError, match="Received: item=0"):
        episode[0]
    with pytest.raises(TypeError, match="Received: slice_=\\(0, 1\\)"):
        episode.slice((0, 1))


def _collected(num_steps, done_at_end=False):
    """Two chunks (3 steps, then the rest) of one env episode, plus the full episode."""
    full = SingleAgentEpisode("ep")
    full.add_env_reset(0, {"t": 0})
    chunk = full.cut()  # Shares id and reset data; collected separately.
    for t in range(1, num_steps + 1):
        done = done_at_end and t == num_steps
        for ep in (full, chunk):
            ep.add_env_step(t, t, t / 10, {"t": t}, terminated=done,
                            extra_model_outputs={"logp": -t})
        if t == 3:
            first, chunk = chunk, chunk.cut(len_lookback_buffer=2)
    return full, first, chunk


@pytest.mark.parametrize("finalize_other", [False, True])
def test_concat_episode_rebuilds_the_full_episode(finalize_other):
    full, first, second = _collected(5, done_at_end=True)
    if finalize_other:
        second.finalize()
    assert first.concat_episode(second) is None  # in place
    assert len(first) == 5 and first.env_t == 5 and first.is_terminated
    expected, actual = full.get_data_dict(), first.get_data_dict()
    assert expected.keys() == actual.keys()
    for key in expected:
        np.testing.assert_array_equal(actual[key], expected[key], err_msg=key)
    first.validate()


def test_concat_episode_errors_leave_self_unchanged():
    _, first, second = _collected(5)
    before = first.get_data_dict()

    def unchanged():
        after = first.get_data_dict()
        for key in before:
            np.testing.assert_array_equal(after[key], before[key])

    with pytest.raises(TypeError, match="Received: other of type dict"):
        first.concat_episode({})
    wrong_id = SingleAgentEpisode("other", observations=[3], t_started=3)
    with pytest.raises(ValueError, match="Received: other.id_='other'"):
        first.concat_episode(wrong_id)
    with pytest.raises(ValueError, match="Received: other.t_started=4. Expected: self.env_t=3"):
        first.concat_episode(SingleAgentEpisode("ep", observations=[3], t_started=4))
    with pytest.raises(ValueError, match="boundary observation"):
        first.concat_episode(SingleAgentEpisode("ep", observations=[99], infos=[{"t": 3}],
                                                t_started=3))
    with pytest.raises(ValueError, match="boundary info"):
        first.concat_episode(SingleAgentEpisode("ep", observations=[3], infos=[{"t": -1}],
                                                t_started=3))
    with pytest.raises(ValueError, match="both episodes to hold observations"):
        first.concat_episode(SingleAgentEpisode("ep", t_started=3))
    no_logp = SingleAgentEpisode("ep", observations=[3, 4], infos=[{"t": 3}, {}], actions=[4],
                                 rewards=[0.4], t_started=3, len_lookback_buffer=0)
    with pytest.raises(ValueError, match="extra model output keys"):
        first.concat_episode(no_logp)
    unchanged()
    first.add_env_step(4, 4, 0.4, truncated=True, extra_model_outputs={"logp": -4})
    with pytest.raises(RuntimeError, match="is_truncated=True"):
        first.concat_episode(second)
    with pytest.raises(RuntimeError, match="is_finalized=True"):
        _collected(5)[1].finalize().concat_episode(second)


def test_concat_onto_just_reset_episode_adopts_new_extra_keys():
    episode = SingleAgentEpisode("ep")
    episode.add_env_reset(0)
    other = episode.cut()
    other.add_env_step(1, 1, 1.0, extra_model_outputs={"vf": 0.5})
    episode.concat_episode(other)
    np.testing.assert_array_equal(episode.get_extra_model_outputs("vf"), [0.5])
    assert len(episode) == 1


# ---- Conversion and state -----------------------------------------------------------------


@pytest.mark.parametrize("finalized", [False, True])
def test_get_data_dict_layout(finalized):
    episode = _lookback_episode()  # Lookback data must not appear in the rows.
    episode.add_env_step(10, 9, 9.0, {"d": 10}, terminated=True, extra_model_outputs={"a": 9})
    if finalized:
        episode.finalize()
    data = episode.get_data_dict()
    assert set(data) == {Columns.EPS_ID, Columns.T, Columns.OBS, Columns.NEXT_OBS, Columns.INFOS,
                         Columns.ACTIONS, Columns.REWARDS, Columns.TERMINATEDS,
                         Columns.TRUNCATEDS, Columns.DONES, "a"}
    np.testing.assert_array_equal(data[Columns.EPS_ID], [episode.id_] * 3)
    np.testing.assert_array_equal(data[Columns.T], [0, 1, 2])
    np.testing.assert_array_equal(data[Columns.OBS], [7, 8, 9])
    np.testing.assert_array_equal(data[Columns.NEXT_OBS], [8, 9, 10])
    assert list(data[Columns.INFOS]) == [{"a": 7}, {"b": 8}, {"c": 9}]
    assert data[Columns.INFOS].dtype == object
    np.testing.assert_array_equal(data[Columns.ACTIONS], [7, 8, 9])
    np.testing.assert_array_equal(data[Columns.REWARDS], [7.0, 8.0, 9.0])
    assert data[Columns.REWARDS].dtype == np.float32
    np.testing.assert_array_equal(data[Columns.TERMINATEDS], [False, False, True])
    np.testing.assert_array_equal(data[Columns.TRUNCATEDS], [False, False, False])
    np.testing.assert_array_equal(data[Columns.DONES], [False, False, True])
    np.testing.assert_array_equal(data["a"], [7, 8, 9])


def test_get_data_dict_nested_and_empty():
    space = gym.spaces.Dict({"x": gym.spaces.Box(-1, 1, (2,), np.float32)})
    episode = SingleAgentEpisode(observation_space=space)
    episode.add_env_reset({"x": np.zeros(2, np.float32)})
    empty = episode.get_data_dict()
    assert empty[Columns.OBS]["x"].shape == (0, 2)
    assert empty[Columns.ACTIONS].shape == (0,) and empty[Columns.EPS_ID].shape == (0,)
    episode.add_env_step({"x": np.ones(2, np.float32)}, 1, 1.0)
    data = episode.get_data_dict()
    np.testing.assert_array_equal(data[Columns.OBS]["x"], [[0, 0]])
    np.testing.assert_array_equal(data[Columns.NEXT_OBS]["x"], [[1, 1]])


def test_get_sample_batch():
    episode = _episode(3)
    episode.add_env_step(4, 4, 0.4, truncated=True, extra_model_outputs={"logp": -4})
    sample_batch = episode.get_sample_batch()
    assert len(sample_batch) == 4
    np.testing.assert_array_equal(sample_batch[Columns.OBS], [0, 1, 2, 3])
    np.testing.assert_array_equal(sample_batch[Columns.NEXT_OBS], [1, 2, 3, 4])
    np.testing.assert_array_equal(sample_batch[Columns.TRUNCATEDS], [False, False, False, True])
    np.testing.assert_array_equal(sample_batch["logp"], [-1, -2, -3, -4])


@pytest.mark.parametrize("finalized", [False, True])
def test_state_round_trip_through_pickle(finalized):
    episode = _lookback_episode()
    episode.observation_space = gym.spaces.Discrete(20)
    episode.agent_id, episode.module_id = "a", "m"
    if finalized:
        episode.finalize()
    else:
        episode.add_temporary_timestep_data("h", [1])
    restored = SingleAgentEpisode.from_state(pickle.loads(pickle.dumps(episode.get_state())))
    assert restored.id_ == episode.id_
    assert (restored.agent_id, restored.module_id) == ("a", "m")
    assert restored.is_finalized == finalized
    assert restored.observation_space == gym.spaces.Discrete(20)
    assert restored.t_started == episode.t_started and len(restored) == len(episode)
    assert restored.observations.lookback == 3
    assert restored.get_duration_s() == pytest.approx(episode.get_duration_s(), abs=1.0)
    for key, value in episode.get_data_dict().items():
        np.testing.assert_array_equal(restored.get_data_dict()[key], value)
    np.testing.assert_array_equal(
        restored.get_observations(slice(-3, 0), neg_index_as_lookback=True), [4, 5, 6])
    if not finalized:
        assert restored.get_temporary_timestep_data("h") == [[1]]
        restored.add_env_step(10, 9, 9.0, extra_model_outputs={"a": 9})
        assert len(restored) == 3 and len(episode) == 2


def test_to_numpy_is_finalize_alias():
    episode = _episode(2)
    assert episode.to_numpy() is episode
    assert episode.is_finalized
    assert isinstance(episode.observations.data, np.ndarray)
    assert episode.finalize() is episode  # Idempotent.
