"""AlgorithmConfig and the PG/A2C/PPO configs: dicts, builders, validation, registry."""

import dataclasses
import re
import typing

import numpy as np
import pytest

from tfrl.algorithms import algorithm_config
from tfrl.algorithms.a2c import A2C, A2CConfig
from tfrl.algorithms.algorithm_config import FIELD_KEYS, AlgorithmConfig
from tfrl.algorithms.callbacks import DefaultCallbacks
from tfrl.algorithms.pg import PG, PGConfig
from tfrl.algorithms.ppo import PPO, PPOConfig
from tfrl.algorithms.registry import get_algorithm_class
from tfrl.utils.config_values import Bound, merged_ranges


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
    ({"num_workers": -1}, "num_workers must be an int >= 0; received -1 \\(int\\)"),
    ({"rollout_fragment_length": 0}, "rollout_fragment_length must be an int >= 1"),
    ({"gamma": 1.5}, r"gamma must be a finite float in \[0, 1\]"),
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
    with pytest.raises(ValueError, match="num_sgd_iter must be an int >= 1"):
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
    from tfrl.evaluation.rollout_worker import config as wsc
    from tfrl.policy.tf_policy import DEFAULT_CONFIG as policy_defaults

    assert wsc.worker_keys() <= AlgorithmConfig.valid_keys()
    assert set(policy_defaults) <= PPOConfig.valid_keys()
    # WorkerSet accepts what we produce, given the policy class that reads it.
    wsc.check_trainer_config(PPOConfig().to_dict(), [PPOTFPolicy])
    wsc.check_trainer_config(A2CConfig().to_dict(), [A2CTFPolicy])


def test_worker_set_key_list_is_derived_from_the_config_dataclasses():
    from tfrl.algorithms.pg import PGTFPolicy
    from tfrl.algorithms.ppo import PPOTFPolicy
    from tfrl.evaluation.rollout_worker import config as wsc
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


# ------------------------------------------------ values checked at the door (issue 14)

@pytest.mark.parametrize("config_class, key, value, message", [
    (PPOConfig, "lr", "fast", "PPOConfig: lr must be a finite float > 0; received 'fast' (str)."),
    (PPOConfig, "lr", float("nan"), "PPOConfig: lr must be a finite float > 0; received nan "
                                    "(float)."),
    (PPOConfig, "lr", -0.1, "PPOConfig: lr must be a finite float > 0; received -0.1 (float)."),
    (PPOConfig, "lr", float("inf"), "PPOConfig: lr must be a finite float > 0; received inf "
                                    "(float)."),
    (PPOConfig, "lr", True, "PPOConfig: lr must be a finite float > 0; received True (bool)."),
    (PPOConfig, "lr", "1e-3", "PPOConfig: lr must be a finite float > 0; received '1e-3' (str)."),
    (PPOConfig, "clip_param", -1, "PPOConfig: clip_param must be a finite float > 0; received "
                                  "-1 (int)."),
    (PPOConfig, "vf_clip_param", 0.0, "PPOConfig: vf_clip_param must be a finite float > 0; "
                                      "received 0.0 (float)."),
    (PPOConfig, "kl_coeff", -0.2, "PPOConfig: kl_coeff must be a finite float >= 0; received "
                                  "-0.2 (float)."),
    (PPOConfig, "entropy_coeff", -1, "PPOConfig: entropy_coeff must be a finite float >= 0; "
                                     "received -1 (int)."),
    (PPOConfig, "train_batch_size", "abc", "PPOConfig: train_batch_size must be an int >= 1; "
                                           "received 'abc' (str)."),
    (PPOConfig, "train_batch_size", True, "PPOConfig: train_batch_size must be an int >= 1; "
                                          "received True (bool)."),
    (PPOConfig, "train_batch_size", 4000.0, "PPOConfig: train_batch_size must be an int >= 1; "
                                            "received 4000.0 (float)."),
    (PPOConfig, "num_sgd_iter", 0, "PPOConfig: num_sgd_iter must be an int >= 1; received 0 "
                                   "(int)."),
    (PPOConfig, "sgd_minibatch_size", -5, "PPOConfig: sgd_minibatch_size must be an int >= 0; "
                                          "received -5 (int)."),
    (PGConfig, "sgd_minibatch_size", "x", "PGConfig: sgd_minibatch_size must be None or an int "
                                          ">= 0; received 'x' (str)."),
    (PGConfig, "rollout_fragment_length", 0, "PGConfig: rollout_fragment_length must be an int "
                                             ">= 1; received 0 (int)."),
    (PGConfig, "num_workers", -1, "PGConfig: num_workers must be an int >= 0; received -1 (int)."),
    (PGConfig, "gamma", 1.01, "PGConfig: gamma must be a finite float in [0, 1]; received 1.01 "
                              "(float)."),
    (A2CConfig, "lambda", -0.1, "A2CConfig: lambda must be a finite float in [0, 1]; received "
                                "-0.1 (float)."),
    (A2CConfig, "grad_clip", 0, "A2CConfig: grad_clip must be None or a finite float > 0; "
                                "received 0 (int)."),
    (A2CConfig, "microbatch_size", 0, "A2CConfig: microbatch_size must be None or an int >= 1; "
                                      "received 0 (int)."),
    (A2CConfig, "vf_loss_coeff", float("nan"), "A2CConfig: vf_loss_coeff must be a finite float "
                                               ">= 0; received nan (float)."),
    (A2CConfig, "use_gae", "yes", "A2CConfig: use_gae must be a bool (true or false); received "
                                  "'yes' (str)."),
    (A2CConfig, "batch_mode", 1, "A2CConfig: batch_mode must be a str; received 1 (int)."),
    (A2CConfig, "env_config", [1], "A2CConfig: env_config must be a dict; received [1] (list)."),
    (A2CConfig, "seed", -1, "A2CConfig: seed must be None or an int >= 0; received -1 (int)."),
    (PPOConfig, "lr_schedule", [[0, 1e-3], [10]],
     "PPOConfig: lr_schedule must be None or a list of [timestep, value] pairs (timesteps "
     "numbers >= 0 in non-decreasing order, values finite floats >= 0); entry 1 is [10]."),
    (PPOConfig, "entropy_coeff_schedule", [[100, 0.01], [50, 0.0]],
     "PPOConfig: entropy_coeff_schedule must be None or a list of [timestep, value] pairs "
     "(timesteps numbers >= 0 in non-decreasing order, values finite floats >= 0); entry 1 is "
     "[50, 0.0]."),
    (PPOConfig, "lr_schedule", "0:1e-3", "PPOConfig: lr_schedule must be None or a list of "
     "[timestep, value] pairs (timesteps numbers >= 0 in non-decreasing order, values "
     "finite floats >= 0); received '0:1e-3' (str)."),
])
def test_bad_values_are_rejected_naming_the_key(config_class, key, value, message):
    with pytest.raises(ValueError) as info:
        config_class.from_dict({key: value})
    assert str(info.value) == message
    field = {"lambda": "lambda_"}.get(key, key)
    # The constructor, replace() and the builder methods check the same way.
    with pytest.raises(ValueError, match=re.escape(message)):
        config_class(**{field: value})
    with pytest.raises(ValueError, match=re.escape(message)):
        config_class().training(**{key: value})


def _bad_values(annotation, bound):
    """Bad values of every class for a field of this type and range."""
    optional = typing.get_origin(annotation) is typing.Union
    kinds = [a for a in typing.get_args(annotation) if a is not type(None)]
    if optional and len(kinds) > 1:  # e.g. record_env: bool or a folder (its own test)
        return []
    base = kinds[0] if optional else annotation
    if base is float:
        bad = ["fast", True, float("nan"), float("inf"), [1.0]]
    elif base is int:
        bad = ["abc", True, 1.5, None if not optional else "1"]
    elif base is bool:
        bad = ["yes", 1, None]
    elif base is str:
        bad = [1, None]
    elif base in (dict, list):
        bad = [7]
    else:
        return []
    if isinstance(bound, Bound):
        below = (bound.gt if bound.gt is not None else
                 bound.ge - (1 if base is int else 0.5) if bound.ge is not None else None)
        if below is not None:
            bad.append(int(below) if base is int else float(below))
        if bound.le is not None:
            bad.append(bound.le + 1)
    return bad


def _every_field_and_bad_value():
    cases = []
    for config_class in (PGConfig, A2CConfig, PPOConfig):
        hints = typing.get_type_hints(config_class)
        ranges = merged_ranges(config_class)
        for f in dataclasses.fields(config_class):
            for value in _bad_values(hints[f.name], ranges.get(f.name)):
                cases.append(pytest.param(config_class, f.name, value,
                                          id=f"{config_class.__name__}-{f.name}-{value!r}"))
    return cases


@pytest.mark.parametrize("config_class, field, value", _every_field_and_bad_value())
def test_every_typed_field_rejects_every_bad_value_class(config_class, field, value):
    key = FIELD_KEYS.get(field, field)
    with pytest.raises(ValueError) as info:
        config_class.from_dict({key: value})
    assert str(info.value).startswith(f"{config_class.__name__}: {key} must be "), info.value
    assert str(info.value).endswith(f"; received {value!r} ({type(value).__name__}).")


def test_good_values_of_other_types_are_accepted():
    config = PPOConfig.from_dict({"lr": 1, "gamma": np.float32(0.5), "train_batch_size":
                                  np.int64(256), "lr_schedule": [[0, 1e-3], [1e6, 0.0]],
                                  "lambda": 0, "seed": 0, "sgd_minibatch_size": 64})
    assert (config.lr, config.gamma, config.train_batch_size, config.lambda_) == (
        1, 0.5, 256, 0)
    assert PGConfig.from_dict({"sgd_minibatch_size": None, "grad_clip": None}).grad_clip is None


@pytest.mark.parametrize("key,value", [("nonfinite_updates", "ignore"),
                                       ("learn_input", "numpy")])
def test_string_choices_are_checked_at_the_door(key, value):
    from tfrl.algorithms.ppo import PPOConfig

    with pytest.raises(ValueError, match=rf"PPOConfig: {key} must be one of .*received 'ignore'|"
                                         rf"PPOConfig: {key} must be one of .*received 'numpy'"):
        PPOConfig.from_dict({key: value})
    assert PPOConfig.from_dict({"nonfinite_updates": "skip"}).nonfinite_updates == "skip"


def test_update_from_dict_returns_the_changed_config():
    """tfrl's form of RLlib's test_update_from_dict_works_for_multi_callbacks (a strict
    xfail in tests/rllib_compat: configs are frozen): the change is in the returned config."""
    from tfrl.algorithms.algorithm_config import AlgorithmConfig
    from tfrl.algorithms.callbacks import make_multi_callbacks

    callbacks = make_multi_callbacks([])
    config = AlgorithmConfig().update_from_dict({"callbacks": callbacks})
    assert config.callbacks_class is callbacks
    assert config.serialize()["callbacks"] == f"{callbacks.__module__}.{callbacks.__qualname__}"


def test_a_config_reads_as_rllibs_flat_dict():
    config = PPOConfig().training(lr=0.01, **{"lambda": 0.9}).rollouts(num_rollout_workers=2)
    flat = config.to_dict()
    # RLlib 2.x's AlgorithmConfig supports item access with the dict keys, field names
    # and 2.x aliases alike.
    assert (config["lr"], config["lambda"], config["lambda_"]) == (0.01, 0.9, 0.9)
    assert config["num_workers"] == config["num_rollout_workers"] == config.num_workers == 2
    assert config["callbacks"] is DefaultCallbacks and config["framework"] == "tf2"
    assert config.get("clip_param") == 0.3 and config.get("not_a_key", 7) == 7
    assert "lr" in config and "num_rollout_workers" in config and "not_a_key" not in config
    with pytest.raises(KeyError, match="not_a_key"):
        config["not_a_key"]
    # Iterating, keys(), items(), len() and dict(): exactly the flat dict of to_dict().
    assert list(config) == list(flat) and list(config.keys()) == list(flat)
    assert dict(config) == flat and dict(config.items()) == flat and len(config) == len(flat)
    assert {**config, "lr": 1.0}["lr"] == 1.0
    assert isinstance(config, typing.Mapping)
    # Still a frozen dataclass: equality and assignment as before.
    assert config == PPOConfig.from_dict(flat) and config != flat
    with pytest.raises(dataclasses.FrozenInstanceError, match=re.escape(
            "Cannot set item ['lr'] of an already frozen AlgorithmConfig (PPOConfig)")):
        config["lr"] = 1.0


def test_algo_config_is_the_frozen_config_with_both_kinds_of_access():
    algo = PG(config={"num_workers": 0, "lr": 0.02, "train_batch_size": 8,
                      "rollout_fragment_length": 8}, env="CartPole-v1")
    try:
        # RLlib 2.x: algo.config is the AlgorithmConfig; RLlib 1.x: it is the flat dict.
        assert isinstance(algo.config, PGConfig) and algo.config is algo.algo_config
        assert algo.config.lr == 0.02 and algo.config["lr"] == 0.02
        assert algo.config["train_batch_size"] == 8 and algo.config.get("env") == "CartPole-v1"
        assert dict(algo.config) == algo.algo_config.to_dict()
    finally:
        algo.stop()


def test_record_env_takes_a_bool_or_a_folder():
    # RLlib's forms: True (videos under the worker's log dir) or the videos' folder.
    for value in (False, True, "videos", "/tmp/run/videos"):
        assert PPOConfig.from_dict({"record_env": value}).record_env == value
    for value, shown in ((7, "7 (int)"), ("", "'' (str)"), (None, "None (NoneType)")):
        with pytest.raises(ValueError, match=re.escape(
                "PPOConfig: record_env must be a bool or a folder for the videos (a non-empty "
                f"str); received {shown}.")):
            PPOConfig.from_dict({"record_env": value})
