"""SACConfig, TD3Config and DDPGConfig: RLlib's keys and defaults, merged sub-dicts,
classic aliases, and values checked at the door with messages naming the key."""

import gymnasium as gym
import pytest

from tfrl.algorithms.algorithm_config import AlgorithmConfig
from tfrl.algorithms.off_policy_config import OffPolicyConfig
from tfrl.algorithms.registry import ALGORITHMS, get_algorithm_class
from tfrl.algorithms.sac.sac_config import SACConfig
from tfrl.algorithms.sac.sac_loss import resolve_target_entropy
from tfrl.algorithms.td3.td3_config import DDPGConfig, TD3Config
from tfrl.utils.config_keys import UnknownKeyError


def test_sac_defaults_are_rllibs():
    c = SACConfig()
    assert (c.twin_q, c.tau, c.initial_alpha, c.target_entropy, c.n_step) == (
        True, 5e-3, 1.0, "auto", 1)
    assert c.optimization == {"actor_learning_rate": 3e-4, "critic_learning_rate": 3e-4,
                              "entropy_learning_rate": 3e-4}
    assert c.q_model_config["fcnet_hiddens"] == [256, 256]
    assert c.policy_model_config["fcnet_activation"] == "relu"
    assert (c.train_batch_size, c.rollout_fragment_length, c.target_network_update_freq,
            c.num_steps_sampled_before_learning_starts) == (256, 1, 0, 1500)
    assert c.replay_buffer_config["capacity"] == 1_000_000 and c.prioritized_replay
    assert c.training_intensity is None and c.store_buffer_in_checkpoints is False
    # Each instance owns its dicts.
    assert c.q_model_config is not SACConfig().q_model_config
    assert c.q_model_config is not c.policy_model_config


def test_td3_and_ddpg_defaults_are_rllibs():
    ddpg, td3 = DDPGConfig(), TD3Config()
    assert (ddpg.twin_q, ddpg.policy_delay, ddpg.smooth_target_policy) == (False, 1, False)
    assert (td3.twin_q, td3.policy_delay, td3.smooth_target_policy) == (True, 2, True)
    assert (td3.target_noise, td3.target_noise_clip) == (0.2, 0.5)
    assert (ddpg.tau, td3.tau, ddpg.l2_reg, td3.l2_reg) == (0.002, 5e-3, 1e-6, 0.0)
    assert (ddpg.actor_lr, ddpg.critic_lr, td3.actor_hiddens) == (1e-3, 1e-3, [400, 300])
    assert (ddpg.use_huber, ddpg.huber_threshold) == (False, 1.0)
    assert ddpg.prioritized_replay and not td3.prioritized_replay
    assert (ddpg.replay_buffer_config["capacity"], td3.replay_buffer_config["capacity"]) == (
        50000, 1_000_000)
    assert (ddpg.train_batch_size, td3.train_batch_size) == (256, 100)
    assert (ddpg.num_steps_sampled_before_learning_starts,
            td3.num_steps_sampled_before_learning_starts) == (1500, 10000)
    assert ddpg.exploration_config["type"] == "OrnsteinUhlenbeckNoise"
    assert td3.exploration_config == {"type": "GaussianNoise", "random_timesteps": 10000,
                                      "stddev": 0.1, "initial_scale": 1.0,
                                      "final_scale": 1.0, "scale_timesteps": 1}
    assert isinstance(td3, DDPGConfig) and isinstance(ddpg, OffPolicyConfig)


def test_partial_dicts_are_merged():
    c = SACConfig().training(optimization={"actor_learning_rate": 1e-3},
                             replay_buffer_config={"type": "MultiAgentReplayBuffer"})
    assert c.optimization["actor_learning_rate"] == 1e-3
    assert c.optimization["critic_learning_rate"] == 3e-4
    assert not c.prioritized_replay and c.replay_buffer_config["capacity"] == 1_000_000
    # replace()/training() merge into the current value, not the default.
    c = c.training(replay_buffer_config={"capacity": 100})
    assert c.replay_buffer_config["type"] == "MultiAgentReplayBuffer"
    assert c.replay_buffer_config["capacity"] == 100
    # from_dict merges into the class's default.
    c = TD3Config.from_dict({"replay_buffer_config": {"capacity": 7}})
    assert c.replay_buffer_config == {**TD3Config().replay_buffer_config, "capacity": 7}


def test_classic_aliases_and_round_trip():
    c = SACConfig.from_dict({"learning_starts": 10, "Q_model": {"fcnet_hiddens": [64]},
                             "policy_model": {"fcnet_activation": "tanh"}})
    assert c.num_steps_sampled_before_learning_starts == 10
    assert c.q_model_config["fcnet_hiddens"] == [64]
    assert c.q_model_config["fcnet_activation"] == "relu"
    assert c.policy_model_config["fcnet_activation"] == "tanh"
    assert SACConfig.from_dict(c.to_dict()) == c
    assert TD3Config.from_dict(TD3Config().to_dict()) == TD3Config()
    # The aliases belong to the configs that have the fields.
    with pytest.raises(UnknownKeyError, match="Unknown AlgorithmConfig key 'learning_starts'"):
        AlgorithmConfig.from_dict({"learning_starts": 10})


def test_sac_td3_and_ddpg_are_registered_with_their_configs():
    # Registered: the conformance suite covers them.
    for name, config_class in (("SAC", SACConfig), ("TD3", TD3Config), ("DDPG", DDPGConfig)):
        algo_class, registered = get_algorithm_class(name, return_config=True)
        assert registered is config_class and config_class.algo_class is algo_class
        assert name in ALGORITHMS


def test_auto_target_entropy_resolves_per_space():
    assert resolve_target_entropy(SACConfig().target_entropy,
                                  gym.spaces.Box(-2, 2, (6,))) == -6.0
    assert SACConfig(target_entropy=-2).target_entropy == -2


@pytest.mark.parametrize("config_class, kwargs, error, match", [
    (SACConfig, {"target_entropy": "high"}, ValueError,
     r"SACConfig: target_entropy must be 'auto' or a finite number; received 'high' \(str\)"),
    (SACConfig, {"target_entropy": float("inf")}, ValueError,
     r"SACConfig: target_entropy must be 'auto' or a finite number; received inf"),
    (SACConfig, {"target_entropy": True}, ValueError,
     r"SACConfig: target_entropy must be 'auto' or a finite number; received True \(bool\)"),
    (SACConfig, {"initial_alpha": 0.0}, ValueError,
     r"SACConfig: initial_alpha must be a finite float > 0; received 0.0"),
    (SACConfig, {"tau": 1.5}, ValueError,
     r"SACConfig: tau must be a finite float in \[0, 1\]; received 1.5"),
    (SACConfig, {"n_step": 0}, ValueError, r"SACConfig: n_step must be an int >= 1"),
    (SACConfig, {"training_intensity": 0.0}, ValueError,
     r"SACConfig: training_intensity must be None or a finite float > 0"),
    (SACConfig, {"optimization": {"actor_lr": 1e-3}}, UnknownKeyError,
     r"Unknown SACConfig optimization key 'actor_lr'\..*actor_learning_rate"),
    (SACConfig, {"optimization": {"critic_learning_rate": -1.0}}, ValueError,
     r"SACConfig: optimization\['critic_learning_rate'\] must be a finite float > 0; "
     r"received -1.0"),
    (SACConfig, {"q_model_config": {"fcnet_hidden": [64]}}, UnknownKeyError,
     r"Unknown SACConfig q_model_config key 'fcnet_hidden'\. Did you mean 'fcnet_hiddens'"),
    (SACConfig, {"replay_buffer_config": {"capacity": 0}}, ValueError,
     r"SACConfig: replay_buffer_config\['capacity'\] must be an int >= 1; received 0"),
    (SACConfig, {"replay_buffer_config": {"type": "EpisodeReplayBuffer"}}, ValueError,
     r"SACConfig: replay_buffer_config\['type'\] must be one of 'MultiAgentReplayBuffer', "
     r"'MultiAgentPrioritizedReplayBuffer'"),
    (SACConfig, {"replay_buffer_config": {"prioritized_replay_beta": 2.0}}, ValueError,
     r"replay_buffer_config\['prioritized_replay_beta'\] must be a finite float in \[0, 1\]"),
    (SACConfig, {"replay_buffer_config": {"learning_starts": 10}}, ValueError,
     r"SACConfig: replay_buffer_config holds 'learning_starts' .* set "
     r"num_steps_sampled_before_learning_starts \(or learning_starts\) at the top level"),
    (SACConfig, {"replay_buffer_config": {"capcity": 10}}, UnknownKeyError,
     r"Unknown SACConfig replay_buffer_config key 'capcity'\. Did you mean 'capacity'"),
    (SACConfig, {"replay_buffer_config": [1]}, ValueError,
     r"SACConfig: replay_buffer_config must be a dict; received \[1\]"),
    (TD3Config, {"policy_delay": 0}, ValueError, r"TD3Config: policy_delay must be an int >= 1"),
    (TD3Config, {"target_noise_clip": -0.5}, ValueError,
     r"TD3Config: target_noise_clip must be a finite float >= 0; received -0.5"),
    (DDPGConfig, {"actor_hiddens": [64, 0]}, ValueError,
     r"DDPGConfig: actor_hiddens must be a list of layer sizes \(ints >= 1\); received "
     r"\[64, 0\]"),
    (DDPGConfig, {"critic_lr": 0.0}, ValueError,
     r"DDPGConfig: critic_lr must be a finite float > 0; received 0.0"),
    (DDPGConfig, {"huber_threshold": 0.0}, ValueError,
     r"DDPGConfig: huber_threshold must be a finite float > 0"),
    (DDPGConfig, {"tua": 0.1}, UnknownKeyError,
     r"Unknown DDPGConfig key 'tua'\. Did you mean 'tau'"),
])
def test_bad_values_raise_naming_the_key(config_class, kwargs, error, match):
    with pytest.raises(error, match=match):
        config_class.from_dict(kwargs)
