"""RolloutWorker.sample() with the real sampler on deterministic toy envs."""

import gymnasium as gym
import numpy as np
import pytest

from rollout_worker_helpers import CountingPolicy, TwoAgentEnv, agent_to_policy
from toy_envs import CounterEnv
from tfrl.evaluation.rollout_worker import RolloutWorker
from tfrl.policy.multi_agent_batch import MultiAgentBatch
from tfrl.policy.sample_batch import SampleBatch


def counter_worker(**kw):
    kw.setdefault("env_creator", lambda ctx: CounterEnv(index=ctx.vector_index, length=3))
    kw.setdefault("policy_spec", CountingPolicy)
    return RolloutWorker(**kw)


def test_single_agent_fragment_shapes():
    w = counter_worker(num_envs=2, rollout_fragment_length=5)
    batch = w.sample()
    assert isinstance(batch, SampleBatch) and batch.count == 10
    assert batch["obs"].shape == (10, 3) and batch["new_obs"].shape == (10, 3)
    assert set(np.unique(batch["env_id"]).tolist()) == {0, 1}
    np.testing.assert_array_equal(batch["actions"], np.ones(10))
    # reward = 10 * action + t, t = 1, 2, 3 within each episode of 3 steps.
    for env_id in (0, 1):
        rows = batch["env_id"] == env_id
        np.testing.assert_array_equal(batch["rewards"][rows], [11, 12, 13, 11, 12])
        np.testing.assert_array_equal(batch["obs"][rows][:, 0], env_id)
        np.testing.assert_array_equal(batch["terminateds"][rows], [0, 0, 1, 0, 0])
    assert w.sample().count == 10
    metrics = w.get_metrics()
    assert metrics and all(m.episode_length == 3 and m.episode_reward == 36.0 for m in metrics)
    assert w.get_metrics() == []
    w.stop()


def test_dict_observations_are_flattened_for_the_policy():
    w = counter_worker(env_creator=lambda ctx: CounterEnv(dict_obs=True), rollout_fragment_length=4)
    batch = w.sample()
    assert batch["obs"].shape == (4, 3)
    np.testing.assert_array_equal(batch["obs"][:, 2], [0, 1, 2, 0])


def test_complete_episodes_only_whole_episodes():
    w = counter_worker(num_envs=2, rollout_fragment_length=4, batch_mode="complete_episodes")
    batch = w.sample()
    assert batch.count >= 8 and batch.count % 3 == 0
    assert int(batch["terminateds"].sum()) == batch.count // 3


def test_multi_agent_routing():
    w = RolloutWorker(env_creator=lambda ctx: TwoAgentEnv({"length": 4}),
                      policy_spec={"pa": (CountingPolicy, None, None, {}),
                                   "pb": (CountingPolicy, None, None, {})},
                      policy_mapping_fn=agent_to_policy, rollout_fragment_length=6)
    batch = w.sample()
    assert isinstance(batch, MultiAgentBatch) and batch.count == 6
    pa, pb = batch.policy_batches["pa"], batch.policy_batches["pb"]
    assert pa.count == pb.count == 6
    assert pa["obs"].shape == (6, 3)
    assert pb["obs"].shape == (6, 4)  # Discrete(4) one-hot
    np.testing.assert_array_equal(pb["obs"][:4].argmax(1), [0, 1, 2, 3])
    np.testing.assert_array_equal(pa["obs"][:4, 0], [0, 1, 2, 3])
    assert w.learn_on_batch(batch).keys() == {"pa", "pb"}


def test_mean_std_filter_updated_during_sampling_and_synced():
    w = counter_worker(rollout_fragment_length=6, observation_filter="MeanStdFilter")
    batch = w.sample()
    f = w.filters["default_policy"]
    # Every observation passes the filter: 2 episodes x (reset + 3 steps), t = 0..3.
    assert f.running_stats.n == 8
    np.testing.assert_allclose(f.running_stats.mean, [0.0, 0.5, 1.5])
    np.testing.assert_allclose(f.running_stats.std[2], np.std([0, 1, 2, 3] * 2, ddof=1))
    # The policy saw normalised observations: the first reset obs normalised by itself.
    np.testing.assert_allclose(batch["obs"][0], [0.0, 0.0, 0.0])
    snapshot = w.get_filters(flush_after=True)["default_policy"]
    assert snapshot.buffer.n == f.running_stats.n and f.buffer.n == 0
    other = counter_worker(rollout_fragment_length=6, observation_filter="MeanStdFilter")
    other.sync_filters(w.get_filters())
    assert other.filters["default_policy"].running_stats.n == f.running_stats.n


class OutOfSpaceEnv(CounterEnv):
    def _obs(self):
        return np.full(3, 5000.0, np.float32)  # outside Box(0, 1000)


class NanRewardEnv(CounterEnv):
    def step(self, action):
        obs, _, terminated, truncated, info = super().step(action)
        return obs, float("nan"), terminated, truncated, info


@pytest.mark.parametrize("env_cls, match", [(OutOfSpaceEnv, "(?i)observation"), (NanRewardEnv, "(?i)nan")])
def test_bad_env_output_surfaces_through_sample(env_cls, match):
    w = counter_worker(env_creator=lambda ctx: env_cls())
    with pytest.raises(ValueError, match=match):
        w.sample()


def test_mapping_fn_returning_unknown_policy():
    w = RolloutWorker(env_creator=lambda ctx: TwoAgentEnv(),
                      policy_spec={"pa": (CountingPolicy, None, None, {}),
                                   "pb": (CountingPolicy, None, None, {})},
                      policy_mapping_fn=agent_to_policy)
    w.set_policy_mapping_fn(lambda agent_id, episode, worker=None, **kw: "nope")
    with pytest.raises((KeyError, ValueError), match="nope"):
        w.sample()


def test_cartpole_native_vector_path_samples_seeded():
    from tfrl.algorithms.pg.pg_tf_policy import PGTFPolicy

    def run():
        w = RolloutWorker(env_creator=lambda ctx: gym.make("CartPole-v1"), policy_spec=PGTFPolicy,
                          num_envs=4, rollout_fragment_length=10, seed=3,
                          policy_config={"model": {"fcnet_hiddens": [8]}})
        return w.sample()

    a, b = run(), run()
    assert a.count == 40
    np.testing.assert_array_equal(a["obs"], b["obs"])
    np.testing.assert_array_equal(a["actions"], b["actions"])


def test_async_sampling_and_fake_sampler():
    w = counter_worker(rollout_fragment_length=3, sample_async=True,
                       observation_filter="MeanStdFilter")
    try:
        assert w.sample().count == 3
    finally:
        w.stop()
    w2 = counter_worker(rollout_fragment_length=3, fake_sampler=True)
    assert w2.sample() is w2.sample()


def _remote_counter_env(ctx):
    return CounterEnv(index=ctx.vector_index, length=3)


@pytest.mark.slow
def test_remote_worker_envs_sample_in_subprocesses():
    from tfrl.env.remote_vector_env import RemoteVectorEnv

    w = counter_worker(env_creator=_remote_counter_env, num_envs=2, remote_worker_envs=True,
                       remote_env_batch_wait_ms=10_000, rollout_fragment_length=3)
    try:
        assert isinstance(w.async_env, RemoteVectorEnv)
        batch = w.sample()
        assert batch.count == 6 and batch["obs"].shape == (6, 3)
        # Each poll waits for both sub-envs (up to 10 s), so both contribute whatever the
        # load (with 0 ms a poll returns the first ready one: one env may take every step).
        assert set(batch["env_id"].tolist()) == {0, 1}
    finally:
        w.stop()


def test_async_sampler_error_surfaces_through_sample():
    w = counter_worker(env_creator=lambda ctx: NanRewardEnv(), sample_async=True)
    try:
        with pytest.raises(ValueError, match="(?i)nan"):
            w.sample()
    finally:
        w.stop()


def test_sample_collector_config_is_passed_on_and_warned_about(caplog):
    counter_worker(policy_config={"sample_collector": object})
    assert "sample_collector" in caplog.text


@pytest.mark.slow
def test_sample_then_learn_with_a_tf_policy():
    from tfrl.algorithms.pg.pg_tf_policy import PGTFPolicy

    w = RolloutWorker(env_creator=lambda ctx: gym.make("CartPole-v1"), policy_spec=PGTFPolicy,
                      num_envs=2, rollout_fragment_length=16, seed=0,
                      policy_config={"model": {"fcnet_hiddens": [8]}, "lr": 0.01})
    before = [np.copy(x) for x in w.get_weights()["default_policy"]]
    batch = w.sample()
    assert batch.count == 32
    info = w.learn_on_batch(batch)
    assert "learner_stats" in info["default_policy"]
    after = w.get_weights()["default_policy"]
    assert any(not np.allclose(a, b) for a, b in zip(before, after))
    w.set_policies_to_train([])
    assert w.learn_on_batch(w.sample()) == {}
    for a, b in zip(after, w.get_weights()["default_policy"]):
        np.testing.assert_array_equal(a, b)


def test_episode_horizon_on_a_native_vector_env_is_refused_at_construction():
    with pytest.raises(ValueError, match=r"horizon=5 \(a hard horizon\) truncates .* "
                                         r"max_episode_steps=5\) truncates them"):
        RolloutWorker(env_creator=lambda ctx: gym.make_vec(
            "CartPole-v1", 2, vectorization_mode="vector_entry_point"),
            policy_spec=CountingPolicy, episode_horizon=5)
