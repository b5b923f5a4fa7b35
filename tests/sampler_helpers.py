"""Stand-ins for the sampler tests: a worker with the attributes samplers read,
deterministic numpy policies, small deterministic envs, and a BaseEnv wrapper that hides
the array path."""

import gymnasium as gym
import numpy as np

from tfrl.algorithms.callbacks import DefaultCallbacks
from tfrl.env.base_env import BaseEnv
from tfrl.env.multi_agent_env import MultiAgentEnv
from tfrl.env.vector_env import VectorEnv
from tfrl.evaluation.sampler import SyncSampler
from tfrl.models.preprocessors import get_preprocessor
from tfrl.policy.policy import Policy
from tfrl.utils.filter import get_filter

from toy_envs import CounterEnv


class FakePolicy(Policy):
    """Deterministic, row-wise numpy actions: Discrete -> `floor(10 * |obs|.sum()) % n`,
    Box -> `tanh(obs.sum())` broadcast; extras `vf_preds = obs.sum()`, `action_logp = 0`.
    `value(obs)` = obs.sum(); records its compute_actions batch sizes."""

    def __init__(self, observation_space, action_space, config=None):
        super().__init__(observation_space, action_space, config or {})
        self.batch_sizes = []
        self.postprocessed = []

    def compute_actions(self, obs_batch, state_batches=None, prev_action_batch=None,
                        prev_reward_batch=None, info_batch=None, episodes=None, explore=None,
                        timestep=None, **kwargs):
        obs = np.asarray(obs_batch, np.float64).reshape(len(obs_batch), -1)
        self.batch_sizes.append(len(obs))
        total = obs.sum(axis=1)
        if isinstance(self.action_space, gym.spaces.Discrete):
            actions = (np.floor(10 * np.abs(obs).sum(axis=1)).astype(np.int64)
                       % self.action_space.n)
        else:
            actions = np.broadcast_to(np.tanh(total)[:, None],
                                      (len(obs),) + self.action_space.shape).astype(np.float32)
        extras = {"vf_preds": total.astype(np.float32),
                  "action_logp": np.zeros(len(obs), np.float32)}
        return actions, [], extras

    def value(self, obs_batch, *args, **kwargs):
        return np.asarray(obs_batch, np.float64).reshape(len(obs_batch), -1).sum(1)

    def postprocess_trajectory(self, sample_batch, other_agent_batches=None, episode=None):
        self.postprocessed.append((sample_batch, other_agent_batches, episode))
        sample_batch["advantages"] = np.cumsum(sample_batch["rewards"][::-1])[::-1].astype(
            np.float32)
        return sample_batch


class FakeWorker:
    """The attributes a sampler reads from its worker."""

    def __init__(self, policies, policy_mapping_fn=None, observation_filter="NoFilter",
                 callbacks=None):
        self.policy_map = {}
        self.preprocessors = {}
        self.filters = {}
        for pid, (cls, obs_space, act_space, config) in policies.items():
            prep = get_preprocessor(obs_space)(obs_space)
            self.preprocessors[pid] = prep
            self.policy_map[pid] = cls(prep.observation_space, act_space, config or {})
            self.filters[pid] = get_filter(observation_filter, prep.shape)
        self.policy_mapping_fn = policy_mapping_fn or (
            lambda agent_id, episode, worker=None, **kw: "default_policy")
        self.policies_to_train = list(self.policy_map)
        self.env_context = {}
        self.global_vars = {"timestep": 0}
        self.callbacks = callbacks or DefaultCallbacks()


class DictOnlyBaseEnv(BaseEnv):
    """Delegates poll/send_actions/try_reset; hides poll_arrays (forces the generic loop)."""

    def __init__(self, base_env):
        self.inner = base_env
        self.observation_space = base_env.observation_space
        self.action_space = base_env.action_space

    def poll(self):
        return self.inner.poll()

    def send_actions(self, action_dict):
        self.inner.send_actions(action_dict)

    def try_reset(self, env_id=None, *, seed=None, options=None):
        return self.inner.try_reset(env_id, seed=seed, options=options)

    def get_sub_environments(self, as_dict=False):
        return self.inner.get_sub_environments(as_dict)


def counter_vector_env(num_envs, lengths=None, truncate=False):
    """CounterEnv sub-envs (sub-env i lasts `lengths[i]` steps) as a BaseEnv."""
    lengths = lengths or [3 + i for i in range(num_envs)]
    envs = [CounterEnv(i, length=lengths[i], truncate=truncate) for i in range(num_envs)]
    return VectorEnv.vectorize_gym_envs(existing_envs=envs, num_envs=num_envs).to_base_env()


def counter_worker(policy_cls=FakePolicy, callbacks=None, observation_filter="NoFilter",
                   action_space=None):
    env = CounterEnv()
    return FakeWorker({"default_policy": (policy_cls, env.observation_space,
                                          action_space or env.action_space, {})},
                      observation_filter=observation_filter, callbacks=callbacks)


def make_sampler(worker, env, **kwargs):
    settings = dict(clip_rewards=False, rollout_fragment_length=10,
                    callbacks=worker.callbacks, multiple_episodes_in_batch=True)
    settings.update(kwargs)
    return SyncSampler(worker=worker, env=env, **settings)


class TwoAgentEnv(MultiAgentEnv):
    """Agents "a" (every step) and "b" (even steps only); obs = [t, agent]; reward of an
    agent = its action + t; `length` steps; "b"'s Discrete(2) vs "a"'s Discrete(3)."""

    def __init__(self, length=5):
        super().__init__()
        self._agent_ids = {"a", "b"}
        self.length = length
        self.observation_space = gym.spaces.Box(0.0, 100.0, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(3)
        self.t = 0
        self.received = []

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return self._obs(), {}

    def step(self, action_dict):
        self.received.append(dict(action_dict))
        self.t += 1
        rewards = {agent: float(a + self.t) for agent, a in action_dict.items()}
        done = self.t >= self.length
        return self._obs(), rewards, {"__all__": done}, {"__all__": False}, {}

    def _obs(self):
        obs = {"a": np.array([self.t, 0], np.float32)}
        if self.t % 2 == 0:
            obs["b"] = np.array([self.t, 1], np.float32)
        return obs


class ScriptedEnv(gym.Env):
    """obs = [t, 0] in Box(0, 10); reward 1.0; `length` steps. `bad_obs_at` returns
    [-5, 0] at that step, `nan_reward_at` a NaN reward; Box(-2, 2, (1,)) actions are
    recorded in `received`."""

    def __init__(self, length=4, bad_obs_at=None, nan_reward_at=None, raise_at=None):
        self.observation_space = gym.spaces.Box(0.0, 10.0, (2,), np.float32)
        self.action_space = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
        self.length, self.bad_obs_at = length, bad_obs_at
        self.nan_reward_at, self.raise_at = nan_reward_at, raise_at
        self.t, self.received = 0, []

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.received.append(np.array(action))
        self.t += 1
        if self.raise_at == self.t:
            raise RuntimeError(f"env exploded at step {self.t}")
        obs = np.array([self.t, 0], np.float32)
        if self.bad_obs_at == self.t:
            obs[0] = -5.0
        reward = float("nan") if self.nan_reward_at == self.t else 1.0
        return obs, reward, self.t >= self.length, False, {}


def scripted_env(num_envs=1, **kwargs):
    envs = [ScriptedEnv(**kwargs) for _ in range(num_envs)]
    return VectorEnv.vectorize_gym_envs(existing_envs=envs, num_envs=num_envs).to_base_env()


def scripted_worker(**kwargs):
    env = ScriptedEnv()
    return FakeWorker({"default_policy": (FakePolicy, env.observation_space, env.action_space,
                                          {})}, **kwargs)


class FakeRNNPolicy(FakePolicy):
    """FakePolicy with one recurrent state [2]: state_out = state_in + [1, sum(obs)]."""

    def get_initial_state(self):
        return [np.zeros(2, np.float32)]

    def compute_actions(self, obs_batch, state_batches=None, *args, **kwargs):
        actions, _, extras = super().compute_actions(obs_batch, None, *args, **kwargs)
        obs = np.asarray(obs_batch, np.float32).reshape(len(obs_batch), -1)
        state = np.asarray(state_batches[0], np.float32)
        out = state + np.stack([np.ones(len(obs), np.float32), obs.sum(1)], axis=1)
        return actions, [out], extras


class NoPrevPolicy(FakePolicy):
    """FakePolicy whose view requirements do not name prev_actions / prev_rewards."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.view_requirements.pop("prev_actions")
        self.view_requirements.pop("prev_rewards")
        self.prev_inputs = []

    def compute_actions(self, obs_batch, state_batches=None, prev_action_batch=None,
                        prev_reward_batch=None, *args, **kwargs):
        self.prev_inputs.append((prev_action_batch, prev_reward_batch))
        return super().compute_actions(obs_batch, state_batches, *args, **kwargs)
