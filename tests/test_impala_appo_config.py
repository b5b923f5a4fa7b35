"""ImpalaConfig and APPOConfig: RLlib's key names and defaults, the checks at the door."""

import dataclasses

import pytest

from tfrl.algorithms.algorithm_config import AlgorithmConfig
from tfrl.algorithms.appo.appo_config import APPOConfig
from tfrl.algorithms.impala.impala_config import ImpalaConfig
from tfrl.algorithms.registry import ALGORITHMS, get_algorithm_class
from tfrl.utils.config_keys import UnknownKeyError
from tfrl.utils.config_values import InvalidConfigValueError

IMPALA_DEFAULTS = {
    "rollout_fragment_length": 50, "train_batch_size": 500, "min_iter_time_s": 10,
    "min_time_s_per_iteration": 10, "lr": 0.0005, "grad_clip": 40.0, "num_sgd_iter": 1,
    "vtrace": True, "vtrace_clip_rho_threshold": 1.0, "vtrace_clip_pg_rho_threshold": 1.0,
    "vtrace_drop_last_ts": False, "num_multi_gpu_tower_stacks": 1, "minibatch_buffer_size": 1,
    "replay_proportion": 0.0, "replay_buffer_num_slots": 0, "learner_queue_size": 16,
    "learner_queue_timeout": 300, "max_sample_requests_in_flight_per_worker": 2,
    "broadcast_interval": 1, "opt_type": "adam", "decay": 0.99, "momentum": 0.0,
    "epsilon": 0.1, "vf_loss_coeff": 0.5, "entropy_coeff": 0.01,
    "entropy_coeff_schedule": None, "_separate_vf_optimizer": False, "_lr_vf": 0.0005,
    "gamma": 0.99, "num_workers": 0, "num_gpus": 0,
}
APPO_DEFAULTS = {
    **IMPALA_DEFAULTS, "replay_buffer_num_slots": 100, "clip_param": 0.4,
    "use_kl_loss": False, "kl_coeff": 1.0, "kl_target": 0.01, "target_update_frequency": 1,
    "lambda": 1.0, "use_gae": True, "use_critic": True,
}


@pytest.mark.parametrize("config_class, defaults", [
    (ImpalaConfig, IMPALA_DEFAULTS), (APPOConfig, APPO_DEFAULTS)])
def test_defaults_are_rllibs(config_class, defaults):
    as_dict = config_class().to_dict()
    assert {key: as_dict[key] for key in defaults} == defaults
    assert issubclass(config_class, AlgorithmConfig)


def test_builder_and_dict_round_trip():
    config = (APPOConfig().environment("CartPole-v1")
              .rollouts(num_rollout_workers=2, rollout_fragment_length=20)
              .training(clip_param=0.2, use_kl_loss=True, broadcast_interval=3,
                        **{"lambda": 0.9}))
    assert (config.num_workers, config.clip_param, config.lambda_) == (2, 0.2, 0.9)
    assert APPOConfig.from_dict(config.to_dict()) == config
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.clip_param = 0.3  # type: ignore[misc]  # frozen


@pytest.mark.parametrize("config_class, key, value, match", [
    (ImpalaConfig, "vtrace_clip_rho_threshold", 0.0,
     r"ImpalaConfig: vtrace_clip_rho_threshold must be a finite float > 0; received 0.0"),
    (ImpalaConfig, "learner_queue_size", 0,
     r"ImpalaConfig: learner_queue_size must be an int >= 1; received 0"),
    (ImpalaConfig, "opt_type", "sgd",
     r"ImpalaConfig: opt_type must be one of 'adam', 'rmsprop'; received 'sgd'"),
    (ImpalaConfig, "entropy_coeff", -0.1,
     r"ImpalaConfig: entropy_coeff must be a finite float >= 0; received -0.1"),
    (ImpalaConfig, "decay", 1.5, r"ImpalaConfig: decay must be a finite float in \[0, 1\]"),
    (ImpalaConfig, "vtrace", "yes", r"ImpalaConfig: vtrace must be a bool"),
    (APPOConfig, "target_update_frequency", 0,
     r"APPOConfig: target_update_frequency must be an int >= 1; received 0"),
    (APPOConfig, "clip_param", -0.2, r"APPOConfig: clip_param must be a finite float > 0"),
    (APPOConfig, "max_sample_requests_in_flight_per_worker", 0,
     r"APPOConfig: max_sample_requests_in_flight_per_worker must be an int >= 1"),
])
def test_bad_values_are_rejected_naming_the_key(config_class, key, value, match):
    with pytest.raises(InvalidConfigValueError, match=match):
        config_class.from_dict({key: value})


def test_inconsistent_values_are_rejected():
    with pytest.raises(ValueError, match=r"ImpalaConfig: replay_proportion=0.5 replays from "
                                         r"a buffer that holds no batch"):
        ImpalaConfig(replay_proportion=0.5)
    assert ImpalaConfig(replay_proportion=0.5, replay_buffer_num_slots=10).replay_proportion == 0.5
    with pytest.raises(ValueError, match=r"APPOConfig: use_gae=True needs use_critic=True"):
        APPOConfig(use_critic=False)


def test_unknown_keys_name_the_closest():
    with pytest.raises(UnknownKeyError, match="Did you mean 'vtrace_clip_rho_threshold'"):
        ImpalaConfig.from_dict({"vtrace_clip_rho_treshold": 1.0})
    with pytest.raises(UnknownKeyError, match="Unknown ImpalaConfig key 'clip_param'"):
        ImpalaConfig.from_dict({"clip_param": 0.2})  # APPO's key, not IMPALA's


def test_registered_with_their_algorithm_classes():
    assert ALGORITHMS["IMPALA"][2] == "ImpalaConfig" and ALGORITHMS["APPO"][2] == "APPOConfig"
    assert get_algorithm_class("IMPALA", return_config=True)[1] is ImpalaConfig
    assert get_algorithm_class("APPO", return_config=True)[1] is APPOConfig
    assert ImpalaConfig.algo_class.__name__ == "Impala"
    assert APPOConfig.algo_class.__name__ == "APPO"
