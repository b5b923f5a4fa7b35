"""RLlib's rllib/algorithms/qmix/tests/test_qmix.py, ported to tfrl.

Read at commit 2a3cd941ba12b2a2752c9b48b337a10fce7b62b7 (RLlib 2.x, gymnasium API).

Covers: test_avail_actions_qmix (QMIX on a grouped two-agent env whose observations
carry an action mask: no agent ever takes a masked action, and with the mask allowing
only actions 3, 4 and 8 every 20-step episode pays 20 * (1 + 0.5) = 30).

Dropped: Ray start-up and `.framework("torch")` (tfrl's QMIX is TensorFlow). RLlib's
test registers its env creator with `gym.register`, a one-argument creator that Ray's
env registry calls with the env config; tfrl's `register_env` is that registry.
"""

import numpy as np
from gymnasium.spaces import Box, Dict, Discrete, MultiDiscrete, Tuple

from tfrl.algorithms.qmix import QMixConfig
from tfrl.env.multi_agent_env import MultiAgentEnv
from tfrl.env.registry import register_env

RLLIB_PATH = "rllib/algorithms/qmix/tests/test_qmix.py"
RLLIB_COMMIT = "2a3cd941ba12b2a2752c9b48b337a10fce7b62b7"


class AvailActionsTestEnv(MultiAgentEnv):
    """Two agents, 10 actions of which `env_config["avail_actions"]` are allowed (the
    observation's "action_mask"); rewards 1 and 0.5 per step; 20 steps (truncated). A
    masked action after the first step fails the env's check."""

    num_actions = 10
    action_space = Discrete(num_actions)
    observation_space = Dict({
        "obs": Dict({
            "test": Dict({"a": Discrete(2), "b": MultiDiscrete([2, 3, 4])}),
            "state": MultiDiscrete([2, 2, 2]),
        }),
        "action_mask": Box(0, 1, (num_actions,)),
    })

    def __init__(self, env_config):
        super().__init__()
        self.state = None
        self.avail = env_config.get("avail_actions", [3])
        self.action_mask = np.array([0] * 10)
        for a in self.avail:
            self.action_mask[a] = 1

    def _obs(self):
        return {agent: {"obs": self.observation_space["obs"].sample(),
                        "action_mask": self.action_mask}
                for agent in ("agent_1", "agent_2")}

    def reset(self, *, seed=None, options=None):
        self.state = 0
        return self._obs(), {}

    def step(self, action_dict):
        if self.state > 0:
            assert (action_dict["agent_1"] in self.avail
                    and action_dict["agent_2"] in self.avail), \
                "Failed to obey available actions mask!"
        self.state += 1
        rewards = {"agent_1": 1, "agent_2": 0.5}
        return (self._obs(), rewards, {"__all__": False}, {"__all__": self.state >= 20}, {})


def test_avail_actions_qmix():
    grouping = {"group_1": ["agent_1", "agent_2"]}
    obs_space = Tuple([AvailActionsTestEnv.observation_space,
                       AvailActionsTestEnv.observation_space])
    act_space = Tuple([AvailActionsTestEnv.action_space, AvailActionsTestEnv.action_space])
    register_env("action_mask_test", lambda config: AvailActionsTestEnv(config).with_agent_groups(
        grouping, obs_space=obs_space, act_space=act_space))

    config = (QMixConfig()
              .environment(env="action_mask_test", env_config={"avail_actions": [3, 4, 8]})
              .rollouts(num_envs_per_worker=5))  # Test with vectorization on.

    algo = config.build()

    for _ in range(4):
        algo.train()  # OK if it doesn't trip the action assertion error

    assert algo.train()["episode_reward_mean"] == 30.0
    algo.stop()
