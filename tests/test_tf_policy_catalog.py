"""TFPolicy with the catalog's models and distributions, for each kind of action space."""

import gymnasium as gym
import keras
import numpy as np
import pytest

from tfrl.policy.strategy import make_strategy
from tfrl.policy.tf_policy import TFPolicy

OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
ACTION_SPACES = {
    "discrete": gym.spaces.Discrete(3),
    "multi_discrete": gym.spaces.MultiDiscrete([2, 3]),
    "box": gym.spaces.Box(-np.inf, np.inf, (2,), np.float32),
    "dict": gym.spaces.Dict({"a": gym.spaces.Discrete(2),
                             "b": gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)}),
}


# The process-wide strategies: separate MirroredStrategy objects would collide.
MIRRORED = make_strategy({"num_gpus": 2, "_fake_gpus": True})


class CatalogPG(TFPolicy):
    """Policy gradient on catalog parts; SGD so that replica scaling bugs show."""

    def make_optimizer(self):
        return keras.optimizers.SGD(self.config["lr"])

    def loss(self, model, dist_class, train_batch):
        dist_inputs, value = model(train_batch["obs"], training=True)
        logp = dist_class(dist_inputs, model).logp(train_batch["actions"])  # [B]
        return (-self.global_mean(logp * train_batch["advantages"])
                + self.global_mean((value - train_batch["advantages"]) ** 2))


def _policy(action_space, strategy):
    keras.utils.set_random_seed(0)
    config = {"seed": 0, "lr": 0.05, "num_sgd_iter": 2, "sgd_minibatch_size": 8,
              "model": {"fcnet_hiddens": [8]}}
    return CatalogPG(OBS, action_space, config, strategy=strategy)


@pytest.mark.parametrize("name", sorted(ACTION_SPACES))
def test_catalog_policy_acts_learns_and_matches_across_strategies(name):
    space = ACTION_SPACES[name]
    single = _policy(space, make_strategy({}))
    mirrored = _policy(space, MIRRORED)
    rng = np.random.default_rng(0)
    obs = rng.uniform(-1, 1, (16, 3)).astype(np.float32)
    actions, state_outs, extras = single.compute_actions(obs)
    assert state_outs == [] and extras["action_logp"].shape == (16,)
    assert extras["vf_preds"].shape == (16,)
    for i in range(16):
        item = {k: v[i] for k, v in actions.items()} if name == "dict" else actions[i]
        if name != "box":
            assert space.contains(item if name != "dict" else
                                  {"a": int(item["a"]), "b": item["b"].astype(np.float32)})
    deterministic, _, extras = single.compute_actions(obs, explore=False)
    np.testing.assert_array_equal(extras["action_logp"], np.zeros(16, np.float32))
    batch = {"obs": obs, "actions": actions, "advantages": rng.normal(size=16).astype(np.float32)}
    for policy in (single, mirrored):
        for _ in range(3):
            info = policy.learn_on_batch(batch)
        assert policy.num_traces["learn_on_batch"] == 1
        assert np.isfinite(info["learner_stats"]["total_loss"])
    for a, b in zip(single.get_weights(), mirrored.get_weights()):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_policies_of_different_shapes_learn_under_config_strategies():
    config = {"seed": 0, "lr": 0.05, "sgd_minibatch_size": 8, "num_gpus": 2, "_fake_gpus": True,
              "model": {"fcnet_hiddens": [8]}}
    rng = np.random.default_rng(0)
    obs = rng.uniform(-1, 1, (16, 3)).astype(np.float32)
    for space, hiddens in ((gym.spaces.Discrete(3), [8]), (gym.spaces.Discrete(5), [4, 4])):
        policy = CatalogPG(OBS, space, {**config, "model": {"fcnet_hiddens": hiddens}})
        actions, _, _ = policy.compute_actions(obs)
        info = policy.learn_on_batch({"obs": obs, "actions": actions,
                                      "advantages": np.ones(16, np.float32)})
        assert np.isfinite(info["learner_stats"]["total_loss"])


def test_grad_clip_uses_the_global_norm_of_the_summed_gradients():
    rng = np.random.default_rng(0)
    obs = rng.uniform(-1, 1, (16, 3)).astype(np.float32)
    batch = {"obs": obs, "actions": rng.integers(0, 3, 16),
             "advantages": 10 * rng.normal(size=16).astype(np.float32)}
    weights, grads = [], []
    for strategy in (make_strategy({}), MIRRORED):
        keras.utils.set_random_seed(0)
        policy = CatalogPG(OBS, gym.spaces.Discrete(3), {
            "seed": 0, "lr": 0.05, "grad_clip": 0.01, "sgd_minibatch_size": 8,
            "model": {"fcnet_hiddens": [8]}}, strategy=strategy)
        grads.append(policy.compute_gradients(batch)[0])
        policy.learn_on_batch(batch)
        weights.append(policy.get_weights())
    for a, b in zip(*weights):
        np.testing.assert_allclose(a, b, atol=1e-6)
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, atol=1e-6)
    assert np.sqrt(sum((g ** 2).sum() for g in grads[0])) == pytest.approx(0.01, rel=1e-4)
