"""V-trace (tfrl.algorithms.impala.vtrace) against hand-computed numbers and a numpy
reference written from the paper's recursion (Espeholt et al. 2018, section 4):

    vs_t - V(x_t) = delta_t V + gamma_t c_t (vs_{t+1} - V(x_{t+1}))

and the batch-major <-> time-major layout helpers.
"""

import numpy as np
import pytest
import tensorflow as tf

from tfrl.algorithms.impala.vtrace import (
    column_bootstrap_value, drop_last_step, fixed_starts, from_time_major,
    padded_sequences_index, time_major_index, to_time_major, trajectory_starts, vtrace)


def f32(x):
    return tf.constant(np.asarray(x, np.float32))


def col(x):
    """A [T] list as a [T, 1] time-major tensor."""
    return f32(np.asarray(x, np.float32)[:, None])


def reference(log_rhos, discounts, rewards, values, bootstrap, rho_bar=1.0, pg_rho_bar=1.0,
              c_bar=1.0):
    """The paper's recursion, one step at a time, backwards (numpy, float64)."""
    rhos = np.exp(np.asarray(log_rhos, np.float64))
    clip = lambda x, bar: x if bar is None else np.minimum(bar, x)  # noqa: E731
    T = rhos.shape[0]
    vs = np.zeros_like(rhos)
    adv = np.zeros_like(rhos)
    next_vs, next_v = np.asarray(bootstrap, np.float64), np.asarray(bootstrap, np.float64)
    for t in reversed(range(T)):
        delta = clip(rhos[t], rho_bar) * (rewards[t] + discounts[t] * next_v - values[t])
        vs[t] = values[t] + delta + discounts[t] * clip(rhos[t], c_bar) * (next_vs - next_v)
        adv[t] = clip(rhos[t], pg_rho_bar) * (rewards[t] + discounts[t] * next_vs - values[t])
        next_vs, next_v = vs[t], values[t]
    return vs, adv


def run(log_rhos, discounts, rewards, values, bootstrap, **kwargs):
    vs, adv = vtrace(log_rhos, discounts, rewards, values, bootstrap, **kwargs)
    return vs.numpy(), adv.numpy()


# ------------------------------------------------------------------------ by hand

def test_on_policy_gives_the_discounted_returns_by_hand():
    # T=3, B=1, gamma 0.9, r = [1, 2, 3], bootstrap V(x_3) = 10:
    #   vs_2 = 3 + 0.9 * 10 = 12, vs_1 = 2 + 0.9 * 12 = 12.8, vs_0 = 1 + 0.9 * 12.8 = 12.52
    #   pg_adv_t = r_t + 0.9 * vs_{t+1} - V_t, V = [0.5, 1, 1.5]
    vs, adv = run(col([0, 0, 0]), col([0.9] * 3), col([1, 2, 3]), col([0.5, 1, 1.5]),
                  f32([10.0]))
    np.testing.assert_allclose(vs[:, 0], [12.52, 12.8, 12.0], rtol=1e-6)
    np.testing.assert_allclose(adv[:, 0], [12.02, 11.8, 10.5], rtol=1e-6)


def test_on_policy_equals_n_step_returns_in_numpy():
    rng = np.random.default_rng(0)
    T, B, gamma = 6, 4, 0.95
    rewards, values = rng.normal(size=(T, B)), rng.normal(size=(T, B))
    bootstrap = rng.normal(size=B)
    returns = np.zeros((T, B))
    acc = bootstrap
    for t in reversed(range(T)):
        acc = rewards[t] + gamma * acc
        returns[t] = acc
    vs, adv = run(f32(np.zeros((T, B))), f32(np.full((T, B), gamma)), f32(rewards),
                  f32(values), f32(bootstrap))
    np.testing.assert_allclose(vs, returns, rtol=1e-5, atol=1e-5)
    next_returns = np.concatenate([returns[1:], bootstrap[None]])
    np.testing.assert_allclose(adv, rewards + gamma * next_returns - values, rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("rho_bar, c_bar, pg_rho_bar, vs0, vs1, adv0, adv1", [
    # rhos = [2, 0.5], r = [1, 1], V = [0, 0], gamma 1, bootstrap 0.
    # rho_bar = c_bar = pg_rho_bar = 1: rho~ = [1, 0.5], c = [1, 0.5]
    #   vs_1 = 0.5 * 1 = 0.5; vs_0 = 1 * 1 + 1 * 1 * 0.5 = 1.5
    #   adv_1 = 0.5 * 1 = 0.5; adv_0 = 1 * (1 + 0.5) = 1.5
    (1.0, 1.0, 1.0, 1.5, 0.5, 1.5, 0.5),
    # rho_bar 1.5, c_bar 0.5, pg_rho_bar 1.2: rho~ = [1.5, 0.5], c = [0.5, 0.5]
    #   vs_1 = 0.5; vs_0 = 1.5 + 0.5 * 0.5 = 1.75; adv_0 = 1.2 * 1.5 = 1.8
    (1.5, 0.5, 1.2, 1.75, 0.5, 1.8, 0.5),
    # No clipping: vs_0 = 2 + 2 * 0.5 = 3; adv_0 = 2 * 1.5 = 3
    (None, None, None, 3.0, 0.5, 3.0, 0.5),
])
def test_ratio_clipping_by_hand(rho_bar, c_bar, pg_rho_bar, vs0, vs1, adv0, adv1):
    vs, adv = run(col(np.log([2.0, 0.5])), col([1.0, 1.0]), col([1.0, 1.0]), col([0.0, 0.0]),
                  f32([0.0]), clip_rho_threshold=rho_bar, clip_c_threshold=c_bar,
                  clip_pg_rho_threshold=pg_rho_bar)
    np.testing.assert_allclose(vs[:, 0], [vs0, vs1], rtol=1e-6)
    np.testing.assert_allclose(adv[:, 0], [adv0, adv1], rtol=1e-6)


def test_truncated_trajectory_bootstraps_terminated_does_not():
    # gamma 0.5, r = [1, 1], V = [2, 4], V(x_2) = 8.
    # Truncated at t=1 (discount stays 0.5): vs_1 = 1 + 0.5 * 8 = 5, vs_0 = 1 + 0.5 * 5 = 3.5
    vs, adv = run(col([0, 0]), col([0.5, 0.5]), col([1, 1]), col([2, 4]), f32([8.0]))
    np.testing.assert_allclose(vs[:, 0], [3.5, 5.0], rtol=1e-6)
    np.testing.assert_allclose(adv[:, 0], [1 + 0.5 * 5 - 2, 1 + 0.5 * 8 - 4], rtol=1e-6)
    # Terminated at t=1 (discount 0): the bootstrap is ignored: vs_1 = 1, vs_0 = 1.5
    vs, adv = run(col([0, 0]), col([0.5, 0.0]), col([1, 1]), col([2, 4]), f32([8.0]))
    np.testing.assert_allclose(vs[:, 0], [1.5, 1.0], rtol=1e-6)
    np.testing.assert_allclose(adv[:, 0], [1 + 0.5 * 1 - 2, 1 - 4], rtol=1e-6)


def test_terminated_step_in_the_middle_cuts_the_trace():
    # gamma 0.5, r = 1, terminated at t=1; V(x_2) = 100 (the next episode's first state)
    # must not reach t <= 1. Off-policy ratios 0.8 (no clipping, c = 0.8):
    #   vs_3 = 0.8 * (1 + 0.5 * 8) = 4;  vs_2 = 100 + 0.8 * (1 + 0.5 * 0 - 100)
    #        + 0.5 * 0.8 * (4 - 0) = 20.8 + 1.6 = 22.4
    #   vs_1 = 0 + 0.8 * (1 + 0 - 0) = 0.8 (nothing from t >= 2)
    #   vs_0 = 0.8 * 1 + 0.5 * 0.8 * 0.8 = 1.12
    log_rhos = col(np.log([0.8] * 4))
    vs, adv = run(log_rhos, col([0.5, 0.0, 0.5, 0.5]), col([1, 1, 1, 1]),
                  col([0, 0, 100, 0]), f32([8.0]))
    np.testing.assert_allclose(vs[:, 0], [1.12, 0.8, 22.4, 4.0], rtol=1e-5)
    # adv_1 = 0.8 * (1 + 0 * vs_2 - 0) = 0.8: no bootstrap across the end
    assert adv[1, 0] == pytest.approx(0.8, rel=1e-6)
    ref_vs, ref_adv = reference(np.log([0.8] * 4), [0.5, 0, 0.5, 0.5], [1] * 4,
                                [0, 0, 100, 0], 8.0)
    np.testing.assert_allclose(vs[:, 0], ref_vs, rtol=1e-5)
    np.testing.assert_allclose(adv[:, 0], ref_adv, rtol=1e-5)


@pytest.mark.parametrize("T, B", [(1, 1), (1, 3), (5, 1), (4, 2)])
def test_shapes_and_numpy_reference(T, B):
    rng = np.random.default_rng(T * 10 + B)
    log_rhos = rng.normal(scale=0.7, size=(T, B))
    discounts = 0.9 * (rng.random((T, B)) > 0.3)
    rewards, values = rng.normal(size=(T, B)), rng.normal(size=(T, B))
    bootstrap = rng.normal(size=B)
    for bars in [(1.0, 1.0, 1.0), (1.3, 0.9, 0.7), (None, None, None)]:
        vs, adv = run(f32(log_rhos), f32(discounts), f32(rewards), f32(values),
                      f32(bootstrap), clip_rho_threshold=bars[0],
                      clip_pg_rho_threshold=bars[1], clip_c_threshold=bars[2])
        assert vs.shape == adv.shape == (T, B)
        ref_vs, ref_adv = reference(log_rhos, discounts, rewards, values, bootstrap, *bars)
        np.testing.assert_allclose(vs, ref_vs, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(adv, ref_adv, rtol=1e-4, atol=1e-5)


def test_padded_steps_do_not_change_the_real_ones():
    # Column 0: 4 real steps; column 1: 2 real steps, then padding full of large numbers.
    rng = np.random.default_rng(3)
    log_rhos, rewards, values = (rng.normal(size=(4, 2)) for _ in range(3))
    discounts = np.full((4, 2), 0.9)
    mask = np.array([[True, True], [True, True], [True, False], [True, False]])
    for x in (log_rhos, rewards, values, discounts):
        x[~mask] = 1e3
    bootstrap = np.array([0.3, -0.7])
    vs, adv = run(f32(log_rhos), f32(discounts), f32(rewards), f32(values), f32(bootstrap),
                  mask=tf.constant(mask))
    ref0 = reference(log_rhos[:, 0], discounts[:, 0], rewards[:, 0], values[:, 0], 0.3)
    ref1 = reference(log_rhos[:2, 1], discounts[:2, 1], rewards[:2, 1], values[:2, 1], -0.7)
    np.testing.assert_allclose(vs[:, 0], ref0[0], rtol=1e-5)
    np.testing.assert_allclose(adv[:, 0], ref0[1], rtol=1e-5)
    np.testing.assert_allclose(vs[:2, 1], ref1[0], rtol=1e-5)
    np.testing.assert_allclose(adv[:2, 1], ref1[1], rtol=1e-5)
    np.testing.assert_allclose(adv[2:, 1], 0.0)
    np.testing.assert_allclose(vs[2:, 1], values[2:, 1], rtol=1e-6)
    # Padding holding inf or NaN (with no clipping to hide an inf ratio) does not leak.
    for fill in (np.inf, np.nan):
        for x in (log_rhos, rewards, discounts):
            x[~mask] = fill
        vs, adv = run(f32(log_rhos), f32(discounts), f32(rewards), f32(values),
                      f32(bootstrap), mask=tf.constant(mask), clip_rho_threshold=None,
                      clip_pg_rho_threshold=None, clip_c_threshold=None)
        ref1 = reference(log_rhos[:2, 1], discounts[:2, 1], rewards[:2, 1], values[:2, 1],
                         -0.7, None, None, None)
        np.testing.assert_allclose(vs[:2, 1], ref1[0], rtol=1e-5)
        np.testing.assert_allclose(adv[:, 1], list(ref1[1]) + [0.0, 0.0], rtol=1e-5)


def test_no_gradient_through_targets_and_compiles_for_any_length():
    values = tf.Variable(np.ones((3, 2), np.float32))
    log_rhos = tf.Variable(np.zeros((3, 2), np.float32))
    with tf.GradientTape() as tape:
        vs, adv = vtrace(log_rhos, f32(np.full((3, 2), 0.9)), f32(np.ones((3, 2))), values,
                         f32([0.0, 0.0]))
        total = tf.reduce_sum(vs) + tf.reduce_sum(adv)
    assert tape.gradient(total, [values, log_rhos]) == [None, None]

    spec = tf.TensorSpec([None, None], tf.float32)
    compiled = tf.function(
        lambda *args: vtrace(*args[:4], args[4]), autograph=False,
        input_signature=[spec] * 4 + [tf.TensorSpec([None], tf.float32)])
    for T, B in [(1, 1), (7, 3)]:
        args = [np.zeros((T, B)), np.full((T, B), 0.5), np.ones((T, B)), np.zeros((T, B))]
        vs, _ = compiled(*(f32(a) for a in args), f32(np.zeros(B)))
        # r = 1, gamma 0.5, bootstrap 0: vs_0 = sum_k 0.5^k over T steps
        np.testing.assert_allclose(vs.numpy()[0], [2 * (1 - 0.5 ** T)] * B, rtol=1e-6)


# ----------------------------------------------------------------- layout helpers

def test_layout_splits_at_episode_ends_and_bootstraps_a_mid_fragment_truncation():
    # Rows: episode 1 (3 steps, truncated at row 2: a time limit inside the fragment),
    # then episode 2 (2 steps, cut by the fragment's end). V(next state) of rows 2 and 4
    # is 7 and 9; the other rows' next values are never read.
    eps_id = tf.constant([1, 1, 1, 2, 2], tf.int64)
    terminateds = tf.constant([False] * 5)
    truncateds = tf.constant([False, False, True, False, False])
    starts = trajectory_starts(eps_id, terminateds, truncateds)
    assert starts.numpy().tolist() == [True, False, False, True, False]
    index = time_major_index(starts)
    assert index.mask.numpy().tolist() == [[True, True], [True, True], [True, False]]
    assert index.positions.numpy().tolist() == [[0, 0], [1, 0], [2, 0], [0, 1], [1, 1]]
    assert index.last_rows.numpy().tolist() == [2, 4]
    bootstrap = column_bootstrap_value(f32([-5, -5, 7, -5, 9]), terminateds, index)
    assert bootstrap.numpy().tolist() == [7.0, 9.0]

    rows = f32([1, 1, 1, 1, 1])
    tm = to_time_major(rows, index)
    assert tm.numpy().tolist() == [[1, 1], [1, 1], [1, 0]]
    zeros = tf.zeros_like(tm)
    vs, _ = vtrace(zeros, tf.fill(tf.shape(tm), 0.5), tm, zeros, bootstrap, mask=index.mask)
    # Episode 1: vs_2 = 1 + 0.5 * 7 = 4.5, vs_1 = 3.25, vs_0 = 2.625;
    # episode 2: vs_1 = 1 + 0.5 * 9 = 5.5, vs_0 = 3.75.
    np.testing.assert_allclose(from_time_major(vs, index).numpy(),
                               [2.625, 3.25, 4.5, 3.75, 5.5], rtol=1e-6)


def test_layout_splits_where_timesteps_do_not_follow():
    # One episode: rows for t = 5, 6 (a new fragment), then t = 3, 4 (an older,
    # replayed fragment of the same episode), no episode end in between.
    eps_id, no = tf.constant([7, 7, 7, 7]), tf.constant([False] * 4)
    t = tf.constant([5, 6, 3, 4])
    assert trajectory_starts(eps_id, no, no).numpy().tolist() == [True, False, False, False]
    assert trajectory_starts(eps_id, no, no, t).numpy().tolist() == [True, False, True, False]


def test_layout_of_terminated_rows_and_multi_dim_columns():
    # A terminated row ends its column (bootstrap 0); a new column starts after it
    # even within one episode id.
    index = time_major_index(trajectory_starts(
        tf.constant([4, 4, 4]), tf.constant([0, 1, 0]), tf.constant([0, 0, 0])))
    assert index.mask.numpy().tolist() == [[True, True], [True, False]]
    assert column_bootstrap_value(f32([1, 2, 3]), tf.constant([0, 1, 0]),
                                  index).numpy().tolist() == [0.0, 3.0]
    obs = f32(np.arange(6).reshape(3, 2))
    tm = to_time_major(obs, index)
    assert tm.shape == (2, 2, 2)
    np.testing.assert_array_equal(tm.numpy()[1, 1], [0, 0])  # padding
    np.testing.assert_array_equal(from_time_major(tm, index).numpy(), obs.numpy())


def test_fixed_layout_is_rllibs_reshape():
    index = time_major_index(fixed_starts(6, 3))
    tm = to_time_major(tf.range(6), index)
    np.testing.assert_array_equal(tm.numpy(), np.arange(6).reshape(2, 3).T)


def test_layout_of_padded_sequences():
    # Two sequences padded to 3 rows each: lengths 3 and 1 (rows 4, 5 are padding).
    index = padded_sequences_index(tf.constant([3, 1]), 3)
    tm = to_time_major(f32([1, 2, 3, 4, -9, -9]), index)
    assert tm.numpy().tolist() == [[1, 4], [2, -9], [3, -9]]
    assert index.mask.numpy().tolist() == [[True, True], [True, False], [True, False]]
    assert index.last_rows.numpy().tolist() == [2, 3]
    np.testing.assert_array_equal(from_time_major(tm, index).numpy(), [1, 2, 3, 4, -9, -9])


def test_drop_last_step():
    # Two columns of 3 and 2 real steps; column 1 ends terminated.
    values = f32([[1, 4], [2, 5], [3, 0]])
    terminateds = tf.constant([[False, False], [False, True], [False, False]])
    mask = tf.constant([[True, True], [True, True], [True, False]])
    bootstrap, new_mask = drop_last_step(values, terminateds, mask)
    assert bootstrap.numpy().tolist() == [3.0, 0.0]
    assert new_mask.numpy().tolist() == [[True, True], [True, True], [False, False]]


# --------------------------------------------------------------------------- errors

@pytest.mark.parametrize("args, kwargs, error, match", [
    ((f32([0.0]), col([1]), col([1]), col([1]), f32([0])), {}, ValueError,
     r"vtrace\(\): log_rhos must be time-major with rank 2 \(\[T, B\]\); received shape "
     r"\(1,\)"),
    ((col([0]), col([1]), tf.constant([[1]]), col([1]), f32([0])), {}, TypeError,
     r"vtrace\(\): rewards must be a float tensor; received dtype int32"),
    ((col([0]), col([1, 1]), col([1]), col([1]), f32([0])), {}, ValueError,
     r"vtrace\(\): discounts and log_rhos must have one dtype and shape"),
    ((col([0]), col([1]), col([1]), col([1]), f32([0, 0])), {}, ValueError,
     r"vtrace\(\): bootstrap_value must be \[B\] of log_rhos's dtype; received float32 "
     r"\(2,\)"),
    ((col([0]), col([1]), col([1]), col([1]), f32([0])), {"mask": f32([[1.0]])},
     ValueError, r"vtrace\(\): mask must be a bool tensor of log_rhos's shape"),
])
def test_bad_inputs_raise_clear_errors(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        vtrace(*args, **kwargs)


def test_rllib_vtrace_tf_path_is_tfrl_vtrace():
    """RLlib's module path re-exports tfrl's one implementation."""
    from tfrl.algorithms.impala import vtrace as tfrl_vtrace
    from tfrl.algorithms.impala import vtrace_tf
    assert vtrace_tf.from_importance_weights is tfrl_vtrace.from_importance_weights
    assert vtrace_tf.from_logits is tfrl_vtrace.from_logits
