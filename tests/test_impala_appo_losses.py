"""The IMPALA and APPO losses (pure functions of time-major tensors) against numbers
computed by hand. Every case is [T, B] = [2, 1] unless it says otherwise; the V-trace
targets are worked out next to it (see tests/test_vtrace.py for V-trace itself).
"""

import numpy as np
import pytest
import tensorflow as tf

from tfrl.algorithms.appo.appo_loss import appo_loss, appo_surrogate_loss
from tfrl.algorithms.impala.impala_loss import impala_loss


def f32(x):
    return tf.constant(np.asarray(x, np.float32))


def col(x):
    return f32(np.asarray(x, np.float32)[:, None])


# gamma 0.5, r = [1, 1], V = [1, 0.5], V(x_2) = 2. On-policy V-trace gives the n-step
# returns: vs_1 = 1 + 0.5 * 2 = 2, vs_0 = 1 + 0.5 * 2 = 2;
# pg_adv_t = r_t + 0.5 * vs_{t+1} - V_t: pg_adv_1 = 1 + 1 - 0.5 = 1.5, pg_adv_0 = 1 + 1 - 1 = 1.
# vf_t = 0.5 * (V - vs) ** 2 = [0.5, 1.125] -> vf_loss 0.8125.
REWARDS, DISCOUNTS, VALUES, BOOTSTRAP = [1.0, 1.0], [0.5, 0.5], [1.0, 0.5], [2.0]
LOGP = [-0.5, -1.0]
ENTROPY = [0.6, 0.4]
KL = [0.1, 0.3]


def impala(logp=LOGP, behaviour_logp=LOGP, mask=None, T_pad=0, **overrides):
    kwargs = dict(vf_loss_coeff=0.5, entropy_coeff=0.01, mask=mask)
    kwargs.update(overrides)
    pad = lambda x: col(list(x) + [1e3] * T_pad)  # noqa: E731
    return impala_loss(pad(logp), pad(behaviour_logp), pad(ENTROPY), pad(VALUES),
                       pad(REWARDS), pad(DISCOUNTS), f32(BOOTSTRAP), **kwargs)


# -------------------------------------------------------------------------- IMPALA

def test_impala_loss_on_policy_by_hand():
    loss, stats = impala()
    # pg_t = logp * pg_adv = [-0.5 * 1, -1 * 1.5] -> policy_loss 1.0; entropy 0.5
    assert float(stats["policy_loss"]) == pytest.approx(1.0, rel=1e-6)
    assert float(stats["vf_loss"]) == pytest.approx(0.8125, rel=1e-6)
    assert float(stats["entropy"]) == pytest.approx(0.5, rel=1e-6)
    assert float(loss) == pytest.approx(1.0 + 0.5 * 0.8125 - 0.01 * 0.5, rel=1e-6)
    # vs = [2, 2] has no variance: explained variance is clipped at -1.
    assert float(stats["vf_explained_var"]) == pytest.approx(-1.0)


def test_impala_loss_off_policy_clips_the_ratios():
    # pi / mu = 0.5 at both steps (rho~ = c = 0.5):
    #   vs_1 = 0.5 + 0.5 * (1 + 0.5 * 2 - 0.5) = 1.25
    #   vs_0 = 1 + 0.5 * (1 + 0.5 * 0.5 - 1) + 0.5 * 0.5 * (1.25 - 0.5) = 1.3125
    #   pg_adv_1 = 0.5 * 1.5 = 0.75, pg_adv_0 = 0.5 * (1 + 0.5 * 1.25 - 1) = 0.3125
    behaviour = np.asarray(LOGP) - np.log(0.5)
    loss, stats = impala(behaviour_logp=behaviour)
    pg = -(-0.5 * 0.3125 - 1.0 * 0.75) / 2
    vf = 0.5 * ((1 - 1.3125) ** 2 + (0.5 - 1.25) ** 2) / 2
    assert float(stats["policy_loss"]) == pytest.approx(pg, rel=1e-5)
    assert float(stats["vf_loss"]) == pytest.approx(vf, rel=1e-5)
    # pi / mu = 3 at both steps, rho_bar = pg_rho_bar = 1: on-policy numbers again.
    _, clipped = impala(behaviour_logp=np.asarray(LOGP) - np.log(3.0))
    assert float(clipped["policy_loss"]) == pytest.approx(1.0, rel=1e-5)
    # ...unless the clip is lifted: pg_adv = 3 * [1 + 0.5 * vs_1 - 1, ...] differs.
    _, unclipped = impala(behaviour_logp=np.asarray(LOGP) - np.log(3.0),
                          clip_rho_threshold=None, clip_pg_rho_threshold=None)
    assert float(unclipped["policy_loss"]) > 2.0


def test_impala_gradients_by_hand():
    logp, values = tf.Variable(col(LOGP)), tf.Variable(col(VALUES))
    with tf.GradientTape() as tape:
        loss, _ = impala_loss(logp, col(LOGP), col(ENTROPY), values, col(REWARDS),
                              col(DISCOUNTS), f32(BOOTSTRAP), vf_loss_coeff=0.5,
                              entropy_coeff=0.0)
    d_logp, d_values = tape.gradient(loss, [logp, values])
    # Only -logp * pg_adv / N depends on logp (V-trace's targets have no gradient):
    np.testing.assert_allclose(d_logp.numpy()[:, 0], [-1.0 / 2, -1.5 / 2], rtol=1e-6)
    # 0.5 * vf_coeff * (V - vs)^2 / N -> vf_coeff * (V - vs) / N = 0.5 * [-1, -1.5] / 2
    np.testing.assert_allclose(d_values.numpy()[:, 0], [-0.25, -0.375], rtol=1e-6)


def test_impala_padded_steps_contribute_nothing():
    mask = tf.constant([[True], [True], [False]])
    loss, stats = impala(mask=mask, T_pad=1)
    ref_loss, ref_stats = impala()
    assert float(loss) == pytest.approx(float(ref_loss), rel=1e-6)
    for key in ref_stats:
        assert float(stats[key]) == pytest.approx(float(ref_stats[key]), rel=1e-6), key


def test_impala_loss_takes_the_entropy_coefficient_from_a_variable():
    coeff = tf.Variable(0.01)
    loss, _ = impala(entropy_coeff=coeff)
    coeff.assign(0.0)
    loss_zero, _ = impala(entropy_coeff=coeff)
    assert float(loss_zero) - float(loss) == pytest.approx(0.01 * 0.5, rel=1e-4)


# ---------------------------------------------------------------------------- APPO

def test_appo_surrogate_by_hand():
    # Four steps, target == behaviour (is_ratio 1), clip_param 0.2 (PPO's numbers):
    #   ratio [1, 1.5, 0.5, 1.1], A [1, 2, -1, -3] -> surrogate [1, 2.4, -0.8, -3.3]
    # plus two steps where is_ratio = mu / pi_target matters:
    #   mu/pi_t = 3 -> clipped to 2, pi/mu = 0.5 -> ratio 1.0, A = 1 -> surrogate 1
    #   mu/pi_t = 0.5,              pi/mu = 3   -> ratio 1.5, A = 2 -> min(3, 2.4) = 2.4
    behaviour = np.array([-0.7, -1.2, -0.3, -2.0, -1.0, -1.0], np.float32)
    target = behaviour - np.log([1, 1, 1, 1, 3.0, 0.5]).astype(np.float32)
    logp = behaviour + np.log([1.0, 1.5, 0.5, 1.1, 0.5, 3.0]).astype(np.float32)
    adv = f32([1.0, 2.0, -1.0, -3.0, 1.0, 2.0])
    surrogate = np.array([1.0, 2.4, -0.8, -3.3, 1.0, 2.4])
    values, targets = f32([0, 1, 0, 0, 0, 0]), f32([1, 1, 0, 2, 0, 0])  # vf_t 0.5*[1,0,0,4,0,0]
    entropy, kl = f32([0.5] * 6), f32([0.1, 0.2, 0.3, 0.0, 0.0, 0.6])
    for use_kl_loss in (True, False):
        loss, stats = appo_surrogate_loss(
            f32(logp), f32(behaviour), f32(target), adv, entropy, kl, values, targets,
            clip_param=0.2, vf_loss_coeff=0.5, entropy_coeff=0.1, kl_coeff=2.0,
            use_kl_loss=use_kl_loss)
        expected = (-surrogate.mean() + 0.5 * (2.5 / 6) - 0.1 * 0.5
                    + (2.0 * 0.2 if use_kl_loss else 0.0))
        assert float(loss) == pytest.approx(expected, rel=1e-5)
        assert float(stats["policy_loss"]) == pytest.approx(-surrogate.mean(), rel=1e-5)
        assert float(stats["vf_loss"]) == pytest.approx(2.5 / 6, rel=1e-5)
        assert float(stats["kl"]) == pytest.approx(0.2, rel=1e-5)  # reported either way
        assert float(stats["entropy"]) == pytest.approx(0.5, rel=1e-6)
        assert float(stats["clip_fraction"]) == pytest.approx(3 / 6)  # 1.5, 0.5, 1.5


@pytest.mark.parametrize("use_kl_loss", [True, False])
def test_appo_loss_with_vtrace_on_the_target_network_by_hand(use_kl_loss):
    # target == behaviour: V-trace is on-policy: vs = [2, 2], pg_adv = [1, 1.5].
    # pi / mu = [1.1, 1.5], clip 0.2: surrogate [1.1 * 1, min(1.5 * 1.5, 1.2 * 1.5)]
    #   = [1.1, 1.8] -> policy_loss -1.45; vf_loss 0.8125; entropy 0.5; kl 0.2
    behaviour = np.asarray(LOGP) - np.log([1.1, 1.5])

    def loss_with(target_logp):
        return appo_loss(col(LOGP), col(behaviour), col(target_logp), col(ENTROPY), col(KL),
                         col(VALUES), col(REWARDS), col(DISCOUNTS), f32(BOOTSTRAP),
                         clip_param=0.2, vf_loss_coeff=0.5, entropy_coeff=0.01, kl_coeff=1.0,
                         use_kl_loss=use_kl_loss)

    loss, stats = loss_with(behaviour)
    assert float(stats["policy_loss"]) == pytest.approx(-1.45, rel=1e-5)
    assert float(stats["vf_loss"]) == pytest.approx(0.8125, rel=1e-5)
    assert float(loss) == pytest.approx(
        -1.45 + 0.5 * 0.8125 - 0.01 * 0.5 + (0.2 if use_kl_loss else 0.0), rel=1e-5)
    # pi_target / mu = 0.5: V-trace as in test_impala_loss_off_policy_clips_the_ratios
    # (vs = [1.3125, 1.25], pg_adv = [0.3125, 0.75]); is_ratio = mu / pi_target = 2,
    # so ratio = 2 * pi / mu = [2.2, 3] -> clipped to 1.2 (A > 0):
    # surrogate = 1.2 * [0.3125, 0.75]
    _, off = loss_with(behaviour + np.log(0.5))
    assert float(off["policy_loss"]) == pytest.approx(-1.2 * (0.3125 + 0.75) / 2, rel=1e-5)
    assert float(off["vf_loss"]) == pytest.approx(
        0.5 * ((1 - 1.3125) ** 2 + (0.5 - 1.25) ** 2) / 2, rel=1e-5)


def test_appo_padded_steps_contribute_nothing():
    def padded(x, pad):
        return col(list(x) + [pad])

    kwargs = dict(clip_param=0.2, vf_loss_coeff=0.5, entropy_coeff=0.01, kl_coeff=1.0,
                  use_kl_loss=True)
    args = [LOGP, LOGP, LOGP, ENTROPY, KL, VALUES, REWARDS, DISCOUNTS]
    loss, stats = appo_loss(*(padded(a, 50.0) for a in args), f32(BOOTSTRAP),
                            mask=tf.constant([[True], [True], [False]]), **kwargs)
    ref_loss, ref_stats = appo_loss(*(col(a) for a in args), f32(BOOTSTRAP), **kwargs)
    assert float(loss) == pytest.approx(float(ref_loss), rel=1e-6)
    for key in ref_stats:
        assert float(stats[key]) == pytest.approx(float(ref_stats[key]), rel=1e-6), key


# --------------------------------------------------------------------------- errors

@pytest.mark.parametrize("call, error, match", [
    (lambda: impala_loss(f32(LOGP), f32(LOGP), f32(ENTROPY), f32(VALUES), f32(REWARDS),
                         f32(DISCOUNTS), f32(BOOTSTRAP), vf_loss_coeff=0.5,
                         entropy_coeff=0.0), ValueError,
     r"impala_loss\(\): logp_t must be time-major with rank 2 \(\[T, B\]\)"),
    (lambda: impala_loss(col(LOGP), col(LOGP), col(ENTROPY), col(VALUES), col(REWARDS),
                         col(DISCOUNTS), f32([1.0, 2.0]), vf_loss_coeff=0.5,
                         entropy_coeff=0.0), ValueError,
     r"impala_loss\(\): bootstrap_value must be \[B\]"),
    (lambda: appo_loss(col(LOGP), col(LOGP), col(LOGP), col(ENTROPY), col(KL), col(VALUES),
                       col(REWARDS), tf.constant([[1], [1]]), f32(BOOTSTRAP),
                       clip_param=0.2, vf_loss_coeff=0.5, entropy_coeff=0.0, kl_coeff=0.0,
                       use_kl_loss=False), TypeError,
     r"appo_loss\(\): discounts_t must be a float tensor; received dtype int32"),
    (lambda: appo_surrogate_loss(f32([1.0]), f32([1.0]), f32([1.0, 2.0]), f32([1.0]),
                                 f32([1.0]), f32([1.0]), f32([1.0]), f32([1.0]),
                                 clip_param=0.2, vf_loss_coeff=0.5, entropy_coeff=0.0,
                                 kl_coeff=0.0, use_kl_loss=False), ValueError,
     r"appo_surrogate_loss\(\): target_logp_t and logp_t must have one dtype and shape"),
])
def test_bad_inputs_raise_clear_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_losses_compile_for_any_time_major_shape():
    # As the train step runs them: traced once (autograph on) for unknown [T, B].
    spec, boot = tf.TensorSpec([None, None], tf.float32), tf.TensorSpec([None], tf.float32)

    @tf.function(input_signature=[spec] * 5 + [boot])
    def both(logp, entropy, values, rewards, discounts, bootstrap):
        impala, _ = impala_loss(logp, logp, entropy, values, rewards, discounts, bootstrap,
                                vf_loss_coeff=0.5, entropy_coeff=0.01)
        appo, _ = appo_loss(logp, logp, logp, entropy, entropy, values, rewards, discounts,
                            bootstrap, clip_param=0.2, vf_loss_coeff=0.5,
                            entropy_coeff=0.01, kl_coeff=1.0, use_kl_loss=False)
        return impala, appo

    impala, appo = both(col(LOGP), col(ENTROPY), col(VALUES), col(REWARDS), col(DISCOUNTS),
                        f32(BOOTSTRAP))
    assert float(impala) == pytest.approx(1.0 + 0.5 * 0.8125 - 0.01 * 0.5, rel=1e-6)
    # APPO on-policy (ratio 1): surrogate = pg_adv = [1, 1.5] -> policy_loss -1.25
    assert float(appo) == pytest.approx(-1.25 + 0.5 * 0.8125 - 0.01 * 0.5, rel=1e-6)
    impala, _ = both(*(f32(np.zeros((3, 4))) for _ in range(5)), f32(np.zeros(4)))
    assert float(impala) == 0.0
