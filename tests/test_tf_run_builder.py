"""TFRunBuilder: several policies' actions in one compiled call, traced once."""

import gymnasium as gym
import keras
import numpy as np
import pytest

from policy_helpers import ACT_SPACE, OBS_SPACE, PGPolicy
from tfrl.examples.policy.random_policy import RandomPolicy
from tfrl.utils import tf_run_builder
from tfrl.utils.tf_run_builder import TFRunBuilder


def _policies():
    keras.utils.set_random_seed(0)
    a = PGPolicy(OBS_SPACE, ACT_SPACE, {"seed": 0, "lr": 0.1})
    b = PGPolicy(OBS_SPACE, gym.spaces.Discrete(3), {"seed": 1, "lr": 0.1})
    return a, b


def test_results_equal_compute_actions_and_trace_once():
    a, b = _policies()
    before = tf_run_builder.num_traces()
    rng = np.random.default_rng(0)
    for step in range(50):
        obs_a = rng.uniform(-1, 1, (1 + step % 3, 4)).astype(np.float32)
        obs_b = rng.uniform(-1, 1, (2, 4)).astype(np.float32)
        builder = TFRunBuilder(debug_name="step")
        ha = builder.add_fetches(a, obs_a, explore=False)
        hb = builder.add_fetches(b, obs_b, explore=False)
        actions_b, states_b, extras_b = builder.get(hb)
        actions_a, _, extras_a = builder.get(ha)
        want_a, _, want_extras_a = a.compute_actions(obs_a, explore=False)
        want_b, _, want_extras_b = b.compute_actions(obs_b, explore=False)
        np.testing.assert_array_equal(actions_a, want_a)
        np.testing.assert_array_equal(actions_b, want_b)
        np.testing.assert_allclose(extras_a["vf_preds"], want_extras_a["vf_preds"], atol=1e-6)
        np.testing.assert_allclose(extras_b["action_dist_inputs"],
                                   want_extras_b["action_dist_inputs"], atol=1e-6)
        assert states_b == []
    assert tf_run_builder.num_traces() - before == 1
    assert a.num_traces["compute_actions"] == 1
    assert a.global_timestep == 2 * sum(1 + s % 3 for s in range(50))


def test_errors():
    a, _ = _policies()
    builder = TFRunBuilder(debug_name="env step 3")
    with pytest.raises(ValueError, match=r"obs_batch must have shape \[B, 4\]"):
        builder.add_fetches(a, np.zeros((2, 5), np.float32))
    with pytest.raises(TypeError, match=r"env step 3.add_fetches\(\) takes a policy with compiled "
                                        r"action graphs .*received RandomPolicy"):
        builder.add_fetches(RandomPolicy(OBS_SPACE, ACT_SPACE, {}), np.zeros((1, 4)))
    handle = builder.add_fetches(a, np.zeros((2, 4), np.float32))
    with pytest.raises(IndexError, match=r"unknown handle 5; add_fetches\(\) returned handles 0..0"):
        builder.get(5)
    assert builder.get(handle)[0].shape == (2,)
    with pytest.raises(RuntimeError, match="add_fetches\\(\\) after get\\(\\)"):
        builder.add_fetches(a, np.zeros((1, 4), np.float32))


def test_recurrent_policy_with_prev_inputs():
    from policy_helpers import recurrent_policy

    policy = recurrent_policy(model={"lstm_use_prev_action": True, "lstm_use_prev_reward": True})
    obs = np.random.default_rng(0).uniform(-1, 1, (2, 3)).astype(np.float32)
    state = [np.full((2, 4), 0.5, np.float32), np.zeros((2, 4), np.float32)]
    prev = dict(prev_action_batch=np.array([1, 0]), prev_reward_batch=np.array([0.5, -1.0]))
    builder = TFRunBuilder()
    handle = builder.add_fetches(policy, obs, state, explore=False, **prev)
    actions, state_out, extras = builder.get(handle)
    want = policy.compute_actions(obs, state, explore=False, **prev)
    np.testing.assert_array_equal(actions, want[0])
    np.testing.assert_array_equal(state_out[0], want[1][0])
    np.testing.assert_array_equal(extras["vf_preds"], want[2]["vf_preds"])
