"""Stand-ins for the example envs and mock policies RLlib's rollout-worker and env tests
import (`ray.rllib.examples.env.mock_env`, `...env.multi_agent`, `...env.random_env`,
`ray.rllib.evaluation.tests.test_rollout_worker.MockPolicy`/`BadPolicy`), written for the
gymnasium API (`reset -> (obs, info)`, `step -> (obs, reward, terminated, truncated,
info)`), as RLlib's own gymnasium-era versions of these classes are.

Behaviour (episode lengths, observations, rewards, which agents act when) is RLlib's; the
code is ours.
"""

import random
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from tfrl.env.multi_agent_env import MultiAgentEnv, make_multi_agent
from tfrl.env.vector_env import VectorEnv
from tfrl.evaluation.postprocessing import compute_advantages
from tfrl.examples.policy.random_policy import RandomPolicy


# ------------------------------------------------------------------ single-agent envs
class MockEnv(gym.Env):
    """Observation 0, reward 1.0 per step, terminates after `episode_length` steps."""

    def __init__(self, episode_length, config=None):
        self.episode_length = episode_length
        self.config = config
        self.i = 0
        self.observation_space = gym.spaces.Discrete(1)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        self.i = 0
        return 0, {}

    def step(self, action):
        self.i += 1
        return 0, 1.0, self.i >= self.episode_length, False, {}


class MockEnv2(gym.Env):
    """Observation = timestep (Discrete), reward 100.0 per step; remembers its reset seed."""

    metadata = {"render_modes": ["rgb_array"]}
    render_mode = "rgb_array"

    def __init__(self, episode_length):
        self.episode_length = episode_length
        self.i = 0
        self.observation_space = gym.spaces.Discrete(self.episode_length + 1)
        self.action_space = gym.spaces.Discrete(2)
        self.rng_seed = None

    def reset(self, *, seed=None, options=None):
        self.i = 0
        if seed is not None:
            self.rng_seed = seed
        return self.i, {}

    def step(self, action):
        self.i += 1
        done = self.i >= self.episode_length
        return self.i, 100.0, done, False, {}

    def render(self):
        return np.zeros((30, 40, 3), dtype=np.uint8)


class VectorizedMockEnv(VectorEnv):
    """A VectorEnv of `num_envs` MockEnvs."""

    def __init__(self, episode_length, num_envs):
        super().__init__(gym.spaces.Discrete(1), gym.spaces.Discrete(2), num_envs)
        self.envs = [MockEnv(episode_length) for _ in range(num_envs)]

    def vector_reset(self, *, seeds=None, options=None):
        pairs = [env.reset() for env in self.envs]
        return [p[0] for p in pairs], [p[1] for p in pairs]

    def reset_at(self, index=None, *, seed=None, options=None):
        return self.envs[index or 0].reset()

    def vector_step(self, actions):
        out = [env.step(a) for env, a in zip(self.envs, actions)]
        return tuple([o[k] for o in out] for k in range(5))

    def get_sub_environments(self):
        return self.envs


class MockVectorEnv(VectorEnv):
    """Pretends to hold `mocked_num_envs` sub-envs but steps one CartPole with all of
    their actions in turn; every "sub-env" ends when CartPole does or after
    `episode_length` vector steps."""

    def __init__(self, episode_length, mocked_num_envs):
        self.env = gym.make("CartPole-v1")
        super().__init__(self.env.observation_space, self.env.action_space, mocked_num_envs)
        self.episode_len = episode_length
        self.ts = 0
        self._seed = 0  # the first reset seeds CartPole: tests stay deterministic

    def vector_reset(self, *, seeds=None, options=None):
        obs, info = self.env.reset(seed=self._seed)
        self._seed = None
        return [obs] * self.num_envs, [info] * self.num_envs

    def reset_at(self, index=None, *, seed=None, options=None):
        self.ts = 0
        return self.env.reset()

    def vector_step(self, actions):
        self.ts += 1
        obs_b, rew_b, term_b, trunc_b, info_b = [], [], [], [], []
        for i in range(self.num_envs):
            obs, rew, term, trunc, info = self.env.step(actions[i])
            done = term or trunc or self.ts >= self.episode_len
            for batch, value in zip((obs_b, rew_b, term_b, trunc_b, info_b),
                                    (obs, rew, done, False, info)):
                batch.append(value)
            if done:
                remaining = self.num_envs - (i + 1)
                for batch, value in zip((obs_b, rew_b, term_b, trunc_b, info_b),
                                        (obs, rew, done, False, info)):
                    batch.extend([value] * remaining)
                break
        return obs_b, rew_b, term_b, trunc_b, info_b

    def get_sub_environments(self):
        return [self.env for _ in range(self.num_envs)]


class RandomEnv(gym.Env):
    """RLlib's RandomEnv: random observations and rewards in configurable spaces, episodes
    that end with probability `p_terminated` per step or after `max_episode_len` steps,
    and (`check_action_bounds=True`) a ValueError("Illegal action ...") for actions outside
    the action space."""

    def __init__(self, config=None):
        config = dict(config or {})
        self.action_space = config.get("action_space", gym.spaces.Discrete(2))
        self.observation_space = config.get("observation_space", gym.spaces.Discrete(2))
        self.reward_space = config.get(
            "reward_space", gym.spaces.Box(low=-1.0, high=1.0, shape=(), dtype=np.float32))
        self.reward_space.seed(config.get("seed", 0))
        self.p_terminated = config.get("p_terminated", config.get("p_done", 0.1))
        self.max_episode_len = config.get("max_episode_len", None)
        self.check_action_bounds = config.get("check_action_bounds", False)
        self.steps = 0

    def reset(self, *, seed=None, options=None):
        self.steps = 0
        return self.observation_space.sample(), {}

    def step(self, action):
        if self.check_action_bounds and not self.action_space.contains(action):
            raise ValueError(f"Illegal action for {self.action_space}: {action}")
        self.steps += 1
        terminated = bool(self.p_terminated > 0.0 and np.random.random() < self.p_terminated)
        truncated = bool(self.max_episode_len and self.steps >= self.max_episode_len)
        return (self.observation_space.sample(), float(self.reward_space.sample()),
                terminated, truncated, {})


# ------------------------------------------------------------------- multi-agent envs
class BasicMultiAgent(MultiAgentEnv):
    """`num` independent MockEnv(25) agents (ids 0..num-1)."""

    metadata = {"render_modes": ["rgb_array"]}
    render_mode = "rgb_array"

    def __init__(self, num):
        super().__init__()
        self.envs = [MockEnv(25) for _ in range(num)]
        self._agent_ids = set(range(num))
        self.agents = list(range(num))
        self.terminateds, self.truncateds = set(), set()
        self.observation_space = gym.spaces.Discrete(2)
        self.action_space = gym.spaces.Discrete(2)
        self.resetted = False

    def reset(self, *, seed=None, options=None):
        self.resetted = True
        self.terminateds, self.truncateds = set(), set()
        pairs = [env.reset() for env in self.envs]
        return {i: p[0] for i, p in enumerate(pairs)}, {i: p[1] for i, p in enumerate(pairs)}

    def step(self, action_dict):
        obs, rew, term, trunc, info = {}, {}, {}, {}, {}
        for i, action in action_dict.items():
            obs[i], rew[i], term[i], trunc[i], info[i] = self.envs[i].step(action)
            if term[i]:
                self.terminateds.add(i)
            if trunc[i]:
                self.truncateds.add(i)
        term["__all__"] = len(self.terminateds) == len(self.envs)
        trunc["__all__"] = len(self.truncateds) == len(self.envs)
        return obs, rew, term, trunc, info

    def render(self):
        return np.zeros((20, 30, 3), dtype=np.uint8)


class EarlyDoneMultiAgent(MultiAgentEnv):
    """Two agents acting in turn (MockEnv(3) and MockEnv(5)); the episode ends when
    agent 0's env does, without agent 1 getting a last observation."""

    def __init__(self):
        super().__init__()
        self.envs = [MockEnv(3), MockEnv(5)]
        self._agent_ids = set(range(len(self.envs)))
        self.observation_space = gym.spaces.Discrete(10)
        self.action_space = gym.spaces.Discrete(2)
        self._clear()

    def _clear(self):
        self.terminateds, self.truncateds = set(), set()
        self.last_obs, self.last_rew, self.last_info = {}, {}, {}
        self.last_terminated, self.last_truncated = {}, {}
        self.i = 0

    def reset(self, *, seed=None, options=None):
        self._clear()
        for i, env in enumerate(self.envs):
            self.last_obs[i], self.last_info[i] = env.reset()
            self.last_rew[i] = 0
            self.last_terminated[i] = self.last_truncated[i] = False
        obs, info = {self.i: self.last_obs[self.i]}, {self.i: self.last_info[self.i]}
        self.i = (self.i + 1) % len(self.envs)
        return obs, info

    def step(self, action_dict):
        assert len(self.terminateds) != len(self.envs)
        for i, action in action_dict.items():
            (self.last_obs[i], self.last_rew[i], self.last_terminated[i],
             self.last_truncated[i], self.last_info[i]) = self.envs[i].step(action)
        i = self.i
        obs, rew, info = {i: self.last_obs[i]}, {i: self.last_rew[i]}, {i: self.last_info[i]}
        term, trunc = {i: self.last_terminated[i]}, {i: self.last_truncated[i]}
        if term[i]:
            rew[i] = 0
            self.terminateds.add(i)
        if trunc[i]:
            rew[i] = 0
            self.truncateds.add(i)
        self.i = (self.i + 1) % len(self.envs)
        term["__all__"] = len(self.terminateds) == len(self.envs) - 1
        trunc["__all__"] = len(self.truncateds) == len(self.envs) - 1
        return obs, rew, term, trunc, info


class FlexAgentsMultiAgent(MultiAgentEnv):
    """Agents (MockEnv(25) each) join and leave at random within an episode."""

    def __init__(self):
        super().__init__()
        self.envs = {}
        self.agents = []
        self.possible_agents = list(range(10000))
        self.agentID = 0
        self.terminateds, self.truncateds = set(), set()
        self.observation_space = gym.spaces.Discrete(2)
        self.action_space = gym.spaces.Discrete(2)
        self.resetted = False

    def spawn(self):
        aid = self.agentID
        self.envs[aid] = MockEnv(25)
        self.agents.append(aid)
        self.agentID += 1
        return aid

    def kill(self, agent_id):
        del self.envs[agent_id]
        self.agents.remove(agent_id)

    def reset(self, *, seed=None, options=None):
        self.envs = {}
        self.agents.clear()
        self.spawn()
        self.steps = 0
        self.resetted = True
        self.terminateds, self.truncateds = set(), set()
        obs, infos = {}, {}
        for i, env in self.envs.items():
            obs[i], infos[i] = env.reset()
        return obs, infos

    def step(self, action_dict):
        # A guard (not RLlib's): an episode this long is endless (no live agent left to
        # observe); fail instead of hanging the test run.
        self.steps = getattr(self, "steps", 0) + 1
        if self.steps > 20000:
            raise RuntimeError("FlexAgentsMultiAgent: endless episode (20000 steps)")
        obs, rew, term, trunc, info = {}, {}, {}, {}, {}
        for i, action in action_dict.items():
            obs[i], rew[i], term[i], trunc[i], info[i] = self.envs[i].step(action)
            if term[i]:
                self.terminateds.add(i)
            if trunc[i]:
                self.truncateds.add(i)
        if random.random() > 0.75 and len(action_dict) > 0:
            aid = self.spawn()
            obs[aid], rew[aid], term[aid], trunc[aid], info[aid] = self.envs[aid].step(action)
            if term[aid]:
                self.terminateds.add(aid)
            if trunc[aid]:
                self.truncateds.add(aid)
        if len(self.envs) > 1 and random.random() > 0.25:
            # As RLlib's gym-era env (the version its flex-agents test at e01461b ran): a
            # killed agent is reported done but not added to `terminateds`. (Its later
            # revision adds it, and then `terminateds` can outgrow the live agents so that
            # `__all__` never comes.)
            aid = random.choice(list(self.envs))
            self.kill(aid)
            term[aid] = True
        term["__all__"] = len(self.terminateds) == len(self.envs)
        trunc["__all__"] = len(self.truncateds) == len(self.envs)
        return obs, rew, term, trunc, info


class RoundRobinMultiAgent(MultiAgentEnv):
    """`num` agents of which one acts per step, in turn; each agent's env ends after 5 of
    its steps (observations count up with `increment_obs=True`, else stay 0)."""

    def __init__(self, num, increment_obs=False):
        super().__init__()
        self.envs = [MockEnv2(5) if increment_obs else MockEnv(5) for _ in range(num)]
        self._agent_ids = set(range(num))
        self.num = num
        self.observation_space = gym.spaces.Discrete(10)
        self.action_space = gym.spaces.Discrete(2)
        self._clear()

    def _clear(self):
        self.terminateds, self.truncateds = set(), set()
        self.last_obs, self.last_rew, self.last_info = {}, {}, {}
        self.last_terminated, self.last_truncated = {}, {}
        self.i = 0

    def reset(self, *, seed=None, options=None):
        self._clear()
        for i, env in enumerate(self.envs):
            self.last_obs[i], self.last_info[i] = env.reset()
            self.last_rew[i] = 0
            self.last_terminated[i] = self.last_truncated[i] = False
        obs, info = {self.i: self.last_obs[self.i]}, {self.i: self.last_info[self.i]}
        self.i = (self.i + 1) % self.num
        return obs, info

    def step(self, action_dict):
        assert len(self.terminateds) != len(self.envs)
        for i, action in action_dict.items():
            (self.last_obs[i], self.last_rew[i], self.last_terminated[i],
             self.last_truncated[i], self.last_info[i]) = self.envs[i].step(action)
        i = self.i
        obs, rew, info = {i: self.last_obs[i]}, {i: self.last_rew[i]}, {i: self.last_info[i]}
        term, trunc = {i: self.last_terminated[i]}, {i: self.last_truncated[i]}
        if term[i]:
            rew[i] = 0
            self.terminateds.add(i)
        if trunc[i]:
            self.truncateds.add(i)
        self.i = (self.i + 1) % self.num
        term["__all__"] = len(self.terminateds) == len(self.envs)
        trunc["__all__"] = len(self.truncateds) == len(self.envs)
        return obs, rew, term, trunc, info


class NestedMultiAgentEnv(MultiAgentEnv):
    """Two agents with nested Dict/Tuple observation spaces, given per agent (RLlib's
    "preferred format": Dict spaces keyed by agent id)."""

    DICT_SPACE = gym.spaces.Dict({
        "sensors": gym.spaces.Dict({
            "position": gym.spaces.Box(low=-100, high=100, shape=(3,)),
            "velocity": gym.spaces.Box(low=-1, high=1, shape=(3,)),
            "front_cam": gym.spaces.Tuple((gym.spaces.Box(low=0, high=1, shape=(10, 10, 3)),
                                           gym.spaces.Box(low=0, high=1, shape=(10, 10, 3)))),
            "rear_cam": gym.spaces.Box(low=0, high=1, shape=(10, 10, 3)),
        }),
        "inner_state": gym.spaces.Dict({
            "charge": gym.spaces.Discrete(100),
            "job_status": gym.spaces.Dict({
                "task": gym.spaces.Discrete(5),
                "progress": gym.spaces.Box(low=0, high=100, shape=()),
            }),
        }),
    })
    TUPLE_SPACE = gym.spaces.Tuple([
        gym.spaces.Box(low=-100, high=100, shape=(3,)),
        gym.spaces.Tuple((gym.spaces.Box(low=0, high=1, shape=(10, 10, 3)),
                          gym.spaces.Box(low=0, high=1, shape=(10, 10, 3)))),
        gym.spaces.Discrete(5),
    ])

    def __init__(self):
        super().__init__()
        self.observation_space = gym.spaces.Dict(
            {"dict_agent": self.DICT_SPACE, "tuple_agent": self.TUPLE_SPACE})
        self.action_space = gym.spaces.Dict(
            {"dict_agent": gym.spaces.Discrete(1), "tuple_agent": gym.spaces.Discrete(1)})
        self._agent_ids = {"dict_agent", "tuple_agent"}
        self.steps = 0
        self.DICT_SPACE.seed(0)
        self.TUPLE_SPACE.seed(0)
        self.DICT_SAMPLES = [self.DICT_SPACE.sample() for _ in range(10)]
        self.TUPLE_SAMPLES = [self.TUPLE_SPACE.sample() for _ in range(10)]

    def reset(self, *, seed=None, options=None):
        self.steps = 0
        return {"dict_agent": self.DICT_SAMPLES[0], "tuple_agent": self.TUPLE_SAMPLES[0]}, {}

    def step(self, actions):
        self.steps += 1
        obs = {"dict_agent": self.DICT_SAMPLES[self.steps],
               "tuple_agent": self.TUPLE_SAMPLES[self.steps]}
        rew = {"dict_agent": 0, "tuple_agent": 0}
        done = {"__all__": self.steps >= 5}
        return obs, rew, done, dict(done), {"dict_agent": {}, "tuple_agent": {}}


# RLlib: `MultiAgentCartPole = make_multi_agent("CartPole-v1")`.
MultiAgentCartPole = make_multi_agent("CartPole-v1")


# ------------------------------------------------------------------------- policies
class MockPolicy(RandomPolicy):
    """Acts 0 or 1 (one random choice per call, for the whole batch); postprocessing
    adds discounted returns as `advantages` (last_r=100, gamma=0.9, no critic)."""

    def compute_actions(self, obs_batch, state_batches=None, prev_action_batch=None,
                        prev_reward_batch=None, episodes=None, explore=None, timestep=None,
                        **kwargs):
        return np.array([random.choice([0, 1])] * len(obs_batch)), [], {}

    def postprocess_trajectory(self, batch, other_agent_batches=None, episode=None):
        assert episode is not None
        super().postprocess_trajectory(batch, other_agent_batches, episode)
        return compute_advantages(batch, 100.0, 0.9, use_gae=False, use_critic=False)


class BadPolicy(RandomPolicy):
    """Raises on every `compute_actions`."""

    def compute_actions(self, obs_batch, state_batches=None, prev_action_batch=None,
                        prev_reward_batch=None, episodes=None, explore=None, timestep=None,
                        **kwargs):
        raise Exception("intentional error")


class FailOnStepEnv(gym.Env):
    """Raises ValueError("kaboom") on reset and step."""

    def __init__(self, config: Optional[Any] = None):
        self.observation_space = gym.spaces.Discrete(1)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        raise ValueError("kaboom")

    def step(self, action):
        raise ValueError("kaboom")


def one_hot(x, depth):
    """RLlib's `ray.rllib.utils.numpy.one_hot` for int arrays: float32 one-hot rows."""
    x = np.asarray(x, dtype=np.int64)
    out = np.zeros(x.shape + (depth,), dtype=np.float32)
    np.put_along_axis(out, x[..., None], 1.0, axis=-1)
    return out
