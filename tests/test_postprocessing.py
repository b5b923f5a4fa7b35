"""discount_cumsum and compute_advantages against hand-computed numbers."""

import numpy as np
import pytest

from tfrl.evaluation.postprocessing import Postprocessing, compute_advantages, discount_cumsum
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
