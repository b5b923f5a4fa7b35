"""discount_cumsum, compute_advantages, bootstrap_value and compute_gae_for_sample_batch
against hand-computed numbers."""

import numpy as np
import pytest

from tfrl.evaluation.postprocessing import (Postprocessing, bootstrap_value, compute_advantages,
                                           compute_gae_for_sample_batch, discount_cumsum)
from tfrl.policy.sample_batch import SampleBatch


def test_discount_cumsum_hand_computed():
    np.testing.assert_allclose(discount_cumsum(np.array([1.0, 2.0, 3.0]), 0.5), [2.75, 3.5, 3.0])
    np.testing.assert_allclose(discount_cumsum(np.array([1.0, 1.0]), 0.0), [1.0, 1.0])
    np.testing.assert_allclose(discount_cumsum(np.array([1, 1, 1]), 1.0), [3.0, 2.0, 1.0])
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    out = discount_cumsum(x, 0.5)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [[2.5, 4.0], [3.0, 4.0]])


def test_discount_cumsum_rejects_scalar():
    with pytest.raises(ValueError, match="shape \\[T, ...\\]"):
        discount_cumsum(np.float32(1.0), 0.9)


def _traj():
    return SampleBatch({"rewards": np.array([1.0, 0.0, 2.0], np.float32),
                        "vf_preds": np.array([0.5, 1.0, 1.5], np.float32)})


def test_gae_hand_computed():
    # gamma=0.9, lambda=0.8, last_r=2.0
    # delta = [1 + .9*1 - .5, 0 + .9*1.5 - 1, 2 + .9*2 - 1.5] = [1.4, 0.35, 2.3]
    # adv_2 = 2.3; adv_1 = .35 + .72*2.3 = 2.006; adv_0 = 1.4 + .72*2.006 = 2.84432
    out = compute_advantages(_traj(), 2.0, gamma=0.9, lambda_=0.8)
    np.testing.assert_allclose(out[Postprocessing.ADVANTAGES], [2.84432, 2.006, 2.3], rtol=1e-6)
    np.testing.assert_allclose(out[Postprocessing.VALUE_TARGETS], [3.34432, 3.006, 3.8], rtol=1e-6)
    assert out["advantages"].dtype == np.float32 and out["value_targets"].dtype == np.float32


def test_gae_with_lambda_one_equals_monte_carlo_minus_baseline():
    gae = compute_advantages(_traj(), 2.0, gamma=0.9, lambda_=1.0)
    mc = compute_advantages(_traj(), 2.0, gamma=0.9, use_gae=False)
    np.testing.assert_allclose(gae["advantages"], mc["advantages"], rtol=1e-6)


def test_no_gae_with_critic_hand_computed():
    # G = [1 + .9*(0 + .9*(2 + .9*2)), 0 + .9*(2 + .9*2), 2 + .9*2] = [4.078, 3.42, 3.8]
    out = compute_advantages(_traj(), 2.0, gamma=0.9, use_gae=False)
    np.testing.assert_allclose(out["value_targets"], [4.078, 3.42, 3.8], rtol=1e-6)
    np.testing.assert_allclose(out["advantages"], [3.578, 2.42, 2.3], rtol=1e-6)


def test_no_gae_no_critic_terminated():
    batch = SampleBatch({"rewards": np.array([1.0, 1.0, 1.0], np.float32)})
    out = compute_advantages(batch, 0.0, gamma=0.5, use_gae=False, use_critic=False)
    np.testing.assert_allclose(out["advantages"], [1.75, 1.5, 1.0])
    np.testing.assert_array_equal(out["value_targets"], [0.0, 0.0, 0.0])
    assert out is batch


def test_compute_advantages_errors():
    with pytest.raises(ValueError, match="Can't use gae without using a value function"):
        compute_advantages(_traj(), 0.0, use_gae=True, use_critic=False)
    with pytest.raises(ValueError, match="use_critic=True but values not found"):
        compute_advantages(SampleBatch({"rewards": [1.0]}), 0.0, use_gae=False)
    with pytest.raises(ValueError, match="'rewards' column"):
        compute_advantages(SampleBatch({"vf_preds": [1.0]}), 0.0)
    with pytest.raises(ValueError, match="rewards of shape \\[T\\]; received \\(1, 2\\)"):
        compute_advantages(SampleBatch({"rewards": [[1.0, 2.0]], "vf_preds": [1.0]}), 0.0,
                           use_gae=False)
    with pytest.raises(ValueError, match="same shape"):
        compute_advantages(SampleBatch({"rewards": [1.0, 2.0], "vf_preds": [[1.0], [2.0]]}), 0.0)


# ------------------------------------------------ bootstrap_value, compute_gae_for_sample_batch

class LinearValuePolicy:
    """V(s) = 2 * s[0]; records the arguments of each `value` call."""

    def __init__(self, **config):
        self.config = {"no_done_at_end": False, "use_critic": True, "use_gae": True,
                       "gamma": 0.9, "lambda": 0.8, **config}
        self.calls = []

    def value(self, obs, states=None, **kwargs):
        self.calls.append((np.asarray(obs), states, kwargs))
        return 2.0 * np.asarray(obs, np.float64)[:, 0]


def _fragment(terminated_last, **extra):
    return SampleBatch({"obs": np.array([[0.0], [1.0], [2.0]], np.float32),
                        "new_obs": np.array([[1.0], [2.0], [1.0]], np.float32),
                        "actions": np.array([0, 1, 1]),
                        "rewards": np.array([1.0, 0.0, 2.0], np.float32),
                        "vf_preds": np.array([0.5, 1.0, 1.5], np.float32),
                        "terminateds": np.array([False, False, terminated_last]),
                        **extra})


def test_bootstrap_value_is_zero_after_a_termination():
    policy = LinearValuePolicy()
    assert bootstrap_value(policy, _fragment(True)) == 0.0
    assert policy.calls == []


def test_bootstrap_value_of_a_cut_or_truncated_fragment_is_v_of_the_next_obs():
    # new_obs[-1] = [1.0] -> V = 2 * 1.0 = 2.0; the last action (1) and reward (2.0)
    # are the previous action and reward of that observation.
    policy = LinearValuePolicy()
    assert bootstrap_value(policy, _fragment(False)) == 2.0
    obs, states, kwargs = policy.calls[0]
    assert obs.tolist() == [[1.0]] and states is None
    assert kwargs["prev_action_batch"].tolist() == [1]
    assert kwargs["prev_reward_batch"].tolist() == [2.0]


def test_bootstrap_value_with_no_done_at_end_and_legacy_dones():
    # no_done_at_end: a termination is bootstrapped too, V([1.0]) = 2.0.
    assert bootstrap_value(LinearValuePolicy(no_done_at_end=True), _fragment(True)) == 2.0
    legacy = _fragment(False)
    del legacy["terminateds"]
    legacy["dones"] = np.array([False, False, True])
    assert bootstrap_value(LinearValuePolicy(), legacy) == 0.0


def test_bootstrap_value_passes_the_recurrent_state_after_the_last_step():
    batch = _fragment(False, state_out_0=np.array([[0.1], [0.2], [0.3]], np.float32))
    policy = LinearValuePolicy()
    assert bootstrap_value(policy, batch) == 2.0
    np.testing.assert_array_equal(policy.calls[0][1][0], np.array([[0.3]], np.float32))


def test_compute_gae_for_sample_batch_hand_computed():
    # Truncated fragment: last_r = V([1.0]) = 2.0, gamma=0.9, lambda=0.8 (as in
    # test_gae_hand_computed): delta = [1.4, 0.35, 2.3]; advantages = [2.84432, 2.006, 2.3];
    # value targets = advantages + vf_preds = [3.34432, 3.006, 3.8].
    out = compute_gae_for_sample_batch(LinearValuePolicy(), _fragment(False))
    np.testing.assert_allclose(out["advantages"], [2.84432, 2.006, 2.3], rtol=1e-6)
    np.testing.assert_allclose(out["value_targets"], [3.34432, 3.006, 3.8], rtol=1e-6)
    # Terminated: last_r = 0, delta_2 = 2 + 0 - 1.5 = 0.5; delta_1 = 0 + .9*1.5 - 1 = 0.35;
    # delta_0 = 1 + .9*1 - .5 = 1.4. adv_2 = 0.5; adv_1 = .35 + .72*.5 = 0.71;
    # adv_0 = 1.4 + .72*.71 = 1.9112.
    out = compute_gae_for_sample_batch(LinearValuePolicy(), _fragment(True))
    np.testing.assert_allclose(out["advantages"], [1.9112, 0.71, 0.5], rtol=1e-6)
    # Without a critic: no bootstrap (last_r = 0), discounted returns with gamma = 0.5:
    # G = [1 + .5*(0 + .5*2), 0 + .5*2, 2] = [1.5, 1.0, 2.0]; value targets zeros.
    policy = LinearValuePolicy(use_critic=False, use_gae=False, gamma=0.5)
    out = compute_gae_for_sample_batch(policy, _fragment(False))
    np.testing.assert_allclose(out["advantages"], [1.5, 1.0, 2.0])
    np.testing.assert_array_equal(out["value_targets"], [0.0, 0.0, 0.0])
    assert policy.calls == []
