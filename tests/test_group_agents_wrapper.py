"""`MultiAgentEnv.with_agent_groups()` / `GroupAgentsWrapper` (RLlib's grouping): grouped
agents are one agent with Tuple observations and actions, the summed reward (the
members' own in the info), per-group flags; and the TwoStepGame example env."""

import gymnasium as gym
import numpy as np
import pytest

from tfrl.env.multi_agent_env import (GROUP_INFO, GROUP_REWARDS, GroupAgentsWrapper,
                                      MultiAgentEnv)
from tfrl.env.wrappers.group_agents_wrapper import GroupAgentsWrapper as AtRLlibPath
from tfrl.examples.envs.two_step_game import TwoStepGame, TwoStepGameWithGroupedAgents


class ThreeAgents(MultiAgentEnv):
    """Agents "a", "b", "c": obs Box(3) = [step, agent number, 0], actions Discrete(4);
    agent i's reward is its action times (i + 1); agent "c" terminates at step 1, the
    episode at step 2."""

    def __init__(self):
        super().__init__()
        self._agent_ids = {"a", "b", "c"}
        self.observation_space = gym.spaces.Box(-10.0, 10.0, (3,), np.float32)
        self.action_space = gym.spaces.Discrete(4)
        self.t = 0
        self.seen = []

    def _obs(self, agents):
        return {a: np.array([self.t, i, 0], np.float32) for i, a in enumerate("abc")
                if a in agents}

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return self._obs("abc"), {"a": {"x": 1}}

    def step(self, action_dict):
        self.seen.append(dict(action_dict))
        self.t += 1
        rewards = {a: float(action_dict[a]) * (i + 1) for i, a in enumerate("abc")
                   if a in action_dict}
        done = self.t >= 2
        terms = {"a": done, "b": done, "c": self.t >= 1, "__all__": done}
        truncs = {"a": False, "b": False, "c": False, "__all__": False}
        return self._obs("abc"), rewards, terms, truncs, {"b": {"y": 2}}


def test_grouped_agents_act_as_one_with_summed_rewards_and_group_flags():
    env = ThreeAgents().with_agent_groups({"team": ["b", "a"]})
    assert isinstance(env, GroupAgentsWrapper) and AtRLlibPath is GroupAgentsWrapper
    assert env.get_agent_ids() == {"team", "c"}
    obs, infos = env.reset(seed=0)
    assert sorted(obs) == ["c", "team"]
    np.testing.assert_array_equal(obs["team"][0], [0, 1, 0])  # b first: the group's order
    np.testing.assert_array_equal(obs["team"][1], [0, 0, 0])
    assert infos == {"team": {GROUP_INFO: [{}, {"x": 1}]}}
    obs, rewards, terms, truncs, infos = env.step({"team": (2, 3), "c": 1})
    assert env.env.seen[-1] == {"b": 2, "a": 3, "c": 1}
    assert rewards == {"team": 2 * 2.0 + 3 * 1.0, "c": 3.0}
    assert infos["team"] == {GROUP_INFO: [{"y": 2}, {}], GROUP_REWARDS: [4.0, 3.0]}
    assert terms == {"team": False, "c": True, "__all__": False}
    assert truncs == {"team": False, "c": False, "__all__": False}
    _, rewards, terms, _, _ = env.step({"team": np.array([0, 1])})
    assert rewards["team"] == 1.0 and terms["team"] and terms["__all__"]


def test_spaces_given_or_derived_per_agent():
    base = ThreeAgents()
    derived = base.with_agent_groups({"team": ["a", "b"]})
    assert derived.observation_space == gym.spaces.Dict({
        "c": base.observation_space,
        "team": gym.spaces.Tuple([base.observation_space] * 2)})
    assert derived.get_action_space("team") == gym.spaces.Tuple([base.action_space] * 2)
    assert derived.get_observation_space("c") == base.observation_space
    obs, _ = derived.reset()
    assert derived.observation_space_contains(obs)
    tuple_obs = gym.spaces.Tuple([base.observation_space] * 2)
    given = ThreeAgents().with_agent_groups({"team": ["a", "b"]}, obs_space=tuple_obs,
                                            act_space=gym.spaces.Tuple([base.action_space] * 2))
    assert given.observation_space == tuple_obs  # RLlib 1.x's form: shared by all agents
    assert given.get_observation_space("team") == tuple_obs


def test_grouping_errors_name_the_problem():
    with pytest.raises(ValueError, match="Agent 'a' is in two groups"):
        ThreeAgents().with_agent_groups({"x": ["a", "b"], "y": ["a"]})
    with pytest.raises(ValueError, match="non-empty list of agent ids"):
        ThreeAgents().with_agent_groups({"x": []})
    with pytest.raises(ValueError, match=r"Group ids \['c'\] are also ids of agents"):
        ThreeAgents().with_agent_groups({"c": ["a", "b"]})
    with pytest.raises(TypeError, match="received a CartPoleEnv"):
        GroupAgentsWrapper(gym.make("CartPole-v1").unwrapped, {"x": [0]})
    env = ThreeAgents().with_agent_groups({"team": ["a", "b"]})
    env.reset()
    with pytest.raises(ValueError, match=r"group 'team' must be a sequence of one action "
                                         r"per member \['a', 'b'\]; received 1"):
        env.step({"team": 1, "c": 0})
    with pytest.raises(ValueError, match=r"group 'team' must be a sequence.*\(1, 2, 3\)"):
        env.step({"team": (1, 2, 3), "c": 0})
    # A member without an observation while another has one: they must act together.
    with pytest.raises(ValueError, match=r"returned rewards for some members of group "
                                         r"'team' but not for \['b'\]"):
        env.step({"a": 1, "c": 0})  # ungrouped ids pass through: "a" alone gets a reward


def test_two_step_game_pays_the_matrix_and_its_grouped_form_the_team():
    for first, second, team in [(0, (0, 0), 7.0), (0, (1, 1), 7.0), (1, (0, 0), 0.0),
                                (1, (0, 1), 1.0), (1, (1, 0), 1.0), (1, (1, 1), 8.0)]:
        env = TwoStepGameWithGroupedAgents({})
        obs, _ = env.reset(seed=0)
        assert obs == {"agents": (0, 3)}
        obs, rewards, terms, truncs, _ = env.step({"agents": (first, 1 - first)})
        assert obs == {"agents": (1, 4) if first == 0 else (2, 5)}
        # TwoStepGame sets only "__all__": no member flags, so no group flag either.
        assert rewards == {"agents": 0.0} and terms == {"__all__": False}
        _, rewards, terms, truncs, infos = env.step({"agents": second})
        assert rewards == {"agents": team}
        assert infos["agents"][GROUP_REWARDS] == [team / 2, team / 2]
        assert terms == {"__all__": True} and truncs == {"__all__": False}
    env = TwoStepGameWithGroupedAgents({"one_hot_state_encoding": True,
                                        "separate_state_space": True})
    obs, _ = env.reset()
    assert env.observation_space_contains(obs)
    np.testing.assert_array_equal(obs["agents"][1]["obs"], [1, 0, 0, 2])
    np.testing.assert_array_equal(obs["agents"][0]["state"], [1, 0, 0])
    with pytest.raises(ValueError, match="actions are 0 or 1; received 2"):
        TwoStepGame({}).step({0: 2, 1: 0})
