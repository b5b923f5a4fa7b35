"""Numpy fake policies, toy multi-agent envs and a recording sampler stub for the RolloutWorker tests."""

import gymnasium as gym
import numpy as np

from tfrl.env.multi_agent_env import MultiAgentEnv
from tfrl.policy.policy import Policy


class CountingPolicy(Policy):
    """Acts with action 1; weights {"w": array}; learn/gradients recorded."""

    def __init__(self, observation_space, action_space, config):
        super().__init__(observation_space, action_space, config)
        self.w = np.zeros(2, np.float32)
        self.learned, self.applied, self.global_vars = [], [], []
        self.sgd_settings = []  # the keyword arguments of each learn_on_batch call

    def compute_actions(self, obs_batch, state_batches=None, prev_action_batch=None,
                        prev_reward_batch=None, info_batch=None, episodes=None, explore=None,
                        timestep=None, **kwargs):
        n = len(obs_batch)
        return np.ones(n, np.int64), [], {"vf_preds": np.zeros(n, np.float32)}

    def value(self, obs_batch, *args, **kwargs):
        return np.zeros(len(obs_batch), np.float32)

    def learn_on_batch(self, samples, **sgd):
        self.learned.append(samples)
        self.sgd_settings.append(sgd)
        self.w = self.w + 1.0
        return {"learner_stats": {"rows": samples.count}}

    def compute_gradients(self, batch):
        return [np.full(2, float(batch.count), np.float32)], {"learner_stats": {"rows": batch.count}}

    def apply_gradients(self, gradients):
        self.applied.append(gradients)
        self.w = self.w + gradients[0]

    def get_weights(self):
        return {"w": self.w.copy()}

    def set_weights(self, weights):
        self.w = np.array(weights["w"], np.float32)

    def on_global_var_update(self, global_vars):
        super().on_global_var_update(global_vars)
        self.global_vars.append(dict(global_vars))


class TwoAgentEnv(MultiAgentEnv):
    """Agents "a" (obs Box(3)) and "b" (obs Discrete(4)); `length` steps; reward = action."""

    def __init__(self, config=None):
        super().__init__()
        self._agent_ids = {"a", "b"}
        self.observation_space = gym.spaces.Dict({
            "a": gym.spaces.Box(-10.0, 10.0, (3,), np.float32), "b": gym.spaces.Discrete(4)})
        self.action_space = gym.spaces.Dict({"a": gym.spaces.Discrete(2), "b": gym.spaces.Discrete(3)})
        self.length = (config or {}).get("length", 4)
        self.t = 0

    def _obs(self):
        return {"a": np.full(3, self.t, np.float32), "b": self.t % 4}

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return self._obs(), {}

    def step(self, action_dict):
        self.t += 1
        done = self.t >= self.length
        rewards = {k: float(v) for k, v in action_dict.items()}
        flags = {"a": done, "b": done, "__all__": done}
        return self._obs(), rewards, flags, {"a": False, "b": False, "__all__": False}, {}


def agent_to_policy(agent_id, episode, worker=None, **kwargs):
    return "pa" if agent_id == "a" else "pb"


def install_stub_sampler(monkeypatch):
    """Replaces tfrl.evaluation.sampler by stubs that record their constructor kwargs.

    Returns the list the created stubs are appended to.
    """
    created = []

    class SyncSampler:
        def __init__(self, **kwargs):
            self.kwargs = kwargs
            self.started = False
            created.append(self)

        def next(self):
            raise AssertionError("stub sampler does not sample")

        def get_metrics(self):
            return []

    class AsyncSampler(SyncSampler):
        def start(self):
            self.started = True

    from tfrl.evaluation import sampler

    # `sampler_for_worker` (what RolloutWorker calls) looks these up when called.
    monkeypatch.setattr(sampler, "SyncSampler", SyncSampler)
    monkeypatch.setattr(sampler, "AsyncSampler", AsyncSampler)
    return created
