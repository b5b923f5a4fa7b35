"""DQN's pure loss functions against numbers computed by hand.

Three rows, two actions, gamma 0.9:
    q_t          [[1, 2], [3, 0], [0.5, -1]], actions [1, 0, 0] -> Q(s, a) = [2, 3, 0.5]
    rewards      [1, 0, 2], terminated [F, F, T]
    q_tp1_target [[4, 1], [2, 6], [5, 5]]
    q_tp1_online [[0, 1], [3, 2], [1, 0]]  -> double-Q picks [1, 0, 0]: values [1, 2, 5]
                                            plain max of the target:      [4, 6, 5]
"""

import numpy as np
import pytest
import tensorflow as tf

from tfrl.algorithms.dqn.dqn_loss import dqn_loss, dueling_q_values, q_target, td_error


def f32(x):
    return tf.constant(np.asarray(x, np.float32))


Q_T = f32([[1.0, 2.0], [3.0, 0.0], [0.5, -1.0]])
ACTIONS = tf.constant([1, 0, 0])
REWARDS = f32([1.0, 0.0, 2.0])
TERMINATED = tf.constant([False, False, True])
Q_TP1_TARGET = f32([[4.0, 1.0], [2.0, 6.0], [5.0, 5.0]])
Q_TP1_ONLINE = f32([[0.0, 1.0], [3.0, 2.0], [1.0, 0.0]])


def test_dueling_aggregation_by_hand():
    # mean A = [2, 1]: Q = V + A - mean A
    q = dueling_q_values(f32([1.0, -1.0]), f32([[1.0, 2.0, 3.0], [0.0, 0.0, 3.0]]))
    np.testing.assert_allclose(q, [[0.0, 1.0, 2.0], [-2.0, -2.0, 1.0]])
    q2 = dueling_q_values(f32([[1.0], [-1.0]]), f32([[1.0, 2.0, 3.0], [0.0, 0.0, 3.0]]))
    np.testing.assert_allclose(q2, q)
    with pytest.raises(ValueError, match=r"advantages must be \[B, num_actions\]; received "
                                         r"shape \(3,\)"):
        dueling_q_values(f32([1.0]), f32([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match=r"state_value must be \[B\] or \[B, 1\]; received "
                                         r"shape \(2, 2\)"):
        dueling_q_values(f32([[1.0, 1.0], [1.0, 1.0]]), f32([[1.0, 2.0], [0.0, 0.0]]))


def test_targets_double_q_plain_max_and_per_row_n_step():
    double = q_target(REWARDS, TERMINATED, Q_TP1_TARGET, Q_TP1_ONLINE, gamma=0.9)
    np.testing.assert_allclose(double, [1.0 + 0.9 * 1.0, 0.9 * 2.0, 2.0], rtol=1e-6)
    # n_step per row [1, 2, 3]: gamma ** k; the terminated row does not bootstrap.
    plain = q_target(REWARDS, f32([0.0, 0.0, 1.0]), Q_TP1_TARGET, gamma=0.9,
                     n_step=tf.constant([1, 2, 3]))
    np.testing.assert_allclose(plain, [1.0 + 0.9 * 4.0, 0.81 * 6.0, 2.0], rtol=1e-6)
    # A truncated (not terminated) row keeps its bootstrap.
    kept = q_target(REWARDS, tf.constant([False, False, False]), Q_TP1_TARGET, gamma=0.9,
                    n_step=3)
    np.testing.assert_allclose(kept, [1.0 + 0.729 * 4.0, 0.729 * 6.0, 2.0 + 0.729 * 5.0],
                               rtol=1e-6)
    targets = q_target(REWARDS, TERMINATED, Q_TP1_TARGET, Q_TP1_ONLINE, gamma=0.9)
    np.testing.assert_allclose(td_error(Q_T, ACTIONS, targets), [0.1, 1.2, -1.5], atol=1e-6)


@pytest.mark.parametrize("weights, huber_delta, expected", [
    # delta [0.1, 1.2, -1.5]; huber [0.005, 0.7, 1.0]
    (None, 1.0, (0.005 + 0.7 + 1.0) / 3),
    ([1.0, 0.5, 2.0], 1.0, (0.005 + 0.35 + 2.0) / 3),
    (None, None, (0.005 + 0.72 + 1.125) / 3),  # 0.5 delta ** 2
])
def test_dqn_loss_by_hand(weights, huber_delta, expected):
    loss, stats = dqn_loss(Q_T, ACTIONS, REWARDS, TERMINATED, Q_TP1_TARGET, Q_TP1_ONLINE,
                           None if weights is None else f32(weights), gamma=0.9,
                           huber_delta=huber_delta)
    assert float(loss) == pytest.approx(expected, rel=1e-5)
    assert float(stats["mean_q"]) == pytest.approx((2.0 + 3.0 + 0.5) / 3)
    assert float(stats["min_q"]) == 0.5 and float(stats["max_q"]) == 3.0
    assert float(stats["mean_td_error"]) == pytest.approx((0.1 + 1.2 - 1.5) / 3, abs=1e-6)
    assert float(stats["mean_abs_td_error"]) == pytest.approx(2.8 / 3, rel=1e-5)


def test_dqn_loss_plain_max_n_step_by_hand():
    # targets [4.6, 4.86, 2]: delta [-2.6, -1.86, -1.5], huber [2.1, 1.36, 1.0]
    loss, _ = dqn_loss(Q_T, ACTIONS, REWARDS, TERMINATED, Q_TP1_TARGET, gamma=0.9,
                       n_step=tf.constant([1, 2, 3], tf.int32))
    assert float(loss) == pytest.approx((2.1 + 1.36 + 1.0) / 3, rel=1e-5)


def test_gradient_flows_into_the_taken_actions_q_only():
    q_t, q_tp1_target = tf.Variable(Q_T), tf.Variable(Q_TP1_TARGET)
    with tf.GradientTape() as tape:
        loss, _ = dqn_loss(q_t, ACTIONS, REWARDS, TERMINATED, q_tp1_target, Q_TP1_ONLINE,
                           gamma=0.9)
    grad_q, grad_target = tape.gradient(loss, [q_t, q_tp1_target])
    # d/d delta of huber is clip(delta, -1, 1) = [0.1, 1, -1], over B = 3 rows
    np.testing.assert_allclose(grad_q, [[0.0, 0.1 / 3], [1 / 3, 0.0], [-1 / 3, 0.0]],
                               rtol=1e-5, atol=1e-7)
    assert grad_target is None  # the target is held constant


@pytest.mark.parametrize("call, error, match", [
    (lambda: dqn_loss(f32([1.0, 2.0, 3.0]), ACTIONS, REWARDS, TERMINATED, Q_TP1_TARGET,
                      gamma=0.9), ValueError,
     r"dqn_loss\(\): q_t must be float Q-values \[B, num_actions\]; received float32 of "
     r"shape \(3,\)"),
    (lambda: dqn_loss(Q_T, ACTIONS, REWARDS, TERMINATED, Q_TP1_TARGET[:2], gamma=0.9),
     ValueError, r"q_target\(\): q_tp1_target has 2 rows; the per-row tensors have 3"),
    (lambda: dqn_loss(Q_T, ACTIONS, tf.constant([1, 0, 2]), TERMINATED, Q_TP1_TARGET,
                      gamma=0.9), TypeError,
     r"dqn_loss\(\): rewards_t must be a float tensor; received dtype int32"),
    (lambda: dqn_loss(Q_T, ACTIONS, REWARDS, TERMINATED, Q_TP1_TARGET, None, f32([1.0, 1.0]),
                      gamma=0.9), ValueError,
     r"importance_weights_t and rewards_t must have one dtype and shape"),
    (lambda: q_target(f32([[1.0]]), TERMINATED, Q_TP1_TARGET, gamma=0.9), ValueError,
     r"q_target\(\): rewards_t must be \[B\]; received shape \(1, 1\)"),
])
def test_bad_inputs_raise_clear_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
