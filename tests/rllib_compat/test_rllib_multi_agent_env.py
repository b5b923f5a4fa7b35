"""RLlib's rllib/env/tests/test_multi_agent_env.py, ported to tfrl.

Read at commit e01461b1004fb9a84435ebfae232aa3e1ec003f6 (RLlib 2.x: RolloutWorker's
`default_policy_class=`/`config=AlgorithmConfig()` constructor, gym API). The gym 4-tuple
`step`/5-tuple `poll` are written in gymnasium's form (terminateds and truncateds), as
RLlib's own later, gymnasium-era revision of this file does; "dones" assertions become
"terminateds" assertions with the same expected values, plus RLlib's later check that
`try_reset` returns `(obs, infos)`.

Covers: test_basic_mock, test_round_robin_mock, test_no_reset_until_poll,
test_vectorize_basic, test_vectorize_round_robin, test_multi_agent_sample,
test_multi_agent_sample_sync_remote, test_multi_agent_sample_async_remote,
test_multi_agent_sample_with_horizon, test_sample_from_early_done_env,
test_multi_agent_with_flex_agents, test_multi_agent_sample_round_robin,
test_custom_rnn_state_values, test_train_multi_agent_cartpole_multi_policy,
test_space_in_preferred_format, test_spaces_sample_contain_in_preferred_format,
test_spaces_sample_contain_not_in_preferred_format.

Left out: test_returning_model_based_rollouts_data (drives RLlib's SimpleListCollector
internals: `add_init_obs`/`add_action_reward_next_obs`/`postprocess_episode` of
`worker.sampler.sample_collector`, which tfrl's sampler does not have) and
test_train_multi_agent_cartpole_single_policy (a learning run: PG on 10-agent CartPole
up to 50 iterations until the mean return reaches 500; tfrl's learning tests cover PG).
"""

import random

import gymnasium as gym
import numpy as np
import pytest

from compat_envs import (BasicMultiAgent, EarlyDoneMultiAgent, FlexAgentsMultiAgent,
                         MockPolicy, MultiAgentCartPole, NestedMultiAgentEnv,
                         RoundRobinMultiAgent, one_hot)
from compat_helpers import check
from tfrl.algorithms.algorithm_config import AlgorithmConfig
from tfrl.algorithms.pg import PG, PGConfig
from tfrl.env.multi_agent_env import MultiAgentEnvWrapper, make_multi_agent
from tfrl.evaluation.rollout_worker import RolloutWorker
from tfrl.examples.policy.random_policy import RandomPolicy
from tfrl.policy.policy import PolicySpec
from tfrl.tune.registry import register_env

RLLIB_PATH = "rllib/env/tests/test_multi_agent_env.py"
RLLIB_COMMIT = "e01461b1004fb9a84435ebfae232aa3e1ec003f6"


@pytest.fixture(autouse=True)
def _seed():
    random.seed(0)
    np.random.seed(0)


def test_basic_mock():
    env = BasicMultiAgent(4)
    obs, info = env.reset()
    assert obs == {0: 0, 1: 0, 2: 0, 3: 0}
    for _ in range(24):
        obs, rew, done, truncated, info = env.step({0: 0, 1: 0, 2: 0, 3: 0})
        assert obs == {0: 0, 1: 0, 2: 0, 3: 0}
        assert rew == {0: 1, 1: 1, 2: 1, 3: 1}
        assert done == {0: False, 1: False, 2: False, 3: False, "__all__": False}
    obs, rew, done, truncated, info = env.step({0: 0, 1: 0, 2: 0, 3: 0})
    assert done == {0: True, 1: True, 2: True, 3: True, "__all__": True}


def test_round_robin_mock():
    env = RoundRobinMultiAgent(2)
    obs, info = env.reset()
    assert obs == {0: 0}
    for _ in range(5):
        obs, rew, done, truncated, info = env.step({0: 0})
        assert obs == {1: 0}
        assert done["__all__"] is False
        obs, rew, done, truncated, info = env.step({1: 0})
        assert obs == {0: 0}
        assert done["__all__"] is False
    obs, rew, done, truncated, info = env.step({0: 0})
    assert done["__all__"] is True


def test_no_reset_until_poll():
    env = MultiAgentEnvWrapper(lambda v: BasicMultiAgent(2), [], 1)
    assert not env.get_sub_environments()[0].resetted
    env.poll()
    assert env.get_sub_environments()[0].resetted


def test_vectorize_basic():
    env = MultiAgentEnvWrapper(lambda v: BasicMultiAgent(2), [], 2)
    obs, rew, terminateds, truncateds, _, _ = env.poll()
    assert obs == {0: {0: 0, 1: 0}, 1: {0: 0, 1: 0}}
    assert rew == {0: {}, 1: {}}
    assert terminateds == {0: {"__all__": False}, 1: {"__all__": False}}
    assert truncateds == terminateds
    for _ in range(24):
        env.send_actions({0: {0: 0, 1: 0}, 1: {0: 0, 1: 0}})
        obs, rew, terminateds, truncateds, _, _ = env.poll()
        assert obs == {0: {0: 0, 1: 0}, 1: {0: 0, 1: 0}}
        assert rew == {0: {0: 1, 1: 1}, 1: {0: 1, 1: 1}}
        assert terminateds == {0: {0: False, 1: False, "__all__": False},
                               1: {0: False, 1: False, "__all__": False}}
    env.send_actions({0: {0: 0, 1: 0}, 1: {0: 0, 1: 0}})
    obs, rew, terminateds, truncateds, _, _ = env.poll()
    assert terminateds == {0: {0: True, 1: True, "__all__": True},
                           1: {0: True, 1: True, "__all__": True}}

    # Reset processing.
    with pytest.raises(ValueError):
        env.send_actions({0: {0: 0, 1: 0}, 1: {0: 0, 1: 0}})
    init_obs, init_infos = env.try_reset(0)
    assert init_obs == {0: {0: 0, 1: 0}}
    assert init_infos == {0: {0: {}, 1: {}}}
    init_obs, init_infos = env.try_reset(1)
    assert init_obs == {1: {0: 0, 1: 0}}
    assert init_infos == {1: {0: {}, 1: {}}}
    env.send_actions({0: {0: 0, 1: 0}, 1: {0: 0, 1: 0}})
    obs, rew, terminateds, truncateds, _, _ = env.poll()
    assert obs == {0: {0: 0, 1: 0}, 1: {0: 0, 1: 0}}
    assert rew == {0: {0: 1, 1: 1}, 1: {0: 1, 1: 1}}
    assert terminateds == {0: {0: False, 1: False, "__all__": False},
                           1: {0: False, 1: False, "__all__": False}}


def test_vectorize_round_robin():
    env = MultiAgentEnvWrapper(lambda v: RoundRobinMultiAgent(2), [], 2)
    obs, rew, terminateds, truncateds, _, _ = env.poll()
    assert obs == {0: {0: 0}, 1: {0: 0}}
    assert rew == {0: {}, 1: {}}
    assert truncateds == {0: {"__all__": False}, 1: {"__all__": False}}
    env.send_actions({0: {0: 0}, 1: {0: 0}})
    obs, rew, terminateds, truncateds, _, _ = env.poll()
    assert obs == {0: {1: 0}, 1: {1: 0}}
    assert truncateds == {0: {"__all__": False, 1: False}, 1: {"__all__": False, 1: False}}
    env.send_actions({0: {1: 0}, 1: {1: 0}})
    obs, rew, terminateds, truncateds, _, _ = env.poll()
    assert obs == {0: {0: 0}, 1: {0: 0}}
    assert truncateds == {0: {"__all__": False, 0: False}, 1: {"__all__": False, 0: False}}


def test_multi_agent_sample():
    def policy_mapping_fn(agent_id, episode, worker, **kwargs):
        return "p{}".format(agent_id % 2)

    ev = RolloutWorker(
        env_creator=lambda _: BasicMultiAgent(5),
        default_policy_class=MockPolicy,
        config=AlgorithmConfig()
        .rollouts(rollout_fragment_length=50, num_rollout_workers=0)
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=policy_mapping_fn),
    )
    batch = ev.sample()
    assert batch.count == 50
    assert batch.policy_batches["p0"].count == 150
    assert batch.policy_batches["p1"].count == 100
    assert batch.policy_batches["p0"]["t"].tolist() == list(range(25)) * 6


def test_multi_agent_sample_sync_remote():
    ev = RolloutWorker(
        env_creator=lambda _: BasicMultiAgent(5),
        default_policy_class=MockPolicy,
        # The old one-argument mapping fn signature still works (with a warning).
        config=AlgorithmConfig()
        .rollouts(rollout_fragment_length=50, num_rollout_workers=0, num_envs_per_worker=4,
                  remote_worker_envs=True, remote_env_batch_wait_ms=99999999)
        .multi_agent(policies={"p0", "p1"},
                     policy_mapping_fn=(lambda agent_id: "p{}".format(agent_id % 2))),
    )
    batch = ev.sample()
    assert batch.count == 200
    ev.stop()


def test_multi_agent_sample_async_remote():
    ev = RolloutWorker(
        env_creator=lambda _: BasicMultiAgent(5),
        default_policy_class=MockPolicy,
        config=AlgorithmConfig()
        .rollouts(rollout_fragment_length=50, num_rollout_workers=0, num_envs_per_worker=4,
                  remote_worker_envs=True)
        .multi_agent(policies={"p0", "p1"},
                     policy_mapping_fn=(lambda aid, **kwargs: "p{}".format(aid % 2))),
    )
    batch = ev.sample()
    assert batch.count == 200
    ev.stop()


def test_multi_agent_sample_with_horizon():
    ev = RolloutWorker(
        env_creator=lambda _: BasicMultiAgent(5),
        default_policy_class=MockPolicy,
        config=AlgorithmConfig()
        .rollouts(rollout_fragment_length=50, num_rollout_workers=0,
                  horizon=10)  # test with episode horizon set
        .multi_agent(policies={"p0", "p1"},
                     policy_mapping_fn=(lambda aid, **kwarg: "p{}".format(aid % 2))),
    )
    batch = ev.sample()
    assert batch.count == 50


def test_sample_from_early_done_env():
    ev = RolloutWorker(
        env_creator=lambda _: EarlyDoneMultiAgent(),
        default_policy_class=MockPolicy,
        config=AlgorithmConfig()
        .rollouts(rollout_fragment_length=1, num_rollout_workers=0,
                  batch_mode="complete_episodes")
        .multi_agent(policies={"p0", "p1"},
                     policy_mapping_fn=(lambda aid, **kwargs: "p{}".format(aid % 2))),
    )
    # The env may end the episode at agent 0's step without a last observation for
    # agent 1; both agents' trajectories end there.
    ma_batch = ev.sample()
    ag0_ts = ma_batch.policy_batches["p0"]["t"]
    ag1_ts = ma_batch.policy_batches["p1"]["t"]
    assert np.all(np.abs(ag0_ts[:-1] - ag1_ts[:-1]) == 1.0)
    assert ag0_ts[-1] == ag1_ts[-1]


def test_multi_agent_with_flex_agents():
    register_env("flex_agents_multi_agent_cartpole", lambda _: FlexAgentsMultiAgent())
    pg = PG(env="flex_agents_multi_agent_cartpole",
            config={"num_workers": 0, "framework": "tf2"})
    for i in range(10):
        result = pg.train()
        print("Iteration {}, reward {}, timesteps {}".format(
            i, result["episode_reward_mean"], result["timesteps_total"]))
    pg.stop()


def test_multi_agent_sample_round_robin():
    ev = RolloutWorker(
        env_creator=lambda _: RoundRobinMultiAgent(5, increment_obs=True),
        default_policy_class=MockPolicy,
        config=AlgorithmConfig()
        .rollouts(rollout_fragment_length=50, num_rollout_workers=0)
        .multi_agent(policies={"p0"},
                     policy_mapping_fn=lambda agent_id, episode, **kwargs: "p0"),
    )
    batch = ev.sample()
    assert batch.count == 50
    # Agents join the env in turn, so some env steps are no transition of any agent.
    assert batch.policy_batches["p0"].count == 42
    check(batch.policy_batches["p0"]["obs"][:10], one_hot(np.array([0, 1, 2, 3, 4] * 2), 10))
    check(batch.policy_batches["p0"]["new_obs"][:10],
          one_hot(np.array([1, 2, 3, 4, 5] * 2), 10))
    assert batch.policy_batches["p0"]["rewards"].tolist()[:10] == [100, 100, 100, 100, 0] * 2
    assert (batch.policy_batches["p0"]["terminateds"].tolist()[:10]
            == [False, False, False, False, True] * 2)
    assert (batch.policy_batches["p0"]["t"].tolist()[:10]
            == [4, 9, 14, 19, 24, 5, 10, 15, 20, 25])


def test_custom_rnn_state_values():
    h = {"some": {"arbitrary": "structure", "here": [1, 2, 3]}}

    class StatefulPolicy(RandomPolicy):
        def compute_actions(self, obs_batch, state_batches=None, prev_action_batch=None,
                            prev_reward_batch=None, episodes=None, explore=True,
                            timestep=None, **kwargs):
            return [0] * len(obs_batch), [[h] * len(obs_batch)], {}

        def get_initial_state(self):
            return [{}]  # empty dict

    ev = RolloutWorker(
        env_creator=lambda _: gym.make("CartPole-v1"),
        default_policy_class=StatefulPolicy,
        config=AlgorithmConfig().rollouts(rollout_fragment_length=5, num_rollout_workers=0),
    )
    batch = ev.sample()
    assert batch.count == 5
    assert batch["state_in_0"][0] == {}
    assert batch["state_out_0"][0] == h
    for i in range(1, 5):
        assert batch["state_in_0"][i] == h
        assert batch["state_out_0"][i] == h


def test_train_multi_agent_cartpole_multi_policy():
    n = 10
    register_env("multi_agent_cartpole", lambda _: MultiAgentCartPole({"num_agents": n}))

    def gen_policy():
        config = {"gamma": random.choice([0.5, 0.8, 0.9, 0.95, 0.99]),
                  "n_step": random.choice([1, 2, 3, 4, 5])}
        return PolicySpec(config=config)

    pg = PG(env="multi_agent_cartpole", config={
        "num_workers": 0,
        "multiagent": {
            "policies": {"policy_1": gen_policy(), "policy_2": gen_policy()},
            "policy_mapping_fn": lambda aid, **kwargs: "policy_1",
        },
        "framework": "tf2",
    })
    # Just check that it runs without crashing.
    for i in range(10):
        result = pg.train()
        print("Iteration {}, reward {}, timesteps {}".format(
            i, result["episode_reward_mean"], result["timesteps_total"]))
    assert pg.compute_single_action([0, 0, 0, 0], policy_id="policy_1") in [0, 1]
    assert pg.compute_single_action([0, 0, 0, 0], policy_id="policy_2") in [0, 1]
    with pytest.raises(KeyError, match="not found in PolicyMap"):
        pg.compute_single_action([0, 0, 0, 0], policy_id="policy_3")
    pg.stop()


def test_space_in_preferred_format():
    env = NestedMultiAgentEnv()
    assert env._check_if_action_space_maps_agent_id_to_sub_space(), \
        "Space is not in preferred format."
    assert env._check_if_obs_space_maps_agent_id_to_sub_space(), \
        "Space is not in preferred format."
    assert env._check_if_space_maps_agent_id_to_sub_space(), "Space is not in preferred format."
    env2 = make_multi_agent("CartPole-v1")()
    assert not env2._check_if_space_maps_agent_id_to_sub_space(), \
        "Space should not be in preferred format but is."
    assert not env2._check_if_action_space_maps_agent_id_to_sub_space(), \
        "Space should not be in preferred format but is."
    assert not env2._check_if_obs_space_maps_agent_id_to_sub_space(), \
        "Space should not be in preferred format but is."


def test_spaces_sample_contain_in_preferred_format():
    env = NestedMultiAgentEnv()
    # Spaces in the preferred format: Dict spaces mapping agent ids to sub-spaces.
    obs = env.observation_space_sample()
    assert env.observation_space_contains(obs), "Observation space does not contain obs"
    action = env.action_space_sample()
    assert env.action_space_contains(action), "Action space does not contain action"


def test_spaces_sample_contain_not_in_preferred_format():
    env = make_multi_agent("CartPole-v1")({"num_agents": 2})
    # Spaces not in the preferred format (one space shared by all agents).
    obs = env.observation_space_sample()
    assert env.observation_space_contains(obs), "Observation space does not contain obs"
    action = env.action_space_sample()
    assert env.action_space_contains(action), "Action space does not contain action"
