"""R2D2's pure loss against numbers computed by hand.

Two sequences padded to T = 3 steps, two actions, gamma 0.5. The Q-values hold T + 1
states: index L (the sequence's length) is the last real step's new_obs.

    sequence 0: L = 3, not terminated, rewards [1, 2, 3], actions [1, 0, 1]
        q_target  s0 [0, 0]  s1 [2, 8]  s2 [4, 6]  s3 [10, 2]
        q_online  s0 [1, 5]  s1 [3, 1]  s2 [0, 2]  s3 [0, 1]   -> Q(s, a) = [5, 3, 2]
    sequence 1: L = 2, terminated at step 1, rewards [4, 5, pad], actions [0, 1, pad]
        q_target  s0 [0, 0]  s1 [1, 3]  s2 [7, 7]  (pad)
        q_online  s0 [2, 1]  s1 [0, 4]  s2 [9, 9]  (pad)       -> Q(s, a) = [2, 4]

1-step double-Q targets (the online argmax at the next state, valued by the target):
    seq 0: 1 + .5 * 2 = 2,  2 + .5 * 6 = 5,  3 + .5 * 2 = 4
    seq 1: 4 + .5 * 3 = 5.5,  5 (terminated)
2-step: seq 0: 1 + .5 * 2 + .25 * 6 = 3.5,  2 + .5 * 3 + .25 * 2 = 4,  3 + .5 * 2 = 4
        seq 1: 4 + .5 * 5 = 6.5 (terminated within the window),  5
"""

import numpy as np
import pytest
import tensorflow as tf

from tfrl.algorithms.r2d2.r2d2_loss import (h_function, h_inverse, r2d2_loss,
                                            sequence_targets)


def f32(x):
    return tf.constant(np.asarray(x, np.float32))


Q_TARGET = f32([[[0, 0], [2, 8], [4, 6], [10, 2]],
                [[0, 0], [1, 3], [7, 7], [0, 0]]])
Q_ONLINE = f32([[[1, 5], [3, 1], [0, 2], [0, 1]],
                [[2, 1], [0, 4], [9, 9], [0, 0]]])
ACTIONS = tf.constant([[1, 0, 1], [0, 1, 0]])
REWARDS = f32([[1, 2, 3], [4, 5, 0]])
TERMINATEDS = tf.constant([[False, False, False], [False, True, False]])
SEQ_LENS = tf.constant([3, 2])
REAL = [[True, True, True], [True, True, False]]


def targets(**kwargs):
    kwargs.setdefault("h_epsilon", None)
    y, real = sequence_targets(Q_TARGET, kwargs.pop("q_online", Q_ONLINE), REWARDS,
                               TERMINATEDS, SEQ_LENS, gamma=0.5, **kwargs)
    np.testing.assert_array_equal(real, REAL)
    return np.where(REAL, y.numpy(), 0.0)


def test_h_and_its_inverse_by_hand_and_round_trip():
    # epsilon 0: h(x) = sqrt(|x| + 1) - 1, h^-1(x) = (|x| + 1)^2 - 1 (signed).
    np.testing.assert_allclose(h_function(f32([0, 3, 8, -15]), 0.0), [0, 1, 2, -3])
    np.testing.assert_allclose(h_inverse(f32([0, 1, 2, -3]), 0.0), [0, 3, 8, -15])
    # epsilon 1e-3 adds 1e-3 x.
    np.testing.assert_allclose(h_function(f32([3, -8]), 1e-3), [1.003, -2.008], rtol=1e-6)
    x = f32(np.linspace(-500.0, 500.0, 41))
    np.testing.assert_allclose(h_inverse(h_function(x, 1e-3), 1e-3), x, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(h_function(h_inverse(x, 1e-3), 1e-3), x, rtol=1e-4, atol=1e-4)


def test_one_step_double_q_and_plain_max_targets():
    np.testing.assert_allclose(targets(), [[2, 5, 4], [5.5, 5, 0]])
    # The target network picks too: max of s1, s2, s3 = 8, 6, 10; sequence 1: 3.
    np.testing.assert_allclose(targets(q_online=None), [[5, 5, 8], [5.5, 5, 0]])


def test_n_step_targets_stop_at_the_sequence_end_and_at_termination():
    np.testing.assert_allclose(targets(n_step=2), [[3.5, 4, 4], [6.5, 5, 0]])
    # 3 steps: seq 0 t0: 1 + .5 * 2 + .25 * 3 + .125 * 2 (s3's online argmax 1 -> 2).
    np.testing.assert_allclose(targets(n_step=3), [[3.0, 4, 4], [6.5, 5, 0]])


def test_value_rescaling_by_hand():
    # One step, reward 4, gamma 0.5, Q_target(s1) = 2 -> h(4 + .5 h^-1(2)) = h(8) = 2.
    y, _ = sequence_targets(f32([[[0, 0], [2, 2]]]), None, f32([[4.0]]), [[False]], [1],
                            gamma=0.5, h_epsilon=0.0)
    np.testing.assert_allclose(y, [[2.0]], rtol=1e-6)
    # A terminated step: h(r).
    y, _ = sequence_targets(f32([[[0, 0], [2, 2]]]), None, f32([[3.0]]), [[True]], [1],
                            gamma=0.5, h_epsilon=0.0)
    np.testing.assert_allclose(y, [[1.0]], rtol=1e-6)


@pytest.mark.parametrize("burn_in, huber_delta, weights, expected", [
    # Deltas Q(s, a) - y: [5-2, 3-5, 2-4] and [2-5.5, 4-5] = [3, -2, -2], [-3.5, -1].
    (0, 1.0, None, (2.5 + 1.5 + 1.5 + 3.0 + 0.5) / 5),
    (0, None, None, 0.5 * (9 + 4 + 4 + 12.25 + 1) / 5),
    # burn-in 1: steps 1, 2 of sequence 0 and step 1 of sequence 1.
    (1, 1.0, None, (1.5 + 1.5 + 0.5) / 3),
    (0, 1.0, [[2, 1, 1], [1, 0, 7]], (5.0 + 1.5 + 1.5 + 3.0 + 0.0) / 5),
])
def test_loss_masks_padding_and_burn_in(burn_in, huber_delta, weights, expected):
    loss, stats = r2d2_loss(Q_ONLINE, Q_TARGET, ACTIONS, REWARDS, TERMINATEDS, SEQ_LENS,
                            None if weights is None else f32(weights), gamma=0.5,
                            burn_in=burn_in, h_epsilon=None, huber_delta=huber_delta)
    np.testing.assert_allclose(loss, expected, rtol=1e-6)
    trained_q = [5, 3, 2, 2, 4] if burn_in == 0 else [3, 2, 4]
    np.testing.assert_allclose(stats["mean_q"], np.mean(trained_q), rtol=1e-6)
    deltas = [3, -2, -2, -3.5, -1] if burn_in == 0 else [-2, -2, -1]
    np.testing.assert_allclose(stats["mean_td_error"], np.mean(deltas), rtol=1e-6)
    np.testing.assert_allclose(stats["mean_abs_td_error"], np.mean(np.abs(deltas)), rtol=1e-6)


def test_gradient_reaches_only_the_taken_actions_of_the_real_steps():
    q_online = tf.Variable(Q_ONLINE)
    q_target = tf.Variable(Q_TARGET)
    with tf.GradientTape() as tape:
        loss, _ = r2d2_loss(q_online, q_target, ACTIONS, REWARDS, TERMINATEDS, SEQ_LENS,
                            gamma=0.5, h_epsilon=None, huber_delta=None)
    grad_online, grad_target = tape.gradient(loss, [q_online, q_target])
    assert grad_target is None  # the targets are constants
    # d/dQ 0.5 delta^2 / 5 = delta / 5 at the taken actions of the real steps only (the
    # appended bootstrap states and the padding get none, double Q included).
    want = np.zeros((2, 4, 2), np.float32)
    for (b, t, a), delta in zip([(0, 0, 1), (0, 1, 0), (0, 2, 1), (1, 0, 0), (1, 1, 1)],
                                [3, -2, -2, -3.5, -1]):
        want[b, t, a] = delta / 5
    np.testing.assert_allclose(grad_online, want, rtol=1e-6)


def test_shapes_are_checked_naming_what_came():
    with pytest.raises(ValueError, match=r"q_target must be float Q-values \[B, T \+ 1, "
                                         r"num_actions\]; received float32 of shape \(2, 4\)"):
        r2d2_loss(Q_ONLINE, Q_TARGET[:, :, 0], ACTIONS, REWARDS, TERMINATEDS, SEQ_LENS,
                  gamma=0.5)
    with pytest.raises(ValueError, match=r"need T \+ 1 = 4 states per sequence.*received 3"):
        r2d2_loss(Q_ONLINE[:, :3], Q_TARGET[:, :3], ACTIONS, REWARDS, TERMINATEDS,
                  SEQ_LENS, gamma=0.5)
    with pytest.raises(ValueError, match=r"rewards must be float \[B, T\]; received int32"):
        r2d2_loss(Q_ONLINE, Q_TARGET, ACTIONS, tf.constant([[1, 2, 3], [4, 5, 0]]),
                  TERMINATEDS, SEQ_LENS, gamma=0.5)
