"""RLlib's rllib/env/tests/test_external_multi_agent_env.py, ported to tfrl.

Read at commit 30e84dfabdb333a89449c691334ea441fbbc6a2d (the spec's 1.x RolloutWorker
keywords; gym API). The serving env drives the gymnasium `BasicMultiAgent` of
`compat_envs` (`make_simple_serving` of the external-env port). As in RLlib, the
multi-agent serving loop ends the episode after every step (it tests the truthiness of
the done dict): complete_episodes then packs ten 1-step episodes of 4 agent rows (40).

Covers: test_external_multi_agent_env_complete_episodes,
test_external_multi_agent_env_truncate_episodes, test_external_multi_agent_env_sample.
"""

import gymnasium as gym
import numpy as np
import pytest

from compat_envs import BasicMultiAgent, MockPolicy
from test_rllib_external_env import make_simple_serving, stop_workers  # noqa: F401 (autouse)
from tfrl.env.external_multi_agent_env import ExternalMultiAgentEnv
from tfrl.evaluation.rollout_worker import RolloutWorker
from tfrl.policy.sample_batch import SampleBatch

RLLIB_PATH = "rllib/env/tests/test_external_multi_agent_env.py"
RLLIB_COMMIT = "30e84dfabdb333a89449c691334ea441fbbc6a2d"

SimpleMultiServing = make_simple_serving(True, ExternalMultiAgentEnv)


def test_external_multi_agent_env_complete_episodes():
    agents = 4
    ev = RolloutWorker(env_creator=lambda _: SimpleMultiServing(BasicMultiAgent(agents)),
                       policy_spec=MockPolicy, rollout_fragment_length=40,
                       batch_mode="complete_episodes")
    for _ in range(3):
        batch = ev.sample()
        assert batch.count == 40
        assert len(np.unique(batch[SampleBatch.AGENT_INDEX])) == agents


def test_external_multi_agent_env_truncate_episodes():
    agents = 4
    ev = RolloutWorker(env_creator=lambda _: SimpleMultiServing(BasicMultiAgent(agents)),
                       policy_spec=MockPolicy, rollout_fragment_length=40,
                       batch_mode="truncate_episodes")
    for _ in range(3):
        batch = ev.sample()
        assert batch.count == 160
        assert len(np.unique(batch[SampleBatch.AGENT_INDEX])) == agents


def test_external_multi_agent_env_sample():
    agents = 2
    act_space = gym.spaces.Discrete(2)
    obs_space = gym.spaces.Discrete(2)
    ev = RolloutWorker(
        env_creator=lambda _: SimpleMultiServing(BasicMultiAgent(agents)),
        policy_spec={"p0": (MockPolicy, obs_space, act_space, {}),
                     "p1": (MockPolicy, obs_space, act_space, {})},
        policy_mapping_fn=lambda aid, **kwargs: "p{}".format(aid % 2),
        rollout_fragment_length=50)
    batch = ev.sample()
    assert batch.count == 50
