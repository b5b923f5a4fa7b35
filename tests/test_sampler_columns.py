"""Columns that depend on the policy: recurrent state-ins/outs, prev_actions/prev_rewards
only when the view requirements name them, preprocessed Dict observations."""

import random

import numpy as np
import pytest

from tfrl.evaluation.sampling.loop import SamplingLoop
from tfrl.evaluation.sampling.vector_loop import VectorSamplingLoop

from sampler_helpers import (DictOnlyBaseEnv, FakeRNNPolicy, NoPrevPolicy, counter_vector_env,
                             counter_worker, make_sampler)


def test_recurrent_state_columns_and_reset_per_episode():
    worker = counter_worker(policy_cls=FakeRNNPolicy)
    sampler = make_sampler(worker, counter_vector_env(1, lengths=[3]), rollout_fragment_length=5)
    assert type(sampler.runner) is SamplingLoop  # recurrent policies use the generic loop
    b = sampler.next()
    # state_out = state_in + [1, sum(obs)], obs = [0, episode, t]; reset per episode.
    np.testing.assert_array_equal(b["state_in_0"][:, 0], [0, 1, 2, 0, 1])
    np.testing.assert_array_equal(b["state_out_0"][:, 0], [1, 2, 3, 1, 2])
    np.testing.assert_array_equal(b["state_out_0"][:, 1], [0, 1, 3, 1, 3])
    np.testing.assert_array_equal(b["state_in_0"][1:3], b["state_out_0"][0:2])


@pytest.mark.parametrize("path", ["vector", "generic"])
def test_prev_columns_only_when_the_view_requirements_ask(path):
    worker = counter_worker(policy_cls=NoPrevPolicy)
    env = counter_vector_env(2)
    env = env if path == "vector" else DictOnlyBaseEnv(env)
    b = make_sampler(worker, env, rollout_fragment_length=6).next()
    assert "prev_actions" not in b and "prev_rewards" not in b
    assert all(p == (None, None) for p in worker.policy_map["default_policy"].prev_inputs)


def test_prev_inputs_passed_to_compute_actions_match_the_columns():
    worker = counter_worker()
    policy = worker.policy_map["default_policy"]
    seen = []
    original = policy.compute_actions

    def spy(obs, state_batches=None, prev_action_batch=None, prev_reward_batch=None, **kw):
        seen.append((prev_action_batch.tolist(), prev_reward_batch.tolist()))
        return original(obs, state_batches, prev_action_batch, prev_reward_batch, **kw)

    policy.compute_actions = spy
    env = DictOnlyBaseEnv(counter_vector_env(1, lengths=[3]))  # one call per recorded row
    b = make_sampler(worker, env, rollout_fragment_length=4).next()
    assert [s[0][0] for s in seen[:4]] == b["prev_actions"].tolist() == [0, 0, 1, 0]
    assert [s[1][0] for s in seen[:4]] == b["prev_rewards"].tolist()


def test_dict_observations_are_preprocessed_and_paths_agree():
    batches = []
    for path in ["vector", "generic"]:
        random.seed(0)
        from sampler_helpers import CounterEnv, FakePolicy, FakeWorker
        from tfrl.env.vector_env import VectorEnv

        envs = [CounterEnv(i, length=3 + i, dict_obs=True) for i in range(2)]
        base = VectorEnv.vectorize_gym_envs(existing_envs=envs, num_envs=2).to_base_env()
        worker = FakeWorker({"default_policy": (FakePolicy, envs[0].observation_space,
                                                envs[0].action_space, {})})
        sampler = make_sampler(worker, base if path == "vector" else DictOnlyBaseEnv(base),
                               rollout_fragment_length=7)
        assert type(sampler.runner) is (VectorSamplingLoop if path == "vector" else SamplingLoop)
        batches.append(sampler.next())
    vec, gen = batches
    assert vec["obs"].shape == (7, 3) and vec["obs"].dtype == np.float32
    for key in ["obs", "new_obs", "actions", "rewards", "t", "env_id", "eps_id"]:
        np.testing.assert_array_equal(vec[key], gen[key], err_msg=key)


def test_sample_batch_shortcut_matches_the_constructor():
    from tfrl.evaluation.sampling import collectors as collectors
    from tfrl.policy.sample_batch import SampleBatch

    data = {"obs": np.zeros((3, 2), np.float32), "infos": np.array([{}, {}, {}], object),
            "t": np.arange(3)}
    collectors._SHORTCUT_OK = None
    first = collectors.sample_batch_from_columns(dict(data), 3)
    assert collectors._SHORTCUT_OK is True
    second = collectors.sample_batch_from_columns(dict(data), 3)
    for batch in (first, second):
        assert isinstance(batch, SampleBatch) and batch.count == 3 and len(batch) == 3
        assert sorted(batch.keys()) == ["infos", "obs", "t"]
        assert vars(batch).keys() == vars(SampleBatch(dict(data))).keys()
        assert batch.copy()["t"].tolist() == [0, 1, 2]
    assert SampleBatch.concat_samples([first, second]).count == 6
