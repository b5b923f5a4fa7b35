"""RemoteVectorEnv with the Ray backend: sub-envs as Ray actors.

Skipped when Ray is not installed; marked `ray` and `slow` (deselect with
`-m "not ray"`; Ray start-up takes seconds). One local Ray runtime (2 CPUs, no
dashboard) serves the module and is shut down after it.
Sub-env actors ask for `num_cpus=0`, so they never wait for free CPUs.
"""

import sys
import time

import cloudpickle
import gymnasium as gym
import numpy as np
import pytest

ray = pytest.importorskip("ray")

from tfrl.env.remote_vector_env import RemoteVectorEnv, SubEnvError  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.slow]

# Ray workers cannot import this test module: ship its envs (through tfrl's cloudpickle)
# and its actor class (through Ray's own copy of cloudpickle) by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


class StepCountEnv(gym.Env):
    """obs `[t, draw]` (draw fixed at reset by the env's RNG); 3-step episodes.

    Action 2 raises.
    """

    observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, seed):
        self.np_random = np.random.default_rng(seed)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.draw = 0, int(self.np_random.integers(1000))
        return np.array([0, self.draw], np.float32), {}

    def step(self, action):
        if action == 2:
            raise ValueError("StepCountEnv received action 2")
        self.t += 1
        obs = np.array([self.t, self.draw], np.float32)
        return obs, float(self.t + action), self.t >= 3, False, {}


def make_env(index):
    return StepCountEnv(seed=10 + index)


def make_slow_env(index):
    time.sleep(3.0)
    return make_env(index)


def _poll_all(env, env_ids):
    got = {}
    while not set(env_ids) <= set(got):
        obs, rewards, terminateds, truncateds, _, _ = env.poll()
        for i in obs:
            got[i] = (obs[i]["agent0"].tolist(), rewards[i]["agent0"],
                      terminateds[i]["__all__"], truncateds[i]["__all__"])
    return got


def test_ray_sub_envs_step_like_the_envs_in_process(ray_runtime):
    # A long batch wait: each poll returns both sub-envs (they answer within ms).
    env = RemoteVectorEnv(make_env, 2, multiagent=False, remote_env_batch_wait_ms=20_000,
                          backend="ray", timeout_s=60)
    try:
        assert env.observation_space == StepCountEnv.observation_space
        direct = [make_env(i) for i in range(2)]
        expected = {i: (direct[i].reset()[0].tolist(), None, False, False) for i in range(2)}
        assert _poll_all(env, [0, 1]) == expected
        for _ in range(3):
            env.send_actions({0: {"agent0": 1}, 1: {"agent0": 0}})
            expected = {}
            for i, action in ((0, 1), (1, 0)):
                obs, reward, terminated, truncated, _ = direct[i].step(action)
                expected[i] = (obs.tolist(), reward, terminated, truncated)
            assert _poll_all(env, [0, 1]) == expected
        assert expected[0][2] is True  # The episodes ended: the next poll resets them.
        assert _poll_all(env, [0, 1]) == {
            i: (direct[i].reset()[0].tolist(), None, False, False) for i in range(2)}
        assert env.try_reset(0, seed=3) == "async_reset_return"
        assert _poll_all(env, [0]) == {0: (direct[0].reset(seed=3)[0].tolist(), None,
                                           False, False)}
        actor = env.get_sub_environments()[1]
        assert ray.get(actor.call.remote("observation_space")) == env.observation_space

        env.send_actions({1: {"agent0": 2}})
        with pytest.raises(SubEnvError, match=r"Sub-environment 1: step\(\) raised ValueError: "
                           r"StepCountEnv received action 2") as info:
            env.poll()
        assert "Traceback" in info.value.remote_traceback
    finally:
        env.stop()
    # stop() killed the actors (`ray.kill` takes effect asynchronously).
    deadline = time.monotonic() + 30
    with pytest.raises(ray.exceptions.RayActorError):
        while time.monotonic() < deadline:
            ray.get(actor.call.remote("observation_space"), timeout=30)
            time.sleep(0.1)


@ray.remote(num_cpus=0)
class UserEnvActor:
    """A user's own env actor with gymnasium's API (RLlib's `make_env` creating actors)."""

    def __init__(self, index):
        self.env = make_env(index)

    def reset(self, seed=None, options=None):
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        return self.env.step(action)


def test_existing_actor_envs_are_used_as_is(ray_runtime):
    first = UserEnvActor.remote(0)
    env = RemoteVectorEnv(UserEnvActor.remote, 2, multiagent=False,
                          remote_env_batch_wait_ms=0, existing_envs=[first], backend="ray",
                          timeout_s=60)
    try:
        assert env.get_sub_environments()[0] is first
        got = _poll_all(env, [0, 1])
        assert got == {i: (make_env(i).reset()[0].tolist(), None, False, False) for i in (0, 1)}
        env.send_actions({0: {"agent0": 2}})
        with pytest.raises(SubEnvError, match=r"Sub-environment 0: step\(\) raised ValueError"):
            env.poll()
    finally:
        env.stop()


def test_existing_actor_envs_need_actors_from_make_env_and_at_most_num_envs(ray_runtime):
    first, second = UserEnvActor.remote(0), UserEnvActor.remote(1)
    with pytest.raises(TypeError, match=r"make_env must create actors too; make_env\(1\) "
                       r"returned StepCountEnv"):
        RemoteVectorEnv(make_env, 2, False, 0, existing_envs=[first], backend="ray")
    with pytest.raises(ValueError, match="Received 2 existing sub-env actors for num_envs=1"):
        RemoteVectorEnv(make_env, 1, False, 0, existing_envs=[first, second], backend="ray")
    for actor in (first, second):
        ray.kill(actor)


def _wait_until_dead(actor, timeout_s=30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            ray.get(actor.call.remote("reset"), timeout=5)
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            return
        time.sleep(0.05)
    raise AssertionError("the killed actor still answers")


def test_a_slow_or_killed_ray_sub_env_is_reported(ray_runtime):
    with pytest.raises(TimeoutError, match=r"Sub-environment 0 did not answer spaces\(\) "
                       r"within timeout_s=0.5 s"):
        RemoteVectorEnv(make_slow_env, 1, False, 0, backend="ray", timeout_s=0.5)
    env = RemoteVectorEnv(make_env, 1, False, 0, backend="ray", timeout_s=60)
    try:
        _poll_all(env, [0])
        actor = env.get_sub_environments()[0]
        ray.kill(actor)
        _wait_until_dead(actor)  # ray.kill takes effect asynchronously
        env.send_actions({0: {"agent0": 0}})
        with pytest.raises(SubEnvError, match=r"Sub-environment 0: its Ray actor died while "
                           r"running step\(\)"):
            env.poll()
    finally:
        env.stop()
