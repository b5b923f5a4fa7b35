"""Small deterministic policies for the external-env and policy-server tests."""


import gymnasium as gym
import numpy as np

OBS_SPACE = gym.spaces.Box(-10.0, 10.0, (3,), np.float32)
ACT_SPACE = gym.spaces.Discrete(4)


class LinearPolicy:
    """action = floor(|obs . w| * 10) mod n; also outputs `action_logp` and `vf_preds`.

    Follows the policy protocol of `tfrl.serving.external_env_runner`. Records the batch
    size and explore flag of every `compute_actions` call in `calls`.
    """

    def __init__(self, observation_space=OBS_SPACE, action_space=ACT_SPACE, config=None):
        self.observation_space = observation_space
        self.action_space = action_space
        self.config = dict(config or {})
        self.w = np.array([1.0, 0.0, 0.0], np.float32)
        self.calls = []
        self.gate = None  # a threading.Event compute_actions waits for, if set

    def compute_actions(self, obs_batch, explore=None, **kwargs):
        if self.gate is not None:
            self.gate.wait(10)
        obs = np.asarray(obs_batch, np.float32)
        self.calls.append((len(obs), explore))
        actions = (np.floor(np.abs(obs @ self.w) * 10).astype(np.int64)) % self.action_space.n
        extras = {"action_logp": np.full(len(obs), -0.5, np.float32), "vf_preds": obs.sum(axis=1)}
        return actions, [], extras

    def get_weights(self):
        return {"w": self.w.copy()}

    def set_weights(self, weights):
        self.w = np.asarray(weights["w"], np.float32)

    def postprocess_trajectory(self, sample_batch, other_agent_batches=None, episode=None):
        sample_batch["advantages"] = (sample_batch["rewards"] * 2).astype(np.float32)
        return sample_batch

    def expected_action(self, obs):
        return int(np.floor(abs(float(np.asarray(obs, np.float32) @ self.w)) * 10)) % self.action_space.n
