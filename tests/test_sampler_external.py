"""SyncSampler on an ExternalEnv: episodes started by the simulator, string env ids,
actions logged off-policy."""

import gymnasium as gym
import numpy as np

from tfrl.env.external_env import ExternalEnv
from tfrl.evaluation.sampling.loop import SamplingLoop

from sampler_helpers import FakePolicy, FakeWorker, make_sampler

OBS = gym.spaces.Box(0.0, 10.0, (1,), np.float32)


class Simulator(ExternalEnv):
    """Episodes of 3 steps: obs [t]; reward = action + 1; step 1 is logged off-policy."""

    def __init__(self):
        super().__init__(gym.spaces.Discrete(3), OBS)
        self.actions = []

    def run(self):
        episode = 0
        while True:
            eid = self.start_episode(f"ep{episode}")
            for t in range(3):
                obs = np.array([t], np.float32)
                if t == 1:
                    action = 2
                    self.log_action(eid, obs, action)
                else:
                    action = self.get_action(eid, obs)
                self.actions.append(int(action))
                self.log_returns(eid, float(action) + 1.0)
            self.end_episode(eid, np.array([3], np.float32))
            episode += 1


def test_external_env_episodes_with_logged_actions():
    env = Simulator()
    worker = FakeWorker({"default_policy": (FakePolicy, OBS, env.action_space, {})})
    sampler = make_sampler(worker, env, rollout_fragment_length=float("inf"),
                           multiple_episodes_in_batch=False)
    assert type(sampler.runner) is SamplingLoop
    first, second = sampler.next(), sampler.next()
    for batch, eid in ((first, "ep0"), (second, "ep1")):
        assert batch["env_id"].tolist() == [eid] * 3
        assert batch["obs"][:, 0].tolist() == [0.0, 1.0, 2.0]
        # FakePolicy: floor(10 * t) % 3 -> 0, (logged 2), 20 % 3 = 2.
        assert batch["actions"].tolist() == [0, 2, 2]
        assert batch["rewards"].tolist() == [1.0, 3.0, 3.0]
        assert batch["terminateds"].tolist() == [False, False, True]
    assert env.actions[:3] == [0, 2, 2]
    assert [m.episode_reward for m in sampler.get_metrics()] == [7.0, 7.0]
