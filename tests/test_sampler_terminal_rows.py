"""No action for an ended episode's last observation: the env resets that sub-env in its
next step and ignores the action, so the samplers compute none (no wasted inference) and
the policy's `global_timestep` (epsilon schedules, SAC's random steps) counts the env
steps taken, on the array-based loop as on the generic one."""

import gymnasium as gym
import numpy as np
import pytest

from tfrl.algorithms.dqn.dqn_tf_policy import DQNTFPolicy
from tfrl.env.base_env import BaseEnv
from tfrl.evaluation.sampling.loop import SamplingLoop
from tfrl.evaluation.sampling.vector_loop import VectorSamplingLoop
from tfrl.policy.sample_batch import SampleBatch

from sampler_helpers import (DictOnlyBaseEnv, FakePolicy, FakeWorker, counter_vector_env,
                             counter_worker, make_sampler)

PATHS = ["vector", "generic"]
RUNNERS = {"vector": VectorSamplingLoop, "generic": SamplingLoop}


class RecordingPolicy(FakePolicy):
    """FakePolicy that keeps every observation it acted on and, as TFPolicy does,
    advances `global_timestep` by the rows acted on."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.acted_on = []

    def compute_actions(self, obs_batch, *args, **kwargs):
        self.acted_on.extend(np.asarray(obs_batch).tolist())
        self.global_timestep += len(obs_batch)
        return super().compute_actions(obs_batch, *args, **kwargs)


def _sampler(path, env, **kwargs):
    base = env if path == "vector" else DictOnlyBaseEnv(env)
    worker = counter_worker(RecordingPolicy)
    sampler = make_sampler(worker, base, **kwargs)
    assert type(sampler.runner) is RUNNERS[path]
    return sampler, worker.policy_map["default_policy"]


@pytest.mark.parametrize("truncate", [False, True])
@pytest.mark.parametrize("path", PATHS)
def test_no_action_is_computed_on_an_ended_episodes_last_observation(path, truncate):
    lengths = [3, 5, 2]
    sampler, policy = _sampler(path, counter_vector_env(3, lengths=lengths, truncate=truncate),
                               rollout_fragment_length=7)
    batch = SampleBatch.concat_samples([sampler.next() for _ in range(8)])
    acted = [tuple(o) for o in policy.acted_on]
    # CounterEnv's obs: [sub-env, episode, t]; t == length is an episode's last observation.
    assert not [o for o in acted if o[2] >= lengths[int(o[0])]]
    assert len(set(acted)) == len(acted)  # no observation acted on twice
    # Every recorded row's observation was acted on, and besides them at most the last
    # two polls' (steps of the last poll after the fragment cut, and the steps the env
    # takes next).
    rows = {tuple(o) for o in batch["obs"].tolist()}
    assert rows <= set(acted)
    assert batch.count <= len(acted) <= batch.count + 2 * 3
    assert (batch["terminateds"] | batch["truncateds"]).sum() >= 8  # episodes did end
    assert policy.global_timestep == len(acted)


@pytest.mark.parametrize("path", PATHS)
def test_one_inference_per_env_step_with_one_sub_env(path):
    # Complete episodes of one sub-env: a batch is emitted at the poll that ended the
    # episode, so every action computed so far was used by an env step.
    sampler, policy = _sampler(path, counter_vector_env(1, lengths=[4]),
                               rollout_fragment_length=float("inf"),
                               multiple_episodes_in_batch=False)
    batches = [sampler.next() for _ in range(5)]
    assert [b.count for b in batches] == [4] * 5
    assert policy.batch_sizes == [1] * 20  # 20 env steps, 20 calls (not 25)
    assert policy.global_timestep == 20


def _dqn_sampler(path, num_envs, explore=True, **kwargs):
    env = gym.make_vec("CartPole-v1", num_envs, vectorization_mode="vector_entry_point")
    env.reset(seed=7)
    config = {"seed": 3, "explore": explore, "model": {"fcnet_hiddens": [8]}, "hiddens": [8],
              "exploration_config": {"type": "EpsilonGreedy", "initial_epsilon": 1.0,
                                     "final_epsilon": 0.0, "epsilon_timesteps": 300}}
    worker = FakeWorker({"default_policy": (DQNTFPolicy, env.single_observation_space,
                                            env.single_action_space, config)})
    base = BaseEnv.to_base_env(env)
    sampler = make_sampler(worker, base if path == "vector" else DictOnlyBaseEnv(base),
                           **kwargs)
    assert type(sampler.runner) is RUNNERS[path]
    return sampler, worker.policy_map["default_policy"]


@pytest.mark.parametrize("explore", [True, False])
def test_dqn_batches_of_both_loops_are_equal(explore):
    """The array-based loop acts on the same rows as the generic one, so a seeded
    epsilon-greedy DQN draws the same random numbers on both: equal batches and timesteps."""
    out = []
    for path in PATHS:
        sampler, policy = _dqn_sampler(path, 3, explore=explore,
                                       rollout_fragment_length=30)
        batches = [sampler.next() for _ in range(12)]
        out.append((SampleBatch.concat_samples(batches), policy.global_timestep))
    (vec, vec_steps), (gen, gen_steps) = out
    assert vec_steps == gen_steps
    assert vec["dones"].sum() >= 2  # episodes ended on the way
    assert list(vec.keys()) == list(gen.keys())
    assert {"actions", "action_dist_inputs", "obs"} <= set(vec.keys())
    for key in vec.keys():
        if key not in ("unroll_id", "infos"):  # process-wide counters; empty dicts
            np.testing.assert_array_equal(vec[key], gen[key], err_msg=key)
