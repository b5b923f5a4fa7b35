"""Tests of Episode / MultiAgentEpisode (RLlib's classic episode objects)."""

import gymnasium as gym
import numpy as np
import pytest

from tfrl.evaluation.episode import Episode, MultiAgentEpisode
from tfrl.policy.policy import Policy


class _Policy(Policy):
    def __init__(self, action_space, initial_state=()):
        super().__init__(gym.spaces.Box(-1.0, 1.0, (2,)), action_space, {})
        self._initial = list(initial_state)

    def compute_actions(self, obs_batch, *args, **kwargs):
        return np.zeros(len(obs_batch)), [], {}

    def get_initial_state(self):
        return [s.copy() for s in self._initial]


def _episode(mapping_fn=None, policies=None, extra=None, worker="w"):
    policies = policies or {
        "disc": _Policy(gym.spaces.Discrete(3)),
        "box": _Policy(gym.spaces.Box(-1.0, 1.0, (2,), np.float32)),
        "dict": _Policy(gym.spaces.Dict({"a": gym.spaces.Discrete(2),
                                         "b": gym.spaces.Box(0.0, 1.0, (2,))})),
        "rnn": _Policy(gym.spaces.Discrete(2), [np.ones(3, np.float32)]),
    }
    mapping_fn = mapping_fn or (lambda agent_id, episode, worker=None, **kw: agent_id)
    return Episode(policies, mapping_fn, lambda: ["builder"], extra or (lambda b: None), 7,
                   worker=worker)


def test_construction_attributes():
    ep = _episode()
    assert ep.env_id == 7 and ep.worker == "w" and ep.length == 0 and ep.total_reward == 0.0
    assert 0 <= ep.episode_id < 2e9
    assert ep.batch_builder == ["builder"] and ep.new_batch_builder() == ["builder"]
    assert ep.custom_metrics == {} and ep.user_data == {} and ep.hist_data == {} and ep.media == {}
    assert ep.policy_map is ep._policies
    assert MultiAgentEpisode is Episode


def test_policy_for_calls_mapping_once_and_keeps_the_binding():
    calls = []

    def mapping(agent_id, episode, worker=None, **kwargs):
        calls.append((agent_id, episode, worker))
        return "disc" if agent_id == "x" else "box"

    ep = _episode(mapping)
    assert ep.policy_for("x") == "disc" and ep.policy_for("x") == "disc"
    assert calls == [("x", ep, "w")]
    ep.policy_mapping_fn = lambda *a, **k: "box"
    assert ep.policy_for("x") == "disc"  # bound for the episode
    assert ep.policy_for("y") == "box"


def test_policy_for_legacy_one_argument_mapping_fn():
    ep = _episode(lambda agent_id: "box")
    assert ep.policy_for("z") == "box"


def test_policy_for_propagates_other_type_errors():
    def mapping(agent_id, episode, worker=None):
        raise TypeError("something else broke")

    with pytest.raises(TypeError, match="something else broke"):
        _episode(mapping).policy_for("a")


def test_policy_for_unknown_id_names_it_and_the_valid_ids_every_call():
    ep = _episode(lambda agent_id, episode, **kw: "nope")
    for _ in range(2):
        with pytest.raises(KeyError) as info:
            ep.policy_for("a")
        message = str(info.value)
        assert "'nope'" in message and "['box', 'dict', 'disc', 'rnn']" in message


def test_action_getters_zero_flatten_and_prev():
    ep = _episode()
    zero = ep.last_action_for("disc")
    assert zero.shape == () and zero == 0 and zero.dtype == np.int64
    np.testing.assert_array_equal(ep.last_action_for("box"), np.zeros(2, np.float32))
    assert ep.last_action_for("box").dtype == np.float32
    np.testing.assert_array_equal(ep.last_action_for("dict"), np.zeros(3))
    ep.set_last_action("dict", {"a": 1, "b": np.array([0.5, 0.25])})
    np.testing.assert_array_equal(ep.last_action_for("dict"), [1.0, 0.5, 0.25])
    np.testing.assert_array_equal(ep.prev_action_for("dict"), np.zeros(3))
    ep.set_last_action("disc", 2)
    ep.set_last_action("disc", 1)
    assert ep.last_action_for("disc") == 1 and ep.prev_action_for("disc") == 2


def test_reward_getters_and_sums():
    ep = _episode()
    assert ep.last_reward_for("box") == 0.0 and ep.prev_reward_for("box") == 0.0
    ep.add_agent_rewards({"box": 1.0, "disc": None})
    assert ep.last_reward_for("box") == 1.0 and ep.prev_reward_for("box") == 0.0
    ep.add_agent_rewards({"box": 2.5, "disc": -1.0})
    assert (ep.last_reward_for("box"), ep.prev_reward_for("box")) == (2.5, 1.0)
    assert ep.total_reward == 2.5
    assert dict(ep.agent_rewards) == {("box", "box"): 3.5, ("disc", "disc"): -1.0}


def test_obs_info_done_and_extra_outs_getters():
    ep = _episode()
    assert ep.last_observation_for("box") is None and ep.last_raw_obs_for("box") is None
    assert ep.last_info_for("box") is None
    assert ep.last_done_for("box") is False and ep.last_terminated_for("box") is False
    ep.set_last_observation("box", np.ones(2))
    ep.set_last_raw_obs("box", [1, 1])
    ep.set_last_info("box", {"k": 1})
    ep.set_last_done("box", False, True)
    assert ep.last_observation_for("box").tolist() == [1.0, 1.0]
    assert ep.last_raw_obs_for("box") == [1, 1] and ep.last_info_for("box") == {"k": 1}
    assert ep.last_done_for("box") and ep.last_truncated_for("box")
    assert not ep.last_terminated_for("box")
    with pytest.raises(KeyError):
        ep.last_extra_action_outs_for("box")
    ep.set_last_extra_action_outs("box", {"vf_preds": 0.5})
    assert ep.last_extra_action_outs_for("box") == {"vf_preds": 0.5}


def test_set_single_agent_state_overwrites_what_the_getters_read():
    ep = _episode()
    ep.add_agent_rewards({"box": 5.0, "disc": 1.0})
    ep.set_last_action("box", np.full(2, -0.5))
    ep.set_single_agent_state("box", length=3, total_reward=2.5, recent_rewards=[0.5, 1.0],
                              obs=np.ones(2), raw_obs=[1, 1], info={"k": 2}, terminated=True,
                              truncated=False, action=np.full(2, 0.5))
    assert ep.length == 3 and ep.total_reward == 2.5
    assert dict(ep.agent_rewards) == {("box", "box"): 2.5}
    assert ep.last_reward_for("box") == 1.0 and ep.prev_reward_for("box") == 0.5
    assert ep.last_observation_for("box").tolist() == [1.0, 1.0]
    assert ep.last_raw_obs_for("box") == [1, 1] and ep.last_info_for("box") == {"k": 2}
    assert ep.last_terminated_for("box") and not ep.last_truncated_for("box")
    assert ep.last_action_for("box").tolist() == [0.5, 0.5]
    assert ep.prev_action_for("box").tolist() == [0.0, 0.0]  # -0.5 was not shifted
    ep.set_single_agent_state("box", length=0, total_reward=0.0, recent_rewards=[],
                              obs=np.zeros(2), raw_obs=[0, 0], info={}, terminated=False,
                              truncated=False)
    assert dict(ep.agent_rewards) == {} and ep.last_reward_for("box") == 0.0
    assert ep.last_action_for("box").tolist() == [0.5, 0.5]  # action=None keeps it


def test_rnn_state_for_defaults_to_the_policy_initial_state():
    ep = _episode()
    np.testing.assert_array_equal(ep.rnn_state_for("rnn")[0], np.ones(3))
    ep.set_rnn_state("rnn", [np.zeros(3)])
    np.testing.assert_array_equal(ep.rnn_state_for("rnn")[0], np.zeros(3))
    assert ep.rnn_state_for("box") == []


def test_agents_in_order_of_first_appearance():
    ep = _episode()
    assert [ep.agent_index(a) for a in ("box", "disc", "box")] == [0, 1, 0]
    assert ep.get_agents() == ["box", "disc"]


def test_soft_reset_keeps_bindings_and_states():
    ep = _episode()
    ep.policy_for("box")
    ep.add_agent_rewards({"box": 2.0})
    ep.set_rnn_state("rnn", [np.zeros(3)])
    ep.set_last_action("box", np.ones(2))
    ep.length, old_id = 5, ep.episode_id
    ep.soft_reset()
    assert ep.length == 0 and ep.total_reward == 0.0 and dict(ep.agent_rewards) == {}
    assert ep.last_reward_for("box") == 0.0 and ep.episode_id != old_id
    assert ep.policy_for("box") == "box"
    np.testing.assert_array_equal(ep.rnn_state_for("rnn")[0], np.zeros(3))
    np.testing.assert_array_equal(ep.last_action_for("box"), np.ones(2))


def test_add_extra_batch_hands_the_batch_to_the_sampler():
    got = []
    ep = _episode(extra=got.append)
    ep.add_extra_batch("batch")
    assert got == ["batch"]


def test_the_first_batch_builder_is_made_on_construction():
    made = []

    def factory():
        made.append(object())
        return made[-1]

    ep = Episode({"p": _Policy(gym.spaces.Discrete(2))}, lambda *a, **k: "p", factory,
                 lambda b: None, 0)
    assert len(made) == 1 and ep.batch_builder is made[0]  # before any use
    assert ep.new_batch_builder() is made[1] and ep.batch_builder is made[0]


@pytest.mark.parametrize("space, action, size", [
    (gym.spaces.Dict({"a": gym.spaces.Discrete(3), "b": gym.spaces.Box(-1.0, 1.0, (2, 2)),
                      "c": gym.spaces.MultiDiscrete([2, 3])}),
     {"a": 2, "b": np.full((2, 2), 0.5, np.float32), "c": np.array([1, 2])}, 7),
    (gym.spaces.Tuple([gym.spaces.Discrete(3), gym.spaces.Box(-1.0, 1.0, (3,), np.float32)]),
     (1, np.array([0.1, 0.2, 0.3], np.float32)), 4),
    # float64 actions of a float32 space: the zeros take the action's dtype (as RLlib's
    # np.zeros_like(last_action_for(...))).
    (gym.spaces.Tuple([gym.spaces.Box(-1.0, 1.0, (2,), np.float32)]),
     (np.array([0.5, -0.5]),), 2),
])
def test_prev_action_of_a_dict_or_tuple_action_is_zeros_of_the_flattened_size(
        space, action, size):
    ep = Episode({"p": _Policy(space)}, lambda *a, **k: "p", list, lambda b: None, 0)
    assert ep.prev_action_for("x").shape == ep.last_action_for("x").shape == (size,)
    ep.set_last_action("x", action)
    last = ep.last_action_for("x")
    assert last.shape == (size,) and np.any(last != 0)
    prev = ep.prev_action_for("x")
    assert prev.shape == last.shape and prev.dtype == last.dtype and not np.any(prev)
    ep.set_last_action("x", action)
    np.testing.assert_array_equal(ep.prev_action_for("x"), last)
