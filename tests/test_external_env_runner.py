"""ExternalEnvRunner: serving an ExternalEnv with a policy and emitting its episodes."""

import time

import gymnasium as gym
import numpy as np
import pytest
from serving_policies import ACT_SPACE, OBS_SPACE, LinearPolicy

from tfrl.serving.external_env_runner import ExternalEnvRunner, fragment_length, make_serving_env
from tfrl.policy.multi_agent_batch import MultiAgentBatch
from tfrl.policy.sample_batch import SampleBatch


class Harness:
    def __init__(self, multiagent=False, policies=None, **runner_kwargs):
        self.env = make_serving_env(multiagent, None if multiagent else ACT_SPACE,
                                    None if multiagent else OBS_SPACE)
        self.policies = policies or {"default_policy": LinearPolicy()}
        self.emitted = []
        self.runner = ExternalEnvRunner(self.env.to_base_env(poll_timeout=0.05), self.policies,
                                        lambda b, m: self.emitted.append((b, m)),
                                        multiagent=multiagent, **runner_kwargs)
        self.runner.start()

    def wait_for(self, predicate, timeout=5.0):
        deadline = time.monotonic() + timeout
        while not predicate() and time.monotonic() < deadline:
            time.sleep(0.005)
        assert predicate()

    def batches(self):
        return [b for b, _ in self.emitted if b is not None]

    def metrics(self):
        return [m for _, ms in self.emitted for m in ms]


@pytest.fixture
def harness():
    made = []

    def make(**kwargs):
        made.append(Harness(**kwargs))
        return made[-1]

    yield make
    for h in made:
        h.runner.stop()


def _obs(t):
    return np.array([0.1 * t, 1.0, -1.0], np.float32)


def test_fragments_rows_and_postprocessing(harness):
    h = harness(rollout_fragment_length=3)
    policy = h.policies["default_policy"]
    eid = h.env.start_episode("ep")
    actions = []
    for t in range(7):
        actions.append(h.env.get_action(eid, _obs(t)))
        h.env.log_returns(eid, 0.5)
        h.env.log_returns(eid, 0.25)
    h.env.end_episode(eid, _obs(7))
    h.wait_for(lambda: sum(len(b) for b in h.batches()) == 7)
    assert [len(b) for b in h.batches()] == [3, 3, 1]
    batch = SampleBatch.concat_samples(h.batches())
    assert batch["eps_id"].tolist() == ["ep"] * 7 and batch["t"].tolist() == list(range(7))
    np.testing.assert_array_equal(batch["obs"], np.stack([_obs(t) for t in range(7)]))
    np.testing.assert_array_equal(batch["new_obs"], np.stack([_obs(t) for t in range(1, 8)]))
    assert batch["actions"].tolist() == actions == [policy.expected_action(_obs(t)) for t in range(7)]
    np.testing.assert_array_equal(batch["rewards"], np.full(7, 0.75, np.float32))
    np.testing.assert_array_equal(batch["advantages"], np.full(7, 1.5, np.float32))
    assert batch["terminateds"].tolist() == [False] * 6 + [True]
    assert not batch["truncateds"].any()
    np.testing.assert_array_equal(batch["action_logp"], np.full(7, -0.5, np.float32))
    assert h.metrics() == [{"episode_length": 7, "episode_reward": 5.25,
                            "agent_rewards": {("agent0", "default_policy"): 5.25},
                            "custom_metrics": {}, "perf_stats": {}, "hist_data": {}, "media": {}}]


def test_off_policy_steps_and_truncation(harness):
    h = harness()
    eid = h.env.start_episode()
    h.env.log_action(eid, _obs(0), 3)
    h.env.log_returns(eid, 1.0)
    a1 = h.env.get_action(eid, _obs(1))
    h.env.end_episode(eid, _obs(2), truncated=True)
    h.wait_for(lambda: h.batches())
    batch = h.batches()[0]
    assert batch["actions"].tolist() == [3, a1]
    assert batch["rewards"].tolist() == [1.0, 0.0]
    assert batch["truncateds"].tolist() == [False, True] and not batch["terminateds"].any()


def test_training_disabled_gives_metrics_only_and_no_exploration(harness):
    h = harness()
    eid = h.env.start_episode(training_enabled=False)
    h.env.get_action(eid, _obs(0))
    h.env.log_returns(eid, 2.0)
    h.env.end_episode(eid, _obs(1))
    h.wait_for(lambda: h.metrics())
    assert h.batches() == [] and h.metrics()[0]["episode_reward"] == 2.0
    assert h.policies["default_policy"].calls == [(1, False)]


def test_one_compute_actions_call_for_episodes_waiting_together(harness):
    h = harness()
    for eid in ("a", "b", "c"):
        h.env.start_episode(eid)
    actions = h.env.get_actions(["a", "b", "c"], {"a": _obs(1), "b": _obs(2), "c": _obs(3)})
    policy = h.policies["default_policy"]
    assert actions == {e: policy.expected_action(_obs(t)) for e, t in (("a", 1), ("b", 2), ("c", 3))}
    assert policy.calls == [(3, True)]


def test_multi_agent_mapping_and_batches(harness):
    policies = {"p0": LinearPolicy(), "p1": LinearPolicy(action_space=gym.spaces.Discrete(2))}
    h = harness(multiagent=True, policies=policies,
                policy_mapping_fn=lambda aid, eid, worker=None: "p0" if aid == "x" else "p1")
    eid = h.env.start_episode()
    acts = h.env.get_action(eid, {"x": _obs(1), "y": _obs(2)})
    assert acts == {"x": policies["p0"].expected_action(_obs(1)),
                    "y": policies["p1"].expected_action(_obs(2))}
    h.env.log_returns(eid, {"x": 1.0, "y": 2.0})
    h.env.end_episode(eid, {"x": _obs(3), "y": _obs(4)})
    h.wait_for(lambda: h.batches())
    batch = h.batches()[0]
    assert isinstance(batch, MultiAgentBatch) and batch.env_steps() == 1
    assert batch.policy_batches["p0"]["rewards"].tolist() == [1.0]
    assert batch.policy_batches["p1"]["rewards"].tolist() == [2.0]
    assert h.metrics()[0]["agent_rewards"] == {("x", "p0"): 1.0, ("y", "p1"): 2.0}


def test_multi_agent_batch_format_per_agent(harness):
    """The runner's batch format on the generic loop: an agent done alone is emitted at
    once, `t` counts each agent's own steps, a row's info is the one that came with its
    observation, an agent not observed at the end leaves no last row (its reward is
    dropped), and a batch counts the env steps of its episode since the last batch."""
    h = harness(multiagent=True)
    eid = h.env.start_episode("e")
    h.env.get_action(eid, {"a": _obs(0), "b": _obs(1)})
    h.env.log_returns(eid, {"a": 1.0, "b": 2.0}, {"a": {"u": 1}}, {"b": True})
    h.env.get_action(eid, {"a": _obs(2), "b": _obs(3), "c": _obs(4)})
    h.env.log_returns(eid, {"a": 0.5, "c": 1.5})
    h.env.get_action(eid, {"a": _obs(5)})
    h.env.end_episode(eid, {"a": _obs(6)})
    h.wait_for(lambda: h.metrics())
    first, second = h.batches()
    assert first.env_steps() == 1 and second.env_steps() == 2
    b, a = first.policy_batches["default_policy"], second.policy_batches["default_policy"]
    assert b["t"].tolist() == [0] and b["terminateds"].tolist() == [True]
    np.testing.assert_array_equal(b["new_obs"], [_obs(3)])
    assert b["rewards"].tolist() == [2.0] and b["eps_id"].tolist() == ["e"]
    assert a["t"].tolist() == [0, 1, 2] and a["terminateds"].tolist() == [False, False, True]
    np.testing.assert_array_equal(a["obs"], np.stack([_obs(0), _obs(2), _obs(5)]))
    np.testing.assert_array_equal(a["new_obs"], np.stack([_obs(2), _obs(5), _obs(6)]))
    assert a["rewards"].tolist() == [1.0, 0.5, 0.0]
    assert a["infos"].tolist() == [{}, {"u": 1}, {}]
    assert "agent_index" not in a and "unroll_id" not in a and "env_id" not in a
    assert h.metrics() == [{"episode_length": 3, "episode_reward": 3.5,
                            "agent_rewards": {("a", "default_policy"): 1.5,
                                              ("b", "default_policy"): 2.0},
                            "custom_metrics": {}, "perf_stats": {}, "hist_data": {},
                            "media": {}}]


def test_bad_multi_agent_observation_drops_the_episode(harness):
    h = harness(multiagent=True)
    eid = h.env.start_episode("e")
    with pytest.raises(ValueError, match=r"Episode e was dropped because of bad data: agent 'x': "
                                         r"observation has shape \(2,\), expected \(3,\)"):
        h.env.get_action(eid, {"x": np.zeros(2, np.float32)})
    with pytest.raises(ValueError, match="has already completed"):
        h.env.get_action(eid, {"x": _obs(0)})
    assert h.runner.error is None


def test_policy_failure_stops_the_env(harness):
    class Broken(LinearPolicy):
        def compute_actions(self, obs_batch, explore=None, **kwargs):
            raise ZeroDivisionError("boom")

    h = harness(policies={"default_policy": Broken()})
    eid = h.env.start_episode()
    with pytest.raises(RuntimeError, match="was stopped"):
        h.env.get_action(eid, _obs(0))
    assert isinstance(h.runner.error, ZeroDivisionError)


class StatefulPolicy(LinearPolicy):
    def compute_actions(self, obs_batch, explore=None, **kwargs):
        actions, _, extras = super().compute_actions(obs_batch)
        return actions, [np.zeros((len(actions), 2))], extras


class ShortPolicy(LinearPolicy):
    def compute_actions(self, obs_batch, explore=None, **kwargs):
        actions, state, extras = super().compute_actions(obs_batch)
        return actions[:0], state, {}


@pytest.mark.parametrize("kwargs,error,message", [
    (dict(policies={"default_policy": StatefulPolicy()}), NotImplementedError,
     "returned RNN state outputs"),
    (dict(policies={"default_policy": ShortPolicy()}), RuntimeError,
     "returned 0 actions for 1 observations"),
    (dict(multiagent=True, policy_mapping_fn=lambda aid, eid, worker=None: "zz"), ValueError,
     r"policy_mapping_fn\('a', ...\) returned unknown policy id 'zz'"),
])
def test_policy_contract_violations_stop_the_runner(harness, kwargs, error, message):
    h = harness(**kwargs)
    eid = h.env.start_episode()
    obs = {"a": _obs(0)} if kwargs.get("multiagent") else _obs(0)
    with pytest.raises(RuntimeError, match="was stopped"):
        h.env.get_action(eid, obs)
    h.wait_for(lambda: h.runner.error is not None)
    with pytest.raises(error, match=message):
        raise h.runner.error


def test_several_policies_need_a_mapping_fn():
    env = make_serving_env(True, None, None)
    with pytest.raises(ValueError, match="A policy_mapping_fn is needed"):
        ExternalEnvRunner(env.to_base_env(), {"a": LinearPolicy(), "b": LinearPolicy()}, print)


@pytest.mark.parametrize("config,expected", [
    ({}, 200), ({"rollout_fragment_length": 16}, 16), ({"rollout_fragment_length": "auto"}, 200),
    ({"batch_mode": "complete_episodes", "rollout_fragment_length": 16}, None),
])
def test_fragment_length(config, expected):
    assert fragment_length(config) == expected
