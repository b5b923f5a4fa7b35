"""TFPolicy.call_model is the one path to the model's outputs, and loss_and_stats is what
the train step calls: overriding either changes acting, values, the loss and the export
alike; RLlib-style subclasses that override only `loss` still learn with it."""

import gymnasium as gym
import keras
import numpy as np
import pytest
import tensorflow as tf

from policy_helpers import RNN_ACT, RNN_MODEL, RNN_OBS, RecurrentPG
from tfrl.algorithms.pg.pg_tf_policy import PGTFPolicy
from tfrl.algorithms.ppo.ppo_tf_policy import PPOTFPolicy
from tfrl.policy.sample_batch import SampleBatch

OBS = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
ACT = gym.spaces.Discrete(2)
CONFIG = {"seed": 0, "model": {"fcnet_hiddens": [8]}, "lr": 0.0}
SHIFT = np.array([0.0, 50.0], np.float32)  # added to the logits: action 1 wins


class ShiftedPG(PGTFPolicy):
    """Logits + [0, 50] and values + 10, for acting, values and the loss alike."""

    def call_model(self, obs, state_in, prev=None, seq_lens=None, training=False):
        dist_inputs, value, state_out = super().call_model(obs, state_in, prev, seq_lens,
                                                           training)
        return dist_inputs + SHIFT, value + 10.0, state_out


def log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def pg_batch(n=6, seed=0):
    rng = np.random.default_rng(seed)
    return SampleBatch(obs=rng.uniform(-1, 1, (n, 4)).astype(np.float32),
                       actions=np.zeros(n, np.int64),
                       advantages=rng.uniform(0.5, 1.5, n).astype(np.float32))


def test_overriding_call_model_changes_actions_values_and_loss_alike():
    base, shifted = PGTFPolicy(OBS, ACT, CONFIG), ShiftedPG(OBS, ACT, CONFIG)
    for got, want in zip(shifted.get_weights(), base.get_weights()):
        np.testing.assert_array_equal(got, want)  # same seed: same weights
    batch = pg_batch()
    _, _, base_extras = base.compute_actions(batch["obs"], explore=False)

    actions, _, extras = shifted.compute_actions(batch["obs"], explore=False)
    np.testing.assert_array_equal(actions, np.ones(6))
    np.testing.assert_allclose(extras["action_dist_inputs"],
                               base_extras["action_dist_inputs"] + SHIFT, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(extras["vf_preds"], base_extras["vf_preds"] + 10.0, rtol=1e-5)
    np.testing.assert_allclose(shifted.value(batch["obs"]), base.value(batch["obs"]) + 10.0,
                               rtol=1e-5)

    # The loss sees the shifted logits: -mean(log pi(0 | s) * A) with pi(0 | s) ~ e^-50.
    logp = log_softmax(base_extras["action_dist_inputs"].astype(np.float64) + SHIFT)[:, 0]
    expected = -np.mean(logp * batch["advantages"])
    _, info = shifted.compute_gradients(batch)
    assert info["learner_stats"]["total_loss"] == pytest.approx(expected, rel=1e-4)
    assert info["learner_stats"]["total_loss"] > 10.0


def test_overriding_call_model_reaches_the_saved_model(tmp_path):
    shifted = ShiftedPG(OBS, ACT, CONFIG)
    obs = pg_batch()["obs"]
    _, _, extras = shifted.compute_actions(obs, explore=False)
    shifted.export_model(str(tmp_path / "saved"))
    loaded = tf.saved_model.load(str(tmp_path / "saved"))
    out = loaded.signatures["deterministic_action"](obs=tf.constant(obs))
    np.testing.assert_array_equal(out["actions"].numpy(), np.ones(6))
    np.testing.assert_array_equal(out["vf_preds"].numpy(), extras["vf_preds"])
    np.testing.assert_array_equal(loaded.signatures["value"](obs=tf.constant(obs))["vf_preds"],
                                  extras["vf_preds"])


def test_overriding_call_model_turns_numpy_inference_off():
    assert PGTFPolicy(OBS, ACT, CONFIG).inference == "numpy"
    assert ShiftedPG(OBS, ACT, CONFIG).inference == "tf"
    with pytest.raises(ValueError, match=r"inference'\]='numpy' is not supported for ShiftedPG: "
                                         r"ShiftedPG overrides call_model"):
        ShiftedPG(OBS, ACT, {**CONFIG, "inference": "numpy"})


def test_overriding_call_model_of_a_recurrent_policy():
    class ShiftedValue(RecurrentPG):
        def call_model(self, obs, state_in, prev=None, seq_lens=None, training=False):
            dist_inputs, value, state_out = super().call_model(obs, state_in, prev, seq_lens,
                                                               training)
            return dist_inputs, value + 10.0, state_out

    config = {"seed": 0, "lr": 0.1, "model": RNN_MODEL}
    keras.utils.set_random_seed(0)
    base = RecurrentPG(RNN_OBS, RNN_ACT, config)
    keras.utils.set_random_seed(0)
    shifted = ShiftedValue(RNN_OBS, RNN_ACT, config)
    obs = np.random.default_rng(0).uniform(-1, 1, (3, 3)).astype(np.float32)
    state = [np.full((3, 4), 0.5, np.float32)] * 2
    _, _, base_extras = base.compute_actions(obs, state, explore=False)
    _, _, extras = shifted.compute_actions(obs, state, explore=False)
    np.testing.assert_allclose(extras["vf_preds"], base_extras["vf_preds"] + 10.0, rtol=1e-5)
    np.testing.assert_allclose(shifted.value(obs, state), base_extras["vf_preds"] + 10.0,
                               rtol=1e-5)


def test_forward_rejects_another_model():
    policy = PGTFPolicy(OBS, ACT, CONFIG)
    with pytest.raises(ValueError, match=r"PGTFPolicy.forward\(\) runs call_model on the "
                                         r"policy's own model .* received another model "
                                         r"\(Sequential\)"):
        policy.forward(keras.Sequential(), {"obs": tf.zeros((1, 4))})


# ------------------------------------------------------------- loss / loss_and_stats

def ppo_batch(n=8, seed=0):
    rng = np.random.default_rng(seed)
    return SampleBatch(
        obs=rng.uniform(-1, 1, (n, 4)).astype(np.float32),
        actions=rng.integers(0, 2, n),
        action_logp=np.log(rng.uniform(0.2, 0.8, n)).astype(np.float32),
        action_dist_inputs=rng.normal(size=(n, 2)).astype(np.float32),
        advantages=rng.normal(size=n).astype(np.float32),
        value_targets=rng.normal(size=n).astype(np.float32),
        vf_preds=rng.normal(size=n).astype(np.float32))


PPO_CONFIG = {"seed": 0, "model": {"fcnet_hiddens": [8]}, "lr": 0.01, "entropy_coeff": 0.01,
              "num_sgd_iter": 1, "sgd_minibatch_size": None}  # one step on the whole batch


def test_loss_returns_the_loss_of_loss_and_stats():
    policy = PPOTFPolicy(OBS, ACT, PPO_CONFIG)
    batch = ppo_batch()
    _, info = policy.compute_gradients(batch)
    tensors = {k: tf.constant(v if v.dtype != np.float64 else v.astype(np.float32))
               for k, v in batch.items()}
    loss = policy.loss(policy.model, policy.dist_class, tensors)
    assert float(loss) == pytest.approx(info["learner_stats"]["total_loss"], rel=1e-5)


def test_a_subclass_overriding_only_loss_learns_with_it():
    class ZeroLoss(PPOTFPolicy):
        def loss(self, model, dist_class, train_batch):
            return 0.0 * super().loss(model, dist_class, train_batch)

    policy = ZeroLoss(OBS, ACT, PPO_CONFIG)
    before = policy.get_weights()
    stats = policy.learn_on_batch(ppo_batch())["learner_stats"]
    assert stats["total_loss"] == 0.0
    # Its stats are PPOTFPolicy.stats (the loss's own stats come from loss_and_stats).
    assert {"cur_kl_coeff", "cur_lr", "entropy_coeff"} <= set(stats) and "kl" not in stats
    for got, want in zip(policy.get_weights(), before):
        np.testing.assert_array_equal(got, want)  # zero gradients: Adam does not move


def test_a_subclass_extending_loss_and_stats_keeps_the_algorithms_stats():
    class ExtraStat(PPOTFPolicy):
        def loss_and_stats(self, model, dist_class, train_batch):
            loss, stats = super().loss_and_stats(model, dist_class, train_batch)
            return loss, {**stats, "extra": tf.constant(2.0)}

    batch = ppo_batch()
    stats = ExtraStat(OBS, ACT, PPO_CONFIG).learn_on_batch(batch)["learner_stats"]
    reference = PPOTFPolicy(OBS, ACT, PPO_CONFIG).learn_on_batch(batch)["learner_stats"]
    assert stats.pop("extra") == 2.0
    assert stats == reference
