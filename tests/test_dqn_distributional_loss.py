"""The distributional DQN losses (C51, QR-DQN) against numbers computed by hand, and the
C51 projection against TF-Agents' formula re-derived in numpy.

C51 examples: N = 3 atoms on [-1, 1] (z = [-1, 0, 1], dz = 1), next-state probabilities
p = [0.2, 0.3, 0.5]:
    r = 0.5, gamma = 0.5:   Tz = [0, 0.5, 1]    b = [1, 1.5, 2]
        atom 0 -> all 0.2 to index 1; atom 1 -> 0.15 to 1, 0.15 to 2; atom 2 -> 0.5 to 2
        m = [0, 0.35, 0.65]
    r = -0.25, gamma = 0.5: Tz = [-0.75, -0.25, 0.25]   b = [0.25, 0.75, 1.25]
        atom 0: 0.15 to 0, 0.05 to 1; atom 1: 0.075 to 0, 0.225 to 1;
        atom 2: 0.375 to 1, 0.125 to 2          m = [0.225, 0.65, 0.125]
    r = 0, gamma = 0.5, 2 steps (gamma^2 = 0.25): Tz = [-0.25, 0, 0.25]  b = [0.75, 1, 1.25]
        m = [0.05, 0.15 + 0.3 + 0.375, 0.125] = [0.05, 0.825, 0.125]
    r = 2, gamma = 1:        Tz = [1, 2, 3] clipped to [1, 1, 1]: m = [0, 0, 1]
    r = 1, terminated:       all mass at clip(r) = 1:               m = [0, 0, 1]
"""

import numpy as np
import pytest
import tensorflow as tf

from tfrl.algorithms.dqn.dqn_loss import (
    c51_loss, c51_targets, categorical_projection, categorical_support, categorical_td_error,
    qr_dqn_loss, qr_targets, qr_td_error, quantile_huber_loss, quantile_midpoints)


def f32(x):
    return tf.constant(np.asarray(x, np.float32))


P = [0.2, 0.3, 0.5]


@pytest.mark.parametrize("reward, terminated, gamma, n_step, expected", [
    (0.5, False, 0.5, 1, [0.0, 0.35, 0.65]),
    (-0.25, False, 0.5, 1, [0.225, 0.65, 0.125]),
    (0.0, False, 0.5, 2, [0.05, 0.825, 0.125]),
    (2.0, False, 1.0, 1, [0.0, 0.0, 1.0]),
    (1.0, True, 0.5, 1, [0.0, 0.0, 1.0]),
])
def test_categorical_projection_by_hand(reward, terminated, gamma, n_step, expected):
    m = categorical_projection(f32([P]), f32([reward]), tf.constant([terminated]),
                               gamma=gamma, n_step=n_step, v_min=-1.0, v_max=1.0)
    np.testing.assert_allclose(m, [expected], atol=1e-6)


def test_categorical_projection_takes_per_row_n_step_and_float_terminateds():
    m = categorical_projection(f32([P, P, P]), f32([0.5, 0.0, 1.0]), f32([0.0, 0.0, 1.0]),
                               gamma=0.5, n_step=tf.constant([1, 2, 1]), v_min=-1.0,
                               v_max=1.0)
    np.testing.assert_allclose(m, [[0.0, 0.35, 0.65], [0.05, 0.825, 0.125],
                                   [0.0, 0.0, 1.0]], atol=1e-6)


def tf_agents_projection(probs, rewards, discounts, v_min, v_max):
    """TF-Agents' `project_distribution` (categorical_dqn_agent.py) in numpy: each target
    atom i collects from every shifted atom j the weight
    `clip(1 - |clip(r + d z_j, v_min, v_max) - z_i| / dz, 0, 1)` of its probability."""
    num_atoms = probs.shape[1]
    z = np.linspace(v_min, v_max, num_atoms)
    dz = z[1] - z[0]
    shifted = np.clip(rewards[:, None] + discounts[:, None] * z[None, :], v_min, v_max)
    weights = np.clip(1.0 - np.abs(shifted[:, None, :] - z[None, :, None]) / dz, 0.0, 1.0)
    return np.einsum("bij,bj->bi", weights, probs)  # [B, N]


def test_categorical_projection_matches_tf_agents_formula():
    rng = np.random.default_rng(0)
    rows, num_atoms, v_min, v_max, gamma = 64, 51, -10.0, 10.0, 0.99
    logits = rng.normal(size=(rows, num_atoms))
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    rewards = rng.uniform(-3.0, 3.0, rows)
    rewards[:4] = [-20.0, 20.0, 10.0, -10.0]  # clipped at both ends, and exactly at them
    terminateds = rng.random(rows) < 0.2
    n_step = rng.integers(1, 4, rows)
    got = categorical_projection(f32(probs), f32(rewards), tf.constant(terminateds),
                                 gamma=gamma, n_step=tf.constant(n_step), v_min=v_min,
                                 v_max=v_max)
    discounts = gamma ** n_step * (1.0 - terminateds)
    want = tf_agents_projection(probs, rewards, discounts, v_min, v_max)
    np.testing.assert_allclose(got, want, atol=1e-5)  # float32 vs float64
    np.testing.assert_allclose(np.sum(got, axis=1), 1.0, atol=1e-5)


# One row, two actions, three atoms on [-1, 1]. Next state (target network):
#   action 0: p = [0.2, 0.3, 0.5] (Q = 0.3), action 1: p = [0.5, 0.3, 0.2] (Q = -0.3).
# Taken action 1 at s_t with p = [0.25, 0.25, 0.5] (Q = 0.25); r = 0.5, gamma = 0.5.
#   target picks action 0:        m = [0, 0.35, 0.65]
#       CE = -(0.35 log 0.25 + 0.65 log 0.5) = 0.485203 + 0.450546 = 0.935749
#   double Q (online Q [0, 1]) picks action 1, p = [0.5, 0.3, 0.2]: Tz = [0, 0.5, 1],
#       m = [0, 0.5 + 0.15, 0.15 + 0.2] = [0, 0.65, 0.35]
#       CE = 0.65 * 1.386294 + 0.35 * 0.693147 = 1.143692
LOGITS_T = f32(np.log([[[1.0, 1.0, 1.0], [0.25, 0.25, 0.5]]]))
LOGITS_TP1 = f32(np.log([[[0.2, 0.3, 0.5], [0.5, 0.3, 0.2]]]))
C51 = dict(gamma=0.5, v_min=-1.0, v_max=1.0)


def test_c51_targets_and_cross_entropy_by_hand():
    targets = c51_targets(f32([0.5]), tf.constant([False]), LOGITS_TP1, **C51)
    np.testing.assert_allclose(targets, [[0.0, 0.35, 0.65]], atol=1e-6)
    double = c51_targets(f32([0.5]), tf.constant([False]), LOGITS_TP1, f32([[0.0, 1.0]]),
                         **C51)
    np.testing.assert_allclose(double, [[0.0, 0.65, 0.35]], atol=1e-6)
    np.testing.assert_allclose(categorical_td_error(LOGITS_T, tf.constant([1]), targets),
                               [0.935749], rtol=1e-5)


@pytest.mark.parametrize("online, weights, expected", [
    (None, None, 0.935749),
    ([[0.0, 1.0]], None, 1.143692),
    (None, [2.0], 2 * 0.935749),
])
def test_c51_loss_by_hand(online, weights, expected):
    loss, stats = c51_loss(LOGITS_T, tf.constant([1]), f32([0.5]), tf.constant([False]),
                           LOGITS_TP1, None if online is None else f32(online),
                           None if weights is None else f32(weights), **C51)
    assert float(loss) == pytest.approx(expected, rel=1e-5)
    assert float(stats["mean_q"]) == pytest.approx(0.25, rel=1e-5)
    assert float(stats["mean_td_error"]) == pytest.approx(expected / (weights or [1])[0],
                                                          rel=1e-5)


def test_c51_gradient_is_softmax_minus_target_on_the_taken_action_only():
    logits = tf.Variable(LOGITS_T)
    with tf.GradientTape() as tape:
        loss, _ = c51_loss(logits, tf.constant([1]), f32([0.5]), tf.constant([False]),
                           LOGITS_TP1, **C51)
    # d CE / d logits = softmax - m = [0.25, 0.25, 0.5] - [0, 0.35, 0.65]
    np.testing.assert_allclose(tape.gradient(loss, logits),
                               [[[0.0, 0.0, 0.0], [0.25, -0.1, -0.15]]], atol=1e-6)


def test_support_and_midpoints():
    np.testing.assert_allclose(categorical_support(5, -10.0, 10.0), [-10, -5, 0, 5, 10])
    np.testing.assert_allclose(quantile_midpoints(2), [0.25, 0.75])
    with pytest.raises(ValueError, match=r"num_atoms >= 2 and v_min < v_max; received "
                                         r"num_atoms=3, v_min=1.0, v_max=1.0"):
        categorical_support(3, 1.0, 1.0)


# Quantile Huber loss, N = 2 quantiles at tau = [0.25, 0.75]:
#   theta = [0, 1], target [0.5]: u = [0.5, -0.5], huber 0.125 each, weights
#       |0.25 - 0| = 0.25 and |0.75 - 1| = 0.25: 0.03125 + 0.03125 = 0.0625
#   theta = [0, 0], targets [3, -2]: huber(3) = 2.5, huber(-2) = 1.5
#       i=0: 0.25 * 2.5, 0.75 * 1.5 -> mean 0.875; i=1: 0.75 * 2.5, 0.25 * 1.5 -> 1.125
#       sum 2.0;  kappa 0 (|u|): i=0 (0.75 + 1.5) / 2, i=1 (2.25 + 0.5) / 2 -> 2.5
#       kappa 2: huber_2(3) / 2 = 4 / 2 = 2, huber_2(-2) / 2 = 2 / 2 = 1
#       i=0: (0.5 + 0.75) / 2 = 0.625, i=1: (1.5 + 0.25) / 2 = 0.875 -> 1.5
@pytest.mark.parametrize("theta, targets, kappa, expected", [
    ([0.0, 1.0], [0.5], 1.0, 0.0625),
    ([0.0, 0.0], [3.0, -2.0], 1.0, 2.0),
    ([0.0, 0.0], [3.0, -2.0], 0.0, 2.5),
    ([0.0, 0.0], [3.0, -2.0], 2.0, 1.5),
])
def test_quantile_huber_loss_by_hand(theta, targets, kappa, expected):
    loss = quantile_huber_loss(f32([theta]), f32([targets]), kappa)
    np.testing.assert_allclose(loss, [expected], rtol=1e-6)


def test_quantile_loss_gradient_pushes_each_quantile_by_its_level():
    # kappa 0, theta = [0, 0], targets [3, -2]: d/d theta_i = mean_j -(tau_i - 1{u_j < 0})
    #   i=0: (-0.25 + 0.75) / 2 = 0.25;  i=1: (-0.75 + 0.25) / 2 = -0.25
    theta = tf.Variable(f32([[0.0, 0.0]]))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(quantile_huber_loss(theta, f32([[3.0, -2.0]]), 0.0))
    np.testing.assert_allclose(tape.gradient(loss, theta), [[0.25, -0.25]], atol=1e-7)


@pytest.mark.parametrize("kappa", [0.0, 1.0, 2.0])
def test_quantile_loss_gradient_in_closed_form_equals_autodiff_of_the_definition(kappa):
    # The loss's custom gradient against autodiff through eq. 10 written out pair by pair
    # (rows weighted differently, so each row's upstream gradient counts).
    rng = np.random.default_rng(3)
    theta = tf.Variable(rng.normal(size=(5, 7)).astype(np.float32) * 2.0)
    targets = f32(rng.normal(size=(5, 9)) * 2.0)
    row_weights = f32(np.arange(1.0, 6.0))

    def by_definition(q):
        u = targets[:, None, :] - q[:, :, None]
        tau = (2.0 * np.arange(7, dtype=np.float32) + 1.0) / 14.0
        weight = tf.abs(tau[None, :, None] - tf.cast(u < 0.0, tf.float32))
        huber = (tf.abs(u) if kappa == 0 else tf.where(
            tf.abs(u) <= kappa, 0.5 * u * u, kappa * (tf.abs(u) - 0.5 * kappa)) / kappa)
        return tf.reduce_sum(tf.reduce_mean(weight * huber, axis=2), axis=1)

    grads = []
    for fn in (lambda q: quantile_huber_loss(q, targets, kappa), by_definition):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(row_weights * fn(theta))
        grads.append((loss.numpy(), tape.gradient(loss, theta).numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-6)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-5, atol=1e-6)
    assert np.abs(grads[0][1]).max() > 0.1


# QR-DQN, one row, two actions, N = 2: taken action 0 with theta = [0, 1];
# next state (target) action 0: [0, 0] (mean 0), action 1: [-2, 4] (mean 1); r 0.5, gamma 0.5
#   target picks action 1: targets 0.5 + 0.5 [-2, 4] = [-0.5, 2.5]
#       i=0 (tau 0.25): u = [-0.5, 2.5]: 0.75 * 0.125, 0.25 * 2.0 -> (0.09375 + 0.5) / 2
#       i=1 (tau 0.75): u = [-1.5, 1.5]: 0.25 * 1.0, 0.75 * 1.0 -> 0.5
#       loss 0.296875 + 0.5 = 0.796875
#   double Q picking action 0 (or a terminated row): targets [0.5, 0.5] -> 0.0625
QUANTILES_T = f32([[[0.0, 1.0], [5.0, 5.0]]])
QUANTILES_TP1 = f32([[[0.0, 0.0], [-2.0, 4.0]]])


@pytest.mark.parametrize("terminated, online, weights, expected", [
    (False, None, None, 0.796875),
    (True, None, None, 0.0625),
    (False, [[1.0, 0.0]], None, 0.0625),
    (False, None, [0.5], 0.5 * 0.796875),
])
def test_qr_dqn_loss_by_hand(terminated, online, weights, expected):
    loss, stats = qr_dqn_loss(QUANTILES_T, tf.constant([0]), f32([0.5]),
                              tf.constant([terminated]), QUANTILES_TP1,
                              None if online is None else f32(online),
                              None if weights is None else f32(weights), gamma=0.5)
    assert float(loss) == pytest.approx(expected, rel=1e-6)
    assert float(stats["mean_q"]) == pytest.approx(0.5)


def test_qr_targets_and_td_error_by_hand():
    targets = qr_targets(f32([0.5]), tf.constant([False]), QUANTILES_TP1, gamma=0.5,
                         n_step=tf.constant([2]))  # gamma^2 = 0.25: 0.5 + 0.25 [-2, 4]
    np.testing.assert_allclose(targets, [[0.0, 1.5]])
    # theta [0, 1] vs [0, 1.5]: i=0 u = [0, 1.5]: 0.25 * 0 + 0.25 * 1.0 -> 0.125
    # i=1 u = [-1, 0.5]: 0.25 * 0.5 + 0.75 * 0.125 -> (0.125 + 0.09375) / 2 = 0.109375
    np.testing.assert_allclose(qr_td_error(QUANTILES_T, tf.constant([0]), targets),
                               [0.234375], rtol=1e-6)


@pytest.mark.parametrize("call, match", [
    (lambda: c51_loss(LOGITS_T[0], tf.constant([1]), f32([0.5]), tf.constant([False]),
                      LOGITS_TP1, **C51),
     r"c51_loss\(\): logits_t must be float \[B, num_actions, num_atoms\]; received "
     r"float32 of shape \(2, 3\)"),
    (lambda: c51_targets(f32([0.5, 1.0]), tf.constant([False, False]), LOGITS_TP1, **C51),
     r"c51_targets\(\): logits_tp1_target has 1 rows; the per-row tensors have 2"),
    (lambda: qr_dqn_loss(QUANTILES_T, tf.constant([0]), f32([0.5]), tf.constant([False]),
                         QUANTILES_TP1[0], gamma=0.5),
     r"qr_targets\(\): quantiles_tp1_target must be float \[B, num_actions, num_atoms\]"),
    (lambda: quantile_huber_loss(f32([1.0]), f32([[1.0]])),
     r"quantiles_t must be float \[B, num\]; received float32 of shape \(1,\)"),
    (lambda: quantile_huber_loss(f32([[1.0]]), f32([[1.0]]), -1.0),
     r"kappa must be >= 0; received -1.0"),
])
def test_bad_inputs_raise_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
