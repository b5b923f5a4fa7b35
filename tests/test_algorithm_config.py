"""AlgorithmConfig and the PG/A2C/PPO configs: dicts, builders, validation, registry."""

import dataclasses

import pytest

from tfrl.algorithms import algorithm_config
from tfrl.algorithms.a2c import A2C, A2CConfig
from tfrl.algorithms.algorithm_config import AlgorithmConfig
from tfrl.algorithms.callbacks import DefaultCallbacks
from tfrl.algorithms.pg import PG, PGConfig
from tfrl.algorithms.ppo import PPO, PPOConfig
from tfrl.algorithms.registry import get_algorithm_class


def test_rllib_defaults_and_dict_round_trip():
    config = PPOConfig()
    d = config.to_dict()
    assert (d["lambda"], d["kl_coeff"], d["clip_param"], d["sgd_minibatch_size"]) == (
        1.0, 0.2, 0.3, 128)
    assert d["framework"] == "tf2" and d["callbacks"] is DefaultCallbacks
    assert d["multiagent"]["count_steps_by"] == "env_steps"
    assert "lambda_" not in d and "framework_str" not in d
    assert PPOConfig.from_dict(d) == config


def test_from_dict_accepts_rllib_and_2x_names():
    config = PPOConfig.from_dict({"lambda": 0.8, "num_rollout_workers": 3,
                                  "metrics_num_episodes_for_smoothing": 7,
                                  "min_sample_timesteps_per_iteration": 1000,
                                  "multiagent": {"policies_to_train": ["p"]}})
    assert config.lambda_ == 0.8 and config.num_workers == 3
    assert config.metrics_smoothing_episodes == 7 and config.timesteps_per_iteration == 1000
    assert config.multiagent["policies_to_train"] == ["p"]
    assert config.multiagent["count_steps_by"] == "env_steps"  # subdict defaults kept
    d = config.to_dict()
    assert d["metrics_num_episodes_for_smoothing"] == 7 == d["metrics_smoothing_episodes"]


def test_unknown_key_names_closest():
    with pytest.raises(ValueError, match="Unknown PPOConfig key 'sgd_minibatch'. Did you mean "
                                         "'sgd_minibatch_size'"):
        PPOConfig.from_dict({"sgd_minibatch": 64})


def test_algorithm_keys_belong_to_their_algorithm():
    with pytest.raises(ValueError, match="Unknown PGConfig key 'clip_param'"):
        PGConfig.from_dict({"clip_param": 0.1})


def test_from_dict_rejects_non_dict():
    with pytest.raises(TypeError, match="takes a dict; received list"):
        PPOConfig.from_dict([("lr", 1.0)])


def test_frozen_and_replace():
    config = PPOConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.lr = 1.0
    new = config.replace(lr=0.1, **{"lambda": 0.9})
    assert (new.lr, new.lambda_, config.lr) == (0.1, 0.9, 5e-5)
    assert config.replace(lambda_=0.5).lambda_ == 0.5


def test_builder_methods_return_new_configs():
    base = PPOConfig()
    config = (base.environment("CartPole-v1", env_config={"a": 1})
              .rollouts(num_rollout_workers=0, num_envs_per_worker=8, rollout_fragment_length=32)
              .training(lr=1e-3, train_batch_size=256, sgd_minibatch_size=256, lambda_=0.8,
                        model={"fcnet_hiddens": [64, 64]})
              .resources(num_gpus=0).evaluation(evaluation_interval=5)
              .reporting(min_time_s_per_iteration=1).debugging(seed=3).framework("tf2"))
    assert (config.env, config.env_config, config.num_envs_per_worker) == (
        "CartPole-v1", {"a": 1}, 8)
    assert (config.train_batch_size, config.lambda_, config.seed) == (256, 0.8, 3)
    assert (config.evaluation_interval, config.min_iter_time_s) == (5, 1)
    assert base.env is None and base.seed is None


def test_builder_unknown_key():
    with pytest.raises(ValueError, match="Did you mean 'train_batch_size'"):
        PPOConfig().training(train_batchsize=10)


def test_callbacks_and_multi_agent_builders():
    class MyCallbacks(DefaultCallbacks):
        pass

    config = PPOConfig().callbacks(MyCallbacks).multi_agent(policies_to_train=["a"])
    assert config.callbacks_class is MyCallbacks
    assert config.to_dict()["multiagent"]["policies_to_train"] == ["a"]
    with pytest.raises(ValueError, match="Unknown multi_agent"):
        PPOConfig().multi_agent(polices={})


@pytest.mark.parametrize("kwargs, match", [
    ({"framework": "torch"}, "framework must be 'tf2'"),
    ({"batch_mode": "episodes"}, "batch_mode must be"),
    ({"num_workers": -1}, "num_workers must be >= 0"),
    ({"rollout_fragment_length": 0}, "rollout_fragment_length must be >= 1"),
    ({"gamma": 1.5}, "gamma must be in"),
    ({"evaluation_duration_unit": "steps"}, "evaluation_duration_unit"),
    ({"callbacks": object}, "callbacks must be a DefaultCallbacks subclass"),
    ({"remote_backend": "mpi"}, "remote_backend must be"),
])
def test_common_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AlgorithmConfig.from_dict(kwargs)


def test_ppo_validation():
    with pytest.raises(ValueError, match=r"sgd_minibatch_size \(512\) must be <= train_batch_size"):
        PPOConfig.from_dict({"train_batch_size": 256, "sgd_minibatch_size": 512})
    with pytest.raises(ValueError, match="num_sgd_iter must be >= 1"):
        PPOConfig.from_dict({"num_sgd_iter": 0})
    with pytest.raises(ValueError, match="use_gae=True needs use_critic=True"):
        PPOConfig.from_dict({"use_critic": False})


def test_a2c_microbatch_validation():
    assert A2CConfig.from_dict({"microbatch_size": 50}).microbatch_size == 50
    with pytest.raises(ValueError, match="microbatch_size must be None or in"):
        A2CConfig.from_dict({"microbatch_size": 1000})


def test_registry_and_build_classes():
    assert get_algorithm_class("PPO") is PPO
    assert get_algorithm_class("A2C", return_config=True) == (A2C, A2CConfig)
    assert PGConfig.algo_class is PG
    with pytest.raises(ValueError, match="Unknown algorithm 'PP0'. Did you mean 'PPO'"):
        get_algorithm_class("PP0")
    with pytest.raises(ValueError, match="has no algorithm class"):
        AlgorithmConfig().build()


def test_module_key_sets_for_worker_set():
    assert "train_batch_size" in algorithm_config.COMMON_CONFIG
    keys = algorithm_config.DEFAULT_CONFIG
    assert {"microbatch_size", "kl_coeff", "lambda"} <= set(keys)


def test_every_worker_set_and_policy_key_is_accepted():
    from tfrl.algorithms.a2c import A2CTFPolicy
    from tfrl.algorithms.ppo import PPOTFPolicy
    from tfrl.evaluation import worker_set_config as wsc
    from tfrl.policy.tf_policy import DEFAULT_CONFIG as policy_defaults

    assert wsc.worker_keys() <= AlgorithmConfig.valid_keys()
    assert set(policy_defaults) <= PPOConfig.valid_keys()
    # WorkerSet accepts what we produce, given the policy class that reads it.
    wsc.check_trainer_config(PPOConfig().to_dict(), [PPOTFPolicy])
    wsc.check_trainer_config(A2CConfig().to_dict(), [A2CTFPolicy])


def test_worker_set_key_list_is_derived_from_the_config_dataclasses():
    from tfrl.algorithms.pg import PGTFPolicy
    from tfrl.algorithms.ppo import PPOTFPolicy
    from tfrl.evaluation import worker_set_config as wsc
    from tfrl.algorithms.registry import ALGORITHMS

    classes = []
    for name in ALGORITHMS:
        algo_class, config_class = get_algorithm_class(name, return_config=True)
        policy_class = algo_class.default_policy_class
        classes.append(policy_class)
        derived = wsc.valid_config_keys([policy_class])
        # The copy the WorkerSet checks against is the config class's own key set.
        assert set(config_class().to_dict()) <= derived
        assert derived - set(config_class().to_dict()) <= (
            wsc.worker_keys() | set(wsc.EXECUTION_OPERATOR_KEYS))
    assert set(algorithm_config.DEFAULT_CONFIG) <= wsc.valid_config_keys(classes)
    # A key of another algorithm's config is not valid for this policy.
    wsc.check_trainer_config({"clip_param": 0.2}, [PPOTFPolicy])
    with pytest.raises(ValueError, match="Unknown trainer_config key 'clip_param'"):
        wsc.check_trainer_config({"clip_param": 0.2}, [PGTFPolicy])
    # Policies named in multiagent.policies count too.
    wsc.check_trainer_config({"clip_param": 0.2, "multiagent": {
        "policies": {"p": (PPOTFPolicy, None, None, {})}}})
