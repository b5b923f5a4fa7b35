"""SyncSampler options and errors: horizon, soft_horizon, no_done_at_end, reward and
action processing, bad observations, NaN rewards, unknown policy ids."""

from types import SimpleNamespace

import numpy as np
import pytest

from tfrl.env.vector_env import VectorEnv
from tfrl.evaluation.sampler import SyncSampler

from sampler_helpers import (DictOnlyBaseEnv, FakePolicy, FakeWorker, counter_vector_env,
                             counter_worker, make_sampler, scripted_env, scripted_worker)
from toy_envs import CounterEnv

PATHS = ["vector", "generic"]


def _wrap(env, path):
    return env if path == "vector" else DictOnlyBaseEnv(env)


def test_hard_horizon_truncates_and_resets_the_sub_env():
    base = counter_vector_env(1, lengths=[10])
    sampler = make_sampler(counter_worker(), base, horizon=3, rollout_fragment_length=7)
    b = sampler.next()
    assert b["t"].tolist() == [0, 1, 2, 0, 1, 2, 0]
    assert b["truncateds"].tolist() == [False, False, True] * 2 + [False]
    assert not b["terminateds"].any()
    # The sub-env was reset: episode counter (obs[1]) goes up, t (obs[2]) restarts.
    assert b["obs"][:, 1].tolist() == [0, 0, 0, 1, 1, 1, 2]
    assert b["obs"][:, 2].tolist() == [0, 1, 2, 0, 1, 2, 0]
    assert [m.episode_length for m in sampler.get_metrics()] == [3, 3]


@pytest.mark.parametrize("path", PATHS)
def test_soft_horizon_ends_episodes_without_resetting_the_env(path):
    base = _wrap(counter_vector_env(1, lengths=[10]), path)
    sampler = make_sampler(counter_worker(), base, horizon=4, soft_horizon=True,
                           rollout_fragment_length=10)
    b = sampler.next()
    assert b["t"].tolist() == [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]
    assert b["obs"][:, 2].tolist() == list(range(10))  # the env was never reset
    # RLlib records done=False at a soft horizon (the env goes on): only the env's own
    # end is flagged.
    assert not b["truncateds"].any()
    assert b["terminateds"].tolist() == [False] * 9 + [True]
    assert b["dones"].tolist() == [False] * 9 + [True]
    assert len(set(b["eps_id"].tolist())) == 3
    assert [m.episode_length for m in sampler.get_metrics()] == [4, 4, 2]


@pytest.mark.parametrize("path", PATHS)
def test_a_soft_horizon_chunk_bootstraps_from_the_value_of_its_next_observation(path):
    from tfrl.evaluation.postprocessing import bootstrap_value

    base = _wrap(counter_vector_env(1, lengths=[10]), path)
    b = make_sampler(counter_worker(), base, horizon=4, soft_horizon=True,
                     rollout_fragment_length=10).next()
    critic = SimpleNamespace(config={"no_done_at_end": False},
                             value=lambda obs, states=None, **kw: obs.sum(axis=1))
    first, _, last = b.split_by_episode()
    # obs = [sub-env, episode, t]: the step at the horizon leads to t=4 of the same
    # (never reset) env episode, whose value the logical episode bootstraps with.
    assert first["new_obs"][-1].tolist() == [0.0, 0.0, 4.0]
    assert bootstrap_value(critic, first) == 4.0
    assert bootstrap_value(critic, last) == 0.0  # the env's own termination


class _HalfTrainedEnv(CounterEnv):
    """CounterEnv whose odd episodes say `training_enabled=False` in every step's info."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated, truncated, {
            **info, "training_enabled": self.episode % 2 == 0}


def _half_trained_env(path, length=3):
    envs = [_HalfTrainedEnv(0, length=length)]
    return _wrap(VectorEnv.vectorize_gym_envs(existing_envs=envs, num_envs=1).to_base_env(),
                 path)


@pytest.mark.parametrize("path", PATHS)
def test_steps_whose_info_disables_training_are_left_out_of_the_batch(path):
    sampler = make_sampler(counter_worker(), _half_trained_env(path), rollout_fragment_length=12)
    b = sampler.next()
    # Episodes 0 and 2 (of 0..3 in the 12 env steps) are kept, 1 and 3 left out.
    assert b["obs"][:, 1].tolist() == [0, 0, 0, 2, 2, 2]
    assert b["t"].tolist() == [0, 1, 2] * 2
    # Every episode still counts in the metrics.
    assert [m.episode_length for m in sampler.get_metrics()] == [3, 3, 3, 3]


@pytest.mark.parametrize("path", PATHS)
def test_a_fragment_cut_leaves_out_the_chunk_whose_last_info_disables_training(path):
    # RLlib decides per chunk, on the agent's last info when the chunk is cut.
    sampler = make_sampler(counter_worker(), _half_trained_env(path), rollout_fragment_length=4)
    first = sampler.next()  # episode 0 (kept) and the first step of episode 1 (left out)
    assert first["obs"][:, 1].tolist() == [0, 0, 0]
    second = sampler.next()  # the rest of episode 1 (left out), 2 steps of episode 2
    assert second["obs"][:, 1].tolist() == [2, 2]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("complete", [False, True])
def test_a_fragment_with_every_step_left_out_is_an_empty_multi_agent_batch(path, complete):
    from tfrl.policy.multi_agent_batch import MultiAgentBatch

    class NeverTrained(CounterEnv):
        def step(self, action):
            obs, reward, terminated, truncated, info = super().step(action)
            return obs, reward, terminated, truncated, {"training_enabled": False}

    base = _wrap(VectorEnv.vectorize_gym_envs(existing_envs=[NeverTrained(0, length=3)],
                                              num_envs=1).to_base_env(), path)
    b = make_sampler(counter_worker(), base, rollout_fragment_length=5,
                     multiple_episodes_in_batch=not complete).next()
    # RLlib's empty MultiAgentBatch: no policy batches, the env steps still counted.
    assert isinstance(b, MultiAgentBatch) and b.policy_batches == {}
    assert b.env_steps() == (3 if complete else 5)


class _ActionRecorder(CounterEnv):
    """CounterEnv with Box actions that keeps every action it is given."""

    def __init__(self, *args, **kwargs):
        import gymnasium as gym

        super().__init__(*args, **kwargs)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.actions = []

    def step(self, action):
        self.actions.append(action)
        return super().step(0)


@pytest.mark.parametrize("path", PATHS)
def test_the_env_gets_read_only_actions(path):
    import gymnasium as gym

    envs = [_ActionRecorder(i, length=3) for i in range(2)]
    base = _wrap(VectorEnv.vectorize_gym_envs(existing_envs=envs, num_envs=2).to_base_env(),
                 path)
    worker = counter_worker(action_space=gym.spaces.Box(-1.0, 1.0, (2,), np.float32))
    b = make_sampler(worker, base, rollout_fragment_length=6).next()
    actions = [a for env in envs for a in env.actions]
    assert len(actions) == 6
    # As RLlib's envs: read-only arrays (views, not copies of the policy's actions).
    assert all(isinstance(a, np.ndarray) and not a.flags.writeable for a in actions)
    with pytest.raises(ValueError, match="read-only"):
        actions[0][0] = 5.0
    assert b["actions"].flags.writeable


@pytest.mark.parametrize("path", PATHS)
def test_no_done_at_end_records_false_flags(path):
    base = _wrap(counter_vector_env(1, lengths=[3]), path)
    sampler = make_sampler(counter_worker(), base, no_done_at_end=True, rollout_fragment_length=6)
    b = sampler.next()
    assert not b["terminateds"].any() and not b["truncateds"].any() and not b["dones"].any()
    assert b["t"].tolist() == [0, 1, 2, 0, 1, 2]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("clip, expected", [(False, [1.0, 12.0, 23.0]), (True, [1.0, 1.0, 1.0]),
                                            (5.0, [1.0, 5.0, 5.0])])
def test_clip_rewards(path, clip, expected):
    base = _wrap(counter_vector_env(1, lengths=[3]), path)
    b = make_sampler(counter_worker(), base, clip_rewards=clip, rollout_fragment_length=3).next()
    assert b["rewards"].tolist() == expected
    assert b["rewards"].dtype == np.float32


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("normalize, clip", [(True, False), (False, True), (False, False)])
def test_actions_sent_to_the_env_are_unsquashed_or_clipped(path, normalize, clip):
    base = scripted_env(1, length=50)
    env = base.get_sub_environments()[0]
    sampler = make_sampler(scripted_worker(), _wrap(base, path), normalize_actions=normalize,
                           clip_actions=clip, rollout_fragment_length=3)
    b = sampler.next()
    policy_actions = b["actions"][:, 0]  # tanh(sum(obs)) in [-1, 1]
    np.testing.assert_allclose(policy_actions, np.tanh([0.0, 1.0, 2.0]), rtol=1e-6)
    sent = np.array(env.received[:3])[:, 0]
    if normalize:  # Box(-2, 2): low + (a + 1) * (high - low) / 2 = 2 * a
        np.testing.assert_allclose(sent, 2.0 * policy_actions, rtol=1e-6)
    else:
        np.testing.assert_allclose(sent, policy_actions, rtol=1e-6)


def test_normalize_clips_out_of_range_policy_outputs():
    from tfrl.evaluation.sampling.ops import ActionProcessor
    import gymnasium as gym

    box = gym.spaces.Box(np.array([0.0, -1.0], np.float32), np.array([4.0, 1.0], np.float32))
    out = ActionProcessor(box, normalize=True, clip=False)(np.array([[-1.0, 0.5], [3.0, -9.0]]))
    np.testing.assert_allclose(out, [[0.0, 0.5], [4.0, -1.0]])
    assert out.dtype == np.float32
    clipped = ActionProcessor(box, normalize=False, clip=True)(np.array([[-1.0, 0.5]]))
    np.testing.assert_allclose(clipped, [[0.0, 0.5]])
    discrete = ActionProcessor(gym.spaces.Discrete(3), normalize=True, clip=True)
    actions = np.array([2, 0])
    assert discrete(actions) is actions


@pytest.mark.parametrize("path", PATHS)
def test_nan_reward_error_names_env_agent_and_step(path):
    sampler = make_sampler(scripted_worker(), _wrap(scripted_env(2, nan_reward_at=2), path))
    with pytest.raises(ValueError, match=r"env 0, agent 'agent0' at episode step 2 is not "
                                         r"finite\. Received: reward=nan"):
        sampler.next()


@pytest.mark.parametrize("path", PATHS)
def test_observation_outside_the_space_names_value_and_space(path):
    sampler = make_sampler(scripted_worker(), _wrap(scripted_env(2, bad_obs_at=3), path))
    with pytest.raises(ValueError) as info:
        sampler.next()
    message = str(info.value)
    assert "env 0, agent 'agent0'" in message and "-5." in message
    assert "Box(0.0, 10.0, (2,), float32)" in message and "outside the bounds" in message


def test_observation_of_the_wrong_shape_is_rejected():
    from tfrl.evaluation.sampling.ops import ObservationChecker
    import gymnasium as gym

    checker = ObservationChecker(gym.spaces.Dict({"a": gym.spaces.Discrete(3)}))
    assert checker.first_error({"a": np.array([0, 2])}) is None
    assert checker.first_error({"a": np.array([0, 3])}) == (
        1, "observation['a'] is not an integer in [0, 3)")
    box = ObservationChecker(gym.spaces.Box(0.0, 1.0, (2,)))
    assert box.first_error(np.zeros((2, 3))) == (0, "observation has shape (3,), expected (2,)")
    assert box.first_error(np.array([[0.5, np.nan]]))[0] == 0


@pytest.mark.parametrize("path", PATHS)
def test_unknown_policy_id_from_the_mapping_fn(path):
    worker = counter_worker()
    worker.policy_mapping_fn = lambda agent_id, episode, **kw: "typo_policy"
    sampler = make_sampler(worker, _wrap(counter_vector_env(2), path))
    with pytest.raises(KeyError, match="'typo_policy'.*Valid policy ids: \\['default_policy'\\]"):
        sampler.next()


def test_settings_are_validated():
    worker = counter_worker()
    with pytest.raises(ValueError, match="count_steps_by must be 'env_steps' or 'agent_steps'. "
                                         "Received: 'steps'"):
        make_sampler(worker, counter_vector_env(1), count_steps_by="steps")
    with pytest.raises(ValueError, match="rollout_fragment_length must be a positive int"):
        make_sampler(worker, counter_vector_env(1), rollout_fragment_length=0)
    with pytest.raises(ValueError, match="horizon must be None or a positive int"):
        make_sampler(worker, counter_vector_env(1), horizon=-1)


def _cartpole_sampler(horizon, soft_horizon=False, **make_vec_kwargs):
    import gymnasium as gym

    make_vec_kwargs.setdefault("vectorization_mode", "vector_entry_point")
    env = gym.make_vec("CartPole-v1", 2, **make_vec_kwargs)
    worker = FakeWorker({"default_policy": (FakePolicy, env.single_observation_space,
                                            env.single_action_space, {})})
    return SyncSampler(worker=worker, env=env, clip_rewards=False, rollout_fragment_length=50,
                       callbacks=worker.callbacks, multiple_episodes_in_batch=True,
                       horizon=horizon, soft_horizon=soft_horizon)


def _episode_lengths(batch):
    return [len(b) for b in batch.split_by_episode()]


def test_hard_horizon_on_an_env_that_cannot_reset_one_sub_env_fails_at_construction():
    with pytest.raises(ValueError) as err:
        _cartpole_sampler(horizon=2)
    message = str(err.value)
    assert message.startswith("horizon=2 (a hard horizon) truncates an episode after 2 steps "
                              "and resets that sub-env alone, which CartPoleVectorEnv cannot do")
    assert "(its own limit is max_episode_steps=500)" in message
    assert "vectorization_mode='vector_entry_point', max_episode_steps=2)" in message
    assert "vectorization_mode='sync'" in message and "soft_horizon=True" in message


def test_the_alternatives_the_hard_horizon_error_names_cut_episodes_at_the_horizon():
    # The env's own limit: truncated after 2 steps, no horizon needed.
    batch = _cartpole_sampler(None, max_episode_steps=2).next()
    assert max(_episode_lengths(batch)) == 2 and batch["truncateds"].sum() >= 24
    assert not batch["terminateds"].any()
    # SyncVectorEnv resets single sub-envs: the hard horizon works there.
    batch = _cartpole_sampler(2, vectorization_mode="sync").next()
    assert max(_episode_lengths(batch)) == 2 and batch["truncateds"].sum() >= 24
    assert not batch["terminateds"].any()
    # A soft horizon needs no reset.
    assert _cartpole_sampler(2, soft_horizon=True).next().count == 50


def test_a_hard_horizon_beyond_the_env_limit_is_accepted():
    sampler = _cartpole_sampler(horizon=500)  # CartPole-v1 truncates at 500 itself
    assert sampler.next().count == 50


def test_numpy_integer_settings_are_accepted():
    sampler = make_sampler(counter_worker(), counter_vector_env(1),
                           rollout_fragment_length=np.int64(4), horizon=np.int64(100))
    assert sampler.next().count == 4


def test_a_policy_added_later_hands_over_to_the_generic_loop():
    from sampler_helpers import FakePolicy
    from tfrl.evaluation.sampling.loop import SamplingLoop
    from tfrl.policy.multi_agent_batch import MultiAgentBatch

    worker = counter_worker()
    sampler = make_sampler(worker, counter_vector_env(2), rollout_fragment_length=5)
    assert sampler.next().count == 5
    default = worker.policy_map["default_policy"]
    worker.policy_map["other"] = FakePolicy(default.observation_space, default.action_space)
    worker.policy_mapping_fn = lambda agent_id, episode, **kw: "other"
    batch = sampler.next()
    assert type(sampler.runner) is SamplingLoop
    assert isinstance(batch, MultiAgentBatch) and batch.env_steps() == 5
    later = sampler.next()
    assert set(later.policy_batches) == {"other"} and later.env_steps() == 5


class _OverflowEnv:
    """obs [t, 0] (float64) in an unbounded float32 Box, reward 1.0; at step `at` the
    observation's first entry or the reward is `value` (finite in Python, inf in float32)."""

    def __init__(self, at, value, where):
        import gymnasium as gym

        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
        self.action_space = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
        self.at, self.value, self.where, self.t = at, value, where, 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(2), {}

    def step(self, action):
        self.t += 1
        obs = np.array([self.t, 0.0])
        reward = 1.0
        if self.t == self.at:
            if self.where == "obs":
                obs[0] = self.value
            else:
                reward = self.value
        return obs, reward, self.t >= 10, False, {}


def _overflow_sampler(path, at, value, where):
    import gymnasium as gym

    from tfrl.env.vector_env import VectorEnv

    class Env(_OverflowEnv, gym.Env):
        pass

    envs = [Env(at, value, where), Env(at + 1, value, where)]
    base = VectorEnv.vectorize_gym_envs(existing_envs=envs, num_envs=2).to_base_env()
    worker = FakeWorker({"default_policy": (FakePolicy, envs[0].observation_space,
                                            envs[0].action_space, {})})
    return make_sampler(worker, _wrap(base, path), rollout_fragment_length=20)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("value", [1e39, -1e300])
def test_a_reward_that_overflows_float32_names_env_agent_and_value(path, value):
    # Issue 29, item 6: finite as a Python float, inf in the float32 batch; it used to be
    # caught only at update time, pointing at the batch.
    sampler = _overflow_sampler(path, 2, value, "reward")
    with pytest.raises(ValueError, match=r"env 0, agent 'agent0' at episode step 2 overflows "
                                         r"float32, the dtype batches store rewards in "
                                         r"\(largest 3.4028235e\+38\)\. Received: reward="
                                         + f"{value!r}".replace("+", r"\+")):
        sampler.next()


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("value", [1e39, 1e300, np.inf])
def test_an_observation_that_overflows_float32_names_env_agent_and_value(path, value):
    sampler = _overflow_sampler(path, 3, value, "obs")
    with pytest.raises(ValueError) as info:
        sampler.next()
    message = str(info.value)
    assert "Observation of env 0, agent 'agent0'" in message, message
    assert "observation[0] = " in message and "not a finite float32 number" in message, message
    if path == "generic":  # the env's own observation (the vector path stacks it as float32)
        assert f"Received: observation={np.array([value, 0.0])!r}" in message, message


def test_the_reward_screen_lets_large_finite_float32_rewards_through():
    from tfrl.evaluation.sampling.ops import check_rewards_array, rewards_may_be_bad

    assert not rewards_may_be_bad(np.array([1.0, -3e5, 0.0]))
    big = np.array([3e38, 3e38], np.float64)  # each fits float32, their squares sum large
    assert rewards_may_be_bad(big)
    check_rewards_array(big, np.arange(2), np.ones(2, np.int64))  # no error
    assert rewards_may_be_bad(np.array([0.0, np.nan]))
    assert rewards_may_be_bad(np.array([1e39, -1e39]))  # a sum would cancel
