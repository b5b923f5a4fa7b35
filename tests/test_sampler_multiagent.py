"""SyncSampler on multi-agent envs: routing by policy_mapping_fn, one compute_actions per
policy per step, rewards of unobserved agents, agent-step counting, observation_fn."""

import gymnasium as gym
import numpy as np

from tfrl.env.base_env import BaseEnv
from tfrl.evaluation.sampling.loop import SamplingLoop
from tfrl.policy.multi_agent_batch import MultiAgentBatch

from sampler_helpers import FakePolicy, FakeWorker, TwoAgentEnv, make_sampler

SPACE = gym.spaces.Box(0.0, 100.0, (2,), np.float32)


def _setup(num_envs=1, length=5, **kwargs):
    envs = [TwoAgentEnv(length) for _ in range(num_envs)]
    base = BaseEnv.to_base_env(envs[0], make_env=lambda i: envs[i], num_envs=num_envs)
    worker = FakeWorker({"pa": (FakePolicy, SPACE, gym.spaces.Discrete(3), {}),
                         "pb": (FakePolicy, SPACE, gym.spaces.Discrete(3), {})},
                        policy_mapping_fn=lambda agent_id, episode, **kw: "p" + agent_id)
    return worker, make_sampler(worker, base, **kwargs), envs


def test_agents_are_routed_to_their_policies():
    worker, sampler, envs = _setup(rollout_fragment_length=float("inf"),
                                   multiple_episodes_in_batch=False)
    assert type(sampler.runner) is SamplingLoop
    batch = sampler.next()
    assert isinstance(batch, MultiAgentBatch) and batch.env_steps() == 5
    a, b = batch.policy_batches["pa"], batch.policy_batches["pb"]
    # FakePolicy: floor(10 * (t + agent)) % 3; rewards: action + t after the step.
    assert a["actions"].tolist() == [0, 1, 2, 0, 1]
    assert a["rewards"].tolist() == [1.0, 3.0, 5.0, 4.0, 6.0]
    assert a["terminateds"].tolist() == [False] * 4 + [True]
    assert a["agent_index"].tolist() == [0] * 5 and b["agent_index"].tolist() == [1] * 3
    # "b" acts at t = 0, 2, 4; the reward of its action arrives while it is unobserved
    # and is added to its next row. It is still alive, unobserved, when the episode ends:
    # as in RLlib it gets a last row (new_obs = its last obs) carrying the reward of its
    # last action and the episode's done flag, so no reward is lost.
    assert b["actions"].tolist() == [1, 0, 2] and b["obs"][:, 0].tolist() == [0, 2, 4]
    assert b["new_obs"][:, 0].tolist() == [2, 4, 4]
    assert b["rewards"].tolist() == [2.0, 3.0, 7.0]
    assert b["terminateds"].tolist() == [False, False, True]
    assert envs[0].received[:2] == [{"a": 0, "b": 1}, {"a": 1}]
    metrics = sampler.get_metrics()
    assert metrics[0].agent_rewards == {("a", "pa"): 19.0, ("b", "pb"): 12.0}
    assert metrics[0].episode_reward == 31.0


def test_one_compute_actions_call_per_policy_per_step():
    worker, sampler, _ = _setup(num_envs=3, rollout_fragment_length=15,
                                multiple_episodes_in_batch=True)
    sampler.next()
    pa, pb = worker.policy_map["pa"], worker.policy_map["pb"]
    assert pa.batch_sizes[:5] == [3] * 5  # agent "a" of all 3 sub-envs, each step
    assert pb.batch_sizes[:3] == [3] * 3  # "b" only acts every other step


def test_postprocessing_sees_the_other_agents():
    worker, sampler, _ = _setup(rollout_fragment_length=float("inf"),
                                multiple_episodes_in_batch=False)
    sampler.next()
    batch_a, others, episode = worker.policy_map["pa"].postprocessed[0]
    assert list(others) == ["b"]
    policy_b, batch_b = others["b"]
    assert policy_b is worker.policy_map["pb"] and batch_b.count == 3
    assert episode.length == 5 and episode.get_agents() == ["a", "b"]


def test_truncate_mode_counts_env_or_agent_steps():
    _, sampler, _ = _setup(length=100, rollout_fragment_length=6, multiple_episodes_in_batch=True)
    batch = sampler.next()
    assert batch.env_steps() == 6 and batch.agent_steps() == 6 + 3
    _, sampler, _ = _setup(length=100, rollout_fragment_length=6, multiple_episodes_in_batch=True,
                           count_steps_by="agent_steps")
    batch = sampler.next()
    assert batch.agent_steps() == 6 and batch.env_steps() == 4


def test_observation_fn_rewrites_observations():
    seen = []

    def observation_fn(agent_obs, worker, base_env, policies, episode, **kwargs):
        seen.append((sorted(agent_obs), sorted(policies)))
        return {agent: obs * 2 for agent, obs in agent_obs.items()}

    _, sampler, _ = _setup(rollout_fragment_length=float("inf"), multiple_episodes_in_batch=False,
                           observation_fn=observation_fn)
    batch = sampler.next()
    assert batch.policy_batches["pa"]["obs"][:, 0].tolist() == [0, 2, 4, 6, 8]
    assert seen[0] == (["a", "b"], ["pa", "pb"]) and seen[1] == (["a"], ["pa", "pb"])
