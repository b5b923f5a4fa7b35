"""RemoteVectorEnv with the process backend: sub-envs in their own OS processes.

The envs are defined at module level so that the "spawn"ed sub-processes can import
them. Process start-up dominates the run time, so most tests share one 2-env
RemoteVectorEnv (`shared_env`) and begin with a seeded reset of what they use.
"""

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict

import gymnasium as gym
import numpy as np
import pytest

from tfrl.env.base_env import ASYNC_RESET_RETURN, BaseEnv, convert_to_base_env
from tfrl.env.multi_agent_env import MultiAgentEnv
from tfrl.env.remote_vector_env import RemoteVectorEnv, SubEnvError
from tfrl.env.utils import sub_env_processes
from tfrl.env.utils.sub_env_runner import SubEnvRunner, answer, unwrap_reply

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class CounterEnv(gym.Env):
    """obs `[t, draw]`: the step count and a number drawn at reset (so it encodes the seed).

    reward = t + action; the episode ends at t == length, by termination or (with
    `truncate=True`) truncation. Action 2 is invalid and raises. `options={"sleep": s}`
    at reset makes every step of that episode sleep `s` seconds.
    """

    observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, length: int = 3, truncate: bool = False, seed=None):
        self.length, self.truncate = length, truncate
        self.np_random = np.random.default_rng(seed)
        self.t, self.draw, self.sleep = 0, 0, 0.0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.draw = 0, int(self.np_random.integers(1000))
        self.sleep = (options or {}).get("sleep", 0.0)
        return self._obs(), {"draw": self.draw}

    def step(self, action):
        if action not in (0, 1):
            raise ValueError(f"CounterEnv received action {action!r}, not in Discrete(2)")
        time.sleep(self.sleep)
        self.t += 1
        done = self.t >= self.length
        return (self._obs(), float(self.t + action), done and not self.truncate,
                done and self.truncate, {"t": self.t})

    def peek(self, plus=0):
        return self.t + plus

    def make_lock(self):
        return threading.Lock()  # Cannot be pickled back to the parent.

    def _obs(self):
        return np.array([self.t, self.draw], np.float32)


def make_counter_env(index):
    """Sub-env 0 terminates after 3 steps; sub-env 1 is truncated after 4."""
    return CounterEnv(length=3 + index, truncate=index % 2 == 1, seed=100 + index)


def make_env_failing_at_1(index):
    if index == 1:
        raise RuntimeError("no simulator licence for sub-env 1")
    return make_counter_env(index)


def make_slow_starting_env(index):
    """Sub-env 1 takes 1 s to build (a slow simulator start); length-5 episodes."""
    if index == 1:
        time.sleep(1.0)
    return CounterEnv(length=5, seed=100 + index)


def make_env_hanging_at_1(index):
    if index == 1:
        time.sleep(30.0)
    return make_counter_env(index)


class TwoAgentEnv(MultiAgentEnv):
    """Agent "a" always acts; "b" joins at t=1 (no reward yet), gets rewards while it
    acts and is terminated at t=3; the episode ends at t == length."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, length, seed):
        super().__init__()
        self._agent_ids = {"a", "b"}
        self.length, self.rng = length, np.random.default_rng(seed)

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t, self.draw = 0, int(self.rng.integers(1000))
        return {"a": np.array([0, self.draw])}, {"a": {"draw": self.draw}}

    def step(self, actions):
        self.t += 1
        obs = {"a": np.array([self.t, self.draw])}
        rewards = {"a": float(actions["a"])}
        terminateds = {"a": False}
        if "b" in actions:
            rewards["b"] = 10.0 * actions["b"]
        if 1 <= self.t <= 3:
            obs["b"] = np.array([self.t, -self.draw])
            terminateds["b"] = self.t == 3
        terminateds["__all__"] = self.t >= self.length
        truncateds = {"__all__": False}
        return obs, rewards, terminateds, truncateds, {"a": {"t": self.t}}


def make_two_agent_env(index):
    return TwoAgentEnv(length=4 + index, seed=index)


def policy(obs):
    return int(obs[0]) % 2


def _plain(value):
    """Makes nested dicts of arrays comparable with ==."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def drive_base_env(env, events_per_env, num_envs=2):
    """Polls `env` (acting with `policy`) until every env id has that many events.

    Ended episodes are not reset with `try_reset`: every BaseEnv's next poll does it.
    """
    events = defaultdict(list)
    while min(len(events[i]) for i in range(num_envs)) < events_per_env:
        obs, rewards, terminateds, truncateds, infos, off_policy = env.poll()
        assert off_policy == {}
        actions = {}
        for env_id in obs:
            events[env_id].append(_plain((obs[env_id], rewards[env_id], terminateds[env_id],
                                          truncateds[env_id], infos[env_id])))
            if terminateds[env_id]["__all__"] or truncateds[env_id]["__all__"]:
                continue
            actions[env_id] = {
                agent: policy(o) for agent, o in obs[env_id].items()
                if not (terminateds[env_id].get(agent) or truncateds[env_id].get(agent))
            }
        env.send_actions(actions)
    return {i: events[i][:events_per_env] for i in range(num_envs)}


def drive_directly(env, num_events, first_seed=None):
    """The same events written out from stepping a single-agent `env` in this process."""
    events, seed = [], first_seed
    while len(events) < num_events:
        obs, info = env.reset(seed=seed)
        seed, flags = None, {"agent0": False, "__all__": False}
        events.append(_plain(({"agent0": obs}, {"agent0": None}, flags, flags,
                              {"agent0": info})))
        done = False
        while not done and len(events) < num_events:
            obs, reward, terminated, truncated, info = env.step(policy(obs))
            events.append(_plain((
                {"agent0": obs}, {"agent0": reward},
                {"agent0": terminated, "__all__": terminated},
                {"agent0": truncated, "__all__": truncated}, {"agent0": info})))
            done = terminated or truncated
    return events


def poll_until(env, env_ids):
    """Polls until each of `env_ids` has answered; returns {env_id: (obs, reward)}."""
    got = {}
    while not set(env_ids) <= set(got):
        obs, rewards, *_ = env.poll()
        got.update({i: (obs[i], rewards[i]) for i in obs})
    return got


def reset_all(env, seed):
    env.try_reset(seed=seed)
    return poll_until(env, range(env.num_envs))


@pytest.fixture(scope="module")
def shared_env():
    env = RemoteVectorEnv(make_counter_env, 2, multiagent=False, remote_env_batch_wait_ms=0)
    yield env
    env.stop()


def test_trajectories_equal_stepping_the_envs_in_process(shared_env):
    shared_env.try_reset(seed=7)  # Sub-env i is reset with seed 7 + i.
    got = drive_base_env(shared_env, 12)
    for i in range(2):
        assert got[i] == drive_directly(make_counter_env(i), 12, first_seed=7 + i)
    # Both ways an episode ends, and reset observations with reward None, are covered.
    assert got[0][3][2] == {"agent0": True, "__all__": True}
    assert got[1][4][3] == {"agent0": True, "__all__": True}
    assert got[0][4][1] == {"agent0": None} and got[1][5][1] == {"agent0": None}


def test_batch_wait_zero_returns_the_fast_env_alone_and_a_long_wait_both(shared_env):
    shared_env.try_reset(0, seed=1)
    shared_env.try_reset(1, seed=1, options={"sleep": 0.4})
    poll_until(shared_env, [0, 1])
    try:
        shared_env.poll_timeout = 0.0
        shared_env.send_actions({0: {"agent0": 0}, 1: {"agent0": 0}})
        assert list(shared_env.poll()[0]) == [0]
        start = time.monotonic()
        assert list(shared_env.poll()[0]) == [1]  # Waits for at least one.
        assert time.monotonic() - start > 0.1
        shared_env.poll_timeout = 10.0
        shared_env.send_actions({0: {"agent0": 0}, 1: {"agent0": 0}})
        start = time.monotonic()
        assert list(shared_env.poll()[0]) == [0, 1]
        assert 0.3 < time.monotonic() - start < 5.0  # All answered: no need to wait 10 s.
    finally:
        shared_env.poll_timeout = 0.0


def test_with_wait_zero_a_slow_starting_sub_env_still_fills_the_first_fragment():
    from sampler_helpers import FakePolicy, FakeWorker
    from tfrl.evaluation.sampler import SyncSampler

    env = RemoteVectorEnv(make_slow_starting_env, 2, multiagent=False,
                          remote_env_batch_wait_ms=0)
    worker = FakeWorker({"default_policy": (FakePolicy, CounterEnv.observation_space,
                                            CounterEnv.action_space, {})})
    sampler = SyncSampler(worker=worker, env=env, clip_rewards=False,
                          rollout_fragment_length=20, callbacks=worker.callbacks,
                          multiple_episodes_in_batch=True)
    try:
        # Without the start-up wait, sub-env 0 ran all 20 steps before sub-env 1 was up.
        for _ in range(3):
            rows = np.bincount(sampler.next()["env_id"], minlength=2)
            assert rows.sum() == 20 and rows.min() >= 1, rows
    finally:
        env.stop()


def test_the_first_poll_goes_on_without_a_sub_env_late_beyond_timeout_s():
    env = RemoteVectorEnv(make_env_hanging_at_1, 2, multiagent=False,
                          remote_env_batch_wait_ms=0)
    try:
        env.timeout_s = 0.5  # (after sub-env 0 answered `spaces`: its process is up)
        obs, rewards, *_ = env.poll()
        assert list(obs) == [0] and rewards == {0: {"agent0": None}}
    finally:
        env.stop()


def test_try_reset_is_asynchronous_and_reports_reward_none(shared_env):
    reset_all(shared_env, seed=3)
    shared_env.send_actions({0: {"agent0": 1}, 1: {"agent0": 1}})
    poll_until(shared_env, [0, 1])
    assert shared_env.try_reset(0, seed=3) == ASYNC_RESET_RETURN
    shared_env.send_actions({1: {"agent0": 1}})
    got = poll_until(shared_env, [0, 1])
    expected_obs, _ = make_counter_env(0).reset(seed=3)
    np.testing.assert_array_equal(got[0][0]["agent0"], expected_obs)
    assert got[0][1] == {"agent0": None}
    assert got[1][0]["agent0"][0] == 2 and got[1][1] == {"agent0": 3.0}


def test_try_reset_supersedes_a_step_in_flight(shared_env):
    reset_all(shared_env, seed=4)
    shared_env.send_actions({0: {"agent0": 1}})
    shared_env.try_reset(0, seed=5)  # The step's result is dropped.
    obs, rewards, terminateds, truncateds, _, _ = shared_env.poll()
    np.testing.assert_array_equal(obs[0]["agent0"], make_counter_env(0).reset(seed=5)[0])
    assert rewards == {0: {"agent0": None}}
    assert terminateds[0] == truncateds[0] == {"agent0": False, "__all__": False}


def test_error_in_a_sub_env_names_its_index_and_keeps_its_traceback(shared_env):
    reset_all(shared_env, seed=6)
    shared_env.send_actions({1: {"agent0": 2}})
    with pytest.raises(SubEnvError, match=r"Sub-environment 1: step\(\) raised ValueError") as info:
        shared_env.poll()
    assert info.value.env_index == 1
    assert "Traceback (most recent call last)" in info.value.remote_traceback
    assert "CounterEnv received action 2" in str(info.value)
    assert "in step" in str(info.value)  # The frame inside CounterEnv.step.
    reset_all(shared_env, seed=6)  # The sub-env is still usable after a reset.


def test_send_actions_rejects_bad_env_ids_and_action_dicts(shared_env):
    reset_all(shared_env, seed=8)
    with pytest.raises(ValueError, match=r"unknown env id 5; .* env ids 0..1"):
        shared_env.send_actions({5: {"agent0": 0}})
    with pytest.raises(ValueError, match=r"must be a dict \{'agent0': action\}; received 1"):
        shared_env.send_actions({0: 1})
    with pytest.raises(ValueError, match=r"received \{'car0': 1\}"):
        shared_env.send_actions({0: {"car0": 1}})
    with pytest.raises(TypeError, match="expects a dict env_id"):
        shared_env.send_actions([0])
    shared_env.send_actions({0: {"agent0": 0}})
    with pytest.raises(ValueError, match="sub-env 0: it is still running its previous request"):
        shared_env.send_actions({0: {"agent0": 0}})
    with pytest.raises(ValueError, match=r"unknown env id 'x'"):
        shared_env.try_reset("x")
    poll_until(shared_env, [0])


def test_an_ended_episode_is_reset_by_the_next_poll(shared_env):
    reset_all(shared_env, seed=9)
    for _ in range(3):  # Sub-env 0's episodes last 3 steps.
        shared_env.send_actions({0: {"agent0": 0}})
        obs, rewards, terminateds, *_ = shared_env.poll()
    assert terminateds[0]["__all__"]
    with pytest.raises(ValueError, match=r"episode ended .* the next poll\(\) \(or "
                       r"try_reset\(0\)\) resets it"):
        shared_env.send_actions({0: {"agent0": 0}})
    obs, rewards, *_ = shared_env.poll()
    assert list(obs) == [0] and rewards[0] == {"agent0": None}


def test_poll_with_nothing_in_flight_raises(shared_env):
    reset_all(shared_env, seed=10)
    with pytest.raises(RuntimeError, match="poll.. has nothing to wait for"):
        shared_env.poll()


def test_a_hanging_sub_env_times_out_with_its_index(shared_env):
    shared_env.try_reset(0, seed=11, options={"sleep": 1.0})
    poll_until(shared_env, [0])
    shared_env.send_actions({0: {"agent0": 0}})  # Sub-env 0 is busy for 1 s.
    handle = shared_env.get_sub_environments()[0]
    shared_env.timeout_s = 0.2
    try:
        with pytest.raises(TimeoutError, match=r"timeout_s=0.2 s; waiting for sub-envs \[0\]"):
            shared_env.poll()
        with pytest.raises(TimeoutError, match=r"Sub-environment 0 did not answer call\(\) "
                           r"within timeout_s=0.2 s"):
            handle.call("peek")
    finally:
        shared_env.timeout_s = 300.0
    _, rewards, *_ = shared_env.poll()  # The step's result; the late call's is dropped.
    assert rewards == {0: {"agent0": 1.0}}
    assert handle.call("peek") == 1  # Requests and replies are still paired.
    with pytest.raises(ValueError, match="timeout_s must be a number > 0 or None"):
        shared_env.timeout_s = -1
    reset_all(shared_env, seed=11)


def test_sub_environment_handles_call_into_the_process(shared_env):
    reset_all(shared_env, seed=12)
    handles = shared_env.get_sub_environments()
    assert [h.index for h in handles] == [0, 1]
    assert all(h.is_alive() and h.pid != os.getpid() for h in handles)
    assert shared_env.get_sub_environments(as_dict=True) == dict(enumerate(handles))
    shared_env.send_actions({1: {"agent0": 1}})
    assert handles[1].call("peek", plus=10) == 11  # Waits for the step in flight.
    assert handles[1].call("length") == 4  # A plain attribute.
    obs, rewards, *_ = shared_env.poll()  # The step's result was kept for poll().
    assert rewards == {1: {"agent0": 2.0}}
    with pytest.raises(SubEnvError, match="call.. raised AttributeError"):
        handles[0].call("no_such_method")
    with pytest.raises(SubEnvError, match=r"call\(\) raised TypeError: its call\(\) result "
                       r"cannot be sent to the parent process: cannot pickle"):
        handles[0].call("make_lock")
    assert handles[0].call("peek") == 0  # Still answering.


def test_spaces_come_from_the_first_sub_env(shared_env):
    assert shared_env.observation_space == CounterEnv.observation_space
    assert shared_env.action_space == CounterEnv.action_space
    assert shared_env.get_agent_ids() == {"agent0"}


def test_single_agent_trajectories_equal_the_in_process_vector_env():
    env = convert_to_base_env(make_counter_env(0), make_env=make_counter_env, num_envs=2,
                              remote_envs=True, remote_env_batch_wait_ms=0)
    assert isinstance(env, RemoteVectorEnv) and not env.multiagent
    try:
        got = drive_base_env(env, 12)
    finally:
        env.stop()
    in_process = convert_to_base_env(make_counter_env(0), make_env=make_counter_env,
                                      num_envs=2)
    assert got == drive_base_env(in_process, 12)
    assert got[0] == drive_directly(make_counter_env(0), 12)


def test_multi_agent_trajectories_equal_the_in_process_multi_agent_env():
    # A lambda: cloudpickle ships it to the sub-processes.
    env = convert_to_base_env(make_two_agent_env(0), num_envs=2, remote_envs=True,
                              make_env=lambda i: TwoAgentEnv(length=4 + i, seed=i),
                              remote_env_batch_wait_ms=0)
    assert isinstance(env, RemoteVectorEnv) and env.multiagent
    try:
        got = drive_base_env(env, 14)
        assert env.get_agent_ids() == {"a", "b"}
        env.try_reset(1, seed=99)
        reset_obs, reward = poll_until(env, [1])[1]
        assert _plain(reset_obs) == _plain(TwoAgentEnv(5, seed=1).reset(seed=99)[0])
        assert reward == {"a": None}
        with pytest.raises(ValueError, match=r"agents \['b'\] of sub-env 1: they were not in"):
            env.send_actions({1: {"a": 0, "b": 1}})
    finally:
        env.stop()
    in_process = convert_to_base_env(make_two_agent_env(0), make_env=make_two_agent_env,
                                     num_envs=2)
    assert got == drive_base_env(in_process, 14)
    # b joins at t=1 with reward None, is rewarded at t=2, is terminated at t=3.
    obs, rewards, terminateds, truncateds, infos = got[0][1]
    assert set(obs) == {"a", "b"} and rewards["b"] is None and infos["b"] == {}
    assert got[0][2][1]["b"] == 10.0 and got[0][3][2]["b"] is True
    assert truncateds == {"a": False, "b": False, "__all__": False}


def test_a_failing_make_env_surfaces_at_poll_with_its_index():
    env = RemoteVectorEnv(make_env_failing_at_1, 2, False, 0)
    try:
        with pytest.raises(SubEnvError, match=r"Sub-environment 1: reset\(\) raised "
                           r"RuntimeError: make_env\(1\) failed: no simulator licence"):
            poll_until(env, [0, 1])
    finally:
        env.stop()


class OldGymEnv(CounterEnv):
    """Returns old gym's results: a bare observation and a 4-tuple."""

    def reset(self, *, seed=None, options=None):
        return super().reset(seed=seed)[0]

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated or truncated, info


class BadMultiAgentEnv(TwoAgentEnv):
    def step(self, actions):
        obs, rewards, terminateds, truncateds, infos = super().step(actions)
        if actions["a"] == 0:
            return obs, 1.0, terminateds, truncateds, infos  # rewards not a dict
        return obs, rewards, terminateds, {"a": False}, infos  # no "__all__"


def test_sub_env_side_rejects_results_that_are_not_gymnasium_style():
    runner = SubEnvRunner(OldGymEnv(), multiagent=False)
    with pytest.raises(ValueError, match=r"reset\(\) must return gymnasium's \(obs, info\) "
                       r"pair; received a ndarray from OldGymEnv.reset\(\)"):
        runner.reset()
    with pytest.raises(ValueError, match=r"5-tuple .* received a tuple of 4 values from "
                       r"OldGymEnv.step\(\). Old gym envs"):
        runner.step(0)
    runner = SubEnvRunner(BadMultiAgentEnv(4, seed=0), multiagent=True)
    runner.reset()
    with pytest.raises(ValueError, match=r"must return dicts keyed by agent id; "
                       r"BadMultiAgentEnv.step\(\) returned rewards of type float"):
        runner.step({"a": 0})
    with pytest.raises(ValueError, match=r"must put the key '__all__' in truncateds .* "
                       r"returned truncateds with keys \['a'\]"):
        runner.step({"a": 1})
    with pytest.raises(ValueError, match=r"must return dicts keyed by agent id; .*reset\(\) "
                       r"returned obs of type ndarray"):
        SubEnvRunner(CounterEnv(), multiagent=True).reset()


def test_sub_env_side_turns_errors_into_replies():
    runner = SubEnvRunner(CounterEnv(), multiagent=False)
    ok, payload = answer(runner, None, "step", (2,), {})
    assert not ok and payload[:2] == ("ValueError", "CounterEnv received action 2, not in "
                                                    "Discrete(2)")
    with pytest.raises(SubEnvError, match=r"Sub-environment 3: step\(\) raised ValueError"):
        unwrap_reply(3, "step", (ok, payload))
    ok, payload = answer(runner, None, "close_all_files", (), {})
    assert not ok and "unknown request 'close_all_files'" in payload[1]


def test_unpicklable_make_env_is_refused_before_starting_processes():
    lock = threading.Lock()

    def make_env(index):
        with lock:
            return CounterEnv()

    children = multiprocessing.active_children()
    with pytest.raises(TypeError, match=r"make_env must be picklable .* module-level function"):
        RemoteVectorEnv(make_env, 2, False, 0)
    with pytest.raises(TypeError, match="make_env must be a callable"):
        RemoteVectorEnv("CartPole-v1", 2, False, 0)
    assert multiprocessing.active_children() == children


def test_a_killed_sub_env_is_reported_and_stop_leaves_no_processes(monkeypatch):
    monkeypatch.setattr(sub_env_processes, "_CLOSE_GRACE_S", 0.5)
    env = RemoteVectorEnv(make_counter_env, 2, False, 0, existing_envs=[CounterEnv()])
    handles = env.get_sub_environments()
    env.try_reset(1, seed=21)  # Before the first poll: replaces sub-env 1's first reset.
    got = poll_until(env, [0, 1])
    np.testing.assert_array_equal(got[1][0]["agent0"], make_counter_env(1).reset(seed=21)[0])
    env.try_reset(1, options={"sleep": 30.0})
    poll_until(env, [1])
    env.send_actions({1: {"agent0": 0}})  # Sub-env 1 is now busy for 30 s...
    os.kill(handles[1].pid, signal.SIGKILL)  # ...and killed.
    with pytest.raises(SubEnvError, match=r"Sub-environment 1: its process .* died "
                       r"unexpectedly \(exit code -9\) while running step\(\)"):
        env.poll()
    with pytest.raises(SubEnvError, match=r"Sub-environment 1: .* died .* before it could "
                       r"run reset\(\)"):
        env.try_reset(1)
    env.try_reset(0, options={"sleep": 30.0})
    poll_until(env, [0])
    env.send_actions({0: {"agent0": 0}})  # Sub-env 0 is now busy for 30 s.
    start = time.monotonic()
    env.stop()
    env.stop()  # Idempotent.
    assert time.monotonic() - start < 4.0  # 0.5 s to close, then terminated.
    for handle in handles:
        assert not handle.is_alive() and handle.process.exitcode is not None
        assert not os.path.exists(f"/proc/{handle.pid}")  # Reaped: no zombie.
    assert not {h.process for h in handles} & set(multiprocessing.active_children())
    with pytest.raises(RuntimeError, match="was stopped"):
        env.poll()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(num_envs=0), r"num_envs must be an int >= 1; received num_envs=0"),
        (dict(remote_env_batch_wait_ms=-1), r"remote_env_batch_wait_ms must be a number >= 0"),
        (dict(backend="thread"), r"backend must be one of \('process', 'ray'\)"),
        (dict(timeout_s=0), r"timeout_s must be a number > 0 or None"),
    ],
)
def test_bad_constructor_arguments(kwargs, match):
    args = dict(make_env=make_counter_env, num_envs=2, multiagent=False,
                remote_env_batch_wait_ms=0)
    with pytest.raises(ValueError, match=match):
        RemoteVectorEnv(**{**args, **kwargs})


def test_ray_backend_without_ray_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails.
    for name in [m for m in sys.modules if m.startswith("tfrl.backends.ray")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(ImportError, match=r"pip install 'tfrl\[ray\]'"):
        RemoteVectorEnv(make_counter_env, 2, False, 0, backend="ray")


def test_convert_to_base_env_refuses_one_remote_env():
    with pytest.raises(ValueError, match="Remote envs only make sense to use if num_envs > 1"):
        convert_to_base_env(CounterEnv(), make_env=make_counter_env, num_envs=1,
                            remote_envs=True)


def test_importing_the_module_imports_neither_ray_nor_tensorflow():
    code = ("import sys, tfrl.env.remote_vector_env, tfrl.env.utils.sub_env_processes; "
            "print(sorted(m for m in ('ray', 'tensorflow') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, cwd=REPO_ROOT).stdout
    assert out.strip() == "[]"


def test_is_a_base_env():
    assert issubclass(RemoteVectorEnv, BaseEnv)
