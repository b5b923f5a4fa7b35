"""The off-policy actor-critic losses (td_math, sac_loss, td3_loss) against hand numbers.

Small float32 arrays; each case says which branch it exercises (twin critics or one,
terminated rows, n-step discounts, Huber or squared error, importance weights). Where a
number is not written out, it is computed in numpy next to the case. The gradient tests
build tiny Keras nets and check with a GradientTape that each loss reaches exactly the
variables it should.
"""

import gymnasium as gym
import keras
import numpy as np
import pytest
import tensorflow as tf

from policy_helpers import strategy_named
from tfrl.algorithms.sac.sac_loss import (
    discrete_sac_actor_loss, discrete_sac_alpha_loss, discrete_soft_q_target,
    resolve_target_entropy, sac_actor_loss, sac_alpha_loss, sac_critic_loss, soft_q_target)
from tfrl.algorithms.td3.td3_loss import (
    l2_penalty, smoothed_target_action, td3_actor_loss, td3_critic_loss, td3_q_target)
from tfrl.algorithms.td_math import bootstrapped_target, critic_loss, huber_loss, td_error


def f32(x):
    return tf.constant(np.asarray(x, np.float32))


# ------------------------------------------------------------------ shared TD pieces

def test_huber_loss_by_hand():
    # |x| <= 1: 0.5 x^2; else |x| - 0.5.
    got = huber_loss(f32([0.5, -2.0, 1.0, 3.0])).numpy()
    np.testing.assert_allclose(got, [0.125, 1.5, 0.5, 2.5], rtol=1e-6)
    # delta 2: |x| <= 2 -> 0.5 x^2; else 2 (|x| - 1).
    np.testing.assert_allclose(huber_loss(f32([-2.0, 3.0]), 2.0).numpy(), [2.0, 4.0])


def test_bootstrapped_target_by_hand():
    # gamma 0.5; row 1 terminated (no bootstrap).
    got = bootstrapped_target(f32([1.0, 0.0, 2.0]), tf.constant([False, True, False]),
                              f32([10.0, 10.0, -4.0]), gamma=0.5)
    np.testing.assert_allclose(got.numpy(), [6.0, 0.0, 0.0])
    # The n_step column: row 2 spans two steps (gamma^2 = 0.25); float terminateds.
    got = bootstrapped_target(f32([1.0, 0.0, 2.0]), f32([0.0, 1.0, 0.0]),
                              f32([10.0, 10.0, -4.0]), gamma=0.5,
                              n_step=tf.constant([1, 1, 2]))
    np.testing.assert_allclose(got.numpy(), [6.0, 0.0, 1.0])


# Two rows, twin critics, importance weights [1, 0.5]:
#   critic 1: delta [0, 2]  -> huber [0, 1.5]  ; 0.5 delta^2 [0, 2]
#   critic 2: delta [-1, 4] -> huber [0.5, 3.5]; 0.5 delta^2 [0.5, 8]
Q1, Q2, Y, W = [1.0, 2.0], [0.0, 4.0], [1.0, 0.0], [1.0, 0.5]


@pytest.mark.parametrize("twin, weights, huber_delta, expected", [
    (True, True, 1.0, (0.5 + 0.5 * 5.0) / 2),     # both critics, weighted Huber
    (True, True, None, (0.5 + 0.5 * 10.0) / 2),   # squared error
    (False, False, 1.0, 1.5 / 2),                 # one critic, no weights (DDPG)
    (True, False, 1.0, (0.5 + 5.0) / 2),          # no weights
])
def test_critic_loss_by_hand(twin, weights, huber_delta, expected):
    loss, stats = critic_loss(f32(Q1), f32(Q2) if twin else None, f32(Y),
                              f32(W) if weights else None, huber_delta=huber_delta)
    assert float(loss) == pytest.approx(expected, rel=1e-6)
    assert float(stats["critic_loss"]) == pytest.approx(expected, rel=1e-6)
    assert float(stats["mean_q"]) == pytest.approx(1.5)
    assert (float(stats["min_q"]), float(stats["max_q"])) == (1.0, 2.0)
    # td_error: |delta_1|, or the mean of both critics' |delta|.
    expected_td = [0.5, 3.0] if twin else [0.0, 2.0]
    assert float(stats["mean_td_error"]) == pytest.approx(np.mean(expected_td))
    np.testing.assert_allclose(
        td_error(f32(Q1), f32(Q2) if twin else None, f32(Y)).numpy(), expected_td)


def test_critic_loss_gradient_reaches_q_values_not_targets():
    q1, q2, y = tf.Variable(f32(Q1)), tf.Variable(f32(Q2)), tf.Variable(f32(Y))
    with tf.GradientTape() as tape:
        loss, _ = critic_loss(q1, q2, y, f32(W))
    g1, g2, gy = tape.gradient(loss, [q1, q2, y])
    assert gy is None
    # d/dq mean_t w_t huber(q_t - y_t) = w_t clip(delta_t, -1, 1) / B
    np.testing.assert_allclose(g1.numpy(), [0.0, 0.5 * 1.0 / 2])
    np.testing.assert_allclose(g2.numpy(), [-1.0 / 2, 0.5 * 1.0 / 2])


def test_critic_loss_is_each_replicas_share_of_the_global_mean():
    # Replica 0 holds rows 0-1, replica 1 rows 2-3: the shares sum to the mean over all
    # four rows (the optimizer sums the replicas' gradients); stats are per replica.
    strategy = strategy_named("mirrored")
    q = [np.array([1.0, 2.0], np.float32), np.array([0.0, 5.0], np.float32)]
    y = [np.array([1.0, 0.0], np.float32), np.array([0.5, 0.0], np.float32)]

    def per_replica(values):
        return strategy.experimental_distribute_values_from_function(
            lambda context: tf.constant(values[context.replica_id_in_sync_group]))

    losses, stats = strategy.run(lambda q_t, y_t: critic_loss(q_t, None, y_t),
                                 args=(per_replica(q), per_replica(y)))
    total = float(strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None))
    # Huber of the deltas [0, 2, -0.5, 5]: [0, 1.5, 0.125, 4.5]
    assert total == pytest.approx((0.0 + 1.5 + 0.125 + 4.5) / 4, rel=1e-6)
    local = [float(v) for v in strategy.experimental_local_results(stats["critic_loss"])]
    assert local == pytest.approx([0.75, 2.3125], rel=1e-6)


def test_sac_and_td3_critic_losses_are_the_shared_one():
    assert sac_critic_loss is critic_loss and td3_critic_loss is critic_loss


# --------------------------------------------------------------------- SAC, continuous

def test_soft_q_target_by_hand():
    # gamma 0.9, alpha 0.2. Row 0: min(2, 1.5) - 0.2 * (-1) = 1.7 -> 1 + 0.9 * 1.7.
    # Row 1 terminated -> its reward.
    args = (f32([1.0, 0.5]), tf.constant([False, True]), f32([2.0, 3.0]), f32([-1.0, 0.2]))
    got = soft_q_target(*args, f32([1.5, 5.0]), alpha=0.2, gamma=0.9)
    np.testing.assert_allclose(got.numpy(), [2.53, 0.5], rtol=1e-6)
    # One critic: 2 + 0.2 = 2.2 -> 1 + 1.98.
    got = soft_q_target(*args, alpha=0.2, gamma=0.9)
    np.testing.assert_allclose(got.numpy(), [2.98, 0.5], rtol=1e-6)
    # n_step 2: gamma^2 = 0.81.
    got = soft_q_target(*args, f32([1.5, 5.0]), alpha=0.2, gamma=0.9, n_step=2)
    np.testing.assert_allclose(got.numpy(), [1.0 + 0.81 * 1.7, 0.5], rtol=1e-6)


def test_soft_q_target_carries_no_gradient():
    q, logp, alpha = tf.Variable(f32([2.0])), tf.Variable(f32([-1.0])), tf.Variable(0.2)
    with tf.GradientTape() as tape:
        y = soft_q_target(f32([1.0]), f32([0.0]), q, logp, alpha=alpha, gamma=0.9)
    assert tape.gradient(y, [q, logp, alpha]) == [None, None, None]


def test_sac_actor_loss_by_hand():
    logp, q1, q2 = tf.Variable(f32([-1.0, 0.5])), tf.Variable(f32([2.0, 3.0])), \
        tf.Variable(f32([1.0, 4.0]))
    alpha = tf.Variable(0.1)
    with tf.GradientTape() as tape:
        loss, stats = sac_actor_loss(logp, q1, q2, alpha=alpha)
    # [0.1 * -1 - min(2, 1), 0.1 * 0.5 - min(3, 4)] = [-1.1, -2.95]
    assert float(loss) == pytest.approx(-2.025, rel=1e-6)
    assert float(stats["actor_loss"]) == pytest.approx(-2.025, rel=1e-6)
    assert float(stats["logp"]) == pytest.approx(-0.25)
    assert float(stats["alpha"]) == pytest.approx(0.1)
    g_logp, g_q1, g_q2, g_alpha = tape.gradient(loss, [logp, q1, q2, alpha])
    np.testing.assert_allclose(g_logp.numpy(), [0.05, 0.05])  # alpha / B
    np.testing.assert_allclose(g_q1.numpy(), [0.0, -0.5])  # only the smaller Q
    np.testing.assert_allclose(g_q2.numpy(), [-0.5, 0.0])
    assert g_alpha is None  # alpha is learned by its own loss only
    one, _ = sac_actor_loss(logp, q1, alpha=0.1)
    assert float(one) == pytest.approx(np.mean([-0.1 - 2.0, 0.05 - 3.0]), rel=1e-6)


def test_sac_alpha_loss_by_hand():
    log_alpha, logp = tf.Variable(np.log(0.5).astype(np.float32)), tf.Variable(f32([-1.0, 0.4]))
    with tf.GradientTape() as tape:
        loss, stats = sac_alpha_loss(log_alpha, logp, target_entropy=-1.0)
    # -log_alpha * mean(logp + target) = -ln(0.5) * mean([-2, -0.6])
    assert float(loss) == pytest.approx(-np.log(0.5) * -1.3, rel=1e-5)
    assert float(stats["alpha"]) == pytest.approx(0.5)
    assert float(stats["target_entropy"]) == -1.0
    g_log_alpha, g_logp = tape.gradient(loss, [log_alpha, logp])
    # The entropy estimate (0.3) is above the target (-1): descent lowers alpha.
    assert float(g_log_alpha) == pytest.approx(1.3, rel=1e-6)
    assert g_logp is None


def test_resolve_target_entropy():
    assert resolve_target_entropy("auto", gym.spaces.Box(-1, 1, (3,))) == -3.0
    assert resolve_target_entropy(None, gym.spaces.Box(-1, 1, (2, 2))) == -4.0
    assert resolve_target_entropy("auto", gym.spaces.Discrete(4)) == pytest.approx(
        0.98 * np.log(4))
    assert resolve_target_entropy(-0.5, gym.spaces.Discrete(4)) == -0.5


# ----------------------------------------------------------------------- SAC, discrete

LOG_PROBS = np.log(np.array([[0.25, 0.75], [0.5, 0.5]], np.float32))


def test_discrete_soft_q_target_by_hand():
    q1, q2 = np.array([[1.0, 2.0], [0.0, 4.0]]), np.array([[2.0, 1.0], [3.0, 3.0]])
    alpha, gamma = 0.5, 0.9
    got = discrete_soft_q_target(f32([0.0, 1.0]), tf.constant([False, True]), f32(q1),
                                 f32(LOG_PROBS), f32(q2), alpha=alpha, gamma=gamma)
    # Row 0: min Q = [1, 1]; V = sum p (1 - 0.5 log p) = 1 + 0.5 H(0.25, 0.75).
    entropy = -(0.25 * np.log(0.25) + 0.75 * np.log(0.75))
    np.testing.assert_allclose(got.numpy(), [0.9 * (1.0 + 0.5 * entropy), 1.0], rtol=1e-6)
    one = discrete_soft_q_target(f32([0.0, 0.0]), f32([0.0, 0.0]), f32(q1), f32(LOG_PROBS),
                                 alpha=alpha, gamma=gamma)
    p = np.exp(LOG_PROBS)
    expected = gamma * np.sum(p * (q1 - alpha * LOG_PROBS), axis=-1)
    np.testing.assert_allclose(one.numpy(), expected, rtol=1e-6)


def test_discrete_sac_actor_loss_by_hand_and_its_gradient():
    logits = tf.Variable(f32(LOG_PROBS) + 3.0)  # softmax ignores the shift
    q1, q2 = tf.Variable(f32([[1.0, 3.0], [0.0, 1.0]])), tf.Variable(f32([[2.0, 2.0], [1.0, 0.0]]))
    alpha = 0.5
    with tf.GradientTape() as tape:
        log_probs = tf.nn.log_softmax(logits)
        loss, stats = discrete_sac_actor_loss(log_probs, q1, q2, alpha=alpha)
    p, q = np.exp(LOG_PROBS), np.minimum(q1.numpy(), q2.numpy())
    g = alpha * LOG_PROBS - q  # [B, n]
    assert float(loss) == pytest.approx(np.mean(np.sum(p * g, axis=-1)), rel=1e-5)
    entropy = -np.sum(p * LOG_PROBS, axis=-1)
    assert float(stats["entropy"]) == pytest.approx(np.mean(entropy), rel=1e-5)
    g_logits, g_q1, g_q2 = tape.gradient(loss, [logits, q1, q2])
    assert g_q1 is None and g_q2 is None  # the critics are held constant
    # d/dz_j sum_a p_a g_a = p_j (g_j - E_p[g]) (the alpha p log p terms cancel), / B.
    expected = p * (g - np.sum(p * g, axis=-1, keepdims=True)) / 2
    np.testing.assert_allclose(g_logits.numpy(), expected, rtol=1e-5, atol=1e-7)


def test_discrete_sac_alpha_loss_by_hand():
    log_alpha = tf.Variable(0.0)
    with tf.GradientTape() as tape:
        loss, stats = discrete_sac_alpha_loss(log_alpha, f32(LOG_PROBS), target_entropy=0.5)
    entropy = -np.sum(np.exp(LOG_PROBS) * LOG_PROBS, axis=-1)
    # loss = -log_alpha * mean(target - H); gradient -mean(target - H).
    assert float(loss) == pytest.approx(0.0, abs=1e-7)
    assert float(tape.gradient(loss, log_alpha)) == pytest.approx(
        -np.mean(0.5 - entropy), rel=1e-5)
    assert float(stats["alpha"]) == pytest.approx(1.0)


# --------------------------------------------------------------------------- TD3/DDPG

def test_smoothed_target_action_by_hand():
    actions, noise = f32([[0.5, -0.9], [0.0, 0.95]]), f32([[1.0, -1.0], [3.0, 0.2]])
    # noise * 0.2 = [[0.2, -0.2], [0.6, 0.04]], clipped to 0.5 -> [[.2, -.2], [.5, .04]]
    got = smoothed_target_action(actions, noise, target_noise=0.2, target_noise_clip=0.5,
                                 low=-1.0, high=1.0)
    np.testing.assert_allclose(got.numpy(), [[0.7, -1.0], [0.5, 0.99]], rtol=1e-6)
    # Per-dimension bounds.
    got = smoothed_target_action(actions, noise, target_noise=0.2, target_noise_clip=0.5,
                                 low=[-1.0, -0.5], high=[1.0, 0.5])
    np.testing.assert_allclose(got.numpy(), [[0.7, -0.5], [0.5, 0.5]], rtol=1e-6)
    # No noise: the target actor's action.
    got = smoothed_target_action(actions, noise, target_noise=0.0, target_noise_clip=0.5,
                                 low=-1.0, high=1.0)
    np.testing.assert_allclose(got.numpy(), actions.numpy())


def test_td3_q_target_by_hand():
    # gamma 0.5, n_step 3 -> discount 0.125; TD3: min(3, 2) = 2, min(1, 5) = 1.
    args = (f32([1.0, 2.0]), tf.constant([False, False]), f32([3.0, 1.0]))
    np.testing.assert_allclose(
        td3_q_target(*args, f32([2.0, 5.0]), gamma=0.5, n_step=3).numpy(), [1.25, 2.125])
    # DDPG: the one critic.
    np.testing.assert_allclose(td3_q_target(*args, gamma=0.5, n_step=3).numpy(),
                               [1.375, 2.125])


def test_td3_actor_loss_by_hand():
    q = tf.Variable(f32([1.0, 3.0]))
    with tf.GradientTape() as tape:
        loss, stats = td3_actor_loss(q)
    assert float(loss) == -2.0 and float(stats["mean_q_pi"]) == 2.0
    np.testing.assert_allclose(tape.gradient(loss, q).numpy(), [-0.5, -0.5])


def test_l2_penalty_by_hand():
    dense = keras.layers.Dense(1)
    dense.build((None, 2))
    dense.kernel.assign([[1.0], [2.0]])
    dense.bias.assign([3.0])  # not penalized
    # 0.1 * (1 + 4) / 2
    assert float(l2_penalty(dense.variables, 0.1)) == pytest.approx(0.25)
    assert float(l2_penalty(dense.variables, None)) == 0.0
    assert float(l2_penalty(dense.variables, 0.0)) == 0.0


# ------------------------------------------------- gradients through small Keras nets

def _mlp(out, name):
    return keras.Sequential([keras.layers.Dense(8, activation="tanh"),
                             keras.layers.Dense(out)], name=name)


@pytest.fixture()
def nets():
    keras.utils.set_random_seed(0)
    obs_dim, act_dim = 3, 2
    nets = {"actor": _mlp(act_dim, "actor"), "q1": _mlp(1, "q1"), "q2": _mlp(1, "q2"),
            "target_actor": _mlp(act_dim, "target_actor"), "target_q1": _mlp(1, "tq1"),
            "target_q2": _mlp(1, "tq2")}
    for name, net in nets.items():
        net.build((None, obs_dim + (act_dim if "q" in name else 0)))
    rng = np.random.default_rng(0)
    batch = {"obs": f32(rng.normal(size=(4, obs_dim))),
             "new_obs": f32(rng.normal(size=(4, obs_dim))),
             "actions": f32(rng.uniform(-1, 1, size=(4, act_dim))),
             "rewards": f32(rng.normal(size=4)), "terminateds": f32([0, 0, 1, 0])}
    return nets, batch


def _q(net, obs, actions):
    return tf.squeeze(net(tf.concat([obs, actions], -1)), -1)


def test_td3_gradients_reach_only_their_networks(nets):
    nets, b = nets
    critics = nets["q1"].trainable_variables + nets["q2"].trainable_variables
    others = [v for name in ("actor", "target_actor", "target_q1", "target_q2")
              for v in nets[name].trainable_variables]
    with tf.GradientTape(persistent=True) as tape:
        mu_target = tf.tanh(nets["target_actor"](b["new_obs"]))
        a_next = smoothed_target_action(
            mu_target, tf.random.normal(tf.shape(mu_target), seed=1), target_noise=0.2,
            target_noise_clip=0.5, low=-1, high=1)
        targets = td3_q_target(b["rewards"], b["terminateds"],
                               _q(nets["target_q1"], b["new_obs"], a_next),
                               _q(nets["target_q2"], b["new_obs"], a_next), gamma=0.99)
        loss, _ = td3_critic_loss(_q(nets["q1"], b["obs"], b["actions"]),
                                  _q(nets["q2"], b["obs"], b["actions"]), targets)
        actor_loss, _ = td3_actor_loss(_q(nets["q1"], b["obs"], tf.tanh(nets["actor"](b["obs"]))))
    assert all(g is not None for g in tape.gradient(loss, critics))
    assert all(g is None for g in tape.gradient(loss, others))
    actor_grads = tape.gradient(actor_loss, nets["actor"].trainable_variables)
    assert all(g is not None and float(tf.norm(g)) > 0 for g in actor_grads)
    # The actor's loss depends on Q_1 only (not the twin, not the targets).
    twin_and_targets = nets["q2"].trainable_variables + others[len(
        nets["actor"].trainable_variables):]
    assert all(g is None for g in tape.gradient(actor_loss, twin_and_targets))
    # Applied the documented way (the actor's optimizer on the actor's variables), an
    # actor step leaves every critic weight as it was.
    before = [v.numpy().copy() for v in critics]
    keras.optimizers.Adam(0.1).apply_gradients(
        zip(actor_grads, nets["actor"].trainable_variables))
    for old, var in zip(before, critics):
        np.testing.assert_array_equal(old, var.numpy())


def test_sac_gradients_reach_only_their_variables(nets):
    nets, b = nets
    log_alpha = tf.Variable(0.0)

    def sample(obs):  # a squashed Gaussian with a fixed std: u = mean + 0.5 eps
        mean = nets["actor"](obs)
        u = mean + 0.5 * tf.random.normal(tf.shape(mean), seed=2)
        logp = tf.reduce_sum(-0.5 * tf.square((u - mean) / 0.5) - np.log(0.5)
                             - 0.5 * np.log(2 * np.pi) - tf.math.log(1 - tf.tanh(u) ** 2
                                                                     + 1e-6), -1)
        return tf.tanh(u), logp

    critics = nets["q1"].trainable_variables + nets["q2"].trainable_variables
    actor = nets["actor"].trainable_variables
    with tf.GradientTape(persistent=True) as tape:
        alpha = tf.exp(log_alpha)
        a_next, logp_next = sample(b["new_obs"])
        targets = soft_q_target(b["rewards"], b["terminateds"],
                                _q(nets["target_q1"], b["new_obs"], a_next), logp_next,
                                _q(nets["target_q2"], b["new_obs"], a_next), alpha=alpha,
                                gamma=0.99)
        c_loss, _ = sac_critic_loss(_q(nets["q1"], b["obs"], b["actions"]),
                                    _q(nets["q2"], b["obs"], b["actions"]), targets)
        a_new, logp = sample(b["obs"])
        a_loss, _ = sac_actor_loss(logp, _q(nets["q1"], b["obs"], a_new),
                                   _q(nets["q2"], b["obs"], a_new), alpha=alpha)
        al_loss, _ = sac_alpha_loss(log_alpha, logp, target_entropy=-2.0)
    # Critic loss: the critics only (not the actor through a', not alpha).
    assert all(g is not None for g in tape.gradient(c_loss, critics))
    assert all(g is None for g in tape.gradient(c_loss, actor + [log_alpha]))
    # Actor loss: the actor (through a~ and log pi), not alpha.
    assert all(g is not None for g in tape.gradient(a_loss, actor))
    assert tape.gradient(a_loss, log_alpha) is None
    # Alpha loss: log_alpha only.
    assert tape.gradient(al_loss, log_alpha) is not None
    assert all(g is None for g in tape.gradient(al_loss, actor + critics))


def test_losses_trace_in_a_tf_function():
    @tf.function
    def all_losses(r, d, q, twin, logp, log_probs, qd):
        y = soft_q_target(r, d, q, logp, twin, alpha=0.2, gamma=0.9)
        yd = discrete_soft_q_target(r, d, qd, log_probs, alpha=0.2, gamma=0.9, n_step=2)
        return (sac_critic_loss(q, twin, y)[0] + sac_actor_loss(logp, q, twin, alpha=0.2)[0]
                + sac_alpha_loss(0.0, logp, target_entropy=-1.0)[0] + yd[0]
                + discrete_sac_actor_loss(log_probs, qd, alpha=0.2)[0]
                + td3_actor_loss(td3_q_target(r, d, q, twin, gamma=0.9))[0])

    args = (f32([1.0, 0.5]), f32([0.0, 1.0]), f32([2.0, 3.0]), f32([1.5, 5.0]),
            f32([-1.0, 0.2]), f32(LOG_PROBS), f32([[1.0, 2.0], [0.0, 4.0]]))
    # Graph rewrites may reorder float sums: equal to rounding.
    assert float(all_losses(*args)) == pytest.approx(float(all_losses.python_function(*args)),
                                                     abs=1e-5)


# --------------------------------------------------------------------------- errors

@pytest.mark.parametrize("call, error, match", [
    (lambda: critic_loss(f32([[1.0], [2.0]]), None, f32([1.0, 2.0])), ValueError,
     r"critic_loss\(\): q_t must have shape \[B\] .*received shape \(2, 1\)\. Squeeze the "
     r"Q head's last axis"),
    (lambda: critic_loss(f32([1.0, 2.0]), f32([1.0, 2.0, 3.0]), f32([1.0, 2.0])), ValueError,
     r"critic_loss\(\): twin_q_t and q_t must have one dtype and shape"),
    (lambda: td3_actor_loss(tf.constant([1, 2])), TypeError,
     r"td3_actor_loss\(\): q_t must be a float tensor; received dtype int32"),
    (lambda: bootstrapped_target(f32([1.0, 2.0]), f32([0.0]), f32([1.0, 2.0]), gamma=0.9),
     ValueError, r"bootstrapped_target\(\): terminateds_t must have the shape of rewards_t"),
    (lambda: discrete_sac_actor_loss(f32([-0.5, -1.0]), f32([1.0, 2.0]), alpha=0.1),
     ValueError, r"discrete_sac_actor_loss\(\): log_probs_t must be a float tensor "
     r"\[B, num_actions\]"),
    (lambda: discrete_soft_q_target(f32([0.0]), f32([0.0]), f32([[1.0, 2.0, 3.0]]),
                                    f32([[-0.7, -0.7]]), alpha=0.1, gamma=0.9), ValueError,
     r"discrete_soft_q_target\(\): log_probs_tp1 and q_tp1 must have one dtype and shape"),
    (lambda: sac_alpha_loss(0.0, f32([-1.0]), target_entropy="auto"), ValueError,
     r"sac_alpha_loss\(\): target_entropy must be a finite number; received 'auto'\. "
     r"Resolve 'auto' with resolve_target_entropy"),
    (lambda: resolve_target_entropy("high", gym.spaces.Discrete(2)), ValueError,
     r"target_entropy must be 'auto' or a number; received 'high'"),
    (lambda: resolve_target_entropy("auto", gym.spaces.MultiBinary(3)), ValueError,
     r"target_entropy='auto' needs a Box or Discrete action space"),
    (lambda: resolve_target_entropy(float("nan"), gym.spaces.Discrete(2)), ValueError,
     r"target_entropy must be finite; received nan"),
    (lambda: smoothed_target_action(f32([1.0]), f32([1.0]), target_noise=0.1,
                                    target_noise_clip=0.5, low=-1, high=1), ValueError,
     r"smoothed_target_action\(\): target_actions must be a float tensor \[B, A\]"),
    (lambda: smoothed_target_action(f32([[1.0]]), f32([[1.0, 2.0]]), target_noise=0.1,
                                    target_noise_clip=0.5, low=-1, high=1), ValueError,
     r"smoothed_target_action\(\): noise must have the dtype and shape of target_actions"),
    (lambda: smoothed_target_action(f32([[1.0]]), f32([[1.0]]), target_noise=-0.1,
                                    target_noise_clip=0.5, low=-1, high=1), ValueError,
     r"smoothed_target_action\(\): target_noise must be >= 0; received -0.1"),
    (lambda: smoothed_target_action(f32([[1.0]]), f32([[1.0]]), target_noise=0.1,
                                    target_noise_clip=0.5, low=1, high=1), ValueError,
     r"smoothed_target_action\(\): the action bounds must be finite with low < high"),
    (lambda: l2_penalty([], -1e-6), ValueError,
     r"l2_penalty\(\): l2_reg must be None or a finite number >= 0; received -1e-06"),
])
def test_bad_inputs_raise_clear_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
