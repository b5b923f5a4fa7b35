"""The shared space/model checks of the off-policy and V-trace policies
(`tfrl.algorithms.policy_checks`): what passes, what raises, and the policies that use them."""

import importlib

import gymnasium as gym
import numpy as np
import pytest

from tfrl.algorithms.policy_checks import (check_box_actions, check_discrete,
                                           check_no_recurrent_model)

BOX = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)


@pytest.mark.parametrize("config", [{}, None, {"model": None}, {"model": {"use_lstm": False}},
                                    {"model": {"fcnet_hiddens": [8]}}])
def test_no_recurrent_model_passes_feed_forward(config):
    check_no_recurrent_model(config, "X")


def test_no_recurrent_model_names_every_recurrent_key_and_the_hint():
    with pytest.raises(ValueError, match=r"^SACTFPolicy does not support recurrent models; "
                                         r"received model config use_lstm=True, "
                                         r"use_attention=True\. Set them to False, or stack"):
        check_no_recurrent_model({"model": {"use_lstm": True, "use_attention": 1}},
                                 "SACTFPolicy")
    with pytest.raises(ValueError, match=r"use_attention=True\. Use PPO\.$"):
        check_no_recurrent_model({"model": {"use_attention": True}}, "X", hint="Use PPO.")


def test_box_actions():
    check_box_actions(BOX)
    with pytest.raises(ValueError, match=r"^TD3 needs a Box action space \(a deterministic "
                                         r"actor .*received Discrete\(3\).*SAC's discrete"):
        check_box_actions(gym.spaces.Discrete(3))
    with pytest.raises(ValueError, match=r"^DDPG needs a Box action space of continuous "
                                         r"actions; received MultiBinary\(2\)\. Give the env "
                                         r"a Box action space .*use SAC's discrete variant "
                                         r"or DQN for Discrete actions\.$"):
        check_box_actions(gym.spaces.MultiBinary(2), "DDPG")
    with pytest.raises(ValueError, match=r"bounds, which must be finite; received Box\(-inf"):
        check_box_actions(gym.spaces.Box(-np.inf, np.inf, (2,), np.float32))


def test_discrete():
    check_discrete(gym.spaces.Discrete(2))
    with pytest.raises(ValueError, match=r"^DQN needs a Discrete action space \(one Q-value "
                                         r"per action\); received Box\(-1\.0, 1\.0, \(2,\)"):
        check_discrete(BOX)


@pytest.mark.parametrize("module, name", [
    ("tfrl.algorithms.sac.sac_tf_policy", "SACTFPolicy"),
    ("tfrl.algorithms.cql.cql_tf_policy", "CQLTFPolicy"),
    ("tfrl.algorithms.td3.td3_tf_policy", "TD3TFPolicy"),
    ("tfrl.algorithms.ddpg.ddpg", "DDPGTFPolicy"),
    ("tfrl.algorithms.dqn.dqn_tf_policy", "DQNTFPolicy"),
])
def test_policies_refuse_recurrent_models_before_building(module, name):
    policy_class = getattr(importlib.import_module(module), name)
    actions = gym.spaces.Discrete(2) if name == "DQNTFPolicy" else BOX
    obs = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    with pytest.raises(ValueError, match=rf"^{name} does not support recurrent models; "
                                         r"received model config use_lstm=True\."):
        policy_class(obs, actions, {"model": {"use_lstm": True}})
