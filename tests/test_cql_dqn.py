"""Discrete CQL on DQN: the pure loss against hand-computed numbers, the policy (DQN's
Q-values plus the penalty), the config's checks, and `CQL` building it for a Discrete
action space (clear errors for keys of the other variant)."""

import math

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from tfrl.algorithms.cql import CQL, CQLConfig
from tfrl.algorithms.cql_dqn import CQLDQN, CQLDQNConfig, CQLDQNTFPolicy
from tfrl.algorithms.cql_dqn.cql_dqn_loss import cql_dqn_loss, discrete_cql_penalty
from tfrl.algorithms.dqn import DQNConfig
from tfrl.algorithms.dqn.dqn_loss import dqn_loss
from tfrl.algorithms.registry import get_algorithm_class


def c(values, dtype=tf.float32):
    return tf.constant(values, dtype)


# Two rows, two actions. Row 0: Q = (1, 0), logged action 0: lse = ln(e + 1) = 1.3132617,
# gap 0.3132617. Row 1: Q = (2, 2), action 1: lse = 2 + ln 2, gap ln 2.
Q_T, ACTIONS = c([[1.0, 0.0], [2.0, 2.0]]), c([0, 1], tf.int32)
GAP0, GAP1 = math.log(math.e + 1.0) - 1.0, math.log(2.0)


def test_penalty_hand_computed():
    penalty, local, lse = discrete_cql_penalty(Q_T, ACTIONS, min_q_weight=1.0)
    assert float(penalty) == pytest.approx((GAP0 + GAP1) / 2, rel=1e-6)
    assert float(local) == pytest.approx((GAP0 + GAP1) / 2, rel=1e-6)
    np.testing.assert_allclose(lse.numpy(), [1.0 + GAP0, 2.0 + GAP1], rtol=1e-6)


def test_penalty_temperature_and_weight_hand_computed():
    # T = 2: row 0: 2 ln(e^0.5 + 1) - 1 = 0.9481546; row 1: 2 (1 + ln 2) - 2 = 2 ln 2.
    penalty, _, _ = discrete_cql_penalty(Q_T, ACTIONS, temperature=2.0, min_q_weight=3.0)
    row0 = 2.0 * math.log(math.exp(0.5) + 1.0) - 1.0
    assert row0 == pytest.approx(0.9481546, rel=1e-6)
    assert float(penalty) == pytest.approx(3.0 * (row0 + 2.0 * math.log(2.0)) / 2, rel=1e-6)


def test_penalty_gradient_is_softmax_minus_the_logged_action():
    q = tf.Variable(Q_T)
    with tf.GradientTape() as tape:
        penalty, _, _ = discrete_cql_penalty(q, ACTIONS, min_q_weight=1.0)
    grad = tape.gradient(penalty, q).numpy()
    p = math.e / (math.e + 1.0)  # softmax(1, 0)[0]
    np.testing.assert_allclose(grad, [[(p - 1.0) / 2, (1.0 - p) / 2], [0.25, -0.25]],
                               rtol=1e-6)


def test_loss_is_dqn_loss_plus_penalty_hand_computed():
    # Terminated rows: y = r. Row 0: delta 1 - 1 = 0; row 1: 2 - 2.5 = -0.5, Huber 0.125.
    args = (Q_T, ACTIONS, c([1.0, 2.5]), c([1.0, 1.0]), tf.zeros([2, 2]))
    loss, stats = cql_dqn_loss(*args, gamma=0.99, min_q_weight=1.0)
    assert float(loss) == pytest.approx(0.0625 + (GAP0 + GAP1) / 2, rel=1e-6)
    assert float(stats["cql_loss"]) == pytest.approx((GAP0 + GAP1) / 2, rel=1e-6)
    assert float(stats["cql_lse"]) == pytest.approx((3.0 + GAP0 + GAP1) / 2, rel=1e-6)
    assert float(stats["mean_q"]) == pytest.approx(1.5)
    # min_q_weight 0 is DQN's loss exactly (squared error here).
    plain, _ = dqn_loss(*args, gamma=0.99, huber_delta=None)
    zero, _ = cql_dqn_loss(*args, gamma=0.99, huber_delta=None, min_q_weight=0.0)
    assert float(zero) == float(plain) == pytest.approx(0.0625)


def test_penalty_bad_input_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"q_t must be float Q-values \[B, num_actions\]"):
        discrete_cql_penalty(c([1.0, 2.0]), ACTIONS, min_q_weight=1.0)
    with pytest.raises(ValueError, match=r"actions_t must be int actions \[B\]; received "
                                         r"float32"):
        discrete_cql_penalty(Q_T, c([0.0, 1.0]), min_q_weight=1.0)
    with pytest.raises(ValueError, match=r"discrete_cql_penalty\(\): q_t has 2 rows; the "
                                         r"per-row tensors have 3"):
        discrete_cql_penalty(Q_T, c([0, 1, 1], tf.int32), min_q_weight=1.0)
    with pytest.raises(ValueError, match=r"temperature must be > 0; received 0.0"):
        discrete_cql_penalty(Q_T, ACTIONS, temperature=0.0, min_q_weight=1.0)


# ---------------------------------------------------------------------------- policy

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
SMALL = {"seed": 0, "model": {"fcnet_hiddens": [16]}, "hiddens": [8]}


def batch(n=8, seed=0):
    rng = np.random.default_rng(seed)
    return {"obs": c(rng.uniform(-1, 1, (n, 4))), "new_obs": c(rng.uniform(-1, 1, (n, 4))),
            "actions": c(rng.integers(0, 3, n), tf.int32),
            "rewards": c(rng.normal(size=n)), "terminateds": c(np.arange(n) % 3 == 2)}


def test_policy_loss_is_dqns_on_the_same_q_values_plus_the_penalty(monkeypatch):
    config = CQLDQNConfig.from_dict({**SMALL, "min_q_weight": 2.0, "temperature": 0.5})
    policy = CQLDQNTFPolicy(OBS_SPACE, gym.spaces.Discrete(3), config.to_dict())
    train = batch()
    loss, stats = policy.loss_and_stats(policy.model, None, train)
    with monkeypatch.context() as patch:  # DQN's own TD loss on the same policy
        patch.setattr(policy, "td_loss_function", lambda: (dqn_loss, {}))
        dqn_part, _ = policy.loss_and_stats(policy.model, None, train)
    q = policy.q_values(policy.model, train["obs"]).numpy().astype(np.float64)
    chosen = q[np.arange(8), train["actions"].numpy()]
    lse = 0.5 * np.log(np.sum(np.exp(q / 0.5), axis=1))
    assert float(loss) == pytest.approx(float(dqn_part) + 2.0 * np.mean(lse - chosen),
                                        rel=1e-5)
    assert float(stats["cql_loss"]) == pytest.approx(2.0 * np.mean(lse - chosen), rel=1e-5)
    assert "min_q" not in stats and "cur_lr" in stats


def test_policy_learns_to_prefer_the_logged_actions_without_reward():
    # Zero rewards and terminal rows: the TD targets are 0, so the penalty alone orders
    # the Q-values: after training, the greedy action is the logged one (always 2).
    policy = CQLDQNTFPolicy(OBS_SPACE, gym.spaces.Discrete(3),
                            CQLDQNConfig.from_dict({**SMALL, "lr": 1e-2}).to_dict())
    rng = np.random.default_rng(1)
    obs = rng.uniform(-1, 1, (64, 4)).astype(np.float32)
    data = {"obs": obs, "new_obs": obs, "actions": np.full(64, 2, np.int32),
            "rewards": np.zeros(64, np.float32), "terminateds": np.ones(64, np.float32)}
    for _ in range(30):
        policy.learn_on_batch(data)
    actions, _, _ = policy.compute_actions(obs, explore=False)
    assert (np.asarray(actions) == 2).all()


def test_policy_refuses_box_actions_naming_them():
    with pytest.raises(ValueError, match=r"CQLDQNTFPolicy needs a Discrete action space.*Box"):
        CQLDQNTFPolicy(OBS_SPACE, gym.spaces.Box(-1.0, 1.0, (1,)), SMALL)


def test_config_defaults_and_ranges():
    config = CQLDQNConfig()
    assert (config.min_q_weight, config.temperature) == (1.0, 1.0)
    assert config.evaluation_config == {"input": "sampler", "explore": False}
    assert config.dueling and config.double_q  # DQN's defaults
    with pytest.raises(ValueError, match="min_q_weight"):
        CQLDQNConfig(min_q_weight=-1.0)
    with pytest.raises(ValueError, match="temperature"):
        CQLDQNConfig(temperature=0.0)
    assert get_algorithm_class("CQL_DQN") is CQLDQN


# ------------------------------------------------------------- CQL picks the variant

def test_cql_builds_discrete_cql_for_a_discrete_action_space():
    algo = CQL(config={**SMALL, "env": "CartPole-v1", "min_q_weight": 3.0})
    try:
        assert type(algo) is CQLDQN
        policy = algo.get_policy()
        assert type(policy) is CQLDQNTFPolicy and policy.config["min_q_weight"] == 3.0
        assert policy.config["hiddens"] == [8]
    finally:
        algo.stop()


def test_cql_from_a_config_object_passes_the_keys_it_changed():
    config = CQLConfig().training(temperature=0.5, lr=1e-3).environment(env="CartPole-v1")
    algo = CQL(config=config)
    try:
        assert type(algo) is CQLDQN
        assert algo.config["temperature"] == 0.5 and algo.config["lr"] == 1e-3
        # Keys left at CQL's defaults take discrete CQL's (DQN's) defaults.
        assert algo.config["train_batch_size"] == DQNConfig().train_batch_size
    finally:
        algo.stop()


def test_cql_refuses_keys_of_the_other_variant_naming_them():
    with pytest.raises(ValueError, match=r"Discrete action space Discrete\(2\).*no key\(s\) "
                                         r"\['bc_iters', 'num_actions'\].*SAC-based CQL"):
        CQL(config={"env": "CartPole-v1", "bc_iters": 0, "num_actions": 4})
    with pytest.raises(ValueError, match=r"action space Box\(-2.0, 2.0, \(1,\), float32\) "
                                         r"trains the SAC-based CQL.*\['dueling', 'hiddens'\]"):
        CQL(config={"env": "Pendulum-v1", "dueling": False, "hiddens": [8]})
    # A key neither variant has: the unknown-key error, naming the closest key.
    with pytest.raises(ValueError, match=r"Unknown CQLDQNConfig key 'min_q_weigth'. Did you mean 'min_q_weight'"):
        CQL(config={"env": "CartPole-v1", "min_q_weigth": 1.0})
