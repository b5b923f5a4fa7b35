"""Samplers with real TFPolicies: the array path on gymnasium's CartPole vector env, and
several TF policies acting in one TFRunBuilder call."""

import gymnasium as gym
import numpy as np

from tfrl.env.base_env import BaseEnv
from tfrl.evaluation.sampling.loop import SamplingLoop
from tfrl.evaluation.sampling.vector_loop import VectorSamplingLoop
from tfrl.policy.tf_policy import TFPolicy
from tfrl.utils import tf_run_builder

from sampler_helpers import FakeWorker, TwoAgentEnv, make_sampler


class TrivialLossPolicy(TFPolicy):
    def loss(self, model, dist_class, train_batch):
        return 0.0 * self.global_mean(train_batch["rewards"])


def test_tf_policy_on_the_cartpole_vector_env():
    env = gym.make_vec("CartPole-v1", 4, vectorization_mode="vector_entry_point")
    worker = FakeWorker({"default_policy": (TrivialLossPolicy, env.single_observation_space,
                                            env.single_action_space,
                                            {"seed": 0, "model": {"fcnet_hiddens": [8]}})})
    sampler = make_sampler(worker, env, rollout_fragment_length=40)
    assert type(sampler.runner) is VectorSamplingLoop
    batch = sampler.next()
    assert batch.count == 40
    assert batch["action_dist_inputs"].shape == (40, 2) and batch["vf_preds"].shape == (40,)
    np.testing.assert_allclose(batch["action_prob"], np.exp(batch["action_logp"]), rtol=1e-5)
    assert set(np.unique(batch["actions"])) <= {0, 1}
    assert batch["obs"].dtype == np.float32 and batch["obs"].shape == (40, 4)
    # Consecutive rows of one sub-env chain: new_obs[t] == obs[t + 1] within an episode.
    for env_id in range(4):
        rows = batch["env_id"] == env_id
        obs, new_obs, dones = batch["obs"][rows], batch["new_obs"][rows], batch["dones"][rows]
        keep = ~dones[:-1]
        np.testing.assert_array_equal(new_obs[:-1][keep], obs[1:][keep])


def test_several_tf_policies_act_in_one_run_builder_call():
    space = gym.spaces.Box(0.0, 100.0, (2,), np.float32)
    config = {"seed": 0, "inference": "tf", "model": {"fcnet_hiddens": [4]}}
    worker = FakeWorker({"pa": (TrivialLossPolicy, space, gym.spaces.Discrete(3), config),
                         "pb": (TrivialLossPolicy, space, gym.spaces.Discrete(3), config)},
                        policy_mapping_fn=lambda agent_id, episode, **kw: "p" + agent_id)
    env = BaseEnv.to_base_env(TwoAgentEnv(length=6))
    sampler = make_sampler(worker, env, rollout_fragment_length=float("inf"),
                           multiple_episodes_in_batch=False)
    assert type(sampler.runner) is SamplingLoop
    before = tf_run_builder.num_traces()
    batch = sampler.next()
    assert tf_run_builder.num_traces() == before + 1  # traced once, for the pair pa + pb
    a, b = batch.policy_batches["pa"], batch.policy_batches["pb"]
    assert a.count == 6 and b.count == 3
    assert a["action_dist_inputs"].shape == (6, 3)
    assert a["actions"].dtype == np.int64 and set(np.unique(a["actions"])) <= {0, 1, 2}


class OwnExplorationPolicy(TrivialLossPolicy):
    """Adds its own exploration in `compute_actions` (as DQN and TD3 do)."""

    def compute_actions(self, obs_batch, *args, **kwargs):
        actions, state_outs, extras = super().compute_actions(obs_batch, *args, **kwargs)
        return np.zeros_like(actions), state_outs, extras


def test_a_policy_with_its_own_compute_actions_acts_by_its_own_call():
    # The run builder runs `action_graph`, which would skip the override's exploration.
    space = gym.spaces.Box(0.0, 100.0, (2,), np.float32)
    config = {"seed": 0, "inference": "tf", "model": {"fcnet_hiddens": [4]}}
    worker = FakeWorker({"pa": (OwnExplorationPolicy, space, gym.spaces.Discrete(3), config),
                         "pb": (TrivialLossPolicy, space, gym.spaces.Discrete(3), config)},
                        policy_mapping_fn=lambda agent_id, episode, **kw: "p" + agent_id)
    sampler = make_sampler(worker, BaseEnv.to_base_env(TwoAgentEnv(length=6)),
                           rollout_fragment_length=float("inf"),
                           multiple_episodes_in_batch=False)
    assert not sampler.runner.run_builder_ok(worker.policy_map["pa"])
    assert sampler.runner.run_builder_ok(worker.policy_map["pb"])
    before = tf_run_builder.num_traces()
    batch = sampler.next()
    assert tf_run_builder.num_traces() == before
    assert batch.policy_batches["pa"]["actions"].tolist() == [0] * 6
