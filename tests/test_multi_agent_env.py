"""MultiAgentEnv, make_multi_agent and the multi-agent BaseEnv (agents join and leave)."""

import gymnasium as gym
import numpy as np
import pytest

from tfrl.env.base_env import BaseEnv, convert_to_base_env
from tfrl.env.env_context import EnvContext
from tfrl.env.multi_agent_env import MultiAgentEnv, _MultiAgentEnvToBaseEnv, make_multi_agent
from toy_envs import CounterEnv

# t -> (agents observed at t, extra terminateds, extra truncateds) of one RelayEnv episode.
SCHEDULE = {
    0: (["a"], {}, {}),
    1: (["a", "b"], {}, {}),  # b joins
    2: (["a", "b"], {"a": True}, {}),  # a leaves (terminated, final obs)
    3: (["b", "c"], {}, {}),  # c joins
    4: (["c"], {}, {}),  # b waits (its reward still comes)
    5: (["b", "c"], {}, {}),  # b returns (no reward: it did not act)
    6: (["b", "c"], {}, {"b": True, "c": True, "__all__": True}),  # the episode ends
}


class RelayEnv(MultiAgentEnv):
    """Agents come and go by SCHEDULE; obs = 10 * episode + t; reward = the agent's action."""

    def __init__(self, index=0):
        super().__init__()
        self.index, self.episode, self.t, self.seeds, self.closed = index, -1, 0, [], False
        self._agent_ids = {"a", "b", "c"}
        self.observation_space = gym.spaces.Discrete(100)
        self.action_space = gym.spaces.Discrete(5)

    def reset(self, *, seed=None, options=None):
        self.seeds.append(seed)
        self.episode, self.t = self.episode + 1, 0
        return self._obs(), {"a": {"t": 0}}

    def step(self, action_dict):
        self.t += 1
        agents, terms, truncs = SCHEDULE[self.t]
        rewards = {agent: float(action) for agent, action in action_dict.items()}
        return (self._obs(), rewards, {"__all__": False, **terms}, {"__all__": False, **truncs},
                {agent: {"t": self.t} for agent in agents})

    def render(self):
        return self.index

    def close(self):
        self.closed = True

    def _obs(self):
        return {agent: 10 * self.episode + self.t for agent in SCHEDULE[self.t][0]}


def poll_of(env_id, obs, rewards, terminateds=None, truncateds=None, infos=None):
    """Expected poll dicts of one sub-env; flags default to False, infos to {"t": t}."""
    agents = list(obs)
    terms = {a: False for a in agents}
    terms.update(terminateds or {})
    terms.setdefault("__all__", False)
    truncs = {a: False for a in agents}
    truncs.update(truncateds or {})
    truncs.setdefault("__all__", False)
    infos = infos or {a: {"t": obs[a] % 10} for a in agents}
    return {env_id: obs}, {env_id: rewards}, {env_id: terms}, {env_id: truncs}, {env_id: infos}, {}


def test_agents_join_and_leave_within_an_episode():
    env = RelayEnv().to_base_env()
    assert isinstance(env, _MultiAgentEnvToBaseEnv)
    assert env.poll() == poll_of(0, {"a": 0}, {"a": None})
    env.send_actions({0: {"a": 1}})
    assert env.poll() == poll_of(0, {"a": 1, "b": 1}, {"a": 1.0, "b": None})
    env.send_actions({0: {"a": 2, "b": 3}})
    assert env.poll() == poll_of(0, {"a": 2, "b": 2}, {"a": 2.0, "b": 3.0}, {"a": True})
    env.send_actions({0: {"b": 1}})
    assert env.poll() == poll_of(0, {"b": 3, "c": 3}, {"b": 1.0, "c": None})
    env.send_actions({0: {"b": 2, "c": 2}})
    assert env.poll() == poll_of(0, {"c": 4}, {"b": 2.0, "c": 2.0})
    env.send_actions({0: {"c": 1}})
    assert env.poll() == poll_of(0, {"b": 5, "c": 5}, {"c": 1.0, "b": 0.0})
    env.send_actions({0: {"b": 4, "c": 0}})
    assert env.poll() == poll_of(0, {"b": 6, "c": 6}, {"b": 4.0, "c": 0.0},
                                 truncateds={"b": True, "c": True, "__all__": True})
    # The episode ended: the next poll resets the sub-env; rewards are None again.
    assert env.poll() == poll_of(0, {"a": 10}, {"a": None}, infos={"a": {"t": 0}})


def test_sub_envs_are_stepped_only_when_they_got_actions():
    env = convert_to_base_env(RelayEnv(0), make_env=lambda i: RelayEnv(i), num_envs=2)
    assert isinstance(env, _MultiAgentEnvToBaseEnv)
    obs = env.poll()[0]
    assert obs == {0: {"a": 0}, 1: {"a": 0}}
    env.send_actions({1: {"a": 1}})
    obs, rewards, *_ = env.poll()
    assert obs == {1: {"a": 1, "b": 1}} and rewards == {1: {"a": 1.0, "b": None}}
    assert env.poll() == ({}, {}, {}, {}, {}, {})
    env.send_actions({0: {"a": 2}})
    env.send_actions({1: {"b": 2}})  # several calls before one poll add up
    env.send_actions({1: {"a": 3}})
    obs, rewards, *_ = env.poll()
    assert obs == {0: {"a": 1, "b": 1}, 1: {"a": 2, "b": 2}}
    assert rewards == {0: {"a": 2.0, "b": None}, 1: {"a": 3.0, "b": 2.0}}


def test_try_reset_one_or_all_sub_envs_with_seeds():
    env = convert_to_base_env(RelayEnv(0), make_env=lambda i: RelayEnv(i), num_envs=2)
    obs, infos = env.try_reset(seed=5)
    assert obs == {0: {"a": 0}, 1: {"a": 0}} and infos == {0: {"a": {"t": 0}}, 1: {"a": {"t": 0}}}
    assert [e.seeds for e in env.get_sub_environments()] == [[5], [6]]
    assert env.poll() == ({}, {}, {}, {}, {}, {})  # reset obs were returned already
    env.send_actions({0: {"a": 1}, 1: {"a": 1}})
    env.poll()
    obs, infos = env.try_reset(1, seed=9)  # mid-episode
    assert obs == {1: {"a": 10}} and env.get_sub_environments()[1].seeds == [6, 9]
    env.send_actions({0: {"b": 1}, 1: {"a": 1}})
    obs, rewards, *_ = env.poll()
    assert obs == {0: {"a": 2, "b": 2}, 1: {"a": 11, "b": 11}}
    assert rewards[1] == {"a": 1.0, "b": None}
    with pytest.raises(ValueError, match=r"try_reset: unknown env id 2; this env has env ids 0..1"):
        env.try_reset(2)


def test_send_actions_errors_name_the_ids_and_the_valid_ones():
    env = RelayEnv().to_base_env()
    with pytest.raises(ValueError, match=r"agent 'a' of env 0 is not waiting for an action \(env 0 has not been "
                                         r"reset yet; call poll\(\) first\). Agents of env 0 waiting .*: \[\]"):
        env.send_actions({0: {"a": 1}})
    env.poll()
    with pytest.raises(ValueError, match=r"send_actions: unknown env id 1; this env has env ids 0..0"):
        env.send_actions({1: {"a": 1}})
    with pytest.raises(ValueError, match=r"agent 'b' of env 0 is not waiting.*not been observed.*: \['a'\]"):
        env.send_actions({0: {"a": 1, "b": 1}})
    with pytest.raises(ValueError, match=r"the actions of env 0 must be a dict agent_id -> action; received 1"):
        env.send_actions({0: 1})
    env.send_actions({0: {"a": 1}})  # the failed calls left nothing behind
    with pytest.raises(ValueError, match=r"agent 'a' of env 0.*\(it already has an action for the next step\)"):
        env.send_actions({0: {"a": 1}})
    env.poll()
    env.send_actions({0: {"a": 1, "b": 1}})
    env.poll()
    with pytest.raises(ValueError, match=r"agent 'a' of env 0.*\(it was not in the last poll's observations, "
                                         r"or it is done\).*: \['b'\]"):
        env.send_actions({0: {"a": 1}})  # a terminated
    for actions in ({"b": 1}, {"b": 1, "c": 1}, {"c": 1}, {"b": 1, "c": 1}):
        env.send_actions({0: actions})
        env.poll()
    with pytest.raises(ValueError, match=r"\(the episode of env 0 ended; the next poll\(\) \(or try_reset\) "
                                         r"resets it\)"):
        env.send_actions({0: {"b": 1}})


def test_env_results_are_checked():
    class NoAll(RelayEnv):
        def step(self, action_dict):
            obs, rewards, terms, truncs, infos = super().step(action_dict)
            del truncs["__all__"]
            return obs, rewards, terms, truncs, infos

    class GymEra(RelayEnv):
        def step(self, action_dict):
            return super().step(action_dict)[:4]

    class ObsOnly(RelayEnv):
        def reset(self, *, seed=None, options=None):
            return super().reset()[0]

    for cls, message in [
        (NoAll, r"NoAll.step\(\) \(sub-env 0\) returned truncateds=\{\} without the '__all__' key"),
        (GymEra, r"GymEra.step\(\) \(sub-env 0\) must return 5 dicts keyed by agent id"),
    ]:
        env = cls().to_base_env()
        env.poll()
        env.send_actions({0: {"a": 1}})
        with pytest.raises(ValueError, match=message):
            env.poll()
    with pytest.raises(ValueError, match=r"ObsOnly.reset\(\) \(sub-env 0\) must return \(obs_dict, info_dict\)"):
        ObsOnly().to_base_env().poll()


def test_construction_errors():
    with pytest.raises(ValueError, match=r"num_envs=2 but only 1 existing MultiAgentEnvs and no make_env"):
        RelayEnv().to_base_env(num_envs=2)
    with pytest.raises(TypeError, match=r"Sub-env 1 is a CartPoleEnv, expected a MultiAgentEnv"):
        RelayEnv().to_base_env(make_env=lambda i: gym.make("CartPole-v1").unwrapped, num_envs=2)
    with pytest.raises(ValueError, match=r"num_envs must be an int >= max\(1, len\(existing_envs\)=1\); received 0"):
        RelayEnv().to_base_env(num_envs=0)


def test_render_sub_environments_agent_ids_and_stop():
    env = RelayEnv(0).to_base_env(make_env=lambda i: RelayEnv(i), num_envs=2)
    assert isinstance(env, BaseEnv) and env.try_render(1) == 1 and env.try_render() == 0
    assert env.get_agent_ids() == {"a", "b", "c"}
    assert env.observation_space == gym.spaces.Discrete(100)
    subs = env.get_sub_environments(as_dict=True)
    assert list(subs) == [0, 1] and subs[1].index == 1
    env.stop()
    assert all(e.closed for e in env.get_sub_environments())
    with pytest.raises(ValueError, match=r"try_render: unknown env id 3"):
        env.try_render(3)


# ------------------------------------------------------------------ spaces

class _Spaces(MultiAgentEnv):
    def __init__(self, obs_space, act_space, agent_ids=None):
        super().__init__()
        self.observation_space, self.action_space = obs_space, act_space
        if agent_ids is not None:
            self._agent_ids = set(agent_ids)


def test_one_space_for_all_agents():
    box = gym.spaces.Box(0, 1, (2,))
    env = _Spaces(box, gym.spaces.Discrete(2))
    assert env.get_observation_space("x") is box and env.get_action_space(7) == gym.spaces.Discrete(2)
    assert env.get_agent_ids() == set()
    # A Dict observation that is not keyed by agent ids belongs to every agent.
    dict_obs = gym.spaces.Dict({"pos": box, "vel": box})
    env = _Spaces(dict_obs, gym.spaces.Discrete(2), agent_ids=["p", "q"])
    assert env.get_observation_space("p") is dict_obs


def test_spaces_per_agent():
    obs = gym.spaces.Dict({"p": gym.spaces.Discrete(3), "q": gym.spaces.Discrete(4)})
    act = gym.spaces.Dict({"p": gym.spaces.Discrete(5), "q": gym.spaces.Discrete(6)})
    declared = _Spaces(obs, act, agent_ids=["p", "q"])
    undeclared = _Spaces(obs, act)  # same keys in both Dict spaces: per agent
    for env in (declared, undeclared):
        assert env.get_agent_ids() == {"p", "q"}
        assert env.get_observation_space("q") == gym.spaces.Discrete(4)
        assert env.get_action_space("p") == gym.spaces.Discrete(5)
    with pytest.raises(ValueError, match=r"_Spaces has no observation space for agent 'r'; its agent ids are "
                                         r"\['p', 'q'\]"):
        declared.get_observation_space("r")
    with pytest.raises(ValueError, match=r"no action space for agent 'r'"):
        declared.get_action_space("r")


def test_possible_agents_declare_agent_ids():
    env = _Spaces(None, None)
    env.possible_agents = ["x", "y"]
    assert env.get_agent_ids() == {"x", "y"}


# --------------------------------------------------------- make_multi_agent

def test_make_multi_agent_from_a_gymnasium_id():
    cls = make_multi_agent("CartPole-v1")
    assert issubclass(cls, MultiAgentEnv)
    config = {"num_agents": 3, "max_episode_steps": 3}
    env = cls(config)
    assert config == {"num_agents": 3, "max_episode_steps": 3}  # not mutated
    assert env.get_agent_ids() == {0, 1, 2} and len(env.envs) == 3
    assert env.observation_space == gym.make("CartPole-v1").observation_space
    obs, infos = env.reset(seed=3)
    for i in range(3):  # copy i is seeded with seed + i
        np.testing.assert_array_equal(obs[i], gym.make("CartPole-v1").reset(seed=3 + i)[0])
    for _ in range(2):
        obs, rewards, terms, truncs, infos = env.step({0: 0, 1: 1, 2: 0})
        assert truncs["__all__"] is False and terms["__all__"] is False
    obs, rewards, terms, truncs, infos = env.step({0: 0, 1: 1, 2: 0})
    assert truncs == {0: True, 1: True, 2: True, "__all__": True} and terms["__all__"] is False
    env.close()


def test_make_multi_agent_from_a_creator_agents_leave_one_by_one():
    contexts = []

    def creator(ctx):
        contexts.append(ctx)
        return CounterEnv(len(contexts) - 1, length=len(contexts))

    ctx = EnvContext({"num_agents": 2, "k": 1}, worker_index=4, vector_index=1)
    env = make_multi_agent(creator)(ctx)
    assert [dict(c) for c in contexts] == [{"k": 1}, {"k": 1}]
    assert all(isinstance(c, EnvContext) and c.worker_index == 4 and c.vector_index == 1 for c in contexts)
    obs, _ = env.reset()
    assert {i: o.tolist() for i, o in obs.items()} == {0: [0, 0, 0], 1: [1, 0, 0]}
    obs, rewards, terms, truncs, _ = env.step({0: 1, 1: 1})
    assert terms == {0: True, 1: False, "__all__": False} and rewards == {0: 11.0, 1: 11.0}
    obs, rewards, terms, truncs, _ = env.step({1: 0})  # agent 0 left
    assert list(obs) == [1] and terms == {1: True, "__all__": True} and truncs["__all__"] is False
    assert env.render().tolist() == CounterEnv(0).render().tolist()
    base = env.to_base_env()
    assert base.poll()[1] == {0: {0: None, 1: None}}


def test_make_multi_agent_checks_num_agents():
    with pytest.raises(ValueError, match=r"num_agents must be an int >= 1; received 0"):
        make_multi_agent("CartPole-v1")({"num_agents": 0})
    with pytest.raises(ValueError, match=r"Unknown env 'CartPol-v1'.*Did you mean 'CartPole-v1'"):
        make_multi_agent("CartPol-v1")
    assert len(make_multi_agent("CartPole-v1")().envs) == 1


def test_an_adopted_reset_starts_the_sub_envs_first_episode_once():
    from tfrl.env.multi_agent_env import MultiAgentEnvWrapper

    resets = []

    class Counted(make_multi_agent(lambda cfg: CounterEnv())):
        def reset(self, *, seed=None, options=None):
            resets.append(seed)
            return super().reset(seed=seed, options=options)

    env = Counted({"num_agents": 2})
    checked = env.reset()  # as a rollout worker's env check does
    base = MultiAgentEnvWrapper(existing_envs=[env], num_envs=1)
    base.adopt_reset(0, checked)
    obs = base.poll()[0]
    assert resets == [None] and set(obs[0]) == {0, 1}
    base.try_reset(0)
    assert resets == [None, None]
    with pytest.raises(ValueError, match="adopt_reset: unknown env id 3"):
        base.adopt_reset(3, checked)
