"""RLlib's episode last-values tests, ported to tfrl.

Ports `rllib/evaluation/tests/test_episode.py` of ray-project/ray at commit
02b4835bab08aeef6452e6f2d050d0fea8576432: `test_single_agent_env`, `test_multi_agent_env`
(class TestEpisodeLastValues). A callback reads the (1.x) `Episode`'s per-agent "last"
records at episode start, at every step and at the end, and checks them against the
values `MockEnv3` produces (obs = reward = info["timestep"] = step + agent index). The
RolloutWorker is built with RLlib's 2.x constructor (`default_policy_class=`,
`config=AlgorithmConfig()`); Ray start-up is dropped. `MockEnv3` is RLlib's gymnasium
mock env of `rllib/examples/envs/classes/mock_env.py`, written here.
"""

import gymnasium as gym
import numpy as np

from tfrl.algorithms.algorithm_config import AlgorithmConfig
from tfrl.algorithms.callbacks import DefaultCallbacks
from tfrl.env.multi_agent_env import MultiAgentEnv
from tfrl.evaluation.rollout_worker import RolloutWorker
from tfrl.policy.policy import Policy

RLLIB_PATH = "rllib/evaluation/tests/test_episode.py"
RLLIB_COMMIT = "02b4835bab08aeef6452e6f2d050d0fea8576432"

NUM_STEPS = 25
NUM_AGENTS = 4


class MockEnv3(gym.Env):
    """Observation = reward = info["timestep"] = the step count; ends after
    `episode_length` steps (terminated and truncated); actions are ignored."""

    def __init__(self, episode_length):
        self.episode_length = episode_length
        self.i = 0
        self.observation_space = gym.spaces.Discrete(100)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        self.i = 0
        return self.i, {"timestep": 0}

    def step(self, action):
        self.i += 1
        terminated = truncated = self.i >= self.episode_length
        return self.i, self.i, terminated, truncated, {"timestep": self.i}


class LastInfoCallback(DefaultCallbacks):
    def __init__(self):
        super().__init__()
        self.step = 0
        self.checked = 0

    def on_episode_start(self, *, worker, base_env, policies, episode, env_index=None,
                         **kwargs):
        self.step = 0
        self._check_last_values(episode)

    def on_episode_step(self, *, worker, base_env, episode, env_index=None, **kwargs):
        self.step += 1
        self._check_last_values(episode)

    def on_episode_end(self, *, worker, base_env, policies, episode, env_index=None,
                       **kwargs):
        self._check_last_values(episode)

    def _check_last_values(self, episode):
        self.checked += 1
        last_obs = {k: np.where(v)[0].item() for k, v in episode._agent_to_last_obs.items()}
        last_raw_obs = episode._agent_to_last_raw_obs
        last_info = episode._agent_to_last_info
        last_terminated = episode._agent_to_last_terminated
        last_truncated = episode._agent_to_last_truncated
        last_action = episode._agent_to_last_action
        last_reward = {k: v[-1] for k, v in episode._agent_reward_history.items()}
        if self.step == 0:
            for last in [last_obs, last_terminated, last_truncated, last_action, last_reward]:
                assert last == {}
            assert "__common__" in last_info
            assert len(last_raw_obs) > 0
            for agent in last_raw_obs.keys():
                index = int(str(agent).replace("agent", ""))
                assert last_raw_obs[agent] == 0
                assert last_info[agent]["timestep"] == self.step + index
        else:
            for agent in last_obs.keys():
                index = int(str(agent).replace("agent", ""))
                assert last_obs[agent] == self.step + index
                assert last_reward[agent] == self.step + index
                assert last_terminated[agent] == (self.step == NUM_STEPS)
                assert last_truncated[agent] == (self.step == NUM_STEPS)
                if self.step == 1:
                    assert last_action[agent] == 0
                else:
                    assert last_action[agent] == self.step + index - 1
                assert last_info[agent]["timestep"] == self.step + index


class EchoPolicy(Policy):
    """Acts the index of the one-hot observation (the env ignores actions)."""

    def compute_actions(self, obs_batch, state_batches=None, prev_action_batch=None,
                        prev_reward_batch=None, info_batch=None, episodes=None,
                        explore=None, timestep=None, **kwargs):
        return obs_batch.argmax(axis=1), [], {}


class EpisodeEnv(MultiAgentEnv):
    """`num` MockEnv3 agents; agent i adds i to its observation, reward and timestep."""

    def __init__(self, episode_length, num):
        super().__init__()
        self.agents = [MockEnv3(episode_length) for _ in range(num)]
        self.terminateds = set()
        self.truncateds = set()
        self.observation_space = self.agents[0].observation_space
        self.action_space = self.agents[0].action_space

    def reset(self, *, seed=None, options=None):
        self.terminateds = set()
        self.truncateds = set()
        obs_and_infos = [a.reset() for a in self.agents]
        return ({i: oi[0] for i, oi in enumerate(obs_and_infos)},
                {i: dict(oi[1], **{"timestep": i}) for i, oi in enumerate(obs_and_infos)})

    def step(self, action_dict):
        obs, rew, terminated, truncated, info = {}, {}, {}, {}, {}
        for i, action in action_dict.items():
            obs[i], rew[i], terminated[i], truncated[i], info[i] = self.agents[i].step(action)
            obs[i] = obs[i] + i
            rew[i] = rew[i] + i
            info[i]["timestep"] = info[i]["timestep"] + i
            if terminated[i]:
                self.terminateds.add(i)
            if truncated[i]:
                self.truncateds.add(i)
        terminated["__all__"] = len(self.terminateds) == len(self.agents)
        truncated["__all__"] = len(self.truncateds) == len(self.agents)
        return obs, rew, terminated, truncated, info


def test_single_agent_env():
    ev = RolloutWorker(
        env_creator=lambda _: MockEnv3(NUM_STEPS),
        default_policy_class=EchoPolicy,
        config=AlgorithmConfig()
        .env_runners(enable_connectors=False)
        .env_runners(num_env_runners=0)
        .callbacks(LastInfoCallback),
    )
    ev.sample()


def test_multi_agent_env():
    ev = RolloutWorker(
        env_creator=lambda _: EpisodeEnv(NUM_STEPS, NUM_AGENTS),
        default_policy_class=EchoPolicy,
        config=AlgorithmConfig()
        .env_runners(enable_connectors=False)
        .env_runners(num_env_runners=0)
        .callbacks(LastInfoCallback)
        .multi_agent(
            policies={str(agent_id) for agent_id in range(NUM_AGENTS)},
            policy_mapping_fn=lambda agent_id, episode, worker, **kwargs: str(agent_id),
        ),
    )
    ev.sample()
