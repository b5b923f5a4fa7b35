"""RLlib's own SingleAgentEpisode tests, ported to tfrl.

Ported from `rllib/env/tests/test_single_agent_episode.py` of ray-project/ray, the RLlib 2.x
revision with `is_numpy`, `custom_data` and `test_setters` (the library stores it without a
commit id, as file id 2107829309; the only commit the library names for this path,
cbd696e980a700a88799aea8e43cde67cdc25431, holds an older revision of the same tests, with
`finalize()`/`is_finalized` and `neg_indices_left_of_zero`). Covers: test_init,
test_add_env_reset, test_add_env_step, test_getters, test_cut, test_slice,
test_concat_episode, test_concat_episode_with_complex_obs, test_get_and_from_state,
test_setters, test_setters_error_cases.

Environments are seeded (RLlib's are not) so that runs are reproducible.
"""

import copy
from collections import defaultdict
from typing import Any, Dict, Optional

import gymnasium as gym
import numpy as np
import pytest

from compat_helpers import check
from tfrl.env.single_agent_episode import SingleAgentEpisode

RLLIB_PATH = "rllib/env/tests/test_single_agent_episode.py"
RLLIB_COMMIT = "cbd696e980a700a88799aea8e43cde67cdc25431"


class TestEnv(gym.Env):
    """Observation and reward t at step t; terminates at t == 200."""

    __test__ = False  # not a pytest test class

    def __init__(self):
        self.observation_space = gym.spaces.Discrete(201)
        self.action_space = gym.spaces.Discrete(200)
        self.t = 0

    def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None):
        self.t = 0
        return 0, {}

    def step(self, action):
        self.t += 1
        return self.t, self.t, self.t == 200, False, {}


class DictTestEnv(gym.Env):
    """Random Dict observations, never done."""

    def __init__(self, obs_space=gym.spaces.Dict(
            a=gym.spaces.Discrete(10), b=gym.spaces.Box(0, 1, shape=(1,)))):
        self.observation_space = obs_space
        self.action_space = gym.spaces.Discrete(10)
        self.observation_space.seed(0)

    def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None):
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}


def _create_episode(num_data, t_started=None, len_lookback_buffer=0):
    """An episode of `num_data` CartPole steps (seeded) with two extra model outputs."""
    env = gym.make("CartPole-v1")
    env.action_space.seed(0)
    rng = np.random.default_rng(0)
    observations, rewards, actions, infos = [], [], [], []
    extra_model_outputs = defaultdict(list)

    init_obs, init_info = env.reset(seed=0)
    observations.append(init_obs)
    infos.append(init_info)
    for _ in range(num_data):
        action = env.action_space.sample()
        obs, reward, _, _, info = env.step(action)
        observations.append(obs)
        actions.append(action)
        rewards.append(reward)
        infos.append(info)
        extra_model_outputs["extra_1"].append(rng.random())
        extra_model_outputs["state_out"].append(rng.random())

    return SingleAgentEpisode(
        observations=observations,
        infos=infos,
        actions=actions,
        rewards=rewards,
        extra_model_outputs=extra_model_outputs,
        t_started=t_started,
        len_lookback_buffer=len_lookback_buffer,
    )


def _fill(episode, env, actions):
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        episode.add_env_step(
            observation=obs, action=action, reward=reward, infos=info, terminated=terminated,
            truncated=truncated, extra_model_outputs={"extra": np.random.random(1)})


def test_init():
    """Empty episodes, one with `t_started`, and episodes built from collected data."""
    episode = SingleAgentEpisode()
    assert episode.t_started == episode.t == 0

    episode = SingleAgentEpisode(t_started=10)
    assert episode.t == episode.t_started == 10

    episode = _create_episode(num_data=100)
    assert len(episode) == 100
    assert episode.t == 100
    assert episode.t_started == 0

    # The first 10 steps are lookback data.
    episode = _create_episode(num_data=100, len_lookback_buffer=10)
    assert len(episode) == 90
    assert episode.t_started == 0
    assert episode.t == 90
    assert len(episode.rewards) == 90
    assert len(episode.rewards.data) == 100

    # Lookback and `t_started`.
    episode = _create_episode(num_data=100, len_lookback_buffer=10, t_started=50)
    assert len(episode) == 90
    assert episode.t_started == 50
    assert episode.t == 140
    assert len(episode.rewards) == 90
    assert len(episode.rewards.data) == 100


def test_add_env_reset():
    """The reset observation and info are stored; the timestep stays 0."""
    episode = SingleAgentEpisode()
    env = gym.make("CartPole-v1")

    obs, info = env.reset(seed=0)
    episode.add_env_reset(observation=obs, infos=info)

    assert len(episode.observations) == 1
    assert len(episode.infos) == 1
    assert episode.t == episode.t_started == 0


def test_add_env_step():
    """Steps grow every column and the timestep; done flags are stored."""
    np.random.seed(0)
    episode = SingleAgentEpisode(len_lookback_buffer=10)
    env = gym.make("CartPole-v1")
    env.action_space.seed(0)
    obs, info = env.reset(seed=0)
    episode.add_env_reset(observation=obs, infos=info)

    terminated = truncated = False
    for i in range(100):
        action = env.action_space.sample()
        obs, reward, terminated, truncated, info = env.step(action)
        episode.add_env_step(
            observation=obs, action=action, reward=reward, infos=info, terminated=terminated,
            truncated=truncated, extra_model_outputs={"extra": np.random.random(1)})
        if terminated or truncated:
            break

    assert episode.t == len(episode.observations) - 1 == i + 1
    assert episode.t_started == 0
    assert (len(episode.actions) == len(episode.rewards) == len(episode.observations) - 1
            == len(episode.infos) - 1 == i + 1)
    assert episode.is_terminated == terminated
    assert episode.is_truncated == truncated
    assert episode.is_done == (terminated or truncated)


def test_getters():
    """get_observations/get_actions/get_rewards with ints, lists and slices."""
    episode = SingleAgentEpisode(
        observations=[0, 1, 2, 3, 4, 5, 6],
        actions=[0, 1, 2, 3, 4, 5],
        rewards=[0.0, 0.1, 0.2, 0.3, 0.4, 0.5],
        len_lookback_buffer=0,
    )
    check(episode.get_observations(0), 0)
    check(episode.get_observations([0, 1]), [0, 1])
    check(episode.get_observations([-1]), [6])
    check(episode.get_observations(-2), 5)
    check(episode.get_observations(slice(1, 3)), [1, 2])
    check(episode.get_observations(slice(-3, None)), [4, 5, 6])

    check(episode.get_actions(0), 0)
    check(episode.get_actions([0, 1]), [0, 1])
    check(episode.get_actions([-1]), [5])
    check(episode.get_actions(-2), 4)
    check(episode.get_actions(slice(1, 3)), [1, 2])
    check(episode.get_actions(slice(-3, None)), [3, 4, 5])

    check(episode.get_rewards(0), 0.0)
    check(episode.get_rewards([0, 1]), [0.0, 0.1])
    check(episode.get_rewards([-1]), [0.5])
    check(episode.get_rewards(-2), 0.4)
    check(episode.get_rewards(slice(1, 3)), [0.1, 0.2])
    check(episode.get_rewards(slice(-3, None)), [0.3, 0.4, 0.5])


def test_cut():
    """cut() gives a successor that continues the episode and owns its data."""
    np.random.seed(0)
    episode_1 = SingleAgentEpisode()
    env = TestEnv()
    init_obs, init_info = env.reset()
    episode_1.add_env_reset(observation=init_obs, infos=init_info)
    _fill(episode_1, env, range(100))

    assert episode_1.t == 100

    episode_2 = episode_1.cut()
    assert episode_1.id_ == episode_2.id_
    assert episode_1.t == episode_2.t == episode_2.t_started
    # The last observation and info of episode_1 are the first of episode_2.
    assert episode_1.observations[-1] == episode_2.observations[0]
    assert episode_1.infos[-1] == episode_2.infos[0]

    # Adding to the successor leaves the predecessor alone.
    _fill(episode_2, env, [100])
    assert len(episode_1.observations) != len(episode_2.observations)


def test_slice():
    """Slicing with [] and slice(), without and with lookback, lists and numpy."""
    observations = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    actions = observations[:-1]
    rewards = [o / 10 for o in observations[:-1]]
    episode = SingleAgentEpisode(observations=observations, actions=actions, rewards=rewards,
                                 len_lookback_buffer=0)
    check(len(episode), 9)

    def expect(slice_, length, obs, acts, rews):
        check(len(slice_), length)
        check(slice_.observations, obs)
        check(slice_.actions, acts)
        check(slice_.rewards, rews)
        check(slice_.is_done, False)

    for s in [slice(None, None, None), slice(-100, None, None), slice(None, 1000, None),
              slice(-1000, 1000, None)]:
        expect(episode[s], len(episode), observations, observations[:-1],
               [o / 10 for o in observations[:-1]])

    expect(episode[-100:], len(episode), observations, observations[:-1],
           [o / 10 for o in observations[:-1]])
    expect(episode[2:], 7, [2, 3, 4, 5, 6, 7, 8, 9], [2, 3, 4, 5, 6, 7, 8],
           [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
    expect(episode[:1], 1, [0, 1], [0], [0.0])
    expect(episode[:3], 3, [0, 1, 2, 3], [0, 1, 2], [0.0, 0.1, 0.2])
    expect(episode[:-4], 5, [0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4], [0.0, 0.1, 0.2, 0.3, 0.4])
    expect(episode[-2:], 2, [7, 8, 9], [7, 8], [0.7, 0.8])
    expect(episode[-3:], 3, [6, 7, 8, 9], [6, 7, 8], [0.6, 0.7, 0.8])
    expect(episode[-5:], 5, [4, 5, 6, 7, 8, 9], [4, 5, 6, 7, 8], [0.4, 0.5, 0.6, 0.7, 0.8])
    expect(episode[-4:-2], 2, [5, 6, 7], [5, 6], [0.5, 0.6])
    expect(episode[-4:6], 1, [5, 6], [5], [0.5])
    expect(episode[1:3], 2, [1, 2, 3], [1, 2], [0.1, 0.2])

    # With the first 4 steps as lookback data.
    episode = SingleAgentEpisode(observations=observations, actions=actions, rewards=rewards,
                                 len_lookback_buffer=4)
    check(len(episode), 5)

    for s in [slice(None, None, None), slice(-100, None, None), slice(None, 1000, None),
              slice(-1000, 1000, None)]:
        expect(episode[s], len(episode), [4, 5, 6, 7, 8, 9], [4, 5, 6, 7, 8],
               [0.4, 0.5, 0.6, 0.7, 0.8])

    expect(episode[2:], 3, [6, 7, 8, 9], [6, 7, 8], [0.6, 0.7, 0.8])
    expect(episode[:1], 1, [4, 5], [4], [0.4])
    expect(episode[:3], 3, [4, 5, 6, 7], [4, 5, 6], [0.4, 0.5, 0.6])
    expect(episode[:-4], 1, [4, 5], [4], [0.4])
    expect(episode[-2:], 2, [7, 8, 9], [7, 8], [0.7, 0.8])
    expect(episode[-3:], 3, [6, 7, 8, 9], [6, 7, 8], [0.6, 0.7, 0.8])
    expect(episode[-5:], 5, [4, 5, 6, 7, 8, 9], [4, 5, 6, 7, 8], [0.4, 0.5, 0.6, 0.7, 0.8])
    expect(episode[-4:-2], 2, [5, 6, 7], [5, 6], [0.5, 0.6])
    expect(episode[-4:2], 1, [5, 6], [5], [0.5])
    expect(episode[1:3], 2, [5, 6, 7], [5, 6], [0.5, 0.6])

    # Even split (50/50) of a numpy'ized episode.
    episode = _create_episode(100)
    assert episode.t == 100 and episode.t_started == 0
    episode.to_numpy()
    e1 = episode[:50]
    assert e1.is_numpy
    e2 = episode.slice(slice(50, None))
    assert e2.is_numpy
    assert len(e1) == 50
    assert len(e2) == 50
    assert e1.id_ == e2.id_
    assert e1.t_started == 0
    assert e1.t == 50
    assert e2.t_started == 50
    assert e2.t == 100
    # The chunks differ, but e1's last observation is e2's first.
    check(e1.get_observations(-1), e2.get_observations(0))
    check(e1.observations[4], e2.observations[4], false=True)
    check(e1.observations[10], e2.observations[10], false=True)

    # Uneven split (33/66).
    episode = _create_episode(99)
    assert episode.t == 99 and episode.t_started == 0
    episode.to_numpy()
    e1 = episode.slice(slice(None, 33))
    assert e1.is_numpy
    e2 = episode[33:]
    assert e2.is_numpy
    assert len(e1) == 33
    assert len(e2) == 66
    assert e1.id_ == e2.id_
    assert e1.t_started == 0
    assert e1.t == 33
    assert e2.t_started == 33
    assert e2.t == 99
    check(e1.get_observations(-1), e2.get_observations(0))
    check(e1.observations[4], e2.observations[4], false=True)
    check(e1.observations[10], e2.observations[10], false=True)

    # Split with lookback (lookback 10, split 20/30).
    len_lookback_buffer = 10
    episode = _create_episode(num_data=60, t_started=15, len_lookback_buffer=len_lookback_buffer)
    assert episode.t == 65 and episode.t_started == 15
    episode.to_numpy()
    e1 = episode.slice(slice(None, 20))
    assert e1.is_numpy
    e2 = episode[20:]
    assert e2.is_numpy
    assert len(e1) == 20
    assert len(e2) == 30
    assert e1.id_ == e2.id_
    assert e1.t_started == 15
    assert e1.t == 35
    assert e2.t_started == 35
    assert e2.t == 65
    check(e1.get_observations(-1), e2.get_observations(0))
    check(e1.observations[5], e2.observations[5], false=True)
    check(e1.observations[11], e2.observations[11], false=True)
    # Both chunks still see the lookback data.
    check(e1.get_observations(-1, neg_index_as_lookback=True),
          episode.observations.data[len_lookback_buffer - 1])
    check(e1.get_actions(-1, neg_index_as_lookback=True),
          episode.actions.data[len_lookback_buffer - 1])
    check(e2.get_observations([-5, -2], neg_index_as_lookback=True), [
        episode.observations.data[20 + len_lookback_buffer - 5],
        episode.observations.data[20 + len_lookback_buffer - 2],
    ])
    check(e2.get_rewards([-5, -2], neg_index_as_lookback=True), [
        episode.rewards.data[20 + len_lookback_buffer - 5],
        episode.rewards.data[20 + len_lookback_buffer - 2],
    ])


def test_concat_episode():
    """concat_episode() joins a successor; mismatches raise AssertionError (RLlib's type)."""
    np.random.seed(0)
    env = TestEnv()
    init_obs, init_info = env.reset()
    episode_1 = SingleAgentEpisode()
    episode_1.add_env_reset(observation=init_obs, infos=init_info)
    _fill(episode_1, env, range(100))

    episode_2 = episode_1.cut()
    _fill(episode_2, env, range(100, 200))

    assert episode_1.t == episode_2.t_started
    assert episode_2.t == 200

    episode_2.id_ = "wrong"
    with pytest.raises(AssertionError):
        episode_1.concat_episode(episode_2)
    episode_2.id_ = episode_1.id_
    episode_2.t_started += 1
    with pytest.raises(AssertionError):
        episode_1.concat_episode(episode_2)
    episode_2.t_started -= 1
    # Nothing can be concatenated onto a done episode.
    episode_1.is_terminated = True
    with pytest.raises(AssertionError):
        episode_1.concat_episode(episode_2)
    episode_1.is_terminated = False

    episode_1.concat_episode(episode_2)
    assert episode_1.t_started == 0
    assert episode_1.t == 200
    assert (len(episode_1.actions) == len(episode_1.rewards) == len(episode_1.observations) - 1
            == len(episode_1.infos) - 1 == 200)
    assert episode_2.observations[5] == episode_1.observations[105]


def test_concat_episode_with_complex_obs():
    """concat_episode() with Dict observations."""
    env = DictTestEnv()
    init_obs, init_info = env.reset()

    episode_1 = SingleAgentEpisode()
    episode_1.add_env_reset(observation=init_obs, infos=init_info)
    for i in range(4):
        obs, reward, terminated, truncated, info = env.step(i)
        episode_1.add_env_step(observation=obs, action=i, reward=reward, infos=info,
                               terminated=terminated, truncated=truncated)
    assert len(episode_1) == 4

    episode_2 = episode_1.cut()
    for i in range(6):
        obs, reward, terminated, truncated, info = env.step(i)
        episode_2.add_env_step(observation=obs, action=i, reward=reward, infos=info,
                               terminated=terminated, truncated=truncated)
    assert len(episode_2) == 6

    episode_1.concat_episode(episode_2)
    assert len(episode_1) == 10


def test_get_and_from_state():
    """from_state(get_state()) rebuilds an equal episode."""
    episode = _create_episode(100)
    state = episode.get_state()
    episode_2 = SingleAgentEpisode.from_state(state)

    assert episode_2.id_ == episode.id_
    assert episode_2.agent_id == episode.agent_id
    assert episode_2.multi_agent_episode_id == episode.multi_agent_episode_id
    check(episode_2.t, episode.t)
    check(episode_2.t_started, episode.t_started)
    check(episode_2.observations[5], episode.observations[5])
    check(episode_2.actions[5], episode.actions[5])
    check(episode_2.rewards[5], episode.rewards[5])
    check(episode_2.infos[5], episode.infos[5])
    check(episode_2.is_terminated, episode.is_terminated)
    check(episode_2.is_truncated, episode.is_truncated)
    assert type(episode_2._observation_space) is type(episode._observation_space)
    assert type(episode_2._action_space) is type(episode._action_space)
    check(episode_2._start_time, episode._start_time)
    check(episode_2._last_step_time, episode._last_step_time)
    check(episode_2.custom_data, episode.custom_data)
    assert episode_2.extra_model_outputs == episode.extra_model_outputs


def test_setters():
    """Every setter with ints, negative ints, lists and slices, on lists and numpy."""
    some_key = "some_key"
    episode = SingleAgentEpisode(
        observations=[100, 101, 102, 103, 104, 105, 106],
        actions=[1, 2, 3, 4, 5, 6],
        rewards=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
        extra_model_outputs={some_key: [0.01, 0.02, 0.03, 0.04, 0.05, 0.06]},
        len_lookback_buffer=0,
    )

    test_patterns = [
        # (description, new_data, indices)
        ("zero index", 7353.0, 0),
        ("single index", 7353.0, 2),
        ("negative index", 7353.0, -1),
        ("short list of indices", [7353.0], [1]),
        ("long list of indices", [73.0, 53.0, 35.0, 53.0], [1, 2, 3, 4]),
        ("short slice", [7353.0], slice(2, 3)),
        ("long slice", [7.0, 3.0, 5.0, 3.0], slice(2, 6)),
    ]

    numpy_episode = copy.deepcopy(episode).to_numpy()

    for e in [episode, numpy_episode]:
        for desc, new_data, indices in test_patterns:
            expected_data = new_data
            if e.is_numpy and isinstance(new_data, list):
                new_data = np.array(new_data)

            e.set_observations(new_data=new_data, at_indices=indices)
            check(e.get_observations(indices), expected_data)

            e.set_actions(new_data=new_data, at_indices=indices)
            check(e.get_actions(indices), expected_data)

            e.set_rewards(new_data=new_data, at_indices=indices)
            check(e.get_rewards(indices), expected_data)

            e.set_extra_model_outputs(key=some_key, new_data=new_data, at_indices=indices)
            actual_data = e.get_extra_model_outputs(some_key)
            if desc in ("single index", "zero index", "negative index"):
                check(actual_data[e.t_started + indices], expected_data)
            elif desc in ("long list of indices", "short list of indices"):
                actual_values = actual_data[
                    slice(e.t_started + indices[0], e.t_started + indices[-1] + 1)]
                check(actual_values, expected_data)
            elif desc in ("long slice", "short slice"):
                actual_values = [actual_data[e.t_started + i]
                                 for i in range(indices.start, indices.stop)]
                check(actual_values, expected_data)
            else:
                raise ValueError(f"Invalid test pattern: {desc}")


def test_setters_error_cases():
    """A size mismatch raises IndexError; a new extra key at indices AssertionError."""
    episode = _create_episode(100)

    with pytest.raises(IndexError):
        episode.set_observations(new_data=[7, 3, 5, 3], at_indices=slice(0, 2))

    with pytest.raises(AssertionError):
        episode.set_extra_model_outputs(key="nonexistent_key", new_data=999, at_indices=0)
