"""SyncSampler on an ExternalEnv: episodes started by the simulator, string env ids,
actions logged off-policy."""

import gymnasium as gym
import numpy as np
import pytest

from tfrl.data.sample_batch import MultiAgentBatch
from tfrl.env.external_env import ExternalEnv
from tfrl.evaluation.sampling.collectors import AgentCollector, FragmentOutput
from tfrl.evaluation.sampling.loop import SamplingLoop
from tfrl.evaluation.sampling.ops import logged_action

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


@pytest.fixture
def stop_after():
    """`stop_after(sampler)`: stops the sampler's env when the test ends, so that the
    simulator's thread ends then (quietly) instead of timing out minutes later."""
    samplers = []
    yield samplers.append
    for sampler in samplers:
        sampler.base_env.stop()
        simulator = sampler.base_env.external_env
        simulator.join(timeout=10)
        assert not simulator.is_alive()


def test_external_env_episodes_with_logged_actions(stop_after):
    env = Simulator()
    worker = FakeWorker({"default_policy": (FakePolicy, OBS, env.action_space, {})})
    sampler = make_sampler(worker, env, rollout_fragment_length=float("inf"),
                           multiple_episodes_in_batch=False)
    stop_after(sampler)
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


def test_ended_external_episodes_leave_no_trace_in_the_loop(stop_after):
    # An ExternalEnv's env ids are episode ids, never reused: a long-running sampler must
    # not keep one entry per episode ever played (it did, in its cut order).
    env = Simulator()
    worker = FakeWorker({"default_policy": (FakePolicy, OBS, env.action_space, {})})
    sampler = make_sampler(worker, env, rollout_fragment_length=float("inf"),
                           multiple_episodes_in_batch=False)
    stop_after(sampler)
    batches = [sampler.next() for _ in range(20)]
    assert [b["env_id"][0] for b in batches] == [f"ep{k}" for k in range(20)]
    loop = sampler.runner
    assert len(loop._env_order) <= 1 and len(loop._active) <= 1
    assert loop._next_order == 20 + len(loop._active)  # every episode had its own place


def test_collector_hooks_give_the_external_runners_batches():
    """AgentCollector(spaces=..., id_columns=False) and FragmentOutput(any_lone_policy=True):
    the batch format of tfrl.serving's ExternalEnvRunner (raw values cast to the spaces'
    dtypes, string episode ids, no sampler id columns, a lone policy's plain batch)."""
    space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    collector = AgentCollector(0, "p", (False, False), spaces=(space, gym.spaces.Discrete(3)),
                               id_columns=False)
    for t in range(2):
        collector.pending = ([0.5 * t, 0.0], t, {"vf_preds": np.float32(t)}, None, None)
        collector.add_row([0.5 * t + 0.5, 0.0], 1.0, t == 1, False, {"t": t}, t)
    batch = collector.build("ep", "ep", 0, None, None)
    assert sorted(batch) == ["actions", "dones", "eps_id", "infos", "new_obs", "obs",
                             "rewards", "t", "terminateds", "truncateds", "vf_preds"]
    assert batch["obs"].dtype == np.float32 and batch["obs"].tolist() == [[0.0, 0.0], [0.5, 0.0]]
    assert batch["new_obs"].tolist() == [[0.5, 0.0], [1.0, 0.0]]
    assert batch["actions"].dtype == np.int64 and batch["actions"].tolist() == [0, 1]
    assert batch["eps_id"].tolist() == ["ep", "ep"] and batch["t"].tolist() == [0, 1]
    assert batch["terminateds"].tolist() == [False, True]
    assert batch["infos"].tolist() == [{"t": 0}, {"t": 1}]
    assert batch["vf_preds"].tolist() == [0.0, 1.0]
    output = FragmentOutput(multiagent=False, any_lone_policy=True)
    output.add("p", batch)
    assert output.build() is batch
    output = FragmentOutput(multiagent=False)  # the sampler's rule: only default_policy
    output.add("p", batch)
    output.env_steps = 2
    built = output.build()
    assert isinstance(built, MultiAgentBatch) and built.env_steps() == 2
    assert built.policy_batches["p"] is batch


def test_logged_action_wins_over_the_computed_one():
    off_policy = {"e": {"a": 2}}
    assert logged_action(off_policy, "e", "a", 0) == 2
    assert logged_action(off_policy, "e", "b", 0) == 0
    assert logged_action({}, "e", "a", 1) == 1 and logged_action(None, "e", "a", 1) == 1
