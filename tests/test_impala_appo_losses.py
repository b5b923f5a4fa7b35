"""The IMPALA and APPO losses (pure functions of time-major tensors) against numbers
computed by hand. Every case is [T, B] = [2, 1] unless it says otherwise; the V-trace
targets are worked out next to it (see tests/test_vtrace.py for V-trace itself).
"""

import numpy as np
import pytest
import tensorflow as tf

from tfrl.algorithms.appo.appo_loss import appo_loss, appo_surrogate_loss
from tfrl.algorithms.impala.impala_loss import impala_loss
from tfrl.algorithms.impala.vtrace import sequence_vtrace


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


# ------------------------------------------------ two padded sequences (recurrent)
#
# A recurrent policy's batch: sequence A of 3 real steps (cut, bootstrapped from 2) and
# sequence B of 1 step (terminated), padded to T = 3; time-major, column 0 is A, column 1
# is B. gamma 0.5, on-policy (pi == mu):
#   A: r = [1, 2, 1], V = [1, .5, .5]: vs_2 = 1 + .5 * 2 = 2, vs_1 = 2 + .5 * 2 = 3,
#      vs_0 = 1 + .5 * 3 = 2.5; pg_adv_t = r_t + .5 * vs_{t+1} - V_t = [1.5, 2.5, 1.5]
#   B: r = [3], V = [1], terminated: vs = 3, pg_adv = 2
# vf_t = 0.5 * (V - vs)^2 = [1.125, 3.125, 1.125 | 2] -> vf_loss 7.375 / 4 = 1.84375.
SEQ_LENS = [3, 1]
SEQ = {"rewards": [[1.0, 2.0, 1.0], [3.0]], "values": [[1.0, 0.5, 0.5], [1.0]],
       "discounts": [[0.5, 0.5, 0.5], [0.0]], "logp": [[-0.5, -1.0, -0.2], [-0.4]],
       "entropy": [[0.6, 0.4, 0.2], [1.0]], "kl": [[0.1, 0.2, 0.3], [0.4]]}
SEQ_BOOTSTRAP = [2.0, 0.0]
# Padding garbage per column (finite, far from the real numbers; ratios stay finite).
GARBAGE = {"rewards": -1e3, "values": 1e3, "discounts": 7.0, "logp": 3.0,
           "behaviour": -2.0, "entropy": 50.0, "kl": 9.0}


def seq_tm(key, T=3, values=None):
    """`[T, 2]` time-major: the two sequences padded with `GARBAGE[key]` to T steps."""
    columns = values if values is not None else SEQ[key]
    pad = GARBAGE["logp" if key == "target" else key]
    return f32(np.stack([list(c) + [pad] * (T - len(c)) for c in columns], axis=1))


def seq_mask(T=3):
    return tf.transpose(tf.sequence_mask(SEQ_LENS, T))


def behaviour_of(logp, ratios):
    """`log mu` such that `pi / mu` are `ratios` (per sequence)."""
    return [list(np.asarray(l) - np.log(r)) for l, r in zip(logp, ratios)]


def impala_on_sequences(T=3, variables=None):
    logp = variables[0] if variables else seq_tm("logp", T)
    values = variables[1] if variables else seq_tm("values", T)
    return impala_loss(logp, seq_tm("behaviour", T, SEQ["logp"]), seq_tm("entropy", T),
                       values, seq_tm("rewards", T), seq_tm("discounts", T),
                       f32(SEQ_BOOTSTRAP), vf_loss_coeff=0.5, entropy_coeff=0.01,
                       mask=seq_mask(T))


def test_impala_loss_on_two_padded_sequences_by_hand():
    loss, stats = impala_on_sequences()
    # policy_loss = -mean(logp * pg_adv) = (.5 * 1.5 + 1 * 2.5 + .2 * 1.5 + .4 * 2) / 4
    assert float(stats["policy_loss"]) == pytest.approx(4.35 / 4, rel=1e-6)
    assert float(stats["vf_loss"]) == pytest.approx(1.84375, rel=1e-6)
    assert float(stats["entropy"]) == pytest.approx(0.55, rel=1e-6)
    assert float(loss) == pytest.approx(4.35 / 4 + 0.5 * 1.84375 - 0.01 * 0.55, rel=1e-6)


def test_impala_padded_sequence_steps_change_neither_loss_nor_gradients():
    def run(T):
        variables = [tf.Variable(seq_tm("logp", T)), tf.Variable(seq_tm("values", T))]
        with tf.GradientTape() as tape:
            loss, stats = impala_on_sequences(T, variables)
        return loss, stats, [g.numpy()[:3] for g in tape.gradient(loss, variables)]

    loss, stats, grads = run(3)
    # d loss / d logp = -pg_adv / 4 at real steps, 0 at B's padding.
    np.testing.assert_allclose(grads[0], [[-1.5 / 4, -2 / 4], [-2.5 / 4, 0], [-1.5 / 4, 0]],
                               rtol=1e-6)
    # d loss / d V = vf_coeff * (V - vs) / 4.
    np.testing.assert_allclose(grads[1], 0.5 * np.array([[-1.5, -2], [-2.5, 0], [-1.5, 0]]) / 4,
                               rtol=1e-6)
    for T in (4, 7):  # garbage rows appended to both sequences
        loss_t, stats_t, grads_t = run(T)
        assert float(loss_t) == pytest.approx(float(loss), rel=1e-6)
        for key in stats:
            assert float(stats_t[key]) == pytest.approx(float(stats[key]), rel=1e-6), key
        for got, want in zip(grads_t, grads):
            np.testing.assert_allclose(got, want, rtol=1e-6)


def appo_on_sequences(T=3, logp=None):
    # target == behaviour (V-trace on-policy: the numbers above); pi / mu = [1.1, 1.5, 1
    # | 0.5], clip 0.2: surrogate = [1.1 * 1.5, min(1.5 * 2.5, 1.2 * 2.5), 1.5
    # | min(.5 * 2, .8 * 2)] = [1.65, 3, 1.5 | 1] -> policy_loss -7.15 / 4.
    behaviour = behaviour_of(SEQ["logp"], [[1.1, 1.5, 1.0], [0.5]])
    return appo_loss(logp if logp is not None else seq_tm("logp", T),
                     seq_tm("behaviour", T, behaviour), seq_tm("target", T, behaviour),
                     seq_tm("entropy", T), seq_tm("kl", T), seq_tm("values", T),
                     seq_tm("rewards", T), seq_tm("discounts", T), f32(SEQ_BOOTSTRAP),
                     clip_param=0.2, vf_loss_coeff=0.5, entropy_coeff=0.01, kl_coeff=1.0,
                     use_kl_loss=True, mask=seq_mask(T))


def test_appo_loss_on_two_padded_sequences_by_hand():
    loss, stats = appo_on_sequences()
    assert float(stats["policy_loss"]) == pytest.approx(-7.15 / 4, rel=1e-5)
    assert float(stats["vf_loss"]) == pytest.approx(1.84375, rel=1e-5)
    assert float(stats["kl"]) == pytest.approx(0.25, rel=1e-5)
    assert float(stats["entropy"]) == pytest.approx(0.55, rel=1e-5)
    assert float(stats["clip_fraction"]) == pytest.approx(0.5)  # 1.5 and 0.5
    assert float(loss) == pytest.approx(
        -7.15 / 4 + 0.5 * 1.84375 - 0.01 * 0.55 + 0.25, rel=1e-5)


def test_appo_padded_sequence_steps_change_neither_loss_nor_gradients():
    def run(T):
        logp = tf.Variable(seq_tm("logp", T))
        with tf.GradientTape() as tape:
            loss, stats = appo_on_sequences(T, logp)
        return loss, stats, tape.gradient(loss, logp).numpy()[:3]

    loss, stats, grad = run(3)
    # Unclipped steps: d(-ratio * A / 4) / d logp = -ratio * A / 4; clipped ones: 0.
    np.testing.assert_allclose(grad, -np.array([[1.65, 1.0], [0.0, 0.0], [1.5, 0.0]]) / 4,
                               rtol=1e-5)
    for T in (4, 7):
        loss_t, stats_t, grad_t = run(T)
        assert float(loss_t) == pytest.approx(float(loss), rel=1e-6)
        for key in stats:
            assert float(stats_t[key]) == pytest.approx(float(stats[key]), rel=1e-6), key
        np.testing.assert_allclose(grad_t, grad, rtol=1e-6)


def test_sequence_vtrace_takes_the_batch_major_sequences_by_hand():
    # The loss's layout: [B, T] (a row per sequence), transposed inside.
    def bm(key, values=None):
        return tf.transpose(seq_tm(key, 3, values))

    kwargs = dict(terminateds=tf.constant([[False] * 3, [True, False, False]]))
    vs, pg_adv, mask = sequence_vtrace(
        bm("logp") - bm("behaviour", SEQ["logp"]), bm("discounts"), bm("rewards"),
        bm("values"), SEQ_LENS, f32(SEQ_BOOTSTRAP), **kwargs)
    np.testing.assert_array_equal(mask.numpy(), [[True, True, True], [True, False, False]])
    np.testing.assert_allclose(vs.numpy(), [[2.5, 3, 2], [3, 1e3, 1e3]], rtol=1e-6)
    np.testing.assert_allclose(pg_adv.numpy(), [[1.5, 2.5, 1.5], [2, 0, 0]], rtol=1e-6)
    # RLlib's drop_last_ts: A's last step is the bootstrap (V = .5) and drops out:
    # vs_1 = 2 + .5 * .5 = 2.25, vs_0 = 1 + .5 * 2.25 = 2.125; B ends terminated: kept.
    vs, pg_adv, mask = sequence_vtrace(
        bm("logp") - bm("behaviour", SEQ["logp"]), bm("discounts"), bm("rewards"),
        bm("values"), SEQ_LENS, drop_last_ts=True, **kwargs)
    np.testing.assert_array_equal(mask.numpy(), [[True, True, False], [True, False, False]])
    np.testing.assert_allclose(vs.numpy()[0, :2], [2.125, 2.25], rtol=1e-6)
    np.testing.assert_allclose(pg_adv.numpy()[:, 0], [1 + 1.125 - 1, 2], rtol=1e-6)
    with pytest.raises(ValueError, match=r"needs bootstrap_value"):
        sequence_vtrace(bm("logp"), bm("discounts"), bm("rewards"), bm("values"), SEQ_LENS)
    with pytest.raises(ValueError, match=r"needs terminateds"):
        sequence_vtrace(bm("logp"), bm("discounts"), bm("rewards"), bm("values"), SEQ_LENS,
                        drop_last_ts=True)
    with pytest.raises(ValueError, match=r"must be \[B, T\] .* received shape \(3,\)"):
        sequence_vtrace(f32([0, 0, 0]), f32([0, 0, 0]), f32([0, 0, 0]), f32([0, 0, 0]),
                        [3], f32([0.0]))
