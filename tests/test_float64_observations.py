"""Box observation spaces of dtype float64 (MuJoCo's) through the off-policy learners:
s_t and s_{t+1} reach the loss with one dtype (SAC runs its actor over both at once;
this failed with "types [float64, float32] that don't all match" before)."""

import gymnasium as gym
import numpy as np
import pytest

from tfrl.algorithms.sac import SACConfig, SACTFPolicy
from tfrl.algorithms.td3.td3_config import TD3Config
from tfrl.algorithms.td3.td3_tf_policy import TD3TFPolicy

OBS64 = gym.spaces.Box(-np.inf, np.inf, (5,), np.float64)
ACTIONS = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
NETS = {"fcnet_hiddens": [16], "fcnet_activation": "relu"}


def float64_batch(rows=16, seed=0):
    rng = np.random.default_rng(seed)
    return {"obs": rng.normal(size=(rows, 5)), "new_obs": rng.normal(size=(rows, 5)),
            "actions": rng.uniform(-1, 1, (rows, 2)).astype(np.float32),
            "rewards": rng.normal(size=rows).astype(np.float32),
            "terminateds": np.arange(rows) % 4 == 3}


@pytest.mark.parametrize("policy_class, config", [
    (SACTFPolicy, SACConfig.from_dict({"seed": 0, "q_model_config": NETS,
                                       "policy_model_config": NETS})),
    (TD3TFPolicy, TD3Config.from_dict({"seed": 0, "actor_hiddens": [16],
                                       "critic_hiddens": [16]})),
], ids=["SAC", "TD3"])
def test_float64_observations_learn(policy_class, config):
    policy = policy_class(OBS64, ACTIONS, config.to_dict())
    before = [v.numpy().copy() for v in policy.model.trainable_variables]
    info = policy.learn_on_batch(float64_batch(), sgd_minibatch_size=8)
    stats = info["learner_stats"]
    assert np.isfinite(stats["critic_loss"]) and np.isfinite(stats["actor_loss"])
    assert int(policy.num_grad_updates.numpy()) == 2
    after = policy.model.trainable_variables
    assert sum(not np.array_equal(a.numpy(), b) for a, b in zip(after, before)) >= len(before) // 2
    # Acting on float64 observations gives actions in the Box.
    actions = policy.compute_actions(float64_batch(3)["obs"], explore=False)[0]
    assert actions.shape == (3, 2) and np.all(np.abs(actions) <= 1.0)
