"""The pure losses (ppo_loss, pg_loss, a2c_loss) against numbers computed by hand.

Small float32 arrays; each case says which branch it exercises (clipping active or not,
value clipping, the KL term on or off, the entropy bonus, padded steps masked out). The
expected values are written out or computed in numpy next to the case.
"""

import numpy as np
import pytest
import tensorflow as tf

from policy_helpers import strategy_named
from tfrl.algorithms.a2c.a2c_loss import a2c_loss
from tfrl.algorithms.loss_math import explained_variance
from tfrl.algorithms.pg.pg_loss import pg_loss
from tfrl.algorithms.ppo.ppo_loss import clipped_surrogate, clipped_value_loss, ppo_loss


def f32(x):
    return tf.constant(np.asarray(x, np.float32))


# --------------------------------------------------------------------------- PPO

# Four steps, clip_param 0.2:
#   t=0  ratio 1.0, A= 1: inside the clip range           -> surrogate  1.0
#   t=1  ratio 1.5, A= 2: clipped to 1.2 (A > 0)          -> surrogate  2.4
#   t=2  ratio 0.5, A=-1: clipped to 0.8 (A < 0)          -> surrogate -0.8
#   t=3  ratio 1.1, A=-3: inside the clip range           -> surrogate -3.3
RATIO = np.array([1.0, 1.5, 0.5, 1.1], np.float32)
ADV = np.array([1.0, 2.0, -1.0, -3.0], np.float32)
BEHAVIOUR_LOGP = np.array([-0.7, -1.2, -0.3, -2.0], np.float32)
LOGP = np.log(RATIO) + BEHAVIOUR_LOGP
SURROGATE = np.array([1.0, 2.4, -0.8, -3.3], np.float32)
KL = np.array([0.1, 0.2, 0.0, 0.3], np.float32)
ENTROPY = np.array([0.5, 0.6, 0.7, 0.8], np.float32)
# Value clipping, vf_clip_param 0.5:
#   t=0  V 1, V_old 1,   R 0: clipped V = 1             -> max(1, 1)       = 1
#   t=1  V 2, V_old 1,   R 3: clipped V = 1.5           -> max(1, 2.25)    = 2.25
#   t=2  V 0, V_old 0.5, R 0: clipped V = 0             -> max(0, 0)       = 0
#   t=3  V -1, V_old 0,  R 0: clipped V = -0.5          -> max(1, 0.25)    = 1
VALUES = np.array([1.0, 2.0, 0.0, -1.0], np.float32)
OLD_VALUES = np.array([1.0, 1.0, 0.5, 0.0], np.float32)
TARGETS = np.array([0.0, 3.0, 0.0, 0.0], np.float32)
VF_LOSS = np.array([1.0, 2.25, 0.0, 1.0], np.float32)


def ppo(mask=None, **overrides):
    kwargs = dict(clip_param=0.2, vf_clip_param=0.5, vf_loss_coeff=0.5, kl_coeff=0.3,
                  entropy_coeff=0.01, use_kl_loss=True, mask=mask)
    kwargs.update(overrides)
    return ppo_loss(f32(LOGP), f32(BEHAVIOUR_LOGP), f32(ADV), f32(KL), f32(ENTROPY),
                    f32(VALUES), f32(OLD_VALUES), f32(TARGETS), **kwargs)


def test_clipped_surrogate_by_hand():
    got = clipped_surrogate(f32(RATIO), f32(ADV), 0.2).numpy()
    np.testing.assert_allclose(got, SURROGATE, rtol=1e-6)
    # A negative advantage with a ratio above 1 + eps: clipping would raise the
    # objective, so the pessimistic minimum keeps the unclipped -1.5.
    assert clipped_surrogate(f32([1.5]), f32([-1.0]), 0.2).numpy() == pytest.approx([-1.5])


def test_clipped_value_loss_by_hand():
    got = clipped_value_loss(f32(VALUES), f32(OLD_VALUES), f32(TARGETS), 0.5).numpy()
    np.testing.assert_allclose(got, VF_LOSS, rtol=1e-6)


@pytest.mark.parametrize("kl_coeff, use_kl_loss, entropy_coeff", [
    (0.3, True, 0.01),   # every term
    (0.0, False, 0.01),  # kl_coeff 0: no KL term
    (0.3, False, 0.0),   # KL term off although the coefficient is not 0; no entropy bonus
    (0.5, True, 0.2),    # larger coefficients
])
def test_ppo_loss_by_hand(kl_coeff, use_kl_loss, entropy_coeff):
    loss, stats = ppo(kl_coeff=kl_coeff, use_kl_loss=use_kl_loss, entropy_coeff=entropy_coeff)
    kl_term = kl_coeff * KL if use_kl_loss else 0.0
    expected = np.mean(-SURROGATE + kl_term + 0.5 * VF_LOSS - entropy_coeff * ENTROPY)
    assert float(loss) == pytest.approx(expected, rel=1e-6)
    assert float(stats["policy_loss"]) == pytest.approx(0.175, rel=1e-5)  # -(1+2.4-0.8-3.3)/4
    assert float(stats["vf_loss"]) == pytest.approx(1.0625, rel=1e-6)  # (1+2.25+0+1)/4
    assert float(stats["kl"]) == pytest.approx(0.15, rel=1e-6)  # reported either way
    assert float(stats["entropy"]) == pytest.approx(0.65, rel=1e-6)
    assert float(stats["clip_fraction"]) == pytest.approx(0.5)  # t=1 and t=2
    # 1 - Var[R - V] / Var[R], R = [0, 3, 0, 0], R - V = [-1, 1, 0, 1]
    expected_ev = 1.0 - np.var([-1.0, 1.0, 0.0, 1.0]) / np.var([0.0, 3.0, 0.0, 0.0])
    assert float(stats["vf_explained_var"]) == pytest.approx(expected_ev, rel=1e-5)


def test_ppo_loss_takes_coefficients_from_variables():
    kl_coeff, entropy_coeff = tf.Variable(0.3), tf.Variable(0.01)
    loss, _ = ppo(kl_coeff=kl_coeff, entropy_coeff=entropy_coeff)
    kl_coeff.assign(0.0)
    entropy_coeff.assign(0.0)
    loss_zero, _ = ppo(kl_coeff=kl_coeff, entropy_coeff=entropy_coeff)
    assert float(loss) - float(loss_zero) == pytest.approx(
        np.mean(0.3 * KL - 0.01 * ENTROPY), rel=1e-5)


def test_ppo_loss_without_value_function():
    loss, stats = ppo_loss(f32(LOGP), f32(BEHAVIOUR_LOGP), f32(ADV), f32(KL), f32(ENTROPY),
                           clip_param=0.2, vf_clip_param=0.5, vf_loss_coeff=0.5, kl_coeff=0.3,
                           entropy_coeff=0.01)
    assert float(loss) == pytest.approx(np.mean(-SURROGATE + 0.3 * KL - 0.01 * ENTROPY),
                                        rel=1e-6)
    assert sorted(stats) == ["clip_fraction", "entropy", "kl", "policy_loss"]


def test_ppo_gradient_is_zero_where_the_clip_is_active():
    logp = tf.Variable(LOGP)
    with tf.GradientTape() as tape:
        loss, _ = ppo_loss(logp, f32(BEHAVIOUR_LOGP), f32(ADV), f32(KL), f32(ENTROPY),
                           clip_param=0.2, vf_clip_param=0.5, vf_loss_coeff=0.5,
                           kl_coeff=0.0, entropy_coeff=0.0, use_kl_loss=False)
    grad = tape.gradient(loss, logp).numpy()
    # d(-mean(A * ratio))/d logp = -A * ratio / B where unclipped, 0 where clipped.
    expected = np.array([-1.0 * 1.0, 0.0, 0.0, 3.0 * 1.1], np.float32) / 4
    np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-7)


def test_ppo_loss_masks_padded_steps():
    # Two sequences of length 3 ([B, T] = [2, 3]), 2 and 1 real steps. The real steps
    # hold t=0, t=1 and t=3 of the rows above; the padding holds large numbers.
    mask = np.array([[True, True, False], [True, False, False]])
    index = np.array([[0, 1, -1], [3, -1, -1]])

    def padded(x):
        out = np.full((2, 3), 1e3, np.float32)
        out[mask] = x[index[mask]]
        return f32(out)

    loss, stats = ppo_loss(
        padded(LOGP), padded(BEHAVIOUR_LOGP), padded(ADV), padded(KL), padded(ENTROPY),
        padded(VALUES), padded(OLD_VALUES), padded(TARGETS), clip_param=0.2,
        vf_clip_param=0.5, vf_loss_coeff=0.5, kl_coeff=0.3, entropy_coeff=0.01,
        mask=tf.constant(mask))
    real = [0, 1, 3]
    per_step = -SURROGATE + 0.3 * KL + 0.5 * VF_LOSS - 0.01 * ENTROPY
    assert float(loss) == pytest.approx(per_step[real].mean(), rel=1e-6)
    assert float(stats["policy_loss"]) == pytest.approx(-(1.0 + 2.4 - 3.3) / 3, rel=1e-5)
    assert float(stats["vf_loss"]) == pytest.approx((1.0 + 2.25 + 1.0) / 3, rel=1e-6)
    assert float(stats["clip_fraction"]) == pytest.approx(1 / 3)
    errors, targets = TARGETS[real] - VALUES[real], TARGETS[real]
    assert float(stats["vf_explained_var"]) == pytest.approx(
        1.0 - errors.var() / targets.var(), rel=1e-5)


def test_loss_is_each_replicas_share_of_the_global_mean():
    # Replica 0 holds 2 real steps, replica 1 holds 1: the shares sum to the mean over
    # all 3 real steps (as the optimizer sums the replicas' gradients).
    strategy = strategy_named("mirrored")
    logp = [np.array([[-0.5, -1.0]], np.float32), np.array([[-2.0, 7.0]], np.float32)]
    adv = [np.array([[1.0, -1.0]], np.float32), np.array([[2.0, 9.0]], np.float32)]
    masks = [np.array([[True, True]]), np.array([[True, False]])]

    def per_replica(values):
        return strategy.experimental_distribute_values_from_function(
            lambda context: tf.constant(values[context.replica_id_in_sync_group]))

    def step(logp_t, adv_t, mask):
        return pg_loss(logp_t, adv_t, mask=mask)

    losses, stats = strategy.run(step, args=(per_replica(logp), per_replica(adv),
                                             per_replica(masks)))
    total = float(strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None))
    assert total == pytest.approx(-(-0.5 + 1.0 - 4.0) / 3, rel=1e-6)
    # The stats are each replica's own mean.
    local = [float(v) for v in strategy.experimental_local_results(stats["policy_loss"])]
    assert local == pytest.approx([-(-0.5 + 1.0) / 2, 4.0], rel=1e-6)


# ----------------------------------------------------------------------- PG, A2C

def test_pg_loss_by_hand():
    loss, stats = pg_loss(f32([-0.5, -1.0, -2.0]), f32([1.0, -1.0, 2.0]))
    # -mean([-0.5, 1.0, -4.0]) = 3.5 / 3
    assert float(loss) == pytest.approx(3.5 / 3, rel=1e-6)
    assert float(stats["policy_loss"]) == pytest.approx(3.5 / 3, rel=1e-6)
    masked, _ = pg_loss(f32([[-0.5, -1.0], [-2.0, 5.0]]), f32([[1.0, -1.0], [2.0, 5.0]]),
                        mask=tf.constant([[True, True], [True, False]]))
    assert float(masked) == pytest.approx(3.5 / 3, rel=1e-6)


def test_a2c_loss_by_hand():
    logp, adv = [-0.5, -1.0, -2.0], [1.0, -1.0, 2.0]
    values, targets, entropy = [0.0, 1.0, 2.0], [1.0, 1.0, 0.0], [0.6, 0.3, 0.9]
    loss, stats = a2c_loss(f32(logp), f32(adv), f32(values), f32(targets), f32(entropy),
                           vf_loss_coeff=0.5, entropy_coeff=0.1)
    # policy 3.5/3; value 0.5 * mean([1, 0, 4]) = 5/6; entropy mean 0.6
    assert float(loss) == pytest.approx(3.5 / 3 + 0.5 * 5 / 6 - 0.1 * 0.6, rel=1e-6)
    assert float(stats["policy_loss"]) == pytest.approx(3.5 / 3, rel=1e-6)
    assert float(stats["vf_loss"]) == pytest.approx(5 / 6, rel=1e-6)
    assert float(stats["entropy"]) == pytest.approx(0.6, rel=1e-6)
    # 1 - Var[[1, 0, -2]] / Var[[1, 1, 0]] = 1 - (14/9) / (2/9) = -6, clipped to -1
    assert float(stats["vf_explained_var"]) == pytest.approx(-1.0)
    masked, _ = a2c_loss(*(f32(np.stack([x, [9.0] * 3])) for x in (
        logp, adv, values, targets, entropy)), vf_loss_coeff=0.5, entropy_coeff=0.1,
        mask=tf.constant([[True] * 3, [False] * 3]))
    assert float(masked) == pytest.approx(float(loss), rel=1e-6)


def test_explained_variance_by_hand():
    y, pred = f32([1.0, 2.0, 3.0, 4.0]), f32([1.0, 2.0, 3.0, 3.0])
    # 1 - Var[[0, 0, 0, 1]] / Var[[1, 2, 3, 4]] = 1 - 0.1875 / 1.25
    assert float(explained_variance(y, pred)) == pytest.approx(0.85, rel=1e-6)
    assert float(explained_variance(y, y)) == pytest.approx(1.0)


# --------------------------------------------------------------------------- errors

@pytest.mark.parametrize("call, error, match", [
    (lambda: pg_loss(tf.constant([1, 2]), f32([1.0, 2.0])), TypeError,
     r"pg_loss\(\): logp_t must be a float tensor; received dtype int32"),
    (lambda: pg_loss(f32(np.zeros((2, 2, 2))), f32(np.zeros((2, 2, 2)))), ValueError,
     r"pg_loss\(\): logp_t must have rank 1 \(\[B\]\) or 2 \(\[B, T\]\); received shape "
     r"\(2, 2, 2\)"),
    (lambda: pg_loss(f32([1.0, 2.0]), f32([1.0, 2.0, 3.0])), ValueError,
     r"pg_loss\(\): advantages_t and logp_t must have one dtype and shape; received "
     r"advantages_t: float32 \(3,\), logp_t: float32 \(2,\)"),
    (lambda: pg_loss(f32([1.0]), f32([1.0]), mask=f32([1.0])), TypeError,
     r"pg_loss\(\): mask must be a bool tensor .*received dtype float32"),
    (lambda: pg_loss(f32([[1.0]]), f32([[1.0]]), mask=tf.constant([True])), ValueError,
     r"pg_loss\(\): mask must have the shape of logp_t; received mask \(1,\), logp_t \(1, 1\)"),
    (lambda: a2c_loss(f32([1.0]), f32([1.0]), f32([1.0]), tf.constant([1.0], tf.float64),
                      f32([1.0]), vf_loss_coeff=1.0, entropy_coeff=0.0), ValueError,
     r"a2c_loss\(\): value_targets_t and logp_t must have one dtype and shape"),
    (lambda: ppo_loss(f32(LOGP), f32(BEHAVIOUR_LOGP), tf.constant([1, 2, 3, 4]), f32(KL),
                      f32(ENTROPY), clip_param=0.2, vf_clip_param=0.5, vf_loss_coeff=0.5,
                      kl_coeff=0.3, entropy_coeff=0.0), TypeError,
     r"ppo_loss\(\): advantages_t must be a float tensor; received dtype int32"),
    (lambda: ppo_loss(f32(LOGP), f32(BEHAVIOUR_LOGP), f32(ADV), f32(KL), f32(ENTROPY),
                      f32(VALUES), clip_param=0.2, vf_clip_param=0.5, vf_loss_coeff=0.5,
                      kl_coeff=0.3, entropy_coeff=0.0), ValueError,
     r"ppo_loss\(\): values_t needs behaviour_values_t and value_targets_t"),
])
def test_bad_inputs_raise_clear_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
