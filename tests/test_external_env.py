"""ExternalEnv / ExternalMultiAgentEnv: the episode protocol, their BaseEnv view, errors."""

import threading
import time

import gymnasium as gym
import numpy as np
import pytest

from tfrl.env.external_env import ExternalEnv, ExternalEnvStopped
from tfrl.env.external_multi_agent_env import ExternalMultiAgentEnv

OBS_SPACE = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)
ACT_SPACE = gym.spaces.Discrete(3)
A = "agent0"


def _obs(x):
    return np.array([x, -x], np.float32)


class ScriptedEnv(ExternalEnv):
    """Runs `script(self)` as its run loop and records what get_action returned."""

    def __init__(self, script, max_concurrent=100):
        super().__init__(ACT_SPACE, OBS_SPACE, max_concurrent)
        self.script = script
        self.received = []
        self.error = None

    def run(self):
        try:
            self.script(self)
        except Exception as e:  # surfaced by the test
            self.error = e


class IdleEnv(ExternalEnv):
    """Driven from the test thread; its own thread only waits."""

    def __init__(self, max_concurrent=100):
        super().__init__(ACT_SPACE, OBS_SPACE, max_concurrent)
        self._done = threading.Event()

    def run(self):
        self._done.wait(30)


@pytest.fixture
def idle():
    env = IdleEnv(max_concurrent=2)
    base = env.to_base_env(poll_timeout=0.05)
    yield env, base
    env._done.set()
    base.stop()


# ---- The protocol, driven by the env's own thread ----------------------------------------

def test_protocol_in_background_thread():
    def script(env):
        eid = env.start_episode("e1")
        env.received.append(env.get_action(eid, _obs(1)))
        env.log_returns(eid, 1.0)
        env.log_returns(eid, 0.5, {"note": "x"})
        env.log_action(eid, _obs(2), 2)  # off-policy: does not wait
        env.received.append(env.get_action(eid, _obs(3)))  # no reward since: 0.0
        env.end_episode(eid, _obs(4))

    env = ScriptedEnv(script)
    base = env.to_base_env(poll_timeout=5.0)
    assert env.is_alive() and env.daemon

    obs, rewards, terminateds, truncateds, infos, off = base.poll()
    np.testing.assert_array_equal(obs["e1"][A], _obs(1))
    assert rewards == {"e1": {A: None}}
    assert terminateds == {"e1": {A: False, "__all__": False}}
    assert truncateds == {"e1": {A: False, "__all__": False}}
    assert infos == {"e1": {A: {}}} and off == {}
    base.send_actions({"e1": {A: 1}})

    obs, rewards, terminateds, _, infos, off = base.poll()
    np.testing.assert_array_equal(obs["e1"][A], _obs(2))
    assert rewards["e1"][A] == 1.5 and infos["e1"][A] == {"note": "x"}
    assert off == {"e1": {A: 2}}
    base.send_actions({"e1": {A: 0}})  # ignored: the action was already taken

    obs, rewards, *_ = base.poll()
    np.testing.assert_array_equal(obs["e1"][A], _obs(3))
    assert rewards["e1"][A] == 0.0
    base.send_actions({"e1": {A: 2}})

    obs, rewards, terminateds, truncateds, _, _ = base.poll()
    np.testing.assert_array_equal(obs["e1"][A], _obs(4))
    assert terminateds["e1"] == {A: True, "__all__": True}
    assert truncateds["e1"] == {A: False, "__all__": False}
    env.join(5)
    assert env.error is None and env.received == [1, 2]
    with pytest.raises(ValueError, match="unknown env id 'e1'"):
        base.send_actions({"e1": {A: 0}})


def test_concurrent_episodes_are_polled_together(idle):
    env, base = idle
    results = {}

    def play(eid, x):
        env.start_episode(eid)
        results[eid] = env.get_action(eid, _obs(x))

    threads = [threading.Thread(target=play, args=(e, x)) for e, x in (("a", 1), ("b", 2))]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 5
    seen = {}
    while len(seen) < 2 and time.monotonic() < deadline:
        obs, *_ = base.poll()
        seen.update(obs)
    assert set(seen) == {"a", "b"}
    base.send_actions({"a": {A: 0}, "b": {A: 2}})
    for t in threads:
        t.join(5)
    assert results == {"a": 0, "b": 2}


def test_end_episode_truncated(idle):
    env, base = idle
    env.start_episode("e")
    env.log_action("e", _obs(0), 1)
    env.log_returns("e", 2.0)
    env.end_episode("e", _obs(1), truncated=True)
    base.poll()
    obs, rewards, terminateds, truncateds, _, _ = base.poll()
    assert rewards["e"][A] == 2.0
    assert terminateds["e"]["__all__"] is False and truncateds["e"] == {A: True, "__all__": True}


def test_has_ended_episodes_until_a_poll_takes_them(idle):
    env, base = idle
    env.start_episode("e")
    assert not env.has_ended_episodes()
    env.end_episode("e", _obs(1))
    assert env.has_ended_episodes()
    base.poll()
    assert not env.has_ended_episodes()


def test_wait_until_stopped_returns_once_the_env_is_stopped(idle):
    env, base = idle
    waiter = threading.Thread(target=env.wait_until_stopped, args=(0.01,))
    waiter.start()
    time.sleep(0.05)
    assert waiter.is_alive()
    base.stop()
    waiter.join(5)
    assert not waiter.is_alive()


def test_training_disabled_is_marked_in_infos(idle):
    env, base = idle
    env.start_episode("e", training_enabled=False)
    env.log_action("e", _obs(0), 1)
    *_, infos, _ = base.poll()
    assert infos["e"][A] == {"training_enabled": False}


def test_poll_timeout_returns_empty_dicts(idle):
    _, base = idle
    t0 = time.monotonic()
    assert base.poll() == ({}, {}, {}, {}, {}, {})
    assert time.monotonic() - t0 < 1.0


def test_auto_episode_id_is_32_hex(idle):
    env, _ = idle
    eid = env.start_episode()
    assert len(eid) == 32 and int(eid, 16) >= 0


# ---- Errors ---------------------------------------------------------------------------------

def test_start_errors(idle):
    env, base = idle
    env.start_episode("e")
    with pytest.raises(ValueError, match="Episode e is already started"):
        env.start_episode("e")
    env.start_episode("f")
    with pytest.raises(ValueError, match="Too many concurrent episodes.*max_concurrent=2"):
        env.start_episode("g")
    env.end_episode("e", _obs(0))
    with pytest.raises(ValueError, match="Episode e has already completed."):
        env.start_episode("e")
    env.start_episode("g")  # an ended episode no longer counts
    with pytest.raises(TypeError, match="episode_id must be a str"):
        env.start_episode(7)


@pytest.mark.parametrize("call", [
    lambda env: env.get_action("nope", _obs(0)),
    lambda env: env.log_action("nope", _obs(0), 1),
    lambda env: env.log_returns("nope", 1.0),
    lambda env: env.end_episode("nope", _obs(0)),
])
def test_unknown_episode_id(idle, call):
    env, _ = idle
    with pytest.raises(ValueError, match="Unknown episode id 'nope'. Call start_episode"):
        call(env)


def test_calls_on_completed_episode(idle):
    env, _ = idle
    env.start_episode("e")
    env.end_episode("e", _obs(0))
    with pytest.raises(ValueError, match="Episode e has already completed."):
        env.log_returns("e", 1.0)


def test_bad_observation_action_and_reward(idle):
    env, _ = idle
    env.start_episode("e")
    with pytest.raises(ValueError, match=r"observation has shape \(3,\), expected \(2,\)"):
        env.log_action("e", np.zeros(3, np.float32), 1)
    with pytest.raises(ValueError, match="action 5 is not in the action space Discrete"):
        env.log_action("e", _obs(0), 5)
    with pytest.raises(ValueError, match=r"^Bad reward for episode e: reward must be a finite "
                                         r"number; received 'high'\. Rewards must be finite"):
        env.log_returns("e", "high")


def test_invalid_constructor_and_to_base_env():
    with pytest.raises(ValueError, match="max_concurrent must be an int >= 1"):
        IdleEnv(max_concurrent=0)
    with pytest.raises(ValueError, match="does not currently support num_envs > 1"):
        IdleEnv().to_base_env(num_envs=2)


def test_send_actions_errors(idle):
    env, base = idle
    env.start_episode("e")
    waiter = threading.Thread(target=lambda: env.get_action("e", _obs(0)))
    waiter.start()
    while not base.poll()[0]:
        pass
    with pytest.raises(ValueError, match=r"expected exactly \['agent0'\]"):
        base.send_actions({"e": {"agent7": 1}})
    with pytest.raises(TypeError, match="takes {env_id: {agent_id: action}}"):
        base.send_actions({"e": 1})
    with pytest.raises(ValueError, match="unknown env id 'zzz'"):
        base.send_actions({"zzz": {A: 1}})
    with pytest.raises(ValueError, match="already waiting for an action"):
        env.get_action("e", _obs(1))
    base.send_actions({"e": {A: 1}})
    waiter.join(5)
    assert not waiter.is_alive()


def test_get_actions_argument_errors(idle):
    env, _ = idle
    env.start_episode("e")
    with pytest.raises(ValueError, match="duplicate episode ids"):
        env.get_actions(["e", "e"], {"e": _obs(0)})
    with pytest.raises(ValueError, match=r"no observation for episode ids \['e'\]"):
        env.get_actions(["e"], {})


def test_get_action_timeout(idle):
    env, _ = idle
    env.get_action_timeout = 0.05
    env.start_episode("e")
    with pytest.raises(TimeoutError, match="No action for episode 'e' within 0.05 s"):
        env.get_action("e", _obs(0))


class BareLoopEnv(ExternalEnv):
    """Runs `script(self)` as its run loop, catching nothing."""

    def __init__(self, script):
        super().__init__(ACT_SPACE, OBS_SPACE)
        self.script = script

    def run(self):
        self.script(self)


def test_a_stopped_envs_own_loop_ends_quietly():
    # The env's run() loop waits for an action when the sampler stops the env: the loop
    # gets ExternalEnvStopped (a RuntimeError) and the thread ends with no unhandled-
    # exception report (threading.excepthook is not called).
    def script(env):
        eid = env.start_episode("e")
        while True:
            env.get_action(eid, _obs(0))

    reports = []
    previous_hook = threading.excepthook
    threading.excepthook = reports.append
    try:
        env = BareLoopEnv(script)
        base = env.to_base_env(poll_timeout=5.0)
        deadline = time.monotonic() + 5
        while not base.poll()[0] and time.monotonic() < deadline:
            pass
        base.stop()
        env.join(5)
    finally:
        threading.excepthook = previous_hook
    assert not env.is_alive()
    assert reports == []
    with pytest.raises(ExternalEnvStopped, match="was stopped; it takes no more episodes"):
        env.start_episode("f")


def test_a_loop_error_that_is_not_the_stop_is_still_reported():
    def script(env):
        raise ExternalEnvStopped("raised by the loop itself, not by a stop")

    reports = []
    previous_hook = threading.excepthook
    threading.excepthook = reports.append
    try:
        env = BareLoopEnv(script)
        env.start()
        env.join(5)
    finally:
        threading.excepthook = previous_hook
    assert [type(r.exc_value) for r in reports] == [ExternalEnvStopped]


def test_stop_releases_waiting_callers(idle):
    env, base = idle
    env.start_episode("e")
    errors = []

    def wait():
        try:
            env.get_action("e", _obs(0))
        except RuntimeError as e:
            errors.append(str(e))

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.05)
    base.stop()
    waiter.join(5)
    assert errors and "was stopped while episode e waited" in errors[0]
    with pytest.raises(RuntimeError, match="was stopped"):
        env.start_episode("f")
    assert base.poll() == ({}, {}, {}, {}, {}, {})


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_poll_raises_when_run_ends():
    class NoRun(ExternalEnv):
        pass

    env = NoRun(ACT_SPACE, OBS_SPACE)
    base = env.to_base_env(poll_timeout=5.0)
    env.join(5)
    with pytest.raises(RuntimeError, match="Serving thread has stopped"):
        base.poll()


# ---- Multi-agent -----------------------------------------------------------------------------

class IdleMultiAgentEnv(ExternalMultiAgentEnv):
    def run(self):
        time.sleep(30)


def test_multi_agent_protocol():
    env = IdleMultiAgentEnv(ACT_SPACE, OBS_SPACE)
    base = env.to_base_env(poll_timeout=0.05)
    assert base.get_agent_ids() == set()
    env.start_episode("e")
    env.log_action("e", {"a": _obs(0)}, {"a": 1})
    env.log_returns("e", {"a": 1.0}, {"a": {"i": 1}})
    obs, rewards, *_ = base.poll()
    assert rewards == {"e": {"a": None}}
    # "b" joins; "a" is done with its next observation.
    env.log_returns("e", {"a": 2.0}, multiagent_done_dict={"a": True, "__all__": False})
    got = {}
    waiter = threading.Thread(target=lambda: got.update(env.get_action("e", {"a": _obs(1), "b": _obs(2)})))
    waiter.start()
    obs, rewards, terminateds, truncateds, infos, _ = base.poll()
    while not obs:
        obs, rewards, terminateds, truncateds, infos, _ = base.poll()
    assert rewards["e"] == {"a": 3.0, "b": None}
    assert terminateds["e"] == {"a": True, "b": False, "__all__": False}
    assert infos["e"] == {"a": {"i": 1}, "b": {}}
    with pytest.raises(ValueError, match=r"expected exactly \['b'\]"):
        base.send_actions({"e": {"a": 0, "b": 2}})
    base.send_actions({"e": {"b": 2}})
    waiter.join(5)
    assert got == {"b": 2}
    env.log_returns("e", {"b": 4.0})
    env.end_episode("e", {"b": _obs(3)})
    obs, rewards, terminateds, *_ = base.poll()
    assert rewards["e"] == {"b": 4.0} and terminateds["e"] == {"b": True, "__all__": True}
    base.stop()


def test_multi_agent_errors():
    env = IdleMultiAgentEnv(ACT_SPACE, gym.spaces.Dict({"a": OBS_SPACE, "b": gym.spaces.Discrete(2)}))
    base = env.to_base_env(poll_timeout=0.05)
    env.start_episode("e")
    with pytest.raises(TypeError, match="takes the observation as a dict agent id"):
        env.log_action("e", _obs(0), {"a": 1})
    with pytest.raises(ValueError, match="actions of agents \\['b'\\] that have no observation"):
        env.log_action("e", {"a": _obs(0)}, {"a": 1, "b": 1})
    with pytest.raises(ValueError, match="Bad observation of agent 'a'.*shape"):
        env.log_action("e", {"a": np.zeros(5)}, {"a": 1})
    with pytest.raises(ValueError, match="Bad off-policy action of agent 'a'"):
        env.log_action("e", {"a": _obs(0)}, {"a": 9})
    with pytest.raises(TypeError, match="takes reward_dict as a dict"):
        env.log_returns("e", 1.0)
    base.stop()


def test_convert_to_base_env_wraps_external_envs():
    from tfrl.env.base_env import BaseEnv
    from tfrl.env.external_env_base import _ExternalEnvToBaseEnv

    env = IdleEnv()
    base = BaseEnv.to_base_env(env)
    assert isinstance(base, _ExternalEnvToBaseEnv) and base.external_env is env
    assert base.observation_space is OBS_SPACE and base.get_agent_ids() == {A}
    assert env.is_alive()  # to_base_env started the thread
    assert base.try_reset("x") is None
    env._done.set()
    base.stop()
