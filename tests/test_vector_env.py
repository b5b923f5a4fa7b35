"""VectorEnv, vectorize_gym_envs, the gymnasium fast path, and their BaseEnv."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from tfrl.env.base_env import ASYNC_RESET_RETURN, BaseEnv, convert_to_base_env
from tfrl.env.gymnasium_vector_env import GymnasiumVectorEnv, split_infos
from tfrl.env.vector_env import VectorEnv, _VectorizedGymEnv
from tfrl.env.vector_env_to_base_env import _VectorEnvToBaseEnv
from toy_envs import CounterEnv

A = "agent0"


class ListVectorEnv(VectorEnv):
    """An RLlib-style VectorEnv (no automatic resets) over CounterEnvs."""

    def __init__(self, lengths):
        self.envs = [CounterEnv(i, n) for i, n in enumerate(lengths)]
        super().__init__(self.envs[0].observation_space, self.envs[0].action_space, len(lengths))

    def vector_reset(self, *, seeds=None, options=None):
        results = [env.reset() for env in self.envs]
        return [r[0] for r in results], [r[1] for r in results]

    def reset_at(self, index=None, *, seed=None, options=None):
        return self.envs[index or 0].reset(seed=seed)

    def vector_step(self, actions):
        return tuple(list(column) for column in zip(*(e.step(a) for e, a in zip(self.envs, actions))))

    def get_sub_environments(self):
        return self.envs


def _counters(lengths, **kwargs):
    return [lambda i=i, n=n: CounterEnv(i, n, **kwargs) for i, n in enumerate(lengths)]


def make_base_env(kind, lengths=(2, 3), **kwargs):
    """A BaseEnv over CounterEnvs: in-process list, gymnasium Sync in a mode, or RLlib-style."""
    if kind == "list":
        fns = _counters(lengths, **kwargs)
        return VectorEnv.vectorize_gym_envs(lambda i: fns[i](), num_envs=len(lengths)).to_base_env()
    if kind == "rllib_style":
        return ListVectorEnv(lengths).to_base_env()
    mode = {"next_step": AutoresetMode.NEXT_STEP, "same_step": AutoresetMode.SAME_STEP,
            "disabled": AutoresetMode.DISABLED}[kind]
    return convert_to_base_env(SyncVectorEnv(_counters(lengths, **kwargs), autoreset_mode=mode))


def plain(poll_result):
    """Arrays -> lists in the first dict of a poll (obs), for == comparisons."""
    obs = {i: {a: np.asarray(o).tolist() for a, o in agents.items()} for i, agents in poll_result[0].items()}
    return (obs,) + tuple(poll_result[1:])


def flags(*pairs):
    return {i: {A: value, "__all__": value} for i, value in pairs}


def expect(obs, rewards, terminated=(), truncated=(), infos=None):
    """The poll tuple for single-agent sub-envs: obs/rewards dicts env_id -> value."""
    ids = list(obs)
    return (
        {i: {A: o} for i, o in obs.items()},
        {i: {A: r} for i, r in rewards.items()},
        flags(*[(i, i in terminated) for i in ids]),
        flags(*[(i, i in truncated) for i in ids]),
        {i: {A: info} for i, info in (infos or {i: {"t": int(obs[i][2])} for i in ids}).items()},
        {},
    )


# -------------------------------------------------- exact poll/send_actions dicts

@pytest.mark.parametrize("kind", ["list", "next_step"])
def test_poll_dicts_when_resets_happen_within_the_poll(kind):
    env = make_base_env(kind)
    assert isinstance(env, _VectorEnvToBaseEnv)
    assert plain(env.poll()) == expect({0: [0, 0, 0], 1: [1, 0, 0]}, {0: None, 1: None})
    env.send_actions({0: {A: 1}, 1: {A: 2}})
    assert plain(env.poll()) == expect({0: [0, 0, 1], 1: [1, 0, 1]}, {0: 11.0, 1: 21.0})
    env.send_actions({0: {A: 1}, 1: {A: 0}})
    assert plain(env.poll()) == expect({0: [0, 0, 2], 1: [1, 0, 2]}, {0: 12.0, 1: 2.0}, terminated=[0])
    env.send_actions({1: {A: 1}})  # env 0's episode ended: it takes no action
    assert plain(env.poll()) == expect({0: [0, 1, 0], 1: [1, 0, 3]}, {0: None, 1: 13.0}, terminated=[1])
    env.send_actions({0: {A: 0}})
    assert plain(env.poll()) == expect({0: [0, 1, 1], 1: [1, 1, 0]}, {0: 1.0, 1: None})


@pytest.mark.parametrize("kind", ["same_step", "disabled", "rllib_style"])
def test_poll_dicts_when_ended_sub_envs_are_reset_in_a_poll_of_their_own(kind):
    # Such envs step all sub-envs together, so a reset poll reports only the reset
    # sub-envs; the others' actions wait for the next poll. No step is lost.
    env = make_base_env(kind)
    assert plain(env.poll()) == expect({0: [0, 0, 0], 1: [1, 0, 0]}, {0: None, 1: None})
    env.send_actions({0: {A: 1}, 1: {A: 2}})
    assert plain(env.poll()) == expect({0: [0, 0, 1], 1: [1, 0, 1]}, {0: 11.0, 1: 21.0})
    env.send_actions({0: {A: 1}, 1: {A: 0}})
    assert plain(env.poll()) == expect({0: [0, 0, 2], 1: [1, 0, 2]}, {0: 12.0, 1: 2.0}, terminated=[0])
    env.send_actions({1: {A: 1}})
    assert plain(env.poll()) == expect({0: [0, 1, 0]}, {0: None})
    env.send_actions({0: {A: 0}})
    assert plain(env.poll()) == expect({0: [0, 1, 1], 1: [1, 0, 3]}, {0: 1.0, 1: 13.0}, terminated=[1])
    env.send_actions({0: {A: 2}})
    assert plain(env.poll()) == expect({1: [1, 1, 0]}, {1: None})
    env.send_actions({1: {A: 0}})
    assert plain(env.poll()) == expect({0: [0, 1, 2], 1: [1, 1, 1]}, {0: 22.0, 1: 1.0}, terminated=[0])


@pytest.mark.parametrize("kind", ["list", "next_step", "same_step", "disabled"])
def test_truncation_is_reported_apart_from_termination(kind):
    env = make_base_env(kind, lengths=(1, 2), truncate=True)
    env.poll()
    env.send_actions({0: {A: 0}, 1: {A: 0}})
    assert plain(env.poll()) == expect({0: [0, 0, 1], 1: [1, 0, 1]}, {0: 1.0, 1: 1.0}, truncated=[0])


def test_poll_without_new_actions_reports_nothing():
    env = make_base_env("next_step")
    env.poll()
    assert env.poll() == ({}, {}, {}, {}, {}, {})


def test_list_of_envs_steps_only_the_sub_envs_that_got_actions():
    env = make_base_env("list", lengths=(5, 5, 5))
    env.poll()
    env.send_actions({1: {A: 1}})
    obs, rewards, *_ = plain(env.poll())
    assert obs == {1: {A: [1, 0, 1]}} and rewards == {1: {A: 11.0}}
    env.send_actions({0: {A: 0}, 2: {A: 0}, 1: {A: 0}})  # 0 and 2 still waited
    obs, *_ = plain(env.poll())
    assert obs == {0: {A: [0, 0, 1]}, 1: {A: [1, 0, 2]}, 2: {A: [2, 0, 1]}}


@pytest.mark.parametrize("kind", ["next_step", "same_step", "disabled", "rllib_style"])
def test_sub_envs_that_step_together_need_every_action(kind):
    env = make_base_env(kind, lengths=(5, 5, 5))
    env.poll()
    env.send_actions({1: {A: 1}})
    with pytest.raises(ValueError, match=r"steps all its sub-envs together, but no action was sent "
                                         r"for env ids \[0, 2\]"):
        env.poll()


# ------------------------------------------------------------------- try_reset

@pytest.mark.parametrize("kind", ["list", "same_step", "disabled", "rllib_style"])
def test_try_reset_of_an_ended_sub_env_returns_its_reset_obs(kind):
    env = make_base_env(kind)
    env.poll()
    env.send_actions({0: {A: 1}, 1: {A: 1}})
    env.poll()
    env.send_actions({0: {A: 1}, 1: {A: 1}})
    env.poll()  # env 0 ended
    obs, infos = env.try_reset(0)
    assert {0: {A: obs[0][A].tolist()}} == {0: {A: [0, 1, 0]}} and infos == {0: {A: {"t": 0}}}
    env.send_actions({0: {A: 0}, 1: {A: 0}})  # no reset poll in between
    assert plain(env.poll()) == expect({0: [0, 1, 1], 1: [1, 0, 3]}, {0: 1.0, 1: 3.0}, terminated=[1])


def test_try_reset_of_an_ended_next_step_sub_env_is_async():
    env = make_base_env("next_step")
    env.poll()
    for _ in range(2):
        env.send_actions({0: {A: 1}, 1: {A: 1}})
        env.poll()
    assert env.try_reset(0) is ASYNC_RESET_RETURN
    env.send_actions({1: {A: 0}})
    assert plain(env.poll()) == expect({0: [0, 1, 0], 1: [1, 0, 3]}, {0: None, 1: 3.0}, terminated=[1])


@pytest.mark.parametrize("kind", ["list", "next_step", "same_step", "disabled", "rllib_style"])
def test_try_reset_in_mid_episode_and_of_all_sub_envs(kind):
    env = make_base_env(kind, lengths=(5, 5))
    env.poll()
    env.send_actions({0: {A: 1}, 1: {A: 1}})
    env.poll()
    obs, infos = env.try_reset(1, seed=3)
    assert obs[1][A].tolist() == [1, 1, 0] and infos == {1: {A: {"t": 0}}}
    env.send_actions({0: {A: 0}, 1: {A: 0}})
    assert plain(env.poll())[0] == {0: {A: [0, 0, 2]}, 1: {A: [1, 1, 1]}}
    obs, infos = env.try_reset(seed=7)
    assert {i: o[A].tolist() for i, o in obs.items()} == {0: [0, 1, 0], 1: [1, 2, 0]}
    assert env.poll() == ({}, {}, {}, {}, {}, {})  # the reset obs were returned already
    env.send_actions({0: {A: 0}, 1: {A: 0}})
    assert plain(env.poll())[0] == {0: {A: [0, 1, 1]}, 1: {A: [1, 2, 1]}}


def test_try_reset_seeds_sub_envs_like_gymnasium():
    env = VectorEnv.vectorize_gym_envs(lambda i: gym.make("CartPole-v1"), num_envs=2).to_base_env()
    obs, _ = env.try_reset(seed=5)
    for i in range(2):
        np.testing.assert_array_equal(obs[i][A], gym.make("CartPole-v1").reset(seed=5 + i)[0])


def test_try_reset_errors():
    env = make_base_env("list")
    with pytest.raises(RuntimeError, match=r"try_reset\(0\) before the first poll\(\)"):
        env.try_reset(0)
    env.poll()
    with pytest.raises(ValueError, match=r"try_reset: unknown env id 2; this env has env ids 0..1"):
        env.try_reset(2)
    with pytest.raises(ValueError, match=r"unknown env id 'a'"):
        env.try_reset("a")


def test_gymnasium_vector_env_without_reset_mask_cannot_reset_one_sub_env():
    env = convert_to_base_env(gym.make_vec("CartPole-v1", 2, vectorization_mode="vector_entry_point"))
    env.try_reset(seed=0)
    with pytest.raises(RuntimeError, match=r"CartPoleVectorEnv cannot reset sub-env 1 alone \(it has no "
                                           r"options\['reset_mask'\] support\)"):
        env.try_reset(1)


# ---------------------------------------------------------- send_actions errors

def test_send_actions_errors_name_the_env_id_and_the_valid_ones():
    env = make_base_env("list")
    env.poll()
    with pytest.raises(ValueError, match=r"send_actions: unknown env id 5; this env has env ids 0..1"):
        env.send_actions({5: {A: 0}})
    with pytest.raises(ValueError, match=r"must be a dict \{'agent0': action\}.*received \{'agent1': 0\}"):
        env.send_actions({0: {"agent1": 0}})
    with pytest.raises(ValueError, match=r"must be a dict.*received \{'agent0': 0, 'x': 1\}"):
        env.send_actions({0: {A: 0, "x": 1}})
    with pytest.raises(ValueError, match=r"of env 1 must be a dict.*received 3"):
        env.send_actions({0: {A: 0}, 1: 3})
    env.send_actions({0: {A: 1}, 1: {A: 1}})  # the failed calls left nothing behind
    with pytest.raises(ValueError, match=r"env 0 already has an action for the next step. Env ids "
                                         r"waiting for an action: \[\]"):
        env.send_actions({0: {A: 1}})
    env.poll()
    env.send_actions({0: {A: 1}, 1: {A: 1}})
    env.poll()
    with pytest.raises(ValueError, match=r"the episode of env 0 ended in the last poll; the next poll\(\) "
                                         r"\(or try_reset\(0\)\) resets it.*waiting for an action: \[1\]"):
        env.send_actions({0: {A: 1}})


def test_send_actions_before_any_poll_is_an_error():
    env = make_base_env("next_step")
    with pytest.raises(ValueError, match=r"env 0 is not waiting for an action \(it was not in the last poll\)"):
        env.send_actions({0: {A: 1}})


# -------------------------------------------------------------- batched access

@pytest.mark.parametrize("kind", ["list", "next_step", "same_step"])
def test_poll_arrays_gives_the_poll_as_stacked_arrays(kind):
    env = make_base_env(kind)
    p = env.poll_arrays()
    assert p.env_ids.tolist() == [0, 1] and p.obs.tolist() == [[0, 0, 0], [1, 0, 0]]
    assert p.rewards.tolist() == [0.0, 0.0] and p.is_first.tolist() == [True, True]
    assert p.infos == [{"t": 0}, {"t": 0}]
    env.send_action_array(np.array([1, 2]))
    p = env.poll_arrays()
    assert p.rewards.tolist() == [11.0, 21.0] and p.is_first.tolist() == [False, False]
    env.send_action_array(np.array([1, 0]))
    p = env.poll_arrays()
    assert p.terminateds.tolist() == [True, False] and p.truncateds.tolist() == [False, False]
    env.send_action_array(np.array([2, 1]))  # row 0 ignored: env 0's episode ended
    p = env.poll_arrays()
    if kind == "same_step":  # the reset poll of its own, then the step
        assert p.env_ids.tolist() == [0] and p.is_first.tolist() == [True]
        env.send_action_array(np.array([0]))  # one row per sub-env of the last poll
        p = env.poll_arrays()
        assert p.obs.tolist() == [[0, 1, 1], [1, 0, 3]] and p.rewards.tolist() == [1.0, 13.0]
    else:
        assert p.obs.tolist() == [[0, 1, 0], [1, 0, 3]] and p.rewards.tolist() == [0.0, 13.0]
        assert p.is_first.tolist() == [True, False] and p.terminateds.tolist() == [False, True]


def test_poll_arrays_of_an_idle_env_is_empty_and_send_action_array_checks_the_size():
    env = make_base_env("list")
    env.poll_arrays()
    p = env.poll_arrays()
    assert p.env_ids.shape == (0,) and p.obs.shape == (0, 3) and p.infos == []
    env.send_action_array([1, 1])  # a list works too
    env.poll_arrays()
    with pytest.raises(ValueError, match=r"received 3 action rows; expected num_envs=2 \(one per sub-env\) "
                                         r"or 2 \(one per sub-env of the last poll_arrays\(\)\)"):
        env.send_action_array(np.array([1, 1, 1]))


def test_dicts_and_arrays_can_be_mixed():
    env = make_base_env("next_step", lengths=(5, 5))
    env.poll()
    env.send_action_array(np.array([1, 1]))
    env.try_reset(1)  # its action from the array is dropped; it waits again
    env.send_actions({1: {A: 2}})
    obs, rewards, *_ = plain(env.poll())
    assert obs == {0: {A: [0, 0, 1]}, 1: {A: [1, 1, 1]}} and rewards == {0: {A: 11.0}, 1: {A: 21.0}}


def test_dict_observation_spaces_go_through_both_paths():
    for kind in ("list", "next_step"):
        env = make_base_env(kind, dict_obs=True)
        obs = env.poll()[0]
        assert obs[1][A]["x"].tolist() == [1, 0, 0]
        env.send_action_array(np.array([0, 0]))
        p = env.poll_arrays()
        assert p.obs["x"].tolist() == [[0, 0, 1], [1, 0, 1]]


# ------------------------------------------- fast path == in-process trajectories

def _trajectories(base_env, n, polls, seed=0):
    """Per-sub-env (obs, reward, terminated, truncated) sequences with per-env RNG actions."""
    rngs = [np.random.default_rng(100 + i) for i in range(n)]
    traj = {i: [] for i in range(n)}
    obs, _ = base_env.try_reset(seed=seed)
    for i in obs:
        traj[i].append((obs[i][A].tolist(), None, False, False))
    ready = list(obs)
    for _ in range(polls):
        base_env.send_actions({i: {A: int(rngs[i].integers(2))} for i in ready})
        obs, rewards, terms, truncs, _, _ = base_env.poll()
        for i in obs:
            traj[i].append((obs[i][A].tolist(), rewards[i][A], terms[i]["__all__"], truncs[i]["__all__"]))
        ready = [i for i in obs if not (terms[i]["__all__"] or truncs[i]["__all__"])]
    return traj


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_gymnasium_sync_vector_env_gives_the_trajectories_of_the_list_of_envs(mode):
    def make(i=0):
        return gym.make("CartPole-v1", max_episode_steps=12)

    n, polls = 3, 120
    expected = _trajectories(VectorEnv.vectorize_gym_envs(make, num_envs=n).to_base_env(), n, polls)
    fast = convert_to_base_env(SyncVectorEnv([make] * n, autoreset_mode=mode))
    assert isinstance(fast.vector_env, GymnasiumVectorEnv)
    got = _trajectories(fast, n, polls)
    for i in range(n):
        k = min(len(got[i]), len(expected[i]))
        assert k > 90
        assert got[i][:k] == expected[i][:k]
    steps = [s for i in range(n) for s in expected[i]]
    assert sum(s[2] for s in steps) > 0 and sum(s[3] for s in steps) > 0  # both endings occur


def test_make_vec_vector_entry_point_matches_its_raw_steps():
    # The raw gymnasium env with NEXT_STEP autoreset, read by hand: the step after an
    # episode ended returns the reset obs; tfrl reports it with reward None.
    def make():
        return gym.make_vec("CartPole-v1", 4, vectorization_mode="vector_entry_point", max_episode_steps=10)

    raw, env = make(), convert_to_base_env(make())
    raw_obs, _ = raw.reset(seed=0)
    obs, _ = env.try_reset(seed=0)
    np.testing.assert_array_equal(np.stack([obs[i][A] for i in range(4)]), raw_obs)
    rng, prev_done, ready, ends = np.random.default_rng(0), np.zeros(4, bool), range(4), 0
    for _ in range(60):
        actions = rng.integers(0, 2, 4)
        env.send_actions({i: {A: int(actions[i])} for i in ready})
        obs, rewards, terms, truncs, infos, _ = env.poll()
        raw_obs, raw_rewards, raw_terms, raw_truncs, _ = raw.step(actions)
        assert sorted(obs) == [0, 1, 2, 3]  # every raw step is one poll of every sub-env
        for i in range(4):
            np.testing.assert_array_equal(obs[i][A], raw_obs[i])
            assert rewards[i][A] == (None if prev_done[i] else raw_rewards[i])
            assert (terms[i][A], truncs[i]["__all__"]) == (raw_terms[i], raw_truncs[i])
        prev_done = raw_terms | raw_truncs
        ends += prev_done.sum()
        ready = [i for i in range(4) if not prev_done[i]]
    assert ends > 4


def test_arrays_path_gives_the_same_results_as_dicts():
    def make():
        env = convert_to_base_env(gym.make_vec("CartPole-v1", 3, vectorization_mode="vector_entry_point"))
        env.try_reset(seed=1)
        return env

    dict_env, array_env = make(), make()
    rng, ready, resets = np.random.default_rng(0), range(3), 0
    for _ in range(60):
        actions = rng.integers(0, 2, 3)
        dict_env.send_actions({i: {A: int(actions[i])} for i in ready})
        obs, rewards, terms, truncs, infos, _ = dict_env.poll()
        array_env.send_action_array(actions)
        p = array_env.poll_arrays()
        assert p.env_ids.tolist() == sorted(obs) == [0, 1, 2]
        np.testing.assert_array_equal(p.obs, np.stack([obs[i][A] for i in range(3)]))
        rewards_from_arrays = [None if f else r for f, r in zip(p.is_first.tolist(), p.rewards.tolist())]
        assert rewards_from_arrays == [rewards[i][A] for i in range(3)]
        assert p.terminateds.tolist() == [terms[i][A] for i in range(3)]
        assert p.truncateds.tolist() == [truncs[i][A] for i in range(3)]
        assert p.infos == [infos[i][A] for i in range(3)]
        resets += p.is_first.sum()
        ready = [i for i in obs if not (terms[i]["__all__"] or truncs[i]["__all__"])]
    assert resets > 2


# ------------------------------------------------------------- VectorEnv itself

def test_vectorize_gym_envs_uses_existing_envs_and_makes_the_rest():
    first = CounterEnv(0, dict_obs=True)
    made = []

    def make_env(i):
        made.append(i)
        return CounterEnv(i)

    env = VectorEnv.vectorize_gym_envs(make_env, existing_envs=[first], num_envs=3)
    assert isinstance(env, _VectorizedGymEnv) and made == [1, 2]
    assert env.get_sub_environments()[0] is first and env.num_envs == 3
    # Both spaces default to existing_envs[0]'s.
    assert env.observation_space is first.observation_space and env.action_space is first.action_space
    box = gym.spaces.Box(0, 1, (3,))
    assert VectorEnv.vectorize_gym_envs(existing_envs=[first], observation_space=box).observation_space is box


def test_vectorize_gym_envs_errors():
    with pytest.raises(ValueError, match=r"num_envs=2 but only 1 existing_envs and no make_env"):
        VectorEnv.vectorize_gym_envs(existing_envs=[CounterEnv()], num_envs=2)
    with pytest.raises(ValueError, match=r"received 2 existing_envs but num_envs=1"):
        VectorEnv.vectorize_gym_envs(existing_envs=[CounterEnv(), CounterEnv()], num_envs=1)
    with pytest.raises(TypeError, match=r"existing_envs\[0\] is a str, expected a gymnasium.Env"):
        VectorEnv.vectorize_gym_envs(existing_envs=["CartPole-v1"])
    with pytest.raises(TypeError, match=r"make_env\(1\) is a SyncVectorEnv, expected a gymnasium.Env"):
        VectorEnv.vectorize_gym_envs(lambda i: SyncVectorEnv(_counters([1])), [CounterEnv()], num_envs=2)
    with pytest.raises(ValueError, match=r"num_envs must be an int >= 1; received 0"):
        VectorEnv.vectorize_gym_envs(lambda i: CounterEnv(), num_envs=0)


def test_vectorized_gym_env_reset_and_step():
    env = VectorEnv.vectorize_gym_envs(lambda i: CounterEnv(i, 2), num_envs=2)
    obs, infos = env.vector_reset()
    assert [o.tolist() for o in obs] == [[0, 0, 0], [1, 0, 0]] and infos == [{"t": 0}, {"t": 0}]
    obs, rewards, terms, truncs, infos = env.vector_step([1, 2])
    assert rewards == [11.0, 21.0] and terms == [False, False] and truncs == [False, False]
    obs, rewards, terms, truncs, infos = env.vector_step([0, 0])
    assert terms == [True, True]  # no automatic reset:
    assert env.reset_at(1)[0].tolist() == [1, 1, 0] and env.reset_at()[0].tolist() == [0, 1, 0]
    assert env.try_render_at(1)[0, 0].tolist() == [1, 1, 1]
    with pytest.raises(IndexError, match=r"Sub-env index 2 out of range: num_envs=2"):
        env.reset_at(2)
    with pytest.raises(ValueError, match=r"vector_step needs one action per sub-env \(num_envs=2\); received 1"):
        env.vector_step([0])
    with pytest.raises(ValueError, match=r"seeds must be None, an int or 2 seeds"):
        env.vector_reset(seeds=[1, 2, 3])


def test_old_gym_api_envs_get_a_clear_error():
    class OldStep(CounterEnv):
        def step(self, action):
            return super().step(action)[:3] + ({},)

    class OldReset(CounterEnv):
        def reset(self, *, seed=None, options=None):
            return super().reset()[0]

    env = VectorEnv.vectorize_gym_envs(existing_envs=[OldStep()])
    env.vector_reset()
    with pytest.raises(ValueError, match=r"Sub-env 0 \(OldStep\).step\(\) returned 4 values; tfrl needs "
                                         r"gymnasium's 5"):
        env.vector_step([0])
    with pytest.raises(ValueError, match=r"Sub-env 0 \(OldReset\).reset\(\) must return gymnasium's \(obs, info\)"):
        VectorEnv.vectorize_gym_envs(existing_envs=[OldReset()]).vector_reset()


def test_vector_env_base_class():
    env = VectorEnv(gym.spaces.Discrete(2), gym.spaces.Discrete(2), 2)
    for call in (env.vector_reset, env.reset_at, lambda: env.vector_step([0, 0])):
        with pytest.raises(NotImplementedError):
            call()
    assert env.try_render_at() is None and env.get_sub_environments() == []
    with pytest.raises(ValueError, match=r"num_envs must be an int >= 1; received True"):
        VectorEnv(None, None, True)


def test_rllib_style_vector_env_results_are_checked():
    class Bad(ListVectorEnv):
        def vector_reset(self, *, seeds=None, options=None):
            return super().vector_reset()[0]  # gym-era: obs only

    with pytest.raises(ValueError, match=r"Bad.vector_reset\(\) must return a tuple \(obs, infos\) of lists with "
                                         r"num_envs=2 items each"):
        Bad([2, 2]).to_base_env().poll()


def test_gymnasium_vector_env_wrapper():
    sync = SyncVectorEnv(_counters([2, 2]))
    env = VectorEnv.from_gymnasium(sync)
    assert env.autoreset_mode is AutoresetMode.NEXT_STEP and env.num_envs == 2
    assert env.get_sub_environments() == sync.envs
    obs, infos = env.vector_reset(seeds=0)
    assert [o.tolist() for o in obs] == [[0, 0, 0], [1, 0, 0]] and infos == [{"t": 0}, {"t": 0}]
    assert env.reset_at(1, seed=1)[0].tolist() == [1, 1, 0]  # reset_mask support
    obs, rewards, terms, truncs, infos = env.vector_step([1, 1])
    assert rewards == [11.0, 11.0] and infos == [{"t": 1}, {"t": 1}]
    with pytest.raises(ValueError, match=r"vector_step needs one action per sub-env \(num_envs=2\)"):
        env.vector_step([1])
    with pytest.raises(IndexError, match=r"Sub-env index 5 out of range"):
        env.reset_at(5)
    env.close()
    assert all(e.closed for e in sync.envs)


def test_gymnasium_vector_env_reset_at_of_an_ended_next_step_sub_env_is_an_error():
    env = GymnasiumVectorEnv(gym.make_vec("CartPole-v1", 1, vectorization_mode="vector_entry_point",
                                          max_episode_steps=1))
    env.vector_reset(seeds=0)
    assert env.vector_step([0])[3] == [True]
    with pytest.raises(RuntimeError, match=r"Sub-env 0 of CartPoleVectorEnv is reset by its next step\(\)"):
        env.reset_at(0)
    obs, rewards, terms, truncs, infos = env.vector_step([0])  # gymnasium's NEXT_STEP autoreset
    assert rewards == [0.0] and truncs == [False] and infos == [{}]


def test_gymnasium_vector_env_errors():
    with pytest.raises(TypeError, match=r"from_gymnasium needs a gymnasium.vector.VectorEnv.*received CounterEnv"):
        VectorEnv.from_gymnasium(CounterEnv())
    cartpole = gym.make_vec("CartPole-v1", 2, vectorization_mode="vector_entry_point")
    cartpole.unwrapped.metadata = dict(cartpole.metadata, autoreset_mode=AutoresetMode.DISABLED)
    with pytest.raises(ValueError, match=r"has autoreset disabled but does not support options\['reset_mask'\]"):
        GymnasiumVectorEnv(cartpole)
    cartpole.unwrapped.metadata = dict(cartpole.metadata, autoreset_mode="Sometimes")
    with pytest.raises(ValueError, match=r"reports autoreset_mode='Sometimes'; expected one of"):
        GymnasiumVectorEnv(cartpole)


def test_split_infos():
    infos = {"a": np.array([1, 2]), "_a": np.array([True, False]),
             "d": {"b": np.array([3.0, 4.0]), "_b": np.array([False, True])}, "_d": np.array([True, True])}
    assert split_infos(infos, 2) == [{"a": 1, "d": {}}, {"d": {"b": 4.0}}]
    assert split_infos({}, 2) == [{}, {}]


# ------------------------------------------------------ conversion, render, stop

def test_convert_to_base_env_vectorizes_gym_envs_and_wraps_vector_envs():
    env = convert_to_base_env(CounterEnv(0), make_env=lambda i: CounterEnv(i), num_envs=3)
    assert isinstance(env, BaseEnv) and len(env.get_sub_environments()) == 3
    assert isinstance(env.vector_env, _VectorizedGymEnv)
    assert BaseEnv.to_base_env(env) is env
    vector = ListVectorEnv([2])
    assert convert_to_base_env(vector).vector_env is vector
    fast = convert_to_base_env(gym.make_vec("CartPole-v1", 2, vectorization_mode="vector_entry_point"))
    assert isinstance(fast.vector_env, GymnasiumVectorEnv)
    assert fast.observation_space == gym.make("CartPole-v1").observation_space


def test_render_sub_environments_and_stop():
    env = make_base_env("list")
    assert env.try_render(1)[0, 0].tolist() == [1, 1, 1]
    subs = env.get_sub_environments(as_dict=True)
    assert list(subs) == [0, 1] and subs[1].index == 1
    env.stop()
    assert all(e.closed for e in env.get_sub_environments())


def test_gymnasium_vector_env_reports_single_resets_and_its_step_limit():
    from tfrl.env.gymnasium_vector_env import GymnasiumVectorEnv

    native = GymnasiumVectorEnv(gym.make_vec("CartPole-v1", 2, vectorization_mode="vector_entry_point",
                                             max_episode_steps=7))
    assert native.can_reset_sub_envs is False and native.max_episode_steps == 7
    sync = GymnasiumVectorEnv(gym.make_vec("CartPole-v1", 2, vectorization_mode="sync"))
    assert sync.can_reset_sub_envs is True and sync.max_episode_steps == 500


def test_resets_in_step_and_lazy_infos_of_the_array_bridge():
    from tfrl.env.gymnasium_vector_env import GymnasiumVectorEnv

    assert VectorEnv(gym.spaces.Discrete(2), gym.spaces.Discrete(2), 2).resets_in_step is False
    native = GymnasiumVectorEnv(gym.make_vec("CartPole-v1", 2, vectorization_mode="vector_entry_point"))
    assert native.resets_in_step is True
    base = native.to_base_env()
    assert base.lazy_infos is True
    p = base.poll_arrays(materialize_infos=False)
    assert p.is_first.tolist() == [True, True] and not base.last_poll_quiet
    base.send_action_array(np.array([0, 1]))
    p = base.poll_arrays(materialize_infos=False)
    assert p.infos is None and p.is_first.tolist() == [False, False] and base.last_poll_quiet
    base.send_action_array(np.array([0, 1]))
    p = base.poll_arrays()
    assert p.infos == [{}, {}] and not base.last_poll_quiet


def test_an_adopted_reset_starts_the_sub_envs_first_episode_once():
    envs = [CounterEnv(0), CounterEnv(1)]
    vec = VectorEnv.vectorize_gym_envs(existing_envs=envs, num_envs=2)
    checked = envs[0].reset()  # as a rollout worker's env check does
    vec.adopt_reset(0, checked)
    base = vec.to_base_env()
    obs = base.poll()[0]
    # Sub-env 0 is not reset again: its episode 0 is the adopted reset's.
    assert obs[0]["agent0"].tolist() == [0, 0, 0] and envs[0].episode == 0
    assert obs[1]["agent0"].tolist() == [1, 0, 0]
    # Only once, and never for a reset with a seed or options.
    assert vec.reset_at(0)[0].tolist() == [0, 1, 0]
    vec.adopt_reset(0, checked)
    assert vec.reset_at(0, seed=3)[0].tolist() == [0, 2, 0]
    assert vec.reset_at(0)[0].tolist() == [0, 3, 0]
    with pytest.raises(IndexError, match="out of range"):
        vec.adopt_reset(5, checked)
