"""CQL: the pure losses against hand-computed numbers, the policy (penalty's actions,
behaviour-cloning phase, Lagrangian multiplier), the config's RLlib defaults, bad input
(missing columns in the data, Discrete actions), and `tfrl train --algo=CQL`."""

import math
import re

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from cli_helpers import run_tfrl, tuned
from tfrl.algorithms.cql import CQL, CQLConfig, CQLTFPolicy
from tfrl.algorithms.cql.cql_loss import cql_actor_loss, cql_loss, uniform_log_density
from tfrl.algorithms.cql.cql_tf_policy import CQL_NOISE
from tfrl.algorithms.sac.sac_tf_policy import NOISE
from tfrl.data.sample_batch import SampleBatch
from tfrl.offline.json_writer import JsonWriter

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
BOX = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
NETS = {"fcnet_hiddens": [16], "fcnet_activation": "relu"}
SMALL = {"seed": 0, "q_model_config": NETS, "policy_model_config": NETS}
LN2, LN3 = math.log(2.0), math.log(3.0)


def c(values):
    return tf.constant(values, tf.float32)


# Two rows, one sampled action per proposal. With random_log_density = -ln 2 the rows'
# logsumexp terms are (q_rand + ln 2, q_curr - logp_curr, q_next - logp_next):
# row 0: (0, 0, 0) -> ln 3; row 1: (ln 2, ln 3, ln 3) -> ln(2 + 3 + 3) = ln 8.
Q_T, TARGETS = c([1.0, 0.0]), c([0.5, 0.0])
Q_SAMPLED = (c([[-LN2], [0.0]]), c([[1.0], [LN3]]), c([[0.0], [0.0]]))
LOGP_CURR, LOGP_NEXT = c([[1.0], [0.0]]), c([[0.0], [-LN3]])
KW = {"random_log_density": -LN2, "temperature": 1.0, "min_q_weight": 2.0}


def test_cql_loss_one_critic_hand_computed():
    loss, stats = cql_loss(Q_T, None, TARGETS, Q_SAMPLED, None, LOGP_CURR, LOGP_NEXT, **KW)
    td = (0.5 ** 2 + 0.0) / 2  # mean squared error
    penalty = 2.0 * ((LN3 + math.log(8.0)) / 2 - (1.0 + 0.0) / 2)  # = ln 24 - 1
    assert float(loss) == pytest.approx(td + penalty, rel=1e-6)
    assert float(stats["critic_loss"]) == pytest.approx(td)
    assert float(stats["cql_loss"]) == pytest.approx(math.log(24.0) - 1.0, rel=1e-6)
    assert float(stats["cql_lse"]) == pytest.approx((LN3 + math.log(8.0)) / 2, rel=1e-6)
    assert float(stats["mean_q"]) == pytest.approx(0.5)


def test_cql_loss_temperature_hand_computed():
    loss, _ = cql_loss(Q_T, None, TARGETS, Q_SAMPLED, None, LOGP_CURR, LOGP_NEXT,
                       **{**KW, "temperature": 2.0})
    # T logsumexp(x / T): row 0 2 ln 3; row 1 2 ln(e^(ln2 / 2) + 2 e^(ln3 / 2)).
    lse = (2 * LN3 + 2 * math.log(math.sqrt(2.0) + 2 * math.sqrt(3.0))) / 2
    assert float(loss) == pytest.approx(0.125 + 2.0 * (lse - 0.5), rel=1e-6)


def test_cql_loss_twin_critics_hand_computed():
    zeros = c([[0.0], [0.0]])
    loss, _ = cql_loss(Q_T, c([0.0, 0.0]), TARGETS, Q_SAMPLED, (zeros, zeros, zeros),
                       LOGP_CURR, LOGP_NEXT, **KW)
    # Twin: row 0 (ln 2, -1, 0) -> ln(3 + 1/e); row 1 (ln 2, 0, ln 3) -> ln 6.
    twin = 0.125 + 2.0 * ((math.log(3 + math.exp(-1)) + math.log(6.0)) / 2 - 0.0)
    assert float(loss) == pytest.approx(0.125 + math.log(24.0) - 1.0 + twin, rel=1e-6)


def test_cql_loss_gradients_reach_the_q_values_not_the_log_probs():
    q_rand, logp = tf.Variable(Q_SAMPLED[0]), tf.Variable(LOGP_CURR)
    q_t = tf.Variable(Q_T)
    with tf.GradientTape() as tape:
        loss, _ = cql_loss(q_t, None, TARGETS, (q_rand, *Q_SAMPLED[1:]), None, logp,
                           LOGP_NEXT, **KW)
    g_rand, g_logp, g_q = tape.gradient(loss, [q_rand, logp, q_t])
    # d/dq_rand = min_q_weight * (1 / B) * softmax weight: row 0 1/3, row 1 2/8.
    np.testing.assert_allclose(g_rand.numpy(), [[2 * 0.5 / 3], [2 * 0.5 * 2 / 8]], rtol=1e-6)
    assert g_logp is None or not np.any(g_logp.numpy())
    # d/dq_t = TD (2 (q - y) / B) - min_q_weight / B.
    np.testing.assert_allclose(g_q.numpy(), [2 * 0.5 / 2 - 1.0, 0.0 - 1.0], rtol=1e-6)


def test_cql_loss_lagrangian_hand_computed():
    log_alpha_prime = tf.Variable(LN2)  # alpha' = 2
    with tf.GradientTape() as tape:
        loss, stats = cql_loss(Q_T, None, TARGETS, Q_SAMPLED, None, LOGP_CURR, LOGP_NEXT,
                               **KW, log_alpha_prime=log_alpha_prime, lagrangian_thresh=1.0)
    gap = math.log(24.0) - 1.0 - 1.0  # penalty - threshold
    # Critics: alpha' * gap; multiplier: -0.5 * alpha' * gap (one critic).
    assert float(loss) == pytest.approx(0.125 + 2 * gap - gap, rel=1e-6)
    assert float(stats["alpha_prime"]) == pytest.approx(2.0)
    assert float(stats["alpha_prime_loss"]) == pytest.approx(-gap, rel=1e-6)
    assert float(stats["cql_loss"]) == pytest.approx(2 * gap, rel=1e-6)
    # d/d log_alpha' of -0.5 e^x gap = -0.5 * 2 * gap: alpha' grows while penalty > thresh.
    assert float(tape.gradient(loss, log_alpha_prime)) == pytest.approx(-gap, rel=1e-5)


def test_cql_actor_loss_clones_then_maximises_q():
    logp, q, twin, bc_logp = c([-1.0, 0.5]), c([2.0, 3.0]), c([1.0, 4.0]), c([-2.0, -0.5])
    bc, stats = cql_actor_loss(logp, q, twin, bc_logp, alpha=0.5, bc_phase=True)
    assert float(bc) == pytest.approx(((-0.5 + 2.0) + (0.25 + 0.5)) / 2)
    assert float(stats["bc_logp"]) == pytest.approx(-1.25)
    sac, _ = cql_actor_loss(logp, q, twin, bc_logp, alpha=0.5, bc_phase=tf.constant(False))
    assert float(sac) == pytest.approx(((-0.5 - 1.0) + (0.25 - 3.0)) / 2)


def test_uniform_log_density_and_bad_input():
    assert uniform_log_density(-2.0, 2.0) == pytest.approx(-math.log(4.0))
    assert uniform_log_density([-1.0, -2.0], [1.0, 2.0]) == pytest.approx(-math.log(8.0))
    with pytest.raises(ValueError, match="finite bounds"):
        uniform_log_density(-np.inf, 1.0)
    with pytest.raises(ValueError, match=r"q_curr must be a float tensor \[B, num_actions\]"):
        cql_loss(Q_T, None, TARGETS, (Q_SAMPLED[0], c([1.0, 2.0]), Q_SAMPLED[2]), None,
                 LOGP_CURR, LOGP_NEXT, **KW)
    with pytest.raises(ValueError, match="given together"):
        cql_loss(Q_T, c([0.0, 0.0]), TARGETS, Q_SAMPLED, None, LOGP_CURR, LOGP_NEXT, **KW)


# ---------------------------------------------------------------------------- policy

def make_policy(**config):
    return CQLTFPolicy(OBS_SPACE, BOX, CQLConfig.from_dict({**SMALL, **config}).to_dict())


def rows(n=8, seed=0):
    rng = np.random.default_rng(seed)
    return {"obs": rng.uniform(-1, 1, (n, 3)).astype(np.float32),
            "new_obs": rng.uniform(-1, 1, (n, 3)).astype(np.float32),
            "actions": rng.uniform(-2, 2, (n, 1)).astype(np.float32),
            "rewards": rng.normal(size=n).astype(np.float32),
            "terminateds": np.arange(n) % 3 == 2}


def test_config_has_rllibs_cql_defaults_and_checks_ranges():
    config = CQLConfig()
    assert (config.bc_iters, config.temperature, config.num_actions, config.lagrangian,
            config.lagrangian_thresh, config.min_q_weight) == (20000, 1.0, 10, False, 5.0, 5.0)
    assert config.evaluation_config == {"input": "sampler", "explore": False}
    with pytest.raises(ValueError, match="num_actions"):
        CQLConfig(num_actions=0)


def test_train_batch_carries_the_penalty_noise_in_bounds():
    policy = make_policy(num_actions=3)
    batch = policy.train_batch(rows())
    noise = batch[CQL_NOISE]
    assert noise.shape == (8, 3, 3, 1) and noise.dtype == np.float32
    assert np.all((noise[:, :, 0] >= 0) & (noise[:, :, 0] < 1))  # uniform draws
    assert batch[NOISE].shape == (8, 2, 1)


@pytest.mark.slow
def test_bc_phase_changes_the_actor_update_only():
    weights = {}
    for bc_iters in (0, 10):
        policy = make_policy(bc_iters=bc_iters)
        policy.learn_on_batch(rows())
        weights[bc_iters] = ([v.numpy() for v in policy.model.actor.trainable_variables],
                             [v.numpy() for v in policy.model.twin_q.trainable_variables])
    actor_same = all(np.array_equal(a, b) for a, b in zip(weights[0][0], weights[10][0]))
    critics_same = all(np.array_equal(a, b) for a, b in zip(weights[0][1], weights[10][1]))
    assert critics_same and not actor_same


@pytest.mark.slow
def test_penalty_lowers_q_of_out_of_data_actions_relative_to_logged_ones():
    # Logged actions near +1.5; a higher min_q_weight widens Q(logged) - Q(other actions).
    data = rows(64)
    data["actions"] = np.full((64, 1), 1.5, np.float32)
    gaps = {}
    for weight in (0.0, 5.0):
        policy = make_policy(min_q_weight=weight, bc_iters=0)
        for _ in range(3):
            policy.learn_on_batch(data, num_sgd_iter=20)
        q_in = policy.model.twin_q(data["obs"], data["actions"])[0].numpy()
        q_out = policy.model.twin_q(data["obs"], -data["actions"])[0].numpy()
        gaps[weight] = float(np.mean(q_in - q_out))
    # Measured: 0.07 without the penalty, 0.44 with it.
    assert gaps[5.0] > gaps[0.0] + 0.25, gaps


@pytest.mark.slow
def test_lagrangian_learns_alpha_prime_and_keeps_it_in_the_state():
    policy = make_policy(lagrangian=True, lagrangian_thresh=-100.0)
    assert float(policy.model.log_alpha_prime.numpy()) == 0.0
    stats = policy.learn_on_batch(rows())["learner_stats"]
    assert "alpha_prime" in stats and "alpha_prime_loss" in stats
    # The penalty is far above the threshold: alpha' grows.
    assert float(policy.model.log_alpha_prime.numpy()) > 0.0
    other = make_policy(lagrangian=True, lagrangian_thresh=-100.0)
    other.set_state(policy.get_state())
    assert float(other.model.log_alpha_prime.numpy()) == float(
        policy.model.log_alpha_prime.numpy())


def test_discrete_action_space_is_refused_naming_it():
    # The policy refuses it, pointing to discrete CQL; the algorithm builds discrete CQL
    # (tests/test_cql_dqn.py), refusing the SAC-based CQL's network keys.
    with pytest.raises(ValueError, match=r"CQLTFPolicy .*needs a Box action space; "
                                         r"received Discrete\(2\).*CQLDQNTFPolicy"):
        CQLTFPolicy(OBS_SPACE, gym.spaces.Discrete(2), SMALL)
    with pytest.raises(ValueError, match=r"Discrete action space Discrete\(2\).*no key\(s\) "
                                         r"\['policy_model_config', 'q_model_config'\]"):
        CQL(config={**SMALL, "env": "CartPole-v1"})


def write_data(path, drop):
    data = SampleBatch(rows(20))
    data["eps_id"] = np.zeros(20, np.int64)
    del data[drop]
    writer = JsonWriter(path)
    writer.write(data)
    writer.close()


@pytest.mark.parametrize("drop", ["new_obs", "rewards", "actions", "terminateds"])
def test_data_without_a_needed_column_is_refused_naming_the_file(tmp_path, drop):
    write_data(str(tmp_path), drop)
    algo = CQL(config={**SMALL, "env": "Pendulum-v1", "input": str(tmp_path),
                       "observation_filter": "NoFilter"})
    try:
        with pytest.raises(ValueError, match=rf"{re.escape(str(tmp_path))}.*\.json.*lacks "
                                             rf"the column\(s\) \['{drop}'\].*CQLTFPolicy"):
            algo.train()
    finally:
        algo.stop()


@pytest.mark.slow
def test_tfrl_train_runs_cql_from_files(tmp_path):
    data = tmp_path / "data"
    writer = JsonWriter(str(data))
    for episode in range(3):
        batch = SampleBatch(rows(50, seed=episode))
        batch["obs"] = np.random.default_rng(episode).uniform(-1, 1, (50, 3)).astype(
            np.float32)
        batch["eps_id"] = np.full(50, episode, np.int64)
        writer.write(batch)
    writer.close()
    lines = run_tfrl("train", "--algo=CQL", f"--config={tuned('cql_pendulum.yaml')}",
                     f"--config_override=input={data}",
                     "--config_override=timesteps_per_iteration=100",
                     "--config_override=rollout_fragment_length=50",
                     "--config_override=learning_starts=100",
                     "--config_override=train_batch_size=32",
                     "--config_override=training_intensity=1.28",
                     "--config_override=evaluation_interval=0",
                     "--config_override=q_model_config.fcnet_hiddens=[8]",
                     "--config_override=policy_model_config.fcnet_hiddens=[8]",
                     "--stop=training_iteration=2", f"--logdir={tmp_path / 'logs'}"
                     ).splitlines()
    assert re.match(r"iter +1  steps +100", lines[0]), lines
    assert any(x.startswith("Finished (training_iteration=2 >= 2): 2 iterations, 200 env")
               for x in lines), lines
